package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/npc"
)

func cmdConfig(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("config check", e)
	// The flags are registered before any help is printed, so that
	// `config --help` lists them.
	var sf storeFlags
	sf.register(fs)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fs.Usage()
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "check" {
		return usagef("the only config subcommand is check")
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	if sf.dsn != "" {
		cfg.Memory.PostgresDSN = sf.dsn
		cfg.SetLiteral("memory.postgres_dsn")
	}
	// Every check serve's start-up runs (config.Preflight: listen
	// addresses, URLs, tokens, the spool directory, the MCP endpoints), and
	// a database to open.
	if err := errors.Join(cfg.Require(config.NeedDSN), cfg.Preflight()); err != nil {
		return err
	}
	llm := "none (" + npc.OfflineBehaviour + ")"
	if p := cfg.Providers.LLM; p.Configured() {
		llm = fmt.Sprintf("%s at %s", cfg.Show("providers.llm.model", p.Model), cfg.Show("providers.llm.base_url", config.Redact(p.BaseURL)))
	}
	eps, err := cfg.MCPEndpoints()
	if err != nil {
		return err
	}
	printf(e.stdout, "configuration OK: %d guild(s), %s; LLM: %s; STT: %s; TTS: %s; embeddings: %s (%d dimensions); MCP endpoints: %d\n",
		len(cfg.Discord.Guilds), personaCount(len(cfg.NPCs)), llm, cfg.Providers.STT.Provider, cfg.Providers.TTS.Provider,
		cfg.Providers.Embeddings.Provider, cfg.Memory.EmbeddingDimensions, len(eps))
	return nil
}

// personaCount says how many NPC personas the configuration adds. The NPCs
// who play are the campaigns' own (entities of type npc in their memory,
// which config check does not read) plus these, so "0 NPCs" would be
// wrong for a campaign that has some.
func personaCount(n int) string {
	switch n {
	case 0:
		return "NPCs from the campaigns' memory (no personas under npcs:)"
	case 1:
		return "1 NPC persona under npcs: (beside the campaigns' own NPCs)"
	}
	return fmt.Sprintf("%d NPC personas under npcs: (beside the campaigns' own NPCs)", n)
}
