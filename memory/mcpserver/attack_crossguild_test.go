package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackCrossGuildTools (cross-guild attacker): the MCP endpoint of
// one campaign, called with its DM token and with its player token, is
// given the ids of another campaign of the same database in every tool
// that takes one: fact ids (recall_node, delete_edge), proposal ids
// (resolve_proposal), entity and node ids (recall_node, kg_recall,
// kg_delete_node, kg_delete_edge, put_edge), session ids
// (search_sessions, kg_sync), and its names in the searches. Nothing of
// the other campaign is answered and none of its rows changes. (The
// tokens of one campaign opening another's endpoint is cmd/glyphoxa's
// TestServeMCPTokensAndRoles; no test gave one campaign's endpoint the
// other's ids.)
func TestAttackCrossGuildTools(t *testing.T) {
	t.Parallel()
	store := sample(t)
	f := pgtest.ForeignCampaign(t, store, "../../testdata/campaigns/hostile-keep.yaml")
	url := serveShape(t, store)
	before := f.State(t, store)
	fact, pending, proposal := fmt.Sprint(f.Facts[0]), fmt.Sprint(f.Pending[0]), f.Proposals[0]
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"recall_node", map[string]any{"id": fact}},
		{"recall_node", map[string]any{"id": "aldric"}},
		{"delete_edge", map[string]any{"id": pending}},
		{"delete_edge", map[string]any{"id": fact}},
		{"resolve_proposal", map[string]any{"id": proposal, "accept": true}},
		{"resolve_proposal", map[string]any{"id": proposal, "accept": false}},
		{"put_edge", map[string]any{"source": "aldric", "type": "KNOWS", "target": "brenna"}},
		{"read_graph", map[string]any{"name": "Ald"}},
		{"read_graph", map[string]any{}},
		{"search_sessions", map[string]any{"query": "Undercroft"}},
		{"search_sessions", map[string]any{"query": "ledger", "session": f.Session}},
		{"search_sessions", map[string]any{"query": "ledger", "session": "s1"}},
		{"sync", map[string]any{}},
		{"kg_read", map[string]any{"level": "campaign"}},
		{"kg_read", map[string]any{"level": "dm"}},
		{"kg_recall", map[string]any{"level": "campaign", "id": "aldric"}},
		{"kg_recall", map[string]any{"level": "dm", "id": "aldric"}},
		{"kg_delete_node", map[string]any{"level": "campaign", "id": "brenna"}},
		{"kg_delete_edge", map[string]any{"level": "campaign", "from": "aldric", "to": "undercroft", "rel": "located-at"}},
		{"kg_sync", map[string]any{"session_id": f.Session}},
		{"kg_ping", map[string]any{}},
	}
	for _, token := range []string{shapeDMToken, shapePlayerToken} {
		cs := goClient(t, url, token)
		for _, c := range calls {
			out, _ := goCall(t, cs, c.tool, c.args)
			low := strings.ToLower(out)
			for _, typed := range []string{"aldric", "brenna", "undercroft", strings.ToLower(f.Session)} {
				low = strings.ReplaceAll(low, typed, "")
			}
			for _, w := range f.Words {
				if strings.Contains(low, strings.ToLower(w)) {
					t.Errorf("%s token, %s %v: answers %q of campaign %s: %.600s", token[:6], c.tool, c.args, w, f.Campaign, out)
				}
			}
		}
	}
	if after := f.State(t, store); after != before {
		t.Errorf("the other campaign changed:\nbefore %s\nafter  %s", before, after)
	}
}
