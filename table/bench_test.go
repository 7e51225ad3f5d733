package table_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/table/live"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/stt/stttest"
	"github.com/glyphoxa/glyphoxa/voice/tts"
	"github.com/glyphoxa/glyphoxa/voice/tts/ttstest"
)

// Provider delays of the fakes in BenchmarkTurn.
var (
	sttDelay = flag.Duration("stt-delay", 150*time.Millisecond, "fake speech-to-text delay before the final result")
	llmDelay = flag.Duration("llm-delay", 300*time.Millisecond, "fake LLM delay before the first token")
	ttsDelay = flag.Duration("tts-delay", 100*time.Millisecond, "fake speech synthesis delay before the first audio")
)

const (
	campaignPath = "../testdata/campaigns/ironhold-saga.yaml"
	heard        = "grim jaw, what news of the shipment?"
	answer       = "Bah, the shipment again. Duskwood swallowed it, lad. Ask Elara in her tower if you must."
	player       = "211111111111111111"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// instant is the system clock whose timers fire at once: playback sends
// frames as fast as they are made, so a turn lasts no longer than its
// first frame takes.
type instant struct{}

func (instant) Now() time.Time { return time.Now() }
func (instant) NewTimer(time.Duration) clock.Timer {
	c := make(chan time.Time, 1)
	c <- time.Now()
	return fired(c)
}

type fired chan time.Time

func (f fired) C() <-chan time.Time { return f }
func (fired) Stop() bool            { return false }

// benchVoice is the table's voice channel: the player's frames go in, the
// NPC's are counted.
type benchVoice struct {
	packets chan audio.Packet
	events  chan conn.Event
	mu      sync.Mutex
	frames  int
}

func (v *benchVoice) Packets() <-chan audio.Packet { return v.packets }
func (v *benchVoice) Events() <-chan conn.Event    { return v.events }
func (v *benchVoice) WriteOpus([]byte) error       { v.mu.Lock(); v.frames++; v.mu.Unlock(); return nil }
func (v *benchVoice) SetSpeaking(bool) error       { return nil }
func (v *benchVoice) Users() []string              { return []string{player} }
func (v *benchVoice) Close() error                 { return nil }

// rig is the production table on the sample campaign in PostgreSQL, with
// Deepgram streaming, an OpenAI-compatible LLM and OpenAI speech synthesis
// faked on loopback with fixed delays.
type rig struct {
	s       *table.Session
	voice   *benchVoice
	packets []audio.Packet
	reports chan table.LineReport
	seq     uint16
	ts      uint32
	camp    *postgres.Campaign
	dg      *stttest.Deepgram
	// clock is the table's clock unless the test set its own (timed).
	clock *rigClock
	timed bool
	// stall, when set, runs before the player's i-th packet is sent: a
	// test pauses the sender there as a loaded machine might.
	stall func(i int)
}

func newRig(tb testing.TB, indexEvery time.Duration) *rig {
	tb.Helper()
	return newRigWith(tb, indexEvery, nil, nil)
}

// newBenchRig is newRig for the benchmarks: the table runs on the system
// clock and stamps each packet as it takes it, as in serve. The rig's own
// clock (rigClock), which keeps the tests' lines whole on a loaded
// machine, would put its timers' goroutines into what they measure.
func newBenchRig(b *testing.B) *rig {
	b.Helper()
	return newRigWith(b, 0, nil, func(c *table.Config) { c.Clock = clock.Real() })
}

// newRigWith is newRig; before runs on the campaign before the table
// opens, mod changes the table's configuration.
func newRigWith(tb testing.TB, indexEvery time.Duration, before func(*postgres.Campaign), mod func(*table.Config)) *rig {
	tb.Helper()
	store, _ := pgtest.NewStore(tb, rigDims)
	return newRigOn(tb, store, indexEvery, before, mod)
}

// rigDims is the dimension of the rig's embeddings.
const rigDims = 64

// newRigOn is newRigWith on store (a private cluster's, in the outage
// tests), which holds no campaign yet.
func newRigOn(tb testing.TB, store *postgres.Store, indexEvery time.Duration, before func(*postgres.Campaign), mod func(*table.Config)) *rig {
	tb.Helper()
	camp := pgtest.Import(tb, store, campaignPath)
	if before != nil {
		before(camp)
	}
	var calls int
	var callsMu sync.Mutex
	dg := stttest.NewDeepgram(func(stttest.Call) string {
		callsMu.Lock()
		defer callsMu.Unlock()
		calls++
		return fmt.Sprintf("%s %s", heard, marker(calls))
	})
	tb.Cleanup(dg.Close)
	dg.SetDelay(*sttDelay)
	lm := llmtest.New(llmtest.Script(llmtest.Reply{Text: answer, Delay: *llmDelay}))
	tb.Cleanup(lm.Close)
	speech := ttstest.New()
	tb.Cleanup(speech.Close)
	speech.SetDelay(*ttsDelay)
	client, err := llm.New(llm.Config{BaseURL: lm.URL(), Model: "fake"})
	if err != nil {
		tb.Fatal(err)
	}
	emb, err := embed.NewOffline(rigDims)
	if err != nil {
		tb.Fatal(err)
	}
	// Unbuffered: when a send returns, the table has taken the packet
	// (and the lanes hold the one before), so the rig's clock does not
	// run on while sent packets wait in a buffer (see send).
	r := &rig{voice: &benchVoice{packets: make(chan audio.Packet), events: make(chan conn.Event)},
		packets: playerLine(tb), reports: make(chan table.LineReport, 16), camp: camp, dg: dg, clock: newRigClock()}
	controls := live.NewControls()
	controls.SetScene(live.Scene{Present: []string{"grimjaw"}})
	cfg := table.Config{Campaign: pgtest.Open(tb, store, camp.ID(), memory.DMViewer()), SessionID: "bench", Voice: r.voice,
		Providers: table.Providers{STT: &stt.Deepgram{BaseURL: dg.URL}, STTProvider: table.ProviderDeepgram, LLM: client, Embedder: emb,
			Speaker: &table.Voices{Default: &tts.OpenAI{BaseURL: speech.URL + "/v1"}, DefaultVoice: "onyx", Clock: instant{}}},
		Settings: table.Settings{StateDir: tb.TempDir(), IndexEvery: indexEvery},
		Controls: controls, Logger: quiet(), UserName: func(string) string { return "Thorin" },
		OnLine: func(l table.LineReport) { r.reports <- l }, Clock: r.clock}
	if mod != nil {
		mod(&cfg)
	}
	r.timed = cfg.Clock == clock.Clock(r.clock)
	r.s, err = table.Open(context.Background(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if _, err := r.s.Finish(context.Background()); err != nil {
			tb.Errorf("finishing the session: %v", err)
		}
	})
	return r
}

// playerLineOnce holds the player's line as Opus packets, spoken and
// encoded once for every rig: the same sentence each time, and seconds of
// CPU to make.
var playerLineOnce struct {
	sync.Once
	packets []audio.Packet
}

// playerLine is the player's line as Opus packets (the caller's own copy;
// the payloads are shared and read only; only they are used).
func playerLine(tb testing.TB) []audio.Packet {
	tb.Helper()
	playerLineOnce.Do(func() {
		clip := audiotest.Speak(tb, "Grimjaw, what news of the shipment?", 48000)
		sig, _ := audiotest.Compose(48000, []time.Duration{300 * time.Millisecond}, []audio.PCM{clip}, 200*time.Millisecond)
		playerLineOnce.packets = audiotest.Encode(tb, sig, player, 1, time.Now()).Packets
	})
	if len(playerLineOnce.packets) == 0 {
		tb.Fatal("no player line: making it failed (see the first test that asked)")
	}
	return slices.Clone(playerLineOnce.packets)
}

// send sends the player's line. On the rig's clock (see rigClock) the
// clock stands still while the packets are sent, each is stamped with its
// arrival one frame (20 ms) after the one before, and then the clock moves
// on by the line's length; on a clock the test set, the table stamps them
// as they come. edit, when set, changes packet i before it is sent, or
// leaves it out (the transport lost it) by returning false.
func (r *rig) send(ctx context.Context, edit func(i int, p *audio.Packet) bool) error {
	var at time.Time
	release := func(time.Duration) {}
	if r.timed {
		at, release = r.clock.hold()
	}
	defer func() { release(time.Duration(len(r.packets)) * frame) }()
	for i, p := range r.packets {
		if r.stall != nil {
			r.stall(i)
		}
		pk := audio.Packet{UserID: player, SSRC: 1, Sequence: r.seq, Timestamp: r.ts, Opus: p.Opus}
		if r.timed {
			pk.Received = at.Add(time.Duration(i) * frame)
		}
		r.seq++
		r.ts += 960
		if edit != nil && !edit(i, &pk) {
			continue
		}
		select {
		case r.voice.packets <- pk:
		case <-ctx.Done():
			return fmt.Errorf("sending the player's line: %w", ctx.Err())
		}
	}
	return nil
}

// frame is the length of one of the player's Opus packets.
const frame = 20 * time.Millisecond

// turn sends the player's line and waits for the table's report.
func (r *rig) turn(ctx context.Context) (table.LineReport, error) {
	if err := r.send(ctx, nil); err != nil {
		return table.LineReport{}, err
	}
	r.ts += 50 * 960
	select {
	case l := <-r.reports:
		if l.Error != "" || l.Reply == "" {
			return l, fmt.Errorf("turn: reply %q, error %s", l.Reply, l.Error)
		}
		return l, nil
	case <-ctx.Done():
		return table.LineReport{}, ctx.Err()
	}
}

// markers make each utterance's line findable on its own (the fake
// recogniser is asked more than once per utterance: interim results).
var markers = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliett kilo lima mike november " +
	"oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu")

