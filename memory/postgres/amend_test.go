package postgres_test

import (
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAmendEntry corrects a recorded line after the fact: the text and its
// text search follow, the raw text stays, amending twice changes nothing,
// and other campaigns, unknown keys and empty text are refused.
func TestAmendEntry(t *testing.T) {
	s := newStore(t)
	ctx := ctxT(t)
	l := pgtest.Campaign(t, s, "camp").Sessions()
	other := pgtest.Campaign(t, s, "other").Sessions()
	var _ memory.EntryAmender = l

	e := entry("s1", "u1", "what news of the shipment", time.Minute)
	e.RawText = "what news of the ship mint"
	must[bool](t)(l.WriteEntry(ctx, e))
	for i, want := range []bool{true, false} {
		if changed := must[bool](t)(l.AmendEntry(ctx, "s1", e.IdempotencyKey, "what news of the Vault Key")); changed != want {
			t.Fatalf("amend %d reported changed=%v, want %v", i+1, changed, want)
		}
	}
	got := must[[]memory.TranscriptEntry](t)(l.Entries(ctx, "s1"))
	if len(got) != 1 || got[0].Text != "what news of the Vault Key" || got[0].RawText != "what news of the ship mint" {
		t.Fatalf("after amending: %+v", got)
	}
	hits := must[[]memory.EntryHit](t)(l.Search(ctx, "vault", memory.SearchOpts{}))
	if len(hits) != 1 {
		t.Errorf("search for the amended word found %d lines, want 1", len(hits))
	}
	if _, err := other.AmendEntry(ctx, "s1", e.IdempotencyKey, "hijacked"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("amending from another campaign: %v, want ErrNotFound", err)
	}
	if _, err := l.AmendEntry(ctx, "s1", "no-such-key", "x"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("amending an unknown line: %v, want ErrNotFound", err)
	}
	for _, bad := range [][3]string{{"", e.IdempotencyKey, "x"}, {"s1", "", "x"}, {"s1", e.IdempotencyKey, " "}} {
		if _, err := l.AmendEntry(ctx, bad[0], bad[1], bad[2]); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("AmendEntry(%q, %q, %q): %v, want ErrInvalid", bad[0], bad[1], bad[2], err)
		}
	}
}
