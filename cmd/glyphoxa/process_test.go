package main

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
)

// Imported sessions are extracted by process --extract, with progress on
// standard error; running it again does nothing, and re-extracting one
// session reuses the model's answers and duplicates nothing.
func TestProcessExtract(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	if code, _, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--extract"); code != 1 || !strings.Contains(errs, "providers.llm") {
		t.Fatalf("--extract without an LLM: %d %q", code, errs)
	}
	srv := llmtest.New(func(n int, req llmtest.Request) llmtest.Reply {
		return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"},{"name":"Moonwell","type":"location"}],
			"relationships":[{"source":"Grimjaw","target":"Moonwell","type":"VISITED","confidence":0.9,"basis":"stated"}]}`}
	})
	defer srv.Close()
	vars["GLYPHOXA_LLM_BASE_URL"] = srv.URL()
	vars["GLYPHOXA_LLM_MODEL"] = "fake"

	code, out, errs := runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--extract")
	if code != 0 || !strings.Contains(errs, "session s1: window 1/1 extracted") || !strings.Contains(errs, "session s2: window 1/1 extracted") ||
		!strings.Contains(out, `extracted session "s2"`) {
		t.Fatalf("process --extract: %d\nstdout %s\nstderr %s", code, out, errs)
	}
	asked := len(srv.Requests())
	if asked != 2 {
		t.Fatalf("%d extraction requests, want one per session", asked)
	}
	count := func() (entities, facts int) {
		t.Helper()
		conn, err := pgx.Connect(context.Background(), dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if err := conn.QueryRow(context.Background(), `SELECT
			(SELECT count(*) FROM entities WHERE campaign_id = 'ironhold-saga' AND name = 'Moonwell'),
			(SELECT count(*) FROM relationships WHERE campaign_id = 'ironhold-saga' AND rel_type = 'VISITED')`).Scan(&entities, &facts); err != nil {
			t.Fatal(err)
		}
		return entities, facts
	}
	if e, f := count(); e != 1 || f != 1 {
		t.Fatalf("after extraction: %d Moonwell entities, %d VISITED facts; want 1 and 1", e, f)
	}
	if code, out, _ := runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--extract"); code != 0 || !strings.Contains(out, "no session") {
		t.Fatalf("second --extract: %d %s", code, out)
	}
	code, out, errs = runCLI(t, vars, "process", "--campaign", "ironhold-saga", "--session", "s1", "--extract")
	if code != 0 || !strings.Contains(errs, "window 1/1 reused") || len(srv.Requests()) != asked {
		t.Fatalf("re-extracting s1: %d %s %s (%d requests)", code, out, errs, len(srv.Requests()))
	}
	if e, f := count(); e != 1 || f != 1 {
		t.Fatalf("after re-extraction: %d Moonwell entities, %d VISITED facts; want 1 and 1", e, f)
	}
}
