package chunk

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// An Update that fails reading the campaign's language (the database
// stopped answering: here a lock holds the read until it is cancelled)
// leaves the live chunker as it was: the next Update indexes the session.
// The failed read used to leave it without an embedder, and the next
// Update (a serve process ending its sessions) panicked.
func TestLiveUpdateAfterAFailedLanguageRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	camp, dsn := startSession(ctx, t, line(0, 0, "Thorin", "Grimjaw, the forge in Ironhold is cold."))
	emb, _ := embed.NewOffline(64)
	live, err := NewLive(camp, emb, Options{}, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}

	// Another session holds the campaigns table; the language read waits
	// for it until its context is cancelled.
	release := pgtest.LockTable(t, dsn, "campaigns", "ACCESS EXCLUSIVE")
	uctx, ucancel := context.WithCancel(ctx)
	failed := make(chan error, 1)
	go func() {
		_, err := live.Update(uctx)
		failed <- err
	}()
	// Cancelled once the read is seen waiting for the lock: an event, not
	// a deadline. It is watched from a connection of its own: inside the
	// locker's transaction pg_stat_activity keeps the snapshot of its first
	// read, and a first look before the read began waiting never saw it.
	watch, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(context.Background())
	for waiting := false; !waiting; {
		if err := watch.QueryRow(ctx, `SELECT count(*) > 0 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%text_config%'`).Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if !waiting {
			select {
			case err := <-failed:
				t.Fatalf("Update ended before it read the language: %v", err)
			case <-ctx.Done():
				t.Fatal("the language read never waited for the lock")
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
	ucancel()
	if err := <-failed; err == nil {
		t.Fatal("Update succeeded with the language read cancelled")
	}
	release()

	rep, err := live.Update(ctx)
	if err != nil {
		t.Fatalf("Update after the failed one: %v", err)
	}
	if rep.Chunks != 1 || rep.Added != 1 {
		t.Errorf("Update after the failed one: %+v, want the session's one chunk indexed", rep)
	}
}

// A rebuild of the session's chunks (after a forget-me or a span declared
// non-canon) that read the log before the latest lines came replaces the
// session's chunks with its own and takes away the one the live chunker
// had indexed for those lines: the next Update indexes it again, instead
// of leaving the latest lines out of retrieval until the session ends.
func TestLiveIndexesAgainWhatARebuildTookAway(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	camp, _ := startSession(ctx, t, line(0, 0, "Thorin", "Grimjaw, the forge in Ironhold is cold."))
	emb, _ := embed.NewOffline(64)
	live, err := NewLive(camp, emb, Options{}, "s1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Update(ctx); err != nil {
		t.Fatal(err)
	}
	// A line comes, the live chunker indexes it; then a rebuild that read
	// the log before it keeps only the chunks of what it read.
	before, err := camp.Index().ChunkIDs(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	e := line(1, 5, "Mira", "The smith Brannoc left for the Sunken Vault at dawn.")
	e.IdempotencyKey = "k1"
	if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{e}); err != nil {
		t.Fatal(err)
	}
	if _, err := live.Update(ctx); err != nil {
		t.Fatal(err)
	}
	if !indexed(ctx, t, camp, "Sunken Vault") {
		t.Fatal("the live chunker did not index the new line")
	}
	if _, err := camp.Index().DeleteSessionChunks(ctx, "s1", before); err != nil {
		t.Fatal(err)
	}
	if indexed(ctx, t, camp, "Sunken Vault") {
		t.Fatal("the rebuild's stand-in left the new line's chunk")
	}
	rep, err := live.Update(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !indexed(ctx, t, camp, "Sunken Vault") || rep.Added == 0 {
		t.Fatalf("after the rebuild the live chunker did not index the latest line again (%+v)", rep)
	}
}

// indexed reports whether a chunk of session s1 holds text.
func indexed(ctx context.Context, t *testing.T, camp interface {
	Index() *postgres.SemanticIndex
}, text string) bool {
	t.Helper()
	cs, err := camp.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if strings.Contains(c.Content, text) {
			return true
		}
	}
	return false
}

// startSession opens campaign c1 on a store of its own, starts session s1
// and writes lines to it (idempotency keys k0, k1, … where a line has
// none); dsn is the store's database.
func startSession(ctx context.Context, t *testing.T, lines ...memory.TranscriptEntry) (camp *postgres.Campaign, dsn string) {
	t.Helper()
	store, dsn := pgtest.NewStore(t, 64)
	camp, err := store.Campaign(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if err := camp.Sessions().StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for i := range lines {
		if lines[i].IdempotencyKey == "" {
			lines[i].IdempotencyKey = fmt.Sprintf("k%d", i)
		}
	}
	if len(lines) > 0 {
		if _, err := camp.Sessions().WriteEntries(ctx, lines); err != nil {
			t.Fatal(err)
		}
	}
	return camp, dsn
}
