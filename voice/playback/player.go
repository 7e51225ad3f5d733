package playback

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// Writer sends one Opus frame now (voice/conn's Conn is one).
type Writer interface {
	WriteOpus(frame []byte) error
}

// maxLate is how far behind schedule the pump may fall before it starts a
// new schedule instead of sending frames back to back to catch up (after
// a stall, or a gap between sentences).
const maxLate = 60 * time.Millisecond

// Player plays speech into a Writer. One Play runs at a time; Interrupt
// and OnSpeech may be called from any goroutine.
type Player struct {
	w        Writer
	clk      clock.Clock
	log      *slog.Logger
	bitrate  int
	prefetch int

	mu      sync.Mutex
	playing bool
	stop    chan struct{}
	stopped bool
	busy    sync.Mutex // held by Play
}

// Option configures a Player.
type Option func(*Player)

// WithClock sets the clock frames are paced on (the system clock).
func WithClock(c clock.Clock) Option { return func(p *Player) { p.clk = c } }

// WithLogger sets where synthesis failures are logged.
func WithLogger(l *slog.Logger) Option { return func(p *Player) { p.log = l } }

// WithBitrate sets the Opus bitrate (DefaultBitrate).
func WithBitrate(b int) Option { return func(p *Player) { p.bitrate = b } }

// WithPrefetch sets how many sentences may be synthesised ahead of the one
// playing (2).
func WithPrefetch(n int) Option { return func(p *Player) { p.prefetch = n } }

// New returns a player writing to w.
func New(w Writer, opts ...Option) (*Player, error) {
	if w == nil {
		return nil, errors.New("playback: nil writer")
	}
	p := &Player{w: w, bitrate: DefaultBitrate, prefetch: 2}
	for _, o := range opts {
		o(p)
	}
	p.clk = clock.OrReal(p.clk)
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	if p.prefetch < 0 {
		return nil, fmt.Errorf("playback: prefetch %d is negative", p.prefetch)
	}
	if err := checkBitrate(p.bitrate); err != nil {
		return nil, fmt.Errorf("playback: %w", err)
	}
	return p, nil
}

// Result says what a Play did.
type Result struct {
	// Said are the sentences played to the end: what the players heard.
	Said []string
	// Cut is the sentence playing when playback was interrupted.
	Cut string
	// Unsaid are sentences taken from the input but never started.
	Unsaid []string
	// Failed are sentences whose synthesis failed (skipped).
	Failed []string
	// Interrupted is set when Interrupt or a barge-in stopped playback.
	Interrupted bool
	// FirstAudio is when the first sentence's audio was ready, and
	// FirstFrame when its first frame was sent (zero if none).
	FirstAudio, FirstFrame time.Time
	// Frames counts the speech frames sent (not the silence frames).
	Frames int
}

// ErrInterrupted is not returned by Play (an interrupted Play succeeds);
// it is the cause of the context given to the synthesizer when playback
// stops early.
var ErrInterrupted = errors.New("playback interrupted")

// chunk is one sentence's speech as it arrives: the synthesis goroutine
// appends samples and the player takes each frame as soon as the samples
// it needs are there, so a streaming synthesizer's first frames play while
// the rest of the sentence is still on its way. Frames are resampled to
// 48 kHz and encoded as they are sent; a frame is computed from the same
// input samples however the sentence arrived.
type chunk struct {
	text string
	more chan struct{} // a token after each append and at the end

	mu    sync.Mutex
	pcm   []int16
	rate  int                   // 0 until the first samples
	rs    *audio.RangeResampler // nil when rate is SampleRate
	done  bool
	err   error
	ready time.Time // when the first samples arrived
}

func newChunk(text string) *chunk { return &chunk{text: text, more: make(chan struct{}, 1)} }

// add appends samples at rate that arrived at now.
func (c *chunk) add(now time.Time, rate int, s []int16) error {
	if rate <= 0 {
		return fmt.Errorf("synthesizer returned audio at %d Hz", rate)
	}
	c.mu.Lock()
	switch {
	case c.rate == 0:
		c.rate, c.ready = rate, now
		if rate != SampleRate {
			c.rs = audio.NewRangeResampler(rate, SampleRate)
		}
	case rate != c.rate:
		c.mu.Unlock()
		return fmt.Errorf("synthesizer changed the rate from %d to %d Hz within a sentence", c.rate, rate)
	}
	c.pcm = append(c.pcm, s...)
	c.mu.Unlock()
	c.signal()
	return nil
}

