package postsession

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Progress records how far the processing of a session has got, per stage.
type Progress interface {
	// Load returns the position reached in a stage and whether it is done;
	// a stage never started is at 0 and not done.
	Load(ctx context.Context, sessionID, stage string) (pos int, done bool, err error)
	// Save records a position (and whether the stage is done).
	Save(ctx context.Context, sessionID, stage string, pos int, done bool) error
	// Reset forgets a session's progress, so that it is processed again.
	Reset(ctx context.Context, sessionID string) error
	// Unfinished lists ended sessions whose processing is not done, oldest
	// first.
	Unfinished(ctx context.Context) ([]string, error)
}

// PGProgress keeps progress in the session_processing table of the memory
// database.
type PGProgress struct {
	pool     *pgxpool.Pool
	campaign string
}

var (
	_ Progress        = (*PGProgress)(nil)
	_ ExtractionCache = (*PGProgress)(nil)
)

// NewPGProgress returns the progress of campaign's sessions in the database
// behind pool (a postgres.Store's Pool()).
func NewPGProgress(pool *pgxpool.Pool, campaign string) *PGProgress {
	return &PGProgress{pool: pool, campaign: campaign}
}

// Load implements Progress.
func (p *PGProgress) Load(ctx context.Context, sessionID, stage string) (int, bool, error) {
	var pos int
	var done bool
	err := p.pool.QueryRow(ctx, `SELECT position, done FROM session_processing
		WHERE campaign_id = $1 AND session_id = $2 AND stage = $3`, p.campaign, sessionID, stage).Scan(&pos, &done)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading the %s progress of session %q: %w", stage, sessionID, err)
	}
	return pos, done, nil
}

// Save implements Progress.
func (p *PGProgress) Save(ctx context.Context, sessionID, stage string, pos int, done bool) error {
	_, err := p.pool.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage, position, done)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (campaign_id, session_id, stage) DO UPDATE
		SET position = excluded.position, done = excluded.done, updated_at = now()`,
		p.campaign, sessionID, stage, pos, done)
	if err != nil {
		return fmt.Errorf("saving the %s progress of session %q: %w", stage, sessionID, err)
	}
	return nil
}

// Reset implements Progress.
func (p *PGProgress) Reset(ctx context.Context, sessionID string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM session_processing WHERE campaign_id = $1 AND session_id = $2`,
		p.campaign, sessionID); err != nil {
		return fmt.Errorf("resetting the processing of session %q: %w", sessionID, err)
	}
	return nil
}

// Unfinished implements Progress.
func (p *PGProgress) Unfinished(ctx context.Context) ([]string, error) {
	rows, err := p.pool.Query(ctx, `
		SELECT s.id FROM sessions s
		WHERE s.campaign_id = $1 AND s.ended_at IS NOT NULL
		  AND NOT EXISTS (SELECT 1 FROM session_processing p
		                  WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $2 AND p.done)
		ORDER BY s.started_at, s.id`, p.campaign, StageExtract)
	if err != nil {
		return nil, fmt.Errorf("listing sessions waiting for processing: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// Interrupted lists ended sessions whose processing started and did not
// finish, oldest first: what a crash, a shutdown or an outage cut short.
func (p *PGProgress) Interrupted(ctx context.Context) ([]string, error) {
	rows, err := p.pool.Query(ctx, `
		SELECT s.id FROM sessions s
		WHERE s.campaign_id = $1 AND s.ended_at IS NOT NULL
		  AND EXISTS (SELECT 1 FROM session_processing p
		              WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $2)
		  AND NOT EXISTS (SELECT 1 FROM session_processing p
		                  WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $3 AND p.done)
		ORDER BY s.started_at, s.id`, p.campaign, StageStarted, StageExtract)
	if err != nil {
		return nil, fmt.Errorf("listing interrupted sessions: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ResetExtraction forgets how far the extraction of a session got (not its
// chunking), so that it runs again; the cached answers stay, so a re-run
// stores the same entities and facts.
func (p *PGProgress) ResetExtraction(ctx context.Context, sessionID string) error {
	if _, err := p.pool.Exec(ctx, `DELETE FROM session_processing WHERE campaign_id = $1 AND session_id = $2 AND stage = $3`,
		p.campaign, sessionID, StageExtract); err != nil {
		return fmt.Errorf("resetting the extraction of session %q: %w", sessionID, err)
	}
	return nil
}

// LoadExtraction implements ExtractionCache.
func (p *PGProgress) LoadExtraction(ctx context.Context, sessionID string, window int, hash string) (Extraction, bool, error) {
	var raw []byte
	err := p.pool.QueryRow(ctx, `SELECT extraction FROM extraction_windows
		WHERE campaign_id = $1 AND session_id = $2 AND window_no = $3 AND lines_hash = $4`,
		p.campaign, sessionID, window, hash).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return Extraction{}, false, nil
	}
	if err != nil {
		return Extraction{}, false, fmt.Errorf("reading the cached extraction of window %d of session %q: %w", window+1, sessionID, err)
	}
	var x Extraction
	if err := json.Unmarshal(raw, &x); err != nil {
		return Extraction{}, false, fmt.Errorf("decoding the cached extraction of window %d of session %q: %w", window+1, sessionID, err)
	}
	return x, true, nil
}

// SaveExtraction implements ExtractionCache.
func (p *PGProgress) SaveExtraction(ctx context.Context, sessionID string, window int, hash string, x Extraction) error {
	raw, err := json.Marshal(x)
	if err != nil {
		return fmt.Errorf("encoding the extraction of window %d: %w", window+1, err)
	}
	_, err = p.pool.Exec(ctx, `INSERT INTO extraction_windows (campaign_id, session_id, window_no, lines_hash, extraction)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (campaign_id, session_id, window_no) DO UPDATE SET lines_hash = excluded.lines_hash,
		    extraction = excluded.extraction, created_at = now()`, p.campaign, sessionID, window, hash, raw)
	if err != nil {
		return fmt.Errorf("caching the extraction of window %d of session %q: %w", window+1, sessionID, err)
	}
	return nil
}
