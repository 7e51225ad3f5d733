package embed

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
)

// Feature weights of the offline embedder. Whole words carry most of the
// meaning; word pairs reward shared phrases; character n-grams let spelling
// variants of a name ("Vaelith", "Vaeliths", "Vaelyth") land near each other.
const (
	wordWeight   = 1.0
	bigramWeight = 0.5
	ngramWeight  = 0.45
)

// Offline is the built-in embedder: hashed word, word-pair and character
// n-gram features folded into a vector of the configured dimension and
// L2-normalised. The same text always gives the same vector, on any
// machine. Words are split, stop words dropped and endings trimmed in the
// embedder's language: English unless [Offline.ForLanguage] chose
// another (German). The zero value is not usable; call [NewOffline].
type Offline struct {
	dims int
	lang *wordRules
}

// NewOffline returns an offline embedder of dims dimensions, in English.
func NewOffline(dims int) (*Offline, error) {
	if dims < 8 || dims > 16000 {
		return nil, fmt.Errorf("offline embedder: dimension must be within 8..16000, got %d", dims)
	}
	return &Offline{dims: dims, lang: &englishRules}, nil
}

// ForLanguage returns the embedder for a campaign in language lang: a
// code ("de", "de-AT") or a text-search configuration's name ("german").
// German has its own stop words and endings; every other language, and
// "", gets English's. Texts and the questions about them must be embedded
// in the same language.
func (o *Offline) ForLanguage(lang string) Embedder {
	return &Offline{dims: o.dims, lang: rulesFor(lang)}
}

// Dimensions is the vector length.
func (o *Offline) Dimensions() int { return o.dims }

// MaxBatch is large: the offline embedder has no request size limit.
func (o *Offline) MaxBatch() int { return 4096 }

// Embed returns one normalised vector per text. It fails only when ctx is
// done.
func (o *Offline) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = o.vector(t)
	}
	return out, nil
}

func (o *Offline) vector(text string) []float32 {
	feats := map[string]float64{}
	words := o.lang.words(text)
	for i, w := range words {
		feats["w:"+w] += wordWeight
		if i > 0 {
			feats["b:"+words[i-1]+" "+w] += bigramWeight
		}
		grams := ngrams(w)
		per := ngramWeight / math.Sqrt(float64(len(grams)))
		for _, g := range grams {
			feats["g:"+g] += per
		}
	}
	if len(feats) == 0 {
		// Text without words still gets a unit vector, so cosine distances
		// stay defined.
		feats["empty"] = 1
	}
	v := make([]float64, o.dims)
	for f, w := range feats {
		h := fnv.New64a()
		h.Write([]byte(f))
		sum := h.Sum64()
		idx := int(sum % uint64(o.dims))
		sign := 1.0
		if sum>>63 == 1 {
			sign = -1
		}
		// Square root damps repeated words: a chunk that names the smith
		// ten times is not ten times more about him.
		v[idx] += sign * math.Sqrt(w)
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	norm = math.Sqrt(norm)
	out := make([]float32, o.dims)
	if norm == 0 {
		// Every feature cancelled out in the folding; fall back to one axis.
		out[0] = 1
		return out
	}
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// ngrams returns the character 3- and 4-grams of a word padded with
// boundary marks.
func ngrams(w string) []string {
	r := []rune("<" + w + ">")
	var out []string
	for n := 3; n <= 4; n++ {
		for i := 0; i+n <= len(r); i++ {
			out = append(out, string(r[i:i+n]))
		}
	}
	if len(out) == 0 {
		out = append(out, string(r))
	}
	return out
}

// Words splits text into lower-case content words: stop words dropped,
// possessives and plural endings trimmed (English). Retrieval uses it to
// match queries against names too.
func Words(text string) []string { return englishRules.words(text) }

// WordsIn is [Words] in language lang (see [Offline.ForLanguage]).
func WordsIn(lang, text string) []string { return rulesFor(lang).words(text) }

// wordRules are a language's stop words and stemmer.
type wordRules struct {
	stop map[string]bool
	stem func(string) string
}

var (
	englishRules = wordRules{stop: stopWords, stem: Stem}
	germanRules  = wordRules{stop: germanStopWords, stem: stemGerman}
)

// rulesFor returns the word rules of lang (English unless it is German).
func rulesFor(lang string) *wordRules {
	l := strings.ToLower(strings.TrimSpace(lang))
	if base, _, ok := strings.Cut(l, "-"); ok {
		l = base
	}
	if l == "de" || l == "german" || l == "deutsch" {
		return &germanRules
	}
	return &englishRules
}

func (wr *wordRules) words(text string) []string {
	fields := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	out := fields[:0]
	for _, f := range fields {
		f = strings.Trim(f, "'")
		f = strings.TrimSuffix(f, "'s")
		if i := strings.IndexByte(f, '\''); i >= 0 {
			f = f[:i]
		}
		if f == "" || wr.stop[f] {
			continue
		}
		out = append(out, wr.stem(f))
	}
	return out
}

// IsStopWord reports whether w (lower case) is a word without meaning of
// its own for retrieval ("the", "who", "said", …).
func IsStopWord(w string) bool { return stopWords[w] }

// Stem trims common English inflections from a lower-case word, so that
// "forges", "forged" and "forging" share a feature. It is deliberately
// light: names must survive it.
func Stem(w string) string {
	n := len(w)
	switch {
	case n > 5 && strings.HasSuffix(w, "ing"):
		return w[:n-3]
	case n > 4 && strings.HasSuffix(w, "ies"):
		return w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		return w[:n-2]
	case n > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "sses")):
		return w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		return w[:n-1]
	}
	return w
}

// stopWords carry no meaning of their own for retrieval.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if then else of to in on at by for with from into onto
		about as is are was were be been being am do does did doing have has had having it its this that these those
		i me my mine we us our ours you your yours he him his she her hers they them their theirs what which who whom
		whose when where why how all any some no not nor so too very can could will would shall should may might must
		there here just than also out up down over under again once only own same such both each few more most other
		s t don now oh ok okay yeah yes hey well let lets get got go going went gone say said says tell told know knew
		one thing things like really right`) {
		m[w] = true
	}
	return m
}()
