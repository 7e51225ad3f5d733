package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

func TestInspectCountsOpenConflicts(t *testing.T) {
	t.Parallel()
	dsn := sampleProcessed.Copy(t)
	vars := map[string]string{"GLYPHOXA_DSN": dsn}
	conflicts := regexp.MustCompile(`(?m)^Conflicts +(\d+) open$`)
	inspect := func() (text string, js postgres.Inspection) {
		t.Helper()
		code, out, errs := runCLI(t, vars, "inspect", "--campaign", "ironhold-saga")
		if code != 0 {
			t.Fatalf("inspect: %d %q", code, errs)
		}
		code, raw, errs := runCLI(t, vars, "inspect", "--campaign", "ironhold-saga", "--json")
		if code != 0 {
			t.Fatalf("inspect --json: %d %q", code, errs)
		}
		if err := json.Unmarshal([]byte(raw), &js); err != nil {
			t.Fatalf("inspect --json: %v\n%s", err, raw)
		}
		return out, js
	}
	out, js := inspect()
	if m := conflicts.FindStringSubmatch(out); m == nil || m[1] != "0" || js.OpenConflicts != 0 {
		t.Fatalf("before any conflict: %d in JSON, text:\n%s", js.OpenConflicts, out)
	}

	ctx := context.Background()
	s, err := postgres.NewStore(ctx, dsn, config.Default().Memory.EmbeddingDimensions)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	g := pgtest.Campaign(t, s, "ironhold-saga").Graph()
	// Grimjaw (at Ironhold since s1) is said to be at the Tower in s2, and
	// said not to be in the Guild: two conflicts.
	for _, r := range []memory.Relationship{
		{SourceID: "grimjaw", TargetID: "tower", Type: "LOCATED_AT"},
		{SourceID: "grimjaw", TargetID: "guild", Type: "NOT_MEMBER_OF"},
	} {
		r.Provenance = memory.Provenance{SessionID: "s2", Confidence: 0.9, Source: memory.SourceStated}
		if _, cs, err := g.RecordFact(ctx, r); err != nil || len(cs) != 1 {
			t.Fatalf("recording %+v: %+v %v", r, cs, err)
		}
	}
	out, js = inspect()
	if m := conflicts.FindStringSubmatch(out); m == nil || m[1] != "2" || js.OpenConflicts != 2 {
		t.Fatalf("with two conflicts: %d in JSON, text:\n%s", js.OpenConflicts, out)
	}
	if !regexp.MustCompile(`/memory conflicts`).MatchString(out) {
		t.Errorf("inspect does not say how to settle the conflicts:\n%s", out)
	}
	open, err := g.Conflicts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.ResolveConflict(ctx, open[0].ID, false); err != nil {
		t.Fatal(err)
	}
	if out, js = inspect(); js.OpenConflicts != 1 {
		t.Fatalf("after settling one: %d in JSON, text:\n%s", js.OpenConflicts, out)
	}
}
