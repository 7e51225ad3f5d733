package audio_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

var t0 = time.Date(2026, 3, 1, 20, 0, 0, 0, time.UTC)

// recorder collects what a router reports.
type recorder struct {
	mu     sync.Mutex
	utts   []audio.Utterance
	events []audio.Event
}

func (r *recorder) config(c audio.Config) audio.Config {
	c.OnUtterance = func(u audio.Utterance) { r.mu.Lock(); r.utts = append(r.utts, u); r.mu.Unlock() }
	c.OnEvent = func(e audio.Event) { r.mu.Lock(); r.events = append(r.events, e); r.mu.Unlock() }
	return c
}

func (r *recorder) byUser(id string) []audio.Utterance {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []audio.Utterance
	for _, u := range r.utts {
		if u.UserID == id {
			out = append(out, u)
		}
	}
	return out
}

func mustRouter(t *testing.T, c audio.Config) *audio.Router {
	t.Helper()
	r, err := audio.NewRouter(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// twoSentences is a signal with two sentences naming campaign places and
// people, and where they lie.
func twoSentences(t *testing.T) (audio.PCM, []audiotest.Span) {
	t.Helper()
	a := audiotest.Speak(t, "Grimjaw, tell me about the Tower of Whispers.", 48000)
	b := audiotest.Speak(t, "We ride for Ironhold at dawn.", 48000)
	return audiotest.Compose(48000, []time.Duration{time.Second, 1500 * time.Millisecond}, []audio.PCM{a, b}, 2*time.Second)
}

// checkSpans asserts one utterance per span, with boundaries close to the
// truth.
func checkSpans(t *testing.T, got []audio.Utterance, want []audiotest.Span, start time.Time) {
	t.Helper()
	if len(got) != len(want) {
		for _, u := range got {
			t.Logf("utterance %v..%v", u.Start.Sub(start), u.End.Sub(start))
		}
		t.Fatalf("got %d utterances, want %d", len(got), len(want))
	}
	for i, u := range got {
		s, e := u.Start.Sub(start), u.End.Sub(start)
		t.Logf("utterance %d: detected %v..%v, spoken %v..%v", i, s, e, want[i].Start, want[i].End)
		if d := s - want[i].Start; d < -60*time.Millisecond || d > 120*time.Millisecond {
			t.Errorf("utterance %d starts at %v, speech starts at %v", i, s, want[i].Start)
		}
		if d := e - want[i].End; d < -200*time.Millisecond || d > 100*time.Millisecond {
			t.Errorf("utterance %d ends at %v, speech ends at %v", i, e, want[i].End)
		}
		if got, want := u.Audio.Rate, audio.Rate; got != want {
			t.Errorf("utterance %d audio at %d Hz, want %d", i, got, want)
		}
		if lvl := u.Audio.RMS(); lvl < -40 {
			t.Errorf("utterance %d audio is %.1f dBFS, not audible", i, lvl)
		}
		audioDur := time.Duration(u.Audio.Duration() * float64(time.Second))
		if min := u.End.Sub(u.Start); audioDur < min {
			t.Errorf("utterance %d has %v of audio for %v of speech", i, audioDur, min)
		}
	}
}

func TestUtteranceBoundaries(t *testing.T) {
	sig, spans := twoSentences(t)
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name    string
		packets func(audiotest.Stream) []audio.Packet
		minLost int
	}{
		{"clean", func(s audiotest.Stream) []audio.Packet { return s.Packets }, 0},
		{"5% loss", func(s audiotest.Stream) []audio.Packet {
			ps, _ := audiotest.Lose(s.Packets, 0.05, rng)
			return ps
		}, 1},
		{"jitter 50ms", func(s audiotest.Stream) []audio.Packet {
			return audiotest.Jitter(s.Packets, 50*time.Millisecond, rng)
		}, 0},
		{"10% loss and jitter", func(s audiotest.Stream) []audio.Packet {
			ps, _ := audiotest.Lose(s.Packets, 0.10, rng)
			return audiotest.Jitter(ps, 50*time.Millisecond, rng)
		}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			r := mustRouter(t, rec.config(audio.Config{}))
			s := audiotest.Encode(t, sig, "111", 42, t0)
			ps := tc.packets(s)
			if errs := audiotest.Deliver(r, ps, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second)); len(errs) > 0 {
				t.Fatalf("push errors: %v", errs)
			}
			checkSpans(t, rec.byUser("111"), spans, t0)
			st, _ := r.Stats("111")
			t.Logf("stats: %+v", st)
			if st.Lost < tc.minLost {
				t.Errorf("lane counted %d lost packets, want at least %d", st.Lost, tc.minLost)
			}
			if st.Silence == 0 {
				t.Error("lane saw no Discord silence frames")
			}
		})
	}
}

