package bot_test

import (
	"bytes"
	"log/slog"
	"runtime/pprof"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// keptLog is the bot's log during one test: every record, at every level,
// kept in memory.
type keptLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *keptLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *keptLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// keepLog returns a logger whose records are kept quiet and printed to
// the test's log once it ends, if it failed: a hang or a lost answer then
// shows what the handlers logged (an edit Discord refused, a panic
// recovered), and a passing test prints nothing. Records written after
// the test ended (a goroutine outliving it) are dropped, never a panic.
func keepLog(t *testing.T) *slog.Logger {
	l := &keptLog{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the bot's log:\n%s", l.String())
		}
	})
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// goroutines is every goroutine's stack (pprof's goroutine profile,
// debug=2: the format of an unrecovered panic).
func goroutines() string {
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 2); err != nil {
		return "writing the goroutine profile: " + err.Error()
	}
	return b.String()
}

// hung ends a test whose wait gave up: it logs every goroutine's stack, so
// the failure shows where a handler sat, then fails with msg.
func (h *harness) hung(msg string) {
	h.t.Helper()
	h.t.Logf("a wait gave up; every goroutine:\n%s", goroutines())
	h.t.Fatal(msg)
}

// waitCall waits for a REST call matching match (made already or to
// come), under the hang guard.
func (h *harness) waitCall(match func(discordtest.Call) bool) discordtest.Call {
	h.t.Helper()
	c, err := h.fake.WaitCall(wait, match)
	if err != nil {
		h.hung(err.Error())
	}
	return c
}
