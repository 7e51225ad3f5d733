package postgres_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// timelineCampaign is seedWorld with three sessions a week apart.
func timelineCampaign(t *testing.T, name string) (*postgres.Store, *postgres.Campaign) {
	t.Helper()
	ctx := ctxT(t)
	s := newStore(t)
	c := pgtest.Campaign(t, s, name)
	seedWorld(t, c)
	for i, id := range []string{"s1", "s2", "s3"} {
		check(t, c.Sessions().StartSession(ctx, id, t0.Add(time.Duration(i)*7*24*time.Hour)))
	}
	return s, c
}

func located(t *testing.T, g *postgres.Graph, session string) string {
	t.Helper()
	rs := must[[]memory.Relationship](t)(g.FactsAsOf(ctxT(t), "grimjaw", session))
	var out []string
	for _, r := range rs {
		if r.Type == "LOCATED_AT" && r.SourceID == "grimjaw" {
			out = append(out, r.TargetID)
		}
	}
	return strings.Join(out, ",")
}

func openConflicts(t *testing.T, g *postgres.Graph) []string {
	t.Helper()
	var out []string
	for _, c := range must[[]memory.Conflict](t)(g.Conflicts(ctxT(t))) {
		out = append(out, fmt.Sprintf("%s %s->%s %s %s->%s", c.Kind, c.NewFact.SourceID, c.NewFact.TargetID, c.NewFact.Type,
			c.OldFact.SourceID, c.OldFact.TargetID))
	}
	return out
}

// Every writer goes through WriteFact; each row is one write path and what
// the store must make of it.
func TestWriteFactPerWriter(t *testing.T) {
	t.Parallel()
	moveTo := func(session string) memory.Relationship {
		return memory.Relationship{SourceID: "grimjaw", TargetID: "tower", Type: "LOCATED_AT",
			Provenance: memory.Provenance{SessionID: session, Confidence: 0.9, Source: memory.SourceStated}}
	}
	tests := []struct {
		name   string
		writer memory.Writer
		fact   memory.Relationship
		reason string
		// what the writer is told
		wantProposed  bool
		wantConflicts int
		// the canon afterwards
		wantCanon string // where Grimjaw is now (FactsAsOf s3)
		wantOpen  []string
	}{
		{name: "DM /memory fact add supersedes with a reason", writer: memory.DM("u-dm"), fact: moveTo("s2"), reason: "he fled the town",
			wantConflicts: 1, wantCanon: "tower"},
		{name: "extraction of a later session supersedes", writer: memory.Writer{Role: memory.WriterExtraction}, fact: moveTo("s2"),
			wantConflicts: 1, wantCanon: "tower",
			wantOpen: []string{"supersedes grimjaw->tower LOCATED_AT grimjaw->ironhold"}},
		{name: "import of a later session supersedes", writer: memory.Writer{Role: memory.WriterImport}, fact: moveTo("s2"),
			wantConflicts: 1, wantCanon: "tower",
			wantOpen: []string{"supersedes grimjaw->tower LOCATED_AT grimjaw->ironhold"}},
		{name: "NPC propose_fact is queued, canon untouched", writer: memory.NPCWriter("elara"), fact: moveTo("s2"),
			wantProposed: true, wantCanon: "ironhold", wantOpen: []string{"supersedes grimjaw->tower LOCATED_AT grimjaw->ironhold"}},
		{name: "player put_edge is queued, canon untouched", writer: memory.Player("mcp:player:claude"), fact: moveTo("s2"),
			wantProposed: true, wantCanon: "ironhold", wantOpen: []string{"supersedes grimjaw->tower LOCATED_AT grimjaw->ironhold"}},
		{name: "extraction contradicting without a later session waits", writer: memory.Writer{Role: memory.WriterExtraction},
			fact: moveTo("s1"), wantProposed: true, wantConflicts: 1, wantCanon: "ironhold",
			wantOpen: []string{"contradicts grimjaw->tower LOCATED_AT grimjaw->ironhold"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each row has a database of its own
			ctx := ctxT(t)
			s, c := timelineCampaign(t, fmt.Sprintf("writers-%d", i))
			g := c.Graph()
			w, err := g.WriteFact(ctx, tt.writer, tt.fact, tt.reason)
			check(t, err)
			if w.Proposed != tt.wantProposed || len(w.Conflicts) != tt.wantConflicts {
				t.Fatalf("write: proposed %v, %d conflicts; want %v, %d (%+v)", w.Proposed, len(w.Conflicts), tt.wantProposed, tt.wantConflicts, w)
			}
			if got := located(t, g, "s3"); got != tt.wantCanon {
				t.Errorf("canon location %q, want %q", got, tt.wantCanon)
			}
			if got := openConflicts(t, g); !reflect.DeepEqual(got, tt.wantOpen) {
				t.Errorf("open conflicts %q, want %q", got, tt.wantOpen)
			}
			if got := located(t, g, "s1"); got != "ironhold" {
				t.Errorf("as of s1 Grimjaw is at %q, want ironhold", got)
			}
			if tt.writer.Role == memory.WriterDM {
				if !w.Fact.Provenance.DMConfirmed || w.Fact.Status != memory.StatusActive {
					t.Errorf("the DM's fact %+v is not confirmed canon", w.Fact)
				}
				cf := w.Conflicts[0]
				if cf.Kind != memory.LinkSupersedes || cf.Resolution != "kept_new" || cf.OldFact.ValidUntilSession != "s2" {
					t.Errorf("DM conflict %+v, want a settled supersession retired as of s2", cf)
				}
				var reason string
				check(t, s.Pool().QueryRow(ctx, `SELECT reason FROM fact_links WHERE from_fact = $1`, w.Fact.ID).Scan(&reason))
				if reason != tt.reason {
					t.Errorf("link reason %q, want %q", reason, tt.reason)
				}
			}
			if tt.writer.Proposes() {
				if w.Fact.Attributes["proposed_by"] != tt.writer.ID || w.Fact.Status != memory.StatusPending {
					t.Errorf("proposal %+v", w.Fact)
				}
			}
			// Writing the same fact again creates nothing new.
			again, err := g.WriteFact(ctx, tt.writer, tt.fact, tt.reason)
			check(t, err)
			if again.Fact.ID != w.Fact.ID {
				t.Errorf("again: fact %d, first %d", again.Fact.ID, w.Fact.ID)
			}
		})
	}
}

