// Command glyphoxa runs the glyphoxa Discord bot and its tools.
//
// Run `glyphoxa help` for the list of subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/internal/clock"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &env{stdin: os.Stdin, stdout: safeText{os.Stdout}, stderr: safeText{os.Stderr}, getenv: os.Getenv})
	stop()
	os.Exit(code)
}

// env is what a command may touch of the outside world; tests substitute it.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// discord, when set, is the Discord session `serve` uses instead of
	// connecting with the configured token (tests point it at a fake).
	discord *discordgo.Session
	// clock, when set, is the clock of serve's periodic background work
	// (tests advance a fake one); the system clock otherwise.
	clock clock.Clock
}

// command is one subcommand.
type command struct {
	name    string
	usage   string // arguments, after the name
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"migrate", "[--reembed] [--config FILE] [--dsn DSN]", "create or upgrade the database schema", cmdMigrate},
		{"import", "[--campaign ID] [--language LANG] [--no-process] [--strict] [--batch-timeout D] [--config FILE] [--dsn DSN] FILE.yaml|BUNDLE", "import a campaign file (entities, facts, transcripts), or restore an exported bundle into a new campaign", cmdImport},
		{"export", "--campaign ID [--out FILE[.gz]] [--config FILE] [--dsn DSN]", "write a campaign's whole memory to a bundle that import restores (backup, move)", cmdExport},
		{"inspect", "--campaign ID [--json] [--config FILE] [--dsn DSN]", "show what a campaign's memory holds", cmdInspect},
		{"ledger", "--campaign ID [--as dm|player] [--json] [--config FILE] [--dsn DSN]", "list the promises, debts and handovers heard at the table", cmdLedger},
		{"process", "--campaign ID [--session ID] [--extract] [--config FILE] [--dsn DSN]", "chunk and embed a campaign's sessions for retrieval; --extract also extracts their facts", cmdProcess},
		{"ask", "--campaign ID [--npc ID | --as dm|player|player:USERID] [--as-of SESSION|DATE|IN-WORLD-DATE] [--decompose] [--mode vector|fts|graphrag|ppr|hybrid] [--k N] [--json] [--config FILE] [--dsn DSN] QUESTION", "answer a question from a campaign's memory", cmdAsk},
		{"correct", "--campaign ID [--json] [--llm] [--entities FILE.yaml] [--config FILE] [--dsn DSN] [TEXT]", "restore misheard entity names in transcript text (stdin: one utterance per line)", cmdCorrect},
		{"chat", "--campaign ID --npc ID [--as NAME] [--session ID] [--config FILE] [--dsn DSN]", "talk to an NPC from the terminal", cmdChat},
		{"mcp", "--campaign ID [--http ADDR] [--kg-limit N] [--config FILE] [--dsn DSN]", "serve a campaign's memory to AI agents over MCP (stdio or HTTP)", cmdMCP},
		{"config", "check [--config FILE] [--dsn DSN]", "run every check serve runs on the configuration, connecting to nothing", cmdConfig},
		{"demo", "[--scene FILE.yaml] [--campaign ID [--create] | --file FILE.yaml] [--json] [--out DIR] [--state-dir DIR] [--drain-timeout D] [--config FILE] [--dsn DSN]", "play a scene through the table's turn loop, without Discord, on a virtual clock", cmdDemo},
		{"serve", "[--config FILE] [--dsn DSN] [--listen ADDR] [--console-listen ADDR]", "run the Discord bot with /healthz, /readyz and /metrics", cmdServe},
		{"bench", "[--scale 1k,100k] [--ops TEXT] [--iterations N] [--regenerate] [--json] [--config FILE] [--dsn DSN]", "benchmark the memory store on generated campaigns", cmdBench},
		{"health", "[--url URL] [--ready] [--timeout D] [--config FILE]", "check that a running `glyphoxa serve` is alive or ready (the container's health check)", cmdHealth},
		{"init", "[--non-interactive --token T --guild ID --campaign ID --import FILE.yaml] [--dsn DSN] [--config FILE] [--force]", "guided set-up: write config.yaml, check the Discord token, print the invite URL, bind a server to a campaign, import it", cmdInit},
		{"console", "--campaign ID [--listen ADDR] [--config FILE] [--dsn DSN]", "serve the DM console in the browser and print a one-time sign-in link", cmdConsole},
	}
}

// errUsage marks an error the user fixes by calling the command differently.
var errUsage = errors.New("usage")

func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(e.stdout)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		switch {
		case err == nil:
			return 0
		case errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			fmt.Fprintf(e.stderr, "glyphoxa %s: %v\nusage: glyphoxa %s %s\n", c.name, err, c.name, c.usage)
			return 2
		default:
			fmt.Fprintf(e.stderr, "glyphoxa %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(e.stderr, "glyphoxa: unknown command %q\n\n", args[0])
	printUsage(e.stderr)
	return 2
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "glyphoxa: AI NPCs with lasting memory for tabletop games on Discord.")
	fmt.Fprintln(w, "\nUsage: glyphoxa <command> [flags] [arguments]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun `glyphoxa <command> -h` for what a command does, examples and its flags.")
}

// usagef returns a usage error.
func usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errUsage, fmt.Sprintf(format, args...))
}
