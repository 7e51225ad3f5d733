package postgres_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// bench100k opens the campaign `glyphoxa bench` keeps at the 100k scale
// (100,000 entities, 500,000 facts, 1,000,000 lines; pgtest.BenchStore:
// skipped until `make bench` has generated it).
func bench100k(b *testing.B) *postgres.Campaign {
	c, err := pgtest.BenchStore(b, benchdata.Scale100k).Campaign(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkFindFacts measures the fact pickers' search (FindFacts with
// Text: Discord's autocomplete of /memory confirm and /memory fact retire,
// a keystroke each; the ledger's three relation types, also read by the
// hot context of an NPC that handed something on) on the 100k campaign, as the DM, an NPC and a player, and
// reports the 50th and 95th percentiles as p50-ms and p95-ms:
//
//	go test ./memory/postgres -run '^$' -bench FindFacts -benchtime 20x
func BenchmarkFindFacts(b *testing.B) {
	c := bench100k(b)
	ctx := context.Background()
	for _, v := range []struct {
		name string
		v    memory.Viewer
	}{{"dm", memory.DMViewer()}, {"npc", memory.NPCViewer("e013022")}, {"player", memory.PlayerViewer()}} {
		h, err := c.As(v.v)
		if err != nil {
			b.Fatal(err)
		}
		for _, q := range []struct {
			name, text string
			types      []string
			limit      int
		}{
			{"empty", "", nil, 25}, {"name", "Urlunmar", nil, 25}, {"prefix", "Urlu", nil, 25}, {"fragment", "ar", nil, 25},
			{"type", "KNOWS", nil, 25}, {"absent type", "GAVE", nil, 25}, {"id", "#123456", nil, 25}, {"nothing", "zzqx", nil, 25},
			{"ledger", "", []string{"PROMISED", "OWES", "GAVE"}, 100_000}, {"one type", "", []string{"OWNS"}, 25},
		} {
			b.Run(v.name+"/"+q.name, func(b *testing.B) {
				var took []time.Duration
				for b.Loop() {
					t := time.Now()
					if _, err := h.Graph().FindFacts(ctx, postgres.FactQuery{Text: q.text, Types: q.types, Limit: q.limit}); err != nil {
						b.Fatal(err)
					}
					took = append(took, time.Since(t))
				}
				slices.Sort(took)
				b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
				b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
			})
		}
	}
}
