package turn_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/lifecycle/clock"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/npc/llm"
	"github.com/glyphoxa/glyphoxa/npc/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
	"github.com/glyphoxa/glyphoxa/voice/tts"
	"github.com/glyphoxa/glyphoxa/voice/tts/ttstest"
	"github.com/glyphoxa/glyphoxa/voice/turn"
)

// Provider delays of the fakes in BenchmarkTurn.
var (
	sttDelay = flag.Duration("stt-delay", 150*time.Millisecond, "fake speech-to-text delay before the final result")
	llmDelay = flag.Duration("llm-delay", 300*time.Millisecond, "fake LLM delay before the first token")
	ttsDelay = flag.Duration("tts-delay", 100*time.Millisecond, "fake speech synthesis delay before the first audio")
)

// The scene every benchmark turn plays: a player asks Grimjaw about the
// shipment, the recogniser mishears his name, correction restores it.
const (
	campaignPath = "../../testdata/campaigns/ironhold-saga.yaml"
	heard        = "grim jaw, what news of the shipment?"
	corrected    = "Grimjaw, what news of the shipment?"
	npcID        = "grimjaw"
	answer       = "Bah, the shipment again. Duskwood swallowed it, lad. Ask Elara in her tower if you must."
)

// instant is the system clock whose timers fire at once: playback runs as
// fast as it can, so a benchmark turn does not last as long as its speech.
type instant struct{}

func (instant) Now() time.Time { return time.Now() }
func (instant) NewTimer(time.Duration) clock.Timer {
	c := make(chan time.Time, 1)
	c <- time.Now()
	return firedTimer(c)
}

type firedTimer chan time.Time

func (f firedTimer) C() <-chan time.Time { return f }
func (firedTimer) Stop() bool            { return false }

type firstPacket struct{ at time.Time }

func (f *firstPacket) WriteOpus([]byte) error {
	if f.at.IsZero() {
		f.at = time.Now()
	}
	return nil
}

// hotContext adapts the hot-context assembler to the NPC agent, as the bot
// does, and keeps how long each assembly took.
type hotContext struct {
	a    *hotctx.Assembler
	mu   sync.Mutex
	took []time.Duration
}

// HotContext assembles the NPC's hot context.
func (h *hotContext) HotContext(ctx context.Context, npcID, sessionID string, budgetTokens int) (npc.HotContext, error) {
	start := time.Now()
	c, err := h.a.Assemble(ctx, npcID, sessionID, budgetTokens)
	h.mu.Lock()
	h.took = append(h.took, time.Since(start))
	h.mu.Unlock()
	if err != nil {
		return npc.HotContext{}, err
	}
	out := npc.HotContext{Text: c.Text}
	for _, t := range c.Traces {
		out.Traces = append(out.Traces, npc.Trace{ID: t.ID, FactID: t.FactID, Summary: t.Summary})
	}
	return out, nil
}

// durations returns how long each assembly took.
func (h *hotContext) durations() []time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.took)
}

// delays are the fakes' provider delays.
type delays struct{ stt, llm, tts time.Duration }

func (d delays) total() time.Duration { return d.stt + d.llm + d.tts }

// rig is a whole voice pipeline: a player's Opus packets, Deepgram
// streaming (fake), stage-1 name correction prepared with the campaign's
// entities, the NPC agent with its hot context assembled from the
// campaign in PostgreSQL, an OpenAI-compatible LLM (fake), OpenAI speech
// synthesis (fake) and the playback pump.
type rig struct {
	d       delays
	packets []audio.Packet
	last    time.Time

	dg     *stttest.Deepgram
	lm     *llmtest.Server
	speech *ttstest.Server

	rec   *stt.Deepgram
	hints stt.Hints
	fix   *correction.Pipeline
	synth *tts.OpenAI
	agent *npc.Agent
	hot   *hotContext
	log   *postgres.SessionLog
	sess  string
	n     int
}

