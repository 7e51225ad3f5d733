package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestLiveFeedsOfTwoProcesses: two processes report on one campaign; one
// is killed (it never withdraws its report). Its report still shows while
// fresh, drops out of the feeds once older than the freshness, and is
// removed once ten times older; the live one's report is untouched, and a
// withdrawal removes only its own owner's. Ages are the database's (the
// stale report is backdated in SQL, no test waits on the clock).
func TestLiveFeedsOfTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := pgtest.NewStore(t, 8)
	c := pgtest.Campaign(t, s, "two-tables")
	other := pgtest.Campaign(t, s, "other-table")
	const fresh = 10 * time.Second
	if err := c.PublishLive(ctx, "host-a/1/dead", []byte(`{"running":true,"session_id":"s1"}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.PublishLive(ctx, "host-b/2/live", []byte(`{"running":false}`)); err != nil {
		t.Fatal(err)
	}
	if err := other.PublishLive(ctx, "host-a/1/dead", []byte(`{"running":true}`)); err != nil {
		t.Fatal(err)
	}
	owners := func(fs []string) map[string]bool {
		m := map[string]bool{}
		for _, f := range fs {
			m[f] = true
		}
		return m
	}
	read := func(when string) map[string]bool {
		t.Helper()
		fs, err := c.LiveFeeds(ctx, fresh)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		var names []string
		for _, f := range fs {
			if f.Age < 0 {
				t.Errorf("%s: %s's report has a negative age %s", when, f.Owner, f.Age)
			}
			names = append(names, f.Owner)
		}
		return owners(names)
	}
	if got := read("both fresh"); len(got) != 2 || !got["host-a/1/dead"] || !got["host-b/2/live"] {
		t.Fatalf("both fresh: %v", got)
	}
	age := func(owner string, by time.Duration) {
		t.Helper()
		if _, err := s.Pool().Exec(ctx, `UPDATE live_feeds SET updated_at = now() - make_interval(secs => $3)
			WHERE campaign_id = $1 AND owner = $2`, c.ID(), owner, by.Seconds()); err != nil {
			t.Fatal(err)
		}
	}
	// Killed: its last report is older than the freshness.
	age("host-a/1/dead", fresh+time.Second)
	if got := read("one stale"); len(got) != 1 || !got["host-b/2/live"] {
		t.Fatalf("a stale report shows: %v", got)
	}
	// The live process reports again: the stale one does not come back.
	if err := c.PublishLive(ctx, "host-b/2/live", []byte(`{"running":true,"session_id":"s1"}`)); err != nil {
		t.Fatal(err)
	}
	if got := read("one stale, one renewed"); len(got) != 1 || !got["host-b/2/live"] {
		t.Fatalf("after the renewal: %v", got)
	}
	// Long dead: removed from the table (not just hidden).
	age("host-a/1/dead", 10*fresh+time.Second)
	read("one long dead")
	var n int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM live_feeds WHERE campaign_id = $1 AND owner = 'host-a/1/dead'`, c.ID()).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("a report ten times older than the freshness is kept (%d rows)", n)
	}
	// The other campaign's report of the same owner is its own.
	if fs, err := other.LiveFeeds(ctx, fresh); err != nil || len(fs) != 1 {
		t.Fatalf("the other campaign's feeds: %v %v", fs, err)
	}
	// A withdrawal removes its owner's report only.
	if err := c.WithdrawLive(ctx, "host-b/2/live"); err != nil {
		t.Fatal(err)
	}
	if got := read("withdrawn"); len(got) != 0 {
		t.Fatalf("after the withdrawal: %v", got)
	}
	if fs, err := other.LiveFeeds(ctx, fresh); err != nil || len(fs) != 1 {
		t.Fatalf("the other campaign's feeds after a withdrawal here: %v %v", fs, err)
	}
	// Bad input is named.
	for _, bad := range []struct {
		owner, status string
	}{{"", `{}`}, {"  ", `{}`}, {"x", `{not json`}} {
		if err := c.PublishLive(ctx, bad.owner, []byte(bad.status)); !errors.Is(err, memory.ErrInvalid) {
			t.Errorf("PublishLive(%q, %q): %v, want ErrInvalid", bad.owner, bad.status, err)
		}
	}
	if _, err := c.LiveFeeds(ctx, 0); !errors.Is(err, memory.ErrInvalid) {
		t.Errorf("LiveFeeds(0): %v, want ErrInvalid", err)
	}
}