// A player (or NPC) writing an existing secret triple cannot flip its
// secrecy and learns nothing: the answer is the same as for a triple that
// does not exist (issue 17, item 1).
func TestProposalNeverMergesIntoCanon(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, c := timelineCampaign(t, "no-merge")
	g := c.Graph()
	secretFact := must[[]memory.Relationship](t)(g.FactsAsOf(ctx, "elara", "s1"))
	var canon memory.Relationship
	for _, r := range secretFact {
		if r.Type == "KNOWS" && r.TargetID == "vault" {
			canon = r
		}
	}
	if canon.ID == 0 {
		t.Fatal("seed lacks the secret fact")
	}
	write := func(w memory.Writer, target string) memory.FactWrite {
		t.Helper()
		return must[memory.FactWrite](t)(g.WriteFact(ctx, w, memory.Relationship{SourceID: "elara", TargetID: target, Type: "KNOWS",
			Attributes: map[string]any{memory.AttrSecret: false, "proposed_by": "the-dm"},
			Provenance: memory.Provenance{Confidence: 1, DMConfirmed: true}}, ""))
	}
	for _, w := range []memory.Writer{memory.Player("p1"), memory.NPCWriter("grimjaw")} {
		existing, fresh := write(w, "vault"), write(w, "hammer")
		shape := func(x memory.FactWrite) string {
			return fmt.Sprintf("%v %s %v %d %v", x.Proposed, x.Fact.Status, x.Fact.Provenance.DMConfirmed, len(x.Conflicts), x.Fact.Attributes)
		}
		if a, b := shape(existing), strings.ReplaceAll(shape(fresh), "hammer", "vault"); a != b {
			t.Errorf("%s: an existing secret triple answers %q, a new one %q", w.Key(), a, b)
		}
		if existing.Fact.ID == canon.ID || existing.Fact.Attributes["proposed_by"] != w.ID {
			t.Errorf("%s: proposal %+v merged into canon %d or kept a false proposer", w.Key(), existing.Fact, canon.ID)
		}
		after := must[memory.Relationship](t)(g.Fact(ctx, canon.ID))
		if after.Attributes[memory.AttrSecret] != true || after.Status != memory.StatusActive || !reflect.DeepEqual(after.Attributes, canon.Attributes) {
			t.Errorf("%s: canon fact changed to %+v", w.Key(), after)
		}
	}
	// The DM confirms a player's proposal of what canon already holds: the
	// canon fact stays as it was (still secret), the proposal is absorbed.
	p := write(memory.Player("p2"), "vault")
	confirmed := must[memory.Relationship](t)(g.ConfirmFact(ctx, p.Fact.ID))
	if confirmed.ID != canon.ID || confirmed.Attributes[memory.AttrSecret] != true || !confirmed.Provenance.DMConfirmed {
		t.Errorf("confirming a duplicate proposal gave %+v, want canon fact %d confirmed and still secret", confirmed, canon.ID)
	}
	// Confirming a new proposal makes it canon.
	fresh := write(memory.Player("p3"), "tower")
	if got := must[memory.Relationship](t)(g.ConfirmFact(ctx, fresh.Fact.ID)); got.Status != memory.StatusActive || got.ID != fresh.Fact.ID {
		t.Errorf("confirmed proposal %+v", got)
	}
	if _, err := g.WriteFact(ctx, memory.Writer{Role: "god"}, canon, ""); err == nil {
		t.Error("an unknown writer role was accepted")
	}
	if _, err := g.WriteFact(ctx, memory.Writer{Role: memory.WriterNPC}, canon, ""); err == nil {
		t.Error("an anonymous NPC writer was accepted")
	}
}

