package correction

import (
	"cmp"
	"slices"
	"strings"
)

// hunk is one changed region between two token sequences: a[ai:aj] became
// b[bi:bj].
type hunk struct{ ai, aj, bi, bj int }

// diffTokens aligns two token sequences on their normalized words (longest
// common subsequence) and returns the regions that differ. Case and
// punctuation are not words, so changes to them are no hunks.
func diffTokens(a, b []token) []hunk {
	n, m := len(a), len(b)
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, n+1)
	for i := range lcs {
		lcs[i] = make([]int, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i].norm == b[j].norm {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []hunk
	i, j := 0, 0
	open := false
	var h hunk
	for i < n || j < m {
		if i < n && j < m && a[i].norm == b[j].norm {
			if open {
				h.aj, h.bj = i, j
				out = append(out, h)
				open = false
			}
			i++
			j++
			continue
		}
		if !open {
			h = hunk{ai: i, bi: j}
			open = true
		}
		if j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]) {
			j++
		} else {
			i++
		}
	}
	if open {
		h.aj, h.bj = n, m
		out = append(out, h)
	}
	return out
}

// spelling is one way to write an entity, for checking stage-2 proposals.
type spelling struct {
	entity int
	text   string
}

// verifyReply keeps the changes of an LLM reply that are declared, replace
// only candidate words, and write a known name of the declared entity. It
// returns the stage-2 substitutions (offsets in text) and the rejected
// hunks' descriptions.
func verifyReply(text string, toks []token, candidate []bool, reply llmReply, es []Entity) ([]Substitution, []string) {
	btoks := tokenize(reply.Text)
	names := map[string][]spelling{} // normalized spelling → entities
	for i, e := range es {
		for _, s := range append([]string{e.Name}, e.Aliases...) {
			k := normPhrase(s)
			if k != "" {
				names[k] = append(names[k], spelling{entity: i, text: strings.TrimSpace(s)})
			}
		}
	}
	declared := map[[2]string]string{} // (original, replacement) normalized → entity id
	for _, s := range reply.Substitutions {
		declared[[2]string{normPhrase(s.Original), normPhrase(s.Replacement)}] = s.EntityID
	}
	var subs []Substitution
	var rejected []string
	for _, h := range diffTokens(toks, btoks) {
		orig := joinNorms(toks[h.ai:h.aj])
		repl := joinNorms(btoks[h.bi:h.bj])
		why := ""
		var written string
		var entityID string
		switch id, ok := declared[[2]string{orig, repl}]; {
		case h.aj == h.ai:
			why = "inserted words"
		case h.bj == h.bi:
			why = "deleted words"
		case !ok:
			why = "undeclared change"
		case slices.Contains(candidate[h.ai:h.aj], false):
			why = "changed a word that was not a candidate"
		default:
			for _, sp := range names[repl] {
				if es[sp.entity].ID == id {
					written, entityID = sp.text, id
				}
			}
			if written == "" {
				why = "replacement is not a name of entity " + id
			}
		}
		if why != "" {
			rejected = append(rejected, why+": "+quoteHunk(orig, repl))
			continue
		}
		start, end := toks[h.ai].start, toks[h.aj-1].end
		subs = append(subs, Substitution{Start: start, End: end, Original: text[start:end], Replacement: written,
			EntityID: entityID, Score: 1, Stage: StageLLM, Method: MethodLLM})
	}
	return subs, rejected
}

func quoteHunk(orig, repl string) string { return "\"" + orig + "\" → \"" + repl + "\"" }

// normPhrase normalizes a phrase word by word, as tokenize reads it.
func normPhrase(s string) string { return joinNorms(tokenize(s)) }

func joinNorms(ts []token) string {
	ws := make([]string, len(ts))
	for i, t := range ts {
		ws[i] = t.norm
	}
	return strings.Join(ws, " ")
}

// apply writes subs (offsets in text, sorted, not overlapping) into text.
func apply(text string, subs []Substitution) string {
	var b strings.Builder
	last := 0
	for _, s := range subs {
		b.WriteString(text[last:s.Start])
		b.WriteString(s.Replacement)
		last = s.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// toRaw maps an offset in the stage-1 text back to the raw text, given the
// stage-1 substitutions; off must not fall inside one of them.
func toRaw(off int, stage1 []Substitution) int {
	delta := 0
	for _, s := range stage1 {
		s1Start := s.Start + delta
		if s1Start >= off {
			break
		}
		delta += len(s.Replacement) - (s.End - s.Start)
	}
	return off - delta
}

func sortSubs(subs []Substitution) {
	slices.SortFunc(subs, func(a, b Substitution) int { return cmp.Compare(a.Start, b.Start) })
}
