package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Processing keeps how far the processing of each session of a campaign has
// got, per stage (table session_processing), and the cached answers of fact
// extraction per window (table extraction_windows), so that post-session
// work resumes where a crash, a shutdown or an outage cut it short. Its
// statements go through the campaign's querier: classified, and guarded by
// the campaign's gate.
type Processing struct {
	db       querier
	pool     *pgxpool.Pool // for Hold's connections' configuration
	campaign string
}

// Processing is the campaign's processing progress.
func (c *Campaign) Processing() *Processing {
	return &Processing{db: c.db, pool: c.store.pool, campaign: c.id}
}

// Hold takes the claim on processing session sessionID, waiting while
// another run (of this process or another sharing the database) holds it,
// and returns its release: two runs of one session at once would both pay
// the model for the same windows. The claim is a session-level advisory
// lock held, for as long as the run lasts, on a connection of its own,
// outside the pool (runs holding pooled connections while they wait for
// the model would starve the pool their own statements need); a process
// killed while it holds it loses it with its connection. It fails with
// memory.ErrUnavailable when the database is out of reach, and with ctx's
// error when ctx ends first.
func (p *Processing) Hold(ctx context.Context, sessionID string) (func(), error) {
	return p.hold(ctx, p.campaign+"/"+sessionID, fmt.Sprintf("the processing of session %q", sessionID))
}

// hold takes the advisory lock of key (see [Processing.Hold]); what names
// it in errors.
func (p *Processing) hold(ctx context.Context, key, what string) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, p.pool.Config().ConnConfig.Copy())
	if err != nil {
		return nil, fmt.Errorf("claiming %s: %w", what, classify(err))
	}
	// Two keys that hash alike share a claim: their runs go one after
	// the other, which costs nothing but the wait.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtextextended($1, $2))`, key, processingLockSeed); err != nil {
		closeConn(conn)
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return nil, fmt.Errorf("claiming %s: %w", what, classify(err))
	}
	// The lock goes with the connection.
	return func() { closeConn(conn) }, nil
}

// closeConn closes conn, waiting at most 10 s for the server to hear it.
func closeConn(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// processingLockSeed seeds the hash of the advisory lock key that claims
// a session's processing ([Processing.Hold]).
const processingLockSeed = 0x67_6c_70_72_6f // "glpro"

// Load returns the position reached in a stage and whether it is done; a
// stage never started is at 0 and not done.
func (p *Processing) Load(ctx context.Context, sessionID, stage string) (int, bool, error) {
	var pos int
	var done bool
	err := p.db.QueryRow(ctx, `SELECT position, done FROM session_processing
		WHERE campaign_id = $1 AND session_id = $2 AND stage = $3`, p.campaign, sessionID, stage).Scan(&pos, &done)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("reading the %s progress of session %q: %w", stage, sessionID, err)
	}
	return pos, done, nil
}

