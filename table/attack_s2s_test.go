package table_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
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
	r := newRigWith(t, 0, grimjawSpeaksToSpeech(t), func(cfg *table.Config) {
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

// TestAttackTalkOverSpeechToSpeechNPC: a player talks over a
// speech-to-speech NPC. Its answer is paced out in real time, so the talk
// comes while the table waits to send the next frame, not between the
// model's events (the tests' instant pacing only ever hit the second).
// That wait returned "cancelled", taken for no error: the model was never
// told where its answer was cut (it went on believing the players heard
// all of it), and what the players did hear was recorded nowhere. The
// answer is truncated at what was played, and that part is the NPC's line.
func TestAttackTalkOverSpeechToSpeechNPC(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "espeak-ng")
	const answer = "Aye, the shipment went into Duskwood, and then it went further still, past the old mill and the ford."
	srv := realtimetest.NewServer(t, realtimetest.Options{Default: realtimetest.Reply{Text: answer}})
	pace := clocktest.NewFake(time.Date(2026, 11, 29, 19, 0, 0, 0, time.UTC))
	r := newRigWith(t, 0, grimjawSpeaksToSpeech(t), func(cfg *table.Config) {
		cfg.Providers.Realtime = &table.Realtime{URL: srv.URL(), APIKey: "k", Pace: pace}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	frames := func() int {
		r.voice.mu.Lock()
		defer r.voice.mu.Unlock()
		return r.voice.frames
	}
	// Half a second of the answer is played, frame by frame, as the pacing
	// clock moves on.
	for frames() < 25 {
		if !pace.WaitTimers(ctx, 1) {
			t.Fatalf("the answer's pacing waits on no timer after %d frames", frames())
		}
		pace.Advance(20 * time.Millisecond)
	}
	// The table now waits to send the next frame; the player talks.
	if !pace.WaitTimers(ctx, 1) {
		t.Fatal("the answer's pacing waits on no timer")
	}
	if err := r.send(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var first table.LineReport
	select {
	case first = <-r.reports:
	case <-ctx.Done():
		t.Fatal("the talked-over turn never ended")
	}
	st := srv.State()
	if len(st.Truncs) == 0 {
		t.Errorf("the model was not told where its answer was cut (reply %q, error %q)", first.Reply, first.Error)
	}
	if first.Reply == "" || first.Reply == answer || !strings.HasPrefix(answer, strings.TrimRight(first.Reply, ".,… ")) {
		t.Errorf("the talked-over turn's reply is %q; want the part of %q that was played", first.Reply, answer)
	}
	es, err := r.camp.Sessions().Entries(ctx, "bench")
	if err != nil {
		t.Fatal(err)
	}
	var recorded bool
	for _, e := range es {
		recorded = recorded || e.NPCID == "grimjaw" && e.Text != "" && e.Text == first.Reply
	}
	if !recorded {
		t.Errorf("what the players heard of the NPC's answer is not in the session log: %+v", es)
	}
}
