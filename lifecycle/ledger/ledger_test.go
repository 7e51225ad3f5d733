package ledger_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestLedgerAfterTheSession: a session's lines, processed after it ends
// without an LLM, put its promises, debts and handovers in the ledger,
// waiting for the DM; players see them once the DM confirms them, and each
// quotes its line and keeps its time.
func TestLedgerAfterTheSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	start := time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC)
	const sid = "s-ledger"
	if err := camp.Sessions().StartSession(ctx, sid, start); err != nil {
		t.Fatal(err)
	}
	lines := []memory.TranscriptEntry{
		{SpeakerID: "u-lyra", SpeakerName: "Lyra", Text: "Brannoc, I promise we'll bring back your brother's ring before the new moon."},
		{SpeakerID: "brannoc", NPCID: "brannoc", SpeakerName: "Brannoc", Text: "Then the rooms are yours, lass."},
		{SpeakerID: "grimjaw", NPCID: "grimjaw", SpeakerName: "Grimjaw", Text: "Thorin, take this hammer. You owe me ten gold for the edge on it."},
		{SpeakerID: "u-thorin", SpeakerName: "Thorin", Text: "Thank you, Grimjaw. Take this seriously, though: the mine is dangerous."},
	}
	for i := range lines {
		lines[i].SessionID, lines[i].At, lines[i].IdempotencyKey = sid, start.Add(time.Duration(i)*time.Minute), sid+"-"+string(rune('a'+i))
	}
	if _, err := camp.Sessions().WriteEntries(ctx, lines); err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().EndSession(ctx, sid, start.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: ledger.Extractor{},
		Progress: postsession.NewStoredProgress(camp.Processing()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := p.Run(ctx, sid)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pending != 3 || rep.Accepted != 0 {
		t.Fatalf("report: %+v; want 3 entries waiting for review", rep)
	}
	// Found without an LLM, the session is not marked extracted: an LLM
	// configured later still extracts it.
	if unf, err := postsession.NewStoredProgress(camp.Processing()).Unfinished(ctx); err != nil || !slices.Contains(unf, sid) {
		t.Errorf("after the ledger's pass, sessions waiting for extraction: %v (%v); want %s among them", unf, err, sid)
	}
	dm := pgtest.Open(t, store, camp.ID(), memory.DMViewer())
	items, err := ledger.List(ctx, dm.Graph())
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		kind           ledger.Kind
		from, to, what string
		line           int
	}{
		{ledger.Promise, "Lyra", "Brannoc", "ring", 0},
		{ledger.Handover, "Grimjaw", "Thorin", "hammer", 2},
		{ledger.Debt, "Thorin", "Grimjaw", "ten gold", 2},
	}
	if len(items) != len(want) {
		t.Fatalf("the ledger: %+v; want %d entries", items, len(want))
	}
	for i, w := range want {
		var it ledger.Item
		for _, x := range items {
			if x.Kind == w.kind {
				it = x
			}
		}
		if it.Kind != w.kind || it.From != w.from || it.To != w.to || !strings.Contains(it.What, w.what) ||
			it.Status != memory.StatusPending || it.Session != sid || !it.SaidAt.Equal(lines[w.line].At) ||
			!strings.Contains(it.Quote, lines[w.line].Text) {
			t.Errorf("entry %d: %+v; want %s %s→%s %q said at %s", i, it, w.kind, w.from, w.to, w.what, lines[w.line].At)
		}
	}
	if items[0].Due != "before the new moon" {
		t.Errorf("the promise is due %q; want before the new moon", items[0].Due)
	}

	// Players see nothing the DM has not confirmed; then the confirmed one.
	player := pgtest.Open(t, store, camp.ID(), memory.PlayerViewer())
	if got, err := ledger.List(ctx, player.Graph()); err != nil || len(got) != 0 {
		t.Fatalf("a player sees %d unreviewed entries (%v)", len(got), err)
	}
	if _, err := camp.Graph().ConfirmFact(ctx, items[0].FactID); err != nil {
		t.Fatal(err)
	}
	got, err := ledger.List(ctx, player.Graph())
	if err != nil || len(got) != 1 || got[0].Kind != ledger.Promise || got[0].Status != memory.StatusActive {
		t.Fatalf("after the DM confirmed the promise, a player sees %+v (%v)", got, err)
	}

	// Grimjaw, who is owed, knows it once the DM confirms the debt (in a
	// later session: not from the lines he heard, from memory).
	var debt int64
	for _, it := range items {
		if it.Kind == ledger.Debt {
			debt = it.FactID
		}
	}
	npc := pgtest.Open(t, store, camp.ID(), memory.NPCViewer("grimjaw"))
	before, err := hotctx.New(npc, hotctx.Config{NowWith: ledger.NowWithOf}).Assemble(ctx, "grimjaw", "s-later", 4000)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(before.Text, "OWES") {
		t.Error("Grimjaw knows of a debt the DM has not confirmed")
	}
	if _, err := camp.Graph().ConfirmFact(ctx, debt); err != nil {
		t.Fatal(err)
	}
	after, err := hotctx.New(npc, hotctx.Config{NowWith: ledger.NowWithOf}).Assemble(ctx, "grimjaw", "s-later", 4000)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(after.Text, "Thorin OWES Grimjaw") || !strings.Contains(after.Text, "ten gold") {
		t.Errorf("Grimjaw's hot context does not hold the debt owed him:\n%s", after.Text)
	}
}

