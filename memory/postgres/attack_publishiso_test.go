package postgres_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackPublishUnderRepeatableRead: an operator whose server (or
// DSN) sets default_transaction_isolation = 'repeatable read'. The
// publication's single statement takes its snapshot before it waits on
// the campaign's lock, so the UPDATE finds rows the publisher it waited
// for numbered since and fails ("could not serialize access due to
// concurrent update"): concurrent syncs of one campaign error out.
func TestAttackPublishUnderRepeatableRead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, dsn := pgtest.NewStore(t, 8)
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	s, err := postgres.NewStore(ctx, dsn+sep+"default_transaction_isolation=repeatable%20read", 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	camp := pgtest.Campaign(t, s, "camp")
	var errs []error
	var mu sync.Mutex
	for round := range 20 {
		for i := range 50 {
			id := "e" + string(rune('a'+round%26)) + string(rune('a'+i%26)) + string(rune('a'+i/26))
			if err := camp.Graph().UpsertEntity(ctx, memory.Entity{ID: id, Type: memory.EntityNPC, Name: id}); err != nil {
				t.Fatal(err)
			}
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := camp.LastChange(ctx); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
	}
	if len(errs) > 0 {
		t.Errorf("%d concurrent readers failed under repeatable read, first: %v", len(errs), errs[0])
	}
}
