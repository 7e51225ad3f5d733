package realtime

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
)

// Server event types. Where the GA API renamed a beta event, both names
// are listed; [canonical] maps the beta name to the GA one.
const (
	evSessionCreated        = "session.created"
	evSessionUpdated        = "session.updated"
	evError                 = "error"
	evInputCommitted        = "input_audio_buffer.committed"
	evSpeechStarted         = "input_audio_buffer.speech_started"
	evInputTranscript       = "conversation.item.input_audio_transcription.completed"
	evInputTranscriptFailed = "conversation.item.input_audio_transcription.failed"
	evResponseCreated       = "response.created"
	evResponseDone          = "response.done"
	evOutputItemAdded       = "response.output_item.added"
	evAudioDelta            = "response.output_audio.delta"
	evAudioDone             = "response.output_audio.done"
	evTranscriptDelta       = "response.output_audio_transcript.delta"
	evTranscriptDone        = "response.output_audio_transcript.done"
	evTextDelta             = "response.output_text.delta"
	evTextDone              = "response.output_text.done"
	evFunctionArgsDone      = "response.function_call_arguments.done"
	evRateLimits            = "rate_limits.updated"
	evItemTruncated         = "conversation.item.truncated"

	evAudioDeltaBeta      = "response.audio.delta"
	evAudioDoneBeta       = "response.audio.done"
	evTranscriptDeltaBeta = "response.audio_transcript.delta"
	evTranscriptDoneBeta  = "response.audio_transcript.done"
	evTextDeltaBeta       = "response.text.delta"
	evTextDoneBeta        = "response.text.done"
)

// canonical maps beta event names to their GA names.
func canonical(t string) string {
	switch t {
	case evAudioDeltaBeta:
		return evAudioDelta
	case evAudioDoneBeta:
		return evAudioDone
	case evTranscriptDeltaBeta:
		return evTranscriptDelta
	case evTranscriptDoneBeta:
		return evTranscriptDone
	case evTextDeltaBeta:
		return evTextDelta
	case evTextDoneBeta:
		return evTextDone
	}
	return t
}

// serverEvent holds the fields of every server event the client reads;
// each event fills a few.
type serverEvent struct {
	Type         string        `json:"type"`
	EventID      string        `json:"event_id"`
	ResponseID   string        `json:"response_id"`
	ItemID       string        `json:"item_id"`
	ContentIndex int           `json:"content_index"`
	Delta        string        `json:"delta"`
	Transcript   string        `json:"transcript"`
	Text         string        `json:"text"`
	CallID       string        `json:"call_id"`
	Name         string        `json:"name"`
	Arguments    string        `json:"arguments"`
	AudioEndMS   int           `json:"audio_end_ms"`
	Error        *ServerError  `json:"error"`
	Response     *wireResponse `json:"response"`
	Item         *wireItem     `json:"item"`
	RateLimits   []RateLimit   `json:"rate_limits"`
}

type wireResponse struct {
	ID            string `json:"id"`
	Status        string `json:"status"`
	StatusDetails *struct {
		Type   string       `json:"type"`
		Reason string       `json:"reason"`
		Error  *ServerError `json:"error"`
	} `json:"status_details"`
}

type wireItem struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Name   string `json:"name"`
	CallID string `json:"call_id"`
}

// RateLimit is one of the provider's limits as of a rate_limits.updated
// event.
type RateLimit struct {
	// Name is the limit: "requests" or "tokens".
	Name string `json:"name"`
	// Limit is the allowance per window.
	Limit float64 `json:"limit"`
	// Remaining is what is left of it.
	Remaining float64 `json:"remaining"`
	// ResetSeconds is when it refills.
	ResetSeconds float64 `json:"reset_seconds"`
}

// Client events.

type clientEvent struct {
	Type    string `json:"type"`
	EventID string `json:"event_id,omitempty"`
}

type appendEvent struct {
	clientEvent
	Audio string `json:"audio"`
}

type cancelEvent struct {
	clientEvent
	ResponseID string `json:"response_id,omitempty"`
}

type truncateEvent struct {
	clientEvent
	ItemID       string `json:"item_id"`
	ContentIndex int    `json:"content_index"`
	AudioEndMS   int    `json:"audio_end_ms"`
}

type itemCreateEvent struct {
	clientEvent
	Item functionOutput `json:"item"`
}

type functionOutput struct {
	Type   string `json:"type"` // function_call_output
	CallID string `json:"call_id"`
	Output string `json:"output"`
}

type sessionUpdateEvent struct {
	clientEvent
	Session map[string]any `json:"session"`
}

// wireRate is the PCM rate of the Realtime API's pcm16 / audio/pcm format.
const wireRate = 24000

// sessionConfig is the session.update body in the configured dialect.
func (c Config) sessionConfig() map[string]any {
	var turn any // JSON null: the client commits turns itself
	if c.ServerVAD {
		turn = map[string]any{"type": "server_vad"}
	}
	tools := make([]map[string]any, 0, len(c.Tools))
	for _, t := range c.Tools {
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		tools = append(tools, map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": params})
	}
	s := map[string]any{"instructions": c.Instructions, "tools": tools, "tool_choice": "auto"}
	if len(tools) == 0 {
		s["tool_choice"] = "none"
	}
	if c.Protocol == Beta {
		s["modalities"] = []string{"audio", "text"}
		s["voice"] = c.Voice
		s["input_audio_format"] = "pcm16"
		s["output_audio_format"] = "pcm16"
		s["input_audio_transcription"] = map[string]any{"model": c.TranscriptionModel}
		s["turn_detection"] = turn
		return s
	}
	format := map[string]any{"type": "audio/pcm", "rate": wireRate}
	s["type"] = "realtime" // the model is the URL's
	s["output_modalities"] = []string{"audio"}
	s["audio"] = map[string]any{
		"input":  map[string]any{"format": format, "transcription": map[string]any{"model": c.TranscriptionModel}, "turn_detection": turn},
		"output": map[string]any{"format": format, "voice": c.Voice},
	}
	return s
}

// instructionsUpdate is the session.update body that only replaces the
// instructions.
func (c Config) instructionsUpdate(text string) map[string]any {
	s := map[string]any{"instructions": text}
	if c.Protocol == GA {
		s["type"] = "realtime"
	}
	return s
}

// encodePCM is samples as base64 little-endian 16-bit PCM.
func encodePCM(samples []int16) string {
	b := make([]byte, 2*len(samples))
	for i, v := range samples {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return base64.StdEncoding.EncodeToString(b)
}

// decodePCM reads base64 little-endian 16-bit PCM.
func decodePCM(s string) ([]int16, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("audio is not base64: %w", err)
	}
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("audio has %d bytes, not whole 16-bit samples", len(b))
	}
	out := make([]int16, len(b)/2)
	for i := range out {
		out[i] = int16(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out, nil
}

// errorOutput is a tool failure as the model sees it.
func errorOutput(err error) string {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return string(b)
}