// Three sessions: Grimjaw moves in s2 (extraction) and again in s3 (an
// import), and the DM corrects where he went in s3. "As of" each session
// gives the location of that time; every contradicting write path leaves a
// conflict.
func TestThreeSessionsAsOf(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	s := newStore(t)
	c := pgtest.Campaign(t, s, "three-sessions")
	seedWorld(t, c)
	g := c.Graph()
	check(t, g.UpsertEntity(ctx, memory.Entity{ID: "duskwood", Type: memory.EntityLocation, Name: "Duskwood"}))
	for i, id := range []string{"s1", "s2", "s3"} {
		check(t, c.Sessions().StartSession(ctx, id, t0.Add(time.Duration(i)*7*24*time.Hour)))
	}
	// s2: extraction hears he moved to the tower.
	_, cs, err := g.RecordFact(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "tower", Type: "LOCATED_AT",
		Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.9, Source: memory.SourceStated}})
	check(t, err)
	if len(cs) != 1 {
		t.Fatalf("extraction: %d conflicts", len(cs))
	}
	// s3: an import says he went to the vault.
	yaml := `campaign: three-sessions
entities:
  - {id: grimjaw, type: npc, name: Grimjaw}
  - {id: vault, type: location, name: Sunken Vault}
relationships:
  - {source: grimjaw, target: vault, type: LOCATED_AT, provenance: {session: s3, confidence: 0.9}}
sessions:
  - {id: s3, started_at: ` + t0.Add(14*24*time.Hour).Format(time.RFC3339) + `, entries: []}
`
	f, err := campaignfile.Parse(strings.NewReader(yaml), "s3.yaml")
	check(t, err)
	// The file replaces Grimjaw's attributes; that is the import's own rule.
	must[campaignfile.Applied](t)(importFile(ctx, s, f))
	// s3: the DM corrects: he went to Duskwood, not the vault.
	w := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.DM("dm"), memory.Relationship{SourceID: "grimjaw", TargetID: "duskwood",
		Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s3"}}, "the vault was a rumour"))
	if len(w.Conflicts) != 1 || w.Conflicts[0].OldFact.TargetID != "vault" {
		t.Fatalf("DM correction conflicts %+v", w.Conflicts)
	}
	// An NPC and a player claim otherwise: proposals, queued.
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.NPCWriter("elara"), memory.Relationship{SourceID: "grimjaw", TargetID: "ironhold",
		Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s3", Confidence: 0.5}}, ""))
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Player("p1"), memory.Relationship{SourceID: "grimjaw", TargetID: "duskwood",
		Type: "NOT_LOCATED_AT", Provenance: memory.Provenance{SessionID: "s3", Confidence: 1}}, ""))
	for session, want := range map[string]string{"s1": "ironhold", "s2": "tower", "s3": "duskwood"} {
		if got := located(t, g, session); got != want {
			t.Errorf("as of %s Grimjaw is at %q, want %q", session, got, want)
		}
	}
	var writers []string
	rows, err := s.Pool().Query(ctx, `SELECT writer || ' ' || kind || ' ' || CASE WHEN resolution = '' THEN 'open' ELSE resolution END
		FROM fact_conflicts WHERE campaign_id = $1 ORDER BY id`, c.ID())
	check(t, err)
	for rows.Next() {
		var w string
		check(t, rows.Scan(&w))
		writers = append(writers, w)
	}
	check(t, rows.Err())
	want := []string{"extraction: supersedes open", "import: supersedes open", "dm:dm supersedes kept_new",
		"npc:elara contradicts open", "player:p1 contradicts open"}
	if !reflect.DeepEqual(writers, want) {
		t.Errorf("conflicts by writer %q, want %q", writers, want)
	}
}

