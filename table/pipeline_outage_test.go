package table_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// TestOutageWhileALineIsRecorded: PostgreSQL stops hard between turns, so
// the next lines meet the outage while they are recorded beside their NPC's
// turn. Each is recorded in the outage spool and answered (nothing dropped,
// every reply spoken only once its line is recorded); once the database is
// back the spool drains and the session log holds every line and reply in
// the order they were said.
func TestOutageWhileALineIsRecorded(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	cl, store := outageStore(t)
	r := newRigOn(t, store, 0, nil, func(c *table.Config) { c.Settings.Probe = outageProbe() })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard, not a budget
	defer cancel()

	var said []table.LineReport
	turn := func(when string) {
		t.Helper()
		l, err := r.turn(ctx)
		if err != nil {
			t.Fatalf("a line %s: %v (dropped %q)", when, err, l.Dropped)
		}
		if l.Dropped != "" || l.Timing.Recorded <= 0 {
			t.Fatalf("a line %s: dropped %q, recorded after %s; want it recorded, then answered", when, l.Dropped, l.Timing.Recorded)
		}
		said = append(said, l)
	}
	turn("before the outage")
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	turn("as the outage begins")
	turn("during the outage")
	if !r.s.Memory().IsDegraded() {
		t.Error("the session's memory is not degraded during the outage")
	}
	if p := r.s.Memory().Pending(); p < 2 {
		t.Errorf("%d lines wait in the spool during the outage; want at least the two lines and their replies", p)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := r.s.Memory().Memory().WaitHealthy(ctx); err != nil {
		t.Fatal(err)
	}
	for r.s.Memory().Pending() > 0 {
		select {
		case <-ctx.Done():
			t.Fatalf("the spool never drained: %d waiting", r.s.Memory().Pending())
		case <-time.After(20 * time.Millisecond):
		}
	}
	es, err := r.camp.Sessions().Entries(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	// The log: the player's lines in the order they were said, and the
	// replies in order, each after its line. (Lines and replies interleave
	// by when they were said: the rig's audio runs ahead of the wall
	// clock, so a line may be logged before the reply to the one before.)
	var lines, replies []string
	var pos []int // index in es of each player line
	var replyPos []int
	for i, e := range es {
		switch {
		case e.NPCID != "":
			replies = append(replies, e.NPCID+": "+e.Text)
			replyPos = append(replyPos, i)
		case e.SpeakerID == player:
			lines = append(lines, e.RawText)
			pos = append(pos, i)
		}
	}
	var wantLines, wantReplies []string
	for _, l := range said {
		wantLines = append(wantLines, l.Heard)
		wantReplies = append(wantReplies, l.Addressee+": "+l.Reply)
	}
	if !slices.Equal(lines, wantLines) {
		t.Fatalf("the session log's lines:\n got %q\nwant %q", lines, wantLines)
	}
	if !slices.Equal(replies, wantReplies) {
		t.Fatalf("the session log's replies:\n got %q\nwant %q", replies, wantReplies)
	}
	for i := range pos {
		if replyPos[i] < pos[i] {
			t.Errorf("reply %d is logged before its line (%d < %d)", i+1, replyPos[i], pos[i])
		}
	}
}

// outageStore starts a private cluster the test can stop and opens a
// store on it (closed when the test ends). The rig is opened on the store
// (newRigOn), not through GLYPHOXA_TEST_DSN: a test that sets the
// environment cannot run in parallel.
func outageStore(t *testing.T) (*pgcluster.Cluster, *postgres.Store) {
	t.Helper()
	cl := pgcluster.Start(t)
	return cl, pgtest.StoreAt(t, cl.DSN(), rigDims, postgres.WithLogger(quiet()))
}

// outageProbe is the outage tests' health probe backoff: the database is
// looked for again every 100 ms to 1 s, so that the test does not wait out
// production's backoff (up to 30 s) once it is back. The outage's effects
// do not depend on how often the probe runs.
func outageProbe() reconnect.Backoff {
	return reconnect.Backoff{Initial: 100 * time.Millisecond, Max: time.Second}
}
