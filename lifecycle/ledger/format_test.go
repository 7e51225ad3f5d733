package ledger_test

import (
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestItemText: one formatter for /ledger (markdown) and glyphoxa ledger
// (terminal): the same words, differing only in the bullet, the time and
// the review note's markup.
func TestItemText(t *testing.T) {
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	lantern := ledger.Item{FactID: 12, Kind: ledger.Handover, From: "Grimjaw", To: "Thorin", What: "a lantern", NowWith: "Kael",
		Quote: "Grimjaw: Thorin, take this lantern.", SaidAt: at, Status: memory.StatusPending}
	debt := ledger.Item{FactID: 3, Kind: ledger.Debt, From: "Thorin", To: "Grimjaw", What: "ten gold", Due: "before the new moon",
		Status: memory.StatusActive}
	tests := []struct {
		name     string
		it       ledger.Item
		markdown bool
		want     string
	}{
		{"discord, pending, passed on", lantern, true,
			"• Grimjaw gave Thorin: a lantern (now with Kael) — “Grimjaw: Thorin, take this lantern.” <t:1772393400:f> *(waiting for your review: fact #12)*"},
		{"terminal, pending, passed on", lantern, false,
			"2026-03-01 19:30  Grimjaw gave Thorin: a lantern (now with Kael) — “Grimjaw: Thorin, take this lantern.” (waiting for review: fact #12)"},
		{"discord, canon, due, no time", debt, true, "• Thorin owes Grimjaw: ten gold (due before the new moon)"},
		{"terminal, canon, due, no time", debt, false, "?                 Thorin owes Grimjaw: ten gold (due before the new moon)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.it.Text(tt.markdown); got != tt.want {
				t.Errorf("Text(%v):\n got %s\nwant %s", tt.markdown, got, tt.want)
			}
		})
	}
}
