package realtime

import (
	"context"
	"encoding/json"
	"time"
)

// Tool declares a function the model may call.
type Tool struct {
	// Name is the function's name (e.g. "recall").
	Name string
	// Description tells the model when to call it.
	Description string
	// Parameters is the JSON Schema of the arguments object.
	Parameters map[string]any
}

// ToolRunner runs the model's function calls. The implementer applies the
// NPC's permissions (what the NPC may know) exactly as for the cascaded
// engine; the session only carries calls and results. RunTool is called on
// its own goroutine, possibly for several calls at once, and must return
// when ctx ends ([Config.ToolTimeout], or the session closing:
// [Session.Close] waits for running calls).
type ToolRunner interface {
	// RunTool runs the named tool with its JSON arguments (always a JSON
	// object) and returns the result for the model, as JSON or plain
	// text. An error is reported to the model as {"error": "..."}.
	RunTool(ctx context.Context, name string, args json.RawMessage) (string, error)
}

// ToolRunnerFunc adapts a function to [ToolRunner].
type ToolRunnerFunc func(ctx context.Context, name string, args json.RawMessage) (string, error)

// RunTool calls f.
func (f ToolRunnerFunc) RunTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	return f(ctx, name, args)
}

// ToolCall is one function call of the model, as it was run, for the DM's
// audit.
type ToolCall struct {
	// CallID is the model's id for the call.
	CallID string
	// Name and Args are the call.
	Name string
	Args json.RawMessage
	// Output is what the model was given back.
	Output string
	// Err is the call's failure, if any (Output then holds it for the
	// model).
	Err error
	// Duration is how long the tool ran.
	Duration time.Duration
}
