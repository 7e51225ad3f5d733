package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/antzucaro/matchr"
)

// nearest returns up to n of names nearest to a mistyped one, best first:
// those containing it (or contained in it), then those a few edits away
// (at most a third of its length, at least two), ties broken by
// Jaro-Winkler similarity. It returns none when nothing is near.
func nearest(typed string, names []string, n int) []string {
	t := strings.ToLower(strings.TrimSpace(typed))
	if t == "" {
		return nil
	}
	type cand struct {
		name  string
		rank  int // 0 contains, 1 edits
		dist  int
		score float64
	}
	var cs []cand
	limit := max(2, len([]rune(t))/3)
	for _, name := range names {
		l := strings.ToLower(name)
		c := cand{name: name, dist: matchr.DamerauLevenshtein(t, l), score: matchr.JaroWinkler(t, l, false)}
		switch {
		case strings.Contains(l, t) || strings.Contains(t, l): // an exact match too
			c.rank = 0
		case c.dist <= limit:
			c.rank = 1
		default:
			continue
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b cand) int {
		return cmp.Or(cmp.Compare(a.rank, b.rank), cmp.Compare(a.dist, b.dist), cmp.Compare(b.score, a.score), strings.Compare(a.name, b.name))
	})
	var out []string
	for _, c := range cs[:min(len(cs), n)] {
		out = append(out, c.name)
	}
	return out
}
