package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The secrecy contract (issue 25, item 6): every read path a player can
// reach, run as a player against a hostile campaign, and every read path
// of an NPC's turn, run as the NPC Aldric, return no marker they may not
// see. The campaign file holds secrets of every kind, each with a unique
// marker (see its header): secret facts, DM-only attribute keys in several
// spellings, values marked {"secret": true} at depth and inside arrays,
// pending and rejected facts, the DM's private level of the memory tools.

const (
	hostileFile     = "../../testdata/campaigns/hostile-keep.yaml"
	hostileCampaign = "hostile-keep"
	hostileGuild    = "100000000000000071"
	hostileDMRole   = "200000000000000071"
	hostilePlayer   = "hostile-player-token-0123456789"
	hostileDM       = "hostile-dm-token-0123456789abcd"
)

// hostilePlayerMember is a player of the hostile guild: no DM role, no
// administrator permission.
var hostilePlayerMember = discordtest.Member{UserID: "u1", Name: "Thorin"}

var markerRE = regexp.MustCompile(`(?i)\bmk[abdx][-_][a-z0-9_-]+`)

// markers are the campaign file's markers, lower case.
func markers(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(hostileFile)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range markerRE.FindAllString(string(b), -1) {
		if m = strings.ToLower(m); !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	if len(out) < 30 {
		t.Fatalf("the hostile campaign has %d markers; the test would prove little", len(out))
	}
	return out
}

// audit collects what one reader was shown and fails on a forbidden marker.
type audit struct {
	t         *testing.T
	who       string
	forbidden []string
	paths     int
}

func (a *audit) check(path, body string) {
	a.t.Helper()
	a.paths++
	low := strings.ToLower(body)
	for _, m := range a.forbidden {
		if strings.Contains(low, m) {
			a.t.Errorf("%s: %s shows %q: %.600s", a.who, path, m, body)
		}
	}
}

func (a *audit) checkJSON(path string, v any) {
	a.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		a.t.Fatalf("%s: %s: %v", a.who, path, err)
	}
	a.check(path, string(b))
}

// hostile is the hostile campaign in a fresh database, with a rejected
// fact and a node on the DM's private level added to what the file holds.
type hostile struct {
	store *postgres.Store
	camp  *postgres.Campaign // the writers' (import's) handle, for setting up
	door  *access.Door       // what every reader goes through
	dm    *access.Campaign
	cfg   config.Config
	facts []postgres.FactWithNames
}

