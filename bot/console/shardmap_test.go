package console

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
)

// TestShardMapClonesAreIndependent: a chain of clones, each written with
// random sets and deletes, holds what a plain map written the same way
// holds, and writing a clone leaves every older map as it was (the
// snapshots it was refreshed from are still being read).
func TestShardMapClonesAreIndependent(t *testing.T) {
	for seed := range uint64(20) {
		r := rand.New(rand.NewPCG(seed, 7))
		m := newShardMap[int]()
		want := map[string]int{}
		type gen struct {
			m    *shardMap[int]
			want map[string]int
		}
		var gens []gen
		for g := range 30 {
			if g > 0 {
				m = m.clone()
			}
			// The first map is loaded whole; later ones are refreshes
			// writing a few keys.
			writes := 5 + r.IntN(20)
			if g == 0 {
				writes = 3000
			}
			for range writes {
				k := fmt.Sprintf("k%d", r.IntN(2000))
				if r.IntN(3) == 0 {
					m.delete(k)
					delete(want, k)
				} else {
					v := r.Int()
					m.set(k, v)
					want[k] = v
				}
			}
			gens = append(gens, gen{m, maps.Clone(want)})
		}
		for i, g := range gens {
			if g.m.len() != len(g.want) {
				t.Fatalf("seed %d, map %d: len %d, want %d", seed, i, g.m.len(), len(g.want))
			}
			got := map[string]int{}
			for k, v := range g.m.all() {
				got[k] = v
			}
			if !maps.Equal(got, g.want) {
				t.Fatalf("seed %d, map %d: holds %d keys unlike the plain map's %d (or other values)", seed, i, len(got), len(g.want))
			}
			for k, v := range g.want {
				if x, ok := g.m.lookup(k); !ok || x != v || g.m.get(k) != v {
					t.Fatalf("seed %d, map %d: %s = %d, %v; want %d", seed, i, k, x, ok, v)
				}
			}
			if _, ok := g.m.lookup("absent"); ok || g.m.get("absent") != 0 {
				t.Fatalf("seed %d, map %d: an absent key was found", seed, i)
			}
		}
	}
}

// TestShardMapCloneSharesUnwrittenShards: a clone written with one key
// copies one shard and shares the others (the point of it).
func TestShardMapCloneSharesUnwrittenShards(t *testing.T) {
	m := newShardMap[int]()
	for i := range 10_000 {
		m.set(fmt.Sprint(i), i)
	}
	c := m.clone()
	c.set("0", -1)
	copied := 0
	for i := range c.shards {
		if fmt.Sprintf("%p", c.shards[i]) != fmt.Sprintf("%p", m.shards[i]) {
			copied++
		}
	}
	if copied != 1 {
		t.Errorf("a clone written with one key copied %d shards, want 1", copied)
	}
	if m.get("0") != 0 || c.get("0") != -1 {
		t.Errorf("after writing the clone: original %d, clone %d; want 0 and -1", m.get("0"), c.get("0"))
	}
}
