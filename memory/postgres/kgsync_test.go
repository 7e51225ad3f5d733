package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestKGSyncTellsWhatLeftTheGraph: an agent that read the graph learns
// from kg_sync what left it, as the caller may know it.
//   - A fact every player could read that the DM makes secret leaves the
//     players' graphs: their agents are told it is removed. Before
//     migration 0039 they kept it until their next kg_read (the row is
//     secret now, and a removal was only named from the row).
//   - A fact deleted (here: resting on the lines of a player who asked to
//     be forgotten) leaves everyone's graph. Before, a deletion was never
//     named, to the DM neither.
//   - A fact that was secret, or told only in a split scene, is named to
//     the DM when deleted, never to a player: its ends would tell it.
//   - A fact moved to other ends (an entity merged into another) is named
//     removed by its old ends.
func TestKGSyncTellsWhatLeftTheGraph(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	sl := camp.Sessions()
	t0 := splitAfterAMinute(t, sl)
	g := camp.Graph()
	for _, e := range []memory.Entity{
		{ID: "ada", Type: memory.EntityNPC, Name: "Ada"}, {ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
		{ID: "cy", Type: memory.EntityNPC, Name: "Cy"}, {ID: "marla", Type: memory.EntityNPC, Name: "Marla"},
		{ID: "bell-tower", Type: "location", Name: "Bell Tower"}, {ID: "cyrus", Type: memory.EntityNPC, Name: "Cyrus"},
	} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	fact := func(src, rel, dst string, attrs map[string]any, evidence ...int64) memory.Relationship {
		t.Helper()
		f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: rel, Attributes: attrs,
			Status: memory.StatusActive, Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}})
		if err != nil {
			t.Fatal(err)
		}
		if len(evidence) > 0 {
			if err := g.AddEvidence(ctx, f.ID, evidence); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}
	together := sessionLine(t, sl, "dana", "Ada owes Bo a debt of honour.", t0.Add(10*time.Second))
	zoe := sessionLine(t, sl, "zoe", "Bo knows Cy from the war.", t0.Add(20*time.Second))
	scene := sessionLine(t, sl, "zoe", "Marla hid the vault code in the bell tower.", t0.Add(2*time.Minute))
	madeSecret := fact("ada", "OWES", "bo", nil, together)
	forgotten := fact("bo", "KNOWS", "cy", nil, zoe)
	secretGone := fact("ada", "HATES", "cy", map[string]any{"secret": true}, zoe)
	sceneGone := fact("marla", "HID_VAULT_CODE_IN", "bell-tower", nil, scene)
	moved := fact("cyrus", "SERVES", "ada", nil)

	dm := must[*postgres.Campaign](t)(camp.As(memory.DMViewer()))
	viewers := map[string]*postgres.Campaign{
		"dm":         dm,
		"any player": must[*postgres.Campaign](t)(camp.As(memory.PlayerViewer())),
		"lyra":       must[*postgres.Campaign](t)(camp.As(memory.PlayerViewerOf("lyra"))),
	}
	sessions := map[string]postgres.KGSession{}
	for name, c := range viewers {
		sessions[name] = must[postgres.KGSession](t)(c.KGRegisterSession(ctx, "sess-"+strings.ReplaceAll(name, " ", "-"),
			"mcp:test:"+name, postgres.KGCampaign, time.Now()))
	}

	madeSecret.Attributes = map[string]any{"secret": true}
	if _, err := g.UpsertRelationship(ctx, madeSecret); err != nil {
		t.Fatal(err)
	}
	if _, err := camp.ForgetSpeaker(ctx, "zoe"); err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{forgotten.ID, secretGone.ID, sceneGone.ID} {
		if _, err := g.Fact(ctx, id); err == nil {
			t.Fatalf("fact %d rests on Zoe's line and outlived her being forgotten: the test shows nothing", id)
		}
	}
	if _, err := g.MergeEntities(ctx, "cyrus", "cy", "s1"); err != nil {
		t.Fatal(err)
	}

	edge := func(f memory.Relationship) string {
		return "edge:campaign:" + f.SourceID + ":" + postgres.KGRel(f.Type) + ":" + f.TargetID
	}
	public := []string{edge(forgotten), edge(moved)}
	want := map[string][]string{
		"dm":         append([]string{edge(secretGone), edge(sceneGone), "node:campaign:cyrus"}, public...),
		"any player": append([]string{edge(madeSecret), "node:campaign:cyrus"}, public...),
		"lyra":       append([]string{edge(madeSecret), "node:campaign:cyrus"}, public...),
	}
	for name, c := range viewers {
		ch, err := c.KGSync(ctx, sessions[name].Cursor, "", name == "dm")
		if err != nil {
			t.Fatal(err)
		}
		w := slices.Clone(want[name])
		slices.Sort(w)
		if !slices.Equal(ch.Removed, w) {
			t.Errorf("%s: removed %q,\nwant %q", name, ch.Removed, w)
		}
		// The moved fact is in the graph by its new ends.
		if !slices.ContainsFunc(ch.Edges, func(e postgres.KGEdge) bool { return e.From == "cy" && e.To == "ada" }) {
			t.Errorf("%s: the merged fact cy → ada is not among the changed edges: %+v", name, ch.Edges)
		}
		if name != "dm" {
			for _, r := range ch.Removed {
				if strings.Contains(r, "hates") || strings.Contains(r, "vault") {
					t.Errorf("LEAK: %s learns of a secret or a split scene's fact by its removal: %s", name, r)
				}
			}
		}
	}

	// Made public again, the fact is back in the players' graph: its
	// removal is no longer named, its edge is.
	madeSecret.Attributes = map[string]any{"secret": false}
	if _, err := g.UpsertRelationship(ctx, madeSecret); err != nil {
		t.Fatal(err)
	}
	ch := must[postgres.KGChanges](t)(viewers["lyra"].KGSync(ctx, sessions["lyra"].Cursor, "", false))
	if slices.Contains(ch.Removed, edge(madeSecret)) {
		t.Errorf("lyra is told a fact public again is removed: %q", ch.Removed)
	}
	if !slices.ContainsFunc(ch.Edges, func(e postgres.KGEdge) bool { return e.From == "ada" && e.To == "bo" }) {
		t.Errorf("lyra is not given the fact public again: %+v", ch.Edges)
	}
}

