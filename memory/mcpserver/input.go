package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory"
)

// checkArguments refuses a tool call whose arguments hold a NUL byte in
// any string (JSON can carry one as \u0000; PostgreSQL stores none): the
// call answers with a tool error naming the argument, before any tool
// runs. Invalid UTF-8 needs no check here: the JSON decoder has already
// replaced it.
func checkArguments(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ct, ok := req.(*mcp.CallToolRequest); ok && ct.Params != nil && len(ct.Params.Arguments) > 0 {
			var args any
			if json.Unmarshal(ct.Params.Arguments, &args) == nil {
				if path, bad := nulAt(args, ""); bad {
					err := fmt.Errorf("%w: argument %s of %s holds a NUL byte", memory.ErrInvalid, path, ct.Params.Name)
					return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}, nil
				}
			}
		}
		return next(ctx, method, req)
	}
}

// nulAt finds a string holding a NUL byte in v (a key or a value) and
// returns its path ("question", "attributes.notes", "ids[2]").
func nulAt(v any, path string) (string, bool) {
	switch x := v.(type) {
	case string:
		return path, strings.IndexByte(x, 0) >= 0
	case map[string]any:
		for k, y := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			if strings.IndexByte(k, 0) >= 0 {
				return p, true
			}
			if at, bad := nulAt(y, p); bad {
				return at, true
			}
		}
	case []any:
		for i, y := range x {
			if at, bad := nulAt(y, fmt.Sprintf("%s[%d]", path, i)); bad {
				return at, true
			}
		}
	}
	return "", false
}
