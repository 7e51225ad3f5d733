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

// chunk is one synthesised sentence; frames are resampled to 48 kHz and
// encoded as they are sent, so the first frame does not wait for the
// whole sentence to be resampled.
type chunk struct {
	text  string
	pcm   []int16
	rs    *audio.RangeResampler // nil when pcm is at SampleRate
	n     int                   // samples at SampleRate
	ready time.Time
	err   error
}

// frame is frame samples from i of c at SampleRate, in buf.
func (c *chunk) frame(buf []int16, i int) []int16 {
	m := min(FrameSamples, c.n-i)
	if c.rs == nil {
		return c.pcm[i : i+m]
	}
	c.rs.Into(buf[:m], c.pcm, i)
	return buf[:m]
}

// Play synthesises each sentence from sentences with synth in voice v and
// plays it, starting each as soon as it is synthesised and the previous one
// has finished. It returns when sentences is closed and everything has
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
	chunks := make(chan chunk, p.prefetch)
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
			c := chunk{text: text}
			pcm, err := synth.Synthesize(sctx, text, v)
			if err == nil && pcm.Rate <= 0 {
				err = fmt.Errorf("synthesizer returned audio at %d Hz", pcm.Rate)
			}
			if err == nil {
				c.pcm, c.n = pcm.Samples, len(pcm.Samples)
				if pcm.Rate != SampleRate {
					c.rs = audio.NewRangeResampler(pcm.Rate, SampleRate)
					c.n = c.rs.Len(len(pcm.Samples))
				}
			}
			c.err, c.ready = err, p.clk.Now()
			select {
			case chunks <- c:
			case <-sctx.Done():
				return
			}
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
		var c chunk
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
		if c.err != nil {
			res.Failed = append(res.Failed, c.text)
			errs = append(errs, fmt.Errorf("sentence %q: %w", c.text, c.err))
			p.log.Warn("speech synthesis failed", "sentence", c.text, "err", c.err)
			continue
		}
		if res.FirstAudio.IsZero() {
			res.FirstAudio = c.ready
		}
		for i := 0; i < c.n; i += FrameSamples {
			f, err := enc.Frame(c.frame(buf, i))
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
