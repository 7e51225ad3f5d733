package correction

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// DefaultLowConfidence is the speech-to-text word confidence below which
// stage 2 may change a word.
const DefaultLowConfidence = 0.5

// Utterance is one speech-to-text result.
type Utterance struct {
	Text string
	// Words are the recogniser's words with their confidences, in order,
	// if it reports them. When their count differs from the words of Text
	// they are ignored.
	Words []stt.Word
	// InPlay holds the ids of the entities in play (present in the scene
	// or mentioned recently), or is nil when unknown. See [Evidence].
	InPlay map[string]bool
}

// Pipeline corrects transcripts: stage 1 (the phonetic [Matcher]) inline,
// stage 2 (an optional [LLMCorrector]) when the caller asks, typically in
// the background. It is safe for concurrent use.
type Pipeline struct {
	matcher  *Matcher
	llm      *LLMCorrector
	lowConf  float64
	log      *slog.Logger
	entities atomic.Pointer[PreparedEntities]
	names    atomic.Pointer[nameIndex]
	pending  []Entity
	found    nameMemo
}

// Option configures a Pipeline.
type Option func(*Pipeline) error

// WithMatcher sets the stage-1 matcher (default: NewMatcher with default
// thresholds).
func WithMatcher(m *Matcher) Option {
	return func(p *Pipeline) error {
		if m == nil {
			return errors.New("nil matcher")
		}
		p.matcher = m
		return nil
	}
}

// WithLLM enables stage 2.
func WithLLM(c *LLMCorrector) Option {
	return func(p *Pipeline) error { p.llm = c; return nil }
}

// WithLowConfidence sets the word confidence below which stage 2 may change
// a word (default 0.5).
func WithLowConfidence(t float64) Option {
	return func(p *Pipeline) error {
		if t < 0 || t > 1 {
			return fmt.Errorf("low-confidence threshold %v: %w", t, ErrThreshold)
		}
		p.lowConf = t
		return nil
	}
}

// WithEntities sets the names to restore.
func WithEntities(es []Entity) Option {
	return func(p *Pipeline) error { p.pending = es; return nil }
}

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option {
	return func(p *Pipeline) error { p.log = l; return nil }
}

// NewPipeline returns a pipeline configured by opts.
func NewPipeline(opts ...Option) (*Pipeline, error) {
	p := &Pipeline{lowConf: DefaultLowConfidence, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		if err := o(p); err != nil {
			return nil, fmt.Errorf("configuring the correction pipeline: %w", err)
		}
	}
	if p.matcher == nil {
		m, err := NewMatcher()
		if err != nil {
			return nil, err
		}
		p.matcher = m
	}
	if err := p.SetEntities(p.pending); err != nil {
		return nil, fmt.Errorf("configuring the correction pipeline: %w", err)
	}
	p.pending = nil
	return p, nil
}

// SetEntities replaces the names to restore. Utterances being corrected
// meanwhile finish with the old list.
func (p *Pipeline) SetEntities(es []Entity) error {
	prep, err := p.matcher.PrepareEntities(es)
	if err != nil {
		return err
	}
	ix := newNameIndex(es)
	p.entities.Store(prep)
	p.names.Store(&ix)
	return nil
}

// Entities returns the names the pipeline restores.
func (p *Pipeline) Entities() []Entity {
	if prep := p.entities.Load(); prep != nil {
		return prep.Entities()
	}
	return nil
}

// HasLLM reports whether stage 2 is configured.
func (p *Pipeline) HasLLM() bool { return p.llm != nil }

// Correct runs stage 1, weighing what the utterance says beyond its words:
// the names in play and the recogniser's word confidences ([Evidence]).
func (p *Pipeline) Correct(u Utterance) Result {
	return p.matcher.MatchEvidence(u.Text, p.entities.Load(), p.evidence(u))
}

