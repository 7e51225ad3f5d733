package mcpserver_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const (
	tokenA = "token-a-0123456789abcdef"
	tokenB = "token-b-0123456789abcdef"
)

// post sends one JSON-RPC message and returns the status, the session id
// the server answered with and the body.
func post(t *testing.T, url, token, session, body string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`

func initSession(t *testing.T, url, token string) string {
	t.Helper()
	status, id, body := post(t, url, token, "", initialize)
	if status != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q %.300s", status, id, body)
	}
	return id
}

func liveSessions(srv *mcpserver.Server) map[string]bool {
	m := map[string]bool{}
	for ss := range srv.MCP().Sessions() {
		m[ss.ID()] = true
	}
	return m
}

// TestSessionsPerTokenAreCapped initializes far more sessions with one
// token than it may hold: the count stays at the cap, the least recently
// used session is the one closed, and another token's sessions are left
// alone.
func TestSessionsPerTokenAreCapped(t *testing.T) {
	t.Parallel()
	store := sample(t)
	srv, err := mcpserver.New(mcpserver.Config{Door: pgtest.Door(t, store), Campaign: "ironhold-saga"})
	if err != nil {
		t.Fatal(err)
	}
	hh, err := srv.HTTPHandler(mcpserver.Tokens{DM: []string{tokenA}, Player: []string{tokenB}})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(hh)
	defer h.Close()
	url := h.URL + "/mcp"

	other := initSession(t, url, tokenB)
	keep := initSession(t, url, tokenA)  // used all along: never the least recently used
	first := initSession(t, url, tokenA) // never used again: closed first
	const n = 4 * mcpserver.MaxSessionsPerToken
	for range n {
		initSession(t, url, tokenA)
		if status, _, body := post(t, url, tokenA, keep, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); status != http.StatusOK {
			t.Fatalf("ping on a live session: %d %.300s", status, body)
		}
	}
	live := liveSessions(srv)
	if got, want := len(live), mcpserver.MaxSessionsPerToken+1; got != want {
		t.Fatalf("%d live sessions after %d initializes with one token and one with another, want %d", got, n+2, want)
	}
	if !live[keep] || !live[other] || live[first] {
		t.Errorf("kept the recently used session: %v, the other token's: %v, closed the least recently used: %v", live[keep], live[other], !live[first])
	}
	if status, _, _ := post(t, url, tokenA, first, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); status != http.StatusNotFound {
		t.Errorf("a closed session answered %d, want 404 (the client initializes again)", status)
	}
}

// TestShortTokensAreRefused: a token shorter than MinTokenLen is an error
// naming which token, never showing it.
func TestShortTokensAreRefused(t *testing.T) {
	t.Parallel()
	srv, err := mcpserver.New(mcpserver.Config{Door: pgtest.Door(t, sample(t)), Campaign: "ironhold-saga"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		tokens mcpserver.Tokens
		want   string
	}{
		{"one-character DM token", mcpserver.Tokens{DM: []string{"x"}}, "DM token 1 is 1 characters long"},
		{"short player token", mcpserver.Tokens{DM: []string{tokenA}, Player: []string{"secret-15-chars"}}, "player token 1 is 15 characters long"},
		{"short token of a player", mcpserver.Tokens{Players: map[string]string{"abc": "Pia"}}, `the token of player "Pia" is 3 characters long`},
		{"no token", mcpserver.Tokens{}, "needs at least one token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := srv.HTTPHandler(tc.tokens)
			if h != nil || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("HTTPHandler = %v, %v; want an error saying %q", h, err, tc.want)
			}
			for _, tok := range append(append(tc.tokens.DM, tc.tokens.Player...), "abc") {
				if len(tok) < mcpserver.MinTokenLen && strings.Contains(err.Error(), tok+" ") {
					t.Errorf("the error shows the token %q: %v", tok, err)
				}
			}
		})
	}
}

// TestBadInputIsRefused: NUL bytes in a query parameter are a 400; a NUL
// in a tool argument, and a 100,000-word search, are tool errors that say
// what is wrong.
func TestBadInputIsRefused(t *testing.T) {
	t.Parallel()
	srv, err := mcpserver.New(mcpserver.Config{Door: pgtest.Door(t, sample(t)), Campaign: "ironhold-saga"})
	if err != nil {
		t.Fatal(err)
	}
	hh, err := srv.HTTPHandler(mcpserver.Tokens{Player: []string{tokenB}})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(hh)
	defer h.Close()
	if status, _, body := post(t, h.URL+"/mcp?x=%00", tokenB, "", initialize); status != http.StatusBadRequest || !strings.Contains(body, "NUL") {
		t.Errorf("NUL in a query parameter: %d %.200s", status, body)
	}

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "bounds", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.URL + "/mcp",
		HTTPClient: &http.Client{Transport: bearer{tokenB}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, tc := range []struct {
		name, tool string
		args       map[string]any
		want       string
	}{
		{"NUL in a search", "search_sessions", map[string]any{"query": "steel\x00shipment"}, "argument query of search_sessions holds a NUL byte"},
		{"NUL in a nested argument", "put_node", map[string]any{"type": "npc", "name": "Mag", "attributes": map[string]any{"notes": "a\x00b"}},
			"argument attributes.notes of put_node holds a NUL byte"},
		{"100k-word search", "search_sessions", map[string]any{"query": strings.Repeat("steel ", 100_000)}, "bytes allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
			if err != nil {
				t.Fatalf("%s: %v", tc.tool, err)
			}
			text := ""
			for _, c := range res.Content {
				if tc, ok := c.(*mcp.TextContent); ok {
					text += tc.Text
				}
			}
			if !res.IsError || !strings.Contains(text, tc.want) || strings.Contains(text, "stack depth") || len(text) > 500 {
				t.Errorf("%s: error %v, %.500q; want a short tool error saying %q", tc.tool, res.IsError, text, tc.want)
			}
		})
	}
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
