package consolidate_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/lifecycle/consolidate"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

func msg(session string, i int) contextmgr.Message {
	text := fmt.Sprintf("line %06d", i)
	return contextmgr.Message{Role: "user", Name: "Ayla", Content: text,
		Entry: memory.TranscriptEntry{SessionID: session, SpeakerID: "p1", SpeakerName: "Ayla", Text: text,
			At: t0.Add(time.Duration(i) * time.Millisecond)}}
}

// checkExactlyOnce asserts that the session holds lines 0..n-1 once each,
// in order, with distinct idempotency keys.
func checkExactlyOnce(t *testing.T, l1 memory.SessionStore, session string, n int) {
	t.Helper()
	got, err := l1.Entries(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for i, e := range got {
		if want := fmt.Sprintf("line %06d", i); e.Text != want {
			t.Fatalf("entry %d is %q, want %q (lost, duplicated or out of order)", i, e.Text, want)
		}
		if e.IdempotencyKey == "" || keys[e.IdempotencyKey] {
			t.Fatalf("entry %d has a missing or repeated idempotency key %q", i, e.IdempotencyKey)
		}
		keys[e.IdempotencyKey] = true
	}
	if len(got) != n {
		t.Fatalf("found %d entries, want %d", len(got), n)
	}
}

func TestPeriodicFlushSkipsSummaries(t *testing.T) {
	leakcheck.Check(t)
	store, _ := pgtest.NewStore(t, 8)
	l1 := pgtest.Campaign(t, store, "c").Sessions()
	clk := clocktest.NewFake(t0)
	c, err := consolidate.New(consolidate.Config{Store: l1, JournalDir: t.TempDir(), Clock: clk, BatchSize: 3, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	c.Start(ctx)
	for i := range 5 {
		if err := c.Add(ctx, msg("s1", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Add(ctx, contextmgr.Message{Role: "system", Content: contextmgr.SummaryPrefix + "\nx", Summary: true}); err != nil {
		t.Fatal(err)
	}
	if got, _ := l1.Entries(ctx, "s1"); len(got) != 0 {
		t.Fatalf("%d entries stored before the interval passed", len(got))
	}
	if !clk.WaitTimers(ctx, 1) || clk.Pending()[0] != consolidate.DefaultInterval {
		t.Fatalf("periodic timer %v, want %v", clk.Pending(), consolidate.DefaultInterval)
	}
	clk.Advance(consolidate.DefaultInterval)
	deadline := time.Now().Add(10 * time.Second)
	for c.Written() < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("periodic flush wrote %d of 5 entries", c.Written())
		}
		time.Sleep(5 * time.Millisecond)
	}
	checkExactlyOnce(t, l1, "s1", 5)
	if c.Skipped() != 1 || c.Pending() != 0 {
		t.Errorf("skipped %d, pending %d", c.Skipped(), c.Pending())
	}
	// The final flush on Close takes what came after.
	for i := 5; i < 8; i++ {
		c.Add(ctx, msg("s1", i))
	}
	if err := c.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, l1, "s1", 8)
	if err := c.Close(ctx); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestFailedFlushKeepsEntriesJournaled(t *testing.T) {
	store, dsn := pgtest.NewStore(t, 8)
	dir := t.TempDir()
	ctx := context.Background()

	// A store whose pool is closed fails every write.
	broken, err := postgres.NewStore(ctx, dsn, 8)
	if err != nil {
		t.Fatal(err)
	}
	bl1 := pgtest.Campaign(t, broken, "c").Sessions()
	broken.Close()
	c, err := consolidate.New(consolidate.Config{Store: bl1, JournalDir: dir, Interval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		c.Add(ctx, msg("s1", i))
	}
	if err := c.ConsolidateNow(ctx); err == nil {
		t.Fatal("ConsolidateNow succeeded on a closed store")
	}
	if c.Pending() != 4 {
		t.Fatalf("%d entries pending after a failed flush, want 4", c.Pending())
	}
	if err := c.Close(ctx); err == nil {
		t.Fatal("Close hid the failed final flush")
	}

	// The next run flushes them.
	l1 := pgtest.Campaign(t, store, "c").Sessions()
	c2, err := consolidate.New(consolidate.Config{Store: l1, JournalDir: dir, Interval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if c2.Pending() != 4 {
		t.Fatalf("the reopened journal holds %d entries, want 4", c2.Pending())
	}
	if err := c2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, l1, "s1", 4)
}

func TestRefusesBadInput(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	c, err := consolidate.New(consolidate.Config{Store: pgtest.Campaign(t, store, "c").Sessions(), JournalDir: t.TempDir(), Interval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	for _, m := range []contextmgr.Message{
		{Content: "no session", Entry: memory.TranscriptEntry{At: t0}},
		{Content: "no time", Entry: memory.TranscriptEntry{SessionID: "s"}},
	} {
		if err := c.Add(context.Background(), m); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("Add(%q) = %v, want ErrInvalid", m.Content, err)
		}
	}
	if c.Pending() != 0 {
		t.Error("bad input was journaled")
	}
	if _, err := consolidate.New(consolidate.Config{JournalDir: t.TempDir()}); err == nil {
		t.Error("New without a store succeeded")
	}
}

func TestRefusedEntryIsSetAsideNotBlocking(t *testing.T) {
	store, _ := pgtest.NewStore(t, 8)
	l1 := pgtest.Campaign(t, store, "c").Sessions()
	dir := t.TempDir()
	c, err := consolidate.New(consolidate.Config{Store: l1, JournalDir: dir, Interval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 5 {
		m := msg("s1", i)
		if i == 2 {
			// PostgreSQL text cannot hold a NUL byte.
			m.Entry.Text = "bro\x00ken"
		}
		if err := c.Add(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ConsolidateNow(ctx); err != nil {
		t.Fatalf("a refused entry blocked consolidation: %v", err)
	}
	got, err := l1.Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || c.Rejected() != 1 || c.Pending() != 0 {
		t.Fatalf("%d entries stored, %d rejected, %d pending; want 4, 1, 0", len(got), c.Rejected(), c.Pending())
	}
	b, err := os.ReadFile(filepath.Join(dir, "rejected.jsonl"))
	if err != nil || !strings.Contains(string(b), `bro\u0000ken`) || !strings.Contains(string(b), "22021") {
		t.Errorf("rejected file %q, %v; want the entry and the reason", b, err)
	}
	c.Close(ctx)
}
