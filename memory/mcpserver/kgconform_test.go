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

// TestKGArtifactEdgeRefreshesItsNode: the design says writes refresh a
// node's timestamp (its 7-day protection from compaction restarts), and a
// DM's edge at the DM level does; an edge from a campaign entity to an
// artifact left the entity's stamp where it was, so compaction could
// archive the node the DM had just linked.
func TestKGArtifactEdgeRefreshesItsNode(t *testing.T) {
	t.Parallel()
	url := serveShape(t, sample(t))
	dm := goClient(t, url, shapeDMToken)
	if got := nodeStamp(t, dm, "grimjaw"); got.Equal(kgNow) {
		t.Fatalf("grimjaw is stamped %s before the edge: the test proves nothing", got)
	}
	if out, ok := goCall(t, dm, "kg_put_edge", map[string]any{"level": "campaign", "from": "grimjaw", "to": "notes/grimjaw.md:1",
		"rel": "written-in"}); !ok {
		t.Fatalf("kg_put_edge: %s", out)
	}
	if got := nodeStamp(t, dm, "grimjaw"); !got.Equal(kgNow) {
		t.Errorf("after the DM's edge from grimjaw to an artifact, grimjaw is stamped %s, want the write's time %s", got, kgNow)
	}
}
