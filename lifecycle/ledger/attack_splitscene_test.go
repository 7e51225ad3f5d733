package ledger_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestLedgerKeepsARestatementInASplitSceneFromOutsiders (a leak an adversarial review found, fixed
// since; the test keeps it fixed): a debt
// said with the party together (session 1) and restated in a split scene
// of session 2 (Thorin alone with Grimjaw) is one ledger entry: the same
// fact, now quoting its latest restatement (its "evidence" and "said_at"
// attributes) and resting on both lines. It rests on a line every player
// read, so every player reads it, and /ledger shows them its quote: the
// split scene's line, with the hiding place Grimjaw told Thorin alone.
// Expected: a player not in the scene reads the entry (they heard the
// debt) quoting a line they may read, never the scene's.
func TestLedgerKeepsARestatementInASplitSceneFromOutsiders(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Import(t, store, "../../testdata/campaigns/ironhold-saga.yaml")
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: ledger.Extractor{},
		Progress: postsession.NewStoredProgress(camp.Processing()), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	both := []string{"u-lyra", "u-thorin"}
	play := func(sid string, start time.Time, split bool, lines ...memory.TranscriptEntry) {
		t.Helper()
		sl := camp.Sessions()
		if err := sl.StartSession(ctx, sid, start); err != nil {
			t.Fatal(err)
		}
		if err := sl.RecordPresence(ctx, sid, start, both, false); err != nil {
			t.Fatal(err)
		}
		if split {
			if err := sl.RecordPresence(ctx, sid, start.Add(30*time.Second), []string{"u-thorin"}, true); err != nil {
				t.Fatal(err)
			}
		}
		for i := range lines {
			lines[i].SessionID, lines[i].At, lines[i].IdempotencyKey = sid, start.Add(time.Duration(i+1)*time.Minute), sid+"-"+string(rune('a'+i))
		}
		if _, err := sl.WriteEntries(ctx, lines); err != nil {
			t.Fatal(err)
		}
		if err := sl.EndSession(ctx, sid, start.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx, sid); err != nil {
			t.Fatal(err)
		}
		// The DM confirms what the ledger found in session 1: the debt is
		// real. (Session 2's restatement needs no review: the entry stays
		// confirmed.)
		if split {
			return
		}
		dm := pgtest.Open(t, store, camp.ID(), memory.DMViewer())
		items, err := ledger.List(ctx, dm.Graph())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Status == memory.StatusPending {
				if _, err := camp.Graph().ConfirmFact(ctx, it.FactID); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	start := time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC)
	play("s1", start, false,
		memory.TranscriptEntry{SpeakerID: "grimjaw", NPCID: "grimjaw", SpeakerName: "Grimjaw", Text: "Thorin, you owe me ten gold for the edge on that axe."})
	play("s2", start.Add(7*24*time.Hour), true,
		memory.TranscriptEntry{SpeakerID: "grimjaw", NPCID: "grimjaw", SpeakerName: "Grimjaw",
			Text: "Thorin, remember: you owe me ten gold for the edge on that axe. Leave it under the loose stone in the crypt of Saint Oda."})

	dm := pgtest.Open(t, store, camp.ID(), memory.DMViewer())
	items, err := ledger.List(ctx, dm.Graph())
	if err != nil {
		t.Fatal(err)
	}
	var dmSees bool
	for _, it := range items {
		dmSees = dmSees || strings.Contains(it.Text(true), "Saint Oda")
	}
	if !dmSees {
		t.Fatalf("the DM's ledger does not quote the restatement (the attack tests nothing): %+v", items)
	}
	for _, v := range []memory.Viewer{memory.PlayerViewerOf("u-lyra"), memory.PlayerViewer()} {
		got, err := ledger.List(ctx, pgtest.Open(t, store, camp.ID(), v).Graph())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range got {
			if text := it.Text(true); strings.Contains(text, "Saint Oda") || strings.Contains(it.Quote, "Saint Oda") {
				t.Errorf("LEAK: %s, not in the scene, reads in /ledger: %s", v, text)
			}
		}
	}
}
