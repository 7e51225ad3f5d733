package table_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/realtime/realtimetest"
)

// records is a slog.Handler keeping the records logged.
type records struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *records) WithGroup(string) slog.Handler            { return h }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// find returns the attributes of the first record logged with msg.
func (h *records) find(msg string) (map[string]slog.Value, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.recs {
		if r.Message != msg {
			continue
		}
		attrs := map[string]slog.Value{}
		r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value; return true })
		return attrs, true
	}
	return nil, false
}

// TestAttackEndlessSpeechToSpeechAnswer: a speech-to-speech model whose
// answer never ends (it stops sending audio mid-answer and never sends
// response.done) is cut when the turn's time (TurnTimeout) runs out, and
// the log says so, naming the NPC and the time the turn had: the DM reading
// the log learns why the NPC stopped mid-sentence.
func TestAttackEndlessSpeechToSpeechAnswer(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{
		Text: "Aye, the shipment went into Duskwood, and then it went further still.", HoldAfter: 2}})
	logs := &records{}
	const turnTimeout = 2 * time.Second
	r := newRigWith(t, 0, func(camp *postgres.Campaign) {
		g, err := camp.Graph().Entity(context.Background(), "grimjaw")
		if err != nil {
			t.Fatal(err)
		}
		p := npc.PersonaFromEntity(g)
		p.Engine = npc.EngineS2S
		if err := camp.Graph().UpsertEntity(context.Background(), p.Entity()); err != nil {
			t.Fatal(err)
		}
	}, func(cfg *table.Config) {
		cfg.Providers.Realtime = &table.Realtime{URL: srv.URL(), APIKey: "k", Pace: instant{}}
		cfg.Settings.TurnTimeout = turnTimeout
		cfg.Logger = slog.New(logs)
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case l := <-r.reports:
		if l.Addressee != "grimjaw" {
			t.Fatalf("the line went to %q", l.Addressee)
		}
	case <-ctx.Done():
		t.Fatal("the turn of an endless answer never ended")
	}
	attrs, ok := logs.find("an NPC's turn ran out of its time and was cut")
	if !ok {
		t.Fatal("the turn was cut with nothing in the log saying why")
	}
	if attrs["npc"].String() != "grimjaw" || attrs["turn_timeout"].Duration() != turnTimeout {
		t.Fatalf("the log line says npc %v, turn_timeout %v; want grimjaw and %v", attrs["npc"], attrs["turn_timeout"], turnTimeout)
	}
}
