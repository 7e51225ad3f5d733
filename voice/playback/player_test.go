package playback_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"layeh.com/gopus"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

var t0 = time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)

// sent is one frame written, and when.
type sent struct {
	at    time.Time
	frame []byte
}

// recorder is a Writer that records frames on a clock.
type recorder struct {
	clk    interface{ Now() time.Time }
	mu     sync.Mutex
	frames []sent
	first  chan struct{}
	fail   error
}

func newRecorder(clk interface{ Now() time.Time }) *recorder {
	return &recorder{clk: clk, first: make(chan struct{})}
}

func (r *recorder) WriteOpus(f []byte) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail != nil {
		return r.fail
	}
	if len(r.frames) == 0 {
		close(r.first)
	}
	r.frames = append(r.frames, sent{r.clk.Now(), append([]byte(nil), f...)})
	return nil
}

func (r *recorder) all() []sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]sent(nil), r.frames...)
}

// toneSynth "says" each sentence as a tone lasting per[sentence] (or 1 s).
type toneSynth struct{ per map[string]time.Duration }

func (s toneSynth) Synthesize(_ context.Context, text string, _ tts.Voice) (audio.PCM, error) {
	if text == "fail" {
		return audio.PCM{}, errors.New("synthesis broke")
	}
	d, ok := s.per[text]
	if !ok {
		d = time.Second
	}
	n := int(d.Seconds() * 24000)
	p := audio.PCM{Rate: 24000, Samples: make([]int16, n)}
	for i := range p.Samples {
		p.Samples[i] = int16(8000 * math.Sin(2*math.Pi*330*float64(i)/24000))
	}
	return p, nil
}