// Save records a position in a stage, and whether the stage is done.
func (p *Processing) Save(ctx context.Context, sessionID, stage string, pos int, done bool) error {
	_, err := p.db.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage, position, done)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (campaign_id, session_id, stage) DO UPDATE
		SET position = excluded.position, done = excluded.done, updated_at = now()`,
		p.campaign, sessionID, stage, pos, done)
	if err != nil {
		return fmt.Errorf("saving the %s progress of session %q: %w", stage, sessionID, err)
	}
	return nil
}

// SaveCovering records a position in a stage, whether the stage is done,
// and the time of the last line the position covers: a line stored later
// with an earlier time marks the session's processing to run again (see
// [LateLinesStage]).
func (p *Processing) SaveCovering(ctx context.Context, sessionID, stage string, pos int, done bool, covered time.Time) error {
	_, err := p.db.Exec(ctx, `INSERT INTO session_processing (campaign_id, session_id, stage, position, done, covered_at)
		VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (campaign_id, session_id, stage) DO UPDATE
		SET position = excluded.position, done = excluded.done, covered_at = excluded.covered_at, updated_at = now()`,
		p.campaign, sessionID, stage, pos, done, covered)
	if err != nil {
		return fmt.Errorf("saving the %s progress of session %q: %w", stage, sessionID, err)
	}
	return nil
}

// Reset forgets a session's progress in every stage, or in stage alone when
// stage is not empty.
func (p *Processing) Reset(ctx context.Context, sessionID, stage string) error {
	_, err := p.db.Exec(ctx, `DELETE FROM session_processing WHERE campaign_id = $1 AND session_id = $2
		AND ($3 = '' OR stage = $3)`, p.campaign, sessionID, stage)
	if err != nil {
		return fmt.Errorf("resetting the processing of session %q: %w", sessionID, err)
	}
	return nil
}

// NotDone lists the ended sessions whose stage done is not done, oldest
// first; with started set, only those that have a row for stage started
// (their processing began and did not finish). A session that received
// lines after it ended and was processed (marked [LateLinesStage]) is
// listed too: its processing is to be done again.
func (p *Processing) NotDone(ctx context.Context, done, started string) ([]string, error) {
	rows, err := p.db.Query(ctx, `
		SELECT s.id FROM sessions s
		WHERE s.campaign_id = $1 AND s.ended_at IS NOT NULL
		  AND (($3 = '' OR EXISTS (SELECT 1 FROM session_processing p
		              WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $3))
		    AND NOT EXISTS (SELECT 1 FROM session_processing p
		                  WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $2 AND p.done)
		    OR EXISTS (SELECT 1 FROM session_processing p
		               WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $4))
		ORDER BY s.started_at, s.id`, p.campaign, done, started, LateLinesStage)
	if err != nil {
		return nil, fmt.Errorf("listing sessions waiting for processing: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing sessions waiting for processing: %w", err)
	}
	return ids, nil
}

// LateOwed lists the ended sessions marked [LateLinesStage], oldest
// first: what a run without an LLM (which resumes nothing else) processes
// again.
func (p *Processing) LateOwed(ctx context.Context) ([]string, error) {
	rows, err := p.db.Query(ctx, `SELECT s.id FROM sessions s
		WHERE s.campaign_id = $1 AND s.ended_at IS NOT NULL AND EXISTS (SELECT 1 FROM session_processing p
		      WHERE p.campaign_id = s.campaign_id AND p.session_id = s.id AND p.stage = $2)
		ORDER BY s.started_at, s.id`, p.campaign, LateLinesStage)
	if err != nil {
		return nil, fmt.Errorf("listing sessions that received lines after they were processed: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing sessions that received lines after they were processed: %w", err)
	}
	return ids, nil
}

// TakeLateLines reports whether the session received lines after it ended
// and its processing began ([LateLinesStage]); if so, in the same
// statement, it clears that mark and forgets the session's progress in
// every stage but started (a [RechunkStage] mark stays too), so that its
// processing runs again from the start (the cached extractions stay:
// windows whose lines did not change are not sent to the model again). Of
// two processes taking it at once, one gets true. Lines stored after it
// are marked anew.
func (p *Processing) TakeLateLines(ctx context.Context, sessionID, started string) (bool, error) {
	var took bool
	err := p.db.QueryRow(ctx, `
		WITH late AS (
		    DELETE FROM session_processing WHERE campaign_id = $1 AND session_id = $2 AND stage = $3 RETURNING 1
		), reset AS (
		    DELETE FROM session_processing WHERE campaign_id = $1 AND session_id = $2 AND stage NOT IN ($3, $4, $5)
		      AND EXISTS (SELECT 1 FROM late) RETURNING 1
		)
		SELECT EXISTS (SELECT 1 FROM late)`,
		p.campaign, sessionID, LateLinesStage, started, RechunkStage).Scan(&took)
	if err != nil {
		return false, fmt.Errorf("taking the lines session %q received after it was processed: %w", sessionID, err)
	}
	return took, nil
}

// RechunkStage is the session_processing stage that marks a session whose
// chunks were deleted with lines taken out of it (a forget-me,
// [SessionLog.MarkNonCanon]), written in the same transaction: its other
// lines are in no chunk until the session is chunked again. The process
// that took the lines out rebuilds the chunks at once; a process killed
// before it did (or a database that went down meanwhile) leaves the mark,
// and the next start of serve rebuilds them ([Processing.RechunkOwed],
// [Processing.Rechunked]).
const RechunkStage = "rechunk"

// markRechunkSQL marks sessions $2 of campaign $1 as owing a rechunking;
// each marking stamps the mark anew, so that a rebuild that began before
// it does not clear it.
const markRechunkSQL = `INSERT INTO session_processing (campaign_id, session_id, stage, updated_at)
	SELECT $1, s, '` + RechunkStage + `', clock_timestamp() FROM unnest($2::text[]) s
	ON CONFLICT (campaign_id, session_id, stage) DO UPDATE SET updated_at = excluded.updated_at`

// OweRechunk marks sessions ids as owing a rebuild of their chunks (see
// [RechunkStage]): an import writes it in its transaction, so that
// chunking it did not finish (the process killed) is done by serve, or by
// `glyphoxa process`, which clears it.
func (p *Processing) OweRechunk(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := p.db.Exec(ctx, markRechunkSQL, p.campaign, ids); err != nil {
		return fmt.Errorf("recording that the chunks of %d sessions are to be built: %w", len(ids), err)
	}
	return nil
}

// RechunkOwed lists the sessions whose chunks are to be rebuilt (see
// [RechunkStage]), oldest mark first.
func (p *Processing) RechunkOwed(ctx context.Context) ([]string, error) {
	rows, err := p.db.Query(ctx, `SELECT session_id FROM session_processing WHERE campaign_id = $1 AND stage = $2
		ORDER BY updated_at, session_id`, p.campaign, RechunkStage)
	if err != nil {
		return nil, fmt.Errorf("listing sessions whose chunks are to be rebuilt: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing sessions whose chunks are to be rebuilt: %w", err)
	}
	return ids, nil
}

// Rechunked runs rebuild, which chunks session sessionID again from the
// lines its log holds, and then clears the session's [RechunkStage] mark,
// unless lines were taken out of it again while rebuild ran (the mark was
// stamped anew: the next rebuild is still owed).
func (p *Processing) Rechunked(ctx context.Context, sessionID string, rebuild func(ctx context.Context) error) error {
	return p.RechunkedSessions(ctx, []string{sessionID}, rebuild)
}

// RechunkedSessions is [Processing.Rechunked] for sessions ids, or for
// every session of the campaign when ids is empty (`glyphoxa process`
// chunks them all): rebuild chunks them again, and then the marks they
// had before it ran are cleared. Rebuilds of a campaign's chunks run one
// at a time among the processes sharing the database (an import's
// chunking and serve's sweep would both pay the embeddings).
func (p *Processing) RechunkedSessions(ctx context.Context, ids []string, rebuild func(ctx context.Context) error) error {
	return p.rechunked(ctx, ids, false, rebuild)
}

// RebuildOwed runs rebuild, which chunks session sessionID again, if the
// session still owes it ([RechunkStage]) once the campaign's rebuilds
// before it ended, and then clears the mark as [Processing.Rechunked]
// does: serve's sweep of owed rebuilds.
func (p *Processing) RebuildOwed(ctx context.Context, sessionID string, rebuild func(ctx context.Context) error) error {
	return p.rechunked(ctx, []string{sessionID}, true, rebuild)
}

func (p *Processing) rechunked(ctx context.Context, ids []string, owedOnly bool, rebuild func(ctx context.Context) error) error {
	release, err := p.hold(ctx, p.campaign+"//rechunk", "the rebuild of chunks")
	if err != nil {
		return err
	}
	defer release()
	rows, err := p.db.Query(ctx, `SELECT session_id, updated_at FROM session_processing WHERE campaign_id = $1 AND stage = $2
		AND (coalesce(cardinality($3::text[]), 0) = 0 OR session_id = ANY($3))`, p.campaign, RechunkStage, ids)
	if err != nil {
		return fmt.Errorf("reading which sessions' chunks are to be rebuilt: %w", err)
	}
	var marked []string
	var stamps []time.Time
	var id string
	var stamp time.Time
	if _, err := pgx.ForEachRow(rows, []any{&id, &stamp}, func() error {
		marked, stamps = append(marked, id), append(stamps, stamp)
		return nil
	}); err != nil {
		return fmt.Errorf("reading which sessions' chunks are to be rebuilt: %w", err)
	}
	if owedOnly && len(marked) == 0 {
		return nil // rebuilt meanwhile
	}
	if err := rebuild(ctx); err != nil {
		return err
	}
	if len(marked) == 0 {
		return nil
	}
	if _, err := p.db.Exec(ctx, `DELETE FROM session_processing WHERE campaign_id = $1 AND stage = $2
		AND (session_id, updated_at) IN (SELECT * FROM unnest($3::text[], $4::timestamptz[]))`,
		p.campaign, RechunkStage, marked, stamps); err != nil {
		return fmt.Errorf("recording that the chunks of sessions %v were rebuilt: %w", marked, err)
	}
	return nil
}

// LoadWindow returns the cached extraction (JSON) of a window whose lines
// hash to hash, and whether there is one.
func (p *Processing) LoadWindow(ctx context.Context, sessionID string, window int, hash string) ([]byte, bool, error) {
	var raw []byte
	err := p.db.QueryRow(ctx, `SELECT extraction FROM extraction_windows
		WHERE campaign_id = $1 AND session_id = $2 AND window_no = $3 AND lines_hash = $4`,
		p.campaign, sessionID, window, hash).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading the cached extraction of window %d of session %q: %w", window+1, sessionID, err)
	}
	return raw, true, nil
}

// SaveWindow caches the extraction (JSON) of a window whose lines hash to
// hash.
func (p *Processing) SaveWindow(ctx context.Context, sessionID string, window int, hash string, raw []byte) error {
	_, err := p.db.Exec(ctx, `INSERT INTO extraction_windows (campaign_id, session_id, window_no, lines_hash, extraction)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (campaign_id, session_id, window_no) DO UPDATE SET lines_hash = excluded.lines_hash,
		    extraction = excluded.extraction, created_at = now()`, p.campaign, sessionID, window, hash, raw)
	if err != nil {
		return fmt.Errorf("caching the extraction of window %d of session %q: %w", window+1, sessionID, err)
	}
	return nil
}
