package stt_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
)

var t0 = time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)

var campaign = []string{"Grimjaw", "Ironhold", "Tower of Whispers"}

const said = "Grimjaw, tell me about the Tower of Whispers in Ironhold."

// utterances are the utterances made so far, by text: most tests speak
// the same sentence, and making it (espeak-ng, Opus, a lane) gives the same
// utterance every time (the loss and jitter are seeded).
var utterances struct {
	sync.Mutex
	byText map[string]audio.Utterance
}

// utterance runs spoken text through Opus, 5% packet loss, jitter and a
// lane, and returns the utterance the lane cut (the caller's own copy).
func utterance(t *testing.T, text string) audio.Utterance {
	t.Helper()
	utterances.Lock()
	u, ok := utterances.byText[text]
	utterances.Unlock()
	if !ok {
		u = makeUtterance(t, text)
		utterances.Lock()
		if utterances.byText == nil {
			utterances.byText = map[string]audio.Utterance{}
		}
		utterances.byText[text] = u
		utterances.Unlock()
	}
	u.Audio.Samples = slices.Clone(u.Audio.Samples)
	return u
}

func makeUtterance(t *testing.T, text string) audio.Utterance {
	t.Helper()
	clip := audiotest.Speak(t, text, 48000)
	sig, _ := audiotest.Compose(48000, []time.Duration{500 * time.Millisecond}, []audio.PCM{clip}, 1500*time.Millisecond)
	s := audiotest.Encode(t, sig, "111", 1, t0)
	rng := rand.New(rand.NewPCG(1, 1))
	ps, _ := audiotest.Lose(s.Packets, 0.05, rng)
	ps = audiotest.Jitter(ps, 40*time.Millisecond, rng)
	var got []audio.Utterance
	r, err := audio.NewRouter(audio.Config{OnUtterance: func(u audio.Utterance) { got = append(got, u) }})
	if err != nil {
		t.Fatal(err)
	}
	audiotest.Deliver(r, ps, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
	if len(got) != 1 {
		t.Fatalf("lane cut %d utterances from one sentence", len(got))
	}
	return got[0]
}

// checkReceived asserts the server got the utterance's audio: 16 kHz, the
// same length, audible.
func checkReceived(t *testing.T, got audio.PCM, u audio.Utterance) {
	t.Helper()
	if got.Rate != audio.Rate {
		t.Errorf("server got audio at %d Hz, want %d", got.Rate, audio.Rate)
	}
	if len(got.Samples) != len(u.Audio.Samples) {
		t.Errorf("server got %d samples (%.2fs), utterance has %d (%.2fs)",
			len(got.Samples), got.Duration(), len(u.Audio.Samples), u.Audio.Duration())
	}
	if d := got.Duration() - u.End.Sub(u.Start).Seconds(); d < 0 || d > 0.5 {
		t.Errorf("server got %.2fs of audio for %v of speech", got.Duration(), u.End.Sub(u.Start))
	}
	if lvl := got.RMS(); lvl < -40 {
		t.Errorf("server got audio at %.1f dBFS: not audible", lvl)
	}
	if v := stt.VoicedDuration(got); v < 500*time.Millisecond {
		t.Errorf("server got only %v of voiced audio", v)
	}
}

func TestDeepgramStreaming(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	fake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer fake.Close()
	dg := &stt.Deepgram{APIKey: "k3y", BaseURL: fake.URL, NoFallback: true}
	tr, err := dg.Transcribe(context.Background(), u.Audio, stt.Hints{Keyterms: campaign, Language: "en"})
	if err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 1 || !calls[0].Stream {
		t.Fatalf("fake got %+v, want one stream", calls)
	}
	c := calls[0]
	checkReceived(t, c.Audio, u)
	if got := c.Query["keyterm"]; strings.Join(got, "|") != strings.Join(campaign, "|") {
		t.Errorf("keyterms sent %q, want %q", got, campaign)
	}
	for k, v := range map[string]string{"model": "nova-3", "encoding": "linear16", "sample_rate": "16000", "interim_results": "true", "endpointing": "300", "language": "en"} {
		if got := c.Query.Get(k); got != v {
			t.Errorf("query %s=%q, want %q", k, got, v)
		}
	}
	if got := c.Header.Get("Authorization"); got != "Token k3y" {
		t.Errorf("Authorization %q", got)
	}
	if tr.Text != said {
		t.Errorf("text %q, want %q", tr.Text, said)
	}
	if len(tr.Words) != len(strings.Fields(said)) {
		t.Fatalf("%d words, want %d", len(tr.Words), len(strings.Fields(said)))
	}
	if w := tr.Words[0]; w.Text != "Grimjaw," || math.Abs(w.Confidence-0.62) > 1e-9 {
		t.Errorf("first word %+v, want Grimjaw, with confidence 0.62", w)
	}
	if w := tr.Words[len(tr.Words)-1]; w.End <= w.Start || w.End > time.Duration(u.Audio.Duration()*float64(time.Second))+time.Millisecond {
		t.Errorf("last word timing %v..%v for %.2fs of audio", w.Start, w.End, u.Audio.Duration())
	}
}

func TestDeepgramStreamResults(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	fake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer fake.Close()
	dg := &stt.Deepgram{BaseURL: fake.URL}
	ctx := context.Background()
	s, err := dg.Stream(ctx, stt.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var kinds []stt.ResultKind
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for r := range s.Results() {
			kinds = append(kinds, r.Kind)
		}
	}()
	for i := 0; i < len(u.Audio.Samples); i += 320 {
		if err := s.Send(u.Audio.Samples[i:min(i+320, len(u.Audio.Samples))]); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := s.Finish(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if tr.Text != said {
		t.Errorf("text %q", tr.Text)
	}
	if len(kinds) < 3 || kinds[0] != stt.Interim || kinds[len(kinds)-2] != stt.Final || kinds[len(kinds)-1] != stt.UtteranceEnd {
		t.Errorf("results %v, want interims, a final and an utterance end", kinds)
	}
}

func TestDeepgramBatchFallback(t *testing.T) {
	u := utterance(t, said)
	fake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer fake.Close()
	// A dialer that cannot open WebSockets: the batch endpoint is used.
	tr, err := (&stt.Deepgram{BaseURL: fake.URL, Dialer: brokenDialer()}).Transcribe(context.Background(), u.Audio, stt.Hints{Keyterms: campaign})
	if err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 1 || calls[0].Stream {
		t.Fatalf("fake got %d calls (stream %v), want one batch call", len(calls), len(calls) > 0 && calls[0].Stream)
	}
	checkReceived(t, calls[0].Audio, u)
	if got := calls[0].Query["keyterm"]; len(got) != len(campaign) {
		t.Errorf("batch keyterms %q", got)
	}
	if tr.Text != said || len(tr.Words) == 0 || tr.Words[0].Confidence == 0 {
		t.Errorf("batch transcript %+v", tr)
	}
}

func TestOpenAI(t *testing.T) {
	u := utterance(t, said)
	fake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer fake.Close()
	o := &stt.OpenAI{APIKey: "sk", BaseURL: fake.URL(), Model: "whisper-large-v3"}
	tr, err := o.Transcribe(context.Background(), u.Audio, stt.Hints{Keyterms: campaign})
	if err != nil {
		t.Fatal(err)
	}
	calls := fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d calls", len(calls))
	}
	c := calls[0]
	checkReceived(t, c.Audio, u)
	prompt := strings.Join(c.Form["prompt"], "")
	for _, k := range campaign {
		if !strings.Contains(prompt, k) {
			t.Errorf("prompt %q lacks %q", prompt, k)
		}
	}
	if got := strings.Join(c.Form["model"], ""); got != "whisper-large-v3" {
		t.Errorf("model %q", got)
	}
	if got := c.Header.Get("Authorization"); got != "Bearer sk" {
		t.Errorf("Authorization %q", got)
	}
	if tr.Text != said || len(tr.Words) != len(strings.Fields(said)) {
		t.Fatalf("transcript %+v", tr)
	}
	if c := tr.Words[0].Confidence; math.Abs(c-math.Exp(-0.25)) > 1e-9 {
		t.Errorf("word confidence %v, want the segment's exp(avg_logprob)", c)
	}
}

func TestOpenAIPlainJSON(t *testing.T) {
	u := utterance(t, said)
	fake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer fake.Close()
	tr, err := (&stt.OpenAI{BaseURL: fake.URL(), Model: "gpt-4o-transcribe"}).Transcribe(context.Background(), u.Audio, stt.Hints{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fake.Calls()[0].Form["response_format"]; len(got) != 1 || got[0] != "json" {
		t.Errorf("response_format %q, want json", got)
	}
	if tr.Text != said || len(tr.Words) != len(strings.Fields(said)) || tr.Words[0].Confidence != 1 {
		t.Errorf("transcript %+v", tr)
	}
}

func TestOpenAIHallucinationGuard(t *testing.T) {
	fake := stttest.NewOpenAI(func(stttest.Call) string { return "Thanks for watching!" })
	defer fake.Close()
	o := &stt.OpenAI{BaseURL: fake.URL()}
	ctx := context.Background()

	// Silence and noise are not sent at all.
	rng := rand.New(rand.NewPCG(2, 2))
	noise := audio.PCM{Rate: audio.Rate, Samples: make([]int16, 2*audio.Rate)}
	audiotest.AddNoise(noise, -40, rng)
	for name, p := range map[string]audio.PCM{
		"silence": {Rate: audio.Rate, Samples: make([]int16, 2*audio.Rate)},
		"noise":   noise,
	} {
		tr, err := o.Transcribe(ctx, p, stt.Hints{})
		if err != nil || tr.Text != "" {
			t.Errorf("%s: transcript %q, err %v; want nothing", name, tr.Text, err)
		}
	}
	if n := len(fake.Calls()); n != 0 {
		t.Errorf("silence and noise were sent %d times", n)
	}

	// A short grunt that Whisper turns into a stock phrase is dropped.
	grunt := audiotest.Trim(audiotest.Speak(t, "hm", audio.Rate))
	if tr, err := o.Transcribe(ctx, grunt, stt.Hints{}); err != nil || tr.Text != "" {
		t.Errorf("grunt: transcript %q, err %v; want nothing", tr.Text, err)
	}
	// Whisper's own doubt drops it too.
	fake.SetNoSpeech(0.5)
	long := utterance(t, "Thanks for watching the gate, Grimjaw.")
	if tr, err := o.Transcribe(ctx, long.Audio, stt.Hints{}); err != nil || tr.Text != "" {
		t.Errorf("no_speech_prob 0.5: transcript %q, err %v; want nothing", tr.Text, err)
	}
	// Real speech that says it is kept.
	fake.SetNoSpeech(0.01)
	if tr, err := o.Transcribe(ctx, long.Audio, stt.Hints{}); err != nil || tr.Text != "Thanks for watching!" {
		t.Errorf("real speech: transcript %q, err %v; want it kept", tr.Text, err)
	}
}

func TestProviderFailures(t *testing.T) {
	audiotest.CheckLeaks(t)
	u := utterance(t, said)
	dgFake := stttest.NewDeepgram(func(stttest.Call) string { return said })
	defer dgFake.Close()
	oaFake := stttest.NewOpenAI(func(stttest.Call) string { return said })
	defer oaFake.Close()
	type setter interface{ SetFailure(stttest.Failure) }
	providers := []struct {
		name string
		fake setter
		rec  func(timeout time.Duration) stt.Recognizer
	}{
		{"deepgram", dgFake, func(d time.Duration) stt.Recognizer { return &stt.Deepgram{BaseURL: dgFake.URL, Timeout: d} }},
		{"deepgram batch", dgFake, func(d time.Duration) stt.Recognizer {
			return &stt.Deepgram{BaseURL: dgFake.URL, Timeout: d, Dialer: brokenDialer()}
		}},
		{"openai", oaFake, func(d time.Duration) stt.Recognizer { return &stt.OpenAI{BaseURL: oaFake.URL(), Timeout: d} }},
	}
	failures := []struct {
		name    string
		f       stttest.Failure
		status  int
		timeout bool
	}{
		{"5xx", stttest.Status500, 500, false},
		{"malformed json", stttest.Malformed, 0, false},
		{"timeout", stttest.Hang, 0, true},
	}
	for _, p := range providers {
		for _, f := range failures {
			t.Run(p.name+"/"+f.name, func(t *testing.T) {
				p.fake.SetFailure(f.f)
				// Only the hanging provider may run into the timeout: it never
				// answers, so a short one decides nothing by the clock. The
				// others get all the time a loaded machine needs.
				timeout := time.Minute
				if f.timeout {
					timeout = 300 * time.Millisecond
				}
				_, err := p.rec(timeout).Transcribe(context.Background(), u.Audio, stt.Hints{})
				var pe *provider.Error
				if !errors.As(err, &pe) {
					t.Fatalf("error %v is not a provider.Error", err)
				}
				t.Log(err)
				if f.status != 0 && pe.Status != f.status {
					t.Errorf("status %d, want %d", pe.Status, f.status)
				}
				if pe.Timeout() != f.timeout {
					t.Errorf("Timeout() = %v, want %v", pe.Timeout(), f.timeout)
				}
				// The provider works again once the service does.
				p.fake.SetFailure(stttest.OK)
				tr, err := p.rec(0).Transcribe(context.Background(), u.Audio, stt.Hints{})
				if err != nil || tr.Text != said {
					t.Errorf("after recovery: %q, %v", tr.Text, err)
				}
			})
		}
	}
}

func TestBadAudio(t *testing.T) {
	for _, rec := range []stt.Recognizer{&stt.Deepgram{}, &stt.OpenAI{}} {
		for _, p := range []audio.PCM{{Rate: 48000, Samples: make([]int16, 100)}, {Rate: audio.Rate}} {
			if _, err := rec.Transcribe(context.Background(), p, stt.Hints{}); !errors.Is(err, stt.ErrNoAudio) {
				t.Errorf("%T with %d Hz, %d samples: error %v, want ErrNoAudio", rec, p.Rate, len(p.Samples), err)
			}
		}
	}
}
