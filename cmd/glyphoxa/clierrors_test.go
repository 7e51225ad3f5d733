package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// campaignsIn lists the campaigns of the database at dsn.
func campaignsIn(t *testing.T, dsn string) []string {
	t.Helper()
	s, err := postgres.NewStore(context.Background(), dsn, 384)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids, err := s.Campaigns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// The CLI errors of issue 30 name the problem and the fix.
func TestCLIErrorsNameTheFix(t *testing.T) {
	t.Parallel()
	vars := map[string]string{"GLYPHOXA_DSN": migratedDB(t)}
	if code, out, errs := runCLI(t, vars, "import", "--no-process", sample); code != 0 {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	const scene = "../../testdata/scenes/rusty-tankard.yaml"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"demo with a mistyped campaign", []string{"demo", "--scene", scene, "--campaign", "ironhld-saga"}, 1,
			[]string{`campaign "ironhld-saga" does not exist; did you mean "ironhold-saga"?`, "Known campaigns: ironhold-saga.", "--create"}},
		{"ask as a mistyped NPC", []string{"ask", "--campaign", "ironhold-saga", "--npc", "grimjw", "where is the hammer"}, 1,
			[]string{`--npc "grimjw": campaign "ironhold-saga" has no NPC with that id; did you mean "grimjaw" (Grimjaw)?`,
				"NPCs: brannoc (Brannoc), elara (Elara Moonwhisper)"}},
		{"ask as an NPC by name", []string{"ask", "--campaign", "ironhold-saga", "--npc", "Elara Moonwhisper", "where is the hammer"}, 1,
			[]string{`did you mean "elara" (Elara Moonwhisper)?`}},
		{"ask as a player", []string{"ask", "--campaign", "ironhold-saga", "--npc", "thorin", "where is the hammer"}, 1,
			[]string{`--npc "thorin": Thorin is a player, not an NPC`}},
		{"chat with a mistyped NPC", []string{"chat", "--campaign", "ironhold-saga", "--npc", "grimjw"}, 1,
			[]string{`--npc "grimjw": campaign "ironhold-saga" has no NPC with that id; did you mean "grimjaw" (Grimjaw)?`,
				"NPCs: brannoc (Brannoc)"}},
		{"chat with a place", []string{"chat", "--campaign", "ironhold-saga", "--npc", "sunken-vault"}, 1,
			[]string{`--npc "sunken-vault": Sunken Vault is a location, not an NPC; NPCs: brannoc (Brannoc)`}},
		{"config help", []string{"config", "--help"}, 0, []string{"-config string", "-dsn string"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errs := runCLI(t, vars, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
		})
	}
	// A database nobody listens on: the error says what to do.
	down := map[string]string{"GLYPHOXA_DSN": "postgres://glyphoxa@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"}
	if code, _, errs := runCLI(t, down, "inspect", "--campaign", "ironhold-saga"); code != 1 ||
		!strings.Contains(errs, "connection refused; is PostgreSQL running there? (`make db` starts a local one") {
		t.Errorf("database down: exit %d, stderr %q", code, errs)
	}
	if ids := campaignsIn(t, vars["GLYPHOXA_DSN"]); !slices.Equal(ids, []string{"ironhold-saga"}) {
		t.Fatalf("a refused command created a campaign: %v", ids)
	}
}
