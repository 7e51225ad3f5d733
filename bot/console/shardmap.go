package console

import (
	"hash/maphash"
	"iter"
	"maps"
)

// shardMap is a map from strings that a snapshot shares with the one it
// was refreshed from, copying on write only the shards a refresh changes.
//
// Why: at the 100k bench scale a snapshot indexes 100,000 entities by id
// and by the facts at each. A refresh after one DM edit cloned both maps
// whole, about 9 MB of new heap for a change of a few keys, so the
// garbage collector marked the snapshot's 150 MB of pointers every few
// edits, and the page served during a cycle waited on it (the graph view
// after an edit: p50 7 to 8 ms, p95 27 to 34 ms, p99 42 to 52 ms; with
// shards and mergeSorted's single copy, p95 13 to 16 ms, p99 27 to 29 ms).
// Cut in shardMapShards maps by a hash of the key, a refresh copies the
// array of shard pointers and the few shards whose keys it writes: at
// 100,000 keys each shard holds about 400.
//
// A shardMap is written only by the refresh that made it, before the
// snapshot is published; readers share it without a lock.
type shardMap[V any] struct {
	seed   maphash.Seed
	shards [shardMapShards]map[string]V
	// own marks the shards this map copied (or made) and may write; the
	// others are shared with the map it was cloned from.
	own [shardMapShards]bool
	n   int
}

// shardMapShards is the number of shards: enough that one holds a few
// hundred keys at the 100k scale (a refresh's copy of one is a few
// kilobytes), few enough that cloning the array (2 KB of pointers) is
// nothing.
const shardMapShards = 256

// newShardMap returns an empty map.
func newShardMap[V any]() *shardMap[V] {
	return &shardMap[V]{seed: maphash.MakeSeed()}
}

func (m *shardMap[V]) shard(k string) int {
	return int(maphash.String(m.seed, k) % shardMapShards)
}

// lookup returns k's value and whether k is in the map.
func (m *shardMap[V]) lookup(k string) (V, bool) {
	v, ok := m.shards[m.shard(k)][k]
	return v, ok
}

// get returns k's value, the zero value when k is not in the map.
func (m *shardMap[V]) get(k string) V {
	return m.shards[m.shard(k)][k]
}

// len returns the number of keys.
func (m *shardMap[V]) len() int { return m.n }

// writable returns shard i, copied first if it is shared.
func (m *shardMap[V]) writable(i int) map[string]V {
	if !m.own[i] {
		s := make(map[string]V, len(m.shards[i])+1)
		maps.Copy(s, m.shards[i])
		m.shards[i], m.own[i] = s, true
	}
	return m.shards[i]
}

// set sets k's value.
func (m *shardMap[V]) set(k string, v V) {
	s := m.writable(m.shard(k))
	if _, ok := s[k]; !ok {
		m.n++
	}
	s[k] = v
}

// delete removes k.
func (m *shardMap[V]) delete(k string) {
	i := m.shard(k)
	if _, ok := m.shards[i][k]; !ok {
		return
	}
	delete(m.writable(i), k)
	m.n--
}

// clone returns a map with the same keys and values that shares every
// shard with m until it writes to it. m must not be written after.
func (m *shardMap[V]) clone() *shardMap[V] {
	return &shardMap[V]{seed: m.seed, shards: m.shards, n: m.n}
}

// all yields every key and value, in no order.
func (m *shardMap[V]) all() iter.Seq2[string, V] {
	return func(yield func(string, V) bool) {
		for _, s := range m.shards {
			for k, v := range s {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}
