package realtime

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
)

// hangGuard bounds a test that would otherwise hang on a bug; nothing is
// timed against it.
const hangGuard = 2 * time.Minute

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	t.Cleanup(cancel)
	return ctx
}

// voice48k is a voiced 48 kHz test signal of d.
func voice48k(d time.Duration) []int16 {
	n := int(d * DiscordRate / time.Second)
	out := make([]int16, n)
	for i := range out {
		t := float64(i) / DiscordRate
		out[i] = int16(6000 * (math.Sin(2*math.Pi*180*t) + 0.5*math.Sin(2*math.Pi*360*t)))
	}
	return out
}

// hear sends pcm in 20 ms frames, as the voice pipeline does.
func hear(t *testing.T, ctx context.Context, s *Session, pcm []int16) {
	t.Helper()
	const frame = DiscordRate / 50
	for i := 0; i < len(pcm); i += frame {
		if err := s.Hear(ctx, pcm[i:min(len(pcm), i+frame)]); err != nil {
			t.Fatalf("Hear: %v", err)
		}
	}
}

// turnLog is what a reader saw of the session's events.
type turnLog struct {
	audio       []int16
	audioEvents int
	deltas      strings.Builder
	player      []string
	npc         []Event
	tools       []*ToolCall
	done        []string
	errs        []error
	rateLimits  int
}

func (l *turnLog) add(ev Event) {
	switch ev.Kind {
	case EventAudio:
		l.audio = append(l.audio, ev.Audio...)
		l.audioEvents++
	case EventNPCTranscriptDelta:
		l.deltas.WriteString(ev.Text)
	case EventPlayerTranscript:
		l.player = append(l.player, ev.Text)
	case EventNPCTranscript:
		l.npc = append(l.npc, ev)
	case EventToolCall:
		l.tools = append(l.tools, ev.Tool)
	case EventResponseDone:
		l.done = append(l.done, ev.Status)
	case EventError:
		l.errs = append(l.errs, ev.Err)
	case EventRateLimits:
		l.rateLimits++
	}
}

// readUntil reads events into l until stop says so; it fails the test if
// the session ends first.
func readUntil(t *testing.T, ctx context.Context, s *Session, l *turnLog, stop func(Event) bool) {
	t.Helper()
	for {
		select {
		case ev, ok := <-s.Events():
			if !ok {
				t.Fatalf("session ended while waiting: %v", s.Err())
			}
			l.add(ev)
			if stop(ev) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no event came: %v", ctx.Err())
		}
	}
}

func isDone(status string) func(Event) bool {
	return func(ev Event) bool { return ev.Kind == EventResponseDone && ev.Status == status }
}

