//go:build unix

package spool_test

import (
	"context"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
)

// TestCloseReleasesTheLockWhileProcessesStart reopens a spool right after
// closing it while other goroutines start processes, as a serving bot does
// (TTS voices, the recogniser): a child being started holds a copy of the
// lock file until its program runs, and Close must not leave the directory
// locked through it. Without the explicit unlock this failed within a few
// hundred reopens.
func TestCloseReleasesTheLockWhileProcessesStart(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var started atomic.Int64
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := exec.Command("true").Run(); err != nil {
					t.Errorf("starting true: %v", err)
					return
				}
				started.Add(1)
			}
		}()
	}
	defer wg.Wait()
	defer cancel()
	dir := t.TempDir()
	// Reopen at least 500 times, and for as long as it takes the other
	// goroutines to start 50 processes, so that the two overlap on a loaded
	// machine too.
	for i := 0; i < 500 || started.Load() < 50; i++ {
		s, err := spool.Open(dir, spool.Options{})
		if err != nil {
			t.Fatalf("Open %d, right after a Close, with %d processes started: %v", i, started.Load(), err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close %d: %v", i, err)
		}
		if t.Failed() {
			return
		}
	}
}