func TestNoiseAndKeyboardClicks(t *testing.T) {
	clean, spans := twoSentences(t)
	for _, level := range []float64{-55, -45, -38} {
		t.Run(fmt.Sprintf("noise %v dBFS", level), func(t *testing.T) {
			sig := audio.PCM{Rate: clean.Rate, Samples: append([]int16(nil), clean.Samples...)}
			rng := rand.New(rand.NewPCG(3, uint64(-level)))
			audiotest.AddNoise(sig, level, rng)
			// Typing before, between and after the sentences.
			n := audiotest.AddClicks(sig, 100*time.Millisecond, spans[0].Start-150*time.Millisecond, rng)
			n += audiotest.AddClicks(sig, spans[0].End+700*time.Millisecond, spans[1].Start-150*time.Millisecond, rng)
			n += audiotest.AddClicks(sig, spans[1].End+800*time.Millisecond, spans[1].End+1900*time.Millisecond, rng)
			t.Logf("%d keyboard clicks", n)

			var rec recorder
			r := mustRouter(t, rec.config(audio.Config{}))
			s := audiotest.Encode(t, sig, "111", 7, t0)
			audiotest.Deliver(r, s.Packets, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
			checkSpans(t, rec.byUser("111"), spans, t0)
		})
	}
}

func TestClicksAloneMakeNoUtterance(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sig := audio.PCM{Rate: 48000, Samples: make([]int16, 48000*4)}
	audiotest.AddNoise(sig, -50, rng)
	n := audiotest.AddClicks(sig, 0, 4*time.Second, rng)
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{}))
	s := audiotest.Encode(t, sig, "111", 9, t0)
	audiotest.Deliver(r, s.Packets, t0, t0.Add(5*time.Second))
	if got := rec.byUser("111"); len(got) != 0 {
		t.Errorf("%d clicks in noise gave %d utterances, want none", n, len(got))
	}
}

func TestOverlappingSpeakersStaySeparate(t *testing.T) {
	a := audiotest.Speak(t, "Grimjaw, where is the Tower of Whispers?", 48000)
	b := audiotest.Speak(t, "No, wait, the gate of Ironhold is closed!", 48000)
	sigA, spanA := audiotest.Compose(48000, []time.Duration{500 * time.Millisecond}, []audio.PCM{a}, 2*time.Second)
	sigB, spanB := audiotest.Compose(48000, []time.Duration{1200 * time.Millisecond}, []audio.PCM{b}, 1500*time.Millisecond)
	sa := audiotest.Encode(t, sigA, "alice", 1, t0)
	sb := audiotest.Encode(t, sigB, "bob", 2, t0)
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{}))
	audiotest.Deliver(r, audiotest.Merge(sa.Packets, sb.Packets), t0, t0.Add(6*time.Second))
	checkSpans(t, rec.byUser("alice"), spanA, t0)
	checkSpans(t, rec.byUser("bob"), spanB, t0)
	if spanB[0].Start >= spanA[0].End {
		t.Fatal("test signals do not overlap")
	}
}