func dial(t *testing.T, ctx context.Context, cfg Config) *Session {
	t.Helper()
	s, err := Dial(ctx, cfg)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestFullTurn plays one turn against the fake server in each dialect: the
// player's audio goes up resampled to 24 kHz, the answer (real espeak-ng
// speech) comes back at 48 kHz with its transcript, and the next turn's
// hot context goes up as an instructions-only session.update.
func TestFullTurn(t *testing.T) {
	ctx := testCtx(t)
	speech, err := realtimetest.Speech(ctx, "The mine is closed, stranger.")
	if err != nil {
		t.Fatal(err)
	}
	for _, proto := range []Protocol{GA, Beta} {
		t.Run(proto.String(), func(t *testing.T) {
			t.Parallel()
			srv := realtimetest.NewServer(t, realtimetest.Options{
				APIKey: "sk-test", Beta: proto == Beta, Transcript: "Grimjaw, what news from the mine?",
				Default: realtimetest.Reply{Text: "The mine is closed, stranger.", Audio: speech},
			})
			var m Counters
			s := dial(t, ctx, Config{URL: srv.URL(), APIKey: "sk-test", Protocol: proto, Model: "gpt-realtime-mini", Voice: "cedar",
				Instructions: "You are Grimjaw, a blacksmith.", Metrics: &m,
				Tools:  []Tool{{Name: "recall", Description: "remember", Parameters: map[string]any{"type": "object"}}},
				Runner: ToolRunnerFunc(func(context.Context, string, json.RawMessage) (string, error) { return "", nil })})

			heard := voice48k(time.Second)
			hear(t, ctx, s, heard)
			if err := s.EndOfTurn(ctx); err != nil {
				t.Fatal(err)
			}
			var l turnLog
			readUntil(t, ctx, s, &l, isDone("completed"))

			st := srv.State()
			if st.Auth[0] != "Bearer sk-test" || st.Models[0] != "gpt-realtime-mini" {
				t.Errorf("handshake: auth %q model %q", st.Auth[0], st.Models[0])
			}
			if got, want := st.BetaHdr[0], map[Protocol]string{GA: "", Beta: "realtime=v1"}[proto]; got != want {
				t.Errorf("OpenAI-Beta header %q, want %q", got, want)
			}
			checkSession(t, proto, st.Sessions[0])
			if len(st.Commits) != 1 || len(l.player) != 1 || l.player[0] != "Grimjaw, what news from the mine?" {
				t.Fatalf("commits %d, player transcripts %q", len(st.Commits), l.player)
			}
			// One second at 48 kHz is 24000 samples at 24 kHz, plus the
			// resampler's flushed tail.
			if n := len(st.Commits[0]); n < 24000 || n > 24000+64 {
				t.Errorf("committed %d samples, want 24000..24064", n)
			}
			if in, out := (audio.PCM{Rate: 48000, Samples: heard}).RMS(), (audio.PCM{Rate: 24000, Samples: st.Commits[0]}).RMS(); math.Abs(in-out) > 0.2 {
				t.Errorf("level heard %.2f dBFS, committed %.2f dBFS", in, out)
			}
			// The answer: twice the samples at 48 kHz, same level.
			if n, want := len(l.audio), 2*len(speech); n < want || n > want+140 {
				t.Errorf("answer audio %d samples at 48 kHz, want about %d", n, want)
			}
			if got, want := (audio.PCM{Rate: 48000, Samples: l.audio}).RMS(), (audio.PCM{Rate: 24000, Samples: speech}).RMS(); math.Abs(got-want) > 0.3 {
				t.Errorf("answer level %.2f dBFS, speech %.2f dBFS", got, want)
			}
			if l.deltas.String() != "The mine is closed, stranger." {
				t.Errorf("transcript deltas %q", l.deltas.String())
			}
			if len(l.npc) != 1 || l.npc[0].Text != "The mine is closed, stranger." || l.npc[0].Interrupted {
				t.Errorf("NPC transcript %+v", l.npc)
			}
			snap := m.Snapshot()
			if snap.AudioIn < time.Second || snap.AudioOut < time.Duration(len(speech))*time.Second/24000 || len(snap.FirstAudio) != 1 || snap.Responses["completed"] != 1 {
				t.Errorf("metrics %+v", snap)
			}

			// Next turn: fresh hot context first.
			if err := s.UpdateInstructions(ctx, "You are Grimjaw. The players just asked about the mine."); err != nil {
				t.Fatal(err)
			}
			if !srv.Wait(ctx, func(st realtimetest.State) bool { return len(st.Sessions) == 2 }) {
				t.Fatal("no second session.update")
			}
			upd := srv.State().Sessions[1]
			if upd["instructions"] != "You are Grimjaw. The players just asked about the mine." || len(upd) > 2 {
				t.Errorf("instructions update %v", upd)
			}
			if err := s.Close(); err != nil || !errors.Is(s.Err(), ErrClosed) {
				t.Errorf("Close = %v, Err = %v", err, s.Err())
			}
			for range s.Events() {
				// Events still buffered drain, then the channel is closed.
			}
			if err := s.Hear(ctx, heard[:960]); !errors.Is(err, ErrClosed) {
				t.Errorf("Hear after Close = %v", err)
			}
		})
	}
}

// checkSession checks the session.update of the dialect.
func checkSession(t *testing.T, proto Protocol, s map[string]any) {
	t.Helper()
	if s["instructions"] != "You are Grimjaw, a blacksmith." {
		t.Errorf("instructions %v", s["instructions"])
	}
	tools, _ := s["tools"].([]any)
	if len(tools) != 1 || tools[0].(map[string]any)["name"] != "recall" || tools[0].(map[string]any)["type"] != "function" {
		t.Errorf("tools %v", s["tools"])
	}
	if proto == Beta {
		td, has := s["turn_detection"]
		if s["voice"] != "cedar" || s["input_audio_format"] != "pcm16" || !has || td != nil {
			t.Errorf("beta session %v", s)
		}
		return
	}
	a, _ := s["audio"].(map[string]any)
	in, _ := a["input"].(map[string]any)
	out, _ := a["output"].(map[string]any)
	td, has := in["turn_detection"]
	if s["type"] != "realtime" || out["voice"] != "cedar" || !has || td != nil {
		t.Errorf("GA session %v", s)
	}
	if f, _ := in["format"].(map[string]any); f["type"] != "audio/pcm" || f["rate"] != float64(24000) {
		t.Errorf("GA input format %v", in["format"])
	}
}

// recorder is a ToolRunner that records its calls.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (r *recorder) RunTool(_ context.Context, name string, args json.RawMessage) (string, error) {
	r.mu.Lock()
	r.calls = append(r.calls, name+" "+string(args))
	r.mu.Unlock()
	if name == "broken" {
		return "", errors.New("memory store unreachable")
	}
	return `{"memories":["the mine collapsed in session 2"]}`, nil
}

