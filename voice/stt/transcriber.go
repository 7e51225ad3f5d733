package stt

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Heard is one transcribed utterance.
type Heard struct {
	UserID string
	// Start and End bound the speech.
	Start, End time.Time
	// Text is the raw text, before any correction.
	Text       string
	Transcript Transcript
	// Submitted is when the utterance was handed over (end of speech
	// detected) and Final when the recogniser answered.
	Submitted, Final time.Time
	// Err is the recogniser's failure; Text is empty then.
	Err error
}

// Keyterms gives the current keyword-boosting list (the campaign's names
// from its knowledge graph). It is asked once per utterance.
type Keyterms interface {
	Keyterms() []string
}

// KeytermList is a fixed Keyterms.
type KeytermList []string

// Keyterms returns the list.
func (k KeytermList) Keyterms() []string { return k }

// Transcriber runs a Recognizer on utterances as lanes finish them, a few
// at a time, and reports each result, failures included: a failing
// provider costs that utterance its text, never the lane.
type Transcriber struct {
	rec      Recognizer
	terms    Keyterms
	language string
	out      func(Heard)
	clk      clock.Clock
	log      *slog.Logger

	ctx     context.Context
	cancel  context.CancelFunc
	sem     chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	closed  bool
	streams map[string]*liveStream // open streams by user
}

// liveStream feeds one open utterance to a streaming recogniser. Its
// goroutine opens the stream, sends what is queued, and on end finishes
// it; when the stream cannot be opened or fails, the utterance is
// transcribed whole instead.
type liveStream struct {
	mu     sync.Mutex
	queue  [][]int16
	wake   chan struct{} // something was queued, or the utterance ended
	ended  bool
	utt    audio.Utterance
	failed error
}

// TranscriberConfig configures a Transcriber.
type TranscriberConfig struct {
	// Keyterms boosts recognition (nil: none).
	Keyterms Keyterms
	// Language is passed in Hints.
	Language string
	// Concurrency bounds simultaneous recognitions (4).
	Concurrency int
	// Clock stamps Submitted and Final (the system clock).
	Clock clock.Clock
	// Logger receives failures (discarded when nil).
	Logger *slog.Logger
}

// NewTranscriber returns a transcriber reporting to out. out is called
// from the transcriber's goroutines, one call at a time per utterance but
// possibly concurrently across utterances.
func NewTranscriber(rec Recognizer, out func(Heard), cfg TranscriberConfig) *Transcriber {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 4
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Transcriber{rec: rec, terms: cfg.Keyterms, language: cfg.Language, out: out,
		clk: clock.OrReal(cfg.Clock), log: cfg.Logger, ctx: ctx, cancel: cancel,
		sem: make(chan struct{}, cfg.Concurrency), streams: map[string]*liveStream{}}
}

func (t *Transcriber) hints() Hints {
	h := Hints{Language: t.language}
	if t.terms != nil {
		h.Keyterms = t.terms.Keyterms()
	}
	return h
}

// Audio streams an open utterance's audio to the recogniser while the
// player speaks, when it is a [StreamRecognizer]; it is the OnAudio
// handler of an audio.Router. With a StreamRecognizer, the final transcript
// is ready soon after the end of speech instead of after the whole
// utterance is uploaded. It does not block.
func (t *Transcriber) Audio(c audio.Chunk) {
	st, ok := t.rec.(StreamRecognizer)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	ls := t.streams[c.UserID]
	if c.Start {
		if ls != nil { // the previous one never ended: drop it
			ls.end(audio.Utterance{}, true)
		}
		ls = &liveStream{wake: make(chan struct{}, 1)}
		t.streams[c.UserID] = ls
		t.wg.Add(1)
		go t.stream(st, ls)
	}
	if ls == nil || len(c.Samples) == 0 {
		return
	}
	ls.mu.Lock()
	ls.queue = append(ls.queue, append([]int16(nil), c.Samples...))
	ls.mu.Unlock()
	ls.signal()
}

func (ls *liveStream) signal() {
	select {
	case ls.wake <- struct{}{}:
	default:
	}
}

// end marks the utterance over; abandon drops it without a result.
func (ls *liveStream) end(u audio.Utterance, abandon bool) {
	ls.mu.Lock()
	ls.ended, ls.utt = true, u
	if abandon {
		ls.failed = context.Canceled
	}
	ls.mu.Unlock()
	ls.signal()
}

// stream runs one live stream until its utterance ends.
func (t *Transcriber) stream(st StreamRecognizer, ls *liveStream) {
	defer t.wg.Done()
	s, err := st.OpenStream(t.ctx, t.hints())
	if err != nil {
		t.log.Warn("speech stream unavailable, transcribing whole utterances", "err", err)
	}
	if s != nil {
		defer s.Close()
	}
	for {
		select {
		case <-ls.wake:
		case <-t.ctx.Done():
			return
		}
		ls.mu.Lock()
		queue, ended, u, failed := ls.queue, ls.ended, ls.utt, ls.failed
		ls.queue = nil
		ls.mu.Unlock()
		if failed == context.Canceled {
			return
		}
		for _, q := range queue {
			if err == nil {
				err = s.Send(q)
			}
		}
		if !ended {
			continue
		}
		submitted := t.clk.Now()
		var tr Transcript
		if err == nil {
			tr, err = s.Finish(t.ctx)
		}
		if err != nil {
			// The stream failed: transcribe the utterance whole.
			t.log.Warn("speech stream failed, transcribing the utterance whole", "user", u.UserID, "err", err)
			t.transcribe(u, submitted)
			return
		}
		t.report(u, tr, nil, submitted)
		return
	}
}

// Submit transcribes u in the background; it does not block. It is the
// OnUtterance handler of an audio.Router. After Close it does nothing.
func (t *Transcriber) Submit(u audio.Utterance) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return
	}
	submitted := t.clk.Now()
	if ls := t.streams[u.UserID]; ls != nil {
		delete(t.streams, u.UserID)
		ls.end(u, false)
		return
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		t.transcribe(u, submitted)
	}()
}

// transcribe runs the recogniser on a whole utterance and reports it.
func (t *Transcriber) transcribe(u audio.Utterance, submitted time.Time) {
	select {
	case t.sem <- struct{}{}:
		defer func() { <-t.sem }()
	case <-t.ctx.Done():
	}
	tr, err := t.rec.Transcribe(t.ctx, u.Audio, t.hints())
	t.report(u, tr, err, submitted)
}

func (t *Transcriber) report(u audio.Utterance, tr Transcript, err error, submitted time.Time) {
	if err != nil {
		t.log.Warn("speech recognition failed", "user", u.UserID, "start", u.Start, "err", err)
	} else if tr.Text == "" {
		return // no speech after all
	}
	t.out(Heard{UserID: u.UserID, Start: u.Start, End: u.End, Text: tr.Text, Transcript: tr,
		Submitted: submitted, Final: t.clk.Now(), Err: err})
}

// Close stops taking utterances and waits for those submitted to be
// transcribed and reported; when ctx ends first it cancels them (they are
// reported with the cancellation as error) and returns ctx's error after
// they have stopped.
func (t *Transcriber) Close(ctx context.Context) error {
	t.mu.Lock()
	t.closed = true
	for id, ls := range t.streams {
		ls.end(audio.Utterance{}, true) // never finished: nothing to report
		delete(t.streams, id)
	}
	t.mu.Unlock()
	done := make(chan struct{})
	go func() { t.wg.Wait(); close(done) }()
	select {
	case <-done:
		t.cancel()
		return nil
	case <-ctx.Done():
		t.cancel()
		<-done
		return ctx.Err()
	}
}
