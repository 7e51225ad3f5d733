package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/clock/clocktest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

var kgNow = time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

type kgEdge struct {
	From  string   `json:"from"`
	To    string   `json:"to"`
	Rel   string   `json:"rel"`
	Notes []string `json:"notes"`
}

type kgGraph struct {
	Nodes []struct {
		ID      string   `json:"id"`
		Gist    string   `json:"gist"`
		Touches []string `json:"touches"`
		Notes   []string `json:"notes"`
	} `json:"nodes"`
	Edges  []kgEdge `json:"edges"`
	Traces []kgEdge `json:"traces"`
	Tokens int      `json:"tokens"`
}

// kgView is kg_read's answer: a graph per level.
type kgView struct {
	Campaign *kgGraph `json:"campaign"`
	DM       *kgGraph `json:"dm"`
}

func decode[T any](t *testing.T, r callResult) T {
	t.Helper()
	var v T
	if !r.OK {
		t.Fatalf("call failed: %s", r.Error)
	}
	if err := json.Unmarshal(r.Result, &v); err != nil {
		t.Fatalf("%s: %v", r.Result, err)
	}
	return v
}

func okResult(t *testing.T, what string, r callResult, want string) {
	t.Helper()
	if !r.OK || !strings.Contains(string(r.Result), want) {
		t.Fatalf("%s: %+v, want %s", what, r, want)
	}
}

