package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKGDeleteNodeRemovesEveryEdgeTouchingIt: the design's kg_delete_node
// removes "a node and every edge touching it". At the campaign level the
// node's facts were retired, but its edges to artifacts stayed: kg_read
// showed them as memory traces, inviting a kg_recall that a player's token
// is refused (only the DM brings back what the DM deleted).
func TestKGDeleteNodeRemovesEveryEdgeTouchingIt(t *testing.T) {
	t.Parallel()
	url := serveShape(t, sample(t))
	dm, player := goClient(t, url, shapeDMToken), goClient(t, url, shapePlayerToken)
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"kg_put_node", map[string]any{"level": "campaign", "id": "ferry-toll", "gist": "the ferry charges a silver a head"}},
		{"kg_put_edge", map[string]any{"level": "campaign", "from": "ferry-toll", "to": "notes/ferry.md:3", "rel": "written-in"}},
		{"kg_put_edge", map[string]any{"level": "campaign", "from": "grimjaw", "to": "ferry-toll", "rel": "collects"}},
		{"kg_delete_node", map[string]any{"level": "campaign", "id": "ferry-toll"}},
	} {
		if out, ok := goCall(t, dm, c.tool, c.args); !ok {
			t.Fatalf("%s %v: %s", c.tool, c.args, out)
		}
	}
	for _, r := range []struct {
		who string
		cs  *mcp.ClientSession
	}{{"the DM", dm}, {"a player", player}} {
		out, _ := goCall(t, r.cs, "kg_read", nil)
		if i := strings.Index(out, "ferry-toll"); i >= 0 {
			t.Errorf("%s's kg_read still shows an edge or trace of the deleted node ferry-toll: …%s…", r.who, out[max(0, i-120):min(len(out), i+60)])
		}
	}
}
