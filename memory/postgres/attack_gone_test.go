package postgres_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// goneWorld is a campaign split after a minute (thorin alone in the scene,
// lyra outside it), with the given entities, and kg sessions registered
// for any player and for lyra.
type goneWorld struct {
	store    *postgres.Store
	camp     *postgres.Campaign
	g        *postgres.Graph
	sl       *postgres.SessionLog
	t0       time.Time
	players  map[string]*postgres.Campaign
	sessions map[string]postgres.KGSession
}

func newGoneWorld(t *testing.T, ents ...memory.Entity) *goneWorld {
	t.Helper()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, s, "camp")
	w := &goneWorld{store: s, camp: camp, g: camp.Graph(), sl: camp.Sessions()}
	w.t0 = splitAfterAMinute(t, w.sl)
	for _, e := range ents {
		if err := w.g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	return w
}

// register opens kg sessions for any player, lyra (outside the scene) and
// thorin (in it).
func (w *goneWorld) register(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	w.players = map[string]*postgres.Campaign{
		"any player": must[*postgres.Campaign](t)(w.camp.As(memory.PlayerViewer())),
		"lyra":       must[*postgres.Campaign](t)(w.camp.As(memory.PlayerViewerOf("lyra"))),
	}
	w.sessions = map[string]postgres.KGSession{}
	for name, c := range w.players {
		w.sessions[name] = must[postgres.KGSession](t)(c.KGRegisterSession(ctx, "sess-"+strings.ReplaceAll(name, " ", "-"),
			"mcp:test:"+name, postgres.KGCampaign, time.Now()))
	}
}

// noLeak fails when a player's kg_sync names a removed edge containing any
// of the words.
func (w *goneWorld) noLeak(t *testing.T, what string, words ...string) {
	t.Helper()
	ctx := context.Background()
	for name, c := range w.players {
		ch, err := c.KGSync(ctx, w.sessions[name].Cursor, "", false)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: removed %q", name, ch.Removed)
		for _, r := range ch.Removed {
			for _, word := range words {
				if strings.Contains(r, word) {
					t.Errorf("LEAK (%s): %s's kg_sync names %s", what, name, r)
				}
			}
		}
	}
}

// TestAttackGonePendingContradiction (a leak an adversarial review found, fixed since by
// glyphoxa_fact_fresh; the test keeps it fixed): extraction (RecordFact, the
// extraction writer) writes a fact that contradicts canon. WriteFact
// inserts it active, then, in the same transaction, holds it pending for
// the DM's review (UPDATE status = 'pending'). The trigger of migration
// 0039 sees an active fact made pending, with no evidence yet (extraction
// adds it afterwards) and public ends: gone.players = true. Every player's
// kg_sync then names, as removed, a pending fact no player could ever read.
// Here it is also a fact told only in a split scene lyra was not in (the
// evidence is linked after the write, as lifecycle/postsession does).
func TestAttackGonePendingContradiction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t,
		memory.Entity{ID: "marla", Type: memory.EntityNPC, Name: "Marla"},
		memory.Entity{ID: "tavern", Type: "location", Name: "Tavern"},
		memory.Entity{ID: "vault", Type: "location", Name: "Vault"},
		memory.Entity{ID: "ada", Type: memory.EntityNPC, Name: "Ada"},
		memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
	)
	together := sessionLine(t, w.sl, "dana", "Marla waits at the tavern and Ada owes Bo.", w.t0.Add(10*time.Second))
	scene := sessionLine(t, w.sl, "thorin", "Marla slips down into the vault; Ada never owed Bo a thing.", w.t0.Add(2*time.Minute))
	for _, f := range []memory.Relationship{
		{SourceID: "marla", TargetID: "tavern", Type: "LOCATED_AT"},
		{SourceID: "ada", TargetID: "bo", Type: "OWES"},
	} {
		f.Status = memory.StatusActive
		f.Provenance = memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}
		stored := must[memory.Relationship](t)(w.g.UpsertRelationship(ctx, f))
		check(t, w.g.AddEvidence(ctx, stored.ID, []int64{together}))
	}
	w.register(t)

	// Extraction of the split scene: two facts contradicting canon, held
	// pending; their evidence is the scene's line.
	for _, f := range []memory.Relationship{
		{SourceID: "marla", TargetID: "vault", Type: "LOCATED_AT"},
		{SourceID: "ada", TargetID: "bo", Type: "NOT_OWES"},
	} {
		f.Provenance = memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}
		stored, _, err := w.g.RecordFact(ctx, f)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != memory.StatusPending {
			t.Fatalf("fact %s %s %s stored %s, want pending: the test shows nothing", f.SourceID, f.Type, f.TargetID, stored.Status)
		}
		check(t, w.g.AddEvidence(ctx, stored.ID, []int64{scene}))
	}
	w.noLeak(t, "a pending fact of a split scene", "vault", "not-owes")
}

