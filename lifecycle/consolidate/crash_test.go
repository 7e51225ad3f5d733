package consolidate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/consolidate"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The crash tests run this test binary again as a child process (selected
// by envChild) and kill it with SIGKILL.
const (
	envChild = "GLYPHOXA_CONSOLIDATE_CHILD"
	envDSN   = "GLYPHOXA_CONSOLIDATE_DSN"
	envDir   = "GLYPHOXA_CONSOLIDATE_DIR"
	envN     = "GLYPHOXA_CONSOLIDATE_N"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(envChild); mode != "" {
		if err := child(mode); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child journals n entries (printing each index once Add returned) and, in
// mode "consolidate", then flushes them in small batches.
func child(mode string) error {
	ctx := context.Background()
	n, err := strconv.Atoi(os.Getenv(envN))
	if err != nil {
		return err
	}
	store, err := postgres.NewStore(ctx, os.Getenv(envDSN), 8, postgres.WithLogger(quiet()))
	if err != nil {
		return err
	}
	camp, err := store.Campaign(ctx, "crash")
	if err != nil {
		return err
	}
	c, err := consolidate.New(consolidate.Config{Store: camp.Sessions(), JournalDir: os.Getenv(envDir),
		Interval: -1, BatchSize: 5, Logger: quiet()})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	for i := range n {
		if err := c.Add(ctx, msg("s1", i)); err != nil {
			return err
		}
		if mode == "record" {
			fmt.Fprintf(out, "added %d\n", i)
			out.Flush()
		}
	}
	fmt.Fprintln(out, "recorded")
	out.Flush()
	if mode == "consolidate" {
		if err := c.ConsolidateNow(ctx); err != nil {
			return err
		}
	}
	fmt.Fprintln(out, "done")
	out.Flush()
	return nil
}

// startChild runs the child and returns its command and a channel of its
// output lines.
func startChild(t *testing.T, mode, dsn, dir string, n int) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+mode, envDSN+"="+dsn, envDir+"="+dir, envN+"="+strconv.Itoa(n))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, lines
}

func countEntries(t *testing.T, store *postgres.Store) int {
	t.Helper()
	var n int
	if err := store.Pool().QueryRow(context.Background(),
		"SELECT count(*) FROM transcript_entries WHERE campaign_id = 'crash'").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// recoverAndCheck flushes the journal a killed child left with a new
// Consolidator and checks the session log.
func recoverAndCheck(t *testing.T, store *postgres.Store, dir string, want int) (pending int) {
	t.Helper()
	l1 := pgtest.Campaign(t, store, "crash").Sessions()
	c, err := consolidate.New(consolidate.Config{Store: l1, JournalDir: dir, Interval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	pending = c.Pending()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkExactlyOnce(t, l1, "s1", want)
	return pending
}

// TestCrashDuringConsolidation kills the process while it flushes its
// journal to PostgreSQL; a restart must store the rest, with no entry lost
// or written twice.
func TestCrashDuringConsolidation(t *testing.T) {
	store, dsn := pgtest.NewStore(t, 8)
	dir := t.TempDir()
	const n = 1500
	cmd, lines := startChild(t, "consolidate", dsn, dir, n)
	deadline := time.After(2 * time.Minute)
	for recorded := false; !recorded; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the child ended before journaling its entries")
			}
			recorded = l == "recorded"
		case <-deadline:
			t.Fatal("the child did not journal its entries in time")
		}
	}
	for countEntries(t, store) < n/5 {
		select {
		case <-deadline:
			t.Fatal("consolidation did not get going")
		default:
		}
		time.Sleep(time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	atKill := countEntries(t, store)
	if atKill == 0 || atKill >= n {
		t.Fatalf("the kill came outside consolidation: %d of %d entries stored", atKill, n)
	}
	// Make sure the restart also meets the worst case, whatever the moment
	// of the kill: the next batch committed, but the cursor not moved.
	j, err := spool.Open(dir, spool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := j.Peek(5)
	j.Close()
	if err != nil || len(recs) == 0 {
		t.Fatalf("journal after the kill: %d records, %v", len(recs), err)
	}
	batch := make([]memory.TranscriptEntry, len(recs))
	for i, b := range recs {
		if err := json.Unmarshal(b, &batch[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pgtest.Campaign(t, store, "crash").Sessions().WriteEntries(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	before := countEntries(t, store)
	pending := recoverAndCheck(t, store, dir, n)
	t.Logf("wrote %d entries; killed with %d in L1 and %d still journaled; the restart met %d journaled entries already in L1 "+
		"(%d committed before the kill without the cursor moving); after restart found %d, each once, in order",
		n, atKill, pending, before-(n-pending), atKill-(n-pending), n)
}

// TestCrashWhileRecording kills the process while it journals utterances:
// every utterance whose Add returned must reach the session log once.
func TestCrashWhileRecording(t *testing.T) {
	store, dsn := pgtest.NewStore(t, 8)
	dir := t.TempDir()
	cmd, lines := startChild(t, "record", dsn, dir, 100000)
	acked := -1
	deadline := time.After(2 * time.Minute)
	for acked < 400 {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the child ended early")
			}
			if s, found := strings.CutPrefix(l, "added "); found {
				acked, _ = strconv.Atoi(s)
			}
		case <-deadline:
			t.Fatal("the child did not journal 400 entries in time")
		}
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for l := range lines {
		if s, found := strings.CutPrefix(l, "added "); found {
			acked, _ = strconv.Atoi(s)
		}
	}
	l1 := pgtest.Campaign(t, store, "crash").Sessions()
	c, err := consolidate.New(consolidate.Config{Store: l1, JournalDir: dir, Interval: -1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	journaled := c.Pending()
	if err := c.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if journaled < acked+1 {
		t.Fatalf("%d entries were acknowledged but only %d survived in the journal", acked+1, journaled)
	}
	checkExactlyOnce(t, l1, "s1", journaled)
	t.Logf("acknowledged %d entries before the kill, %d survived in the journal, found %d in L1 after restart, each once, in order",
		acked+1, journaled, journaled)
}
