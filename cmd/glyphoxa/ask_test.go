package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

const sample = "../../testdata/campaigns/ironhold-saga.yaml"

type askResult struct {
	Kind      string   `json:"kind"`
	ID        string   `json:"id"`
	Content   string   `json:"content"`
	Score     float64  `json:"score"`
	SessionID string   `json:"session_id"`
	EntityIDs []string `json:"entity_ids"`
}

func askJSON(t *testing.T, vars map[string]string, args ...string) []askResult {
	t.Helper()
	code, out, errs := runCLI(t, vars, append([]string{"ask", "--json"}, args...)...)
	if code != 0 {
		t.Fatalf("ask %v: exit %d: %s", args, code, errs)
	}
	var rs []askResult
	if err := json.Unmarshal([]byte(out), &rs); err != nil {
		t.Fatalf("ask --json printed %q: %v", out, err)
	}
	return rs
}

func TestImportProcessesAndAskAnswers(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	code, out, errs := runCLI(t, vars, "import", sample)
	if code != 0 || !strings.Contains(out, "processed 2 sessions into") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}

	for _, mode := range []string{"vector", "fts", "graphrag", "ppr", "hybrid"} {
		rs := askJSON(t, vars, "--campaign", "ironhold-saga", "--mode", mode, "--k", "3", "What does the Dawn Hammer do?")
		if mode == "hybrid" {
			// The answers are followed by the entity the question names.
			last := rs[len(rs)-1]
			want := askResult{Kind: "entity", ID: "dawn-hammer", Content: "Dawn Hammer (item)\nproperties: glows near undead",
				Score: 1, EntityIDs: []string{"dawn-hammer"}}
			if fmt.Sprint(last) != fmt.Sprint(want) {
				t.Errorf("hybrid: last result %+v, want %+v", last, want)
			}
			rs = rs[:len(rs)-1]
		}
		if len(rs) == 0 || len(rs) > 3 {
			t.Fatalf("%s: %d results", mode, len(rs))
		}
		found := false
		for _, r := range rs {
			if r.Kind != "chunk" || r.ID == "" || r.SessionID == "" {
				t.Errorf("%s: malformed result %+v", mode, r)
			}
			found = found || strings.Contains(r.Content, "It glows when the dead walk")
		}
		if !found {
			t.Errorf("%s: no result tells what the Dawn Hammer does: %+v", mode, rs)
		}
	}

	// A named entity comes with its public attributes, never its secrets.
	rs := askJSON(t, vars, "--campaign", "ironhold-saga", "--k", "2", "What did the blacksmith say about the shipment?")
	var grimjaw []askResult
	for i, r := range rs {
		if r.Kind == "entity" {
			if i < 2 {
				t.Errorf("entity result %s at position %d, before the answers", r.ID, i)
			}
			grimjaw = append(grimjaw, r)
		}
	}
	want := "Grimjaw (npc)\nalso: Grim, the blacksmith\noccupation: blacksmith\npersonality: gruff, loyal, hates goblins\n" +
		"speaking_style: short sentences, dwarven oaths"
	if len(grimjaw) != 1 || grimjaw[0].ID != "grimjaw" || grimjaw[0].Content != want || grimjaw[0].SessionID != "" {
		t.Errorf("entity results %+v, want grimjaw with content %q", grimjaw, want)
	}
	if strings.Contains(fmt.Sprint(rs), "hooded stranger") {
		t.Errorf("ask revealed Grimjaw's secret knowledge: %+v", rs)
	}
	// The raw JSON of an entity has no session.
	_, raw, _ := runCLI(t, vars, "ask", "--json", "--campaign", "ironhold-saga", "--k", "1", "Dawn Hammer")
	if !strings.Contains(raw, `"kind": "entity",
    "id": "dawn-hammer"`) || strings.Contains(raw, `"session_id": ""`) {
		t.Errorf("ask --json printed %s", raw)
	}

	// Text output.
	code, out, errs = runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "who", "watched", "us", "at", "the", "Tankard?")
	if code != 0 || !strings.Contains(out, "1. [chunk ") || !strings.Contains(out, "Vexa Thorn") {
		t.Errorf("ask: %d %q %q", code, out, errs)
	}

	// NPC scope: Elara spoke only in session s2, so she heard nothing of s1.
	rs = askJSON(t, vars, "--campaign", "ironhold-saga", "--npc", "elara", "--k", "10", "lost cart of steel Duskwood")
	for _, r := range rs {
		if r.Kind == "entity" || r.SessionID != "s2" {
			t.Errorf("elara recalls %s from session %s, where she never was", r.ID, r.SessionID)
		}
	}
	if len(rs) == 0 {
		t.Error("elara recalls nothing of her own session")
	}
}

