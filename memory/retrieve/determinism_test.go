package retrieve

import (
	"context"
	"slices"
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
	ctx, cancel := context.WithTimeout(context.Background(), evalHangGuard)
	defer cancel()
	file, qs := genTable(evalSeed)
	store, _ := pgtest.NewStore(t, evalDims)
	e, err := embed.NewOffline(evalDims)
	if err != nil {
		t.Fatal(err)
	}
	var rs []*Retriever
	for _, id := range []string{"first-import", "second-import"} {
		cf := *file
		cf.Campaign = id
		if err := store.InTx(ctx, id, func(c *postgres.Campaign) error {
			_, err := cf.Apply(ctx, c.Sessions(), c.Graph())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		camp := pgtest.Campaign(t, store, id)
		if _, err := chunk.Process(ctx, camp, e, chunk.Options{}); err != nil {
			t.Fatal(err)
		}
		r, err := New(camp, e, Config{})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	differ := 0
	for i, q := range qs {
		if i%3 != 0 { // a third of the questions: every kind, every mode
			continue
		}
		for _, m := range Modes() {
			var got [2][]string
			for j, r := range rs {
				res, err := r.Search(ctx, Query{Text: q.Q, Mode: m, K: 10})
				if err != nil {
					t.Fatalf("%s %q: %v", m, q.Q, err)
				}
				for _, x := range res {
					got[j] = append(got[j], x.Kind+": "+x.Content)
				}
			}
			if len(got[0]) == 0 {
				t.Errorf("%s %q: nothing found", m, q.Q)
			}
			if !slices.Equal(got[0], got[1]) {
				differ++
				if differ <= 5 {
					t.Errorf("%s %q: the two imports rank differently:\n%q\n%q", m, q.Q, got[0], got[1])
				}
			}
		}
	}
	if differ > 0 {
		t.Errorf("%d rankings differ between two imports of the same file", differ)
	}
}
