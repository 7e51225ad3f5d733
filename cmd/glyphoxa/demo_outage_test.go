package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
)

// watchedOutput is a stdout that runs a hook on each write (the demo
// writes one JSON object per line in --json mode).
type watchedOutput struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	onLine func(string)
}

func (w *watchedOutput) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.onLine != nil {
		w.onLine(string(p))
	}
	return w.buf.Write(p)
}

// TestDemoEndsWithTheDatabaseDown stops PostgreSQL in the middle of the
// demo's scene and leaves it down: the demo exits non-zero, says on stderr
// how many lines wait and where, and leaves the spool in its state
// directory; the next demo, with the database back, replays it into the
// first session's log (the next demo continues the first one's campaign
// instead of importing a fresh one).
func TestDemoEndsWithTheDatabaseDown(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	scene := filepath.Join(t.TempDir(), "scene.yaml")
	var b strings.Builder
	b.WriteString("session: spool-demo\nlines:\n")
	for i := range 5 {
		fmt.Fprintf(&b, "  - {speaker: Thorin, say: \"x\", heard: \"the road was long, line %d\", after: 3s}\n", i)
	}
	if err := os.WriteFile(scene, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	state := t.TempDir()
	vars := map[string]string{"GLYPHOXA_DSN": cl.DSN()}
	args := []string{"demo", "--state-dir", state, "--drain-timeout", "500ms", "--file", sampleCampaignFile,
		"--scene", scene, "--json", "--out", t.TempDir()}

	stopped := false
	out := &watchedOutput{onLine: func(s string) {
		if !stopped && strings.Contains(s, "line 1") {
			stopped = true
			if err := cl.StopImmediate(); err != nil {
				t.Error(err)
			}
		}
	}}
	var errb bytes.Buffer
	code := run(context.Background(), args, &env{stdin: strings.NewReader(""), stdout: out, stderr: &errb,
		getenv: func(k string) string { return vars[k] }})
	if code == 0 {
		t.Fatalf("the demo exited 0 with the database down; stderr:\n%s", errb.String())
	}
	t.Logf("the demo's stderr:\n%s", errb.String())
	spoolDir := filepath.Join(state, "ironhold-saga-demo-1", "spool")
	m := regexp.MustCompile(`(\d+) lines wait in the outage spool (\S+):`).FindAllStringSubmatch(errb.String(), -1)
	if len(m) != 1 || m[0][1] != "3" || m[0][2] != spoolDir {
		t.Fatalf("stderr does not say that 3 lines wait in %s:\n%s", spoolDir, errb.String())
	}
	if st, err := os.Stat(filepath.Join(spoolDir, "spool.log")); err != nil || st.Size() == 0 {
		t.Fatalf("the spool is not on disk: %v", err)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, vars, args...)
	if code != 0 {
		t.Fatalf("the next demo exited %d: %s\n%s", code, stderr, stdout)
	}
	conn, err := pgx.Connect(context.Background(), cl.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var lines, distinct int
	if err := conn.QueryRow(context.Background(), `SELECT count(*), count(DISTINCT text) FROM transcript_entries
		WHERE campaign_id = 'ironhold-saga-demo-1' AND session_id = 'spool-demo' AND npc_id = ''`).Scan(&lines, &distinct); err != nil {
		t.Fatal(err)
	}
	if lines != 5 || distinct != 5 {
		t.Fatalf("the first demo's session holds %d player lines (%d distinct), want its 5, once each", lines, distinct)
	}
	if st, err := os.Stat(filepath.Join(spoolDir, "spool.log")); err != nil || st.Size() != 0 {
		t.Errorf("the spool was not drained: %v", err)
	}
}

func TestSpoolWaitingCountsEachSpoolOnce(t *testing.T) {
	t.Parallel()
	a := &guard.PendingError{Records: 2, Lines: 1, Dir: "a"}
	b := &guard.PendingError{Records: 5, Lines: 4, Dir: "b"}
	tests := []struct {
		name string
		err  error
		want []*guard.PendingError
	}{
		{"nil", nil, nil},
		{"other", errors.New("x"), nil},
		{"wrapped", fmt.Errorf("ending: %w", a), []*guard.PendingError{a}},
		{"twice", errors.Join(fmt.Errorf("end: %w", a), fmt.Errorf("finish: %w", errors.Join(a, b))), []*guard.PendingError{a, b}},
	}
	for _, tt := range tests {
		if got := spoolWaiting(tt.err); !slices.Equal(got, tt.want) {
			t.Errorf("%s: spoolWaiting = %v, want %v", tt.name, got, tt.want)
		}
	}
}
