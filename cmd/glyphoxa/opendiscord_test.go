package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
)

// serve does not exit when Discord cannot be reached: it retries with the
// reconnect backoff, says so, and gives up after the configured attempts.
func TestOpenDiscordRetriesWithBackoff(t *testing.T) {
	t.Parallel()
	rc := config.Reconnect{Initial: config.Duration(time.Second), Max: config.Duration(4 * time.Second), Attempts: 4}
	unreachable := errors.New("dial tcp: connection refused")
	for _, tc := range []struct {
		name      string
		failures  int // opens that fail before one succeeds
		wantErr   bool
		wantWaits []time.Duration
	}{
		{"reachable at once", 0, false, nil},
		{"reachable on the third try", 2, false, []time.Duration{time.Second, 2 * time.Second}},
		{"never reachable", 100, true, []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(time.Unix(0, 0))
			var logs syncBuffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			opens := 0
			open := func(context.Context) error {
				opens++
				if opens <= tc.failures {
					return unreachable
				}
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- openDiscord(ctx, open, rc, clk, func() float64 { return 0.5 }, log) }()
			for i := range tc.wantWaits {
				if !clk.WaitCreated(ctx, i+1) {
					t.Fatal("no retry armed")
				}
				clk.Advance(tc.wantWaits[i])
			}
			err := <-done
			if got := clk.Created(); !slices.Equal(got, tc.wantWaits) {
				t.Errorf("waits %v, want %v (the reconnect backoff)", got, tc.wantWaits)
			}
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && (!errors.Is(err, unreachable) || !strings.Contains(err.Error(), "4 attempts")) {
				t.Errorf("err = %v, want the cause and the attempts", err)
			}
			if n := strings.Count(logs.String(), "retrying with backoff"); n != len(tc.wantWaits) {
				t.Errorf("%d retry lines logged, want %d:\n%s", n, len(tc.wantWaits), logs.String())
			}
		})
	}
}
