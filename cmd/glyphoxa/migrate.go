package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

func cmdMigrate(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("migrate", e)
	var sf storeFlags
	sf.register(fs)
	reembed := fs.Bool("reembed", false, "rebuild the semantic index (L2) for the configured embedding dimension")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	dsn, err := sf.resolveDSN(e, cfg)
	if err != nil {
		return err
	}
	dims := cfg.Memory.EmbeddingDimensions
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connecting to PostgreSQL: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if !*reembed {
		if err := postgres.Migrate(ctx, conn, dims); err != nil {
			return err
		}
		printf(e.stdout, "database is up to date (embedding dimension %d)\n", dims)
		return nil
	}
	n, err := postgres.Reembed(ctx, conn, dims)
	if err != nil {
		return err
	}
	conn.Close(ctx)
	printf(e.stdout, "semantic index rebuilt for %d dimensions; %d chunks need embedding\n", dims, n)
	return embedPending(ctx, e, &sf)
}
