package console_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/benchdata"
	"github.com/glyphoxa/glyphoxa/npc"
)

// browserTools finds node, Debian's chromium and playwright-core. Missing
// node or chromium skips the test outside CI and fails it in CI; a missing
// playwright-core always fails (scripts/testdeps.sh installs it).
func browserTools(t *testing.T) (node, chromium, modules, root string) {
	t.Helper()
	need := func(what string, err error) {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s not found (scripts/testdeps.sh installs it): %v", what, err)
		}
		t.Skipf("%s not found (scripts/testdeps.sh installs it): %v", what, err)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		need("node", err)
	}
	chromium = os.Getenv("GLYPHOXA_CHROMIUM")
	if chromium == "" {
		chromium = "/usr/bin/chromium"
	}
	if _, err := os.Stat(chromium); err != nil {
		need("chromium", err)
	}
	root, err = filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	modules = filepath.Join(root, ".cache", "node-peers", "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "playwright-core")); err != nil {
		t.Fatalf("playwright-core is not installed in %s (scripts/testdeps.sh installs it): %v", modules, err)
	}
	return node, chromium, modules, root
}

type e2eStep struct {
	Name     string
	URL      string
	Who      string
	Tabs     int
	Focused  string
	Message  string
	Field    string
	Answers  int
	Status   string
	Entity   string
	Facts    int
	Line     string
	Hash     string
	Target   bool
	Visible  bool
	Text     string
	Shown    bool
	Overflow map[string]int
	DM       []string
	Entities int
	Review   string
	AliasHit string
	Legend   string
	Nodes    int
	Before   []string
	Options  []string
}

