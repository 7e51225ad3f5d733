package table

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestPostProcessorKnowsTheLedger: the table's post-session processing
// gives the ledger's extractor the campaign's ledger, so a debt restated
// in a later session in other words is the same entry, not a second one.
func TestPostProcessorKnowsTheLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	imported := pgtest.Import(t, store, "../testdata/campaigns/ironhold-saga.yaml")
	camp := pgtest.Open(t, store, imported.ID(), memory.DMViewer())
	emb, err := embed.NewOffline(8)
	if err != nil {
		t.Fatal(err)
	}
	pp := postProcessor(camp, Providers{Extractor: ledger.Extractor{}, Embedder: emb}, 0, slog.New(slog.NewTextHandler(io.Discard, nil)))
	start := time.Date(2026, 6, 1, 19, 0, 0, 0, time.UTC)
	for i, x := range []struct{ sid, speaker, npc, text string }{
		{"s-a", "Grimjaw", "grimjaw", "Thorin, you owe me ten gold for the edge on your axe."},
		{"s-b", "Thorin", "", "Grimjaw, I know I owe you ten gold."},
	} {
		at := start.Add(time.Duration(i) * 7 * 24 * time.Hour)
		if err := camp.Sessions().StartSession(ctx, x.sid, at); err != nil {
			t.Fatal(err)
		}
		if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: x.sid, SpeakerID: strings.ToLower(x.speaker),
			SpeakerName: x.speaker, NPCID: x.npc, Text: x.text, At: at, IdempotencyKey: x.sid}}); err != nil {
			t.Fatal(err)
		}
		if err := camp.Sessions().EndSession(ctx, x.sid, at.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if _, err := pp.Run(ctx, x.sid); err != nil {
			t.Fatal(err)
		}
	}
	items, err := ledger.List(ctx, camp.Graph())
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || !strings.Contains(items[0].Quote, "I know I owe you ten gold") {
		t.Fatalf("the ledger: %+v; want the one debt, quoting its restatement", items)
	}
}
