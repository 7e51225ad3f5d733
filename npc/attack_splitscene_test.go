package npc_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
)

// thorinAloneFromMinuteOne starts session s1 of sl with Lyra and Thorin
// together, splits the party at minute 1 (Thorin alone in a scene) and
// brings it together again at minute 10; it returns the session's start.
func thorinAloneFromMinuteOne(t *testing.T, sl *postgres.SessionLog) time.Time {
	t.Helper()
	ctx := context.Background()
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
	return t0
}

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
	t0 := thorinAloneFromMinuteOne(t, sl)
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
	if notes := srv.Requests()[0].Messages[1].Content; !strings.Contains(notes, "Hadrik LOCATED_AT Prancing Pony") {
		t.Errorf("Brannoc does not know where Hadrik drinks, told with the party together:\n%s", notes)
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

// TestAttackNPCNamesAnEntityOfASplitScene attacks the split-scene secrecy
// of entities through an NPC. In Thorin's split scene the Veiled Abbess is
// named, so she is an entity first heard there (scene_only) that Lyra, not
// in the scene, may not see. With the party together Lyra says "Brannoc
// knows the Abbess", by a title only, and extraction draws Brannoc KNOWS
// Veiled Abbess from it: the fact rests on a line said with the party
// together, so the facts' split-scene rule lets Brannoc know it; and the
// NPC's handle read every entity. Lyra then asks Brannoc whom he knows.
//
// Brannoc must see an entity as a player who was not in the scene does,
// and so no fact naming one he may not see: the Abbess must not reach his
// prompt, his query_entities or his handle's Entity. An entity of a split
// scene later named in full with the party together (the Smugglers'
// Cellar), and one at the end of a fact the DM lists him in known_by (the
// Sunken Vault), he may see.
func TestAttackNPCNamesAnEntityOfASplitScene(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 16)
	pc := pgtest.Campaign(t, store, "atksplitent")
	g, sl := pc.Graph(), pc.Sessions()
	for _, e := range []memory.Entity{
		{ID: "brannoc", Type: memory.EntityNPC, Name: "Brannoc", Attributes: map[string]any{"occupation": "innkeeper"}},
		{ID: "hadrik", Type: memory.EntityNPC, Name: "Hadrik"},
	} {
		if err := g.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	t0 := thorinAloneFromMinuteOne(t, sl)
	write := func(at time.Duration, speaker, text string) int64 {
		t.Helper()
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: speaker, SpeakerName: speaker,
			Text: text, At: t0.Add(at)}); err != nil {
			t.Fatal(err)
		}
		es, err := sl.Entries(ctx, "s1")
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range es {
			if x.Text == text {
				return x.ID
			}
		}
		t.Fatalf("line %q not written", text)
		return 0
	}
	scene := write(2*time.Minute, "thorin", "The Veiled Abbess waits in the Smugglers' Cellar below the Sunken Vault.")
	for _, e := range []memory.Entity{
		{ID: "abbess", Type: memory.EntityNPC, Name: "Veiled Abbess", Aliases: []string{"the Abbess"}},
		{ID: "cellar", Type: memory.EntityLocation, Name: "Smugglers' Cellar"},
		{ID: "vault", Type: memory.EntityLocation, Name: "Sunken Vault"},
	} {
		if err := g.AddSceneEntity(ctx, e, []int64{scene}); err != nil {
			t.Fatal(err)
		}
	}
	knowsAbbess := write(12*time.Minute, "lyra", "Brannoc knows the Abbess, I'm sure of it.")
	cellar := write(13*time.Minute, "lyra", "Brannoc, we found the Smugglers' Cellar.")
	if err := g.AddEntityEvidence(ctx, map[string][]int64{"cellar": {cellar}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		r    memory.Relationship
		line int64
	}{
		{memory.Relationship{SourceID: "brannoc", TargetID: "hadrik", Type: "KNOWS"}, 0},
		{memory.Relationship{SourceID: "brannoc", TargetID: "abbess", Type: "KNOWS"}, knowsAbbess},
		{memory.Relationship{SourceID: "brannoc", TargetID: "cellar", Type: "KNOWS"}, cellar},
		{memory.Relationship{SourceID: "hadrik", TargetID: "vault", Type: "KNOWS",
			Attributes: map[string]any{memory.AttrSecret: true, memory.AttrKnownBy: []any{"brannoc"}}}, 0},
	} {
		f.r.Provenance = memory.Provenance{SessionID: "s1", Confidence: 0.95, Source: memory.SourceStated}
		var lines []int64
		if f.line != 0 {
			lines = []int64{f.line}
		}
		if _, _, err := g.RecordFactOn(ctx, f.r, lines); err != nil {
			t.Fatal(err)
		}
	}
	// The store hides the Abbess from Lyra, and shows her the Cellar:
	// else the attack proves nothing.
	lyra := pgtest.Open(t, store, pc.ID(), memory.PlayerViewerOf("lyra"))
	if _, err := lyra.Graph().Entity(ctx, "abbess"); !errors.Is(err, memory.ErrNotFound) {
		t.Fatalf("Lyra reads the Abbess: %v", err)
	}
	if _, err := lyra.Graph().Entity(ctx, "cellar"); err != nil {
		t.Fatalf("Lyra does not read the Smugglers' Cellar, named in full where she was: %v", err)
	}

	dm := pgtest.Open(t, store, pc.ID(), memory.DMViewer())
	now := t0.Add(20 * time.Minute)
	clock := func() time.Time { return now }
	srv := llmtest.New(llmtest.Script(
		llmtest.Reply{ToolCalls: []llmtest.Call{
			{Name: npc.ToolQueryEntities, Args: `{"name":"Abbess"}`},
			{Name: npc.ToolQueryEntities, Args: `{"name":""}`},
		}},
		llmtest.Reply{Text: "I know many folk."},
	))
	defer srv.Close()
	client, err := llm.New(llm.Config{BaseURL: srv.URL(), Model: "fake", Backoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mem := table.NPCGraph(dm)
	a, err := npc.NewAgent(npc.Config{LLM: client, Context: hotctx.New(dm, hotctx.Config{Now: clock}),
		Graph: mem, Heard: dm.Sessions(), Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	res, err := a.Turn(ctx, npc.TurnInput{NPCID: "brannoc", SessionID: "s1", SpeakerID: "lyra", SpeakerName: "Lyra",
		Text: "Brannoc, who do you know around here?", Live: true, Said: []npc.Message{}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(srv.Requests()) != 2 || len(res.Tools) != 2 {
		t.Fatalf("%d requests, tools %+v: the model's tool round did not run", len(srv.Requests()), res.Tools)
	}
	var all strings.Builder
	for i, req := range srv.Requests() {
		for _, m := range req.Messages {
			all.WriteString(m.Content)
			if strings.Contains(m.Content, "Veiled") {
				t.Errorf("LEAK to Lyra: request %d's %s message names the Veiled Abbess, first heard in Thorin's split scene:\n%s",
					i+1, m.Role, m.Content)
			}
		}
	}
	for _, w := range []string{"Smugglers' Cellar", "Sunken Vault", "Hadrik"} {
		if !strings.Contains(all.String(), w) {
			t.Errorf("Brannoc does not know %s:\n%s", w, all.String())
		}
	}
	ng, err := mem.(npc.NPCGraph).ForNPC("brannoc")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := ng.Entity(ctx, "abbess"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("LEAK: Brannoc's handle reads entity abbess: %+v, %v", e, err)
	}
	for _, id := range []string{"cellar", "vault", "brannoc"} {
		if _, err := ng.Entity(ctx, id); err != nil {
			t.Errorf("Brannoc's handle does not read entity %s: %v", id, err)
		}
	}
}
