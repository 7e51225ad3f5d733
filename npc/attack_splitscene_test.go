package npc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
)

// TestAttackNPCRetellsASplitScene attacks the split-scene secrecy through
// an NPC. The DM splits the party: Thorin alone meets Hadrik at the old
// well and tells him Hadrik's own secret is out: "you are a member of the
// Thieves' Guild". Extraction draws the fact Hadrik MEMBER_OF Thieves'
// Guild from Thorin's line, so Lyra, outside the scene, does not read it
// (the store hides facts told only in a split scene). The party rejoins;
// Lyra asks Brannoc, the innkeeper at the tavern, who knows Hadrik, what
// he knows of him, and his model calls query_entities and search_sessions.
//
// What the model is given is what Lyra can hear. The README says an NPC
// sees "what a player sees, plus its own entity in full and the secret
// facts it is an end of or listed in known_by". The fact, Thorin's line,
// and the quote of that line on a fact also told with the party together
// must not reach Brannoc's prompt or his tools' results; the fact itself
// must.
func TestAttackNPCRetellsASplitScene(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 16)
	pc := pgtest.Campaign(t, store, "atksplitnpc")
	g, sl := pc.Graph(), pc.Sessions()
	for _, e := range []memory.Entity{
		{ID: "brannoc", Type: memory.EntityNPC, Name: "Brannoc", Attributes: map[string]any{"occupation": "innkeeper"}},
		{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"},
		{ID: "tavern", Type: memory.EntityLocation, Name: "Prancing Pony"},
		{ID: "guild", Type: memory.EntityFaction, Name: "Thieves' Guild"},
	} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range []memory.Relationship{
		{SourceID: "brannoc", TargetID: "hadrik", Type: "KNOWS"},
		{SourceID: "brannoc", TargetID: "tavern", Type: "LOCATED_AT"},
	} {
		r.Provenance = memory.Provenance{Confidence: 1, Source: memory.SourceStated}
		if _, err := g.UpsertRelationship(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
		split   bool
	}{{0, []string{"lyra", "thorin"}, false}, {time.Minute, []string{"thorin"}, true}, {10 * time.Minute, []string{"lyra", "thorin"}, false}} {
		if err := sl.RecordPresence(ctx, "s1", t0.Add(p.at), p.players, p.split); err != nil {
			t.Fatal(err)
		}
	}
	write := func(e memory.TranscriptEntry) int64 {
		t.Helper()
		e.SessionID = "s1"
		if _, err := sl.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
		es, err := sl.Entries(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range es {
			if x.Text == e.Text {
				return x.ID
			}
		}
		t.Fatalf("line %q not written", e.Text)
		return 0
	}
	// Brannoc greets the party before the split: by the heard window
	// (memory/postgres.HeardWindow) he "heard" what was said near it.
	write(memory.TranscriptEntry{SpeakerID: "brannoc", SpeakerName: "Brannoc", NPCID: "brannoc",
		Text: "Welcome to the Prancing Pony, travellers.", At: t0.Add(30 * time.Second)})
	const said = "Hadrik, everyone at the well knows you pay dues to the Thieves' Guild."
	line := write(memory.TranscriptEntry{SpeakerID: "thorin", SpeakerName: "Thorin", Text: said, At: t0.Add(2 * time.Minute)})
	if _, _, err := g.RecordFactOn(ctx, memory.Relationship{SourceID: "hadrik", TargetID: "guild", Type: "MEMBER_OF",
		Attributes: map[string]any{"evidence": said},
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}}, []int64{line}); err != nil {
		t.Fatal(err)
	}
	// Hadrik's haunt was told both at the table (Lyra's line) and in the
	// scene; extraction quotes the scene's line. Lyra may know the fact,
	// and so may Brannoc, but not its quote.
	public := write(memory.TranscriptEntry{SpeakerID: "lyra", SpeakerName: "Lyra",
		Text: "Hadrik drinks at the Prancing Pony every night.", At: t0.Add(40 * time.Second)})
	if _, _, err := g.RecordFactOn(ctx, memory.Relationship{SourceID: "hadrik", TargetID: "tavern", Type: "LOCATED_AT",
		Attributes: map[string]any{"evidence": said},
		Provenance: memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}}, []int64{public, line}); err != nil {
		t.Fatal(err)
	}
	// The store hides the fact and the line from Lyra: else the attack
	// proves nothing.
	lyra := pgtest.Open(t, store, pc.ID(), memory.PlayerViewerOf("lyra"))
	if fs, err := lyra.Graph().Relationships(ctx, "hadrik", memory.TraversalOpts{}); err != nil || len(fs) != 2 {
		t.Fatalf("Lyra reads %+v, %v: she should read Brannoc KNOWS Hadrik and Hadrik LOCATED_AT the tavern", fs, err)
	}

	dm := pgtest.Open(t, store, pc.ID(), memory.DMViewer())
	now := t0.Add(20 * time.Minute)
	clock := func() time.Time { return now }
	srv := llmtest.New(llmtest.Script(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			{Name: npc.ToolQueryEntities, Args: `{"name":"Hadrik"}`},
			{Name: npc.ToolSearchSessions, Args: `{"query":"Hadrik guild"}`},
		}},
		llmtest.Reply{Text: "Hadrik? Quiet fellow."},
	))
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	a, err := npc.NewAgent(npc.Config{LLM: client, Context: hotctx.New(dm, hotctx.Config{Now: clock}),
		Graph: table.NPCGraph(dm), Heard: dm.Sessions(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	// The party is together again; Lyra asks Brannoc.
	res, err := a.Turn(ctx, npc.TurnInput{NPCID: "brannoc", SessionID: "s1", SpeakerID: "lyra", SpeakerName: "Lyra",
		Text: "Brannoc, what do you know about Hadrik and the guild?", Live: true, Said: []npc.Message{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Requests()) != 2 || len(res.Tools) != 2 {
		t.Fatalf("%d requests, tools %+v: the model's tool round did not run", len(srv.Requests()), res.Tools)
	}
	if sys := srv.Requests()[0].Messages[0].Content; !strings.Contains(sys, "Hadrik LOCATED_AT Prancing Pony") {
		t.Errorf("Brannoc does not know where Hadrik drinks, told with the party together:\n%s", sys)
	}
	for i, req := range srv.Requests() {
		for _, m := range req.Messages {
			for _, w := range []string{"Thieves", "MEMBER_OF", "pay dues"} {
				if strings.Contains(m.Content, w) {
					t.Errorf("LEAK to Lyra: request %d's %s message holds %q, told only in Thorin's split scene:\n%s",
						i+1, m.Role, w, m.Content)
				}
			}
		}
	}
}
