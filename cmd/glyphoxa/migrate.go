package main

import (
	"context"
	"fmt"
	"strings"

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
		applied, err := postgres.MigrateApplied(ctx, conn, dims)
		known, kerr := postgres.MigrationVersions()
		if kerr != nil {
			return kerr
		}
		if len(applied) > 0 && err != nil {
			printf(e.stdout, "applied migrations %s before the error\n", versionRanges(applied, known))
		}
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			printf(e.stdout, "database is up to date (embedding dimension %d)\n", dims)
			return nil
		}
		printf(e.stdout, "applied migrations %s (embedding dimension %d)\n", versionRanges(applied, known), dims)
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

// versionRanges names the migration versions vs (sorted) as runs of
// successive versions among known (every migration, sorted; the numbering
// has gaps): "0047..0050", "0003, 0047..0050".
func versionRanges(vs, known []int) string {
	next := map[int]int{}
	for i := 0; i+1 < len(known); i++ {
		next[known[i]] = known[i+1]
	}
	var parts []string
	for i := 0; i < len(vs); {
		j := i
		for j+1 < len(vs) && next[vs[j]] == vs[j+1] {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprintf("%04d", vs[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%04d..%04d", vs[i], vs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
