package retrieve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSameFileSameRanking: two imports of the same campaign file (into one
// store, so that every row id differs between them) answer every question
// with the same ranking in every mode: ties are broken by keys that come
// from the file, not by row ids or by when the graph was refreshed.
func TestSameFileSameRanking(t *testing.T) {
	// Its own database; the time goes to round trips, so it runs beside
	// TestRecall's corpora.
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), evalHangGuard)
	defer cancel()
	file, all := genTable(evalSeed)
	var qs []question
	for i, q := range all {
		if i%3 == 0 { // a third of the questions: every kind, every mode
			qs = append(qs, q)
		}
	}
	store, _ := pgtest.NewStore(t, evalDims)
	e, err := embed.NewOffline(evalDims)
	if err != nil {
		t.Fatal(err)
	}
	// The two imports go in side by side: each is its own campaign (and
	// transaction), and the ranking must not depend on which one's rows
	// got the lower ids.
	ids := []string{"first-import", "second-import"}
	rs := make([]*Retriever, len(ids))
	errs := make([]error, len(ids))
	var wg sync.WaitGroup
	for j, id := range ids {
		wg.Go(func() {
			cf := *file
			cf.Campaign = id
			if err := store.InTx(ctx, id, func(c *postgres.Campaign) error {
				_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
				return err
			}); err != nil {
				errs[j] = fmt.Errorf("importing %s: %w", id, err)
				return
			}
			camp, err := store.Campaign(ctx, id)
			if err != nil {
				errs[j] = fmt.Errorf("opening %s: %w", id, err)
				return
			}
			if _, err := chunk.Process(ctx, camp, e, chunk.Options{}); err != nil {
				errs[j] = fmt.Errorf("chunking %s: %w", id, err)
				return
			}
			rs[j], errs[j] = New(camp, e, Config{})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	differ := 0
	for _, m := range Modes() {
		var got [2][][]Result
		for j, r := range rs {
			got[j], err = searchEach(ctx, qs, func(ctx context.Context, q question) ([]Result, error) {
				return r.Search(ctx, Query{Text: q.Q, Mode: m, K: 10})
			})
			if err != nil {
				t.Fatalf("%s %s: %v", ids[j], m, err)
			}
		}
		for i, q := range qs {
			var ranked [2][]string
			for j := range got {
				for _, x := range got[j][i] {
					ranked[j] = append(ranked[j], x.Kind+": "+x.Content)
				}
			}
			if len(ranked[0]) == 0 {
				t.Errorf("%s %q: nothing found", m, q.Q)
			}
			if !slices.Equal(ranked[0], ranked[1]) {
				differ++
				if differ <= 5 {
					t.Errorf("%s %q: the two imports rank differently:\n%q\n%q", m, q.Q, ranked[0], ranked[1])
				}
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d rankings differ between two imports of the same file", differ)
	}
}
