package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestLateLinesMarkProcessingOwed: a line stored in a session after it
// ended and its processing began (an outage spool replayed late) lists the
// session as owing processing again, once: the first of two processes
// taking the mark at once gets it, and its progress is forgotten in the
// same step. A line stored again (its idempotency key already in the log),
// a line of a session still running or never processed leave no mark.
func TestLateLinesMarkProcessingOwed(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, testDims)
	camp := pgtest.Campaign(t, store, "c")
	sl, proc := camp.Sessions(), camp.Processing()
	write := func(session, key string, at time.Time) {
		t.Helper()
		if _, err := sl.WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: session, SpeakerID: "p1", SpeakerName: "Ayla",
			Text: "line " + key, At: at, IdempotencyKey: key}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"done", "running", "never"} {
		write(s, s+":0", t0)
	}
	for _, s := range []string{"done", "never"} {
		if err := sl.EndSession(ctx, s, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for _, stage := range []string{"started", "l2", "extract"} {
		for _, s := range []string{"done", "running"} {
			if err := proc.Save(ctx, s, stage, 1, stage != "started"); err != nil {
				t.Fatal(err)
			}
		}
	}
	owed := func() []string {
		t.Helper()
		ids, err := proc.NotDone(ctx, "extract", "started")
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if got := owed(); len(got) != 0 {
		t.Fatalf("owed before any late line: %v", got)
	}
	write("done", "done:0", t0) // replayed again: already stored
	write("running", "running:1", t0.Add(time.Minute))
	write("never", "never:1", t0.Add(time.Minute))
	if got := owed(); len(got) != 0 {
		t.Fatalf("owed after lines that are not late: %v", got)
	}
	if got, err := proc.RechunkOwed(ctx); err != nil || len(got) != 0 {
		t.Fatalf("owing a rebuild of chunks after lines that are not late: %v, %v", got, err)
	}
	write("done", "done:1", t0.Add(time.Minute))
	if got := owed(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("owed after a late line: %v, want [done]", got)
	}
	// A session chunked without an LLM (no processing progress) owes a
	// rebuild of its chunks instead; one never chunked owes nothing.
	if err := camp.Index().IndexChunks(ctx, []memory.Chunk{{ID: "never-1", SessionID: "never", Content: "line never:0",
		StartAt: t0, EndAt: t0}}); err != nil {
		t.Fatal(err)
	}
	write("never", "never:2", t0.Add(2*time.Minute))
	write("running", "running:2", t0.Add(2*time.Minute))
	if got, err := proc.RechunkOwed(ctx); err != nil || !slices.Equal(got, []string{"never"}) {
		t.Fatalf("owing a rebuild of chunks after a late line of a session chunked without an LLM: %v, %v; want [never]", got, err)
	}
	if got := owed(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("owed after a late line of a session never processed: %v, want [done]", got)
	}

	var wg sync.WaitGroup
	took := make([]bool, 2)
	errs := make([]error, 2)
	for i := range took {
		wg.Add(1)
		go func() {
			defer wg.Done()
			took[i], errs[i] = proc.TakeLateLines(ctx, "done", "started")
		}()
	}
	wg.Wait()
	if errs[0] != nil || errs[1] != nil || took[0] == took[1] {
		t.Fatalf("two processes taking the mark at once: %v %v, errors %v %v; want exactly one", took[0], took[1], errs[0], errs[1])
	}
	for _, stage := range []string{"l2", "extract", postgres.LateLinesStage} {
		if pos, done, err := proc.Load(ctx, "done", stage); err != nil || pos != 0 || done {
			t.Errorf("stage %s after the mark was taken: %d %v %v; want forgotten", stage, pos, done, err)
		}
	}
	if _, _, err := proc.Load(ctx, "done", "started"); err != nil {
		t.Fatal(err)
	}
	if got := owed(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("owed after the mark was taken: %v, want [done] (its processing is to run)", got)
	}
	if again, err := proc.TakeLateLines(ctx, "done", "started"); err != nil || again {
		t.Fatalf("the mark taken a second time: %v, %v", again, err)
	}
	if err := proc.Save(ctx, "done", "extract", 2, true); err != nil {
		t.Fatal(err)
	}
	if got := owed(); len(got) != 0 {
		t.Fatalf("owed after processing again: %v", got)
	}
	if _, err := sl.WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: "done", SpeakerID: "p1", SpeakerName: "Ayla",
		Text: "line done:2", At: t0.Add(2 * time.Minute), IdempotencyKey: "done:2"}}); err != nil {
		t.Fatal(err)
	}
	if got := owed(); !slices.Equal(got, []string{"done"}) {
		t.Fatalf("owed after a second late line: %v, want [done]", got)
	}
}