func newRig(tb testing.TB, d delays) *rig {
	tb.Helper()
	store, _ := pgtest.NewStore(tb, 384)
	camp := pgtest.Import(tb, store, campaignPath)

	f, err := os.Open(campaignPath)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, filepath.Base(campaignPath))
	if err != nil {
		tb.Fatal(err)
	}
	var ents []correction.Entity
	for _, e := range cf.Entities {
		ents = append(ents, correction.Entity{ID: e.ID, Name: e.Name, Aliases: e.Aliases})
	}
	fix, err := correction.NewPipeline(correction.WithEntities(ents))
	if err != nil {
		tb.Fatal(err)
	}

	clip := audiotest.Speak(tb, corrected, 48000)
	sig, _ := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{clip}, 200*time.Millisecond)
	packets := audiotest.Encode(tb, sig, "111", 1, time.Now()).Packets

	r := &rig{d: d, packets: packets, last: packets[len(packets)-1].Received, fix: fix, log: camp.Sessions()}
	r.dg = stttest.NewDeepgram(func(stttest.Call) string { return heard })
	tb.Cleanup(r.dg.Close)
	r.dg.SetDelay(d.stt)
	r.lm = llmtest.New(llmtest.Script(llmtest.Reply{Text: answer, Delay: d.llm}))
	tb.Cleanup(r.lm.Close)
	r.speech = ttstest.New()
	tb.Cleanup(r.speech.Close)
	r.speech.SetDelay(d.tts)

	r.rec = &stt.Deepgram{BaseURL: r.dg.URL}
	r.hints = stt.Hints{Keyterms: correction.DeepgramKeyterms(correction.Rank(ents, correction.Salience{}), 500)}
	r.synth = &tts.OpenAI{BaseURL: r.speech.URL + "/v1"}
	client, err := llm.New(llm.Config{BaseURL: r.lm.URL(), Model: "fake"})
	if err != nil {
		tb.Fatal(err)
	}
	r.hot = &hotContext{a: hotctx.New(camp, hotctx.Config{})}
	r.agent, err = npc.NewAgent(npc.Config{LLM: client, Context: r.hot,
		Graph: camp.Graph(), Heard: camp.Sessions()})
	if err != nil {
		tb.Fatal(err)
	}
	// A live session whose recent transcript the hot context reads.
	r.sess = "live"
	ctx := context.Background()
	if err := r.log.StartSession(ctx, r.sess, time.Now().UTC()); err != nil {
		tb.Fatal(err)
	}
	return r
}

// outcome is what a turn produced besides its timeline.
type outcome struct {
	text string // the corrected transcript
	// record is how long writing the line to the session log took (part
	// of the step from correction to the hot context).
	record time.Duration
	said   []string
	res    npc.TurnResult
}

