package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/npc"
)

func TestDiscordSignInAppliesTheDMRule(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	tests := []struct {
		name    string
		member  discordtest.Member
		landing string
		role    string
	}{
		{"administrator", admin, "/review", "DM"},
		{"DM role", roleDM, "/review", "DM"},
		{"listed DM user", listedDM, "/review", "DM"},
		{"player", player, "/graph", "player"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, resp, body := f.signInDiscord(t, tt.member)
			if resp.StatusCode != http.StatusOK || resp.Request.URL.Path != tt.landing {
				t.Fatalf("landed on %s with %d, want %s: %.300s", resp.Request.URL.Path, resp.StatusCode, tt.landing, body)
			}
			if !strings.Contains(body, tt.member.Name) || !strings.Contains(body, "<b>"+tt.role+"</b>") {
				t.Errorf("the page does not show %s signed in as %s", tt.member.Name, tt.role)
			}
		})
	}
	t.Run("not a member of the guild", func(t *testing.T) {
		f.discord.SetOAuthUser("", discordtest.Member{UserID: "300000000000000099", Name: "Stranger"})
		b := f.browser(t)
		resp, body := b.get("/signin/discord?campaign=" + campaign)
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "not a member") {
			t.Fatalf("got %d: %.300s", resp.StatusCode, body)
		}
		if resp, _ := b.get("/review"); resp.Request.URL.Path != "/signin" {
			t.Errorf("a refused sign-in still reached %s", resp.Request.URL.Path)
		}
	})
}

func TestCallbackRefusesAForeignState(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.browser(t)
	// A callback this browser did not start (a login CSRF attempt).
	resp, body := b.get("/oauth/callback?code=x&state=forged")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "did not start here") {
		t.Fatalf("got %d: %.200s", resp.StatusCode, body)
	}
}

func TestSessionCookieIsHttpOnlyAndSameSite(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	link, err := f.console.OneTimeLink(campaign)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(f.srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cs := resp.Cookies()
	if len(cs) != 1 || !cs[0].HttpOnly || cs[0].SameSite != http.SameSiteLaxMode || cs[0].Secure {
		t.Fatalf("cookies %+v: want one HttpOnly, SameSite=Lax cookie (not Secure over plain http)", cs)
	}
}

func TestOneTimeLinkWorksOnceAndExpires(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	link, err := f.console.OneTimeLink(campaign)
	if err != nil {
		t.Fatal(err)
	}
	if resp, _ := f.browser(t).get(link); resp.Request.URL.Path != "/review" {
		t.Fatalf("first use landed on %s", resp.Request.URL.Path)
	}
	if resp, body := f.browser(t).get(link); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, "already used") {
		t.Fatalf("second use: %d %.200s", resp.StatusCode, body)
	}
	late, _ := f.console.OneTimeLink(campaign)
	f.clock.Advance(16 * time.Minute)
	if resp, _ := f.browser(t).get(late); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("an expired link signed in: %d", resp.StatusCode)
	}
	if _, err := f.console.OneTimeLink("nope"); err == nil {
		t.Error("a link for a campaign the console does not serve")
	}
}

func TestEveryWriteNeedsTheCSRFToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	g := f.camp.Graph()
	fact := pendingFact(t, g)
	path := fmt.Sprintf("/review/fact/%d", fact.ID)
	tok := b.csrf()
	tests := []struct {
		name   string
		form   url.Values
		header map[string]string
	}{
		{"no token", url.Values{"action": {"confirm"}}, nil},
		{"wrong token", url.Values{"action": {"confirm"}, "csrf": {tok + "x"}}, nil},
		{"another site", url.Values{"action": {"confirm"}, "csrf": {tok}}, map[string]string{"Origin": "https://evil.example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := b.post(path, tt.form, tt.header)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("status %d, want 403", resp.StatusCode)
			}
			got, err := g.Fact(context.Background(), fact.ID)
			if err != nil || got.Status != memory.StatusPending {
				t.Fatalf("the fact changed without a valid token: %v %v", got.Status, err)
			}
		})
	}
	for _, p := range []string{"/npc/grimjaw/persona", "/review/conflict/1", "/signout"} {
		if resp, _ := b.post(p, url.Values{}, nil); resp.StatusCode != http.StatusForbidden {
			t.Errorf("POST %s without a token: %d, want 403", p, resp.StatusCode)
		}
	}
	resp, _ := b.post(path, url.Values{"action": {"confirm"}}, map[string]string{"X-CSRF-Token": tok})
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("with the header token: %d", resp.StatusCode)
	}
	if got, _ := g.Fact(context.Background(), fact.ID); got.Status != memory.StatusActive || !got.Provenance.DMConfirmed {
		t.Fatalf("after confirming: %+v", got)
	}
}

