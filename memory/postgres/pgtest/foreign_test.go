package pgtest_test

import (
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The foreign campaign holds a row of every kind it names.
func TestForeignCampaign(t *testing.T) {
	t.Parallel()
	s, _ := pgtest.NewStore(t, 8)
	f := pgtest.ForeignCampaign(t, s, "../../../testdata/campaigns/hostile-keep.yaml")
	if len(f.Sessions) != 2 || len(f.Entities) == 0 || len(f.Conflicts) != 1 || len(f.Batches) != 1 {
		t.Errorf("foreign campaign: %+v", f)
	}
	if a, b := f.State(t, s), f.State(t, s); a != b || a == "" {
		t.Errorf("State is not stable: %q %q", a, b)
	}
}