// turn runs one voice turn. With prefetch the NPC's hot context is
// assembled from the end of speech on, while speech-to-text runs, as the
// voice session does for the NPC likely to answer; otherwise after
// correction, inside the NPC's turn.
func (r *rig) turn(ctx context.Context, prefetch bool) (turn.Timeline, outcome, error) {
	var tl turn.Timeline
	var out outcome
	tl.Provider = r.d.total()
	var u audio.Utterance
	router, err := audio.NewRouter(audio.Config{OnUtterance: func(x audio.Utterance) {
		u = x
		tl.Mark(turn.EndOfSpeech, time.Now())
	}})
	if err != nil {
		return tl, out, err
	}
	for _, p := range r.packets {
		if err := router.Push(p); err != nil {
			return tl, out, err
		}
	}
	router.Tick(r.last.Add(time.Second))
	if u.Audio.Samples == nil {
		return tl, out, fmt.Errorf("the router delivered no utterance from %d packets", len(r.packets))
	}
	if prefetch {
		r.agent.Prefetch(ctx, npcID, r.sess)
	}

	tr, err := r.rec.Transcribe(ctx, u.Audio, r.hints)
	if err != nil {
		return tl, out, err
	}
	tl.Mark(turn.STTFinal, time.Now())

	cu := correction.Utterance{Text: tr.Text}
	for _, w := range tr.Words {
		cu.Words = append(cu.Words, correction.Word{Text: w.Text, Confidence: w.Confidence})
	}
	out.text = r.fix.Correct(cu).Text
	tl.Mark(turn.CorrectionDone, time.Now())

	// The player's line goes to the session log before the NPC answers.
	r.n++
	recStart := time.Now()
	if _, err := r.log.WriteEntry(ctx, memory.TranscriptEntry{SessionID: r.sess, SpeakerID: "111", SpeakerName: "Thorin",
		Text: out.text, RawText: tr.Text, At: time.Now().UTC(), Duration: u.Duration(),
		IdempotencyKey: fmt.Sprintf("bench:%s:%d", r.sess, r.n)}); err != nil {
		return tl, out, err
	}
	out.record = time.Since(recStart)

	sentences := make(chan string, 16)
	type agentDone struct {
		res npc.TurnResult
		err error
	}
	done := make(chan agentDone, 1)
	turnStart := time.Now()
	go func() {
		defer close(sentences)
		res, err := r.agent.Turn(ctx, npc.TurnInput{NPCID: npcID, SessionID: r.sess, SpeakerID: "111",
			SpeakerName: "Thorin", Text: out.text}, func(s string) { sentences <- s })
		done <- agentDone{res, err}
	}()
	w := &firstPacket{}
	player, err := playback.New(w, playback.WithClock(instant{}))
	if err != nil {
		for range sentences {
		}
		<-done
		return tl, out, err
	}
	pr, playErr := player.Play(ctx, sentences, r.synth, tts.Voice{Name: "onyx"})
	for range sentences { // what playback left after a failure
	}
	ad := <-done
	if playErr != nil {
		return tl, out, playErr
	}
	if ad.err != nil {
		return tl, out, ad.err
	}
	out.said, out.res = pr.Said, ad.res
	tl.Mark(turn.ContextReady, turnStart.Add(ad.res.Timings.ContextReady))
	tl.Mark(turn.LLMFirstToken, turnStart.Add(ad.res.Timings.FirstToken))
	tl.Mark(turn.FirstAudio, pr.FirstAudio)
	tl.Mark(turn.FirstPacket, w.at)
	return tl, out, nil
}

// check reports what is wrong with a turn's result: the corrected
// transcript, the sentences spoken, the stages stamped in order, and the
// LLM request carrying the corrected line and the hot context (which holds
// the line itself unless it was assembled before the line was recorded).
func (r *rig) check(tl turn.Timeline, out outcome, prefetched bool) error {
	if out.text != corrected {
		return fmt.Errorf("corrected %q to %q, want %q", heard, out.text, corrected)
	}
	if len(out.said) != 3 {
		return fmt.Errorf("said %q, want the 3 sentences of %q", out.said, answer)
	}
	for s := turn.EndOfSpeech; s <= turn.FirstPacket; s++ {
		if tl.At(s).IsZero() {
			return fmt.Errorf("stage %s not stamped", s)
		}
		if s > turn.EndOfSpeech && tl.At(s).Before(tl.At(s-1)) {
			return fmt.Errorf("stage %s at %v, before %s", s, tl.At(s).Sub(tl.At(s-1)), s-1)
		}
	}
	reqs := r.lm.Requests()
	if len(reqs) == 0 {
		return fmt.Errorf("the LLM received no request")
	}
	msgs := reqs[len(reqs)-1].Messages
	if last := msgs[len(msgs)-1].Content; last != "Thorin: "+corrected {
		return fmt.Errorf("the LLM was asked %q", last)
	}
	sys := msgs[0].Content
	if !strings.Contains(sys, "What you know:\n- Grimjaw LOCATED_AT Ironhold") {
		return fmt.Errorf("the system prompt lacks the hot context's facts:\n%s", sys)
	}
	if !prefetched && !strings.Contains(sys, "Thorin: "+corrected) {
		return fmt.Errorf("the system prompt lacks the line just recorded:\n%s", sys)
	}
	if out.res.Timings.Speculative != prefetched {
		return fmt.Errorf("prefetched %v, but the turn's context was speculative: %v", prefetched, out.res.Timings.Speculative)
	}
	return nil
}