// TestDifferentDebtsStored: two different debts between the same two are
// two facts of the graph, and a debt restated in a later session is the
// same fact quoting its restatement (migration 0025's entry key).
func TestDifferentDebtsStored(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	start := time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC)
	run := func(sid string, at time.Time, texts ...[2]string) {
		t.Helper()
		if err := camp.Sessions().StartSession(ctx, sid, at); err != nil {
			t.Fatal(err)
		}
		var lines []memory.TranscriptEntry
		for i, x := range texts {
			l := memory.TranscriptEntry{SessionID: sid, SpeakerID: strings.ToLower(x[0]), SpeakerName: x[0], Text: x[1],
				At: at.Add(time.Duration(i) * time.Minute), IdempotencyKey: sid + "-" + string(rune('a'+i))}
			if x[0] == "Grimjaw" {
				l.NPCID = "grimjaw"
			}
			lines = append(lines, l)
		}
		if _, err := camp.Sessions().WriteEntries(ctx, lines); err != nil {
			t.Fatal(err)
		}
		if err := camp.Sessions().EndSession(ctx, sid, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
			Extractor: ledger.Extractor{Ledger: camp.Graph()}, Progress: postsession.NewStoredProgress(camp.Processing()),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := p.Run(ctx, sid)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Pending == 0 {
			t.Fatalf("%s: %+v; want entries waiting for review", sid, rep)
		}
	}
	run("s-one", start,
		[2]string{"Grimjaw", "Thorin, you owe me ten gold for the edge on your axe."},
		[2]string{"Thorin", "Aye."},
		[2]string{"Grimjaw", "And you also owe me a favour for keeping quiet about the mine."})
	later := start.Add(7 * 24 * time.Hour)
	run("s-two", later, [2]string{"Thorin", "Grimjaw, I know I owe you ten gold for the axe."})
	items, err := ledger.List(ctx, camp.Graph())
	if err != nil {
		t.Fatal(err)
	}
	var debts []ledger.Item
	for _, it := range items {
		if it.Kind == ledger.Debt && it.From == "Thorin" && it.To == "Grimjaw" {
			debts = append(debts, it)
		}
	}
	if len(debts) != 2 {
		t.Fatalf("Thorin's debts to Grimjaw: %+v; want two (the gold and the favour)", debts)
	}
	for _, d := range debts {
		switch {
		case strings.Contains(d.What, "ten gold"):
			if !strings.Contains(d.Quote, "I know I owe you ten gold") || !d.SaidAt.Equal(later) {
				t.Errorf("the gold, restated in a later session: %+v; want it quoting the restatement at %s", d, later)
			}
		case strings.Contains(d.What, "favour"):
		default:
			t.Errorf("a debt of %q; want the gold or the favour", d.What)
		}
	}
}

