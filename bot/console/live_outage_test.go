package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// TestLiveFeedThroughAnOutage: a table publishes its live status while the
// database goes down and comes back. During the outage the Live page says
// the feed cannot be read because the database cannot be reached, in plain
// words (never the driver's), and does not claim that no table reports;
// the store's error names the outage (memory.ErrUnavailable); once the
// database is back the publisher's reports show again by themselves.
func TestLiveFeedThroughAnOutage(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	f := newFixtureOn(t, clusterStore(t, cl))
	table := liveFeed{campaign: {Running: true, SessionID: "s4", Speaking: []string{"Mara"}}}
	pub := &console.LivePublisher{Source: table, Campaigns: []*access.Campaign{f.camp}, Owner: "host-b/77/cafe",
		Describe: "glyphoxa serve on host-b (pid 77)", Interval: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); pub.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	b := f.signInLink(t)
	type live struct {
		Feed struct {
			Connected bool
			Problem   string
		}
		Status struct {
			Running        bool
			MemoryDegraded bool `json:"memory_degraded"`
		}
	}
	read := func() live {
		t.Helper()
		_, body := b.get("/api/live")
		var got live
		if err := json.Unmarshal([]byte(body), &got); err != nil {
			t.Fatalf("/api/live: %v: %s", err, body)
		}
		return got
	}
	waitRunning := func(when string) {
		t.Helper()
		hang := time.After(5 * time.Minute) // a hang guard, not a budget
		for !read().Status.Running {
			select {
			case <-hang:
				t.Fatalf("%s: the published session never shows", when)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	waitRunning("before the outage")

	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	if err := f.camp.PublishLive(context.Background(), "host-c/1/x", []byte(`{}`)); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("publishing in an outage: %v; want an error naming the outage (memory.ErrUnavailable)", err)
	}
	if _, err := f.camp.LiveFeeds(context.Background(), console.LiveFresh); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("reading the feeds in an outage: %v; want an error naming the outage (memory.ErrUnavailable)", err)
	}
	got := read()
	if got.Status.Running || got.Feed.Connected || !got.Status.MemoryDegraded {
		t.Errorf("/api/live in an outage: %+v", got)
	}
	if !strings.Contains(got.Feed.Problem, "database cannot be reached") {
		t.Errorf("/api/live in an outage gives the problem as %q; want it said plainly", got.Feed.Problem)
	}
	_, page := b.get("/live")
	for _, raw := range []string{"dial", "127.0.0.1", "SQLSTATE", "EOF", "connection refused", "failed to connect"} {
		if strings.Contains(page, raw) || strings.Contains(got.Feed.Problem, raw) {
			t.Errorf("the live feed in an outage shows the driver's words (%q): %q", raw, got.Feed.Problem)
		}
	}
	if !strings.Contains(page, "The live feed cannot be read") {
		t.Errorf("the live page in an outage does not say the feed cannot be read: %.600s", page)
	}
	if strings.Contains(page, "has reported for this campaign") {
		t.Error("the live page in an outage claims that no table has reported (it cannot know)")
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	waitRunning("after the outage")
}
