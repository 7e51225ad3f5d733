package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RunIO serves one client that writes newline-delimited JSON-RPC to r and
// reads the answers from w, until ctx ends or the client disconnects. A
// client that writes its requests and closes its end (`printf … | glyphoxa
// mcp`) gets every answer before the session ends: the end of r is passed
// on only once the requests read so far have been answered (or
// cancelled), since the SDK ends the session at the end of its input and
// drops the answers still being made.
func (s *Server) RunIO(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	d := &drain{closed: make(chan struct{})}
	return s.mcp.Run(ctx, &mcp.IOTransport{Reader: &drainReader{d: d, r: r}, Writer: &drainWriter{d: d, w: w}})
}

// nopCloser is a writer whose Close does nothing (standard output stays
// open for the process's logs).
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// drain counts the calls a client sent (requests with an id) that are not
// answered yet, reading the JSON-RPC lines as they pass.
type drain struct {
	mu       sync.Mutex
	open     map[string]bool // ids of the calls read and not yet answered
	answered chan struct{}   // closed (and replaced) when an answer passes
	closed   chan struct{}
	once     sync.Once
}

// rpcMessage is what drain reads of a JSON-RPC message.
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method *string         `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// messages decodes a line: one message or a batch. A line that is not
// JSON-RPC yields nothing (the SDK answers it, or ends the session).
func messages(line []byte) []rpcMessage {
	line = bytes.TrimSpace(line)
	if len(line) > 0 && line[0] == '[' {
		var ms []rpcMessage
		if json.Unmarshal(line, &ms) != nil {
			return nil
		}
		return ms
	}
	var m rpcMessage
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []rpcMessage{m}
}

func hasID(id json.RawMessage) bool { return len(id) > 0 && string(id) != "null" }

// read notes the calls of a line the client sent, and the calls it
// cancelled (which get no answer).
func (d *drain) read(line []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range messages(line) {
		switch {
		case m.Method == nil:
		case *m.Method == "notifications/cancelled" && hasID(m.Params.RequestID):
			d.answer(string(m.Params.RequestID))
		case hasID(m.ID):
			if d.open == nil {
				d.open = map[string]bool{}
			}
			d.open[string(m.ID)] = true
		}
	}
}

// wrote notes the answers of a line written to the client.
func (d *drain) wrote(line []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, m := range messages(line) {
		if m.Method == nil && hasID(m.ID) {
			d.answer(string(m.ID))
		}
	}
}

func (d *drain) answer(id string) {
	delete(d.open, id)
	if d.answered != nil {
		close(d.answered)
		d.answered = nil
	}
}

// wait returns once every call read is answered, or the connection closed.
func (d *drain) wait() {
	for {
		d.mu.Lock()
		if len(d.open) == 0 {
			d.mu.Unlock()
			return
		}
		if d.answered == nil {
			d.answered = make(chan struct{})
		}
		answered := d.answered
		d.mu.Unlock()
		select {
		case <-answered:
		case <-d.closed:
			return
		}
	}
}

// drainReader passes the client's input on, noting its calls line by
// line; its end waits for their answers.
type drainReader struct {
	d       *drain
	r       io.ReadCloser
	partial []byte
}

func (r *drainReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.partial = append(r.partial, p[:n]...)
	for {
		i := bytes.IndexByte(r.partial, '\n')
		if i < 0 {
			break
		}
		r.d.read(r.partial[:i])
		r.partial = r.partial[i+1:]
	}
	if len(r.partial) > mcp.DefaultMaxLineLength {
		// The SDK refuses a line this long; it holds no call to wait for.
		r.partial = r.partial[:0]
	}
	if err == io.EOF {
		if len(r.partial) > 0 {
			r.d.read(r.partial)
			r.partial = nil
		}
		if n > 0 {
			return n, nil // the end again on the next call, after these bytes are read
		}
		r.d.wait()
	}
	return n, err
}

func (r *drainReader) Close() error {
	r.d.once.Do(func() { close(r.d.closed) })
	return r.r.Close()
}

// drainWriter passes the answers on, noting them.
type drainWriter struct {
	d *drain
	w io.WriteCloser
}

func (w *drainWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	for line := range bytes.SplitSeq(p, []byte{'\n'}) {
		w.d.wrote(line)
	}
	return n, err
}

func (w *drainWriter) Close() error { return w.w.Close() }