// TestNPCKnowsItsLedger: an NPC knows, in its hot context, the confirmed
// entries about it: a debt owed it, and for an item it handed on who
// holds it now; never an entry waiting for review (neither the debt nor
// a handover that would move the item), and never a secret entry about
// others.
func TestNPCKnowsItsLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	g := camp.Graph()
	at := time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC)
	write := func(src, dst, rel, what string, conf float64, i int, extra map[string]any) int64 {
		t.Helper()
		said := at.Add(time.Duration(i) * time.Minute)
		attrs := map[string]any{"what": what, "evidence": "take " + what, "said_at": said.Format(time.RFC3339)}
		maps.Copy(attrs, extra)
		f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: dst, Type: rel, Attributes: attrs,
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: said, Confidence: conf, Source: memory.SourceStated}})
		if err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	write("grimjaw", "thorin", ledger.RelGave, "a lantern", 0.9, 0, nil)
	write("thorin", "lyra", ledger.RelGave, "the lantern", 0.9, 1, nil)
	onward := write("lyra", "kael", ledger.RelGave, "my lantern", ledger.RulesConfidence, 2, nil)
	debt := write("thorin", "grimjaw", ledger.RelOwes, "ten gold for the axe", ledger.RulesConfidence, 3, nil)
	write("vexa", "lyra", ledger.RelOwes, "the cult's ledger key", 0.9, 4, map[string]any{memory.AttrSecret: true})
	know := func() string {
		t.Helper()
		npc := pgtest.Open(t, store, camp.ID(), memory.NPCViewer("grimjaw"))
		hc, err := hotctx.New(npc, hotctx.Config{NowWith: ledger.NowWithOf}).Assemble(ctx, "grimjaw", "s-later", 4000)
		if err != nil {
			t.Fatal(err)
		}
		return hc.Text
	}
	text := know()
	if !strings.Contains(text, "Grimjaw GAVE Thorin") || !strings.Contains(text, "now_with: Lyra") {
		t.Errorf("Grimjaw does not know the lantern he gave Thorin is now with Lyra:\n%s", text)
	}
	if strings.Contains(text, "Kael") || strings.Contains(text, "OWES") || strings.Contains(text, "ledger key") {
		t.Errorf("Grimjaw knows an entry waiting for review or a secret of others:\n%s", text)
	}
	for _, id := range []int64{onward, debt} {
		if _, err := g.ConfirmFact(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	text = know()
	if !strings.Contains(text, "now_with: Kael") || !strings.Contains(text, "Thorin OWES Grimjaw") || !strings.Contains(text, "ten gold for the axe") {
		t.Errorf("after the DM confirmed them, Grimjaw does not know the lantern is with Kael or the debt owed him:\n%s", text)
	}
}

// TestEditedEntryStaysItself: the DM's correction of a ledger entry (the
// review's Edit: who, relation, to whom) keeps what it is about, its quote
// and its key, so it neither loses its what nor merges into another debt
// between the same two.
func TestEditedEntryStaysItself(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	g := camp.Graph()
	at := time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC)
	write := func(src, what string) int64 {
		t.Helper()
		f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: src, TargetID: "grimjaw", Type: ledger.RelOwes,
			Attributes: map[string]any{"what": what, "evidence": "Grimjaw: you owe me " + what, "said_at": at.Format(time.RFC3339),
				ledger.AttrEntry: ledger.EntryKey(what)},
			Provenance: memory.Provenance{SessionID: "s1", Timestamp: at, Confidence: ledger.RulesConfidence, Source: memory.SourceStated}})
		if err != nil {
			t.Fatal(err)
		}
		return f.ID
	}
	write("thorin", "ten gold for the axe")
	favour := write("kael", "a favour for the guards")
	// The DM corrects who owes the favour: Thorin, who owes the gold too.
	if _, err := g.ReplaceFact(ctx, favour, memory.Relationship{SourceID: "thorin", TargetID: "grimjaw", Type: ledger.RelOwes,
		Attributes: map[string]any{"edited_by": "dm"}}); err != nil {
		t.Fatal(err)
	}
	items, err := ledger.List(ctx, g)
	if err != nil {
		t.Fatal(err)
	}
	var whats []string
	for _, it := range items {
		if it.From == "Thorin" && it.To == "Grimjaw" && it.Kind == ledger.Debt {
			whats = append(whats, it.What)
			if it.Quote == "" {
				t.Errorf("the debt %q lost its quote", it.What)
			}
		}
	}
	slices.Sort(whats)
	if !slices.Equal(whats, []string{"a favour for the guards", "ten gold for the axe"}) {
		t.Fatalf("Thorin's debts to Grimjaw after the edit: %q; want the gold and the favour apart", whats)
	}
}
