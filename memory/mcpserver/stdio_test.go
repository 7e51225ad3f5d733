package mcpserver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// syncBuffer is the client's end of the server's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Close() error { return nil }

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestPipedRequestsAreAllAnswered: a client that writes its requests and
// closes its end at once (`printf … | glyphoxa mcp`) gets an answer to
// every call, the database reads among them, and none to a notification;
// the session then ends by itself, also when a call was cancelled. The SDK's own end of input dropped
// every answer still being made.
func TestPipedRequestsAreAllAnswered(t *testing.T) {
	t.Parallel()
	srv, err := mcpserver.New(mcpserver.Config{Door: pgtest.Door(t, sample(t)), Campaign: "ironhold-saga"})
	if err != nil {
		t.Fatal(err)
	}
	in := strings.Join([]string{
		initialize,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":"cart"}}}`,
		`{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"kg_read","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"ping"}`,
		// A call the client cancels may go unanswered: the session ends
		// all the same.
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"search_sessions","arguments":{"query":"ale"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":6}}`,
	}, "\n") // no newline after the last line either
	// Standard input is a pipe the client wrote and closed.
	input, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString(in); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out := &syncBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard, no budget
	defer cancel()
	if err := srv.RunIO(ctx, input, out); err != nil && ctx.Err() != nil {
		t.Fatalf("the session did not end by itself: %v", err)
	}
	answered := map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("an output line is not JSON-RPC: %q", sc.Text())
		}
		if len(m.Result) == 0 && string(m.ID) != "6" {
			t.Errorf("call %s answered without a result: %s", m.ID, sc.Text())
		}
		answered[string(m.ID)] = true
	}
	for _, id := range []string{`1`, `2`, `3`, `"four"`, `5`} {
		if !answered[id] {
			t.Errorf("call %s was not answered; answers: %q", id, out.String())
		}
	}
}