// An NPC's hot context (its identity snapshot) holds the facts valid now:
// after a move it knows the new place only; proposals about it stay out.
func TestHotContextUsesFactsValidNow(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, c := timelineCampaign(t, "hot-now")
	g := c.Graph()
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Writer{Role: memory.WriterExtraction}, memory.Relationship{SourceID: "grimjaw",
		TargetID: "tower", Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.9}}, ""))
	must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Player("p1"), memory.Relationship{SourceID: "grimjaw",
		TargetID: "vault", Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s3", Confidence: 1}}, ""))
	id := must[memory.NPCIdentity](t)(g.IdentitySnapshot(ctx, "grimjaw"))
	var where []string
	for _, r := range id.Relationships {
		if r.Type == "LOCATED_AT" && r.SourceID == "grimjaw" {
			where = append(where, r.TargetID)
		}
	}
	if !reflect.DeepEqual(where, []string{"tower"}) {
		t.Errorf("Grimjaw's hot context places him at %v, want [tower]", where)
	}
}

// A low-confidence extraction of a later session retires nothing: the old
// location stays canon until the DM keeps the new one.
func TestPendingSupersessionRetiresNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, c := timelineCampaign(t, "pending-move")
	g := c.Graph()
	w := must[memory.FactWrite](t)(g.WriteFact(ctx, memory.Writer{Role: memory.WriterExtraction}, memory.Relationship{SourceID: "grimjaw",
		TargetID: "tower", Type: "LOCATED_AT", Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.4}}, ""))
	if !w.Proposed || len(w.Conflicts) != 1 || w.Conflicts[0].OldFact.Status != memory.StatusActive {
		t.Fatalf("write %+v", w)
	}
	if got := located(t, g, "s3"); got != "ironhold" {
		t.Fatalf("a guess moved Grimjaw to %q", got)
	}
	must[memory.Conflict](t)(g.ResolveConflict(ctx, w.Conflicts[0].ID, true))
	if got, old := located(t, g, "s3"), located(t, g, "s1"); got != "tower" || old != "ironhold" {
		t.Fatalf("after keeping the new fact: now %q, as of s1 %q", got, old)
	}
}

// TestDMReasonIsTheDMs: the reason the DM gives for a fact ("why it
// changed") may tell what players do not know yet; players and NPCs read
// the fact without it.
func TestDMReasonIsTheDMs(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	_, c := timelineCampaign(t, "dm-reason")
	const why = "captured by the Ashen Circle, the players do not know yet"
	w := must[memory.FactWrite](t)(c.Graph().WriteFact(ctx, memory.DM("the-dm"), memory.Relationship{SourceID: "elara", TargetID: "hammer",
		Type: "KNOWS", Provenance: memory.Provenance{Confidence: 1, DMConfirmed: true}}, why))
	if got := must[memory.Relationship](t)(c.Graph().Fact(ctx, w.Fact.ID)); got.Attributes["dm_reason"] != why {
		t.Fatalf("the DM reads %v; want the reason", got.Attributes)
	}
	for _, v := range []memory.Viewer{memory.PlayerViewer(), memory.NPCViewer("elara")} {
		h := must[*postgres.Campaign](t)(c.As(v))
		got, err := h.Graph().Fact(ctx, w.Fact.ID)
		if err != nil {
			t.Fatalf("%s: %v", v, err)
		}
		if strings.Contains(fmt.Sprint(got.Attributes), "Ashen") {
			t.Errorf("%s reads the DM's reason: %v", v, got.Attributes)
		}
	}
}