// finish marks the sentence complete, or failed with err.
func (c *chunk) finish(err error) {
	c.mu.Lock()
	c.done, c.err = true, err
	c.mu.Unlock()
	c.signal()
}

func (c *chunk) signal() {
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// frame returns the frame of output samples starting at i (in buf when
// resampled). more is set when the samples it needs have not arrived
// yet; a nil frame without more is the end of the sentence.
func (c *chunk) frame(buf []int16, i int) (f []int16, more bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rate == 0 {
		return nil, !c.done
	}
	n := len(c.pcm) // output samples so far
	if c.rs != nil {
		n = c.rs.Len(len(c.pcm))
	}
	m := FrameSamples
	switch {
	case c.done && i >= n:
		return nil, false
	case c.done:
		m = min(m, n-i)
	case c.rs == nil && i+m > len(c.pcm):
		return nil, true
	case c.rs != nil && c.rs.Need(i+m) > len(c.pcm):
		// Not all of the frame's taps have arrived: computed now, its
		// last samples would differ from the whole sentence's.
		return nil, true
	}
	if c.rs == nil {
		// Appends never change samples already there.
		return c.pcm[i : i+m], false
	}
	c.rs.Into(buf[:m], c.pcm, i)
	return buf[:m], false
}

// synthesize fills c with text's speech: as it arrives from a Streamer,
// at once from another Synthesizer.
func (p *Player) synthesize(ctx context.Context, synth tts.Synthesizer, c *chunk, v tts.Voice) error {
	if st, ok := synth.(tts.Streamer); ok {
		return st.SynthesizeStream(ctx, c.text, v, func(rate int, s []int16) error { return c.add(p.clk.Now(), rate, s) })
	}
	pcm, err := synth.Synthesize(ctx, c.text, v)
	if err != nil {
		return err
	}
	return c.add(p.clk.Now(), pcm.Rate, pcm.Samples)
}

// Play synthesises each sentence from sentences with synth in voice v and
// plays it, starting each as soon as its first audio is there (a
// tts.Streamer's first stretch; another synthesizer's whole sentence) and
// the previous one has finished. It returns when sentences is closed and everything has
// played, when Interrupt is called, or when ctx ends; then it sends the
// five silence frames. Synthesis failures skip the sentence (they are in
// Result.Failed and the returned error); a Writer failure ends playback
// with an error.
func (p *Player) Play(ctx context.Context, sentences <-chan string, synth tts.Synthesizer, v tts.Voice) (Result, error) {
	p.busy.Lock()
	defer p.busy.Unlock()
	stop := make(chan struct{})
	p.mu.Lock()
	p.playing, p.stop, p.stopped = true, stop, false
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.playing = false
		p.mu.Unlock()
	}()

	enc, err := NewEncoder(p.bitrate)
	if err != nil {
		return Result{}, err
	}
	sctx, cancel := context.WithCancelCause(ctx)
	// The synthesis goroutine hands each sentence over before it starts
	// synthesising it: the player waits on the chunk's samples, and at most
	// prefetch sentences are synthesised ahead of the one playing. A
	// sentence is read to its end without waiting for the player, so a
	// streaming provider is never held up mid-answer.
	chunks := make(chan *chunk, p.prefetch)
	var taken []string // sentences the synthesis goroutine took, in order
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(chunks)
		for {
			var text string
			var ok bool
			select {
			case text, ok = <-sentences:
				if !ok {
					return
				}
			case <-sctx.Done():
				return
			}
			taken = append(taken, text)
			c := newChunk(text)
			select {
			case chunks <- c:
			case <-sctx.Done():
				return
			}
			c.finish(p.synthesize(sctx, synth, c, v))
		}
	}()
	defer func() {
		cancel(ErrInterrupted)
		wg.Wait()
	}()

	var res Result
	var errs []error
	var next time.Time // when the next frame is due
	// send waits for frame's slot and sends it; false means stop.
	send := func(frame []byte) (bool, error) {
		now := p.clk.Now()
		if next.IsZero() || now.Sub(next) > maxLate {
			next = now
		}
		if wait := next.Sub(now); wait > 0 {
			t := p.clk.NewTimer(wait)
			select {
			case <-t.C():
			case <-stop:
				t.Stop()
				return false, nil
			case <-ctx.Done():
				t.Stop()
				return false, nil
			}
		}
		select {
		case <-stop:
			return false, nil
		default:
		}
		if ctx.Err() != nil {
			return false, nil
		}
		if err := p.w.WriteOpus(frame); err != nil {
			return false, fmt.Errorf("playback: write frame: %w", err)
		}
		next = next.Add(FrameDuration)
		return true, nil
	}

	var werr error
	sent := 0
	buf := make([]int16, FrameSamples)
