package ppr

import "sort"

// ChunkIDs returns the ids of the chunks the graph holds, sorted.
func (g *Graph) ChunkIDs() []string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	out := make([]string, 0, g.chunks)
	for i, k := range g.keys {
		if g.isChunk[i] {
			out = append(out, k[2:])
		}
	}
	sort.Strings(out)
	return out
}

// ChunkWeight is the weighted degree of a chunk: the sum of its live
// mention edges' weights (0 for a chunk the graph does not hold).
func (g *Graph) ChunkWeight(chunkID string) float64 {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if c, ok := g.nodes["c:"+chunkID]; ok {
		return g.deg[c]
	}
	return 0
}

// SetMentionWeights re-weighs the mention edges of the chunks in w: the
// edge of entity e and chunk c takes weight w[c][e]; edges absent from
// w[c] keep theirs. Chunks not in w are left alone.
func (g *Graph) SetMentionWeights(w map[string]map[string]float64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for cid, ws := range w {
		c, ok := g.nodes["c:"+cid]
		if !ok {
			continue
		}
		for _, i := range g.mentions[c] {
			e := &g.edges[i]
			if e.dead {
				continue
			}
			nw, ok := ws[g.keys[e.a][2:]]
			if !ok || nw <= 0 {
				continue
			}
			g.deg[e.a] += nw - float64(e.w)
			g.deg[e.b] += nw - float64(e.w)
			e.w = float32(nw)
		}
	}
	g.compact()
}
