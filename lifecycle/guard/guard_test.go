package guard_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

var t0 = time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)

func entry(i int) memory.TranscriptEntry {
	return memory.TranscriptEntry{SessionID: "s1", SpeakerName: "Ayla", Text: fmt.Sprintf("line %d", i), At: t0.Add(time.Duration(i) * time.Second)}
}

// closedStore returns the session log of a store whose pool is closed: every
// call fails as if the database were gone.
func closedStore(t *testing.T, dsn string) (memory.SessionStore, func(context.Context) error) {
	t.Helper()
	s, err := postgres.NewStore(context.Background(), dsn, 8, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	c := pgtest.Campaign(t, s, "c")
	s.Close()
	return c.Sessions(), s.Ping
}

func fastProbe() reconnect.Backoff {
	return reconnect.Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond}
}

func TestSpoolSurvivesRestartAndReplaysInOrder(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	dir := t.TempDir()
	ctx := context.Background()

	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	if err := g.StartSession(ctx, "s1", t0); err != nil {
		t.Fatalf("StartSession during an outage: %v", err)
	}
	for i := range 5 {
		if _, err := g.WriteEntry(ctx, entry(i)); err != nil {
			t.Fatalf("write %d during an outage: %v", i, err)
		}
	}
	if _, err := g.WriteEntries(ctx, []memory.TranscriptEntry{entry(5), entry(6)}); err != nil {
		t.Fatal(err)
	}
	if !g.IsDegraded() {
		t.Fatal("not degraded although every write failed")
	}
	if got, err := g.Entries(ctx, "s1"); err != nil || got != nil {
		t.Fatalf("read while degraded = %v, %v; want an empty result", got, err)
	}
	if st := g.Stats(); st.Pending != 7 || st.Degradations != 1 {
		t.Fatalf("stats %+v, want 7 pending records", st)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	// The next run, with the database up, replays the spool.
	l1 := pgtest.Campaign(t, store, "c").Sessions()
	g2, err := guard.New(guard.Config{Store: l1, Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	if !g2.IsDegraded() {
		t.Error("a guard with a spool to replay does not report degraded")
	}
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := g2.WaitHealthy(wctx); err != nil {
		t.Fatal(err)
	}
	got, err := g2.Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 7 {
		t.Fatalf("%d entries after replay, want 7", len(got))
	}
	for i, e := range got {
		if e.Text != fmt.Sprintf("line %d", i) || e.IdempotencyKey == "" {
			t.Fatalf("entry %d = %+v", i, e)
		}
	}
	// Replaying the same records again (a crash before the head moved)
	// changes nothing: the keys are already stored.
	if n, err := g2.WriteEntries(ctx, got); err != nil || n != 0 {
		t.Fatalf("rewriting stored entries: %d new, %v", n, err)
	}
	if st := g2.Stats(); st.Replayed != 7 || st.Pending != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestBadInputIsRefusedNotSpooled(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewStore(t, 8)
	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: t.TempDir(), Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	for _, e := range []memory.TranscriptEntry{
		{Text: "no session", At: t0},
		{SessionID: "s1", Text: "no time"},
		{SessionID: "s1", Text: "negative", At: t0, Duration: -time.Second},
	} {
		if _, err := g.WriteEntry(ctx, e); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("WriteEntry(%q) = %v, want ErrInvalid", e.Text, err)
		}
	}
	if err := g.StartSession(ctx, " ", t0); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("StartSession with a blank id = %v", err)
	}
	if g.Stats().Pending != 0 {
		t.Error("bad input was spooled")
	}
}

func TestFullSpoolIsALoudError(t *testing.T) {
	t.Parallel()
	_, dsn := pgtest.NewStore(t, 8)
	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: t.TempDir(), MaxSpoolBytes: 600, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var full error
	for i := range 10 {
		if _, err := g.WriteEntry(context.Background(), entry(i)); err != nil {
			full = err
			break
		}
	}
	if !errors.Is(full, spool.ErrFull) {
		t.Fatalf("writes to a full spool: %v, want ErrFull", full)
	}
}

func TestNewNeedsItsParts(t *testing.T) {
	t.Parallel()
	if _, err := guard.New(guard.Config{}); err == nil {
		t.Fatal("New without a store succeeded")
	}
}

func TestRefusedSpooledWriteIsSetAside(t *testing.T) {
	t.Parallel()
	store, dsn := pgtest.NewStore(t, 8)
	dir := t.TempDir()
	ctx := context.Background()
	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// One spooled batch with one entry PostgreSQL cannot store (text cannot
	// hold a NUL byte), then a single entry.
	bad := entry(1)
	bad.Text = "nul\x00byte"
	if _, err := g.WriteEntries(ctx, []memory.TranscriptEntry{entry(0), bad, entry(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteEntry(ctx, entry(3)); err != nil {
		t.Fatal(err)
	}
	g.Close()

	l1 := pgtest.Campaign(t, store, "c").Sessions()
	g2, err := guard.New(guard.Config{Store: l1, Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if err := g2.WaitHealthy(wctx); err != nil {
		t.Fatal(err)
	}
	got, _ := l1.Entries(ctx, "s1")
	if len(got) != 3 || got[0].Text != "line 0" || got[1].Text != "line 2" || got[2].Text != "line 3" {
		t.Fatalf("entries after replay %+v, want lines 0, 2 and 3", got)
	}
	b, err := os.ReadFile(filepath.Join(dir, "rejected.jsonl"))
	if err != nil || !strings.Contains(string(b), `nul\u0000byte`) {
		t.Errorf("rejected file %q, %v; want the refused entry", b, err)
	}
}
