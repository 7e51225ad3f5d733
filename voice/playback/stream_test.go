package playback_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

// streamSynth hands pcm over in stretches of step samples: the first
// held samples at once, the rest once release closes, then fails with
// failAfter if set.
type streamSynth struct {
	pcm       audio.PCM
	step      int
	held      int
	release   <-chan struct{}
	failAfter error
}

func (s streamSynth) Synthesize(ctx context.Context, text string, v tts.Voice) (audio.PCM, error) {
	return audio.PCM{}, errors.New("streamSynth: the player must stream")
}

func (s streamSynth) SynthesizeStream(ctx context.Context, _ string, _ tts.Voice, sink tts.Sink) error {
	for i := 0; i < len(s.pcm.Samples); i += s.step {
		if i >= s.held && s.release != nil {
			select {
			case <-s.release:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err := sink(s.pcm.Rate, s.pcm.Samples[i:min(i+s.step, len(s.pcm.Samples))]); err != nil {
			return err
		}
	}
	return s.failAfter
}

// wholeSynth says every sentence as pcm, at once.
type wholeSynth struct{ pcm audio.PCM }

func (s wholeSynth) Synthesize(context.Context, string, tts.Voice) (audio.PCM, error) {
	return s.pcm, nil
}

// chirp is d of a rising tone at rate: every sample differs from its
// neighbours, so a frame computed from the wrong samples shows.
func chirp(rate int, d time.Duration) audio.PCM {
	n := int(d.Seconds() * float64(rate))
	p := audio.PCM{Rate: rate, Samples: make([]int16, n)}
	for i := range p.Samples {
		t := float64(i) / float64(rate)
		p.Samples[i] = int16(9000 * math.Sin(2*math.Pi*(200+400*t)*t))
	}
	return p
}

// play plays sentences with synth on a fake clock and returns the result
// and the frames; started, if set, is called once the first frame is out.
func play(t *testing.T, synth tts.Synthesizer, started func(), sentences ...string) (playback.Result, []sent, error) {
	t.Helper()
	clk := clocktest.NewFake(t0)
	rec := newRecorder(clk)
	p, err := playback.New(rec, playback.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go drive(clk, []time.Duration{20 * time.Millisecond}, done, nil)
	defer close(done)
	if started != nil {
		go func() {
			select {
			case <-rec.first:
				started()
			case <-done:
			}
		}()
	}
	res, err := p.Play(context.Background(), feed(sentences...), synth, tts.Voice{})
	return res, rec.all(), err
}

// A streaming synthesizer's first frames play before the rest of the
// sentence has arrived, and the frames are the very bytes the whole
// sentence gives: the resampler waits for every tap a frame reads.
func TestStreamedSpeechPlaysAsItArrives(t *testing.T) {
	for _, rate := range []int{24000, 48000, 22050, 16000} {
		t.Run(fmt.Sprintf("%d Hz", rate), func(t *testing.T) {
			pcm := chirp(rate, 1500*time.Millisecond)
			want, wantFrames, err := play(t, wholeSynth{pcm}, nil, "a line", "another")
			if err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			var once sync.Once
			afterFirst := make(chan bool, 1)
			releaseOnce := func(first bool) { once.Do(func() { afterFirst <- first; close(release) }) }
			// A player that waited for the whole sentence would wait
			// forever: the hang guard lets it go, and the test fails.
			guard := time.AfterFunc(hangGuard, func() { releaseOnce(false) })
			defer guard.Stop()
			synth := streamSynth{pcm: pcm, step: 997, held: rate * 3 / 10, release: release}
			got, gotFrames, err := play(t, synth, func() { releaseOnce(true) }, "a line", "another")
			if err != nil {
				t.Fatal(err)
			}
			if !<-afterFirst {
				t.Fatal("no frame was played before the rest of the sentence arrived")
			}
			if len(gotFrames) != len(wantFrames) {
				t.Fatalf("streamed: %d frames, whole: %d", len(gotFrames), len(wantFrames))
			}
			for i := range gotFrames {
				if string(gotFrames[i].frame) != string(wantFrames[i].frame) {
					t.Fatalf("frame %d differs between the streamed and the whole sentence", i)
				}
			}
			if len(got.Said) != 2 || got.Frames != want.Frames || len(got.Failed) != 0 {
				t.Errorf("streamed %+v, whole %+v", got, want)
			}
		})
	}
}

// A stream that breaks part way: what arrived is played, the sentence is
// reported failed, not said, and the next one plays.
func TestStreamBreakingMidSentence(t *testing.T) {
	pcm := chirp(24000, time.Second)
	broken := errors.New("connection reset mid-answer")
	synth := streamSynth{pcm: audio.PCM{Rate: 24000, Samples: pcm.Samples[:12000]}, step: 1000, failAfter: broken}
	res, frames, err := play(t, synth, nil, "cut short")
	if !errors.Is(err, broken) {
		t.Fatalf("error %v, want the stream's", err)
	}
	if len(res.Failed) != 1 || len(res.Said) != 0 || res.Cut != "" {
		t.Errorf("result %+v", res)
	}
	// Half a second arrived: 25 frames, then the five silence frames.
	if res.Frames != 25 || len(frames) != 25+playback.SilenceFrames {
		t.Errorf("%d speech frames, %d in all; want 25 and %d", res.Frames, len(frames), 25+playback.SilenceFrames)
	}

	mixed := &failFirst{streamSynth: streamSynth{pcm: pcm, step: 4000}, broken: broken}
	res, _, err = play(t, mixed, nil, "cut short", "whole")
	if !errors.Is(err, broken) || len(res.Failed) != 1 || len(res.Said) != 1 || res.Said[0] != "whole" {
		t.Errorf("result %+v, error %v: want the first failed and the second said", res, err)
	}
}

// failFirst breaks its first sentence after a quarter second.
type failFirst struct {
	streamSynth
	broken error
	calls  int
}

func (f *failFirst) SynthesizeStream(ctx context.Context, text string, v tts.Voice, sink tts.Sink) error {
	f.calls++
	if f.calls == 1 {
		if err := sink(f.pcm.Rate, f.pcm.Samples[:f.pcm.Rate/4]); err != nil {
			return err
		}
		return f.broken
	}
	return f.streamSynth.SynthesizeStream(ctx, text, v, sink)
}

// A stream that changes its rate within a sentence is refused.
func TestStreamChangingRate(t *testing.T) {
	res, _, err := play(t, rateHopper{}, nil, "hop")
	if err == nil || len(res.Failed) != 1 {
		t.Fatalf("result %+v, error %v: want the sentence failed", res, err)
	}
	t.Log(err)
}

type rateHopper struct{}

func (rateHopper) Synthesize(context.Context, string, tts.Voice) (audio.PCM, error) {
	return audio.PCM{}, errors.New("rateHopper streams")
}

func (rateHopper) SynthesizeStream(_ context.Context, _ string, _ tts.Voice, sink tts.Sink) error {
	if err := sink(24000, make([]int16, 4800)); err != nil {
		return err
	}
	return sink(16000, make([]int16, 3200))
}