// TestTurnStages runs one turn of each kind through the whole pipeline with
// no provider delay and checks every stage took part.
func TestTurnStages(t *testing.T) {
	r := newRig(t, delays{})
	for _, prefetch := range []bool{true, false, true} {
		tl, out, err := r.turn(context.Background(), prefetch)
		if err != nil {
			t.Fatalf("prefetch %v: %v", prefetch, err)
		}
		if err := r.check(tl, out, prefetch); err != nil {
			t.Errorf("prefetch %v: %v", prefetch, err)
		}
	}
}

// BenchmarkTurn runs whole voice turns against local fake providers and the
// real PostgreSQL: a player's Opus packets through a lane, Deepgram
// streaming, stage-1 correction of a misheard name, the line written to the
// session log, the NPC agent (its entity and hot context read from the
// sample campaign, an OpenAI-compatible LLM streaming three sentences),
// OpenAI speech synthesis and the playback pump. It reports the bot's own
// overhead (the turn's time less the fakes' configured delays) at p50 and
// p95, and logs each stage's share. Sub-benchmarks: the hot context
// assembled after correction ("context-in-turn") or from the end of speech
// while speech-to-text runs ("context-prefetched", as the voice session
// does for the likely NPC). Delays are set with -stt-delay, -llm-delay,
// -tts-delay; the database comes from GLYPHOXA_TEST_DSN.
func BenchmarkTurn(b *testing.B) {
	for _, mode := range []struct {
		name     string
		prefetch bool
	}{{"context-in-turn", false}, {"context-prefetched", true}} {
		b.Run(mode.name, func(b *testing.B) { benchTurn(b, mode.prefetch) })
	}
}

func benchTurn(b *testing.B, prefetch bool) {
	d := delays{stt: *sttDelay, llm: *llmDelay, tts: *ttsDelay}
	r := newRig(b, d)
	ctx := context.Background()
	// Provider time inside each step (end of speech → STT final, context →
	// first token, first token → first audio).
	provider := [turn.FirstPacket + 1]time.Duration{turn.STTFinal: d.stt, turn.LLMFirstToken: d.llm, turn.FirstAudio: d.tts}
	var overheads []time.Duration
	var steps [turn.FirstPacket + 1][]time.Duration
	var records []time.Duration
	for b.Loop() {
		tl, out, err := r.turn(ctx, prefetch)
		if err != nil {
			b.Fatal(err)
		}
		if err := r.check(tl, out, prefetch); err != nil {
			b.Fatal(err)
		}
		overheads = append(overheads, tl.Overhead())
		records = append(records, out.record)
		for s := turn.STTFinal; s <= turn.FirstPacket; s++ {
			steps[s] = append(steps[s], tl.At(s).Sub(tl.At(s-1))-provider[s])
		}
	}
	b.ReportMetric(ms(pct(overheads, 0.50)), "p50-overhead-ms")
	b.ReportMetric(ms(pct(overheads, 0.95)), "p95-overhead-ms")
	var parts []string
	for s := turn.STTFinal; s <= turn.FirstPacket; s++ {
		parts = append(parts, fmt.Sprintf("%s %.1f/%.1f", s, ms(pct(steps[s], 0.50)), ms(pct(steps[s], 0.95))))
	}
	b.Logf("%d turns, providers stt %v llm %v tts %v; each step's own time (provider delay taken out), p50/p95 ms: %s "+
		"(context_ready includes writing the line to the session log, %.1f/%.1f); hot context assembly %.1f/%.1f",
		len(overheads), d.stt, d.llm, d.tts, strings.Join(parts, ", "), ms(pct(records, 0.50)), ms(pct(records, 0.95)),
		ms(pct(r.hot.durations(), 0.50)), ms(pct(r.hot.durations(), 0.95)))
}

// pct is the p-quantile of ds (nearest rank).
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(ds))
	return s[min(int(p*float64(len(s))), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
