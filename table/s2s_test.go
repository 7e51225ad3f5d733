package table_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
)

// TestSpeechToSpeechNPC: an NPC whose persona asks for the speech-to-speech
// engine hears the player through a realtime model (a fake Realtime server
// on loopback), which calls the NPC's recall tool (run with the NPC's
// permissions, against memory) and speaks the answer; its transcript is
// recorded like any line.
func TestSpeechToSpeechNPC(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	const answer = "The shipment went into Duskwood, lad."
	srv := realtimetest.NewServer(t, realtimetest.Options{Replies: []realtimetest.Reply{{
		Call: &realtimetest.Call{Name: npc.ToolRecall, Arguments: `{"query":"shipment"}`}, Text: answer}}})
	r := newRigWith(t, 0, grimjawSpeaksToSpeech(t), func(cfg *table.Config) {
		cfg.Providers.Realtime = &table.Realtime{URL: srv.URL(), APIKey: "k", Pace: instant{}}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := r.turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l.Addressee != "grimjaw" || l.Reply != answer {
		t.Fatalf("addressee %q, reply %q", l.Addressee, l.Reply)
	}
	if len(l.Tools) != 1 || l.Tools[0].Name != npc.ToolRecall || l.Tools[0].Error != "" || l.Tools[0].Result == "" {
		t.Fatalf("tool calls %+v", l.Tools)
	}
	r.voice.mu.Lock()
	frames := r.voice.frames
	r.voice.mu.Unlock()
	if frames < 10 {
		t.Fatalf("%d frames of the answer were sent", frames)
	}
	st := srv.State()
	if len(st.Commits) != 1 || len(st.Commits[0]) < 24000/2 {
		t.Fatalf("the model heard %d turns", len(st.Commits))
	}
	if n := len(st.Sessions); n == 0 || !strings.Contains(st.Sessions[len(st.Sessions)-1]["instructions"].(string), "You are Grimjaw") {
		t.Fatalf("the model's instructions lack the NPC's persona")
	}
	es, err := r.camp.Sessions().Entries(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, e := range es {
		recorded = recorded || e.NPCID == "grimjaw" && e.Text == answer
	}
	if !recorded {
		t.Fatalf("the NPC's answer is not in the session log: %+v", es)
	}
}

// grimjawSpeaksToSpeech is a rig's campaign set-up: Grimjaw's persona asks
// for the speech-to-speech engine.
func grimjawSpeaksToSpeech(tb testing.TB) func(*postgres.Campaign) {
	return func(camp *postgres.Campaign) {
		g, err := camp.Graph().Entity(context.Background(), "grimjaw")
		if err != nil {
			tb.Fatal(err)
		}
		p := npc.PersonaFromEntity(g)
		p.Engine = npc.EngineS2S
		if err := camp.Graph().UpsertEntity(context.Background(), p.Entity()); err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkTurnS2S measures whole turns of a speech-to-speech NPC through
// the table, the model faked with no delay: the bot's own time from the
// end of speech to the answer's first frame, less speech-to-text (which
// still runs, for addressing and the session log) as measured. What is
// left is correction, the session log, addressing, the NPC's hot context,
// the hand-over to the model and back (the fake model's own work
// included), resampling and Opus.
func BenchmarkTurnS2S(b *testing.B) {
	audiotest.Need(b, "espeak-ng")
	srv := realtimetest.NewServer(b, realtimetest.Options{Default: realtimetest.Reply{Text: "Aye."}})
	r := newRigWith(b, 0, grimjawSpeaksToSpeech(b), func(cfg *table.Config) {
		cfg.Providers.Realtime = &table.Realtime{URL: srv.URL(), APIKey: "k", Pace: instant{}}
	})
	ctx := context.Background()
	var overhead []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := r.turn(ctx)
		if err != nil {
			b.Fatal(err)
		}
		overhead = append(overhead, l.Timing.FirstPacket-l.Timing.STT)
	}
	b.StopTimer()
	b.ReportMetric(ms(percentile(overhead, 50)), "overhead-p50-ms")
	b.ReportMetric(ms(percentile(overhead, 95)), "overhead-p95-ms")
}
