package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// Tokens of the test configuration: two guilds play ironhold-saga (the
// configuration that made serve panic), a third plays another campaign.
const (
	ironPlayer = "iron-player-token-0123456789"
	ironDM     = "iron-dm-token-0123456789abcd"
	ironThorin = "iron-thorin-token-0123456789"
	otherDM    = "other-dm-token-0123456789abc"
	otherPl    = "other-player-token-012345678"
)

const twoGuildsOneCampaign = `discord:
  token: t
  guilds:
    - {guild_id: "100000", campaign: ironhold-saga, mcp_token: ` + ironPlayer + `, mcp_dm_token: ` + ironDM + `}
    - {guild_id: "100001", campaign: ironhold-saga, mcp_token: ` + ironPlayer + `,
       mcp_player_tokens: {Thorin: ` + ironThorin + `}}
    - {guild_id: "100002", campaign: other-campaign, mcp_token: ` + otherPl + `, mcp_dm_token: ` + otherDM + `}
`

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpClient connects to url with token, as a Go SDK client.
func mcpClient(t *testing.T, url, token string) (*mcp.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "probe", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// callJSON calls a tool and returns its structured result as JSON text, or
// the tool's error text.
func callJSON(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), false
	}
	out, _ := json.Marshal(res.StructuredContent)
	return string(out), true
}

// TestServeMCPTokensAndRoles runs the probes of issue 17 against serve's
// MCP mounting: a configuration config check accepts (two guilds bound to
// one campaign) mounts without a panic; a campaign's token does not open
// another campaign; a player's ask, read_graph and recall_node never return
// the secret "Grimjaw FORGED Vault Key" nor tell it exists.
func TestServeMCPTokensAndRoles(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(twoGuildsOneCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := runCLI(t, vars, "config", "check", "--config", path); code != 0 || !strings.Contains(out, "MCP endpoints: 2") {
		t.Fatalf("config check refused the configuration: %s %s", out, errs)
	}
	cfg, err := config.Load(path, func(k string) string { return vars[k] })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	mux := http.NewServeMux()
	n, err := mountMCP(mux, pgtest.Door(t, store), cfg, slog.New(slog.DiscardHandler))
	if err != nil || n != 2 {
		t.Fatalf("mountMCP = %d, %v; want the 2 campaigns", n, err)
	}
	h := httptest.NewServer(mux)
	defer h.Close()
	iron, other := h.URL+"/mcp/ironhold-saga", h.URL+"/mcp/other-campaign"

	for _, probe := range []struct{ url, token string }{
		{other, ironPlayer}, {other, ironDM}, {other, ironThorin}, {iron, otherDM}, {iron, otherPl}, {iron, ""}, {iron, "wrong"},
	} {
		if _, err := mcpClient(t, probe.url, probe.token); err == nil {
			t.Errorf("token %q opened %s", probe.token, probe.url)
		}
	}

	camp := pgtest.Campaign(t, store, "ironhold-saga")
	forged, err := camp.Graph().FindFacts(ctx, postgres.FactQuery{Text: "forged"})
	if err != nil || len(forged) != 1 || !memory.IsSecret(forged[0].Attributes) {
		t.Fatalf("the sample's secret fact: %+v %v", forged, err)
	}
	question := map[string]any{"question": "Who forged the key to the Sunken Vault?", "k": 10}
	secretWords := []string{"FORGED", "hooded stranger", "lost heir", "secret_knowledge"}

	dm, err := mcpClient(t, iron, ironDM)
	if err != nil {
		t.Fatal(err)
	}
	if out, ok := callJSON(t, dm, "ask", question); !ok || !strings.Contains(out, "FORGED") {
		t.Fatalf("the DM's ask should find the secret fact (else this test proves nothing): %s", out)
	}

	for _, token := range []string{ironPlayer, ironThorin} {
		pl, err := mcpClient(t, iron, token)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"ask", question},
			{"ask", map[string]any{"question": "Grimjaw vault key forged secret stranger"}},
			{"read_graph", map[string]any{}},
			{"read_graph", map[string]any{"name": "grim"}},
			{"sync", map[string]any{}},
			{"search_sessions", map[string]any{"query": "key"}},
		} {
			out, ok := callJSON(t, pl, c.tool, c.args)
			if !ok {
				t.Fatalf("player %s %v: %s", c.tool, c.args, out)
			}
			for _, w := range secretWords {
				if strings.Contains(out, w) {
					t.Errorf("player %s %v shows %q: %s", c.tool, c.args, w, out)
				}
			}
		}
		hidden, _ := callJSON(t, pl, "recall_node", map[string]any{"id": fmt.Sprint(forged[0].ID)})
		missing, _ := callJSON(t, pl, "recall_node", map[string]any{"id": "999999"})
		if strings.ReplaceAll(hidden, fmt.Sprint(forged[0].ID), "N") != strings.ReplaceAll(missing, "999999", "N") {
			t.Errorf("recalling a hidden fact answers %q, a missing one %q: the difference tells the secret exists", hidden, missing)
		}
		if out, _ := callJSON(t, pl, "kg_ping", nil); !strings.Contains(out, `"your_role":"player"`) {
			t.Errorf("a player token has DM rights: %s", out)
		}
	}
}

// Configurations config check accepts never fail serve's start-up; those it
// refuses name the key.
func TestConfigCheckAndServeAgree(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name, yaml string
		wantErr    string // empty: accepted
	}{
		{"two guilds one campaign", twoGuildsOneCampaign, ""},
		{"global token one campaign", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: c1}, {guild_id: \"100001\", campaign: c1}]}\nserver: {mcp_token: " + ironPlayer + "}\n", ""},
		{"global token two campaigns", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: c1}, {guild_id: \"100001\", campaign: c2}]}\nserver: {mcp_token: " + ironPlayer + "}\n", "server.mcp_token"},
		{"space in campaign id", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: \"iron hold\", mcp_token: " + ironPlayer + "}]}\n", "discord.guilds[0].campaign"},
		{"brace in campaign id", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: \"iron{x}\", mcp_token: " + ironPlayer + "}]}\n", "discord.guilds[0].campaign"},
		{"1 MB campaign id", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: " + long + "}]}\n", "1048576 bytes"},
		{"token reused across campaigns", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: c1, mcp_token: " + ironPlayer + "}, {guild_id: \"100001\", campaign: c2, mcp_token: " + ironPlayer + "}]}\n", "discord.guilds[1].mcp_token"},
		{"player token as DM token", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: c1, mcp_token: " + ironPlayer + ", mcp_dm_token: " + ironPlayer + "}]}\n", "a token opens one campaign with one role"},
		{"short token", "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: c1, mcp_dm_token: abc}]}\n", "at least 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := config.Parse(strings.NewReader(tc.yaml), "config.yaml", func(string) string { return "" })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %q", err, tc.wantErr)
				}
				if len(err.Error()) > 2000 {
					t.Fatalf("an error of %d bytes", len(err.Error()))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			eps, err := cfg.MCPEndpoints()
			if err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			for _, ep := range eps {
				if err := handle(mux, "/mcp/"+ep.Campaign, http.NotFoundHandler()); err != nil {
					t.Fatalf("serve's start-up fails on a configuration config check accepts: %v", err)
				}
			}
		})
	}
}