// TestKGSyncSeesLateCommits: an agent session registered while a long
// transaction (extraction writing a session's facts) has written a change
// but not committed it starts at a cursor above that change's id. When it
// commits, kg_sync must report it: before migration 0039 the session kept
// the newest id alone and stepped over it for good.
func TestKGSyncSeesLateCommits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	g := camp.Graph()
	for _, e := range []memory.Entity{{ID: "ada", Type: memory.EntityNPC, Name: "Ada"}, {ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
		{ID: "cy", Type: memory.EntityNPC, Name: "Cy"}} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	commit := longTx(t, s, "camp", func(tc *postgres.Campaign) error {
		_, err := tc.Graph().UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: "bo", Type: "OWES",
			Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1}})
		return err
	})
	if _, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "bo", TargetID: "cy", Type: "KNOWS",
		Status: memory.StatusActive, Provenance: memory.Provenance{Confidence: 1}}); err != nil {
		t.Fatal(err)
	}
	players := []memory.Viewer{memory.DMViewer(), memory.PlayerViewer()}
	var sessions []postgres.KGSession
	for i, v := range players {
		c := must[*postgres.Campaign](t)(camp.As(v))
		sessions = append(sessions, must[postgres.KGSession](t)(c.KGRegisterSession(ctx, "late-"+string(rune('a'+i)), "mcp:test", postgres.KGCampaign, time.Now())))
		// Read back as kg_sync reads it.
		sessions[i] = must[postgres.KGSession](t)(c.KGSessionByID(ctx, sessions[i].ID, time.Now()))
	}
	if err := commit(); err != nil {
		t.Fatal(err)
	}
	for i, v := range players {
		c := must[*postgres.Campaign](t)(camp.As(v))
		ch := must[postgres.KGChanges](t)(c.KGSync(ctx, sessions[i].Cursor, "", v.Role == memory.RoleDM))
		var got []string
		for _, e := range ch.Edges {
			got = append(got, e.From+">"+e.To)
		}
		if !slices.Equal(got, []string{"ada>bo"}) {
			t.Errorf("%s: kg_sync after the long transaction committed gives edges %q, want the late fact ada>bo alone", v, got)
		}
	}
}

