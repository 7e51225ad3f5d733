// Package provider holds what the speech providers share: the error a
// speech-to-text or speech-synthesis provider (Deepgram, OpenAI, a local
// program) returns when it fails, naming itself and the failing step.
package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Error is a failure of a speech provider.
type Error struct {
	Provider string // "deepgram", "openai", "pocketsphinx", "flite"…
	Op       string // what failed: "connect", "stream", "request", "decode response"…
	Status   int    // HTTP status, when there was one
	Body     string // start of the response body (or a program's stderr), when there was one
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s", e.Provider, e.Op)
	if e.Status != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.Status)
	}
	if e.Body != "" {
		fmt.Fprintf(&b, " %q", e.Body)
	}
	if e.Err != nil {
		fmt.Fprintf(&b, ": %v", e.Err)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the provider did not answer in time.
func (e *Error) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.Is(e.Err, context.DeadlineExceeded) || (errors.As(e.Err, &t) && t.Timeout())
}
