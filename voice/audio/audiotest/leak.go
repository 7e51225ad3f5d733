package audiotest

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// CheckLeaks fails the test if goroutines started during it are still
// running (after a grace period) when it ends. Call it first.
func CheckLeaks(tb testing.TB) {
	tb.Helper()
	before := stacks()
	tb.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			var leaked []string
			for id, st := range stacks() {
				if _, ok := before[id]; !ok && !benign(st) {
					leaked = append(leaked, st)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				tb.Errorf("%d goroutines leaked:\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// benign are goroutines of the runtime and of net/http's connection pool.
func benign(stack string) bool {
	for _, s := range []string{"testing.(*T).Run", "testing.tRunner", "net/http.(*persistConn)", "net/http.(*Transport)",
		"created by net/http.(*Server).Serve", "signal.signal_recv", "testing.(*M)."} {
		if strings.Contains(stack, s) && !strings.Contains(stack, "glyphoxa/voice") {
			return true
		}
	}
	return false
}

func stacks() map[string]string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		id, _, _ := strings.Cut(g, " [")
		out[id] = g
	}
	return out
}