var tools = []Tool{{Name: "recall", Parameters: map[string]any{"type": "object"}}, {Name: "broken"}}

// TestToolCall runs function calls through the ToolRunner and back to the
// model, which then answers.
func TestToolCall(t *testing.T) {
	for _, tc := range []struct {
		name       string
		call       realtimetest.Call
		wantRun    string // the runner's record; empty: not run
		wantOutput string // substring of the output the model got
	}{
		{"recall", realtimetest.Call{Name: "recall", Arguments: `{"query":"the mine"}`}, `recall {"query":"the mine"}`, `"the mine collapsed in session 2"`},
		{"tool fails", realtimetest.Call{Name: "broken", Arguments: `{}`}, `broken {}`, `{"error":"tool broken: memory store unreachable"}`},
		{"unknown tool", realtimetest.Call{Name: "read_secrets", Arguments: `{}`}, "", `there is no tool \"read_secrets\"`},
		{"bad arguments", realtimetest.Call{Name: "recall", Arguments: `{"query":`}, "", `the arguments of recall are not a JSON object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			srv := realtimetest.NewServer(t, realtimetest.Options{Replies: []realtimetest.Reply{{Call: &tc.call, Text: "It collapsed."}}})
			var run recorder
			var m Counters
			s := dial(t, ctx, Config{URL: srv.URL(), Tools: tools, Runner: &run, Metrics: &m})
			hear(t, ctx, s, voice48k(300*time.Millisecond))
			if err := s.EndOfTurn(ctx); err != nil {
				t.Fatal(err)
			}
			var l turnLog
			readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventNPCTranscript })
			readUntil(t, ctx, s, &l, isDone("completed"))
			st := srv.State()
			if len(st.Outputs) != 1 || !strings.Contains(st.Outputs[0].Output, tc.wantOutput) {
				t.Fatalf("function outputs %+v, want one containing %s", st.Outputs, tc.wantOutput)
			}
			if got := strings.Join(run.calls, ";"); got != tc.wantRun {
				t.Errorf("runner ran %q, want %q", got, tc.wantRun)
			}
			if len(l.tools) != 1 || l.tools[0].CallID != st.Outputs[0].CallID || (l.tools[0].Err != nil) != (tc.name != "recall") {
				t.Errorf("tool events %+v", l.tools)
			}
			if st.Count("response.create") != 2 || len(l.done) != 2 {
				t.Errorf("response.create sent %d times, %d responses done; want 2", st.Count("response.create"), len(l.done))
			}
			if len(l.npc) != 1 || l.npc[0].Text != "It collapsed." || len(l.audio) == 0 {
				t.Errorf("answer after the call: %+v, %d samples", l.npc, len(l.audio))
			}
			if snap := m.Snapshot(); snap.ToolCalls != 1 {
				t.Errorf("metrics tool calls %d", snap.ToolCalls)
			}
		})
	}
}

// TestToolBudget lets a turn make one call; the second is refused with an
// error telling the model to answer.
func TestToolBudget(t *testing.T) {
	ctx := testCtx(t)
	second := realtimetest.Reply{Call: &realtimetest.Call{Name: "recall", Arguments: `{"query":"again"}`}, Text: "Enough."}
	srv := realtimetest.NewServer(t, realtimetest.Options{Replies: []realtimetest.Reply{
		{Call: &realtimetest.Call{Name: "recall", Arguments: `{"query":"once"}`}, Next: &second},
	}})
	var run recorder
	s := dial(t, ctx, Config{URL: srv.URL(), Tools: tools, Runner: &run, MaxToolCalls: 1})
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventNPCTranscript })
	st := srv.State()
	if len(run.calls) != 1 || len(st.Outputs) != 2 || !strings.Contains(st.Outputs[1].Output, "tool budget") {
		t.Fatalf("runner calls %q, outputs %+v", run.calls, st.Outputs)
	}
	if l.npc[0].Text != "Enough." {
		t.Errorf("answer %q", l.npc[0].Text)
	}
}

// TestBargeIn interrupts an answer while it plays: the response is
// cancelled, the item truncated at what was heard (capped at what was
// received), no more of its audio comes out, and the next turn, ended
// before the server has wound the old answer down, is answered.
func TestBargeIn(t *testing.T) {
	const text = "Long ago, before the mountain woke, my grandfather forged the first blade of Ironhold in that very forge."
	for _, tc := range []struct {
		name   string
		played time.Duration
		wantMs int
	}{
		{"mid-answer", 130 * time.Millisecond, 130},
		{"played more than received", 10 * time.Second, 200}, // 5 deltas of 40 ms
		{"nothing heard yet", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			srv := realtimetest.NewServer(t, realtimetest.Options{Transcript: "Wait!", Replies: []realtimetest.Reply{{Text: text, HoldAfter: 5}},
				Default: realtimetest.Reply{Text: "Yes?"}})
			s := dial(t, ctx, Config{URL: srv.URL()})
			hear(t, ctx, s, voice48k(400*time.Millisecond))
			if err := s.EndOfTurn(ctx); err != nil {
				t.Fatal(err)
			}
			var l turnLog
			readUntil(t, ctx, s, &l, func(Event) bool { return l.audioEvents == 5 })
			if err := s.EndOfTurn(ctx); !errors.Is(err, ErrBusy) {
				t.Errorf("EndOfTurn while answering = %v, want ErrBusy", err)
			}
			in, err := s.Interrupt(ctx, tc.played)
			if err != nil {
				t.Fatal(err)
			}
			if in.HeardMs != tc.wantMs || in.ItemID == "" || !strings.HasPrefix(in.Full, in.Heard) || (tc.wantMs < 200 && in.Heard == in.Full) {
				t.Errorf("Interrupt = %+v, want heard %d ms and a prefix", in, tc.wantMs)
			}
			// The player goes on talking; the turn ends before the old
			// answer is wound down.
			hear(t, ctx, s, voice48k(300*time.Millisecond))
			if err := s.EndOfTurn(ctx); err != nil {
				t.Fatalf("EndOfTurn after Interrupt: %v", err)
			}
			before := l.audioEvents
			var after turnLog
			readUntil(t, ctx, s, &after, isDone("cancelled"))
			if after.audioEvents != 0 {
				t.Errorf("%d audio events of the cancelled answer after Interrupt (had %d)", after.audioEvents, before)
			}
			if len(after.npc) != 1 || !after.npc[0].Interrupted || after.npc[0].HeardMs != tc.wantMs || after.npc[0].Text != in.Heard {
				t.Errorf("NPC transcript of the cut answer %+v, want heard %q", after.npc, in.Heard)
			}
			// The truncation follows the cancel on the wire: the server may
			// read it after the client saw the cancelled answer.
			srv.Wait(ctx, func(st realtimetest.State) bool { return st.Cancels >= 1 && len(st.Truncs) >= 1 })
			st := srv.State()
			if st.Cancels != 1 || len(st.Truncs) != 1 || st.Truncs[0].AudioEndMs != tc.wantMs || st.Truncs[0].ItemID != in.ItemID {
				t.Errorf("server saw cancels %d, truncations %+v", st.Cancels, st.Truncs)
			}
			readUntil(t, ctx, s, &after, isDone("completed"))
			if len(after.npc) != 2 || after.npc[1].Text != "Yes?" || after.audioEvents == 0 {
				t.Errorf("next answer %+v with %d audio events", after.npc, after.audioEvents)
			}
			if len(after.errs) != 0 {
				t.Errorf("errors: %v", after.errs)
			}
		})
	}
}

// TestInterruptAfterResponseDone truncates an answer the model finished
// sending but the table was still hearing.
func TestInterruptAfterResponseDone(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Three words here."}})
	s := dial(t, ctx, Config{URL: srv.URL()})
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, isDone("completed"))
	in, err := s.Interrupt(ctx, 500*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if !srv.Wait(ctx, func(st realtimetest.State) bool { return len(st.Truncs) == 1 }) {
		t.Fatal("no truncation")
	}
	st := srv.State()
	if st.Cancels != 0 || st.Truncs[0].AudioEndMs != 500 || in.HeardMs != 500 || in.Heard == "" || in.Heard == in.Full {
		t.Errorf("cancels %d, truncation %+v, interruption %+v", st.Cancels, st.Truncs, in)
	}
}

// TestIdleClose closes a session nobody talks to, on a fake clock; audio
// postpones it.
func TestIdleClose(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{})
	clk := clocktest.NewFake(time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC))
	var m Counters
	s := dial(t, ctx, Config{URL: srv.URL(), Clock: clk, IdleTimeout: time.Minute, Metrics: &m})
	if !clk.WaitCreated(ctx, 1) {
		t.Fatal("no idle timer")
	}
	clk.Advance(40 * time.Second)
	hear(t, ctx, s, voice48k(100*time.Millisecond)) // activity at 0:40
	clk.Advance(20 * time.Second)                   // timer fires at 1:00, idle 20 s
	if !clk.WaitCreated(ctx, 2) {
		t.Fatal("idle timer not re-armed")
	}
	if p := clk.Pending(); len(p) != 1 || p[0] != 40*time.Second {
		t.Fatalf("re-armed for %v, want 40s", p)
	}
	select {
	case <-s.Done():
		t.Fatalf("closed early: %v", s.Err())
	default:
	}
	clk.Advance(40 * time.Second)
	select {
	case <-s.Done():
	case <-ctx.Done():
		t.Fatal("not closed after a minute idle")
	}
	if !errors.Is(s.Err(), ErrIdle) {
		t.Errorf("Err = %v, want ErrIdle", s.Err())
	}
	if err := s.Hear(ctx, voice48k(20*time.Millisecond)); !errors.Is(err, ErrIdle) {
		t.Errorf("Hear after idle close = %v", err)
	}
	if !srv.Wait(ctx, func(st realtimetest.State) bool { return st.Connected == 0 }) {
		t.Error("server still connected")
	}
	if m.Snapshot().Closed["idle"] != 1 {
		t.Errorf("closes %v", m.Snapshot().Closed)
	}
}

// TestAudioLimit stops a session whose budget of audio minutes runs out,
// on the way in and on the way out, and shares a budget across sessions.
func TestAudioLimit(t *testing.T) {
	t.Run("hearing", func(t *testing.T) {
		ctx := testCtx(t)
		srv := realtimetest.NewServer(t, realtimetest.Options{})
		s := dial(t, ctx, Config{URL: srv.URL(), MaxAudio: 500 * time.Millisecond})
		var err error
		frames := 0
		for _, f := range chunks(voice48k(time.Second), 960) {
			if err = s.Hear(ctx, f); err != nil {
				break
			}
			frames++
		}
		if !errors.Is(err, ErrAudioLimit) || frames != 25 {
			t.Fatalf("Hear failed after %d frames with %v, want ErrAudioLimit after 25 (500 ms)", frames, err)
		}
		<-s.Done()
		if !errors.Is(s.Err(), ErrAudioLimit) {
			t.Errorf("Err = %v", s.Err())
		}
	})
	t.Run("speaking, shared budget", func(t *testing.T) {
		ctx := testCtx(t)
		srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "A very long answer that will not fit in the budget at all."}})
		budget := NewBudget(time.Second)
		s := dial(t, ctx, Config{URL: srv.URL(), Budget: budget})
		hear(t, ctx, s, voice48k(600*time.Millisecond))
		if err := s.EndOfTurn(ctx); err != nil {
			t.Fatal(err)
		}
		var l turnLog
		for ev := range s.Events() {
			l.add(ev)
		}
		if !errors.Is(s.Err(), ErrAudioLimit) {
			t.Fatalf("Err = %v, want ErrAudioLimit", s.Err())
		}
		if got := time.Duration(len(l.audio)) * time.Second / DiscordRate; got > 410*time.Millisecond || got < 300*time.Millisecond {
			t.Errorf("%v of answer played, want the 400 ms left in the budget", got)
		}
		if u := budget.Used(); u > time.Second {
			t.Errorf("budget overspent: %v", u)
		}
		s2 := dial(t, ctx, Config{URL: srv.URL(), Budget: budget})
		if err := s2.Hear(ctx, voice48k(40*time.Millisecond)); !errors.Is(err, ErrAudioLimit) {
			t.Errorf("second session on the spent budget: Hear = %v", err)
		}
	})
}

func chunks(pcm []int16, n int) [][]int16 {
	var out [][]int16
	for i := 0; i < len(pcm); i += n {
		out = append(out, pcm[i:min(len(pcm), i+n)])
	}
	return out
}

// TestServerErrors reports the server's error events and goes on.
func TestServerErrors(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Still here."}})
	var m Counters
	s := dial(t, ctx, Config{URL: srv.URL(), Metrics: &m})
	var l turnLog

	srv.Send(`{"type":"error","event_id":"e1","error":{"type":"rate_limit_error","code":"rate_limit_exceeded","message":"Rate limit reached for tokens per min","param":null,"event_id":null}}`)
	readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventError })
	var serr *ServerError
	if !errors.As(l.errs[0], &serr) || !errors.Is(l.errs[0], ErrRateLimited) || !strings.Contains(serr.Error(), "Rate limit reached") {
		t.Errorf("rate-limit error event: %v", l.errs[0])
	}

	srv.Send(`{"type":"response.done","response":{"id":"resp_x","status":"failed","status_details":{"type":"failed","error":{"type":"server_error","code":"internal","message":"boom"}}}}`)
	readUntil(t, ctx, s, &l, isDone("failed"))
	if len(l.errs) != 2 || !errors.As(l.errs[1], &serr) || serr.Code != "internal" {
		t.Errorf("failed response: %v", l.errs)
	}

	// Too short a turn is refused before the server sees it.
	hear(t, ctx, s, voice48k(40*time.Millisecond))
	if err := s.EndOfTurn(ctx); !errors.Is(err, ErrNothingHeard) || !strings.Contains(err.Error(), "shorter than the 100 ms") {
		t.Errorf("EndOfTurn of 40 ms = %v", err)
	}
	if err := s.EndOfTurn(ctx); !errors.Is(err, ErrNothingHeard) {
		t.Errorf("EndOfTurn of nothing = %v", err)
	}
	// A server-side refusal of a client event comes back as an error.
	if err := s.send(ctx, s.newEvent("response.frobnicate")); err != nil {
		t.Fatal(err)
	}
	readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventError })
	if !errors.As(l.errs[2], &serr) || serr.Code != "invalid_event" || !strings.HasPrefix(serr.EventID, "gx_") {
		t.Errorf("refused event: %v", l.errs[2])
	}

	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	readUntil(t, ctx, s, &l, isDone("completed"))
	readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventRateLimits })
	if len(l.npc) != 1 || l.npc[0].Text != "Still here." || l.rateLimits != 1 {
		t.Errorf("turn after errors: %+v, rate-limit events %d", l.npc, l.rateLimits)
	}
	snap := m.Snapshot()
	if snap.Errors["rate_limit_exceeded"] != 1 || snap.Errors["internal"] != 1 || snap.RateLimits["tokens"] != 49000 {
		t.Errorf("metrics %+v", snap)
	}

	// The server going away ends the session with its reason.
	srv.Disconnect()
	<-s.Done()
	if s.Err() == nil || errors.Is(s.Err(), ErrClosed) {
		t.Errorf("Err after disconnect = %v", s.Err())
	}
}

// TestMalformedEvents feeds events the client cannot use: each is reported
// as a ProtocolError naming the event, nothing panics, and the session
// answers a turn afterwards.
func TestMalformedEvents(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Fine."}})
	s := dial(t, ctx, Config{URL: srv.URL()})
	for _, tc := range []struct {
		raw, want string
	}{
		{`not json`, "cannot decode"},
		{`{"type": 5}`, "cannot decode"},
		{`{"event_id":"e"}`, "no type"},
		{`{"type":"response.output_audio.delta","response_id":"r","item_id":"i","delta":"%%%"}`, "response.output_audio.delta: bad audio delta: audio is not base64"},
		{`{"type":"response.audio.delta","response_id":"r","item_id":"i","delta":"AAAA"}`, "response.audio.delta: bad audio delta: audio has 3 bytes"},
		{`{"type":"response.audio.delta","response_id":"r","item_id":"i","delta":"AA=="}`, "audio has 1 bytes, not whole 16-bit samples"},
		{`{"type":"response.output_audio.delta","delta":""}`, "no item_id"},
		{`{"type":"error"}`, "error: no error object"},
		{`{"type":"response.created","response":{}}`, "response.created: no response id"},
		{`{"type":"response.done"}`, "response.done: no response id"},
		{`{"type":"response.output_item.added"}`, "no item"},
		{`{"type":"response.function_call_arguments.done","name":"recall"}`, "no call_id"},
		{`{"type":"response.output_audio.delta","item_id":["x"]}`, "response.output_audio.delta: cannot decode"},
	} {
		srv.Send(tc.raw)
		var l turnLog
		readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventError })
		if !errors.Is(l.errs[0], ErrProtocol) || !strings.Contains(l.errs[0].Error(), tc.want) {
			t.Errorf("%s: got %v, want a protocol error containing %q", tc.raw, l.errs[0], tc.want)
		}
	}
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, isDone("completed"))
	if len(l.npc) != 1 || l.npc[0].Text != "Fine." || len(l.errs) != 0 {
		t.Errorf("turn after malformed events: %+v %v", l.npc, l.errs)
	}
}

// TestDialErrors checks what keeps a session from starting is named.
func TestDialErrors(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{APIKey: "right"})
	beta := realtimetest.NewServer(t, realtimetest.Options{Beta: true})
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"wrong key", Config{URL: srv.URL(), APIKey: "wrong"}, "HTTP 401"},
		{"bad scheme", Config{URL: "https://api.openai.com/v1/realtime"}, "must be ws:// or wss://"},
		{"tools without runner", Config{URL: srv.URL(), Tools: tools}, "no Runner"},
		{"duplicate tool", Config{URL: srv.URL(), Tools: []Tool{{Name: "a"}, {Name: "a"}}, Runner: &recorder{}}, `tool "a" declared twice`},
		{"GA session to a beta server", Config{URL: beta.URL()}, "unknown_parameter) on session.audio"},
		{"nobody listening", Config{URL: "ws://127.0.0.1:1/v1/realtime"}, "realtime dial"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Dial(ctx, tc.cfg)
			if err == nil {
				s.Close()
				t.Fatal("Dial succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Dial = %v, want it to mention %q", err, tc.want)
			}
		})
	}
	var de *DialError
	_, err := Dial(ctx, Config{URL: srv.URL(), APIKey: "wrong"})
	if !errors.As(err, &de) || de.Status != 401 || errors.Is(err, ErrRateLimited) {
		t.Errorf("401: %v", err)
	}
}

func TestCutText(t *testing.T) {
	for _, tc := range []struct {
		text         string
		heard, total int
		want         string
	}{
		{"one two three four", 500, 1000, "one two"},
		{"one two three four", 520, 1000, "one two"},
		{"one two three four", 1000, 1000, "one two three four"},
		{"one two three four", 0, 1000, ""},
		{"one", 100, 0, ""},
		{"héllo wörld ünd mehr", 600, 1000, "héllo wörld"},
	} {
		if got := cutText(tc.text, tc.heard, tc.total); got != tc.want {
			t.Errorf("cutText(%q, %d, %d) = %q, want %q", tc.text, tc.heard, tc.total, got, tc.want)
		}
	}
}

// TestServerVAD hands turn-taking to the server: the session asks for
// server_vad, EndOfTurn is refused, and the server's speech_started comes
// through for barge-in.
func TestServerVAD(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{})
	s := dial(t, ctx, Config{URL: srv.URL(), ServerVAD: true})
	in := srv.State().Sessions[0]["audio"].(map[string]any)["input"].(map[string]any)
	if td, _ := in["turn_detection"].(map[string]any); td["type"] != "server_vad" {
		t.Errorf("turn_detection %v", in["turn_detection"])
	}
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); !errors.Is(err, errConfig) {
		t.Errorf("EndOfTurn with ServerVAD = %v", err)
	}
	srv.Send(`{"type":"input_audio_buffer.speech_started","audio_start_ms":120,"item_id":"item_9"}`)
	var l turnLog
	var got Event
	readUntil(t, ctx, s, &l, func(ev Event) bool { got = ev; return ev.Kind == EventSpeechStarted })
	if got.ItemID != "item_9" {
		t.Errorf("speech started %+v", got)
	}
}

// TestInterruptDuringToolCall cuts a turn while its tool runs: nothing is
// cancelled at the server (the call's response is over), the call's output
// is still recorded, no answer follows, and the next turn is answered.
func TestInterruptDuringToolCall(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Replies: []realtimetest.Reply{
		{Call: &realtimetest.Call{Name: "recall", Arguments: `{"query":"x"}`}, Text: "Next answer."},
	}})
	started, release := make(chan struct{}), make(chan struct{})
	runner := ToolRunnerFunc(func(ctx context.Context, _ string, _ json.RawMessage) (string, error) {
		close(started)
		<-release
		return `{"ok":true}`, nil
	})
	s := dial(t, ctx, Config{URL: srv.URL(), Tools: tools, Runner: runner})
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, isDone("completed"))
	<-started
	if _, err := s.Interrupt(ctx, 0); err != nil {
		t.Fatal(err)
	}
	close(release)
	readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventToolCall })
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatalf("next turn: %v", err)
	}
	readUntil(t, ctx, s, &l, isDone("completed"))
	st := srv.State()
	if st.Cancels != 0 || st.Count("response.cancel") != 0 || len(st.Outputs) != 1 || st.Count("response.create") != 2 {
		t.Errorf("cancels %d/%d, outputs %d, response.create %d; want 0, 0, 1, 2",
			st.Cancels, st.Count("response.cancel"), len(st.Outputs), st.Count("response.create"))
	}
	if len(l.errs) != 0 || len(l.npc) != 1 || l.npc[0].Text != "Next answer." {
		t.Errorf("errors %v, answers %+v", l.errs, l.npc)
	}
}

// TestFunctionCallNameFromItem runs a call whose arguments event carries
// no name (the name is on the output item, as some API versions send it).
func TestFunctionCallNameFromItem(t *testing.T) {
	ctx := testCtx(t)
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Done."}})
	var run recorder
	s := dial(t, ctx, Config{URL: srv.URL(), Tools: tools, Runner: &run})
	for _, raw := range []string{
		`{"type":"response.created","response":{"id":"resp_x","status":"in_progress"}}`,
		`{"type":"response.output_item.added","response_id":"resp_x","item":{"id":"item_x","type":"function_call","name":"recall","call_id":"call_x"}}`,
		`{"type":"response.function_call_arguments.done","response_id":"resp_x","item_id":"item_x","call_id":"call_x","arguments":"{\"query\":\"ore\"}"}`,
		`{"type":"response.function_call_arguments.done","response_id":"resp_x","item_id":"item_x","call_id":"call_x","arguments":"{\"query\":\"ore\"}"}`,
		`{"type":"response.done","response":{"id":"resp_x","status":"completed"}}`,
	} {
		srv.Send(raw)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, isDone("completed")) // the call's response
	readUntil(t, ctx, s, &l, func(ev Event) bool { return ev.Kind == EventNPCTranscript })
	if got := strings.Join(run.calls, ";"); got != `recall {"query":"ore"}` {
		t.Errorf("runner ran %q, want recall once (the repeated event is ignored)", got)
	}
	if st := srv.State(); len(st.Outputs) != 1 || st.Outputs[0].CallID != "call_x" || st.Count("response.create") != 1 {
		t.Errorf("outputs %+v, response.create %d", st.Outputs, st.Count("response.create"))
	}
	if l.npc[0].Text != "Done." {
		t.Errorf("answer %q", l.npc[0].Text)
	}
}

// TestCloseStopsGoroutines checks a closed session leaves no goroutine
// behind.
func TestCloseStopsGoroutines(t *testing.T) {
	ctx := testCtx(t)
	before := runtime.NumGoroutine()
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: "Bye."}})
	s, err := Dial(ctx, Config{URL: srv.URL(), Tools: tools, Runner: &recorder{}})
	if err != nil {
		t.Fatal(err)
	}
	hear(t, ctx, s, voice48k(200*time.Millisecond))
	if err := s.EndOfTurn(ctx); err != nil {
		t.Fatal(err)
	}
	var l turnLog
	readUntil(t, ctx, s, &l, isDone("completed"))
	s.Close()
	s.Close() // idempotent
	srv.Close()
	for runtime.NumGoroutine() > before {
		select {
		case <-ctx.Done():
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		case <-time.After(10 * time.Millisecond):
		}
	}
}