// hasEdge reports whether c's kg_read shows the edge from -rel-> to.
func hasEdge(t *testing.T, c *postgres.Campaign, from, rel, to string) bool {
	t.Helper()
	v := must[postgres.KGView](t)(c.KGRead(context.Background(), false))
	for _, e := range v.Edges {
		if e.From == from && postgres.KGRel(e.Rel) == postgres.KGRel(rel) && e.To == to {
			return true
		}
	}
	return false
}

// removedNamed reports whether c's kg_sync names the edge removed.
func removedNamed(t *testing.T, c *postgres.Campaign, s postgres.KGSession, dm bool, edge string) ([]string, bool) {
	t.Helper()
	ch := must[postgres.KGChanges](t)(c.KGSync(context.Background(), s.Cursor, "", dm))
	for _, r := range ch.Removed {
		if r == edge {
			return ch.Removed, true
		}
	}
	return ch.Removed, false
}

// TestAttackGoneEntityDeleted (a miss an adversarial review found, fixed
// since): a fact every player reads, deleted with one of its ends
// (Graph.DeleteEntity: ON DELETE CASCADE). The cascade runs after the
// entity row is gone, so glyphoxa_fact_public(OLD) found no end and
// recorded players = false: the DM was told the edge is removed, the
// players only of the node. Expected: both are told of the edge.
func TestAttackGoneEntityDeleted(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t,
		memory.Entity{ID: "ada", Type: memory.EntityNPC, Name: "Ada"},
		memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
	)
	together := sessionLine(t, w.sl, "dana", "Ada owes Bo.", w.t0.Add(10*time.Second))
	f := must[memory.Relationship](t)(w.g.UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: "bo", Type: "OWES",
		Status: memory.StatusActive, Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}}))
	check(t, w.g.AddEvidence(ctx, f.ID, []int64{together}))
	w.register(t)
	dm := must[*postgres.Campaign](t)(w.camp.As(memory.DMViewer()))
	dmSess := must[postgres.KGSession](t)(dm.KGRegisterSession(ctx, "sess-dm", "mcp:test:dm", postgres.KGCampaign, time.Now()))
	for name, c := range w.players {
		if !hasEdge(t, c, "ada", "OWES", "bo") {
			t.Fatalf("%s does not read the fact: the test shows nothing", name)
		}
	}
	check(t, w.g.DeleteEntity(ctx, "bo"))
	edge := "edge:campaign:ada:owes:bo"
	if got, ok := removedNamed(t, dm, dmSess, true, edge); !ok {
		t.Errorf("dm: removed %q, want %s", got, edge)
	}
	for name, c := range w.players {
		if got, ok := removedNamed(t, c, w.sessions[name], false, edge); !ok {
			t.Errorf("MISSED: %s read %s, deleted with its end bo; kg_sync tells the DM, not %s: removed %q", name, edge, name, got)
		}
	}
}

// TestAttackGoneSecretInOneImport (a leak an adversarial review found, fixed since by
// glyphoxa_fact_fresh; the test keeps it fixed): a campaign file that lists a fact
// twice, the second time marked secret (imported in one transaction, as
// campaignfile.Apply runs). The first write makes it active and public
// inside the transaction, the second merges "secret": true into it: the
// trigger sees a public fact made secret and records gone.players. No
// player could ever read the fact (it is secret when it commits), yet
// every player's kg_sync names it removed.
func TestAttackGoneSecretInOneImport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t,
		memory.Entity{ID: "ada", Type: memory.EntityNPC, Name: "Ada"},
		memory.Entity{ID: "cult", Type: "faction", Name: "Cult"},
	)
	w.register(t)
	err := w.store.InTx(ctx, "camp", func(tc *postgres.Campaign) error {
		for _, attrs := range []map[string]any{{"notes": "imported"}, {"secret": true}} {
			if _, err := tc.Graph().WriteFact(ctx, memory.Writer{Role: memory.WriterImport}, memory.Relationship{SourceID: "ada", TargetID: "cult",
				Type: "SERVES_SECRETLY", Attributes: attrs, Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}}, ""); err != nil {
				return err
			}
		}
		return nil
	})
	check(t, err)
	for name, c := range w.players {
		if hasEdge(t, c, "ada", "SERVES_SECRETLY", "cult") {
			t.Fatalf("%s reads the fact: the test shows nothing", name)
		}
	}
	w.noLeak(t, "a secret fact imported in one transaction", "serves-secretly")
}

