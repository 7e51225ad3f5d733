package table_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

// rejoinVoice is a voice channel that can rejoin (as *conn.Conn can).
type rejoinVoice struct {
	*benchVoice
	mu    sync.Mutex
	calls int
	err   error // what Rejoin returns
}

func (v *rejoinVoice) Rejoin(ctx context.Context) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.calls++
	return v.err
}

func (v *rejoinVoice) rejoins() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.calls
}

// Issue 29: when the DAVE session gives up (EventE2EEFailed) the table
// rejoins the channel; it tells the DM in the text channel when that
// fails, when the voice cannot rejoin, or after rejoining twice already.
func TestTableRejoinsWhenEndToEndEncryptionFails(t *testing.T) {
	t.Parallel()
	gaveUp := errors.New("gave up: " + dave.ErrRecoveryGaveUp.Error())
	for _, tc := range []struct {
		name     string
		canJoin  bool
		err      error
		failures int
		rejoins  int
		told     string // in the DM's message; "" for none
		advice   string // in the DM's message, when there is one
		cause    error  // of the failure (nil: gaveUp)
	}{
		{"rejoined", true, nil, 1, 1, "", "", nil},
		{"rejoin failed", true, errors.New("no voice server update"), 1, 1, "rejoining the channel failed: no voice server update",
			"start it again", nil},
		{"cannot rejoin", false, nil, 1, 0, "cannot rejoin", "start it again", nil},
		{"failed again and again", true, nil, 3, 2, "already rejoined 2 times", "start it again", nil},
		// voice.require_e2ee: a downgrade refused, and the channel found
		// without encryption when rejoining; starting again would not help.
		{"downgrade refused", true, fmt.Errorf("voice: starting DAVE: %w: the call has no end-to-end encryption", dave.ErrE2EERequired),
			1, 1, "rejoining the channel failed", "unencrypted audio is refused (voice.require_e2ee)",
			fmt.Errorf("%w: it asked to downgrade the call", dave.ErrE2EERequired)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var mu sync.Mutex
			var told []string
			var rv *rejoinVoice
			r := newRigWith(t, 0, nil, func(c *table.Config) {
				if tc.canJoin {
					rv = &rejoinVoice{benchVoice: c.Voice.(*benchVoice), err: tc.err}
					c.Voice = rv
				}
				c.Announce = func(s string) {
					mu.Lock()
					told = append(told, s)
					mu.Unlock()
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			for i := 0; i < tc.failures; i++ {
				select {
				case r.voice.events <- conn.Event{Kind: conn.EventE2EEFailed, Err: cmp.Or(tc.cause, gaveUp)}:
				case <-ctx.Done():
					t.Fatal("the table does not read its voice events")
				}
			}
			// One more event through the unbuffered channel: the watch
			// loop has handled the failures before it.
			select {
			case r.voice.events <- conn.Event{Kind: conn.EventE2EEEpoch}:
			case <-ctx.Done():
				t.Fatal("the table does not read its voice events")
			}
			wantTold := 0
			if tc.told != "" {
				wantTold = 1
			}
			for {
				mu.Lock()
				n := len(told)
				mu.Unlock()
				joined := 0
				if rv != nil {
					joined = rv.rejoins()
				}
				if n >= wantTold && joined >= tc.rejoins {
					break
				}
				select {
				case <-ctx.Done():
					t.Fatalf("rejoins %d (want %d), told the DM %q", joined, tc.rejoins, told)
				case <-time.After(5 * time.Millisecond):
				}
			}
			// Drain the session (its goroutines end) before the checks.
			if _, err := r.s.Finish(context.Background()); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if rv != nil && rv.rejoins() != tc.rejoins {
				t.Fatalf("rejoined %d times, want %d", rv.rejoins(), tc.rejoins)
			}
			if len(told) != wantTold || wantTold == 1 && (!strings.Contains(told[0], tc.told) || !strings.Contains(told[0], "End-to-end encryption") ||
				!strings.Contains(told[0], tc.advice)) {
				t.Fatalf("told the DM %q; want one message naming %q and advising %q", told, tc.told, tc.advice)
			}
		})
	}
}