// TestEvidenceMovesTheChangeLog: a fact's evidence decides which players
// may read it, so writing it is a change of the fact (migration 0041).
//   - A fact written first and linked to a split scene's line after (two
//     transactions, as extraction did) rested on nothing in between, and
//     every player could read it: the link names it removed to players
//     (not to the DM, whose graph keeps it).
//   - Linked to a line said at the table, it stays in every graph: nothing
//     is named removed, the fact is among the changed edges.
//   - Written with its evidence in one transaction (RecordFactOn), the
//     fact never reached the players: nothing is named, and a player never
//     reads it.
func TestEvidenceMovesTheChangeLog(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	sl := camp.Sessions()
	t0 := splitAfterAMinute(t, sl)
	g := camp.Graph()
	for _, e := range []memory.Entity{
		{ID: "ada", Type: memory.EntityNPC, Name: "Ada"}, {ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
		{ID: "vault", Type: "location", Name: "Vault"},
	} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	together := sessionLine(t, sl, "dana", "Ada owes Bo a debt of honour.", t0.Add(10*time.Second))
	scene := sessionLine(t, sl, "thorin", "Bo hid the key in the vault.", t0.Add(2*time.Minute))
	scene2 := sessionLine(t, sl, "thorin", "Ada guards the vault at night.", t0.Add(3*time.Minute))
	viewers := map[string]*postgres.Campaign{
		"dm":   must[*postgres.Campaign](t)(camp.As(memory.DMViewer())),
		"any":  must[*postgres.Campaign](t)(camp.As(memory.PlayerViewer())),
		"lyra": must[*postgres.Campaign](t)(camp.As(memory.PlayerViewerOf("lyra"))),
	}
	extracted := func(src, rel, dst string) memory.Relationship {
		return memory.Relationship{SourceID: src, TargetID: dst, Type: rel,
			Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}}
	}
	hidden := must[memory.Relationship](t)(func() (memory.Relationship, error) {
		f, _, err := g.RecordFact(ctx, extracted("bo", "HID_KEY_IN", "vault"))
		return f, err
	}())
	told := must[memory.Relationship](t)(func() (memory.Relationship, error) {
		f, _, err := g.RecordFact(ctx, extracted("ada", "OWES", "bo"))
		return f, err
	}())
	sessions := map[string]postgres.KGSession{}
	for name, c := range viewers {
		sessions[name] = must[postgres.KGSession](t)(c.KGRegisterSession(ctx, "sess-"+name, "mcp:test:"+name, postgres.KGCampaign, time.Now()))
	}
	check(t, g.AddEvidence(ctx, hidden.ID, []int64{scene}))
	check(t, g.AddEvidence(ctx, told.ID, []int64{together}))
	atOnce := must[memory.Relationship](t)(func() (memory.Relationship, error) {
		f, _, err := g.RecordFactOn(ctx, extracted("ada", "GUARDS", "vault"), []int64{scene2})
		return f, err
	}())

	edge := func(f memory.Relationship) string {
		return "edge:campaign:" + f.SourceID + ":" + postgres.KGRel(f.Type) + ":" + f.TargetID
	}
	for name, c := range viewers {
		ch := must[postgres.KGChanges](t)(c.KGSync(ctx, sessions[name].Cursor, "", name == "dm"))
		var want []string
		if name != "dm" {
			want = []string{edge(hidden)}
		}
		if !slices.Equal(ch.Removed, want) {
			t.Errorf("%s: removed %q, want %q", name, ch.Removed, want)
		}
		if !slices.ContainsFunc(ch.Edges, func(e postgres.KGEdge) bool { return e.From == "ada" && e.To == "bo" }) {
			t.Errorf("%s: the fact told at the table is not among the changed edges: %+v", name, ch.Edges)
		}
		for _, e := range ch.Edges {
			if name != "dm" && e.To == "vault" {
				t.Errorf("LEAK: %s is given a fact told in the split scene only: %+v", name, e)
			}
		}
		_, err := c.Graph().Fact(ctx, atOnce.ID)
		if (err == nil) != (name == "dm") {
			t.Errorf("%s reads the fact written with its split scene's line: %v", name, err)
		}
	}
}