// evidence is the Evidence of u, or nil when it carries none.
func (p *Pipeline) evidence(u Utterance) *Evidence {
	ev := &Evidence{InPlay: u.InPlay, LowConfidence: p.lowConf}
	if len(u.Words) > 0 {
		if spans := WordSpans(u.Text); len(spans) == len(u.Words) {
			ev.Confidences = make([]float64, len(u.Words))
			for i, w := range u.Words {
				ev.Confidences[i] = w.Confidence
			}
		}
	}
	if ev.InPlay == nil && ev.Confidences == nil {
		return nil
	}
	return ev
}

// Refine runs stage 2 on an utterance and its stage-1 result r. Only words
// the recogniser was unsure of (confidence below the threshold) and that
// stage 1 left alone are candidates; without confidences, every word that
// is not common English, and its neighbours, is. The model's reply is
// checked word by word against the substitutions it declares; every other
// change is reverted. When the model fails, answers late or answers
// nonsense, Refine returns r and an error saying why.
func (p *Pipeline) Refine(ctx context.Context, u Utterance, r Result) (Result, error) {
	if p.llm == nil {
		return r, nil
	}
	prep := p.entities.Load()
	if prep == nil || prep.Len() == 0 {
		return r, nil
	}
	if r.RawText == "" && r.Text == "" {
		r = Result{Text: u.Text, RawText: u.Text}
	}
	toks := tokenize(r.Text)
	candidate := p.candidates(u, r, toks)
	var words []string
	for i, t := range toks {
		if candidate[i] {
			words = append(words, r.Text[t.start:t.end])
		}
	}
	if len(words) == 0 {
		return r, nil
	}
	es := prep.entities
	reply, err := p.llm.propose(ctx, r.Text, words, es)
	if err != nil {
		return r, fmt.Errorf("stage-2 correction (kept the stage-1 text): %w", err)
	}
	subs, rejected := verifyReply(r.Text, toks, candidate, reply, es)
	for _, why := range rejected {
		p.log.Warn("correction: reverted an LLM change", "text", r.Text, "reason", why)
	}
	if len(subs) == 0 {
		return r, nil
	}
	out := Result{Text: apply(r.Text, subs), RawText: r.RawText}
	out.Substitutions = append(out.Substitutions, r.Substitutions...)
	for _, s := range subs {
		s.Start, s.End = toRaw(s.Start, r.Substitutions), toRaw(s.End, r.Substitutions)
		s.Original = r.RawText[s.Start:s.End]
		out.Substitutions = append(out.Substitutions, s)
	}
	sortSubs(out.Substitutions)
	return out, nil
}

// candidates marks the tokens of r.Text stage 2 may change.
func (p *Pipeline) candidates(u Utterance, r Result, toks []token) []bool {
	cand := make([]bool, len(toks))
	// Tokens stage 1 produced are settled.
	settled := make([]bool, len(toks))
	delta := 0
	for _, s := range r.Substitutions {
		s1Start := s.Start + delta
		s1End := s1Start + len(s.Replacement)
		for i, t := range toks {
			if t.start < s1End && t.end > s1Start {
				settled[i] = true
			}
		}
		delta += len(s.Replacement) - (s.End - s.Start)
	}
	rawToks := tokenize(r.RawText)
	confs := len(u.Words) > 0 && len(u.Words) == len(rawToks)
	if confs {
		for i, t := range toks {
			if settled[i] {
				continue
			}
			// Map back to the raw word at the same offset.
			raw := toRaw(t.start, r.Substitutions)
			for k, rt := range rawToks {
				if rt.start == raw {
					cand[i] = u.Words[k].Confidence < p.lowConf
				}
			}
		}
		return cand
	}
	words := p.matcher.words
	for i, t := range toks {
		if settled[i] || words.isCommon(t.norm) {
			continue
		}
		for k := max(i-1, 0); k <= min(i+1, len(toks)-1); k++ {
			if !settled[k] && !words.isStop(toks[k].norm) {
				cand[k] = true
			}
		}
	}
	return cand
}
