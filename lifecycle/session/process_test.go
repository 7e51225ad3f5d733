package session_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The process tests run this test binary again as a child (selected by
// envChild) that records utterances in a session until it is signalled.
const (
	envChild = "GLYPHOXA_SESSION_CHILD"
	envDSN   = "GLYPHOXA_SESSION_DSN"
	envDir   = "GLYPHOXA_SESSION_DIR"
)

// childShutdownTimeout is the child's Config.ShutdownTimeout.
const childShutdownTimeout = 5 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv(envChild) != "" {
		if err := child(); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// noSummary is a summariser the child never needs (its budget is large).
var noSummary = contextmgr.SummarizerFunc(func(context.Context, []contextmgr.Message) (string, error) {
	return "", fmt.Errorf("no summariser in this test")
})

// child records lines until SIGTERM, printing the index of each recorded
// line, then shuts down through Session.Run and prints how long that took.
func child() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	store, camp, err := openStore(context.Background(), os.Getenv(envDSN))
	if err != nil {
		return err
	}
	defer store.Close()
	s, err := session.Start(context.Background(), session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping,
		StateDir: os.Getenv(envDir), Summarizer: noSummary, MaxTokens: 1 << 30,
		ConsolidateEvery: 50 * time.Millisecond, ShutdownTimeout: childShutdownTimeout, Logger: quiet()})
	if err != nil {
		return err
	}
	out := bufio.NewWriter(os.Stdout)
	ran := make(chan error, 1)
	go func() { ran <- s.Run(ctx) }()
	for i := 0; ctx.Err() == nil; i++ {
		if err := s.Record(context.Background(), line(i)); err != nil {
			if errors.Is(err, session.ErrEnded) && ctx.Err() != nil {
				// SIGTERM arrived between the check above and this
				// line, and Run ended the session first: the line is
				// refused, never acknowledged, and the loop is over.
				break
			}
			return err
		}
		fmt.Fprintf(out, "recorded %d\n", i)
		out.Flush()
		time.Sleep(2 * time.Millisecond)
	}
	start := time.Now()
	if err := <-ran; err != nil {
		return err
	}
	fmt.Fprintf(out, "closed in %v\n", time.Since(start))
	return out.Flush()
}

type childProc struct {
	cmd   *exec.Cmd
	acked int
	lines chan string
}

func startChild(t *testing.T, dsn, dir string) *childProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"=1", envDSN+"="+dsn, envDir+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	c := &childProc{cmd: cmd, acked: -1, lines: make(chan string, 1024)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

// waitRecorded reads the child's output until it recorded n lines.
func (c *childProc) waitRecorded(t *testing.T, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for c.acked+1 < n {
		select {
		case l, ok := <-c.lines:
			if !ok {
				t.Fatalf("the child ended after recording %d lines", c.acked+1)
			}
			c.note(l)
		case <-deadline:
			t.Fatalf("the child recorded only %d lines in a minute", c.acked+1)
		}
	}
}

func (c *childProc) note(l string) {
	if s, ok := strings.CutPrefix(l, "recorded "); ok {
		c.acked, _ = strconv.Atoi(s)
	}
}

// TestSIGTERMShutsDownCleanly: on SIGTERM a session stops within its
// shutdown timeout, and everything recorded is in the session log once.
func TestSIGTERMShutsDownCleanly(t *testing.T) {
	t.Parallel()
	store, dsn := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	c := startChild(t, dsn, t.TempDir())
	c.waitRecorded(t, 300)
	sent := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	var closedIn string
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("the child failed: %v", err)
		}
	case <-time.After(childShutdownTimeout + 10*time.Second):
		t.Fatalf("the child did not exit within %v of SIGTERM", childShutdownTimeout+10*time.Second)
	}
	took := time.Since(sent)
	for l := range c.lines {
		c.note(l)
		if s, ok := strings.CutPrefix(l, "closed in "); ok {
			closedIn = s
		}
	}
	if closedIn == "" {
		t.Fatal("the child did not report its shutdown")
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", c.acked+1)
	sess, err := camp.Sessions().Session(context.Background(), "s1")
	if err != nil || sess.EndedAt.IsZero() {
		t.Errorf("session %+v, %v: not ended by the shutdown", sess, err)
	}
	t.Logf("recorded %d lines; SIGTERM to exit %v (Close took %s); found %d in L1, each once, in order",
		c.acked+1, took.Round(time.Millisecond), closedIn, c.acked+1)
}

// TestKillAndRestart kills a session's process (SIGKILL) while it records
// and consolidates; a session started again on the same state directory
// stores every recorded line once.
func TestKillAndRestart(t *testing.T) {
	t.Parallel()
	store, dsn := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "c")
	dir := t.TempDir()
	c := startChild(t, dsn, dir)
	c.waitRecorded(t, 500)
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c.cmd.Wait()
	for l := range c.lines {
		c.note(l)
	}
	before, err := camp.Sessions().Entries(context.Background(), "s1")
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	s, err := session.Start(ctx, session.Config{SessionID: "s1", Log: camp.Sessions(), Ping: store.Ping, StateDir: dir,
		Summarizer: noSummary, MaxTokens: 1 << 30, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	got, err := camp.Sessions().Entries(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if len(got) < c.acked+1 {
		t.Fatalf("after restart %d entries, but %d were recorded before the kill", len(got), c.acked+1)
	}
	checkExactlyOnce(t, camp.Sessions(), "s1", len(got))
	t.Logf("recorded %d lines before SIGKILL (%d already consolidated); after restart found %d in L1, each once, in order",
		c.acked+1, len(before), len(got))
}
