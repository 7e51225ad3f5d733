package postgres_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestQuoteOfASplitSceneIsTheScenes: a fact told with the party together
// and restated in a split scene (it rests on both lines) is read by every
// player, but its quote ("evidence", "said_at") only by those who may read
// every line it rests on: the DM and Thorin, in the scene; not Lyra, not
// any player. SplitLines names the scene's line, for the system only. A
// fact resting on a line Lyra said at the table outside the scene and on
// the scene's line (extraction's rule when the model paraphrases a window
// holding both) is the DM's alone: Lyra reads her own line, not the
// scene's, and Thorin not hers.
func TestQuoteOfASplitSceneIsTheScenes(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	ctx := ctxT(t)
	start := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	sl := c.Sessions()
	if err := sl.StartSession(ctx, "s1", start); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"lyra", "thorin"}, false}, {2 * time.Minute, []string{"thorin"}, true},
		{4 * time.Minute, []string{}, true}, {5 * time.Minute, []string{"thorin"}, true}} {
		if err := sl.RecordPresence(ctx, "s1", start.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for i, text := range []string{"Thorin owes me ten gold.", "Thorin owes me ten gold, leave it in the crypt of Saint Oda."} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "grimjaw", NPCID: "grimjaw",
			SpeakerName: "Grimjaw", Text: text, At: start.Add(time.Duration(1+2*i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "lyra", SpeakerName: "Lyra",
		Text: "I wait at the inn.", At: start.Add(4*time.Minute + 30*time.Second)}); err != nil {
		t.Fatal(err)
	}
	es, err := sl.Entries(ctx, "s1")
	if err != nil || len(es) != 3 {
		t.Fatalf("the session's lines: %v, %v", es, err)
	}
	ids := []int64{es[0].ID, es[1].ID, es[2].ID}
	split, err := sl.SplitLines(ctx, "s1", ids)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(split, ids[1:]) {
		t.Errorf("SplitLines = %v, want %v (the scene's line, Lyra's at the table)", split, ids[1:])
	}
	player, err := c.As(memory.PlayerViewerOf("thorin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := player.Sessions().SplitLines(ctx, "s1", ids); !errors.Is(err, memory.ErrForbidden) {
		t.Errorf("a player's SplitLines: %v, want ErrForbidden", err)
	}
	g := c.Graph()
	for _, e := range []memory.Entity{{ID: "thorin", Type: "player", Name: "Thorin"}, {ID: "grimjaw", Type: "npc", Name: "Grimjaw"},
		{ID: "lyra", Type: "player", Name: "Lyra"}, {ID: "crypt", Type: "location", Name: "Crypt of Saint Oda"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "thorin", TargetID: "grimjaw", Type: "OWES",
		Attributes: map[string]any{"what": "ten gold", "evidence": "Grimjaw: Thorin owes me ten gold, leave it in the crypt of Saint Oda.",
			"said_at": start.Add(3 * time.Minute).Format(time.RFC3339)},
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: start, Confidence: 1, Source: memory.SourceStated}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, f.ID, ids[:2]); err != nil {
		t.Fatal(err)
	}
	mixed, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "lyra", TargetID: "crypt", Type: "KNOWS_OF",
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: start, Confidence: 1, Source: memory.SourceInferred}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, mixed.ID, ids[1:]); err != nil {
		t.Fatal(err)
	}
	// What the characters know: the debt, heard together; not the fact
	// resting on Lyra's line at the table and the scene's.
	for _, who := range []string{"lyra", "thorin"} {
		if got := knownFacts(t, c, who); !slices.Equal(got, []string{"OWES"}) {
			t.Errorf("%s's character knows %v, want [OWES]", who, got)
		}
	}
	for _, tc := range []struct {
		v     memory.Viewer
		quote bool
		facts int
	}{
		{memory.DMViewer(), true, 2},
		{memory.PlayerViewerOf("thorin"), true, 1},
		{memory.PlayerViewerOf("lyra"), false, 1},
		{memory.PlayerViewer(), false, 1},
	} {
		h, err := c.As(tc.v)
		if err != nil {
			t.Fatal(err)
		}
		fs, err := h.Graph().FindFacts(ctx, postgres.FactQuery{Text: "OWES", Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(fs) != 1 {
			t.Fatalf("%s reads %d debts, want the debt (it was told with the party together)", tc.v, len(fs))
		}
		all, err := h.Graph().FindFacts(ctx, postgres.FactQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) != tc.facts {
			t.Errorf("%s %q reads %d facts, want %d (%v)", tc.v, tc.v.PlayerID, len(all), tc.facts, all)
		}
		a := fs[0].Attributes
		_, ev := a["evidence"]
		_, at := a["said_at"]
		switch {
		case a["what"] != "ten gold":
			t.Errorf("%s reads the debt without its other attributes: %v", tc.v, a)
		case ev != tc.quote || at != tc.quote:
			t.Errorf("%s reads the quote: evidence %v, said_at %v; want %v", tc.v, ev, at, tc.quote)
		case !tc.quote && strings.Contains(strings.ToLower(fmtAttrs(a)), "saint oda"):
			t.Errorf("%s reads the scene's words: %v", tc.v, a)
		}
	}
}

// knownFacts are the types of the facts player's character knows, read
// through the DM's handle.
func knownFacts(t *testing.T, c *postgres.Campaign, player string) []string {
	t.Helper()
	k, err := c.KnowledgeOf(ctxT(t), player, "")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range k.Facts {
		out = append(out, f.Rel)
	}
	return out
}

func fmtAttrs(a map[string]any) string {
	var b strings.Builder
	for k, v := range a {
		b.WriteString(k)
		if s, ok := v.(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// TestForgetSpeakerTakesTheirQuoteOffAFactThatStays: a fact resting on
// another speaker's line (extraction rests a fact from a window holding a
// split scene on the scene's lines, whatever it quotes) stays when the
// speaker it quotes is forgotten, without the quote.
func TestForgetSpeakerTakesTheirQuoteOffAFactThatStays(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	c := pgtest.Campaign(t, s, "camp")
	ctx := ctxT(t)
	sl := c.Sessions()
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for i, l := range []struct{ id, text string }{
		{"lyra", "We should ask the miller about the grain."},
		{"marla", "The code to the vault is four four one seven."},
	} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: l.id, SpeakerName: l.id,
			Text: l.text, At: t0.Add(time.Duration(i+1) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	es, err := sl.Entries(ctx, "s1")
	if err != nil || len(es) != 2 {
		t.Fatalf("the session's lines: %v, %v", es, err)
	}
	g := c.Graph()
	for _, e := range []memory.Entity{{ID: "lyra", Type: "player", Name: "Lyra"}, {ID: "mill", Type: "location", Name: "Mill"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "lyra", TargetID: "mill", Type: "GOES_TO",
		Attributes: map[string]any{"evidence": "lyra: We should ask the miller about the grain.", "extracted": true},
		Provenance: memory.Provenance{SessionID: "s1", Timestamp: t0, Confidence: 1, Source: memory.SourceStated}})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, f.ID, []int64{es[1].ID}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ForgetSpeaker(ctx, "lyra"); err != nil {
		t.Fatal(err)
	}
	got, err := g.Fact(ctx, f.ID)
	if err != nil {
		t.Fatalf("the fact resting on marla's line is gone: %v", err)
	}
	if _, ok := got.Attributes["evidence"]; ok || got.Attributes["extracted"] != true {
		t.Errorf("after lyra is forgotten the fact's attributes are %v, want no evidence, the rest kept", got.Attributes)
	}
}
