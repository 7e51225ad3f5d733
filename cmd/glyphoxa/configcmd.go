package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
)

func cmdConfig(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("config check", e)
	if len(args) > 0 && (args[0] == "-h" || args[0] == "--help" || args[0] == "help") {
		fs.Usage()
		return flag.ErrHelp
	}
	if len(args) == 0 || args[0] != "check" {
		return usagef("the only config subcommand is check")
	}
	var sf storeFlags
	sf.register(fs)
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	if sf.dsn != "" {
		cfg.Memory.PostgresDSN = sf.dsn
	}
	if err := cfg.Require(config.NeedDSN, config.NeedDiscord); err != nil {
		return err
	}
	llm := "none (NPCs cannot answer until providers.llm is set)"
	if cfg.Providers.LLM.Configured() {
		llm = fmt.Sprintf("%s at %s", cfg.Providers.LLM.Model, config.Redact(cfg.Providers.LLM.BaseURL))
	}
	// The same check serve's start-up runs: what passes here mounts there.
	eps, err := cfg.MCPEndpoints()
	if err != nil {
		return err
	}
	printf(e.stdout, "configuration OK: %d guild(s), %d NPC(s); LLM: %s; STT: %s; TTS: %s; embeddings: %s (%d dimensions); MCP endpoints: %d\n",
		len(cfg.Discord.Guilds), len(cfg.NPCs), llm, cfg.Providers.STT.Provider, cfg.Providers.TTS.Provider,
		cfg.Providers.Embeddings.Provider, cfg.Memory.EmbeddingDimensions, len(eps))
	return nil
}