func TestProcessIsIdempotent(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	if code, out, errs := runCLI(t, vars, "import", "--no-process", sample); code != 0 || strings.Contains(out, "processed") {
		t.Fatalf("import --no-process: %d %q %q", code, out, errs)
	}
	// Before processing, ask falls back to the session log.
	rs := askJSON(t, vars, "--campaign", "ironhold-saga", "Dawn Hammer")
	if len(rs) == 0 || rs[0].Kind != "entry" {
		t.Fatalf("unprocessed campaign: %+v", rs)
	}
	code, out, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga")
	if code != 0 || !strings.Contains(out, "2 sessions") || !strings.Contains(out, "(0 old chunks removed)") {
		t.Fatalf("process: %d %q %q", code, out, errs)
	}
	code, out2, _ := runCLI(t, vars, "process", "--campaign", "ironhold-saga")
	if code != 0 || out2 != out {
		t.Fatalf("second process differs:\n%s\n%s", out, out2)
	}
	code, out, _ = runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--session", "s2")
	if code != 0 || !strings.Contains(out, "1 sessions") {
		t.Fatalf("process one session: %d %q", code, out)
	}

	// After migrate --reembed every chunk is re-embedded.
	code, out, errs = runCLI(t, vars, "migrate", "--reembed")
	if code != 0 || !strings.Contains(out, `campaign "ironhold-saga": embedded`) {
		t.Fatalf("migrate --reembed: %d %q %q", code, out, errs)
	}
	if rs := askJSON(t, vars, "--campaign", "ironhold-saga", "--mode", "vector", "Dawn Hammer"); len(rs) == 0 || rs[0].Kind != "chunk" {
		t.Fatalf("vector search after re-embedding: %+v", rs)
	}
}

func TestAskErrors(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	createCampaign(t, vars["GLYPHOXA_DSN"], "c") // read commands never create one
	cases := []struct {
		name     string
		args     []string
		code     int
		inStderr string
	}{
		{"no campaign", []string{"ask", "hello"}, 2, "--campaign is required"},
		{"no question", []string{"ask", "--campaign", "c"}, 2, "expected a question"},
		{"bad mode", []string{"ask", "--campaign", "c", "--mode", "magic", "q"}, 2, `unknown retrieval mode "magic"`},
		{"bad k", []string{"ask", "--campaign", "c", "--k", "0", "q"}, 2, "--k must be within"},
		{"unknown npc", []string{"ask", "--campaign", "c", "--npc", "ghost", "q"}, 1, `"ghost"`},
		{"npc and as", []string{"ask", "--campaign", "c", "--npc", "grimjaw", "--as", "player", "q"}, 2,
			"--npc reads as that NPC and --as as a player or the DM: give one of them"},
		{"process without campaign", []string{"process"}, 2, "--campaign is required"},
		{"process unknown session", []string{"process", "--campaign", "c", "--session", "nope"}, 1, `session "nope"`},
		{"embedder of another dimension", []string{"ask", "--campaign", "c", "--config", wrongDims(t), "q"}, 1,
			"model \"nomic-embed-text\" returned 768-dimensional vectors, 384 are configured"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, vars, tc.args...)
			if code != tc.code || !strings.Contains(errs, tc.inStderr) {
				t.Fatalf("exit %d (want %d), stderr %q (want it to contain %q)", code, tc.code, errs, tc.inStderr)
			}
		})
	}
}

