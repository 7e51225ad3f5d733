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

// lineTies counts the ties between entities that the transcript shows
// line by line (see [ppr.Tie]). A chunk holds several lines, so two people
// linked to one chunk may never have spoken to or of each other; two named
// in one line ("Holt, Brenna's father, ...", or Holt saying "Brenna? She's
// my daughter.": the speaker counts as named), or two speakers of
// consecutive lines (a question and its answer), are. Each line gives its
// named entities one unit of tie, shared among the others it names: a
// line naming m entities adds 1/(m-1) to each of its pairs (the
// collaboration weighting of Newman 2001, "Scientific collaboration
// networks"), so a "previously on" recap naming everyone ties no two of
// them much; a reply adds 1 to its two speakers. A pair's total s weighs
// s/(s+1): one line weighs as a half-sure fact, and more lines saturate
// towards a sure one, as BM25 saturates a term's frequency, so that a tie
// never outweighs a fact the campaign states. Lines are counted once,
// however many overlapping chunks hold them.
func lineTies(contents []string, m *mention.Matcher) []ppr.Tie {
	type pair struct{ a, b string }
	count := map[pair]float64{}
	addPair := func(a, b string, w float64) {
		if a == b {
			return
		}
		if b < a {
			a, b = b, a
		}
		count[pair{a, b}] += w
	}
	seenLine := map[string]bool{}
	seenReply := map[string]bool{}
	for _, content := range contents {
		var prev []string
		prevLine := ""
		for _, line := range strings.Split(content, "\n") {
			line = strings.TrimSpace(line)
			if line == "" {
				continue
			}
			if !seenLine[line] && os.Getenv("TIESX") != "reply" {
				seenLine[line] = true
				named := m.Find(line)
				if len(named) > 1 {
					w := 1 / float64(len(named)-1)
					for i, a := range named {
						for _, b := range named[i+1:] {
							addPair(a, b, w)
						}
					}
				}
			}
			speakers := m.Find(speakerLabel(line))
			if key := prevLine + "\n" + line; len(prev) > 0 && len(speakers) > 0 && !seenReply[key] && os.Getenv("TIESX") != "line" {
				seenReply[key] = true
				for _, a := range prev {
					for _, b := range speakers {
						addPair(a, b, 1/float64(len(prev)*len(speakers)))
					}
				}
			}
			prev, prevLine = speakers, line
		}
	}
	out := make([]ppr.Tie, 0, len(count))
	for p, s := range count {
		out = append(out, ppr.Tie{A: p.a, B: p.b, Weight: s / (s + 1)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].A != out[j].A {
			return out[i].A < out[j].A
		}
		return out[i].B < out[j].B
	})
	return out
}

// loadTies computes the graph's line ties from the content of its chunks
// and hands them to the graph.
func (r *Retriever) loadTies(ctx context.Context, m *mention.Matcher) error {
	cs, err := r.camp.Index().ChunksByID(ctx, r.graph.ChunkIDs())
	if err != nil {
		return fmt.Errorf("loading chunks for line ties: %w", err)
	}
	contents := make([]string, len(cs))
	for i, c := range cs {
		contents[i] = c.Content
	}
	if os.Getenv("TIESM") != "only" {
		r.graph.SetTies(lineTies(contents, m))
	}
	if os.Getenv("TIESM") != "" {
		chunks := map[string]string{}
		linked := map[string][]string{}
		for _, c := range cs {
			chunks[c.ID] = c.Content
			linked[c.ID] = r.graph.ChunkEntities(c.ID)
		}
		r.graph.SetMentionWeights(lineMentionWeights(chunks, linked, m))
	}
	return nil
}

// lineMentionWeights weighs each chunk's entity links by the chunk's
// lines: every line that names entities (its speaker included) gives one
// unit shared evenly among them, and an entity's weight is its part of
// the chunk's units; an entity linked to the chunk that no line names by
// its label or text counts as named alone in one line.
func lineMentionWeights(chunks map[string]string, linked map[string][]string, m *mention.Matcher) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for id, content := range chunks {
		units := map[string]float64{}
		var total float64
		for _, line := range strings.Split(content, "\n") {
			named := m.Find(line)
			if len(named) == 0 {
				continue
			}
			for _, e := range named {
				units[e] += 1 / float64(len(named))
			}
			total++
		}
		for _, e := range linked[id] {
			if units[e] == 0 {
				units[e] = 1
				total++
			}
		}
		if total == 0 {
			continue
		}
		ws := map[string]float64{}
		for e, u := range units {
			ws[e] = u / total
		}
		out[id] = ws
	}
	return out
}
