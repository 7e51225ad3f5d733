package guard_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/leakcheck"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func said(speaker string, i int) memory.TranscriptEntry {
	return memory.TranscriptEntry{SessionID: "s1", SpeakerID: speaker, SpeakerName: speaker,
		Text: fmt.Sprintf("%s line %d", speaker, i), At: t0.Add(time.Duration(i) * time.Second)}
}

// forgetter erases a speaker through c, as table does.
func forgetter(c *postgres.Campaign) func(ctx context.Context, speaker string) error {
	return func(ctx context.Context, speaker string) error {
		_, err := c.ForgetSpeaker(ctx, speaker)
		return err
	}
}

// TestForgetDuringOutageHolds forgets a speaker while the database is
// down: their spooled lines leave the spool at once (counted), a late line
// said before the forget is dropped, the erase of what the database held
// is queued as a forget record, and after the replay the database holds
// none of their lines from before the forget, every line of the other
// speaker, and the speaker's line said after it.
func TestForgetDuringOutageHolds(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	ctx := context.Background()
	camp := pgtest.Campaign(t, store, "c")
	// What the database held before the outage.
	if err := camp.Sessions().StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for _, e := range []memory.TranscriptEntry{said("p1", 0), said("p2", 1)} {
		if _, err := camp.Sessions().WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	down, ping := closedStore(t, dsn)
	dead, err := postgres.NewStore(ctx, dsn, 8, postgres.WithLogger(quiet()))
	if err != nil {
		t.Fatal(err)
	}
	deadCamp, err := dead.Campaign(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	dead.Close()
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet(),
		Forget: forgetter(deadCamp)})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	for i := 2; i < 12; i++ {
		sp := []string{"p1", "p2"}[i%2]
		if _, err := g.WriteEntry(ctx, said(sp, i)); err != nil {
			t.Fatalf("write %d during the outage: %v", i, err)
		}
	}
	// One record holding both speakers: only p1's entry may go.
	if _, err := g.WriteEntries(ctx, []memory.TranscriptEntry{said("p1", 12), said("p2", 13)}); err != nil {
		t.Fatal(err)
	}
	before := t0.Add(20 * time.Second)
	res, err := g.Forget(ctx, "p1", before, func(ctx context.Context) error {
		_, err := deadCamp.ForgetSpeaker(ctx, "p1")
		return err
	})
	if err != nil {
		t.Fatalf("Forget during an outage: %v", err)
	}
	if res.Spooled != 6 || !res.Deferred {
		t.Fatalf("Forget = %+v, want 6 spooled lines taken out and the erase deferred", res)
	}
	// A line said before the forget that arrives late is dropped; one said
	// after it is kept.
	if _, err := g.WriteEntry(ctx, said("p1", 15)); err != nil {
		t.Fatal(err)
	}
	if _, err := g.WriteEntry(ctx, said("p1", 30)); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	err = g.Drain(dctx)
	cancel()
	var pe *guard.PendingError
	if !errors.As(err, &pe) {
		t.Fatalf("Drain with the database down = %v, want a *PendingError", err)
	}
	// p2's five lines and the mixed record's p2 entry, the forget record,
	// p1's line after the forget.
	if pe.Lines != 7 || pe.Records != 8 || pe.Dir != dir {
		t.Fatalf("pending %+v, want 7 lines in 8 records in %s", pe, dir)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	// The next run, with the database up, replays the spool.
	g2, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(),
		Logger: quiet(), Forget: forgetter(camp)})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, time.Minute) // a hang guard: Drain replays at once
	defer cancel()
	if err := g2.Drain(wctx); err != nil {
		t.Fatal(err)
	}
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range got {
		texts = append(texts, e.Text)
	}
	want := "[p2 line 1 p2 line 3 p2 line 5 p2 line 7 p2 line 9 p2 line 11 p2 line 13 p1 line 30]"
	if fmt.Sprint(texts) != want {
		t.Fatalf("after replay the log holds %v, want %s", texts, want)
	}
}

// TestForgetRightAfterAnOutage forgets a speaker when the database is back
// but the spool not yet replayed: the erase runs at once, and the replay
// does not bring the speaker's spooled lines back.
func TestForgetRightAfterAnOutage(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	ctx := context.Background()
	camp := pgtest.Campaign(t, store, "c")
	dir := t.TempDir()
	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	g.Start(ctx)
	if err := g.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if _, err := g.WriteEntry(ctx, said([]string{"p1", "p2"}[i%2], i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	// The database is back; the guard has not replayed yet (it is not
	// started).
	g2, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(),
		Logger: quiet(), Forget: forgetter(camp)})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	erased := false
	res, err := g2.Forget(ctx, "p1", t0.Add(time.Minute), func(ctx context.Context) error {
		erased = true
		_, err := camp.ForgetSpeaker(ctx, "p1")
		return err
	})
	if err != nil || res.Spooled != 3 || res.Deferred || !erased {
		t.Fatalf("Forget = %+v, %v (erased %v); want 3 spooled lines out and the erase run now", res, err, erased)
	}
	g2.Start(ctx)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := g2.Drain(wctx); err != nil {
		t.Fatal(err)
	}
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("the log holds %d lines after the replay, want p2's 3", len(got))
	}
	for _, e := range got {
		if e.SpeakerID != "p2" {
			t.Errorf("a forgotten speaker's line came back: %+v", e)
		}
	}
}

// TestForgetRacingAReplay forgets a speaker while the guard replays a long
// spool: however the two interleave (Forget waits for the batch in flight;
// what was replayed before it is erased, what was not leaves the spool),
// the log ends with every line of the other speaker, once, and none of the
// forgotten one's.
func TestForgetRacingAReplay(t *testing.T) {
	leakcheck.Check(t)
	store, dsn := pgtest.NewStore(t, 8)
	ctx := context.Background()
	camp := pgtest.Campaign(t, store, "c")
	dir := t.TempDir()
	down, ping := closedStore(t, dsn)
	g, err := guard.New(guard.Config{Store: down, Ping: ping, SpoolDir: dir, Probe: fastProbe(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for i := range n {
		if _, err := g.WriteEntry(ctx, said([]string{"p1", "p2"}[i%2], i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}

	g2, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: store.Ping, SpoolDir: dir, Probe: fastProbe(),
		Logger: quiet(), Forget: forgetter(camp)})
	if err != nil {
		t.Fatal(err)
	}
	defer g2.Close()
	wctx, cancel := context.WithTimeout(ctx, time.Minute) // a hang guard
	defer cancel()
	drained := make(chan error, 1)
	go func() { drained <- g2.Drain(wctx) }()
	// Forget once the replay is under way.
	for g2.Stats().Replayed == 0 && wctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	res, err := g2.Forget(ctx, "p1", t0.Add(time.Hour), func(ctx context.Context) error {
		_, err := camp.ForgetSpeaker(ctx, "p1")
		return err
	})
	if err != nil || res.Deferred {
		t.Fatalf("Forget = %+v, %v", res, err)
	}
	if err := <-drained; err != nil {
		t.Fatal(err)
	}
	if err := g2.Drain(wctx); err != nil {
		t.Fatal(err)
	}
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range got {
		if e.SpeakerID == "p1" {
			t.Fatalf("a forgotten line is in the log: %+v", e)
		}
		seen[e.Text]++
	}
	if len(seen) != n/2 || len(got) != n/2 {
		t.Fatalf("the log holds %d lines (%d distinct), want p2's %d once each", len(got), len(seen), n/2)
	}
	t.Logf("%d of p1's lines were still in the spool when Forget ran", res.Spooled)
}