// createCampaign creates an empty campaign.
func createCampaign(t *testing.T, dsn, id string) {
	t.Helper()
	s, err := postgres.NewStore(context.Background(), dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Campaign(context.Background(), id); err != nil {
		t.Fatal(err)
	}
}

// wrongDims writes a configuration whose embedding model (a local fake of
// an OpenAI-compatible endpoint) returns 768-dimensional vectors while the
// store holds 384.
func wrongDims(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","model":"nomic-embed-text","data":[{"object":"embedding","index":0,"embedding":[%s0]}]}`,
			strings.Repeat("0.01,", 767))
	}))
	t.Cleanup(srv.Close)
	path := filepath.Join(t.TempDir(), "config.yaml")
	cfg := fmt.Sprintf("memory:\n  embedding_dimensions: 384\nproviders:\n  embeddings:\n    provider: openai\n    model: nomic-embed-text\n    base_url: %s/v1\n", srv.URL)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestMCPAskerAndRecaller(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	ctx := context.Background()
	store, err := postgres.NewStore(ctx, dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	cfg := config.Default()
	asker, err := newAsker(pgtest.Door(t, store), cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := asker.Ask(ctx, "ironhold-saga", memory.DMViewer(), "Sunken Vault drowned rune", 2)
	// Two answers, then the entity the question names.
	if err != nil || len(res) != 3 || !strings.Contains(res[0].Content, "drowned rune") ||
		res[2].Kind != "entity" || res[2].ID != "sunken-vault" {
		t.Fatalf("Ask = %+v, %v", res, err)
	}
	camp := pgtest.Open(t, store, "ironhold-saga", memory.DMViewer())
	recaller, err := newRecaller(camp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recaller.Recall(ctx, "elara", "drowned rune", 3)
	if err != nil || len(rec) == 0 || rec[0].SessionID != "s2" {
		t.Fatalf("Recall = %+v, %v", rec, err)
	}
	hc, err := newHotContext(camp, cfg).Assemble(ctx, "grimjaw", "s1", 300)
	if err != nil || !strings.Contains(hc.Text, "You are Grimjaw") || len(hc.Text) > 1200 {
		t.Fatalf("HotContext = %+v, %v", hc, err)
	}
}

// TestAskEntityResultNamesNoEmptySession: an entity found by its name has
// no session, and its heading says none ("session , score" before).
func TestAskEntityResultNamesNoEmptySession(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": sampleProcessed.Copy(t)}
	code, out, errs := runCLI(t, vars, "ask", "--campaign", "ironhold-saga", "Where did the Ashen Circle take the steel?")
	if code != 0 {
		t.Fatalf("ask: %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "[entity ashen-circle, score ") || strings.Contains(out, "session ,") {
		t.Errorf("want the entity's heading without an empty session:\n%s", out)
	}
}

// TestAskHelpExamplesAnswer runs `glyphoxa ask -h`'s examples on the sample
// campaign: each answers from a chunk that holds what it asks about. The
// --npc example asked Brannoc "Who is Vexa?", of whom he heard nothing
// (--npc reads only what the NPC heard): its answer was the one chunk he
// heard, about ale and a lost cart.
func TestAskHelpExamplesAnswer(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": sampleProcessed.Copy(t)}
	// What the first answer to each question must hold.
	want := map[string]string{
		"Where did the Ashen Circle take the steel?": "Ashen Circle",
		"Where was the lost cart headed?":            "through Duskwood",
		"Who is Vexa?":                               "Vexa",
	}
	for _, ex := range commandExamples("ask") {
		cmd, _, _ := strings.Cut(ex, "   #")
		_, rest, _ := strings.Cut(cmd, "glyphoxa ask ")
		flags, question, _ := strings.Cut(rest, ` "`)
		question = strings.TrimSuffix(question, `"`)
		w, ok := want[question]
		if !ok {
			t.Errorf("%s: the test does not know what its answer must hold", ex)
			continue
		}
		code, out, errs := runCLI(t, vars, append(append([]string{"ask"}, strings.Fields(flags)...), question)...)
		first, _, _ := strings.Cut(out, "\n2. ")
		if code != 0 || !strings.Contains(first, w) {
			t.Errorf("%s: exit %d, its first answer lacks %q:\n%s%s", ex, code, w, first, errs)
		}
	}
}
