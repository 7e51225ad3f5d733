package retrieve

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory/mention"
	"github.com/glyphoxa/glyphoxa/memory/ppr"
)

// loadLineWeights re-weighs the graph's mention edges by line (experiment,
// GLYPHOXA_LINEW=share|units).
func (r *Retriever) loadLineWeights(ctx context.Context, m *mention.Matcher) error {
	mode := os.Getenv("GLYPHOXA_LINEW")
	if mode == "" {
		return nil
	}
	cs, err := r.camp.Index().ChunksByID(ctx, r.graph.ChunkIDs())
	if err != nil {
		return fmt.Errorf("loading chunks for line weights: %w", err)
	}
	chunks := map[string]string{}
	linked := map[string][]string{}
	for _, c := range cs {
		chunks[c.ID] = c.Content
		linked[c.ID] = r.graph.ChunkEntities(c.ID)
	}
	w := lineMentionWeights(chunks, linked, m, mode)
	if os.Getenv("GLYPHOXA_LINEA") == "" {
		r.graph.SetMentionWeights(w)
		return nil
	}
	lg, err := ppr.New(r.camp, r.cfg.PPR)
	if err != nil {
		return err
	}
	if err := lg.Load(ctx); err != nil {
		return err
	}
	lg.SetMentionWeights(w)
	r.lgraph = lg
	return nil
}

// lineMentionWeights weighs each chunk's entity links by the chunk's
// lines: every line that names entities (its speaker included) gives one
// unit shared evenly among them; an entity linked to the chunk that no
// line names counts as named alone in one line. With units the weight is
// the entity's units; otherwise its part of the chunk's units.
func lineMentionWeights(chunks map[string]string, linked map[string][]string, m *mention.Matcher, mode string) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for id, content := range chunks {
		u := map[string]float64{}
		var total float64
		for _, line := range strings.Split(content, "\n") {
			named := m.Find(line)
			if len(named) == 0 {
				continue
			}
			for _, e := range named {
				u[e] += 1 / float64(len(named))
			}
			total++
		}
		for _, e := range linked[id] {
			if u[e] == 0 {
				u[e] = 1
				total++
			}
		}
		if total == 0 {
			continue
		}
		ws := map[string]float64{}
		for e, x := range u {
			switch mode {
			case "units1":
				ws[e] = 1 + x
			case "units":
				ws[e] = x
			default:
				ws[e] = x / total
			}
		}
		out[id] = ws
	}
	return out
}

// lineDegree is the fusion's degree rule under the experiment's variants
// (GLYPHOXA_LINEF): "" count of entities, "none" no division, "wdeg" the
// chunk's weighted degree.
func (r *Retriever) lineDegree(pr []ppr.Result) []ppr.Result {
	switch os.Getenv("GLYPHOXA_LINEF") {
	case "none":
		return pr
	case "wdeg":
		return perWeight(pr, func(id string) float64 { return r.graph.ChunkWeight(id) })
	}
	return perDegree(pr, func(id string) int { return len(r.graph.ChunkEntities(id)) })
}

func perWeight(pr []ppr.Result, w func(string) float64) []ppr.Result {
	out := make([]ppr.Result, len(pr))
	for i, x := range pr {
		d := w(x.ID)
		if d < 1e-9 {
			d = 1
		}
		x.Score /= d
		out[i] = x
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}