play:
	for {
		var c *chunk
		var ok bool
		select {
		case c, ok = <-chunks:
			if !ok {
				break play
			}
		case <-stop:
			break play
		case <-ctx.Done():
			break play
		}
		for i := 0; ; i += FrameSamples {
			pcm, more := c.frame(buf, i)
			for more {
				select {
				case <-c.more:
				case <-stop:
					if i > 0 {
						res.Cut = c.text
					}
					break play
				case <-ctx.Done():
					if i > 0 {
						res.Cut = c.text
					}
					break play
				}
				pcm, more = c.frame(buf, i)
			}
			if pcm == nil {
				break
			}
			if res.FirstAudio.IsZero() {
				c.mu.Lock()
				res.FirstAudio = c.ready
				c.mu.Unlock()
			}
			f, err := enc.Frame(pcm)
			if err != nil {
				werr = fmt.Errorf("playback: %w", err)
				res.Cut = c.text
				break play
			}
			ok, err := send(f)
			if err != nil {
				werr = err
			}
			if !ok {
				if i > 0 || err != nil {
					res.Cut = c.text
				}
				break play
			}
			if sent == 0 {
				res.FirstFrame = p.clk.Now()
			}
			sent++
		}
		c.mu.Lock()
		cerr := c.err
		c.mu.Unlock()
		if cerr != nil {
			// A sentence that failed part way was heard in part: it is
			// not said, and the next one plays.
			res.Failed = append(res.Failed, c.text)
			errs = append(errs, fmt.Errorf("sentence %q: %w", c.text, cerr))
			p.log.Warn("speech synthesis failed", "sentence", c.text, "err", cerr)
			continue
		}
		res.Said = append(res.Said, c.text)
	}
	res.Frames = sent
	p.mu.Lock()
	res.Interrupted = p.stopped
	p.mu.Unlock()
	// Stop synthesis; what was synthesised but not played is unsaid.
	cancel(ErrInterrupted)
	for range chunks {
	}
	wg.Wait()
	handled := len(res.Said) + len(res.Failed)
	if res.Cut != "" {
		handled++
	}
	res.Unsaid = append(res.Unsaid, taken[handled:]...)
	if sent > 0 && werr == nil {
		// Five silence frames on the same clock, even after a barge-in;
		// they are not interruptible.
		stop = nil
		for range SilenceFrames {
			if _, err := send(SilenceFrame); err != nil {
				werr = err
				break
			}
		}
	}
	if werr != nil {
		errs = append([]error{werr}, errs...)
	}
	return res, errors.Join(errs...)
}

// Interrupt stops the current playback at the next frame boundary and
// reports whether something was playing.
func (p *Player) Interrupt() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.playing || p.stopped {
		return false
	}
	p.stopped = true
	close(p.stop)
	return true
}

// Playing reports whether a Play is running.
func (p *Player) Playing() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.playing
}

// OnSpeech is a lane event handler for barge-in: a player who has talked
// for the lane's HoldAfter (250 ms by default) over the NPC stops it.
func (p *Player) OnSpeech(e audio.Event) {
	if e.Kind == audio.SpeechHeld && p.Interrupt() {
		p.log.Info("barge-in", "user", e.UserID, "at", e.At)
	}
}
