package realtimetest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// hangGuard bounds a wait that would otherwise hang; it is no budget:
// a loaded machine may be slow, so it is minutes.
const hangGuard = 2 * time.Minute

// rawClient speaks to the fake with bare JSON, independent of package
// realtime, so the fake's own protocol behaviour is checked.
type rawClient struct {
	t  *testing.T
	ws *websocket.Conn
}

func dialRaw(t *testing.T, s *Server, key string) *rawClient {
	t.Helper()
	h := http.Header{}
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
	ws, _, err := websocket.DefaultDialer.Dial(s.URL()+"?model=gpt-realtime", h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	c := &rawClient{t, ws}
	if ev := c.next(); ev["type"] != "session.created" {
		t.Fatalf("first event %v", ev)
	}
	return c
}

func (c *rawClient) send(ev map[string]any) {
	c.t.Helper()
	if err := c.ws.WriteJSON(ev); err != nil {
		c.t.Fatal(err)
	}
}

func (c *rawClient) next() map[string]any {
	c.t.Helper()
	c.ws.SetReadDeadline(time.Now().Add(20 * time.Second)) // a hang guard, not a timing check
	var ev map[string]any
	if err := c.ws.ReadJSON(&ev); err != nil {
		c.t.Fatal(err)
	}
	return ev
}

// until reads events until one of type typ and returns it.
func (c *rawClient) until(typ string) map[string]any {
	c.t.Helper()
	for {
		if ev := c.next(); ev["type"] == typ {
			return ev
		}
	}
}

func pcmB64(ms int) string { return base64.StdEncoding.EncodeToString(make([]byte, 2*Rate*ms/1000)) }

func errCode(ev map[string]any) string {
	e, _ := ev["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// TestFakeRefusals checks the fake refuses what the real API refuses,
// with the real error codes.
func TestFakeRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []map[string]any
		code   string
	}{
		{"session without type", []map[string]any{{"type": "session.update", "session": map[string]any{"instructions": "x"}}}, "missing_required_parameter"},
		{"commit too short", []map[string]any{{"type": "input_audio_buffer.append", "audio": pcmB64(60)}, {"type": "input_audio_buffer.commit"}}, "input_audio_buffer_commit_empty"},
		{"bad audio", []map[string]any{{"type": "input_audio_buffer.append", "audio": "AA=="}}, "invalid_value"},
		{"unknown event", []map[string]any{{"type": "response.frobnicate"}}, "invalid_event"},
		{"cancel nothing", []map[string]any{{"type": "response.cancel"}}, "response_cancel_not_active"},
		{"truncate unknown item", []map[string]any{{"type": "conversation.item.truncate", "item_id": "nope", "content_index": 0, "audio_end_ms": 10}}, "item_truncate_invalid_item_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewServer(t, Options{})
			c := dialRaw(t, s, "")
			for _, ev := range tc.events {
				c.send(ev)
			}
			if got := errCode(c.until("error")); got != tc.code {
				t.Errorf("error code %q, want %q", got, tc.code)
			}
		})
	}
}

// TestFakeTurn walks a turn with bare events: transcription, deltas in
// the beta dialect, a truncation past the audio sent refused and one
// within it accepted, a second response.create refused while one runs.
func TestFakeTurn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	s := NewServer(t, Options{APIKey: "k", Beta: true, Transcript: "hello there", Default: Reply{Text: "one two three", HoldAfter: 2}})
	if _, resp, err := websocket.DefaultDialer.Dial(s.URL()+"?model=m", nil); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("dial without key: %v", err)
	}
	c := dialRaw(t, s, "k")
	c.send(map[string]any{"type": "input_audio_buffer.append", "audio": pcmB64(300)})
	c.send(map[string]any{"type": "input_audio_buffer.commit"})
	if ev := c.until("conversation.item.input_audio_transcription.completed"); ev["transcript"] != "hello there" {
		t.Errorf("transcription %v", ev)
	}
	c.send(map[string]any{"type": "response.create"})
	var item string
	for range 2 {
		ev := c.until("response.audio.delta")
		item, _ = ev["item_id"].(string)
	}
	c.send(map[string]any{"type": "response.create"})
	if got := errCode(c.until("error")); got != "conversation_already_has_active_response" {
		t.Errorf("second response.create: %q", got)
	}
	c.send(map[string]any{"type": "conversation.item.truncate", "item_id": item, "content_index": 0, "audio_end_ms": 81})
	if got := errCode(c.until("error")); got != "invalid_value" {
		t.Errorf("truncate past the audio: %q", got)
	}
	c.send(map[string]any{"type": "conversation.item.truncate", "item_id": item, "content_index": 0, "audio_end_ms": 50})
	if ev := c.until("conversation.item.truncated"); ev["audio_end_ms"] != float64(50) {
		t.Errorf("truncated %v", ev)
	}
	c.send(map[string]any{"type": "response.cancel"})
	done := c.until("response.done")
	if r := done["response"].(map[string]any); r["status"] != "cancelled" {
		t.Errorf("response.done %v", r)
	}
	if !s.Wait(ctx, func(st State) bool { return st.Cancels == 1 && len(st.Truncs) == 1 && len(st.Commits) == 1 }) {
		t.Fatalf("state %+v", s.State())
	}
	st := s.State()
	if len(st.Commits[0]) != Rate*300/1000 || st.Truncs[0].SentMs != 80 {
		t.Errorf("commit %d samples, truncation %+v", len(st.Commits[0]), st.Truncs[0])
	}
	b, _ := json.Marshal(st.Received)
	t.Logf("received %s", b)
}

func TestWaveform(t *testing.T) {
	w := Waveform("ab cde")
	if want := Rate * (70*5 + 2*60) / 1000; len(w) != want {
		t.Errorf("%d samples, want %d", len(w), want)
	}
	var peak int16
	for _, v := range w {
		peak = max(peak, v)
	}
	if peak < 5000 {
		t.Errorf("peak %d: not audible", peak)
	}
}