// Every kg_* tool through the official TypeScript SDK client over HTTP with
// real tokens: role rules, levels, sessions and sync, then compaction of a
// 2,000-node campaign by the 30-second compactor on a fake clock.
func TestKGToolsWithTypeScriptClient(t *testing.T) {
	t.Parallel()
	peers := nodePeers(t)
	store := sample(t)
	ctx := context.Background()
	clk := clocktest.NewFake(kgNow)
	url := serveMCP(t, mcpserver.Config{Door: pgtest.Door(t, store), Campaign: "ironhold-saga", Clock: clk},
		mcpserver.Tokens{Player: []string{"player-token-0123456789"}, DM: []string{"dm-token-0123456789"}})
	camp := pgtest.Campaign(t, store, "ironhold-saga")
	forged := must[int64](t)(camp.CanonFactID(ctx, "grimjaw", "vault-key", "FORGED"))
	before := must[memory.Relationship](t)(camp.Graph().Fact(ctx, forged))

	// Sessions: the player and the DM register theirs.
	reg, err := runClient(t, peers, "player-agent", []call{{Tool: "kg_register_session"}}, "http", url, "player-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	playerSession := decode[struct {
		ID string `json:"session_id"`
	}](t, reg.Results[0]).ID
	reg, err = runClient(t, peers, "dm-agent", []call{{Tool: "kg_register_session"}}, "http", url, "dm-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	dmSession := decode[struct {
		ID string `json:"session_id"`
	}](t, reg.Results[0]).ID

	player, err := runClient(t, peers, "player-agent", []call{
		{Tool: "kg_read"},
		// The secret triple and a new one answer alike, and neither changes canon.
		{Tool: "kg_put_edge", Args: map[string]any{"level": "campaign", "from": "grimjaw", "to": "vault-key", "rel": "FORGED", "session_id": playerSession}},
		{Tool: "kg_put_edge", Args: map[string]any{"level": "campaign", "from": "grimjaw", "to": "dawn-hammer", "rel": "FORGED", "session_id": playerSession}},
		{Tool: "kg_put_node", Args: map[string]any{"level": "campaign", "id": "old-mag", "gist": "a ferrywoman", "type": "npc"}},
		{Tool: "kg_put_node", Args: map[string]any{"level": "dm", "id": "x", "gist": "y"}},
		{Tool: "kg_delete_edge", Args: map[string]any{"level": "campaign", "from": "grimjaw", "to": "vault-key", "rel": "FORGED"}},
		{Tool: "kg_delete_edge", Args: map[string]any{"level": "campaign", "from": "grimjaw", "to": "nowhere", "rel": "FORGED"}},
		{Tool: "kg_delete_node", Args: map[string]any{"level": "campaign", "id": "duskwood"}},
		{Tool: "kg_recall", Args: map[string]any{"level": "dm", "id": "x"}},
		{Tool: "kg_ping"},
		// The old put_edge (issue 17, item 1): same rules.
		{Tool: "put_edge", Args: map[string]any{"source": "grimjaw", "type": "FORGED", "target": "vault-key", "attributes": map[string]any{"secret": false}}},
		{Tool: "put_edge", Args: map[string]any{"source": "grimjaw", "type": "FORGED", "target": "dawn-hammer", "attributes": map[string]any{"secret": false}}},
	}, "http", url, "player-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	wantKG := "kg_delete_edge kg_delete_node kg_ping kg_put_edge kg_put_node kg_read kg_recall kg_register_session kg_sync"
	var got []string
	for _, n := range player.Tools {
		if strings.HasPrefix(n, "kg_") {
			got = append(got, n)
		}
	}
	if strings.Join(got, " ") != wantKG {
		t.Fatalf("kg tools %v", got)
	}
	r := player.Results
	pv := decode[kgView](t, r[0])
	if pv.Campaign == nil || len(pv.Campaign.Nodes) == 0 || pv.DM != nil || strings.Contains(string(r[0].Result), "forged") ||
		strings.Contains(string(r[0].Result), `"dm"`) {
		t.Fatalf("a player's kg_read: %s", r[0].Result)
	}
	if string(r[1].Result) != string(r[2].Result) || !strings.Contains(string(r[1].Result), `"result":"proposed"`) {
		t.Fatalf("a player's kg_put_edge on a secret triple %s, on a new one %s: must be the same proposal answer", r[1].Result, r[2].Result)
	}
	okResult(t, "kg_put_node by a player", r[3], `"result":"proposed"`)
	if r[4].OK || !strings.Contains(r[4].Error, "DM's private notes") {
		t.Fatalf("a player wrote the dm level: %+v", r[4])
	}
	if r[5].OK != r[6].OK || !r[5].OK || !strings.Contains(string(r[5].Result), `"result":"proposed"`) || !strings.Contains(string(r[6].Result), `"result":"proposed"`) {
		t.Fatalf("kg_delete_edge of a hidden edge %+v and of none %+v must answer alike", r[5], r[6])
	}
	okResult(t, "kg_delete_node by a player", r[7], `"result":"proposed"`)
	if r[8].OK {
		t.Fatalf("a player recalled a dm node: %+v", r[8])
	}
	okResult(t, "kg_ping", r[9], `"your_role":"player"`)
	if strings.Contains(string(r[9].Result), `"level":"dm"`) {
		t.Fatalf("a player's kg_ping sizes the dm level: %s", r[9].Result)
	}
	type change struct{ Result, ID string }
	pe1, pe2 := decode[change](t, r[10]), decode[change](t, r[11])
	if pe1.Result != "proposed" || pe2.Result != "proposed" || pe1.ID == fmt.Sprint(forged) {
		t.Fatalf("a player's put_edge on the secret triple %+v, on a new one %+v", pe1, pe2)
	}
	after := must[memory.Relationship](t)(camp.Graph().Fact(ctx, forged))
	if after.Status != memory.StatusActive || after.Attributes[memory.AttrSecret] != true || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Fatalf("a player's writes changed the secret fact: %+v", after)
	}
	if _, err := camp.Graph().Entity(ctx, "old-mag"); err == nil {
		t.Fatal("a player's kg_put_node changed canon")
	}

	// The DM writes both levels; one write names the DM's session, one not.
	dm, err := runClient(t, peers, "dm-agent", []call{
		{Tool: "kg_put_node", Args: map[string]any{"level": "dm", "id": "plot", "gist": "the dragon wants the key", "session_id": dmSession}},
		{Tool: "kg_put_node", Args: map[string]any{"level": "dm", "id": "twist", "gist": "Elara is the heir", "touches": []string{"plot"}, "session_id": dmSession}},
		{Tool: "kg_put_edge", Args: map[string]any{"level": "dm", "from": "plot", "to": "twist", "rel": "leads_to", "session_id": dmSession}},
		{Tool: "kg_put_edge", Args: map[string]any{"level": "project", "from": "grimjaw", "to": "duskwood", "rel": "located-at", "notes": []string{"fled the city"}}},
		{Tool: "kg_put_node", Args: map[string]any{"level": "campaign", "id": "old-mag", "gist": "a ferrywoman on the river", "type": "npc", "name": "Old Mag"}},
		{Tool: "kg_sync", Args: map[string]any{"session_id": dmSession}},
		{Tool: "kg_read"},
		{Tool: "kg_delete_edge", Args: map[string]any{"level": "dm", "from": "plot", "to": "twist", "rel": "LEADS_TO"}},
		{Tool: "kg_delete_node", Args: map[string]any{"level": "dm", "id": "twist"}},
		{Tool: "kg_ping"},
	}, "http", url, "dm-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	d := dm.Results
	for i := range 5 {
		okResult(t, fmt.Sprintf("DM write %d", i), d[i], `"result":"applied"`)
	}
	sync := string(d[5].Result)
	if !d[5].OK || !strings.Contains(sync, `"old-mag"`) || !strings.Contains(sync, `"edge:campaign:grimjaw:located-at:ironhold"`) || strings.Contains(sync, `"plot"`) {
		t.Fatalf("the DM's kg_sync must show the writes outside its session (old-mag, the superseded location) and not its own (plot): %s", sync)
	}
	ds := decode[struct {
		SinceTS      int64 `json:"since_ts"`
		TotalChanges int   `json:"total_changes"`
		Changes      struct {
			Campaign *struct {
				Nodes   []struct{ ID string } `json:"nodes"`
				Edges   []kgEdge              `json:"edges"`
				Removed []string              `json:"removed"`
			} `json:"campaign"`
			DM *struct{} `json:"dm"`
		} `json:"changes"`
	}](t, d[5])
	if ds.SinceTS != kgNow.Unix() || ds.Changes.Campaign == nil || ds.Changes.DM == nil ||
		ds.TotalChanges != len(ds.Changes.Campaign.Nodes)+len(ds.Changes.Campaign.Edges)+len(ds.Changes.Campaign.Removed) || ds.TotalChanges == 0 {
		t.Fatalf("the DM's kg_sync shape: %s", sync)
	}
	dv := decode[kgView](t, d[6])
	var sawDM, sawForged, sawFled bool
	for _, n := range dv.DM.Nodes {
		sawDM = sawDM || n.ID == "plot"
	}
	for _, e := range dv.DM.Edges {
		if e.Rel != "leads-to" {
			t.Fatalf("a DM edge written as leads_to reads %q, want kebab-case leads-to", e.Rel)
		}
	}
	for _, e := range dv.Campaign.Edges {
		sawForged = sawForged || e.Rel == "forged"
		sawFled = sawFled || (e.Rel == "located-at" && e.From == "grimjaw" && slices.Equal(e.Notes, []string{"fled the city"}))
	}
	if !sawDM || !sawForged || !sawFled {
		t.Fatalf("the DM's kg_read shows both levels, secrets and notes as a list: %s", d[6].Result)
	}
	okResult(t, "kg_delete_edge dm", d[7], `"result":"applied"`)
	okResult(t, "kg_delete_node dm", d[8], `"result":"applied"`)
	okResult(t, "kg_ping dm", d[9], `"level":"dm"`)

	// The DM accepts the player's kg_put_node proposal: applied (last write wins).
	pid := decode[struct {
		ID int64 `json:"proposal_id"`
	}](t, r[3]).ID
	res, err := runClient(t, peers, "dm-agent", []call{{Tool: "resolve_proposal", Args: map[string]any{"id": pid, "accept": true}}}, "http", url, "dm-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	okResult(t, "resolve a kg_put_node proposal", res.Results[0], `"result":"accepted"`)
	if n := must[postgres.KGNode](t)(camp.KGNode(ctx, postgres.KGCampaign, "old-mag")); n.Gist != "a ferrywoman" || n.Type != "npc" {
		t.Fatalf("the accepted proposal: %+v", n)
	}

	// The player's session sees the DM's campaign writes, not the DM's notes.
	ps, err := runClient(t, peers, "player-agent", []call{{Tool: "kg_sync", Args: map[string]any{"session_id": playerSession}},
		{Tool: "kg_sync", Args: map[string]any{"session_id": dmSession}}}, "http", url, "player-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	psync := string(ps.Results[0].Result)
	if !ps.Results[0].OK || !strings.Contains(psync, `"old-mag"`) || strings.Contains(psync, "plot") || strings.Contains(psync, "FORGED") {
		t.Fatalf("the player's kg_sync: %s", psync)
	}
	if ps.Results[1].OK {
		t.Fatalf("a player synced the DM's session: %s", ps.Results[1].Result)
	}
	old, err := runClient(t, peers, "player-agent", []call{{Tool: "sync", Args: map[string]any{"cursor": 0}}}, "http", url, "player-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if s := string(old.Results[0].Result); !old.Results[0].OK || strings.Contains(s, "dm_node") || strings.Contains(s, "dm_edge") {
		t.Fatalf("the old sync tool shows a player the DM's notes: %s", s)
	}
	var oldSync struct {
		Changes []struct{ Kind, Ref string } `json:"changes"`
	}
	json.Unmarshal(old.Results[0].Result, &oldSync)
	var facts int
	for _, c := range oldSync.Changes {
		if c.Kind == "fact" {
			facts++
			if c.Ref == fmt.Sprint(forged) {
				t.Fatalf("the old sync tool tells a player the secret fact %d changed", forged)
			}
		}
	}
	if facts == 0 {
		t.Fatal("the old sync tool shows a player no fact at all")
	}

	// Compaction: 2,000 more nodes, most untouched for months.
	_, err = store.Pool().Exec(ctx, `
		INSERT INTO entities (campaign_id, id, type, name, aliases, attributes, updated_at)
		SELECT 'ironhold-saga', 'n' || i, 'concept', 'Node ' || i, '{}',
		       jsonb_build_object('gist', 'what node ' || i || ' is' || repeat(' and more', i % 5)),
		       $1::timestamptz - make_interval(days => CASE WHEN i <= 50 THEN i % 7 ELSE 8 + i % 200 END)
		FROM generate_series(1, 2000) i`, kgNow)
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Pool().Exec(ctx, `
		INSERT INTO relationships (campaign_id, source_id, target_id, rel_type, confidence, source, status)
		SELECT 'ironhold-saga', 'n' || (i % 2000 + 1), 'n' || ((i * 37 + 11) % 2000 + 1), 'REL_' || (i / 2000), 1, 'stated', 'active'
		FROM generate_series(1, 3000) i WHERE i % 2000 <> (i * 37 + 11) % 2000 ON CONFLICT DO NOTHING`)
	if err != nil {
		t.Fatal(err)
	}
	passes := make(chan []postgres.Compaction, 1)
	comp := &mcpserver.Compactor{Door: pgtest.Door(t, store), Campaign: "ironhold-saga", Clock: clk,
		OnPass: func(r []postgres.Compaction, err error) {
			if err != nil {
				t.Error(err)
			}
			passes <- r
		}}
	if err := comp.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	wctx, cancel := context.WithTimeout(ctx, 2*time.Minute) // a hang guard, not a budget
	defer cancel()
	if !clk.WaitTimers(wctx, 1) {
		t.Fatal("the compactor set no timer")
	}
	if p := clk.Pending(); len(p) != 1 || p[0] != mcpserver.DefaultCompactEvery {
		t.Fatalf("compactor timer %v, want 30s", p)
	}
	clk.Advance(mcpserver.DefaultCompactEvery)
	var reps []postgres.Compaction
	select {
	case reps = <-passes:
	case <-wctx.Done():
		t.Fatal("no compaction pass")
	}
	if reps[0].Before <= reps[0].Limit || reps[0].After > reps[0].Limit || reps[0].Archived == 0 {
		t.Fatalf("compaction %+v", reps)
	}

	final, err := runClient(t, peers, "dm-agent", []call{{Tool: "kg_read"}, {Tool: "kg_ping"}}, "http", url, "dm-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	fv := decode[kgView](t, final.Results[0]).Campaign
	var campaignTokens int
	active := map[string]bool{}
	for _, n := range fv.Nodes {
		active[n.ID] = true
	}
	ping := decode[struct {
		Limit  int `json:"token_limit"`
		Levels []struct {
			Level  string `json:"level"`
			Tokens int    `json:"tokens"`
		} `json:"levels"`
	}](t, final.Results[1])
	for _, l := range ping.Levels {
		if l.Level == "campaign" {
			campaignTokens = l.Tokens
		}
	}
	if campaignTokens == 0 || campaignTokens > ping.Limit {
		t.Fatalf("after compaction the campaign level is %d tokens, limit %d", campaignTokens, ping.Limit)
	}
	for i := 1; i <= 50; i++ {
		if !active[fmt.Sprintf("n%d", i)] {
			t.Fatalf("n%d, updated within 7 days, was archived", i)
		}
	}
	var archived string
	for _, tr := range fv.Traces {
		if !active[tr.To] {
			archived = tr.To
			break
		}
		if !active[tr.From] {
			archived = tr.From
			break
		}
	}
	if archived == "" {
		t.Fatalf("no memory trace to an archived node: %d traces", len(fv.Traces))
	}
	back, err := runClient(t, peers, "player-agent", []call{{Tool: "kg_recall", Args: map[string]any{"level": "campaign", "id": archived}},
		{Tool: "kg_read"}}, "http", url, "player-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	okResult(t, "kg_recall", back.Results[0], `"id":"`+archived+`"`)
	okResult(t, "kg_recall", back.Results[0], `"recalled":true`)
	if strings.Contains(string(back.Results[0].Result), `"archived":true`) {
		t.Fatalf("recalled node still archived: %s", back.Results[0].Result)
	}
	rv := decode[kgView](t, back.Results[1]).Campaign
	found := false
	for _, n := range rv.Nodes {
		found = found || n.ID == archived
	}
	if !found {
		t.Fatalf("recalled node %s is not in kg_read", archived)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
