package correction

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Limits of the speech-to-text services keyword boosting targets.
const (
	// DeepgramKeytermTokens is the token budget of Deepgram's keyterm
	// prompting (Nova-3); a longer list stops the stream.
	DeepgramKeytermTokens = 500
	// DeepgramMaxKeywords is the most keywords Deepgram's older keywords
	// parameter (Nova-2 and earlier) takes without a custom model.
	DeepgramMaxKeywords = 100
	// WhisperPromptTokens is the length of the prompt Whisper models
	// condition on; anything before the last 224 tokens is dropped.
	WhisperPromptTokens = 224
)

// Salience says which entities matter now.
type Salience struct {
	// Scene lists the ids of the entities in the current scene.
	Scene []string
	// LastMentioned maps entity ids to when they were last mentioned.
	LastMentioned map[string]time.Time
}

// Tier is how salient a ranked entity is.
type Tier int

// Tiers, most salient first.
const (
	TierScene Tier = iota
	TierRecent
	TierOther
)

// Ranked is an entity in keyword-boosting order.
type Ranked struct {
	Entity
	Tier Tier
}

// Rank orders entities for keyword boosting: scene entities first, then
// entities mentioned before, each group most recently mentioned first; the
// rest keep their order.
func Rank(es []Entity, s Salience) []Ranked {
	scene := map[string]bool{}
	for _, id := range s.Scene {
		scene[id] = true
	}
	out := make([]Ranked, len(es))
	for i, e := range es {
		t := TierOther
		switch {
		case scene[e.ID]:
			t = TierScene
		case !s.LastMentioned[e.ID].IsZero():
			t = TierRecent
		}
		out[i] = Ranked{Entity: e, Tier: t}
	}
	slices.SortStableFunc(out, func(a, b Ranked) int {
		if c := cmp.Compare(a.Tier, b.Tier); c != 0 {
			return c
		}
		return s.LastMentioned[b.ID].Compare(s.LastMentioned[a.ID])
	})
	return out
}

// estimateTokens is a conservative token count for a name: invented names
// split into short pieces, about three characters each.
func estimateTokens(s string) int { return max(1, (len(s)+2)/3) }

// spellings lists an entity's name and aliases, trimmed.
func spellings(e Entity) []string {
	out := []string{strings.TrimSpace(e.Name)}
	for _, a := range e.Aliases {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// DeepgramKeyterms returns the names and aliases to send as Deepgram
// keyterm parameters, most salient first, within maxTokens (estimated; use
// DeepgramKeytermTokens).
func DeepgramKeyterms(r []Ranked, maxTokens int) []string {
	var out []string
	seen := map[string]bool{}
	used := 0
	for _, e := range r {
		for _, s := range spellings(e.Entity) {
			k := strings.ToLower(s)
			if s == "" || seen[k] {
				continue
			}
			n := estimateTokens(s)
			if used+n > maxTokens {
				return out
			}
			seen[k] = true
			used += n
			out = append(out, s)
		}
	}
	return out
}

// DeepgramKeywords returns Deepgram's older keywords parameters,
// "Word:intensifier", at most max, most salient first. Keywords are single
// words without punctuation; common English words are left out (boosting
// them does nothing). Scene entities get intensifier 3, recently mentioned
// ones 2, the rest 1.
func DeepgramKeywords(r []Ranked, max int) []string {
	words := newWordList(English, nil)
	var out []string
	seen := map[string]bool{}
	for _, e := range r {
		boost := 3 - int(e.Tier)
		for _, s := range spellings(e.Entity) {
			for _, w := range strings.Fields(s) {
				w = strings.Map(func(r rune) rune {
					if isWordRune(r) {
						return r
					}
					return -1
				}, w)
				k := strings.ToLower(w)
				if len(w) < 3 || seen[k] || words.isCommon(k) {
					continue
				}
				if len(out) == max {
					return out
				}
				seen[k] = true
				out = append(out, fmt.Sprintf("%s:%d", w, boost))
			}
		}
	}
	return out
}

// WhisperPrompt returns a prompt listing the names, most salient first,
// that fits maxTokens (estimated; use WhisperPromptTokens). Whisper-style
// models spell names the way the prompt does.
func WhisperPrompt(r []Ranked, maxTokens int) string {
	var b strings.Builder
	used := 0
	seen := map[string]bool{}
	for _, e := range r {
		for _, s := range spellings(e.Entity) {
			k := strings.ToLower(s)
			if s == "" || seen[k] {
				continue
			}
			n := estimateTokens(s) + 1 // the separator
			if used+n > maxTokens {
				return finishPrompt(&b)
			}
			seen[k] = true
			used += n
			if b.Len() > 0 {
				b.WriteString(", ")
			}
			b.WriteString(s)
		}
	}
	return finishPrompt(&b)
}

func finishPrompt(b *strings.Builder) string {
	if b.Len() == 0 {
		return ""
	}
	return b.String() + "."
}
