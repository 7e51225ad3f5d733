package postsession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
)

// interrupter is the optional capability of a Progress that tells sessions
// whose processing began and did not finish from those never processed.
type interrupter interface {
	Interrupted(ctx context.Context) ([]string, error)
}

// RunInterrupted finishes the sessions whose processing an earlier run
// began and did not end (killed, shut down, cut off by an outage or an LLM
// failure), oldest first. It goes on past a failing session and returns
// every error. Sessions never processed are left alone: that is for
// `glyphoxa process --extract`. A Progress without the capability to tell
// them apart resumes every unfinished session.
func (p *Processor) RunInterrupted(ctx context.Context) ([]Report, error) {
	var ids []string
	var err error
	if in, ok := p.cfg.Progress.(interrupter); ok {
		ids, err = in.Interrupted(ctx)
	} else {
		ids, err = p.cfg.Progress.Unfinished(ctx)
	}
	if err != nil {
		return nil, err
	}
	var reps []Report
	var errs []error
	for _, id := range ids {
		r, err := p.Run(ctx, id)
		reps = append(reps, r)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return reps, errors.Join(errs...)
}

// Owe records that session sessionID is to be processed: once it is
// ended, RunInterrupted finishes it like a session whose processing was
// cut short. A session records it when it starts (lifecycle/session), so
// that an end stored only later (it waited in the outage spool while
// PostgreSQL was down, and End could not start the processing) is
// processed by the next run's resumption. It does not change the progress
// of a session processed already in part.
func (p *Processor) Owe(ctx context.Context, sessionID string) error {
	if _, done, err := p.cfg.Progress.Load(ctx, sessionID, StageStarted); err != nil || done {
		return err
	}
	return p.cfg.Progress.Save(ctx, sessionID, StageStarted, 0, false)
}

// ResumePending resumes, for each campaign's processor, the processing of
// the sessions an earlier run left unfinished (see RunInterrupted). serve
// calls it at start-up, in a goroutine it owns and stops by cancelling ctx.
// It logs what it resumed and returns every error.
func ResumePending(ctx context.Context, log *slog.Logger, procs map[string]*Processor) error {
	if log == nil {
		log = slog.Default()
	}
	var errs []error
	for campaign, p := range procs {
		reps, err := p.RunInterrupted(ctx)
		for _, r := range reps {
			log.Info("interrupted session processing resumed", "campaign", campaign, "session", r.SessionID,
				"resumed_at_window", r.Resumed, "windows", r.Windows, "cached_windows", r.Cached)
		}
		if err != nil {
			log.Error("resuming interrupted session processing", "campaign", campaign, "err", err)
			errs = append(errs, fmt.Errorf("campaign %q: %w", campaign, err))
		}
		if ctx.Err() != nil {
			break
		}
	}
	return errors.Join(errs...)
}