func TestEndpointAfterPacketsStop(t *testing.T) {
	a := audiotest.Speak(t, "Tell me about Ironhold.", 48000)
	sig, spans := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{a}, 0)
	s := audiotest.Encode(t, sig, "111", 3, t0)
	// The client stops sending when the speech stops: no silence at all
	// follows, so only the clock can end the turn.
	for _, endpoint := range []time.Duration{300 * time.Millisecond, 600 * time.Millisecond, time.Second} {
		var rec recorder
		r := mustRouter(t, rec.config(audio.Config{Endpoint: endpoint}))
		last := s.Packets[len(s.Packets)-1].Received
		var at time.Time
		i := 0
		for now := t0; now.Before(last.Add(3 * time.Second)); now = now.Add(10 * time.Millisecond) {
			for ; i < len(s.Packets) && !s.Packets[i].Received.After(now); i++ {
				if err := r.Push(s.Packets[i]); err != nil {
					t.Fatal(err)
				}
			}
			r.Tick(now)
			if at.IsZero() && len(rec.byUser("111")) > 0 {
				at = now
			}
		}
		got := rec.byUser("111")
		if len(got) != 1 {
			t.Fatalf("endpoint %v: %d utterances, want 1", endpoint, len(got))
		}
		wait := at.Sub(t0.Add(spans[0].End))
		t.Logf("endpoint %v: utterance delivered %v after speech ended", endpoint, wait)
		if wait < endpoint-50*time.Millisecond || wait > endpoint+audio.DefaultTickSlack+100*time.Millisecond {
			t.Errorf("endpoint %v: utterance delivered %v after the speech ended", endpoint, wait)
		}
	}
}

// The first packets of a stream come late, in a burst (a loaded client or
// bot): the utterance's times follow the packets that came on time, so its
// End is never ahead of the arrival of its audio (issue 29: a stage timed
// from End came out negative under load).
func TestLateFirstPacketsDoNotMoveTimesAhead(t *testing.T) {
	a := audiotest.Speak(t, "Tell me about Ironhold.", 48000)
	sig, spans := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{a}, 0)
	s := audiotest.Encode(t, sig, "111", 3, t0)
	const late = 900 * time.Millisecond
	for i := range s.Packets {
		if s.Packets[i].Received.Before(t0.Add(late)) {
			s.Packets[i].Received = t0.Add(late)
		}
	}
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{}))
	last := s.Packets[len(s.Packets)-1].Received
	i := 0
	for now := t0; now.Before(last.Add(3 * time.Second)); now = now.Add(10 * time.Millisecond) {
		for ; i < len(s.Packets) && !s.Packets[i].Received.After(now); i++ {
			if err := r.Push(s.Packets[i]); err != nil {
				t.Fatal(err)
			}
		}
		r.Tick(now)
	}
	got := rec.byUser("111")
	checkSpans(t, got, spans, t0)
	if len(got) == 1 && got[0].End.After(last) {
		t.Errorf("utterance ends at %v, after its last packet arrived (%v)", got[0].End.Sub(t0), last.Sub(t0))
	}
}

func TestMaxUtterance(t *testing.T) {
	a := audiotest.Speak(t, "Grimjaw the dwarf walked from Ironhold to the Tower of Whispers and back again without stopping once to rest.", 48000)
	sig, spans := audiotest.Compose(48000, []time.Duration{200 * time.Millisecond}, []audio.PCM{a}, time.Second)
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{MaxUtterance: 2 * time.Second}))
	s := audiotest.Encode(t, sig, "111", 4, t0)
	audiotest.Deliver(r, s.Packets, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
	got := rec.byUser("111")
	total := spans[0].End - spans[0].Start
	if want := int(total / (2 * time.Second)); len(got) < want {
		t.Fatalf("%v of speech cut at 2s gave %d utterances, want at least %d", total, len(got), want)
	}
	for i, u := range got {
		if u.Duration() > 2*time.Second {
			t.Errorf("utterance %d lasts %v, over the 2s maximum", i, u.Duration())
		}
		if i < len(got)-1 && !u.Truncated {
			t.Errorf("utterance %d is not marked truncated", i)
		}
	}
}

