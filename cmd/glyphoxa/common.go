package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"syscall"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// storeFlags are the flags of every command that opens the database.
type storeFlags struct {
	configPath string
	dsn        string
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	f.registerConfig(fs)
	fs.StringVar(&f.dsn, "dsn", "", "PostgreSQL DSN (default: $GLYPHOXA_DSN, else memory.postgres_dsn of the configuration)")
}

// registerConfig registers --config alone, for a command that reads the
// configuration but never the database.
func (f *storeFlags) registerConfig(fs *flag.FlagSet) {
	fs.StringVar(&f.configPath, "config", "", "configuration file (default: $GLYPHOXA_CONFIG, else ./config.yaml if present)")
}

// newFlagSet returns a flag set that reports errors instead of exiting and
// whose -h says what the command does, with examples.
func newFlagSet(name string, e *env) *flag.FlagSet {
	fs := flag.NewFlagSet("glyphoxa "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() { printCommandHelp(fs.Output(), fs, name) }
	return fs
}

// parseFlags parses args, turning flag errors into usage errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("%v", err)
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// loadConfig reads the configuration the flags point to, or the defaults.
func (f *storeFlags) loadConfig(e *env) (config.Config, error) {
	path := f.configPath
	if path == "" {
		path = e.getenv("GLYPHOXA_CONFIG")
	}
	if path == "" {
		if _, err := os.Stat("config.yaml"); err == nil {
			path = "config.yaml"
		}
	}
	if path == "" {
		cfg := config.Default()
		config.ApplyOverrides(&cfg, e.getenv)
		return cfg, cfg.Validate()
	}
	cfg, err := config.Load(path, e.getenv)
	if err != nil {
		return cfg, err
	}
	if f.dsn != "" {
		cfg.Memory.PostgresDSN = f.dsn
		cfg.SetLiteral("memory.postgres_dsn")
	}
	return cfg, nil
}

// resolveDSN picks the DSN: --dsn, then GLYPHOXA_DSN, then the configuration.
func (f *storeFlags) resolveDSN(e *env, cfg config.Config) (string, error) {
	switch {
	case f.dsn != "":
		return f.dsn, nil
	case e.getenv("GLYPHOXA_DSN") != "":
		return e.getenv("GLYPHOXA_DSN"), nil
	case cfg.Memory.PostgresDSN != "":
		return cfg.Memory.PostgresDSN, nil
	}
	return "", errors.New("no database configured: pass --dsn, set GLYPHOXA_DSN, or set memory.postgres_dsn in the configuration (`make db` starts a local one and prints its DSN)")
}

// openStore loads the configuration and opens (and migrates) the store.
func (f *storeFlags) openStore(ctx context.Context, e *env) (*postgres.Store, config.Config, error) {
	cfg, err := f.loadConfig(e)
	if err != nil {
		return nil, cfg, err
	}
	dsn, err := f.resolveDSN(e, cfg)
	if err != nil {
		return nil, cfg, err
	}
	s, err := postgres.NewStore(ctx, dsn, cfg.Memory.EmbeddingDimensions,
		postgres.WithReviewThreshold(cfg.Memory.ReviewThreshold))
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.ECONNREFUSED) {
			// Nothing listens there: say what to do, not only what failed.
			hint = "; is PostgreSQL running there? (`make db` starts a local one and prints its DSN)"
		}
		return nil, cfg, fmt.Errorf("opening the memory store: %w%s", err, hint)
	}
	return s, cfg, nil
}

// openDoor returns the door readers reach memory through (memory/access),
// its health probe running until ctx ends or the returned close is called.
func openDoor(ctx context.Context, store *postgres.Store, cfg config.Config, log *slog.Logger) (*access.Door, func(), error) {
	rc := cfg.Lifecycle.Reconnect
	d, err := access.New(access.Config{Store: store, Logger: log,
		Probe: reconnect.Backoff{Initial: rc.Initial.Std(), Max: rc.Max.Std()}})
	if err != nil {
		return nil, nil, err
	}
	d.Start(ctx)
	return d, func() { d.Close() }, nil
}

// printf writes to w, ignoring errors (the terminal is gone if it fails).
func printf(w io.Writer, format string, args ...any) { fmt.Fprintf(w, format, args...) }