// drive advances the fake clock by each step in turn (cycling) whenever
// the player waits on a timer, until done closes.
func drive(f *clocktest.Fake, steps []time.Duration, done <-chan struct{}, each func(now time.Time)) {
	for i := 0; ; i++ {
		select {
		case <-done:
			return
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		ok := f.WaitTimers(ctx, 1)
		cancel()
		if !ok {
			continue
		}
		f.Advance(steps[i%len(steps)])
		if each != nil {
			each(f.Now())
		}
	}
}

func feed(sentences ...string) <-chan string {
	c := make(chan string, len(sentences))
	for _, s := range sentences {
		c <- s
	}
	close(c)
	return c
}

func TestPacingWithoutDrift(t *testing.T) {
	audiotest.CheckLeaks(t)
	clk := clocktest.NewFake(t0)
	rec := newRecorder(clk)
	p, err := playback.New(rec, playback.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	synth := toneSynth{per: map[string]time.Duration{"a": 1010 * time.Millisecond, "b": 500 * time.Millisecond, "c": 2 * time.Second}}
	done := make(chan struct{})
	go drive(clk, []time.Duration{7 * time.Millisecond, 13 * time.Millisecond, 25 * time.Millisecond, 15 * time.Millisecond}, done, nil)
	res, err := p.Play(context.Background(), feed("a", "b", "c"), synth, tts.Voice{})
	close(done)
	if err != nil {
		t.Fatal(err)
	}
	frames := rec.all()
	speech := 51 + 25 + 100 // 1.01 s rounds up to 51 frames
	if len(frames) != speech+playback.SilenceFrames || res.Frames != speech {
		t.Fatalf("sent %d frames (%d speech), want %d + %d silence", len(frames), res.Frames, speech, playback.SilenceFrames)
	}
	for i, f := range frames[speech:] {
		if string(f.frame) != string(playback.SilenceFrame) {
			t.Errorf("frame %d after the speech is not a silence frame", i)
		}
	}
	start := frames[0].at
	worst := time.Duration(0)
	for i, f := range frames {
		late := f.at.Sub(start.Add(time.Duration(i) * playback.FrameDuration))
		if late < 0 || late >= 25*time.Millisecond {
			t.Fatalf("frame %d sent %v off its slot", i, late)
		}
		worst = max(worst, late)
	}
	span := frames[len(frames)-1].at.Sub(start)
	if want := time.Duration(len(frames)-1) * playback.FrameDuration; span < want || span > want+25*time.Millisecond {
		t.Errorf("%d frames spanned %v, want %v: the pump drifts", len(frames), span, want)
	}
	t.Logf("%d frames over %v, worst lateness %v with a clock advancing in 7-25 ms steps", len(frames), span, worst)
	if len(res.Said) != 3 || res.Interrupted || res.Cut != "" {
		t.Errorf("result %+v", res)
	}

	// The frames are 48 kHz stereo Opus with the audio in them.
	dec, err := gopus.NewDecoder(48000, 2)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	var loud int
	for _, f := range frames[:speech] {
		pcm, err := dec.Decode(f.frame, 960, false)
		if err != nil {
			t.Fatal(err)
		}
		total += len(pcm) / 2
		if (audio.PCM{Rate: 48000, Samples: pcm}).RMS() > -25 {
			loud++
		}
	}
	if total != speech*960 {
		t.Errorf("decoded %d samples per channel, want %d", total, speech*960)
	}
	if loud < speech-3 {
		t.Errorf("only %d of %d frames carry the tone", loud, speech)
	}
}

func TestSentenceStreaming(t *testing.T) {
	audiotest.CheckLeaks(t)
	audiotest.Need(t, "espeak-ng")
	clk := clocktest.NewFake(t0)
	rec := newRecorder(clk)
	p, err := playback.New(rec, playback.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go drive(clk, []time.Duration{20 * time.Millisecond}, done, nil)
	sentences := make(chan string)
	type out struct {
		res playback.Result
		err error
	}
	result := make(chan out, 1)
	go func() {
		r, err := p.Play(context.Background(), sentences, tts.Espeak{}, tts.Voice{})
		result <- out{r, err}
	}()
	sentences <- "Welcome to Ironhold, traveller."
	// The model is still writing: the first sentence must already play.
	select {
	case <-rec.first:
	case <-time.After(hangGuard):
		t.Fatal("the first sentence did not start before the second was written")
	}
	sentences <- "The Tower of Whispers is north of here."
	close(sentences)
	o := <-result
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(o.res.Said) != 2 {
		t.Fatalf("said %q", o.res.Said)
	}
	// On the fake clock, time passes only while the player waits for a
	// frame's slot: the first frame waits for none once its audio is there.
	if !o.res.FirstFrame.Equal(o.res.FirstAudio) {
		t.Errorf("first frame at %v, its audio ready at %v: it waited for a timer", o.res.FirstFrame, o.res.FirstAudio)
	}
	t.Logf("%d frames", o.res.Frames)
}

func TestBargeIn(t *testing.T) {
	audiotest.CheckLeaks(t)
	tests := []struct {
		name      string
		said      string
		cut       time.Duration // keep only this much of the speech
		interrupt bool
	}{
		{"player talks over the NPC", "Wait, Grimjaw, what about the Tower of Whispers?", 0, true},
		{"a 180 ms grunt does not stop it", "ah", 180 * time.Millisecond, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktest.NewFake(t0)
			rec := newRecorder(clk)
			p, err := playback.New(rec, playback.WithClock(clk))
			if err != nil {
				t.Fatal(err)
			}
			var (
				mu       sync.Mutex
				heldAt   time.Time
				speechAt time.Time
			)
			router, err := audio.NewRouter(audio.Config{OnEvent: func(e audio.Event) {
				mu.Lock()
				switch e.Kind {
				case audio.SpeechStarted:
					speechAt = e.At
				case audio.SpeechHeld:
					heldAt = e.At
				}
				mu.Unlock()
				p.OnSpeech(e)
			}})
			if err != nil {
				t.Fatal(err)
			}
			// The player starts talking 1.5 s into the NPC's speech.
			clip := audiotest.Trim(audiotest.Speak(t, tc.said, 48000))
			if tc.cut > 0 {
				clip.Samples = clip.Samples[:int(tc.cut.Seconds()*48000)]
			}
			sig, spans := audiotest.Compose(48000, []time.Duration{1500 * time.Millisecond}, []audio.PCM{clip}, time.Second)
			// The first NPC frame goes out at once, at t0.
			playStart := t0
			packets := audiotest.Encode(t, sig, "222", 9, playStart).Packets
			i := 0
			done := make(chan struct{})
			go drive(clk, []time.Duration{20 * time.Millisecond}, done, func(now time.Time) {
				for ; i < len(packets) && !packets[i].Received.After(now); i++ {
					router.Push(packets[i])
				}
				router.Tick(now)
			})
			res, err := p.Play(context.Background(), feed("one", "two", "three", "four"), toneSynth{}, tts.Voice{})
			close(done)
			if err != nil {
				t.Fatal(err)
			}
			frames := rec.all()
			if !tc.interrupt {
				if res.Interrupted || len(res.Said) != 4 {
					t.Errorf("a %v cough interrupted the NPC: %+v", spans[0].End-spans[0].Start, res)
				}
				return
			}
			if !res.Interrupted {
				t.Fatalf("not interrupted: %+v", res)
			}
			mu.Lock()
			held := heldAt.Sub(speechAt)
			mu.Unlock()
			if held < 250*time.Millisecond {
				t.Errorf("barge-in after %v of speech, want at least 250ms", held)
			}
			lastSpeech := frames[len(frames)-playback.SilenceFrames-1].at
			stopAfter := lastSpeech.Sub(heldAt)
			t.Logf("player spoke at %v, barge-in at %v, last NPC frame %v later; said %q, cut %q, unsaid %q",
				speechAt.Sub(playStart), heldAt.Sub(playStart), stopAfter, res.Said, res.Cut, res.Unsaid)
			if stopAfter > 2*playback.FrameDuration {
				t.Errorf("NPC kept talking %v after the barge-in", stopAfter)
			}
			if len(res.Said) != 1 || res.Said[0] != "one" || res.Cut != "two" {
				t.Errorf("said %q, cut %q; want one said, two cut", res.Said, res.Cut)
			}
			for _, f := range frames[len(frames)-playback.SilenceFrames:] {
				if string(f.frame) != string(playback.SilenceFrame) {
					t.Error("interrupted speech does not end with silence frames")
				}
			}
		})
	}
}

func TestSynthesisFailureSkipsSentence(t *testing.T) {
	clk := clocktest.NewFake(t0)
	rec := newRecorder(clk)
	p, _ := playback.New(rec, playback.WithClock(clk))
	done := make(chan struct{})
	go drive(clk, []time.Duration{20 * time.Millisecond}, done, nil)
	res, err := p.Play(context.Background(), feed("one", "fail", "three"), toneSynth{}, tts.Voice{})
	close(done)
	if err == nil {
		t.Fatal("no error for a failed sentence")
	}
	t.Log(err)
	if len(res.Said) != 2 || len(res.Failed) != 1 || res.Failed[0] != "fail" {
		t.Errorf("result %+v", res)
	}
}

func TestWriterFailure(t *testing.T) {
	clk := clocktest.NewFake(t0)
	rec := newRecorder(clk)
	rec.fail = errors.New("connection closed")
	p, _ := playback.New(rec, playback.WithClock(clk))
	_, err := p.Play(context.Background(), feed("one"), toneSynth{}, tts.Voice{})
	if err == nil || !errors.Is(err, rec.fail) {
		t.Fatalf("error %v, want the writer's", err)
	}
}