// TestRechunkMarkOutlivesARacingRebuild: a non-canon span that deleted
// chunks marks its session as owing a rebuild in the same statement; a
// rebuild clears the mark, unless lines were taken out again while it ran
// (the mark was stamped anew, and the later lines' chunks are still owed).
func TestRechunkMarkOutlivesARacingRebuild(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, testDims)
	camp := pgtest.Campaign(t, store, "c")
	sl, proc := camp.Sessions(), camp.Processing()
	for i := range 4 {
		sessionLine(t, sl, "p1", fmt.Sprintf("line %d", i), t0.Add(time.Duration(i)*time.Minute))
	}
	if err := camp.Index().IndexChunks(ctx, []memory.Chunk{{ID: "c1", SessionID: "s1", Content: "line 0 line 1 line 2 line 3",
		StartAt: t0, EndAt: t0.Add(3 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	owed := func() []string {
		t.Helper()
		ids, err := proc.RechunkOwed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	if n, err := sl.MarkNonCanon(ctx, "s1", t0, t0); err != nil || n != 1 {
		t.Fatalf("MarkNonCanon: %d, %v", n, err)
	}
	if got := owed(); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("owing a rebuild after a non-canon span deleted a chunk: %v, want [s1]", got)
	}
	// A rebuild during which another span is declared non-canon.
	err := proc.Rechunked(ctx, "s1", func(ctx context.Context) error {
		if err := camp.Index().IndexChunks(ctx, []memory.Chunk{{ID: "c2", SessionID: "s1", Content: "line 1 line 2 line 3",
			StartAt: t0.Add(time.Minute), EndAt: t0.Add(3 * time.Minute)}}); err != nil {
			return err
		}
		_, err := sl.MarkNonCanon(ctx, "s1", t0.Add(time.Minute), t0.Add(time.Minute))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := owed(); !slices.Equal(got, []string{"s1"}) {
		t.Fatalf("owing a rebuild after one raced with another span: %v, want [s1]", got)
	}
	if err := proc.Rechunked(ctx, "s1", func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got := owed(); len(got) != 0 {
		t.Fatalf("owing a rebuild after it ran: %v", got)
	}
	if err := proc.Rechunked(ctx, "s1", func(context.Context) error { return fmt.Errorf("embedder down") }); err == nil {
		t.Fatal("a failed rebuild reported no error")
	}
}

// TestAttackSingleLineStoredLate: a line stored alone (WriteEntry, as
// `glyphoxa chat` and the table's session write them) in a session that
// ended and was processed marks it as owing processing again, as a batch
// does: otherwise it reached no chunk and no fact.
func TestAttackSingleLineStoredLate(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, testDims)
	camp := pgtest.Campaign(t, store, "c")
	sl, proc := camp.Sessions(), camp.Processing()
	line := func(key string, at time.Time) memory.TranscriptEntry {
		return memory.TranscriptEntry{SessionID: "s", SpeakerID: "p1", SpeakerName: "Ayla", Text: "line " + key, At: at, IdempotencyKey: key}
	}
	if ok, err := sl.WriteEntry(ctx, line("s:0", t0)); err != nil || !ok {
		t.Fatalf("first line: %v, %v", ok, err)
	}
	if err := sl.EndSession(ctx, "s", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	for _, stage := range []string{"started", "l2", "extract"} {
		if err := proc.Save(ctx, "s", stage, 1, stage != "started"); err != nil {
			t.Fatal(err)
		}
	}
	if ok, err := sl.WriteEntry(ctx, line("s:0", t0)); err != nil || ok {
		t.Fatalf("the first line stored again: %v, %v; want not new", ok, err)
	}
	if got, err := proc.LateOwed(ctx); err != nil || len(got) != 0 {
		t.Fatalf("owed after a line already stored: %v, %v", got, err)
	}
	if ok, err := sl.WriteEntry(ctx, line("s:1", t0.Add(time.Minute))); err != nil || !ok {
		t.Fatalf("late line: %v, %v", ok, err)
	}
	if got, err := proc.LateOwed(ctx); err != nil || !slices.Equal(got, []string{"s"}) {
		t.Fatalf("owed after a single line stored late: %v, %v; want [s]", got, err)
	}
	if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s", Text: "no time"}); err == nil || !strings.Contains(err.Error(), "without a time") {
		t.Fatalf("a line without a time: %v; want an error naming it", err)
	}
}

// TestAttackSweepRebuildsWhatIsBeingRebuilt: an import (or `glyphoxa
// process`) is chunking a campaign's sessions, which its transaction
// marked as owed; serve's sweep, in another process, found the marks and
// chunked the same sessions at once, paying the embeddings twice. The
// sweep waits for the rebuild under way and then finds nothing owed.
func TestAttackSweepRebuildsWhatIsBeingRebuilt(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	store, _ := pgtest.NewStore(t, testDims)
	camp := pgtest.Campaign(t, store, "c")
	proc := camp.Processing()
	if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s", SpeakerID: "p1", SpeakerName: "Ayla",
		Text: "line", At: t0}); err != nil {
		t.Fatal(err)
	}
	if err := proc.OweRechunk(ctx, []string{"s"}); err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	importing := make(chan error, 1)
	go func() {
		importing <- proc.RechunkedSessions(ctx, nil, func(ctx context.Context) error {
			close(started)
			<-release
			return nil
		})
	}()
	<-started
	var swept atomic.Int32
	sweeping := make(chan error, 1)
	go func() {
		sweeping <- camp.Processing().RebuildOwed(ctx, "s", func(context.Context) error { swept.Add(1); return nil })
	}()
	for {
		var waiting bool
		if err := store.Pool().QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock' AND wait_event = 'advisory')`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if waiting {
			break
		}
		select {
		case err := <-sweeping:
			close(release)
			t.Fatalf("the sweep rebuilt s (%d times, %v) while the import was rebuilding it", swept.Load(), err)
		case <-time.After(10 * time.Millisecond):
		}
	}
	close(release)
	if err := <-importing; err != nil {
		t.Fatal(err)
	}
	if err := <-sweeping; err != nil {
		t.Fatal(err)
	}
	if n := swept.Load(); n != 0 {
		t.Errorf("the sweep rebuilt s %d times after the import had; want 0", n)
	}
	if got, err := proc.RechunkOwed(ctx); err != nil || len(got) != 0 {
		t.Errorf("owed after both: %v, %v", got, err)
	}
}
