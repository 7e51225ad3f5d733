package stt_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

// TestLaneSurvivesProviderFailures runs two speakers' packets through a
// router into a transcriber whose provider fails for a while: the failed
// utterances come back as errors, and later ones are transcribed.
func TestLaneSurvivesProviderFailures(t *testing.T) {
	audiotest.CheckLeaks(t)
	a := audiotest.Speak(t, "Grimjaw, open the gate.", 48000)
	b := audiotest.Speak(t, "Where is the Tower of Whispers?", 48000)
	c := audiotest.Speak(t, "We ride for Ironhold.", 48000)
	sig, spans := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond, time.Second, time.Second}, []audio.PCM{a, b, c}, 1500*time.Millisecond)
	other, otherSpans := audiotest.Compose(48000, []time.Duration{1200 * time.Millisecond}, []audio.PCM{b}, 3*time.Second)

	fake := stttest.NewOpenAI(func(c stttest.Call) string { return "heard" })
	defer fake.Close()
	var mu sync.Mutex
	var heard []stt.Heard
	recovered := make(chan struct{})
	var once sync.Once
	tr := stt.NewTranscriber(&stt.OpenAI{BaseURL: fake.URL(), Timeout: 10 * time.Second}, func(h stt.Heard) {
		mu.Lock()
		heard = append(heard, h)
		mu.Unlock()
		if h.Err != nil {
			// The provider comes back after its first failure.
			once.Do(func() { fake.SetFailure(stttest.OK); close(recovered) })
		}
	}, stt.TranscriberConfig{Keyterms: stt.KeytermList{"Grimjaw", "Ironhold"}, Concurrency: 1})
	// The provider is down (HTTP 500) at first.
	fake.SetFailure(stttest.Status500)
	r, err := audio.NewRouter(audio.Config{OnUtterance: tr.Submit})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 7))
	pa, _ := audiotest.Lose(audiotest.Encode(t, sig, "alice", 1, t0).Packets, 0.03, rng)
	pb := audiotest.Encode(t, other, "bob", 2, t0).Packets
	ps := audiotest.Merge(pa, pb)
	end := t0.Add(time.Duration(sig.Duration()*float64(time.Second)) + time.Second)
	// Deliver in two halves: the first utterance fails, then the rest
	// comes once the provider is back.
	half := t0.Add(spans[1].Start)
	audiotest.Deliver(r, ps, t0, half)
	select {
	case <-recovered:
	case <-time.After(hangGuard):
		t.Fatal("the first utterance was never reported")
	}
	var rest []audio.Packet
	for _, p := range ps {
		if p.Received.After(half) {
			rest = append(rest, p)
		}
	}
	audiotest.Deliver(r, rest, half.Add(20*time.Millisecond), end)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	if err := tr.Close(ctx); err != nil {
		t.Fatal(err)
	}

	sort.Slice(heard, func(i, j int) bool { return heard[i].Start.Before(heard[j].Start) })
	var failed, ok int
	for _, h := range heard {
		t.Logf("%s %v..%v %q err=%v", h.UserID, h.Start.Sub(t0), h.End.Sub(t0), h.Text, h.Err)
		var pe *provider.Error
		switch {
		case h.Err != nil && errors.As(h.Err, &pe) && pe.Status == 500:
			failed++
		case h.Err == nil && h.Text == "heard":
			ok++
		default:
			t.Errorf("unexpected result %+v", h)
		}
		if h.Final.Before(h.Submitted) {
			t.Errorf("final %v before submitted %v", h.Final, h.Submitted)
		}
	}
	if want := len(spans) + len(otherSpans); len(heard) != want {
		t.Fatalf("%d results for %d utterances", len(heard), want)
	}
	if failed == 0 || ok < 2 {
		t.Errorf("%d failed, %d transcribed; want failures while the provider was down and text after", failed, ok)
	}
	last := heard[len(heard)-1]
	if last.UserID != "alice" || last.Err != nil {
		t.Errorf("the last utterance (after recovery) was %+v", last)
	}
	for _, c := range fake.Calls() {
		if p := c.Form["prompt"]; len(p) != 1 || p[0] == "" {
			t.Errorf("prompt %q lacks the keyterms", p)
		}
	}
}

// TestStreamingWhileSpeaking streams each utterance to Deepgram while it is
// spoken (the lane's OnAudio), so the final result needs no upload after
// the end of speech; with WebSockets blocked it falls back to whole
// utterances.
func TestStreamingWhileSpeaking(t *testing.T) {
	audiotest.CheckLeaks(t)
	a := audiotest.Speak(t, "Grimjaw, open the gate.", 48000)
	b := audiotest.Speak(t, "We ride for Ironhold at dawn.", 48000)
	sig, spans := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond, time.Second}, []audio.PCM{a, b}, 1500*time.Millisecond)
	packets := audiotest.Encode(t, sig, "alice", 1, t0).Packets
	for _, tc := range []struct {
		name   string
		dialer bool // WebSockets work
	}{{"stream", true}, {"websockets blocked", false}} {
		t.Run(tc.name, func(t *testing.T) {
			fake := stttest.NewDeepgram(func(c stttest.Call) string { return "heard" })
			defer fake.Close()
			dg := &stt.Deepgram{BaseURL: fake.URL}
			if !tc.dialer {
				dg.Dialer = brokenDialer()
			}
			var mu sync.Mutex
			var heard []stt.Heard
			var utts []audio.Utterance
			tr := stt.NewTranscriber(dg, func(h stt.Heard) { mu.Lock(); heard = append(heard, h); mu.Unlock() },
				stt.TranscriberConfig{Keyterms: stt.KeytermList{"Grimjaw"}})
			r, err := audio.NewRouter(audio.Config{OnAudio: tr.Audio, OnUtterance: func(u audio.Utterance) {
				utts = append(utts, u)
				tr.Submit(u)
			}})
			if err != nil {
				t.Fatal(err)
			}
			audiotest.Deliver(r, packets, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			if err := tr.Close(ctx); err != nil {
				t.Fatal(err)
			}
			if len(heard) != len(spans) || len(utts) != len(spans) {
				t.Fatalf("%d results, %d utterances for %d sentences", len(heard), len(utts), len(spans))
			}
			for _, h := range heard {
				if h.Err != nil || h.Text != "heard" {
					t.Errorf("result %+v", h)
				}
			}
			calls := fake.Calls()
			if len(calls) != len(spans) {
				t.Fatalf("%d calls", len(calls))
			}
			sort.Slice(calls, func(i, j int) bool { return len(calls[i].Audio.Samples) < len(calls[j].Audio.Samples) })
			sort.Slice(utts, func(i, j int) bool { return len(utts[i].Audio.Samples) < len(utts[j].Audio.Samples) })
			for i, c := range calls {
				if c.Stream != tc.dialer {
					t.Errorf("call %d: stream %v", i, c.Stream)
				}
				if c.Audio.Rate != audio.Rate || c.Audio.RMS() < -40 {
					t.Errorf("call %d: %d Hz at %.1f dBFS", i, c.Audio.Rate, c.Audio.RMS())
				}
				// A stream carries the utterance and the silence that
				// ended it; a batch call exactly the utterance.
				got, want := c.Audio.Duration(), utts[i].Audio.Duration()
				if tc.dialer && (got < want || got > want+1) || !tc.dialer && got != want {
					t.Errorf("call %d: %.2fs of audio for a %.2fs utterance", i, got, want)
				}
				if k := c.Query["keyterm"]; len(k) != 1 || k[0] != "Grimjaw" {
					t.Errorf("call %d: keyterms %q", i, k)
				}
			}
		})
	}
}