func marker(n int) string {
	return markers[(n-1)%len(markers)] + fmt.Sprint((n-1)/len(markers))
}

func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkTurn measures whole voice turns through the table that serve
// runs: the player's Opus frames, the lanes, speech-to-text (fake Deepgram
// streaming), name correction, the session log on PostgreSQL, addressing,
// the hot context, the LLM (fake), speech synthesis (fake) and playback.
// The bot's own overhead is the time from the end of speech (the lane
// closing the utterance) to the first frame of the answer, less the
// providers' delays.
func BenchmarkTurn(b *testing.B) {
	audiotest.Need(b, "espeak-ng")
	r := newBenchRig(b)
	ctx := context.Background()
	providers := *sttDelay + *llmDelay + *ttsDelay
	var overhead, recorded, hot []time.Duration
	var stages [4][]time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := r.turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if !strings.Contains(l.Corrected, "Grimjaw") {
			b.Fatalf("the line was not corrected: %q", l.Corrected)
		}
		tm := l.Timing
		for k, d := range []time.Duration{tm.STT - *sttDelay, tm.ContextReady - tm.STT,
			tm.FirstToken - max(tm.ContextReady, tm.STT) - *llmDelay, tm.FirstPacket - tm.FirstToken - *ttsDelay} {
			stages[k] = append(stages[k], d)
		}
		overhead = append(overhead, l.Timing.FirstPacket-providers)
		recorded = append(recorded, l.Timing.Recorded)
		hot = append(hot, l.Timing.ContextReady-l.Timing.Recorded)
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(overhead, 50)), "overhead-p50-ms")
	b.ReportMetric(ms(percentile(overhead, 95)), "overhead-p95-ms")
	b.ReportMetric(ms(percentile(recorded, 95)), "line-to-L1-p95-ms")
	b.ReportMetric(ms(percentile(hot, 95)), "hot-context-p95-ms")
	// Where the overhead goes (p50): speech-to-text past its delay, from
	// the transcript to the hot context, the LLM's first token past its
	// delay, and from the first token to the first frame past the speech
	// synthesis delay.
	for k, name := range []string{"stt", "to-context", "llm", "to-audio"} {
		b.ReportMetric(ms(percentile(stages[k], 50)), name+"-p50-ms")
	}
}

