package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/console"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// cmdConsole serves one campaign's DM console without Discord and prints a
// one-time sign-in link.
func cmdConsole(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("console", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	listen := fs.String("listen", "", "address of the console (default console.listen, 127.0.0.1:9465)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	// The same check as every command that reads a campaign: a misspelt
	// id names the nearest one.
	if err := checkCampaign(ctx, store, *campaign); err != nil {
		return err
	}
	if *listen != "" {
		cfg.Console.Listen = *listen
		cfg.SetLiteral("console.listen")
	}
	if cfg.Console.Listen == "" {
		cfg.Console.Listen = config.Default().Console.Listen
	}
	logger, err := newLogger(e.stderr, cfg.Log)
	if err != nil {
		return err
	}
	g := bot.Guild{Campaign: *campaign}
	for _, x := range cfg.Discord.Guilds {
		if x.Campaign == *campaign {
			g = bot.Guild{ID: x.GuildID, Campaign: x.Campaign, DMRoleIDs: x.DMRoleIDs, DMUserIDs: x.DMUserIDs}
			break
		}
	}
	door, closeDoor, err := openDoor(ctx, store, cfg, logger)
	if err != nil {
		return err
	}
	defer closeDoor()
	srv, err := newConsole(door, cfg, logger, []bot.Guild{g}, nil)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Console.Listen)
	if err != nil {
		return listenError(cfg, "console.listen", cfg.Console.Listen, err)
	}
	link, err := srv.OneTimeLink(*campaign)
	if err != nil {
		ln.Close()
		return err
	}
	base := cfg.Console.PublicURL
	if base == "" {
		// On every interface (in a container, its port published on the
		// host's loopback), the link names the loopback.
		if base, err = localURL(ln.Addr().String(), ""); err != nil {
			ln.Close()
			return err
		}
	}
	printf(e.stdout, "The DM console of %s is at %s\nSign in as the DM (this link works once, for 15 minutes):\n  %s%s\n",
		*campaign, base, base, link)
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		return fmt.Errorf("the console stopped: %w", err)
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("stopping the console: %w", err)
	}
	<-errc
	return nil
}

// newConsole builds the console for campaigns from the configuration; its
// pages read through door.
func newConsole(door *access.Door, cfg config.Config, logger *slog.Logger, campaigns []bot.Guild, live console.LiveSource) (*console.Server, error) {
	asker, err := newAsker(door, cfg)
	if err != nil {
		return nil, err
	}
	emb, err := newEmbedder(cfg)
	if err != nil {
		return nil, err
	}
	return console.New(console.Config{
		Door:      door,
		Campaigns: campaigns,
		OAuth:     console.OAuth{ClientID: cfg.Console.ClientID, ClientSecret: cfg.Console.ClientSecret},
		PublicURL: cfg.Console.PublicURL,
		Asker:     asker,
		Live:      live,
		Export:    door,
		Reprocess: rechunk(door, emb),
		Logger:    logger,
	})
}

// startConsole serves the console of the bot's campaigns on console.listen
// for `glyphoxa serve`. A console that cannot listen is logged, not fatal:
// the bot matters more. The returned function stops it.
func startConsole(door *access.Door, cfg config.Config, logger *slog.Logger, guilds []bot.Guild, live console.LiveSource) func(context.Context) error {
	off := func(context.Context) error { return nil }
	if cfg.Console.Listen == "" {
		return off
	}
	var campaigns []bot.Guild
	seen := map[string]bool{}
	for _, g := range guilds {
		if !seen[g.Campaign] {
			seen[g.Campaign] = true
			campaigns = append(campaigns, g)
		}
	}
	srv, err := newConsole(door, cfg, logger, campaigns, live)
	if err != nil {
		logger.Error("the DM console is off", "err", err)
		return off
	}
	ln, err := net.Listen("tcp", cfg.Console.Listen)
	if err != nil {
		logger.Error("the DM console is off", "err", listenError(cfg, "console.listen", cfg.Console.Listen, err))
		return off
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("the DM console stopped", "err", err)
		}
	}()
	logger.Info("serving the DM console", "addr", cfg.Show("console.listen", "http://"+ln.Addr().String()))
	return func(ctx context.Context) error {
		err := hs.Shutdown(ctx)
		<-done
		return err
	}
}

// publishLive reports the live status of the tables this process runs for
// campaigns to the database, so that a console in any process on it shows
// them (see console.LivePublisher). kind names the command ("serve",
// "demo"). The returned function stops the reports and withdraws them.
func publishLive(ctx context.Context, door *access.Door, campaigns []string, source console.LiveSource, owner, kind string, logger *slog.Logger) func() {
	var handles []*access.Campaign
	for _, id := range campaigns {
		c, err := door.Open(ctx, id, memory.DMViewer())
		if err != nil {
			logger.Warn("consoles in other processes will not see this table", "campaign", id, "err", err)
			continue
		}
		handles = append(handles, c)
	}
	if len(handles) == 0 {
		return func() {}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "this host"
	}
	p := &console.LivePublisher{Source: source, Campaigns: handles, Owner: owner,
		Describe: fmt.Sprintf("glyphoxa %s on %s (pid %d)", kind, host, os.Getpid()), Logger: logger}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	return func() { cancel(); <-done }
}