func TestBadPacketsKeepLaneRunning(t *testing.T) {
	sig, spans := twoSentences(t)
	s := audiotest.Encode(t, sig, "111", 5, t0)
	// Corrupt a packet in the middle of each sentence.
	var bad int
	for i := range s.Packets {
		off := s.Packets[i].Received.Sub(t0)
		for _, sp := range spans {
			if off > sp.Start+500*time.Millisecond && off <= sp.Start+520*time.Millisecond {
				s.Packets[i].Opus = []byte{0xFF} // code 3 without a frame count
				bad++
			}
		}
	}
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{}))
	errs := audiotest.Deliver(r, s.Packets, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
	if len(errs) != bad {
		t.Fatalf("got %d errors for %d bad packets: %v", len(errs), bad, errs)
	}
	for _, err := range errs {
		if !errors.Is(err, audio.ErrBadPacket) {
			t.Errorf("error %v does not wrap ErrBadPacket", err)
		}
		t.Log(err)
	}
	checkSpans(t, rec.byUser("111"), spans, t0)
	if err := r.Push(audio.Packet{Opus: []byte{1}}); err == nil {
		t.Error("a packet without a user id was accepted")
	}
}

func TestSpeechEvents(t *testing.T) {
	sig, spans := twoSentences(t)
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{}))
	s := audiotest.Encode(t, sig, "111", 6, t0)
	audiotest.Deliver(r, s.Packets, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
	var kinds []audio.EventKind
	for _, e := range rec.events {
		kinds = append(kinds, e.Kind)
	}
	want := []audio.EventKind{audio.SpeechStarted, audio.SpeechHeld, audio.SpeechEnded, audio.SpeechStarted, audio.SpeechHeld, audio.SpeechEnded}
	if len(kinds) != len(want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Fatalf("events %v, want %v", kinds, want)
		}
	}
	held := rec.events[1].At.Sub(rec.events[0].At)
	if held < audio.DefaultHoldAfter || held > audio.DefaultHoldAfter+40*time.Millisecond {
		t.Errorf("speech held reported %v after it started, want %v", held, audio.DefaultHoldAfter)
	}
	_ = spans
}

func TestConfigErrors(t *testing.T) {
	for _, c := range []audio.Config{
		{Endpoint: -time.Second},
		{OnsetFrames: 9},
		{Endpoint: time.Second, MaxUtterance: 500 * time.Millisecond},
		{ReorderWindow: -1},
		{MaxRate: 0.5},
		{RateBurst: -time.Second},
	} {
		if _, err := audio.NewRouter(c); err == nil {
			t.Errorf("config %+v accepted", c)
		} else {
			t.Log(err)
		}
	}
}

// A transport that reports its own losses (Packet.Lost) is not waited for.
func TestTransportReportedLoss(t *testing.T) {
	sig, spans := twoSentences(t)
	s := audiotest.Encode(t, sig, "111", 8, t0)
	var ps []audio.Packet
	lost := 0
	for i, p := range s.Packets {
		if i%10 == 5 {
			lost++
			continue
		}
		p.Lost = lost
		lost = 0
		ps = append(ps, p)
	}
	var rec recorder
	r := mustRouter(t, rec.config(audio.Config{ReorderDelay: time.Hour, ReorderWindow: 1000}))
	audiotest.Deliver(r, ps, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
	checkSpans(t, rec.byUser("111"), spans, t0)
	st, _ := r.Stats("111")
	want := 0
	for _, p := range ps {
		want += p.Lost
	}
	if st.Lost != want {
		t.Errorf("lane counted %d lost, want %d", st.Lost, want)
	}
}

// Run pushes packets from a channel and ticks on its clock, so a speaker
// who stops sending is endpointed; it stops with its context and finishes
// what is open.
func TestRun(t *testing.T) {
	audiotest.CheckLeaks(t)
	a := audiotest.Speak(t, "Tell me about Ironhold.", 48000)
	sig, spans := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{a}, 0)
	s := audiotest.Encode(t, sig, "111", 3, t0)
	clk := clocktest.NewFake(t0)
	got := make(chan audio.Utterance, 4)
	r := mustRouter(t, audio.Config{OnUtterance: func(u audio.Utterance) { got <- u }})
	packets := make(chan audio.Packet, len(s.Packets))
	for _, p := range s.Packets {
		packets <- p
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx, packets, clk) }()
	var u audio.Utterance
	end := s.Packets[len(s.Packets)-1].Received
