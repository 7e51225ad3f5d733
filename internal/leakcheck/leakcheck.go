// Package leakcheck fails a test that leaves goroutines behind.
package leakcheck

import (
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// Check records the goroutines running now and, when the test ends (after
// the cleanups registered later have run), fails it if goroutines started
// since are still running after a grace period. Call it first in a test.
func Check(tb testing.TB) {
	tb.Helper()
	before := map[string]bool{}
	for id := range goroutines() {
		before[id] = true
	}
	tb.Cleanup(func() {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var leaked []string
			for id, stack := range goroutines() {
				if !before[id] && !ignored(stack) {
					leaked = append(leaked, stack)
				}
			}
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				sort.Strings(leaked)
				tb.Errorf("%d goroutine(s) leaked:\n\n%s", len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// goroutines returns the stack of every goroutine by id.
func goroutines() map[string]string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	out := map[string]string{}
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		f := strings.Fields(head) // goroutine 12 [running]:
		if len(f) < 2 || f[0] != "goroutine" {
			continue
		}
		out[f[1]] = g
	}
	return out
}

// ignored reports goroutines that belong to the test framework or the
// runtime rather than to the code under test.
func ignored(stack string) bool {
	for _, s := range []string{
		"testing.tRunner", "testing.(*T).Run", "testing.runTests", "testing.(*M).",
		"runtime.goexit0", "os/signal.signal_recv", "leakcheck.goroutines",
	} {
		if strings.Contains(stack, s) {
			return true
		}
	}
	return false
}
