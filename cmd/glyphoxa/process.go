package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"github.com/glyphoxa/glyphoxa/cmd/glyphoxa/internal/config"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// cmdProcess chunks and embeds a campaign's sessions, replacing earlier
// chunks; with --extract it also extracts their entities and facts.
func cmdProcess(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet("process", e)
	var sf storeFlags
	sf.register(fs)
	campaign := fs.String("campaign", "", "campaign id")
	session := fs.String("session", "", "process only this session (default: all)")
	extract := fs.Bool("extract", false, "also extract entities and facts (needs providers.llm): every ended session not extracted yet, "+
		"resuming interrupted ones; with --session, that session again (the model's earlier answers are reused, nothing is duplicated)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *campaign == "" {
		return usagef("--campaign is required")
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	store, cfg, err := sf.openStore(ctx, e)
	if err != nil {
		return err
	}
	defer store.Close()
	if err := checkCampaign(ctx, store, *campaign); err != nil {
		return err
	}
	if *extract && !cfg.Providers.LLM.Configured() {
		return errors.New("--extract needs an LLM endpoint to read the transcripts: set providers.llm (or GLYPHOXA_LLM_BASE_URL and GLYPHOXA_LLM_MODEL)")
	}
	var sessions []string
	if *session != "" {
		camp, err := store.Campaign(ctx, *campaign)
		if err != nil {
			return err
		}
		if _, err := camp.Sessions().Session(ctx, *session); err != nil {
			return err
		}
		sessions = append(sessions, *session)
	}
	rep, err := processSessions(ctx, store, cfg, *campaign, sessions...)
	if err != nil {
		return err
	}
	printf(e.stdout, "processed campaign %q: %d sessions, %d chunks (%d old chunks removed)\n",
		*campaign, rep.Sessions, rep.Chunks, rep.Removed)
	if !*extract {
		return nil
	}
	return extractSessions(ctx, e, store, cfg, *campaign, *session)
}

// extractSessions extracts the facts of one session (again), or of every
// ended session whose extraction is not done; progress goes to standard
// error.
func extractSessions(ctx context.Context, e *env, store *postgres.Store, cfg config.Config, campaign, session string) error {
	camp, err := store.Campaign(ctx, campaign)
	if err != nil {
		return err
	}
	p, progress, err := newExtraction(store, cfg, camp, nil, slog.New(slog.NewTextHandler(io.Discard, nil)), func(s postsession.Step) {
		how := "extracted"
		if s.Cached {
			how = "reused the model's earlier answer"
		}
		printf(e.stderr, "session %s: window %d/%d %s\n", s.SessionID, s.Window, s.Windows, how)
	})
	if err != nil {
		return err
	}
	var reps []postsession.Report
	if session != "" {
		if err := progress.ResetExtraction(ctx, session); err != nil {
			return err
		}
		r, err := p.Run(ctx, session)
		if err != nil {
			return err
		}
		reps = append(reps, r)
	} else if reps, err = p.RunUnfinished(ctx); err != nil {
		return err
	}
	for _, r := range reps {
		printf(e.stdout, "extracted session %q: %d windows (%d reused), %d entities new, %d matched, %d facts canon, %d pending review, %d conflicts, %d rejected\n",
			r.SessionID, r.Windows, r.Cached, r.EntitiesCreated, r.EntitiesResolved, r.Accepted, r.Pending, r.Conflicts, r.Rejected)
	}
	if len(reps) == 0 {
		printf(e.stdout, "no session of campaign %q is waiting for extraction\n", campaign)
	}
	return nil
}

// newExtraction builds the processor that extracts a campaign's facts
// through the configured LLM, with its progress in the database; with l2
// it also chunks the sessions it processes (the L2 stage).
func newExtraction(store *postgres.Store, cfg config.Config, camp *postgres.Campaign, l2 postsession.L2, log *slog.Logger, onStep func(postsession.Step)) (*postsession.Processor, *postsession.StoredProgress, error) {
	if !cfg.Providers.LLM.Configured() {
		return nil, nil, errors.New("fact extraction needs providers.llm")
	}
	client, err := newLLM(cfg, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("fact extraction of campaign %q: %w", camp.ID(), err)
	}
	progress := postsession.NewStoredProgress(camp.Processing())
	p, err := postsession.New(postsession.Config{L2: l2, Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: ledger.Extractor{Next: postsession.NewOpenAIExtractor(client, client.Model()), Ledger: camp.Graph()},
		Progress:  progress, Logger: log, OnStep: onStep})
	if err != nil {
		return nil, nil, fmt.Errorf("fact extraction of campaign %q: %w", camp.ID(), err)
	}
	return p, progress, nil
}

// resumeExtraction finishes, for each campaign, the session processing a
// crash or shutdown cut short, and processes again the sessions that
// received lines after they were processed (an outage spool replayed
// late): chunks and facts, as at the end of a session (serve runs it at
// start-up, after replaying its spools). Without an LLM only the latter
// are processed again, as a session's end does then: chunks and the
// ledger's explicit forms.
func resumeExtraction(ctx context.Context, store *postgres.Store, cfg config.Config, campaigns []string, log *slog.Logger) error {
	emb, err := newEmbedder(cfg)
	if err != nil {
		return err
	}
	procs := map[string]*postsession.Processor{}
	var errs []error
	for _, id := range campaigns {
		camp, err := store.Campaign(ctx, id)
		if err != nil {
			return err
		}
		l2 := postsession.L2Func(func(ctx context.Context, sessionID string) error {
			_, err := chunk.Process(ctx, camp, emb, chunk.Options{}, sessionID)
			return err
		})
		if !cfg.Providers.LLM.Configured() {
			if err := processLate(ctx, camp, l2, log); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		p, _, err := newExtraction(store, cfg, camp, l2, log, nil)
		if err != nil {
			return err
		}
		procs[id] = p
	}
	return errors.Join(append(errs, postsession.ResumePending(ctx, log, procs))...)
}

// processLate processes again, without an LLM, the ended sessions of camp
// that received lines after they were processed (postgres.LateLinesStage):
// their chunks, and the ledger's explicit forms. Each failure is logged.
func processLate(ctx context.Context, camp *postgres.Campaign, l2 postsession.L2, log *slog.Logger) error {
	p, err := postsession.New(postsession.Config{L2: l2, Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: ledger.Extractor{Ledger: camp.Graph()}, Progress: postsession.NewStoredProgress(camp.Processing()), Logger: log})
	if err != nil {
		return err
	}
	ids, err := camp.Processing().LateOwed(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, id := range ids {
		if _, err := p.Run(ctx, id); err != nil {
			log.Error("processing again a session that received lines after it was processed", "campaign", camp.ID(), "session", id, "err", err)
			errs = append(errs, fmt.Errorf("campaign %q, session %q: %w", camp.ID(), id, err))
		}
	}
	return errors.Join(errs...)
}
