package postsession_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// scriptedExtractor answers every window with the same extraction, as a
// model reading the session would.
type scriptedExtractor struct{ out postsession.Extraction }

func (x scriptedExtractor) Extract(context.Context, []memory.Entity, []memory.TranscriptEntry) (postsession.Extraction, error) {
	return x.out, nil
}

// splitSession records session s1 of camp: Lyra and Thorin together, then
// from minute 2 the DM splits the party (Thorin alone in the scene), where
// Thorin learns the vault's code from the NPC Marla. Lyra was never in the
// scene.
func splitSession(ctx context.Context, t *testing.T, camp *postgres.Campaign) {
	t.Helper()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	sl := camp.Sessions()
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"lyra", "thorin"}, false}, {2 * time.Minute, []string{"thorin"}, true}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	for i, l := range []struct{ id, who, text string }{
		{"lyra", "Lyra", "We should ask the miller about the grain."},
		{"marla", "Marla", "The code to the Vault of Ash is four four one seven."},
		{"thorin", "Thorin", "I will keep the vault code to myself."},
	} {
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: l.id, SpeakerName: l.who,
			Text: l.text, At: t0.Add(time.Duration(1+2*i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sl.EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
}

// TestSplitSceneExtractionStaysInTheScene (a leak an adversarial review found, fixed
// since; the test keeps it fixed): what the
// post-session extraction stores from a split scene must reach the
// scene's players only. Lyra (bound) and any player (a public recap, the
// MCP player role) must not learn of the Vault of Ash or its code:
//   - paraphrase: the model paraphrases its evidence (extract.go says
//     Evidence "quotes or paraphrases"), quotedLines links no line, and
//     the fact "rests on no line": every player reads it, its "evidence"
//     attribute carrying the secret;
//   - two lines: the model quotes a line said with the party together and
//     one of the scene in one evidence string; the fact rests on both, so
//     Lyra reads it (fine, she heard one) but with an "evidence" attribute
//     quoting the scene's line;
//   - entity: the entity the model extracted from the scene, with its
//     description, is listed to every player (entities carry no evidence).
//
// In every case the entity's name, heard only in the scene, is not listed
// to them either (migration 0032, a leak of the same review's list).
func TestSplitSceneExtractionStaysInTheScene(t *testing.T) {
	t.Parallel()
	const secret = "four four one seven"
	people := []postsession.ExtractedEntity{{Name: "Thorin", Type: "player"}, {Name: "Lyra", Type: "player"},
		{Name: "Marla", Type: "npc"}, {Name: "Mill", Type: "location"}}
	vault := postsession.ExtractedEntity{Name: "Vault of Ash", Type: "location",
		Description: "a vault whose code is " + secret}
	for _, tc := range []struct {
		name string
		x    postsession.Extraction
	}{
		{"paraphrase", postsession.Extraction{
			Entities: append(people, postsession.ExtractedEntity{Name: "Vault of Ash", Type: "location"}),
			Relationships: []postsession.ExtractedRelationship{{Source: "Marla", Target: "Vault of Ash", Type: "KNOWS_CODE_OF",
				Confidence: 0.9, Basis: "stated", Evidence: "Marla tells Thorin the vault code is " + secret}}}},
		{"two lines", postsession.Extraction{
			Entities: append(people, postsession.ExtractedEntity{Name: "Vault of Ash", Type: "location"}),
			Relationships: []postsession.ExtractedRelationship{{Source: "Lyra", Target: "Mill", Type: "GOES_TO",
				Confidence: 0.9, Basis: "stated",
				Evidence: "Lyra: We should ask the miller about the grain. Marla: The code to the Vault of Ash is " + secret + "."}}}},
		{"entity", postsession.Extraction{Entities: append(people, vault)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			store, _ := pgtest.NewStore(t, 8)
			camp := pgtest.Campaign(t, store, "attack")
			splitSession(ctx, t, camp)
			p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
				Extractor: scriptedExtractor{tc.x}, Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Run(ctx, "s1"); err != nil {
				t.Fatal(err)
			}
			// The DM reads the secret somewhere: the attack is not vacuous.
			if got := readable(ctx, t, camp, memory.DMViewer()); !strings.Contains(got, secret) {
				t.Fatalf("the DM reads nothing of the scene: %s", got)
			}
			for _, v := range []memory.Viewer{memory.PlayerViewerOf("lyra"), memory.PlayerViewer()} {
				got := readable(ctx, t, camp, v)
				if strings.Contains(got, secret) {
					t.Errorf("%s, not in the split scene, reads it through the graph:\n%s", v, got)
				}
				if strings.Contains(got, "vault of ash") {
					t.Errorf("%s, not in the split scene, reads the name heard only there:\n%s", v, got)
				}
			}
		})
	}
}

// readable is everything viewer v reads of camp's graph (entities with
// their attributes, facts with theirs), lower-cased.
func readable(ctx context.Context, t *testing.T, camp *postgres.Campaign, v memory.Viewer) string {
	t.Helper()
	c, err := camp.As(v)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	es, err := c.Graph().FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		fmt.Fprintf(&b, "entity %s %s %v\n", e.ID, e.Name, e.Attributes)
	}
	fs, err := c.Graph().FindFacts(ctx, postgres.FactQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fs {
		fmt.Fprintf(&b, "fact %s %s %s %v\n", f.SourceID, f.Type, f.TargetID, f.Attributes)
	}
	return strings.ToLower(b.String())
}