// TestConsoleInChromium drives the console in a real headless Chromium:
// Discord sign-in, confirming a fact, editing a persona, the graph, a recap
// sentence followed to its line, every page at 360 px, and a player who is
// never sent a secret. Screenshots go to .cache/console-shots.
func TestConsoleInChromium(t *testing.T) {
	t.Parallel()
	node, chromium, modules, root := browserTools(t)
	f := newFixture(t)
	ctx := context.Background()
	g := f.camp.Graph()
	fact := pendingFact(t, g)
	es, err := f.camp.Sessions().Entries(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if err := g.AddEvidence(ctx, fact.ID, []int64{es[8].ID}); err != nil {
		t.Fatal(err)
	}
	f.discord.SetOAuthUsers(guildID, admin, player)

	shots := filepath.Join(root, ".cache", "console-shots")
	dump := t.TempDir()
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	const personality = "gruff, loyal, and grieving his stolen steel"
	cfg, _ := json.Marshal(map[string]string{"base": f.srv.URL, "chromium": chromium, "shots": shots, "dump": dump,
		"personality": personality})
	cfgPath := filepath.Join(t.TempDir(), "e2e.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	// A guard against a hung browser, not a performance budget: the
	// script's own waits have no timeout.
	rctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(rctx, node, filepath.Join("testdata", "e2e.js"), cfgPath)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var out struct {
		Steps []e2eStep
		Error string
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &out); err != nil {
		t.Fatalf("the browser script failed (%v): %v\nstdout: %s\nstderr: %s", runErr, err, stdout.String(), stderr.String())
	}
	if out.Error != "" || runErr != nil {
		t.Fatalf("the browser script failed (%v): %s\nsteps so far: %+v\nstderr: %s", runErr, out.Error, out.Steps, stderr.String())
	}
	steps := map[string]e2eStep{}
	for _, s := range out.Steps {
		steps[s.Name] = s
	}

	if s := steps["signin"]; s.URL != "/review" || !strings.Contains(s.Who, "DM") {
		t.Errorf("DM sign-in: %+v", s)
	}
	if s := steps["keyboard"]; !strings.HasPrefix(s.Focused, "Confirm #") {
		t.Errorf("Tab never reached a Confirm button: %+v", s)
	}
	if s := steps["confirm"]; !strings.Contains(s.Message, "Confirmed fact") {
		t.Errorf("confirm: %+v", s)
	}
	got, err := g.Fact(ctx, fact.ID)
	if err != nil || got.Status != memory.StatusActive || !got.Provenance.DMConfirmed {
		t.Errorf("fact #%d after the browser confirmed it: %s, confirmed %v, %v", fact.ID, got.Status, got.Provenance.DMConfirmed, err)
	}
	if s := steps["bulk"]; s.Facts == 0 || !strings.Contains(s.Message, "in batch #") || !strings.Contains(s.Text, "Undid batch") || s.Shown {
		t.Errorf("bulk confirm and undo: %+v", s)
	}
	if left, err := g.PendingFacts(ctx, memory.FactFilter{}); err != nil || len(left) != steps["bulk"].Facts {
		t.Errorf("after the browser's bulk confirm and undo %d facts wait, want %d: %v", len(left), steps["bulk"].Facts, err)
	}
	// The page suggests the waiting facts' ends; typing asks for the rest.
	if s := steps["suggest"]; len(s.Before) == 0 || slices.Contains(s.Before, "Tower of Whispers") ||
		!slices.Contains(s.Options, "Tower of Whispers") || slices.ContainsFunc(s.Options, func(o string) bool {
		return !strings.Contains(strings.ToLower(o), "whisp")
	}) {
		t.Errorf("the names suggested at first: %q; for \"whisp\": %q", s.Before, s.Options)
	}
	// "mo" is in Elara Moonwhisper's name and in none of Grimjaw's; the
	// field suggests ids.
	if s := steps["merge-suggest"]; !slices.Contains(s.Options, "elara") || slices.Contains(s.Options, "grimjaw") ||
		slices.Contains(s.Options, "Elara Moonwhisper") {
		t.Errorf("the merge field's suggestions for \"mo\": %q", s.Options)
	}
	if s := steps["persona"]; !strings.Contains(s.Message, "Saved Grimjaw") || s.Field != personality {
		t.Errorf("persona: %+v", s)
	}
	e, err := g.Entity(ctx, "grimjaw")
	if err != nil || npc.PersonaFromEntity(e).Personality != personality {
		t.Errorf("grimjaw's persona in the database: %v %v", e.Attributes, err)
	}
	if s := steps["ask"]; s.Answers == 0 {
		t.Errorf("ask as grimjaw: no answers")
	}
	if s := steps["graph"]; !strings.Contains(s.Status, "19 entities") || !strings.HasPrefix(s.Entity, "Grimjaw") || s.Facts == 0 {
		t.Errorf("graph: %+v", s)
	}
	// Found by an alias; a legend of the types in view; an entity's page
	// is the graph around it, the depth and focus kept in the URL.
	if s := steps["graph-local"]; !strings.Contains(s.AliasHit, "also called the blacksmith") || !strings.Contains(s.Legend, "npc") ||
		!strings.Contains(s.URL, "/graph/brannoc?") || !strings.Contains(s.URL, "depth=1") || !strings.Contains(s.URL, "focus=brannoc") ||
		s.Nodes == 0 || s.Nodes >= 19 {
		t.Errorf("graph around an entity: %+v", s)
	}
	if s := steps["recap"]; s.Line == "" || s.Hash != "#line-"+s.Line || !s.Target || !s.Visible || s.Text == "" {
		t.Errorf("following a recap sentence: %+v", s)
	}
	if !steps["raw"].Shown {
		t.Error("the raw-text toggle shows nothing")
	}
	for page, px := range steps["narrow"].Overflow {
		if px > 0 {
			t.Errorf("%s is %d px wider than a 360 px screen", page, px)
		}
	}
	if len(steps["narrow"].Overflow) != 6 {
		t.Errorf("narrow pages checked: %v", steps["narrow"].Overflow)
	}
	if errs := steps["errors"].DM; len(errs) > 0 {
		t.Errorf("the pages logged errors: %q", errs)
	}
	if s := steps["player"]; s.Entities != 19 || s.Review != "Forbidden" {
		t.Errorf("player: %+v", s)
	}

	// Nothing the player's browser received or showed holds a secret.
	files, _ := filepath.Glob(filepath.Join(dump, "*.txt"))
	var jsons int
	for _, p := range files {
		b, _ := os.ReadFile(p)
		body := strings.ToLower(string(b))
		if strings.Contains(body, "/api/") {
			jsons++
		}
		for _, s := range secrets {
			if strings.Contains(body, strings.ToLower(s)) {
				t.Errorf("the player's browser got the secret %q in %s", s, strings.SplitN(string(b), "\n", 2)[0])
			}
		}
	}
	if len(files) < 20 || jsons < 19 {
		t.Errorf("only %d answers (%d from the API) were checked for secrets", len(files), jsons)
	}
	t.Logf("screenshots in %s", shots)
}

// TestGraphOf1000Entities opens the graph of a 1,000-entity campaign in
// Chromium: the layout spreads over many frames, an entity can be picked
// while it runs, and it settles. The longest frame gap and main-thread task
// are reported (a measurement, not a pass/fail budget).
func TestGraphOf1000Entities(t *testing.T) {
	t.Parallel()
	node, chromium, modules, root := browserTools(t)
	spec := benchdata.Spec{Name: "graph1k", Entities: 1000, Relationships: 5000, Entries: 500, Chunks: 50,
		EntriesPerSession: 250, Dims: 8, Seed: 1}
	door := generateCampaign(t, "bench", spec)
	c, err := console.New(console.Config{Door: door, Campaigns: []bot.Guild{{Campaign: "bench"}},
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	link, err := c.OneTimeLink("bench")
	if err != nil {
		t.Fatal(err)
	}
	shots := filepath.Join(root, ".cache", "console-shots")
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	find := benchdata.EntityName(500)
	cfg, _ := json.Marshal(map[string]string{"base": srv.URL, "link": link, "chromium": chromium, "shots": shots, "find": find,
		"findID": benchdata.EntityID(500)})
	cfgPath := filepath.Join(t.TempDir(), "graph1k.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // a hang guard; the script's waits have no timeout
	defer cancel()
	cmd := exec.CommandContext(rctx, node, filepath.Join("testdata", "graph1k.js"), cfgPath)
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var got struct {
		Nodes, Ticks, Frames int
		MaxGap, Longest      float64
		During               bool
		Picked, Status       string
		Tasks                [][2]int
		Error                string
		FirstDraw, Fetched   float64
		Local                struct {
			Nodes              int
			Focus              string
			FirstDraw, Fetched float64
			URL                string
			// Showed says whether the view showed the entity searched
			// for; Found is the view after picking it.
			Showed bool
			Found  struct {
				Focus string
				Shows bool
			}
		}
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &got); err != nil || got.Error != "" || runErr != nil {
		t.Fatalf("the browser script failed (%v, %v): %s\n%s", runErr, err, got.Error, stderr.String())
	}
	if got.Nodes != 1000 || !strings.HasPrefix(got.Picked, find) {
		t.Fatalf("graph of 1,000: %+v", got)
	}
	// A campaign this large opens on the view around one entity, named in
	// the URL.
	if got.Local.Nodes == 0 || got.Local.Nodes >= 1000 || got.Local.Focus == "" || !strings.Contains(got.Local.URL, "focus=") {
		t.Errorf("the default view of 1,000 entities: %+v", got.Local)
	}
	// The search finds an entity outside the view and moves the view
	// around it.
	if got.Local.Showed || got.Local.Found.Focus != benchdata.EntityID(500) || !got.Local.Found.Shows {
		t.Errorf("searching the default view for %s (%s): shown before %t, then the view is around %q (shows it: %t)",
			find, benchdata.EntityID(500), got.Local.Showed, got.Local.Found.Focus, got.Local.Found.Shows)
	}
	// The layout yields to the browser: it ran over many frames.
	if got.Frames < 10 {
		t.Errorf("the layout ran in %d frames; it should spread over many", got.Frames)
	}
	t.Logf("1,000 entities, %s: layout %d steps over %d frames; longest frame gap %.0f ms, longest task %.0f ms; picked %q while the layout ran: %v",
		got.Status, got.Ticks, got.Frames, got.MaxGap, got.Longest, got.Picked, got.During)
	t.Logf("long tasks [start ms, duration ms]: %v", got.Tasks)
	t.Logf("first draw, from the graph request (of which the answer): around %s (%d entities) %.0f ms (%.0f ms); the whole graph %.0f ms (%.0f ms)",
		got.Local.Focus, got.Local.Nodes, got.Local.FirstDraw, got.Local.Fetched, got.FirstDraw, got.Fetched)
}
