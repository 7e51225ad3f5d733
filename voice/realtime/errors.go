package realtime

import (
	"errors"
	"fmt"
	"strings"
)

// Errors callers branch on.
var (
	// ErrClosed is returned by a method of a [Session] that was closed by
	// [Session.Close]; it is also the reason [Session.Err] gives then.
	ErrClosed = errors.New("realtime session closed")
	// ErrIdle is why a session that heard and said nothing for
	// [Config.IdleTimeout] closed itself.
	ErrIdle = errors.New("realtime session idle")
	// ErrAudioLimit is why a session closed when its [Budget] of audio
	// minutes was used up; the caller may fall back to the cascaded engine.
	ErrAudioLimit = errors.New("realtime audio limit reached")
	// ErrRateLimited is wrapped by errors telling that the provider refused
	// for rate limits (an HTTP 429 on dial, a rate-limit error event).
	ErrRateLimited = errors.New("realtime rate limited")
	// ErrProtocol is wrapped by every [ProtocolError].
	ErrProtocol = errors.New("realtime protocol error")
	// ErrNothingHeard is returned by [Session.EndOfTurn] for a turn with
	// no audio, or too little for the API (under 100 ms; it is dropped).
	ErrNothingHeard = errors.New("no audio heard since the last turn")
	// ErrBusy is returned by [Session.EndOfTurn] while the model is still
	// answering the previous turn: call [Session.Interrupt] first.
	ErrBusy = errors.New("the model is still answering; interrupt it first")
)

var errConfig = errors.New("invalid realtime config")

// ServerError is an "error" event of the Realtime API, or the error of a
// failed response. Most are recoverable: the session stays open.
type ServerError struct {
	// Type is the error class (invalid_request_error, server_error…).
	Type string `json:"type"`
	// Code is the specific error (e.g. input_audio_buffer_commit_empty,
	// rate_limit_exceeded); it may be empty.
	Code string `json:"code"`
	// Message is the provider's explanation.
	Message string `json:"message"`
	// Param is the offending parameter, when one is.
	Param string `json:"param"`
	// EventID is the id of the client event that caused the error, when
	// known.
	EventID string `json:"event_id"`
}

func (e *ServerError) Error() string {
	var b strings.Builder
	b.WriteString("realtime server error")
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Code != "" {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " on %s", e.Param)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	return b.String()
}

// Is makes a rate-limit error match [ErrRateLimited].
func (e *ServerError) Is(target error) bool {
	return target == ErrRateLimited && (e.Code == "rate_limit_exceeded" || e.Type == "rate_limit_error" || e.Type == "rate_limit_exceeded")
}

// ProtocolError is a server event the client could not make sense of: not
// JSON, a missing field, audio that is not base64 PCM. The session reports
// it as an [EventError] and goes on with the next event.
type ProtocolError struct {
	// Event is the event's type, when it could be read.
	Event string
	// Problem says what is wrong.
	Problem string
	// Err is the underlying decoding error, if any.
	Err error
}

func (e *ProtocolError) Error() string {
	ev := e.Event
	if ev == "" {
		ev = "event"
	}
	s := fmt.Sprintf("realtime protocol error: %s: %s", ev, e.Problem)
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrProtocol and the cause.
func (e *ProtocolError) Unwrap() []error { return []error{ErrProtocol, e.Err} }

// DialError is a refused WebSocket handshake.
type DialError struct {
	// URL is the endpoint dialled, without credentials.
	URL string
	// Status is the HTTP status of the refusal, 0 when there was none.
	Status int
	// Body is the start of the refusal's body.
	Body string
	// Err is the transport error.
	Err error
}

func (e *DialError) Error() string {
	s := "realtime dial " + e.URL
	if e.Status != 0 {
		s += fmt.Sprintf(": HTTP %d", e.Status)
	}
	if e.Body != "" {
		s += fmt.Sprintf(" %q", e.Body)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the transport error.
func (e *DialError) Unwrap() error { return e.Err }

// Is makes an HTTP 429 match [ErrRateLimited].
func (e *DialError) Is(target error) bool { return target == ErrRateLimited && e.Status == 429 }
