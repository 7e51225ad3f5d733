package turn_test

import (
	"context"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/lifecycle/clock"
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

func TestTimelineAndMetrics(t *testing.T) {
	var tl turn.Timeline
	t0 := time.Unix(1000, 0)
	for s, d := range []time.Duration{0, 100, 110, 120, 400, 520, 530} {
		tl.Mark(turn.Stage(s), t0.Add(d*time.Millisecond))
	}
	tl.Mark(turn.FirstPacket, t0.Add(time.Hour)) // the first stamp wins
	tl.Provider = 500 * time.Millisecond
	if tl.Total() != 530*time.Millisecond || tl.Overhead() != 30*time.Millisecond {
		t.Fatalf("total %v overhead %v", tl.Total(), tl.Overhead())
	}
	reg := prometheus.NewRegistry()
	m, err := turn.NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.Observe(&tl)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]int{}
	for _, mf := range mfs {
		series[mf.GetName()] = len(mf.GetMetric())
	}
	if n := series["glyphoxa_voice_turn_stage_seconds"]; n != 6 {
		t.Errorf("%d stage series, want 6", n)
	}
	if series["glyphoxa_voice_turn_overhead_seconds"] != 1 {
		t.Errorf("no overhead histogram: %v", series)
	}
	if _, err := turn.NewMetrics(reg); err == nil {
		t.Error("registering twice succeeded")
	}
	if turn.FirstPacket.String() != "first_packet" {
		t.Error(turn.FirstPacket.String())
	}
}

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

// BenchmarkTurn runs whole voice turns against local fake providers: a
// player's Opus packets through a lane, Deepgram streaming, an
// OpenAI-compatible LLM streaming three sentences, OpenAI speech synthesis
// and the playback pump, and reports the bot's own overhead (the turn's
// time less the fakes' configured delays) at p50 and p95. Correction and
// hot-context retrieval are not part of this pipeline and are stamped as
// taking no time. Delays are set with -stt-delay, -llm-delay, -tts-delay.
func BenchmarkTurn(b *testing.B) {
	clip := audiotest.Speak(b, "Grimjaw, what news from the Tower of Whispers?", 48000)
	sig, _ := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{clip}, 200*time.Millisecond)
	t0 := time.Now()
	packets := audiotest.Encode(b, sig, "111", 1, t0).Packets
	last := packets[len(packets)-1].Received

	dg := stttest.NewDeepgram(func(stttest.Call) string { return "Grimjaw, what news from the Tower of Whispers?" })
	defer dg.Close()
	dg.SetDelay(*sttDelay)
	lm := llmtest.New(llmtest.Script(llmtest.Reply{
		Text:  "Bah, the tower again. Nobody goes there after dark, lad. Ask the mage if you must.",
		Delay: *llmDelay,
	}))
	defer lm.Close()
	speech := ttstest.New()
	defer speech.Close()
	speech.SetDelay(*ttsDelay)

	rec := &stt.Deepgram{BaseURL: dg.URL}
	client, err := llm.New(llm.Config{BaseURL: lm.URL(), Model: "fake"})
	if err != nil {
		b.Fatal(err)
	}
	synth := &tts.OpenAI{BaseURL: speech.URL + "/v1"}
	hints := stt.Hints{Keyterms: []string{"Grimjaw", "Tower of Whispers", "Ironhold"}}
	ctx := context.Background()

	var overheads []time.Duration
	var stageSum [7]time.Duration
	for b.Loop() {
		var tl turn.Timeline
		tl.Provider = *sttDelay + *llmDelay + *ttsDelay
		var u audio.Utterance
		r, err := audio.NewRouter(audio.Config{OnUtterance: func(x audio.Utterance) {
			u = x
			tl.Mark(turn.EndOfSpeech, time.Now())
		}})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range packets {
			if err := r.Push(p); err != nil {
				b.Fatal(err)
			}
		}
		r.Tick(last.Add(time.Second))
		if u.Audio.Samples == nil {
			b.Fatal("no utterance")
		}

		tr, err := rec.Transcribe(ctx, u.Audio, hints)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		tl.Mark(turn.STTFinal, now)
		tl.Mark(turn.CorrectionDone, now)
		tl.Mark(turn.ContextReady, now)

		sentences := make(chan string, 8)
		llmErr := make(chan error, 1)
		go func() {
			defer close(sentences)
			var split npc.SentenceSplitter
			_, err := client.Stream(ctx, llm.Request{Messages: []openai.ChatCompletionMessage{
				{Role: openai.ChatMessageRoleUser, Content: tr.Text}}}, func(text string) {
				tl.Mark(turn.LLMFirstToken, time.Now())
				for _, s := range split.Write(text) {
					sentences <- s
				}
			})
			for _, s := range split.Flush() {
				sentences <- s
			}
			llmErr <- err
		}()
		w := &firstPacket{}
		player, err := playback.New(w, playback.WithClock(instant{}))
		if err != nil {
			b.Fatal(err)
		}
		res, err := player.Play(ctx, sentences, synth, tts.Voice{Name: "onyx"})
		if err != nil {
			b.Fatal(err)
		}
		if err := <-llmErr; err != nil {
			b.Fatal(err)
		}
		if len(res.Said) != 3 {
			b.Fatalf("said %q", res.Said)
		}
		tl.Mark(turn.FirstAudio, res.FirstAudio)
		tl.Mark(turn.FirstPacket, w.at)
		overheads = append(overheads, tl.Overhead())
		for s := turn.STTFinal; s <= turn.FirstPacket; s++ {
			stageSum[s] += tl.At(s).Sub(tl.At(turn.EndOfSpeech))
		}
	}
	slices.Sort(overheads)
	pct := func(p float64) time.Duration { return overheads[min(int(p*float64(len(overheads))), len(overheads)-1)] }
	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-overhead-ms")
	b.ReportMetric(float64(pct(0.95).Microseconds())/1000, "p95-overhead-ms")
	var parts []string
	for s := turn.STTFinal; s <= turn.FirstPacket; s++ {
		parts = append(parts, s.String()+"="+(stageSum[s]/time.Duration(len(overheads))).Round(100*time.Microsecond).String())
	}
	b.Logf("%d turns, providers %v+%v+%v; mean time after end of speech: %s", len(overheads), *sttDelay, *llmDelay, *ttsDelay, strings.Join(parts, " "))
}