// TestAttackGoneImportedContradiction (a leak an adversarial review found, fixed since by
// glyphoxa_fact_fresh; the test keeps it fixed): a campaign file (campaignfile.Apply
// in one transaction, as the import does) holding a fact and a
// contradiction of it, a secret-looking one the DM left for review. The
// second is held pending (WriteFact: "a contradiction waits for the DM"),
// after being written active in the same transaction: every player's
// kg_sync names the pending fact removed.
func TestAttackGoneImportedContradiction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t)
	w.register(t)
	doc := `campaign: camp
entities:
  - {id: elara, type: npc, name: Elara}
  - {id: tower, type: location, name: Tower}
  - {id: crypt, type: location, name: Crypt of the Lost Heir}
relationships:
  - {source: elara, target: tower, type: LOCATED_AT, provenance: {source: stated, confidence: 0.9, session: s1}}
  - {source: elara, target: crypt, type: LOCATED_AT, provenance: {source: stated, confidence: 0.9, session: s1}}
sessions:
  - id: s1
    started_at: 2026-03-01T19:00:00Z
`
	f, err := campaignfile.Parse(strings.NewReader(doc), "attack.yaml")
	check(t, err)
	_, err = importFile(ctx, w.store, f)
	check(t, err)
	dm := must[*postgres.Campaign](t)(w.camp.As(memory.DMViewer()))
	if hasEdge(t, dm, "elara", "LOCATED_AT", "crypt") || !hasEdge(t, dm, "elara", "LOCATED_AT", "tower") {
		t.Fatal("the crypt fact is not held pending: the test shows nothing")
	}
	w.noLeak(t, "a pending imported contradiction", "crypt")
}

// TestAttackGoneForgottenEvidence (a miss an adversarial review found,
// fixed since): a fact resting on a line said with the party together
// (dana's) and on a line of a split scene (thorin's). Every player reads
// it. Dana asks to be forgotten: the fact stays (it rests on thorin's line
// too), but its public line goes (fact_evidence ON DELETE CASCADE): it is
// now a fact of the split scene only, gone from lyra's graph and any
// player's. Its row does not change, so no change was logged, and kg_sync
// never told them. Expected: ForgetSpeaker logs it, and they are told.
func TestAttackGoneForgottenEvidence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newGoneWorld(t,
		memory.Entity{ID: "ada", Type: memory.EntityNPC, Name: "Ada"},
		memory.Entity{ID: "bo", Type: memory.EntityNPC, Name: "Bo"},
	)
	together := sessionLine(t, w.sl, "dana", "Ada owes Bo.", w.t0.Add(10*time.Second))
	scene := sessionLine(t, w.sl, "thorin", "Ada still owes Bo, I hear.", w.t0.Add(2*time.Minute))
	f := must[memory.Relationship](t)(w.g.UpsertRelationship(ctx, memory.Relationship{SourceID: "ada", TargetID: "bo", Type: "OWES",
		Status: memory.StatusActive, Provenance: memory.Provenance{SessionID: "s1", Confidence: 1, Source: memory.SourceStated}}))
	check(t, w.g.AddEvidence(ctx, f.ID, []int64{together, scene}))
	w.register(t)
	for name, c := range w.players {
		if !hasEdge(t, c, "ada", "OWES", "bo") {
			t.Fatalf("%s does not read the fact: the test shows nothing", name)
		}
	}
	if _, err := w.camp.ForgetSpeaker(ctx, "dana"); err != nil {
		t.Fatal(err)
	}
	edge := "edge:campaign:ada:owes:bo"
	for name, c := range w.players {
		if hasEdge(t, c, "ada", "OWES", "bo") {
			t.Fatalf("%s still reads the fact: the test shows nothing", name)
		}
		if got, ok := removedNamed(t, c, w.sessions[name], false, edge); !ok {
			t.Errorf("MISSED: %s read %s, which left their graph when dana was forgotten; kg_sync removed %q", name, edge, got)
		}
	}
	// Thorin, who was in the scene, still reads it.
	thorin := must[*postgres.Campaign](t)(w.camp.As(memory.PlayerViewerOf("thorin")))
	if !hasEdge(t, thorin, "ada", "OWES", "bo") {
		t.Error("thorin, in the scene, no longer reads the fact")
	}
}
