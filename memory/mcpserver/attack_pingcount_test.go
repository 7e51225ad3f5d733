package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pingSizes is what kg_ping tells of who else is connected.
type pingSizes struct {
	Active  int `json:"active_sessions"`
	Clients int `json:"connected_clients"`
}

// ping calls kg_ping as cs.
func ping(t *testing.T, cs *mcp.ClientSession) pingSizes {
	t.Helper()
	out, ok := goCall(t, cs, "kg_ping", nil)
	var p pingSizes
	if !ok || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("kg_ping: %s", out)
	}
	return p
}

// TestAttackPingCountsOthersSessions: a player's assistant polls kg_ping
// while the DM connects two assistants and registers a memory session. The
// counts of every client and session on the server told the player that,
// and when, the DM was at work on the graph (and how many other players'
// agents were connected). A player's kg_ping counts only the sessions of
// their own token and client; the server's clients are the DM's to count.
func TestAttackPingCountsOthersSessions(t *testing.T) {
	t.Parallel()
	url := serveShape(t, sample(t))
	player := goClient(t, url, shapePlayerToken)
	before := ping(t, player)
	dm := goClient(t, url, shapeDMToken)
	goClient(t, url, shapeDMToken)
	if _, ok := goCall(t, dm, "kg_register_session", nil); !ok {
		t.Fatal("the DM's kg_register_session failed")
	}
	if d := ping(t, dm); d.Active != 1 || d.Clients != 3 {
		t.Errorf("the DM's kg_ping counts %d sessions and %d clients, want 1 and 3", d.Active, d.Clients)
	}
	if after := ping(t, player); after != before {
		t.Errorf("LEAK: the player's kg_ping went from %+v to %+v when the DM connected and registered a session", before, after)
	}
	if _, ok := goCall(t, player, "kg_register_session", nil); !ok {
		t.Fatal("the player's kg_register_session failed")
	}
	if own := ping(t, player); own.Active != before.Active+1 {
		t.Errorf("the player's kg_ping counts %d active sessions after registering one, want %d (their own)", own.Active, before.Active+1)
	}
}

// TestAttackPingCountsOthersProposals: proposals are the DM's to read
// (read_graph lists them to the DM only), yet a player's kg_ping counted
// every pending one: a player learned how many proposals the others made,
// and when the DM settled them. A player's count leaves them out.
func TestAttackPingCountsOthersProposals(t *testing.T) {
	t.Parallel()
	url := serveShape(t, sample(t))
	player := goClient(t, url, shapePlayerToken)
	other := goClient(t, url, shapePlayerToken)
	if out, ok := goCall(t, other, "kg_put_node", map[string]any{"level": "campaign", "id": "ferry-toll", "gist": "a silver a head"}); !ok ||
		!strings.Contains(out, "proposed") {
		t.Fatalf("another player's kg_put_node: %s", out)
	}
	out, ok := goCall(t, player, "kg_ping", nil)
	var p struct {
		Counts map[string]int `json:"counts"`
	}
	if !ok || json.Unmarshal([]byte(out), &p) != nil {
		t.Fatalf("kg_ping: %s", out)
	}
	if n := p.Counts["pending_proposals"]; n != 0 {
		t.Errorf("LEAK: a player's kg_ping counts %d pending proposals, the DM's to read", n)
	}
}
