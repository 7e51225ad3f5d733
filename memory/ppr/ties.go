package ppr

import "sort"

// Tie is a link between two entities that the transcript shows line by
// line, beside the facts: the two are named in one line (the speaker
// counts as named), or speak one after the other. Weight is its strength.
type Tie struct {
	A, B   string
	Weight float64
}

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

// SetTies replaces the graph's ties with ties: each becomes an
// entity–entity edge beside the facts. Ties of an entity with itself or
// of no weight are left out.
func (g *Graph) SetTies(ties []Tie) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, i := range g.ties {
		g.kill(i)
	}
	g.ties = g.ties[:0]
	for _, t := range ties {
		if t.A == t.B || t.Weight <= 0 {
			continue
		}
		g.ties = append(g.ties, g.add(g.node("e:", t.A, false), g.node("e:", t.B, false), t.Weight))
	}
	g.compact()
}

// TiesOf returns the ties of an entity ([Graph.SetTies]), with B the
// other entity, strongest first (by B's id among equals).
func (g *Graph) TiesOf(entityID string) []Tie {
	g.mu.RLock()
	defer g.mu.RUnlock()
	u, ok := g.nodes["e:"+entityID]
	if !ok {
		return nil
	}
	var out []Tie
	for _, i := range g.ties {
		e := g.edges[i]
		if e.dead || (e.a != u && e.b != u) {
			continue
		}
		v := e.a
		if v == u {
			v = e.b
		}
		out = append(out, Tie{A: entityID, B: g.keys[v][2:], Weight: float64(e.w)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Weight != out[j].Weight {
			return out[i].Weight > out[j].Weight
		}
		return out[i].B < out[j].B
	})
	return out
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
