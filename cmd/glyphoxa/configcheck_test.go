package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// runWithin runs the CLI like runCLI, with a generous hang guard.
func runWithin(t *testing.T, vars map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	e := &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }}
	code = run(ctx, args, e)
	return code, out.String(), errb.String()
}

// Every configuration serve refuses at start-up, config check refuses with
// the same message, naming the key (and the variable, never its value,
// when the value came from the environment); one it accepts, serve gets
// past its checks with (and stops at the database, which is unreachable
// here: no Discord, no PostgreSQL needed).
func TestConfigCheckRefusesWhatServeRefuses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const secret = "zq9MARKER"
	guild := "discord:\n  token: fake-token\n  guilds:\n    - {guild_id: \"100000000000000001\", campaign: ironhold-saga}\n"
	spool := "lifecycle: {spool_dir: \"" + filepath.Join(dir, "spool") + "\"}\n"
	for _, tc := range []struct {
		name, yaml string
		vars       map[string]string
		want       string // "" accepted
	}{
		{"accepted", guild + spool, nil, ""},
		{"listen without a port", guild + spool + "server: {listen: localhost}\n", nil, `server.listen: must be host:port`},
		{"listen from the environment", guild + spool + "server: {listen: \"${LISTEN}\"}\n", map[string]string{"LISTEN": secret + "_x:1"},
			"server.listen (from ${LISTEN}): must name an IP address or a host name"},
		{"console port out of range", guild + spool + "console: {listen: \"127.0.0.1:99999\"}\n", nil, "console.listen: must end in a port number"},
		{"LLM URL without a scheme", guild + spool + "providers: {llm: {base_url: \"localhost:11434/v1\", model: m}}\n", nil,
			"providers.llm.base_url: must start with http:// or https://"},
		{"LLM URL from an override", guild + spool, map[string]string{"GLYPHOXA_LLM_BASE_URL": "ftp://" + secret},
			"providers.llm.base_url (from ${GLYPHOXA_LLM_BASE_URL}): must start with http:// or https://"},
		{"realtime URL over http", guild + spool + "providers: {realtime: {url: \"https://api.openai.com/v1/realtime\"}}\n", nil,
			"providers.realtime.url: must start with ws:// or wss://"},
		{"console public URL without a scheme", guild + spool + "console: {public_url: dm.example.org}\n", nil, "console.public_url: must start with http://"},
		{"OAuth client without a secret", guild + spool + "console: {client_id: \"123456789012345678\"}\n", nil, "console.client_secret: is required"},
		{"spool under a file", guild + "lifecycle: {spool_dir: \"" + filepath.Join(file, "spool") + "\"}\n", nil, "lifecycle.spool_dir: cannot be created"},
		{"spool from the environment", guild + "lifecycle: {spool_dir: \"${SPOOL}\"}\n", map[string]string{"SPOOL": filepath.Join(file, secret)},
			"lifecycle.spool_dir (from ${SPOOL}): cannot be created"},
		{"log level from the environment", guild + spool + "log:\n  level: ${LEVEL}\n", map[string]string{"LEVEL": secret}, "log.level (from ${LEVEL}): must be one of"},
		{"short MCP token", guild + spool + "server: {mcp_dm_token: abc}\n", nil, "server.mcp_dm_token: is 3 characters long"},
		{"token with a Bot prefix", strings.Replace(guild, "fake-token", "\"${TOKEN}\"", 1) + spool, map[string]string{"TOKEN": "Bot " + secret},
			"discord.token (from ${TOKEN}): holds a space"},
		{"no Discord token", strings.Replace(guild, "  token: fake-token\n", "", 1) + spool, nil, "discord.token: is required"},
		{"guild id from the environment", strings.Replace(guild, `"100000000000000001"`, `"${GUILD}"`, 1) + spool, map[string]string{"GUILD": secret},
			"discord.guilds[0].guild_id (from ${GUILD}): must be a Discord guild id"},
		{"kg token limit beyond the database's integer", strings.Replace(guild, "campaign: ironhold-saga}", "campaign: ironhold-saga, mcp_token: abcdefghijklmnopqrstu, kg_token_limit: 3000000000}", 1) + spool, nil,
			"discord.guilds[0].kg_token_limit: must be positive and at most 2147483647"},
		{"LLM model of spaces", guild + spool + "providers: {llm: {base_url: \"http://localhost:11434/v1\", model: \"  \"}}\n", nil, "providers.llm.model: is required"},
		{"unknown STT provider", guild + spool + "providers: {stt: {provider: siri}}\n", nil, "providers.stt.provider: must be one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			vars := map[string]string{"GLYPHOXA_DSN": "postgres://glyphoxa@127.0.0.1:1/none?sslmode=disable&connect_timeout=5"}
			for k, v := range tc.vars {
				vars[k] = v
			}
			ccode, cout, cerr := runWithin(t, vars, "config", "check", "--config", path)
			scode, _, serr := runWithin(t, vars, "serve", "--config", path, "--listen", "")
			if tc.want == "" {
				if ccode != 0 || !strings.Contains(cout, "configuration OK") {
					t.Fatalf("config check refused it: %d %s", ccode, cerr)
				}
				if scode == 0 || !strings.Contains(serr, "opening the memory store") {
					t.Fatalf("serve should get past its checks and stop at the unreachable database: %d %s", scode, serr)
				}
				return
			}
			cmsg, ok1 := strings.CutPrefix(cerr, "glyphoxa config: ")
			smsg, ok2 := strings.CutPrefix(serr, "glyphoxa serve: ")
			if ccode != 1 || scode != 1 || !ok1 || !ok2 {
				t.Fatalf("config check: %d %q\nserve: %d %q", ccode, cerr, scode, serr)
			}
			if cmsg != smsg {
				t.Errorf("different messages:\nconfig check: %s\nserve:        %s", cmsg, smsg)
			}
			if !strings.Contains(cmsg, tc.want) {
				t.Errorf("config check: %s\nwant it to contain %q", cmsg, tc.want)
			}
			if strings.Contains(cerr+serr, secret) {
				t.Errorf("a value from the environment shows:\n%s\n%s", cerr, serr)
			}
		})
	}
}
