package retrieve

import (
	"context"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/ppr"
)

// relationStop are words of relationship types that say nothing on their
// own.
var relationStop = map[string]bool{"of": true, "by": true, "to": true, "at": true, "with": true, "for": true, "in": true}

// relationWords splits a relationship type into stemmed words
// (SIBLING_OF → sibling).
func relationWords(t string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return r == '_' || r == '-' || r == ' ' }) {
		if !relationStop[w] {
			out = append(out, embed.Stem(w))
		}
	}
	return out
}

// askedRelations returns the stemmed words of a question, against which
// relationship types are matched ([relationAsked]).
func askedRelations(text string) map[string]bool {
	asked := map[string]bool{}
	for _, w := range embed.Words(text) {
		asked[w] = true
	}
	return asked
}

// relationAsked reports whether a question asks about a relationship
// type: whether one of the type's words and one of the question's share a
// stem of at least four letters ("employer" asks about EMPLOYS, "hosted"
// about HOSTS). No table of synonyms is kept: a table written for one
// question set does not carry over to the next campaign. Relationships the
// question does not name still carry the walk from the entities it names
// to their neighbours, by PageRank.
func relationAsked(relType string, asked map[string]bool) bool {
	for _, r := range relationWords(relType) {
		if asked[r] {
			return true
		}
		for w := range asked {
			if sharedStem(r, w) {
				return true
			}
		}
	}
	return false
}

// sharedStem reports whether one word begins with the other, the shorter
// having at least four letters.
func sharedStem(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	return len(a) >= 4 && strings.HasPrefix(b, a)
}

// weightedFact is a fact a question led to, with the share it gets among
// the facts.
type weightedFact struct {
	memory.Relationship
	weight float64
}

// expandSeeds follows, from the named entities, the relationships the
// question asks about ("the sister of …", "the tower … sailed to"), up to
// two hops, and adds the entities reached as seeds. When the question asks
// about something of a named entity ("X's sister", "the … of X") but names
// none of its relationship types, it cannot tell which relationship is
// meant: every relationship of the entity is then followed one hop, the
// entity's weight shared evenly among its neighbours. It also returns the
// facts it followed, each weighted as the entity it reached.
func (r *Retriever) expandSeeds(ctx context.Context, text string, seeds []ppr.Seed) ([]ppr.Seed, []weightedFact, error) {
	asked := askedRelations(text)
	relational := asksOf(text)
	out := append([]ppr.Seed(nil), seeds...)
	have := map[string]bool{}
	for _, s := range out {
		have[s.EntityID] = true
	}
	var followed []weightedFact
	frontier := make([]int, len(out))
	for i := range out {
		frontier[i] = i
	}
	for hop := range 2 {
		var next []int
		// The frontier's relationships, read in one round trip.
		ids := make([]string, len(frontier))
		for j, i := range frontier {
			ids[j] = out[i].EntityID
		}
		relsOf, err := r.relationshipsOf(ctx, ids, hop == 0 && relational, asked)
		if err != nil {
			return nil, nil, err
		}
		for j, i := range frontier {
			from := out[i].EntityID
			rels := relsOf[j]
			reached := false
			for _, rel := range rels {
				if !relationAsked(rel.Type, asked) {
					continue
				}
				followed = append(followed, weightedFact{rel, 1})
				other := otherEnd(rel, from)
				if have[other] {
					continue
				}
				have[other] = true
				reached = true
				out = append(out, ppr.Seed{EntityID: other, Weight: hopGain * out[i].Weight})
				next = append(next, len(out)-1)
			}
			if reached {
				// The question is about what the named entity leads to ("the
				// harbourmaster's sister") more than about the entity itself.
				out[i].Weight *= hopKeep
				continue
			}
			if hop == 0 && relational && len(rels) > 0 {
				share := 1 / float64(len(rels))
				for _, rel := range rels {
					followed = append(followed, weightedFact{rel, share})
					if other := otherEnd(rel, from); !have[other] {
						have[other] = true
						out = append(out, ppr.Seed{EntityID: other, Weight: share * out[i].Weight})
					}
				}
			}
		}
		frontier = next
	}
	return out, followed, nil
}

// relationshipsOf returns the relationships of each of ids that
// [Retriever.expandSeeds] may follow: all of them (at most 200 each,
// newest first) when all is set, else only those of a type the question
// asks about ([relationAsked]), in the same order. Those are found by the
// relationships' types alone and then read in full: a question that names
// no relationship type (most do not) reads no relationship in full, where
// reading every column of each named entity's relationships was most of
// the work of a question whose word sounds like many names ("dragon" and
// 85 names that begin "Drak" in the 100k bench campaign: 787 relationships
// decoded, none followed).
func (r *Retriever) relationshipsOf(ctx context.Context, ids []string, all bool, asked map[string]bool) ([][]memory.Relationship, error) {
	o := memory.TraversalOpts{Limit: 200}
	if all {
		return r.camp.Graph().RelationshipsOfEach(ctx, ids, o)
	}
	types, err := r.camp.Graph().FactTypesOfEach(ctx, ids, o)
	if err != nil {
		return nil, err
	}
	isAsked := map[string]bool{}
	var want []int64
	for _, ts := range types {
		for _, t := range ts {
			ok, seen := isAsked[t.Type]
			if !seen {
				ok = relationAsked(t.Type, asked)
				isAsked[t.Type] = ok
			}
			if ok {
				want = append(want, t.ID)
			}
		}
	}
	out := make([][]memory.Relationship, len(ids))
	if len(want) == 0 {
		return out, nil
	}
	facts, err := r.camp.Graph().Facts(ctx, want)
	if err != nil {
		return nil, err
	}
	for i, ts := range types {
		for _, t := range ts {
			// A fact changed or gone since its type was read is taken as
			// it is now, or left out.
			if f, ok := facts[t.ID]; ok && isAsked[t.Type] {
				out[i] = append(out[i], f)
			}
		}
	}
	return out, nil
}

// asksOf reports whether a question asks about something of something
// ("Hadrik's friend", "the sister of …").
func asksOf(text string) bool {
	t := " " + strings.ToLower(text) + " "
	return strings.Contains(t, "'s ") || strings.Contains(t, "’s ") || strings.Contains(t, " of ")
}

// Weights of a relationship hop: the entity reached gets hopGain times the
// weight of the one it was reached from, which keeps hopKeep of its own.
var hopGain, hopKeep = 2.0, 0.5

// otherEnd is the end of rel that is not from.
func otherEnd(rel memory.Relationship, from string) string {
	if rel.TargetID == from {
		return rel.SourceID
	}
	return rel.TargetID
}
