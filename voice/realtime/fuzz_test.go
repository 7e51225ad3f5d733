package realtime

import (
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// FuzzHandle feeds arbitrary server events to the event handler: it must
// never panic. The session is already closed, so nothing is sent and
// events are dropped; the handler's decoding and state changes still run.
func FuzzHandle(f *testing.F) {
	for _, seed := range []string{
		`{"type":"response.created","response":{"id":"r1"}}`,
		`{"type":"response.output_item.added","response_id":"r1","item":{"id":"i1","type":"message"}}`,
		`{"type":"response.output_audio.delta","response_id":"r1","item_id":"i1","delta":"AAABAAIA"}`,
		`{"type":"response.audio_transcript.delta","response_id":"r1","item_id":"i1","delta":"Aye"}`,
		`{"type":"response.output_audio.done","response_id":"r1","item_id":"i1"}`,
		`{"type":"response.function_call_arguments.done","response_id":"r1","call_id":"c1","name":"recall","arguments":"{}"}`,
		`{"type":"response.done","response":{"id":"r1","status":"failed","status_details":{"error":{"code":"x"}}}}`,
		`{"type":"error","error":{"type":"rate_limit_error","code":"rate_limit_exceeded"}}`,
		`{"type":"rate_limits.updated","rate_limits":[{"name":"tokens","remaining":0}]}`,
		`{"type":"conversation.item.input_audio_transcription.failed","item_id":"u1"}`,
		`not json`, `{}`, `{"type":"response.audio.delta","delta":"AA=="}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, _ := audio.NewResampler(DiscordRate, wireRate)
		out, _ := audio.NewResampler(wireRate, DiscordRate)
		s := &Session{
			cfg: Config{Budget: NewBudget(-1), MaxToolCalls: 4, ToolTimeout: 1, Runner: ToolRunnerFunc(func(context.Context, string, json.RawMessage) (string, error) { return "", nil })},
			log: slog.New(slog.DiscardHandler), met: NopMetrics{}, clk: clock.Real(),
			in: in, out: out, events: make(chan Event), done: make(chan struct{}),
			dropped: map[string]bool{}, items: map[string]*outItem{}, calls: map[string]bool{},
			names: map[string]string{}, rounds: map[string]*toolRound{},
			closed: true, reason: ErrClosed,
		}
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.cancel()
		s.handle(data)
		s.tools.Wait()
	})
}
