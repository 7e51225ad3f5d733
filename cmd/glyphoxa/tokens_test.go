package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestShortMCPTokensAreRefusedInEveryMode: a token shorter than 16
// characters stops `glyphoxa mcp --http` and `config check` (whose
// validation `serve` runs at start-up, and mountMCP's HTTPHandler checks
// again), whether it comes from the configuration file (server or guild)
// or from an environment variable; the error names the key or the
// variable and never shows the token.
func TestShortMCPTokensAreRefusedInEveryMode(t *testing.T) {
	t.Parallel()
	dsn := migratedDB(t)
	if code, _, errs := runCLI(t, map[string]string{"GLYPHOXA_DSN": dsn}, "import", "../../testdata/campaigns/ironhold-saga.yaml"); code != 0 {
		t.Fatalf("import: %s", errs)
	}
	dir := t.TempDir()
	file := func(name, yaml string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const short = "shorttok7"
	for _, tc := range []struct {
		name string
		vars map[string]string
		conf string // configuration file content; "" for none
		want string
	}{
		{"server DM token in the file, no guild", nil, "server: {mcp_dm_token: " + short + "}\n", "server.mcp_dm_token: is 9 characters long"},
		{"server player token in the file, no guild", nil, "server: {mcp_token: " + short + "}\n", "server.mcp_token: is 9 characters long"},
		{"DM token from the environment", map[string]string{"GLYPHOXA_MCP_DM_TOKEN": short}, "", "GLYPHOXA_MCP_DM_TOKEN"},
		{"player token from the environment", map[string]string{"GLYPHOXA_MCP_TOKEN": short}, "", "GLYPHOXA_MCP_TOKEN"},
		{"guild DM token", nil, "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: ironhold-saga, mcp_dm_token: " + short + "}]}\n",
			"discord.guilds[0].mcp_dm_token: is 9 characters long"},
		{"a player's own token", nil, "discord: {token: t, guilds: [{guild_id: \"100000\", campaign: ironhold-saga, mcp_player_tokens: {Pia: " + short + "}}]}\n",
			"discord.guilds[0].mcp_player_tokens.Pia: is 9 characters long"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"GLYPHOXA_DSN": dsn}
			for k, v := range tc.vars {
				vars[k] = v
			}
			if tc.conf != "" {
				vars["GLYPHOXA_CONFIG"] = file(strings.ReplaceAll(tc.name, " ", "-")+".yaml", tc.conf)
			}
			for _, args := range [][]string{
				{"mcp", "--campaign", "ironhold-saga", "--http", "127.0.0.1:0"},
				{"config", "check"},
			} {
				code, out, errs := runCLI(t, vars, args...)
				if code == 0 || !strings.Contains(errs, tc.want) {
					t.Errorf("%s: exit %d, stderr %q, want a failure naming %q", args[0], code, errs, tc.want)
				}
				if strings.Contains(out+errs, short) {
					t.Errorf("%s shows the token: %q", args[0], out+errs)
				}
			}
		})
	}
}