func TestReviewActionsChangeTheStore(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.signInLink(t)
	g := f.camp.Graph()
	tok := b.csrf()

	// Evidence: the review shows the transcript line behind a fact.
	fact := pendingFact(t, g)
	es, _ := f.camp.Sessions().Entries(ctx, "s2")
	if err := g.AddEvidence(ctx, fact.ID, []int64{es[8].ID}); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/review")
	for _, want := range []string{fmt.Sprintf("Confirm #%d", fact.ID), "Vexa Thorn", "Ashen Circle", "confidence 0.55", "Stay out of the old quarter", `<option value="Sunken Vault">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the review page lacks %q", want)
		}
	}

	t.Run("reject", func(t *testing.T) {
		resp, body := b.post(fmt.Sprintf("/review/fact/%d", fact.ID), url.Values{"action": {"reject"}, "csrf": {tok}}, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, "Rejected fact") {
			t.Fatalf("%d %.300s", resp.StatusCode, body)
		}
		if got, _ := g.Fact(ctx, fact.ID); got.Status != memory.StatusRejected {
			t.Fatalf("status %s", got.Status)
		}
	})
	t.Run("edit", func(t *testing.T) {
		ps, _ := g.PendingFacts(ctx, memory.FactFilter{EntityID: "eldrinax"})
		if len(ps) == 0 {
			t.Fatal("no pending fact of eldrinax")
		}
		resp, body := b.post(fmt.Sprintf("/review/fact/%d/edit", ps[0].ID), url.Values{"csrf": {tok},
			"subject": {"the dragon"}, "relation": {"sleeps in"}, "object": {"Sunken Vault"}}, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, "Corrected fact") {
			t.Fatalf("%d %.300s", resp.StatusCode, body)
		}
		if old, _ := g.Fact(ctx, ps[0].ID); old.Status != memory.StatusRejected {
			t.Errorf("the old fact is %s", old.Status)
		}
		rels, _ := g.Relationships(ctx, "eldrinax", memory.TraversalOpts{RelTypes: []string{"SLEEPS_IN"}})
		if len(rels) != 1 || rels[0].TargetID != "sunken-vault" || !rels[0].Provenance.DMConfirmed {
			t.Fatalf("corrected fact: %+v", rels)
		}
		// A bad edit changes nothing and says why.
		resp, body = b.post(fmt.Sprintf("/review/fact/%d/edit", rels[0].ID), url.Values{"csrf": {tok},
			"subject": {"nobody-at-all"}, "relation": {"X"}, "object": {"Sunken Vault"}}, nil)
		if !strings.Contains(body, "unchanged") || !strings.Contains(body, "nobody-at-all") {
			t.Errorf("bad edit: %d %.300s", resp.StatusCode, body)
		}
	})
	t.Run("keep new", func(t *testing.T) {
		nf, conflicts, err := g.RecordFact(ctx, memory.Relationship{SourceID: "grimjaw", TargetID: "duskwood", Type: "LOCATED_AT",
			Provenance: memory.Provenance{SessionID: "s2", Confidence: 0.6, Source: memory.SourceInferred}})
		if err != nil || len(conflicts) != 1 {
			t.Fatalf("recording a conflicting fact: %v %v", conflicts, err)
		}
		_, page := b.get("/review")
		if !strings.Contains(page, fmt.Sprintf("conflict-%d", conflicts[0].ID)) || !strings.Contains(page, "Duskwood") {
			t.Fatalf("the conflict is not on the page")
		}
		resp, body := b.post(fmt.Sprintf("/review/conflict/%d", conflicts[0].ID), url.Values{"keep": {"new"}, "csrf": {tok}}, nil)
		if resp.StatusCode != 200 || !strings.Contains(body, "settled") {
			t.Fatalf("%d %.300s", resp.StatusCode, body)
		}
		if got, _ := g.Fact(ctx, nf.ID); got.Status != memory.StatusActive {
			t.Errorf("the new fact is %s", got.Status)
		}
		open, _ := g.Conflicts(ctx)
		if len(open) != 0 {
			t.Errorf("%d conflicts still open", len(open))
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, tt := range []struct{ path, key, value, want string }{
			{"/review/fact/abc", "action", "confirm", "not a fact"},
			{fmt.Sprintf("/review/fact/%d", fact.ID), "action", "explode", "Unknown review action"},
			{"/review/conflict/1", "keep", "both", "Unknown choice"},
		} {
			resp, body := b.post(tt.path, url.Values{tt.key: {tt.value}, "csrf": {tok}}, nil)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tt.want) {
				t.Errorf("POST %s: %d %.200s", tt.path, resp.StatusCode, body)
			}
		}
	})
}

func TestPersonaEditAndAskAs(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	b := f.signInLink(t)
	tok := b.csrf()
	_, page := b.get("/npc/grimjaw")
	for _, want := range []string{"gruff, loyal, hates goblins", "What Grimjaw knows", "Elara Moonwhisper", "secret"} {
		if !strings.Contains(page, want) {
			t.Errorf("the NPC page lacks %q", want)
		}
	}
	resp, body := b.post("/npc/grimjaw/persona", url.Values{"csrf": {tok}, "name": {"Grimjaw"},
		"personality": {"gruff, grieving his stolen steel"}, "speaking_style": {"short sentences"},
		"goals": {"get the steel back\nfind the thief"}, "secret_knowledge": {"He forged the key."},
		"knowledge_scope": {"knows, located_at"}}, nil)
	if resp.StatusCode != 200 || !strings.Contains(body, "Saved Grimjaw") {
		t.Fatalf("%d %.300s", resp.StatusCode, body)
	}
	e, err := f.camp.Graph().Entity(ctx, "grimjaw")
	if err != nil {
		t.Fatal(err)
	}
	p := npc.PersonaFromEntity(e)
	if p.Personality != "gruff, grieving his stolen steel" || len(p.Goals) != 2 || strings.Join(p.KnowledgeScope, ",") != "KNOWS,LOCATED_AT" ||
		len(p.SecretKnowledge) != 1 || e.Attributes["occupation"] != "blacksmith" {
		t.Fatalf("persona after the edit: %+v, attributes %v", p, e.Attributes)
	}
	if resp, body := b.post("/npc/ironhold/persona", url.Values{"csrf": {tok}, "name": {"X"}}, nil); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(body, "not an NPC") {
		t.Errorf("a persona for a location: %d %.200s", resp.StatusCode, body)
	}
	_, body = b.post("/npc/grimjaw/ask", url.Values{"csrf": {tok}, "question": {"who took the steel?"}}, nil)
	if !strings.Contains(body, "grimjaw was asked: who took the steel?") {
		t.Errorf("ask as: %.500s", body)
	}
}

func TestGraphAndEntityJSON(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	var all, seen struct {
		Nodes []struct{ ID, Type string }
		Edges []struct {
			ID     int64
			Type   string
			Status string
			Secret bool
		}
	}
	_, body := b.get("/api/graph")
	if err := json.Unmarshal([]byte(body), &all); err != nil {
		t.Fatal(err)
	}
	if len(all.Nodes) != 19 || len(all.Edges) != 22 {
		t.Fatalf("DM graph: %d nodes, %d edges; want 19 and 22", len(all.Nodes), len(all.Edges))
	}
	var secret, pending int
	for _, e := range all.Edges {
		if e.Secret {
			secret++
		}
		if e.Status == "pending" {
			pending++
		}
	}
	if secret != 1 || pending != 2 {
		t.Errorf("secret %d, pending %d; want 1 and 2", secret, pending)
	}
	_, body = b.get("/api/graph?npc=brannoc")
	json.Unmarshal([]byte(body), &seen)
	for _, e := range seen.Edges {
		if e.Type == "FORGED" {
			t.Errorf("brannoc sees Grimjaw's secret fact")
		}
	}
	if len(seen.Nodes) == 0 || len(seen.Nodes) >= len(all.Nodes) {
		t.Errorf("brannoc sees %d of %d entities", len(seen.Nodes), len(all.Nodes))
	}
	_, body = b.get("/api/graph?type=location")
	var locs struct{ Nodes []struct{ Type string } }
	json.Unmarshal([]byte(body), &locs)
	for _, n := range locs.Nodes {
		if n.Type != "location" {
			t.Errorf("type filter let through a %s", n.Type)
		}
	}
	_, body = b.get("/api/entity/grimjaw")
	var ent struct {
		Facts    []struct{ Session, Status string }
		Mentions []struct {
			Line int64
			Text string
		}
	}
	json.Unmarshal([]byte(body), &ent)
	if len(ent.Facts) < 6 || len(ent.Mentions) == 0 {
		t.Fatalf("grimjaw: %d facts, %d mentions: %.400s", len(ent.Facts), len(ent.Mentions), body)
	}
	if resp, _ := b.get("/api/entity/nobody"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown entity: %d", resp.StatusCode)
	}
}

func TestRecapSentencesCiteLinesOnThePage(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	_, body := b.get("/sessions/s1")
	cites := citeRE.FindAllStringSubmatch(body, -1)
	if len(cites) == 0 {
		t.Fatalf("no recap citations: %.500s", body)
	}
	for _, c := range cites {
		if !strings.Contains(body, `id="line-`+c[1]+`"`) {
			t.Errorf("recap cites line %s, which is not in the timeline", c[1])
		}
	}
	if !strings.Contains(body, "heard: i wave to bran knock") {
		t.Error("the raw speech-to-text text is not on the page")
	}
	_, body = b.get("/sessions/s1?q=hammer")
	if !strings.Contains(body, "The Dawn Hammer") {
		t.Error("search did not find the hammer line")
	}
}

// TestGraphAroundAnEntity: the local view holds what is within its depth
// of the focus and nothing else; bad parameters are named.
func TestGraphAroundAnEntity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	type view struct {
		Nodes []struct {
			ID      string
			Hops    int
			Aliases []string
		}
		Edges []struct{ S, T string }
		Focus string
		Depth int
		Total int
	}
	get := func(path string) view {
		t.Helper()
		resp, body := b.get(path)
		var v view
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, body)
		}
		return v
	}
	whole := get("/api/graph")
	if whole.Focus != "" || len(whole.Nodes) != 19 || whole.Total != 19 {
		t.Fatalf("a small campaign opens whole: focus %q, %d nodes, total %d", whole.Focus, len(whole.Nodes), whole.Total)
	}
	near := map[string]bool{"brannoc": true}
	for _, e := range whole.Edges {
		if e.S == "brannoc" {
			near[e.T] = true
		}
		if e.T == "brannoc" {
			near[e.S] = true
		}
	}
	one := get("/api/graph?focus=brannoc&depth=1")
	if one.Focus != "brannoc" || one.Depth != 1 || len(one.Nodes) != len(near) || one.Total != 19 {
		t.Fatalf("1 step around brannoc: focus %q depth %d, %d nodes (want %d) of %d", one.Focus, one.Depth, len(one.Nodes), len(near), one.Total)
	}
	for _, n := range one.Nodes {
		if !near[n.ID] || (n.ID == "brannoc") != (n.Hops == 0) {
			t.Errorf("1 step around brannoc holds %s (hops %d)", n.ID, n.Hops)
		}
	}
	for _, e := range one.Edges {
		if !near[e.S] || !near[e.T] {
			t.Errorf("1 step around brannoc holds the fact %s→%s", e.S, e.T)
		}
	}
	if two := get("/api/graph?focus=brannoc&depth=2"); len(two.Nodes) <= len(one.Nodes) {
		t.Errorf("2 steps around brannoc: %d entities, 1 step: %d", len(two.Nodes), len(one.Nodes))
	}
	var aliased bool
	for _, n := range get("/api/graph?focus=grimjaw&depth=1").Nodes {
		aliased = aliased || (n.ID == "grimjaw" && len(n.Aliases) > 0)
	}
	if !aliased {
		t.Error("the graph's entities carry no aliases to search")
	}
	if all := get("/api/graph?focus=brannoc&depth=all"); all.Focus != "" || len(all.Nodes) != 19 {
		t.Errorf("the whole graph: focus %q, %d nodes", all.Focus, len(all.Nodes))
	}
	// The page's search finds entities outside the view, by name or alias,
	// through the view's filters, the first maxFound by name.
	find := func(query string) (names []string, more bool) {
		t.Helper()
		resp, body := b.get("/api/graph/find?" + query)
		var d struct {
			Nodes []struct{ Name string }
			More  bool
		}
		if resp.StatusCode != http.StatusOK || json.Unmarshal([]byte(body), &d) != nil {
			t.Fatalf("GET /api/graph/find?%s: %d %s", query, resp.StatusCode, body)
		}
		for _, n := range d.Nodes {
			names = append(names, n.Name)
		}
		return names, d.More
	}
	if names, more := find("q="); len(names) != 19 || more || !slices.IsSortedFunc(names, func(a, b string) int {
		return strings.Compare(strings.ToLower(a), strings.ToLower(b))
	}) {
		t.Errorf("the search lists %q (more: %t), want the 19 entities by name", names, more)
	}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"q=GRIM", []string{"Grimjaw"}},
		{"q=the+blacksmith", []string{"Grimjaw"}},
		{"q=grim&type=npc", []string{"Grimjaw"}},
		{"q=grim&type=location", nil},
		{"q=nobody+at+all", nil},
	} {
		if names, _ := find(c.query); !slices.Equal(names, c.want) {
			t.Errorf("the search for %s: %q, want %q", c.query, names, c.want)
		}
	}
	for _, c := range []struct {
		path, want string
		code       int
	}{
		{"/api/graph?focus=brannoc&depth=9", "depth must be 1 to 4", http.StatusBadRequest},
		{"/api/graph?focus=brannoc&depth=x", "depth must be 1 to 4", http.StatusBadRequest},
		{"/api/graph?focus=nobody", "nobody", http.StatusNotFound},
		{"/graph/nobody", "nobody", http.StatusNotFound},
	} {
		resp, body := b.get(c.path)
		if resp.StatusCode != c.code || !strings.Contains(body, c.want) {
			t.Errorf("GET %s: %d %q; want %d naming %q", c.path, resp.StatusCode, body, c.code, c.want)
		}
	}
	if resp, body := b.get("/graph/brannoc"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `data-focus="brannoc"`) {
		t.Errorf("/graph/brannoc: %d", resp.StatusCode)
	}
}

func TestPlayerSeesNoSecret(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b, resp, _ := f.signInDiscord(t, player)
	if resp.Request.URL.Path != "/graph" {
		t.Fatalf("player landed on %s", resp.Request.URL.Path)
	}
	paths := []string{"/graph", "/api/graph", "/api/graph?npc=grimjaw", "/api/graph?session=s1", "/sessions", "/sessions/s1", "/sessions/s2",
		"/sessions/s1?q=key", "/api/graph?type=npc", "/api/graph/find?q=", "/api/graph/find?q=&type=npc", "/api/graph/find?q=&npc=grimjaw",
		"/api/graph/find?q=&session=s1"}
	ents, _ := f.camp.Graph().FindEntities(context.Background(), memory.EntityFilter{})
	for _, e := range ents {
		paths = append(paths, "/api/entity/"+e.ID, "/graph/"+e.ID, "/api/graph?depth=4&focus="+e.ID)
	}
	for _, p := range paths {
		resp, body := b.get(p)
		if resp.StatusCode != 200 {
			t.Errorf("%s: %d", p, resp.StatusCode)
		}
		for _, s := range secrets {
			if strings.Contains(strings.ToLower(body), strings.ToLower(s)) {
				t.Errorf("%s shows the secret %q to a player", p, s)
			}
		}
		if strings.Contains(body, `"status":"pending"`) {
			t.Errorf("%s shows a pending fact to a player", p)
		}
	}
	for _, p := range []string{"/review", "/npc", "/npc/grimjaw", "/live", "/api/live"} {
		if resp, _ := b.get(p); resp.StatusCode != http.StatusForbidden {
			t.Errorf("player GET %s: %d, want 403", p, resp.StatusCode)
		}
	}
	tok := b.csrf()
	fact := pendingFact(t, f.camp.Graph())
	if resp, _ := b.post(fmt.Sprintf("/review/fact/%d", fact.ID), url.Values{"action": {"confirm"}, "csrf": {tok}}, nil); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a player confirmed a fact: %d", resp.StatusCode)
	}
}

func TestSignedOutIsSentToSignIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.browser(t)
	for _, p := range []string{"/", "/review", "/graph", "/sessions/s1"} {
		resp, body := b.get(p)
		if resp.Request.URL.Path != "/signin" || !strings.Contains(body, "Sign in with Discord") {
			t.Errorf("GET %s signed out: at %s", p, resp.Request.URL.Path)
		}
	}
	if resp, _ := b.get("/api/graph"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("API signed out: %d", resp.StatusCode)
	}
	// Assets are public, but not listed.
	if resp, body := b.get("/static/console.css"); resp.StatusCode != 200 || !strings.Contains(body, ".timeline") {
		t.Errorf("/static/console.css: %d", resp.StatusCode)
	}
	if resp, _ := b.get("/static/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("/static/ lists the assets: %d", resp.StatusCode)
	}
}

func TestMessagesCannotBeInjectedThroughTheURL(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	for _, p := range []string{"/review?m=Visit+evil.example", "/npc/grimjaw?m=Visit+evil.example", "/signin?m=Visit+evil.example"} {
		if _, body := b.get(p); strings.Contains(body, "evil.example") {
			t.Errorf("%s shows a message from its URL", p)
		}
	}
}

func TestSecureCookieOverTLS(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	srv := httptest.NewTLSServer(f.console)
	t.Cleanup(srv.Close)
	link, _ := f.console.OneTimeLink(campaign)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Get(srv.URL + link)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if cs := resp.Cookies(); len(cs) != 1 || !cs[0].Secure || !cs[0].HttpOnly {
		t.Fatalf("cookies over TLS: %+v", cs)
	}
}

func TestReviewFiltersBySession(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	b := f.signInLink(t)
	_, all := b.get("/review")
	_, s1 := b.get("/review?session=s1")
	if !strings.Contains(all, "Vexa Thorn") || strings.Contains(s1, "Confirm #") {
		t.Errorf("the sample's pending facts are from s2: the s1 filter should show none")
	}
}

// TestSessionSearchPagesItsMatches: a search matching more lines than fit
// on a page says how many match and pages through them; nothing past the
// first page is dropped silently.
func TestSessionSearchPagesItsMatches(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	const n = 120
	start := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
	if err := f.camp.Sessions().StartSession(ctx, "s-long", start); err != nil {
		t.Fatal(err)
	}
	var es []memory.TranscriptEntry
	for i := range n {
		es = append(es, memory.TranscriptEntry{SessionID: "s-long", SpeakerID: "u1", SpeakerName: "Thorin",
			Text: fmt.Sprintf("another round of ale number %d", i), At: start.Add(time.Duration(i) * time.Second)})
	}
	if _, err := f.camp.Sessions().WriteEntries(ctx, es); err != nil {
		t.Fatal(err)
	}
	b := f.signInLink(t)
	seen := map[string]bool{}
	for p := range 3 {
		_, page := b.get(fmt.Sprintf("/sessions/s-long?q=ale&hits=%d", p))
		if !strings.Contains(page, "120 lines match") {
			t.Fatalf("page %d of the matches does not give their number", p)
		}
		for i := range n {
			if strings.Contains(page, fmt.Sprintf("ale number %d</li>", i)) {
				seen[fmt.Sprint(i)] = true
			}
		}
	}
	if len(seen) != n {
		t.Errorf("three pages of matches show %d of %d lines", len(seen), n)
	}
}

// TestSignInOutlivesTheConsole: a console restarted on the same database
// (or a second one beside it) keeps its browsers signed in, with their
// roles; signing out in one signs out of all; a console serving another
// campaign does not take the sign-in.
func TestSignInOutlivesTheConsole(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	dm := f.signInLink(t)
	pl, resp, _ := f.signInDiscord(t, player)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("player sign-in: %d", resp.StatusCode)
	}
	restarted := func(campaigns ...bot.Guild) *httptest.Server {
		c, err := console.New(console.Config{Door: f.door, Campaigns: campaigns,
			OAuth: console.OAuth{ClientID: "app-1", ClientSecret: "shh", DiscordURL: f.discord.URL()},
			Clock: f.clock, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(c)
		t.Cleanup(srv.Close)
		return srv
	}
	again := restarted(bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}, DMUserIDs: []string{dmUser}})
	first := dm.base
	dm.base, pl.base = again.URL, again.URL
	if resp, _ := dm.get("/review"); resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/review" {
		t.Fatalf("the DM after a restart: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	if resp, _ := pl.get("/graph"); resp.StatusCode != http.StatusOK || resp.Request.URL.Path != "/graph" {
		t.Fatalf("the player after a restart: %d at %s", resp.StatusCode, resp.Request.URL.Path)
	}
	if resp, _ := pl.get("/review"); resp.StatusCode != http.StatusForbidden {
		t.Errorf("the player reached the DM's review after a restart: %d", resp.StatusCode)
	}

	// Another campaign's console does not take it.
	other := restarted(bot.Guild{ID: "g-other", Campaign: "other-campaign"})
	dm.base = other.URL
	if resp, _ := dm.get("/api/graph"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a console of another campaign took the sign-in: %d", resp.StatusCode)
	}

	// Signing out on the restarted console signs out of the first too.
	dm.base = again.URL
	if resp, _ := dm.post("/signout", url.Values{"csrf": {dm.csrf()}}, nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("sign-out: %d", resp.StatusCode)
	}
	dm.base = first
	if resp, _ := dm.get("/api/graph"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the first console still takes a sign-in signed out on the other: %d", resp.StatusCode)
	}
}