wait:
	for clk.Now().Before(end.Add(2 * time.Second)) {
		wctx, wcancel := context.WithTimeout(context.Background(), hangGuard)
		clk.WaitTimers(wctx, 1)
		wcancel()
		clk.Advance(audio.TickInterval)
		select {
		case u = <-got:
			break wait
		case <-time.After(time.Millisecond):
		}
	}
	if u.UserID == "" {
		// The fake clock has run past the end; a loaded machine may still be
		// delivering the utterance.
		select {
		case u = <-got:
		case <-time.After(hangGuard):
		}
	}
	if u.UserID != "111" {
		t.Fatal("Run never endpointed the utterance")
	}
	if d := u.End.Sub(t0) - spans[0].End; d < -200*time.Millisecond || d > 100*time.Millisecond {
		t.Errorf("utterance ends at %v, speech at %v", u.End.Sub(t0), spans[0].End)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("Run returned %v", err)
	}
}

// Issue 29: the lane restarts its stream instead of dropping the rest of
// it when the sender's numbering jumps (-5000, +40000) or an SSRC is
// reused with lower numbers after a pause, and puts a packet or two
// reordered at the very start in order. No packet is late, none counted
// lost, every one is decoded and both sentences are still found.
func TestLaneRestartsAndStartWindow(t *testing.T) {
	sig, spans := twoSentences(t)
	half := func(ps []audio.Packet) int {
		// The start of the pause between the sentences.
		mid := t0.Add(spans[0].End + 300*time.Millisecond)
		for i, p := range ps {
			if !p.Received.Before(mid) {
				return i
			}
		}
		t.Fatal("no packet after the first sentence")
		return 0
	}
	renumber := func(by int) func([]audio.Packet) []audio.Packet {
		return func(ps []audio.Packet) []audio.Packet {
			for i := half(ps); i < len(ps); i++ {
				ps[i].Sequence += uint16(by)
			}
			return ps
		}
	}
	for _, tc := range []struct {
		name string
		mod  func([]audio.Packet) []audio.Packet
	}{
		{"two reordered at the start", func(ps []audio.Packet) []audio.Packet {
			ps[0], ps[2] = ps[2], ps[0] // 2, 1, 0, then 3 on
			ps[0].Received, ps[2].Received = ps[2].Received, ps[0].Received
			return ps
		}},
		{"a jump of -5000", renumber(-5000)},
		{"a jump of +40000", renumber(40000)},
		{"an SSRC reused with lower numbers after a pause", func(ps []audio.Packet) []audio.Packet {
			h := half(ps)
			back := ps[h].Sequence - ps[0].Sequence + 20 // below where the stream began
			out := append([]audio.Packet(nil), ps[:h]...)
			// The client was gone for two seconds, then came back.
			for _, p := range ps[h:] {
				p.Sequence -= back
				p.Received = p.Received.Add(2 * time.Second)
				out = append(out, p)
			}
			return out
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var rec recorder
			r := mustRouter(t, rec.config(audio.Config{}))
			ps := tc.mod(audiotest.Encode(t, sig, "111", 42, t0).Packets)
			end := ps[len(ps)-1].Received.Add(time.Second)
			if errs := audiotest.Deliver(r, ps, t0, end); len(errs) > 0 {
				t.Fatalf("push errors: %v", errs)
			}
			st, _ := r.Stats("111")
			t.Logf("stats: %+v", st)
			if st.Late != 0 || st.Lost != 0 || st.Packets+st.Silence != len(ps) {
				t.Fatalf("%d packets: %d decoded, %d silence, %d late, %d lost", len(ps), st.Packets, st.Silence, st.Late, st.Lost)
			}
			if got := rec.byUser("111"); len(got) != len(spans) {
				t.Fatalf("%d utterances, want %d", len(got), len(spans))
			}
		})
	}
}
