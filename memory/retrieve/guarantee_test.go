package retrieve

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestGuarantee(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ids   []string
		parts [][]string
		want  []string
	}{
		{"one part is left as fused", []string{"a", "b", "c"}, [][]string{{"c", "b", "a"}}, []string{"a", "b", "c"}},
		{"heads already high: nothing moves", []string{"a", "b", "c", "d"}, [][]string{{"a", "c"}, {"b", "d"}},
			[]string{"a", "b", "c", "d"}},
		// The walk's best (w) ranks last by fusion: by depth 2 it must be
		// in, and the words' best (a) keeps the first place.
		{"a part's best comes up", []string{"a", "b", "c", "w"}, [][]string{{"a", "b", "c"}, {"w"}},
			[]string{"a", "w", "b", "c"}},
		{"chunks outside the fusion are ignored", []string{"a", "b", "c"}, [][]string{{"a", "b"}, {"gone", "c"}},
			[]string{"a", "b", "c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := guarantee(tc.ids, tc.parts); !slices.Equal(got, tc.want) {
				t.Errorf("guarantee = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestGuaranteeProperty checks on random rankings what guarantee promises:
// a permutation of the fused ranking whose every prefix of length d holds
// the first floor(d/P) of each of the P parts.
func TestGuaranteeProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 27))
	for trial := range 500 {
		n := 1 + rng.IntN(40)
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprint("c", i)
		}
		p := 2 + rng.IntN(3)
		parts := make([][]string, p)
		for i := range parts {
			perm := rng.Perm(n)
			for _, j := range perm[:rng.IntN(n+1)] {
				parts[i] = append(parts[i], ids[j])
			}
		}
		got := guarantee(ids, parts)
		if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(ids))) {
			t.Fatalf("trial %d: %v is not a permutation of %v", trial, got, ids)
		}
		for d := 1; d <= n; d++ {
			for pi, part := range parts {
				for _, id := range part[:min(d/p, len(part))] {
					if !slices.Contains(got[:d], id) {
						t.Fatalf("trial %d: prefix %d of %v lacks %s, of the first %d of part %d %v",
							trial, d, got, id, d/p, pi, part)
					}
				}
			}
		}
	}
}

func TestByBetterRank(t *testing.T) {
	got := byBetterRank([]string{"a", "b", "c"}, []string{"c", "d", "a"})
	if want := []string{"a", "c", "b", "d"}; !slices.Equal(got, want) {
		t.Errorf("byBetterRank = %v, want %v", got, want)
	}
}

func TestBetterRanks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		lists [][]string
		want  map[string]int
	}{
		{"none", nil, map[string]int{}},
		{"one ranking", [][]string{{"a", "b"}}, map[string]int{"a": 1, "b": 2}},
		// A chunk both rankings hold counts once, at its better rank.
		{"the better of two", [][]string{{"a", "b", "c"}, {"c", "d", "a"}},
			map[string]int{"a": 1, "b": 2, "c": 1, "d": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := betterRanks(tc.lists...); !maps.Equal(got, tc.want) {
				t.Errorf("betterRanks = %v, want %v", got, tc.want)
			}
		})
	}
}