func newHostile(t *testing.T) *hostile {
	t.Helper()
	ctx := context.Background()
	// Imported as a user does: the sessions are chunked and embedded, so
	// retrieval has chunks, and an NPC heard lines, to work on.
	dsn := migratedDB(t)
	if code, out, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "import", hostileFile); code != 0 {
		t.Fatalf("import: %d %s %s", code, out, errs)
	}
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	camp := pgtest.Campaign(t, store, hostileCampaign)
	g := camp.Graph()
	pending, err := g.PendingFacts(ctx, memory.FactFilter{})
	if err != nil || len(pending) != 3 {
		t.Fatalf("the hostile campaign's pending facts: %v %v", pending, err)
	}
	for _, f := range pending {
		if f.Type == "MKX_REJECTED_CLAIM" {
			if _, err := g.RejectFact(ctx, f.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := camp.KGPutNode(ctx, postgres.KGDM, postgres.KGNodeInput{ID: "mkd-dm-level-node", Gist: "mkd-dm-level-gist",
		Notes: []string{"mkd-dm-level-notes"}}, time.Now()); err != nil {
		t.Fatal(err)
	}
	facts, err := g.FindFacts(ctx, postgres.FactQuery{Limit: 100, Statuses: []memory.FactStatus{memory.StatusActive,
		memory.StatusPending, memory.StatusRetired, memory.StatusRejected}})
	if err != nil || len(facts) != 10 {
		t.Fatalf("the hostile campaign's facts: %d %v", len(facts), err)
	}
	cfg, err := config.Parse(strings.NewReader(`discord:
  token: t
  guilds:
    - {guild_id: "`+hostileGuild+`", campaign: `+hostileCampaign+`, mcp_token: `+hostilePlayer+`, mcp_dm_token: `+hostileDM+`,
       dm_role_ids: ["`+hostileDMRole+`"]}
`), "config.yaml", func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	door := pgtest.Door(t, store)
	dm, err := door.Open(ctx, hostileCampaign, memory.DMViewer())
	if err != nil {
		t.Fatal(err)
	}
	return &hostile{store: store, camp: camp, door: door, dm: dm, cfg: cfg, facts: facts}
}

var hostileEntities = []string{"aldric", "brenna", "undercroft", "ledger", "thorin"}

func TestSecrecyContractPlayer(t *testing.T) {
	t.Parallel()
	all := markers(t)
	h := newHostile(t)
	t.Run("console", func(t *testing.T) { consoleAsPlayer(t, h, all) })
	t.Run("mcp", func(t *testing.T) { mcpAsPlayer(t, h, all) })
	t.Run("slash commands", func(t *testing.T) { slashAsPlayer(t, h, all) })
	t.Run("ask and recaps", func(t *testing.T) {
		a := &audit{t: t, who: "player", forbidden: all}
		ctx := context.Background()
		asker, err := newAsker(h.door, h.cfg)
		if err != nil {
			t.Fatal(err)
		}
		entities := 0
		for _, q := range askQuestions {
			res, err := asker.Ask(ctx, hostileCampaign, memory.PlayerViewer(), q, 20)
			if err != nil {
				t.Fatalf("ask %q: %v", q, err)
			}
			a.checkJSON("ask "+q, res)
			for _, r := range res {
				if r.Kind == "entity" {
					entities++
				}
			}
		}
		if entities == 0 {
			t.Error("ask never answered with an entity: its graph part went unchecked")
		}
		played, err := h.dm.Sessions().Starts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var sessions []string
		for _, s := range played {
			sessions = append(sessions, s.ID)
		}
		withheld, err := bot.Withheld(ctx, h.dm, sessions, hostileEntities)
		if err != nil {
			t.Fatal(err)
		}
		// The recap's local check is told what the player view withholds
		// of what the recap's input names (here every entity): every
		// marker is in it (a marker the store showed a player would be
		// missing).
		joined := strings.ToLower(strings.Join(withheld, "\n") + strings.ReplaceAll(strings.Join(withheld, "\n"), " ", "_"))
		for _, m := range all {
			if !strings.Contains(joined, strings.ReplaceAll(m, "_", " ")) && !strings.Contains(joined, m) &&
				!strings.HasPrefix(m, "mkd-dm-level") {
				t.Errorf("Withheld misses %q", m)
			}
		}
	})
}

// askQuestions name every entity and secret in the players' words.
var askQuestions = []string{
	"What is Brenna hiding?", "What lies in the Undercroft?", "Who built the Undercroft and where is the hidden room?",
	"What does Aldric know about the ledger?", "secret pact debt grudge oath claim", "Thorin oath Aldric",
}

func consoleAsPlayer(t *testing.T, h *hostile, forbidden []string) {
	d := discordtest.New()
	t.Cleanup(d.Close)
	d.SetOAuthApp(discordtest.OAuthApp{ClientID: "app-1", ClientSecret: "shh"})
	asker, err := newAsker(h.door, h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := console.New(console.Config{
		Door:      h.door,
		Campaigns: []bot.Guild{{ID: hostileGuild, Campaign: hostileCampaign, DMRoleIDs: []string{hostileDMRole}}},
		OAuth:     console.OAuth{ClientID: "app-1", ClientSecret: "shh", DiscordURL: d.URL()},
		Asker:     asker,
		Logger:    slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	signIn := func(m discordtest.Member) *http.Client {
		d.SetOAuthUser(hostileGuild, m)
		jar, _ := cookiejar.New(nil)
		hc := &http.Client{Jar: jar, Timeout: time.Minute}
		resp, err := hc.Get(srv.URL + "/signin/discord?campaign=" + hostileCampaign)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Request.URL.Path == "/signin" {
			t.Fatalf("signing in as %s: %d at %s", m.Name, resp.StatusCode, resp.Request.URL)
		}
		return hc
	}
	get := func(hc *http.Client, path string) (int, string) {
		t.Helper()
		resp, err := hc.Get(srv.URL + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	paths := []string{"/", "/graph", "/api/graph", "/api/graph?type=npc", "/api/graph?session=s1", "/api/graph?npc=brenna",
		"/sessions", "/sessions/s1", "/sessions/s1?q=Undercroft", "/sessions/s1?q=Brenna+ledger",
		"/review", "/npc", "/npc/brenna", "/npc/aldric", "/live", "/api/live"}
	for _, id := range hostileEntities {
		paths = append(paths, "/api/entity/"+id)
	}

	// The DM's view shows the markers: the paths do reach the secrets.
	dm := signIn(discordtest.Member{UserID: "300000000000000071", Name: "Dana", Roles: []string{hostileDMRole}})
	if code, body := get(dm, "/api/entity/brenna"); code != 200 || !strings.Contains(body, "mkb-dm-plan") ||
		!strings.Contains(body, `"secret":true`) {
		t.Fatalf("the DM's view of Brenna lacks her plan or the secret mark (%d): %.500s", code, body)
	}
	if _, body := get(dm, "/api/graph"); !strings.Contains(body, "MKX_PENDING_OATH") {
		t.Fatalf("the DM's graph lacks the pending fact: %.500s", body)
	}

	pl := signIn(hostilePlayerMember)
	a := &audit{t: t, who: "player (console)", forbidden: forbidden}
	ok := 0
	for _, p := range paths {
		code, body := get(pl, p)
		if code == 200 {
			ok++
		}
		a.check(p, body)
	}
	if code, body := get(pl, "/api/entity/undercroft"); code != 200 || !strings.Contains(body, "a broken lantern") ||
		!strings.Contains(body, "dwarves") {
		t.Errorf("the player lost the Undercroft's public attributes (%d): %s", code, body)
	}
	if ok < 12 {
		t.Errorf("only %d of %d console paths answered a player", ok, len(paths))
	}
}

func mcpAsPlayer(t *testing.T, h *hostile, forbidden []string) {
	mux := http.NewServeMux()
	if n, err := mountMCP(mux, h.door, h.cfg, slog.New(slog.DiscardHandler)); err != nil || n != 1 {
		t.Fatalf("mountMCP = %d, %v", n, err)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	url := srv.URL + "/mcp/" + hostileCampaign

	dm, err := mcpClient(t, url, hostileDM)
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := callJSON(t, dm, "kg_read", nil); !strings.Contains(out, "mkd-object-gist") || !strings.Contains(out, "mkd-dm-level-gist") {
		t.Fatalf("the DM's kg_read lacks the secret gist or the DM level (else this test proves nothing): %.800s", out)
	}
	if out, _ := callJSON(t, dm, "read_graph", nil); !strings.Contains(out, "MKX_PENDING_OATH") {
		t.Fatalf("the DM's read_graph lacks the pending fact: %.800s", out)
	}

	pl, err := mcpClient(t, url, hostilePlayer)
	if err != nil {
		t.Fatal(err)
	}
	a := &audit{t: t, who: "player (MCP)", forbidden: forbidden}
	// try calls a tool that may refuse (a hidden fact, the DM's level);
	// call one that must answer.
	try := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		out, ok := callJSON(t, pl, tool, args)
		a.check(fmt.Sprintf("%s %v", tool, args), out)
		return out, ok
	}
	call := func(tool string, args map[string]any) string {
		t.Helper()
		out, ok := try(tool, args)
		if !ok {
			t.Errorf("player %s %v failed: %s", tool, args, out)
		}
		return out
	}
	reg := call("kg_register_session", nil)
	var sess struct {
		ID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(reg), &sess); err != nil || sess.ID == "" {
		t.Fatalf("kg_register_session: %s", reg)
	}
	// The DM changes secret-bearing nodes and a secret fact, so kg_sync and
	// sync have something to report.
	ctx := context.Background()
	g := h.camp.Graph()
	for _, id := range []string{"brenna", "undercroft", "ledger"} {
		if _, err := g.UpdateEntity(ctx, id, memory.EntityUpdate{SetAttributes: map[string]any{"touched": "yes"}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range h.facts {
		switch f.Type {
		case "MKB_SECRET_PACT":
			f.Provenance.Confidence = 0.99
			if _, err := g.UpsertRelationship(ctx, f.Relationship); err != nil {
				t.Fatal(err)
			}
		case "MKX_LATE_REJECTION":
			// Rejected while the agent session runs: kg_sync must not
			// name it as removed.
			if _, err := g.RejectFact(ctx, f.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	call("kg_sync", map[string]any{"session_id": sess.ID})
	call("sync", map[string]any{})
	call("kg_read", nil)
	call("kg_ping", nil)
	call("read_graph", map[string]any{})
	call("read_graph", map[string]any{"name": "brenna"})
	call("read_graph", map[string]any{"type": "location"})
	for _, id := range hostileEntities {
		call("recall_node", map[string]any{"id": id})
		call("kg_recall", map[string]any{"id": id, "level": "campaign"})
		try("kg_recall", map[string]any{"id": id, "level": "dm"})
	}
	try("kg_recall", map[string]any{"id": "mkd-dm-level-node", "level": "campaign"})
	try("kg_recall", map[string]any{"id": "mkd-dm-level-node", "level": "dm"})
	for _, f := range h.facts {
		try("recall_node", map[string]any{"id": fmt.Sprint(f.ID)})
	}
	for _, q := range []string{"Undercroft", "Brenna", "ledger", "mkb"} {
		call("search_sessions", map[string]any{"query": q})
	}
	for _, q := range askQuestions {
		call("ask", map[string]any{"question": q, "k": 20})
	}
	if out, _ := callJSON(t, pl, "recall_node", map[string]any{"id": "undercroft"}); !strings.Contains(out, "dwarves") {
		t.Errorf("the player lost the Undercroft's public attributes: %s", out)
	}
	if a.paths < 30 {
		t.Errorf("only %d MCP calls were checked", a.paths)
	}
}

func slashAsPlayer(t *testing.T, h *hostile, forbidden []string) {
	const channel = "100000000000000072"
	fake := discordtest.New()
	t.Cleanup(fake.Close)
	fake.AddGuild(&discordgo.Guild{ID: hostileGuild, Name: "The Keep"})
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	sess.LogLevel = discordgo.LogError
	fake.Attach(sess)
	b, err := bot.New(bot.Config{Guilds: []bot.Guild{{ID: hostileGuild, Campaign: hostileCampaign, DMRoleIDs: []string{hostileDMRole}}},
		Logger: slog.New(slog.DiscardHandler)}, bot.Deps{Door: h.door}, bot.WithSession(sess))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := b.Open(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := b.Close(ctx); err != nil {
			t.Errorf("closing the bot: %v", err)
		}
		sess.Close()
	})
	const wait = time.Minute
	if _, err := fake.WaitCall(wait, discordtest.PathHasPrefix("PUT", "/applications/")); err != nil {
		t.Fatal(err)
	}
	a := &audit{t: t, who: "player (slash commands)", forbidden: forbidden}
	run := func(name string, i discordtest.Interaction) string {
		t.Helper()
		if err := fake.Send(i); err != nil {
			t.Fatal(err)
		}
		c, err := fake.WaitCall(wait, discordtest.PathIs("POST", i.CallbackPath()))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out := string(c.Body)
		var r struct {
			Type discordgo.InteractionResponseType `json:"type"`
		}
		if err := json.Unmarshal(c.Body, &r); err != nil {
			t.Fatal(err)
		}
		if r.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource {
			c, err := fake.WaitCall(wait, discordtest.PathIs("PATCH", i.OriginalPath(fake.AppID)))
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out += string(c.Body)
		}
		a.check(name, out)
		return out
	}
	m := hostilePlayerMember
	cmd := func(name string, opts ...discordtest.Opt) discordtest.Interaction {
		return fake.Command(hostileGuild, channel, m, name, opts...)
	}
	recap := run("/recap session s1", cmd("recap", discordtest.Str("scope", "session"), discordtest.Str("session", "s1"),
		discordtest.Bool("player_safe", false)))
	if !strings.Contains(recap, "player-safe") || !strings.Contains(recap, "⟨s1 ") {
		t.Errorf("a player's recap is not player-safe: %s", recap)
	}
	run("/recap public", cmd("recap", discordtest.Str("delivery", "public")))
	run("/recap campaign", cmd("recap", discordtest.Str("scope", "campaign")))
	for _, q := range []string{"Undercroft", "Brenna ledger", "mkb"} {
		run("/memory search "+q, cmd("memory", discordtest.Sub("search", discordtest.Str("query", q))))
	}
	run("/npc list", cmd("npc", discordtest.Sub("list")))
	run("/session status", cmd("session", discordtest.Sub("status")))
	run("/memory entity show brenna", cmd("memory", discordtest.Group("entity", discordtest.Sub("show", discordtest.Str("entity", "brenna")))))
	run("/memory fact list", cmd("memory", discordtest.Group("fact", discordtest.Sub("list"))))
	run("/memory pending", cmd("memory", discordtest.Sub("pending")))
	for _, ac := range []struct {
		name string
		opts []discordtest.Opt
	}{
		{"recap", []discordtest.Opt{discordtest.Focused("session", "")}},
		{"memory", []discordtest.Opt{discordtest.Sub("search", discordtest.Focused("query", "b"))}},
		{"memory", []discordtest.Opt{discordtest.Group("entity", discordtest.Sub("show", discordtest.Focused("entity", "")))}},
		{"memory", []discordtest.Opt{discordtest.Sub("confirm", discordtest.Focused("fact", ""))}},
		{"npc", []discordtest.Opt{discordtest.Sub("mute", discordtest.Focused("npc", ""))}},
	} {
		run("autocomplete "+ac.name, fake.Autocomplete(hostileGuild, channel, m, ac.name, ac.opts...))
	}
}

// TestSecrecyContractNPC runs the read paths of an NPC's turn as Aldric:
// his hot context, the sources of his tools (what he can see, his
// identity, his recall) and retrieval as him. He sees his own secrets
// (mka-) and nothing of Brenna's (mkb-), the DM's (mkd-) or unreviewed
// facts (mkx-).
func TestSecrecyContractNPC(t *testing.T) {
	t.Parallel()
	all := markers(t)
	var forbidden, own []string
	for _, m := range all {
		if strings.HasPrefix(m, "mka") {
			own = append(own, m)
		} else {
			forbidden = append(forbidden, m)
		}
	}
	h := newHostile(t)
	ctx := context.Background()
	a := &audit{t: t, who: "NPC aldric", forbidden: forbidden}
	var seen strings.Builder
	check := func(path string, v any) {
		t.Helper()
		b, _ := json.Marshal(v)
		seen.Write(b)
		a.check(path, string(b))
	}

	at := time.Date(2026, 3, 1, 19, 7, 0, 0, time.UTC)
	hc := hotctx.New(h.dm, hotctx.Config{Now: func() time.Time { return at }})
	for _, q := range append([]string{""}, askQuestions...) {
		c, err := hc.AssembleTurn(ctx, hotctx.Request{NPCID: "aldric", SessionID: "s1", Budget: 8000, Query: q})
		if err != nil {
			t.Fatal(err)
		}
		check("hot context "+q, c)
	}
	g := h.camp.Graph()
	every := memory.VisibilityScope{MaxDepth: 6}
	for _, f := range h.facts {
		every.RelTypes = append(every.RelTypes, f.Type)
	}
	for _, sc := range []memory.VisibilityScope{{}, every} {
		ents, rels, err := g.VisibleSubgraph(ctx, "aldric", sc)
		if err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("visible subgraph %v", sc.RelTypes), []any{ents, rels})
	}
	id, err := g.IdentitySnapshot(ctx, "aldric")
	if err != nil {
		t.Fatal(err)
	}
	check("identity", id)

	asker, err := newAsker(h.door, h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	recaller, err := newRecaller(h.dm, h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	answers := 0
	for _, q := range askQuestions {
		res, err := asker.AskAs(ctx, hostileCampaign, "aldric", q, 20)
		if err != nil {
			t.Fatal(err)
		}
		answers += len(res)
		check("ask as aldric "+q, res)
		rs, err := recaller.Recall(ctx, "aldric", q, 20)
		if err != nil {
			t.Fatal(err)
		}
		check("recall tool "+q, rs)
	}
	if answers == 0 {
		t.Error("asking as Aldric never answered: retrieval went unchecked")
	}
	as, err := h.dm.As(memory.NPCViewer("aldric"))
	if err != nil {
		t.Fatal(err)
	}
	ents, err := as.Graph().FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		t.Fatal(err)
	}
	check("entities", ents)
	facts, err := as.Graph().FindFacts(ctx, postgres.FactQuery{Limit: 100, Statuses: []memory.FactStatus{memory.StatusActive,
		memory.StatusPending, memory.StatusRetired, memory.StatusRejected}})
	if err != nil {
		t.Fatal(err)
	}
	check("facts", facts)
	ns, err := as.Graph().Neighbors(ctx, "aldric", 3, memory.TraversalOpts{})
	if err != nil {
		t.Fatal(err)
	}
	check("neighbours", ns)
	kg, err := as.KGRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check("kg_read", kg)

	// Aldric's own secrets do reach him: the filter is not an empty view.
	for _, m := range []string{"mka-own-secret-knowledge", "mka-secret-fact-notes", "mka_hides"} {
		if !strings.Contains(strings.ToLower(seen.String()), m) {
			t.Errorf("Aldric does not see his own %q", m)
		}
	}
	if len(own) == 0 || a.paths < 20 {
		t.Errorf("%d own markers, %d paths checked", len(own), a.paths)
	}
}
