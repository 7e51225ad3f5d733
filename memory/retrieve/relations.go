package retrieve

import (
	"context"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/ppr"
)

// relationHints are words a question uses for a relationship whose type
// names it differently: "the harbourmaster's sister" follows SIBLING_OF.
// Keys are words of relationship types (stemmed); values are question
// words (stemmed).
var relationHints = map[string][]string{
	"sibling":    {"sister", "brother", "sibling"},
	"parent":     {"mother", "father", "parent"},
	"child":      {"son", "daughter", "child"},
	"married":    {"wife", "husband", "spouse"},
	"apprentice": {"apprentice", "student", "pupil", "train", "trainee"},
	"lead":       {"leader", "led", "head", "commander", "command", "chief", "boss"},
	"hir":        {"hire", "employ", "employer", "paid", "pay"},
	"work":       {"work", "employee", "servant", "serve"},
	"captain":    {"captain", "skipper"},
	"own":        {"owner", "belong"},
	"forg":       {"forge", "forg", "made", "maker", "smith", "swordsmith", "craft"},
	"locat":      {"where", "live", "locat"},
	"know":       {"friend", "acquaintance", "correspondent"},
	"sail":       {"sail", "ship"},
	"caus":       {"caus", "lit", "light", "start"},
	"member":     {"member", "cultist", "join"},
	"rule":       {"ruler", "queen", "king"},
	"gave":       {"gift", "given", "gave"},
	"host":       {"party", "ball", "host"},
}

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

// askedRelations returns the relationship words a question uses, directly
// or through relationHints.
func askedRelations(text string) map[string]bool {
	asked := map[string]bool{}
	for _, w := range embed.Words(text) {
		asked[w] = true
		for rel, hints := range relationHints {
			for _, h := range hints {
				if h = embed.Stem(h); w == h || strings.HasPrefix(w, h) {
					asked[embed.Stem(rel)] = true
				}
			}
		}
	}
	return asked
}

// expandSeeds follows, from the named entities, the relationships the
// question asks about ("the sister of …", "the tower … sailed to"), up to
// two hops, and adds the entities reached as seeds. It also returns the
// facts it followed.
func (r *Retriever) expandSeeds(ctx context.Context, text string, seeds []ppr.Seed) ([]ppr.Seed, []memory.Relationship, error) {
	asked := askedRelations(text)
	out := append([]ppr.Seed(nil), seeds...)
	have := map[string]bool{}
	for _, s := range out {
		have[s.EntityID] = true
	}
	var followed []memory.Relationship
	frontier := make([]int, len(out))
	for i := range out {
		frontier[i] = i
	}
	for range 2 {
		var next []int
		for _, i := range frontier {
			from := out[i].EntityID
			rels, err := r.camp.Graph().Relationships(ctx, from, memory.TraversalOpts{Limit: 200})
			if err != nil {
				return nil, nil, err
			}
			reached := false
			for _, rel := range rels {
				if !matchesAny(relationWords(rel.Type), asked) {
					continue
				}
				other := rel.TargetID
				if other == from {
					other = rel.SourceID
				}
				followed = append(followed, rel)
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
			}
		}
		frontier = next
	}
	return out, followed, nil
}

// Weights of a relationship hop: the entity reached gets hopGain times the
// weight of the one it was reached from, which keeps hopKeep of its own.
var hopGain, hopKeep = 2.0, 0.5

func matchesAny(words []string, set map[string]bool) bool {
	for _, w := range words {
		if set[w] {
			return true
		}
	}
	return false
}
