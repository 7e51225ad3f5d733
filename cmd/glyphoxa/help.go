package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// commandExamples are the examples each subcommand's -h prints.
func commandExamples(name string) []string {
	switch name {
	case "migrate":
		return []string{"glyphoxa migrate", "glyphoxa migrate --reembed   # after changing memory.embedding_dimensions"}
	case "import":
		return []string{"glyphoxa import testdata/campaigns/ironhold-saga.yaml",
			"docker compose run --rm glyphoxa import /campaigns/my-campaign.yaml"}
	case "export":
		return []string{"glyphoxa export --campaign ironhold-saga --out ironhold.bundle.gz",
			"glyphoxa import --campaign ironhold-copy ironhold.bundle.gz   # restore it into a new campaign"}
	case "inspect":
		return []string{"glyphoxa inspect --campaign ironhold-saga", "glyphoxa inspect --campaign ironhold-saga --json | jq .Counts"}
	case "ledger":
		return []string{"glyphoxa ledger --campaign ironhold-saga", "glyphoxa ledger --campaign ironhold-saga --as player --json"}
	case "process":
		return []string{"glyphoxa process --campaign ironhold-saga", "glyphoxa process --campaign ironhold-saga --session s2"}
	case "ask":
		return []string{`glyphoxa ask --campaign ironhold-saga "Where did the Ashen Circle take the steel?"`,
			`glyphoxa ask --campaign ironhold-saga --npc brannoc --mode hybrid "Where was the lost cart headed?"   # what Brannoc heard`}
	case "correct":
		return []string{`glyphoxa correct --campaign ironhold-saga "grim jaw sent us to the tower of whispers"`,
			`echo "a lara knows bran knock" | glyphoxa correct --entities testdata/campaigns/ironhold-saga.yaml`}
	case "chat":
		return []string{"glyphoxa chat --campaign ironhold-saga --npc grimjaw"}
	case "mcp":
		return []string{"glyphoxa mcp --campaign ironhold-saga   # stdio, for a local AI agent",
			"export GLYPHOXA_MCP_TOKEN=$(openssl rand -hex 24)   # a token of at least 16 characters; clients send it as a Bearer token",
			"glyphoxa mcp --campaign ironhold-saga --http 127.0.0.1:9466   # 9465 is the DM console's port"}
	case "config check", "config":
		return []string{"glyphoxa config check", "glyphoxa config check --config /etc/glyphoxa/config.yaml"}
	case "demo":
		return []string{"make demo", "glyphoxa demo --out /tmp/demo-out",
			"glyphoxa demo --scene testdata/scenes/long-night.yaml --json | jq -c '{at, speaker, addressee, reply}'",
			"glyphoxa demo --campaign my-campaign --scene my-scene.yaml"}
	case "serve":
		return []string{"glyphoxa serve --config config.yaml", "docker compose up -d"}
	case "bench":
		return []string{"glyphoxa bench --scale 1k", "make bench"}
	case "health":
		return []string{"glyphoxa health", "glyphoxa health --url http://127.0.0.1:9464/readyz"}
	case "console":
		return []string{"glyphoxa console --campaign ironhold-saga   # prints a one-time sign-in link",
			"glyphoxa console --campaign ironhold-saga --listen 127.0.0.1:9470"}
	case "init":
		return []string{"glyphoxa init",
			"DISCORD_TOKEN=… glyphoxa init --non-interactive --guild 123456789012345678 --import testdata/campaigns/ironhold-saga.yaml",
			`docker compose run --rm --user "$(id -u):$(id -g)" init`}
	}
	return nil
}

// printCommandHelp writes a subcommand's help: what it does, how to call
// it, examples, and its flags.
func printCommandHelp(w io.Writer, fs *flag.FlagSet, name string) {
	cmdName, _, _ := strings.Cut(name, " ")
	for _, c := range commands() {
		if c.name != cmdName {
			continue
		}
		fmt.Fprintf(w, "glyphoxa %s: %s.\n\nUsage: glyphoxa %s %s\n", c.name, c.summary, c.name, c.usage)
	}
	if ex := commandExamples(name); len(ex) > 0 {
		fmt.Fprintf(w, "\nExamples:\n")
		for _, x := range ex {
			fmt.Fprintf(w, "  %s\n", x)
		}
	}
	fmt.Fprintf(w, "\nFlags:\n")
	fs.PrintDefaults()
}

// openCampaign opens a campaign that exists for the DM, through the door
// readers use (memory/access). Commands that read memory use it, so that a
// misspelt id is an error listing the campaigns there are, never a new
// empty campaign.
func openCampaign(ctx context.Context, store *postgres.Store, id string) (*access.Campaign, error) {
	return openCampaignAs(ctx, store, id, memory.DMViewer())
}

// openCampaignAs is openCampaign for viewer v. The door's probe is not
// started: a one-shot command fails at once in an outage.
func openCampaignAs(ctx context.Context, store *postgres.Store, id string, v memory.Viewer) (*access.Campaign, error) {
	if err := checkCampaign(ctx, store, id); err != nil {
		return nil, err
	}
	door, err := access.New(access.Config{Store: store})
	if err != nil {
		return nil, err
	}
	return door.Open(ctx, id, v)
}

// checkCampaign returns an error naming the known campaigns when id is not
// one of them.
func checkCampaign(ctx context.Context, store *postgres.Store, id string) error {
	known, err := store.Campaigns(ctx)
	if err != nil {
		return err
	}
	if slices.Contains(known, id) {
		return nil
	}
	if len(known) == 0 {
		return fmt.Errorf("campaign %q does not exist: the database has no campaigns yet (create one with `glyphoxa import FILE.yaml`)", id)
	}
	msg := fmt.Sprintf("campaign %q does not exist; known campaigns: %s", id, strings.Join(known, ", "))
	if s := closest(id, known); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return fmt.Errorf("%s", msg)
}

// closest returns the candidate within a third of id's length in edits, if
// one is.
func closest(id string, candidates []string) string {
	best, bestD := "", len(id)/3+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(id), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur := make([]int, len(rb)+1)
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			sub := prev[j-1]
			if ra[i-1] != rb[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(rb)]
}