// BenchmarkLiveRecall measures how soon a line is in the session log and
// how soon retrieval (the NPCs' recall, /memory search) finds it, with the
// consolidator's default index beat, while the table runs.
func BenchmarkLiveRecall(b *testing.B) {
	audiotest.Need(b, "espeak-ng")
	r := newBenchRig(b)
	ctx := context.Background()
	var toL1, toRecall []time.Duration
	for i := 0; i < b.N; i++ {
		l, err := r.turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		toL1 = append(toL1, l.Timing.Recorded)
		said := time.Now().Add(-l.Timing.FirstPacket)
		// Findable: a chunk of the live session, embedded in the semantic
		// index, holds the line's marker.
		f := strings.Fields(l.Corrected)
		m := f[len(f)-1]
		for found := false; !found; {
			if time.Since(said) > 2*time.Minute {
				b.Fatalf("line %d was not indexed within 2 minutes", i+1)
			}
			cs, err := r.camp.Index().Chunks(ctx, "bench")
			if err != nil {
				b.Fatal(err)
			}
			for _, c := range cs {
				found = found || strings.Contains(c.Content, m)
			}
			if !found {
				time.Sleep(50 * time.Millisecond)
			}
		}
		toRecall = append(toRecall, time.Since(said))
	}
	b.ReportMetric(ms(percentile(toL1, 95)), "line-to-L1-p95-ms")
	b.ReportMetric(percentile(toRecall, 95).Seconds(), "line-to-recall-p95-s")
	b.ReportMetric(percentile(toRecall, 50).Seconds(), "line-to-recall-p50-s")
}
