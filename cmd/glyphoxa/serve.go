package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/metrics"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/lease"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/mcpserver"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/table"
)

// cmdServe runs the Discord bot with its HTTP endpoints until interrupted.
func cmdServe(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("serve", e)
	var sf storeFlags
	sf.register(fs)
	listen := fs.String("listen", "", "address of /healthz, /readyz, /metrics and /mcp/<campaign> (default server.listen)")
	consoleListen := fs.String("console-listen", "", "address of the DM console (default console.listen; a container listens on 0.0.0.0)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := sf.loadConfig(e)
	if err != nil {
		return err
	}
	setListen(&cfg, *listen)
	setConsoleListen(&cfg, *consoleListen)
	// Every check of the configuration, the same config check runs.
	if err := cfg.Preflight(); err != nil {
		return err
	}
	logger, err := newLogger(e.stderr, cfg.Log)
	if err != nil {
		return err
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	setListen(&cfg, *listen)
	setConsoleListen(&cfg, *consoleListen)

	if err := applyPersonas(ctx, store, cfg, logger); err != nil {
		return err
	}
	// Claims among the processes sharing the database: this process's
	// shard, its guilds, the campaigns' background work.
	leases, err := lease.New(lease.Config{DB: store.Pool(), Owner: lease.NewOwner(), TTL: cfg.Lifecycle.LeaseTime.Std()})
	if err != nil {
		return err
	}
	logger = logger.With("process", leases.Owner())
	ctx, stopServe := context.WithCancelCause(ctx)
	defer stopServe(nil)
	var shardLost atomic.Pointer[error] // why serve stops by itself
	if cfg.Discord.ShardCount > 1 {
		name := shardClaim(cfg.Discord.ShardID, cfg.Discord.ShardCount)
		ls, err := leases.AcquireWait(ctx, name, "")
		if err != nil {
			return fmt.Errorf("discord.shard_id %d of discord.shard_count %d: %w", cfg.Discord.ShardID, cfg.Discord.ShardCount, err)
		}
		shard := leases.Keep(ls, func(err error) {
			err = fmt.Errorf("discord shard %d of %d: %w", cfg.Discord.ShardID, cfg.Discord.ShardCount, err)
			shardLost.Store(&err)
			stopServe(err)
		})
		defer func() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_ = shard.Release(rctx, false)
		}()
	}
	door, closeDoor, err := openDoor(ctx, store, cfg, logger)
	if err != nil {
		return err
	}
	defer closeDoor()
	m := metrics.New()
	deps := bot.Deps{Door: door}
	if cfg.Providers.LLM.Configured() {
		client, err := newLLM(cfg, countTokens(m))
		if err != nil {
			return err
		}
		deps.RecapLLM = client
	} else {
		logger.Warn("no LLM configured (providers.llm). " + npc.OfflineBehaviour)
	}
	bcfg := bot.Config{Token: cfg.Discord.Token, ShardID: cfg.Discord.ShardID, ShardCount: cfg.Discord.ShardCount,
		ConsoleURL: cfg.Console.PublicURL, Logger: logger}
	var bound []string
	for _, g := range cfg.Discord.Guilds {
		bcfg.Guilds = append(bcfg.Guilds, bot.Guild{ID: g.GuildID, Campaign: g.Campaign, TextChannelID: g.TextChannelID,
			DMRoleIDs: g.DMRoleIDs, DMUserIDs: g.DMUserIDs, NarratorNPC: g.NarratorNPC})
		bound = append(bound, g.Campaign)
	}
	if err := provision(ctx, door, bound); err != nil {
		return err
	}
	sess := e.discord
	if sess == nil {
		if sess, err = discordgo.New("Bot " + cfg.Discord.Token); err != nil {
			return fmt.Errorf("discord: %w", err)
		}
		defer sess.Close()
	}
	providers, release, err := tableProviders(cfg, logger, nil, countTokens(m))
	if release != nil {
		defer release()
	}
	if err != nil {
		return err
	}
	// A forget-me and a span declared non-canon rebuild the chunks of the
	// sessions they took lines out of.
	deps.Reprocess = rechunk(door, providers.Embedder)
	claims := newGuildClaims(leases, nil, bcfg.Guilds, cfg.Discord.ShardID, cfg.Discord.ShardCount, logger)
	deps.Claims = claims
	voice, err := voiceManager(door, cfg, providers, sess, m, claims.owns, claims.confirm, claims.holder, logger)
	if err != nil {
		return err
	}
	deps.Voice = voice
	b, err := bot.New(bcfg, deps, bot.WithSession(sess))
	if err != nil {
		return err
	}
	claims.attach(b)
	var connected atomic.Bool
	b.Session().AddHandler(func(*discordgo.Session, *discordgo.Ready) { connected.Store(true) })
	b.Session().AddHandler(func(*discordgo.Session, *discordgo.Disconnect) { connected.Store(false) })
	b.Session().AddHandler(func(*discordgo.Session, *discordgo.Resumed) { connected.Store(true) })

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.Handle("GET /readyz", readiness(door, connected.Load))
	if _, err := mountMCP(mux, door, cfg, logger); err != nil {
		return err
	}
	// The kg_* view of every campaign served over MCP: its token budget
	// and the compactor that keeps it under it.
	bgCtx, stopBackground := context.WithCancel(ctx)
	var background sync.WaitGroup
	defer func() { stopBackground(); background.Wait() }()
	compacting := map[string]bool{}
	for _, g := range cfg.Discord.Guilds {
		if g.MCPToken == "" && g.MCPDMToken == "" && len(g.MCPPlayerTokens) == 0 && cfg.Server.MCPToken == "" && cfg.Server.MCPDMToken == "" ||
			compacting[g.Campaign] {
			continue
		}
		compacting[g.Campaign] = true
		if g.KGTokenLimit > 0 {
			camp, err := door.Open(ctx, g.Campaign, memory.DMViewer())
			if err != nil {
				return err
			}
			if err := camp.SetKGLimit(ctx, g.KGTokenLimit); err != nil {
				return fmt.Errorf("discord.guilds: kg_token_limit of campaign %q: %w", g.Campaign, err)
			}
		}
		// One process compacts a campaign: whichever holds its claim.
		background.Add(1)
		go func() {
			defer background.Done()
			claimed(bgCtx, leases, nil, backgroundClaimPrefix+g.Campaign, false, logger, func(ctx context.Context) {
				comp := &mcpserver.Compactor{Door: door, Campaign: g.Campaign, Logger: logger}
				if err := comp.Start(ctx); err != nil {
					logger.Error("starting the compactor", "campaign", g.Campaign, "err", err)
					<-ctx.Done()
					return
				}
				<-ctx.Done()
				comp.Close()
			})
		}()
	}
	// Finish the session processing (extraction) a crash or a shutdown cut
	// short, in the background: one process per campaign, by its claim.
	var campaigns []string
	for _, g := range cfg.Discord.Guilds {
		if !slices.Contains(campaigns, g.Campaign) {
			campaigns = append(campaigns, g.Campaign)
		}
	}
	// Lines an earlier run spooled during an outage and did not store (it
	// was killed, or the database stayed down past its drain timeout)
	// reach the session log now, before any session starts here and
	// before the extraction of a session ended meanwhile resumes.
	replaySpools(ctx, door, campaigns, cfg.Lifecycle.SpoolDir, cfg.Lifecycle.DrainTimeout.Std(), logger)
	// The process holding a campaign's claim does it at once, and again
	// every owedSweepEvery while it holds it: lines replayed into a
	// processed session while processes run (another's spool, a line
	// stored late) and chunks owed are taken without a restart; another
	// process takes the claim over when this one stops or dies.
	for _, c := range campaigns {
		background.Add(1)
		go func() {
			defer background.Done()
			claimed(bgCtx, leases, e.clock, extractionClaimPrefix+c, false, logger, func(ctx context.Context) {
				var retry owedRetry // this claim's: a new holder tries at once
				sweepOwed(ctx, e.clock, owedSweepEvery, func(ctx context.Context) {
					// Chunks a forget-me or a non-canon span deleted, which the
					// process that did it did not rebuild (it died first).
					rechunkOwed(ctx, door, providers.Embedder, c, logger)
					now := clock.OrReal(e.clock).Now()
					if retry.due(now) {
						// ResumePending logs each failure.
						retry.done(now, resumeExtraction(ctx, store, cfg, []string{c}, logger), owedSweepEvery)
					}
				})
			})
		}()
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return listenError(cfg, "server.listen", cfg.Server.Listen, err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	httpErr := make(chan error, 1)
	go func() { httpErr <- hs.Serve(ln) }()
	logger.Info("serving health and metrics", "addr", cfg.Show("server.listen", "http://"+ln.Addr().String()), "guilds", len(bcfg.Guilds))

	stopConsole := startConsole(door, cfg, logger, bcfg.Guilds, voice)
	stopLive := publishLive(ctx, door, campaigns, voice, leases.Owner(), "serve", logger)

	var runErr error
	takeover, stopTakeover := context.WithCancel(ctx)
	tookOver := make(chan struct{})
	if err := openDiscord(ctx, b.Open, cfg.Lifecycle.Reconnect, nil, rand.Float64, logger); err != nil {
		runErr = err
		close(tookOver)
	} else {
		go func() { defer close(tookOver); claims.run(takeover) }()
		select {
		case <-ctx.Done():
			if err := shardLost.Load(); err != nil {
				runErr = *err
			}
			logger.Info("shutting down", "timeout", cfg.Lifecycle.ShutdownTimeout.Std(), "drain_timeout", cfg.Lifecycle.DrainTimeout.Std())
		case err := <-httpErr:
			runErr = fmt.Errorf("the HTTP server stopped: %w", err)
		}
	}
	stopTakeover()
	<-tookOver

	// Ending a voice session waits up to lifecycle.drain_timeout for the
	// database to take the outage spool; the shutdown budget covers both.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cfg.Lifecycle.ShutdownTimeout.Std()+cfg.Lifecycle.DrainTimeout.Std())
	defer cancel()
	var errs []error
	if err := b.Close(sctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the bot: %w", err))
	}
	if err := voice.Close(sctx); err != nil {
		for _, pe := range spoolWaiting(err) {
			fmt.Fprintf(e.stderr, "glyphoxa serve: %d lines of a voice session wait in the outage spool %s: the database did not take them within lifecycle.drain_timeout (%s); they stay there and the next glyphoxa serve or demo on the same spool_dir replays them\n",
				pe.Lines, pe.Dir, cfg.Lifecycle.DrainTimeout.Std())
		}
		errs = append(errs, fmt.Errorf("stopping voice sessions: %w", err))
	}
	stopLive()
	if err := hs.Shutdown(sctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the HTTP server: %w", err))
	}
	if err := stopConsole(sctx); err != nil {
		errs = append(errs, fmt.Errorf("stopping the DM console: %w", err))
	}
	if err := claims.close(sctx); err != nil {
		errs = append(errs, fmt.Errorf("giving the guilds' claims up: %w", err))
	}
	return errors.Join(append([]error{runErr}, errs...)...)
}

// owedSweepEvery is how often serve looks again for a campaign's owed
// processing (sweepOwed).
const owedSweepEvery = time.Minute

// owedRetryMax is the longest the sweep waits before it tries a failing
// extraction again.
const owedRetryMax = time.Hour

// owedRetry spaces out the sweep's tries at a campaign's owed extraction
// while it fails: a session whose extraction fails every time (a model
// whose answer to one of its windows is never the schema, the same answer
// each time at temperature 0) was otherwise sent to the model, and billed,
// on every sweep, 1,440 times a day. After a failure the next try waits a
// sweep period, doubled after each further failure up to owedRetryMax; a
// success tries again on the next sweep. While it waits, lines stored late
// in the campaign's other sessions wait with it (at most owedRetryMax).
// The zero value tries at once; it belongs to one sweep's goroutine.
type owedRetry struct {
	fails int
	next  time.Time
}

// due reports whether a try is due at now.
func (r *owedRetry) due(now time.Time) bool { return !now.Before(r.next) }

// done records a try made at now that ended with err.
func (r *owedRetry) done(now time.Time, err error, period time.Duration) {
	if err == nil {
		*r = owedRetry{}
		return
	}
	r.fails++
	r.next = now.Add(reconnect.Backoff{Initial: period, Max: owedRetryMax, Jitter: -1}.Delay(r.fails, 0.5))
}

// sweepOwed runs sweep at once and then every every (on clk) until ctx
// ends: serve's work owed by a campaign's sessions (processing cut short
// or owed again for lines stored late, chunks to rebuild), done by the
// process that holds the campaign's claim. A run of a session another
// process is processing waits for it (postgres.Processing.Hold) and then
// finds it done.
func sweepOwed(ctx context.Context, clk clock.Clock, every time.Duration, sweep func(ctx context.Context)) {
	clk = clock.OrReal(clk)
	for ctx.Err() == nil {
		sweep(ctx)
		t := clk.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C():
		}
	}
}

// replaySpools replays the outage spool each campaign's sessions left
// under spoolDir (table.ReplaySpool). What the database does not take
// within timeout, and a spool another process has open, stay for later (the
// campaign's next session here replays it) and are logged.
func replaySpools(ctx context.Context, door *access.Door, campaigns []string, spoolDir string, timeout time.Duration, log *slog.Logger) {
	for _, id := range campaigns {
		camp, err := door.Open(ctx, id, memory.DMViewer())
		if err == nil {
			err = table.ReplaySpool(ctx, camp, spoolDir, timeout, log)
		}
		if err != nil {
			log.Warn("the outage spool an earlier run left was not replayed; the campaign's next session replays it", "campaign", id, "err", err)
		}
	}
}

// spoolWaiting returns the outage spools err says were left with lines
// waiting for the database: every *guard.PendingError in its tree, once
// (a session's error can be reported twice, by End and by Finish).
func spoolWaiting(err error) []*guard.PendingError {
	var out []*guard.PendingError
	var walk func(error)
	walk = func(err error) {
		switch u := err.(type) {
		case nil:
		case *guard.PendingError:
			if !slices.Contains(out, u) {
				out = append(out, u)
			}
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// countTokens feeds the LLM token counter of /metrics.
func countTokens(m *metrics.Metrics) func(llm.Usage) {
	return func(u llm.Usage) { m.AddTokens(u.PromptTokens, u.CompletionTokens) }
}

// readiness answers 200 when the database answers and the bot is connected
// to Discord, and 503 naming what is not ready otherwise. Its ping goes
// through the memory door, so a failed one degrades the door (readers fail
// fast) and a successful one opens it again.
func readiness(door *access.Door, connected func() bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		var problems []string
		if err := door.Ping(ctx); err != nil {
			problems = append(problems, "database: "+err.Error())
		}
		if !connected() {
			problems = append(problems, "discord: not connected")
		}
		if len(problems) > 0 {
			http.Error(w, strings.Join(problems, "\n"), http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
}

// setListen applies serve's --listen flag (if set) to server.listen.
func setListen(cfg *config.Config, listen string) {
	if listen != "" {
		cfg.Server.Listen = listen
		cfg.SetLiteral("server.listen")
	}
}

// setConsoleListen applies serve's --console-listen flag (if set) to
// console.listen.
func setConsoleListen(cfg *config.Config, listen string) {
	if listen != "" {
		cfg.Console.Listen = listen
		cfg.SetLiteral("console.listen")
	}
}

// listenError is the error of a listener that could not open at addr, the
// value of key: it names the key and, when the address came from the
// environment, its variable instead of the address.
func listenError(cfg config.Config, key, addr string, err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		err = op.Err // net's message repeats the address
	}
	if len(cfg.Env(key)) > 0 {
		return fmt.Errorf("%s: cannot listen: %w", cfg.Key(key), err)
	}
	return fmt.Errorf("%s %q: cannot listen: %w", key, addr, err)
}

// newLogger returns the logger log.level and log.format ask for
// (config.Validate has checked them; the messages do not repeat values,
// which may come from the environment).
func newLogger(w io.Writer, c config.Log) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.Level)); err != nil {
		return nil, errors.New("log.level: want debug, info, warn or error")
	}
	opts := &slog.HandlerOptions{Level: level}
	switch c.Format {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, errors.New("log.format: want text or json")
}

// applyPersonas writes the NPCs of the configuration into their campaigns'
// knowledge graphs: a new entity, or the persona's keys merged into the
// existing one.
func applyPersonas(ctx context.Context, store *postgres.Store, cfg config.Config, log *slog.Logger) error {
	for _, p := range cfg.NPCs {
		campaigns := []string{p.Campaign}
		if p.Campaign == "" {
			campaigns = campaigns[:0]
			for _, g := range cfg.Discord.Guilds {
				campaigns = append(campaigns, g.Campaign)
			}
		}
		for _, c := range campaigns {
			err := store.InTx(ctx, c, func(camp *postgres.Campaign) error {
				e := p.Entity()
				g := camp.Graph()
				if _, err := g.Entity(ctx, p.ID); errors.Is(err, memory.ErrNotFound) {
					return g.UpsertEntity(ctx, e)
				} else if err != nil {
					return err
				}
				_, err := g.UpdateEntity(ctx, p.ID, memory.EntityUpdate{Name: &e.Name, Type: &e.Type, Aliases: &e.Aliases,
					SetAttributes: e.Attributes})
				return err
			})
			if err != nil {
				return fmt.Errorf("writing NPC %q (npcs) into campaign %q: %w", p.ID, c, err)
			}
			log.Info("NPC persona written", "npc", p.ID, "campaign", c)
		}
	}
	return nil
}

// openDiscord connects the bot, retrying with the reconnect backoff
// (lifecycle.reconnect) while Discord cannot be reached, and saying so in
// the logs; it gives up after lifecycle.reconnect.attempts tries (none:
// until ctx ends).
func openDiscord(ctx context.Context, open func(context.Context) error, rc config.Reconnect, clk clock.Clock, rnd func() float64, log *slog.Logger) error {
	clk = clock.OrReal(clk)
	bo := reconnect.Backoff{Initial: rc.Initial.Std(), Max: rc.Max.Std()}
	for n := 1; ; n++ {
		err := open(ctx)
		if err == nil {
			if n > 1 {
				log.Info("connected to Discord after retrying", "attempts", n)
			}
			return nil
		}
		if rc.Attempts > 0 && n >= rc.Attempts {
			return fmt.Errorf("%w (gave up after %d attempts, lifecycle.reconnect.attempts)", err, n)
		}
		d := bo.Delay(n, rnd())
		log.Warn("cannot reach Discord; retrying with backoff", "attempt", n, "retry_in", d, "err", err)
		t := clk.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (stopped while retrying)", err)
		case <-t.C():
		}
	}
}
