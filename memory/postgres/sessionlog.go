package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// SessionLog is the L1 session log of one campaign.
type SessionLog struct {
	db       querier
	campaign string
	view     view // who reads: every read of lines gives a player only what they may read (view.lineVisible)
}

const entryColumns = `id, session_id, speaker_id, speaker_name, npc_id, text, raw_text, at, duration_ms, coalesce(idempotency_key, ''), noncanon`

func scanEntry(row pgx.CollectableRow) (memory.TranscriptEntry, error) {
	var e memory.TranscriptEntry
	var ms int32
	err := row.Scan(&e.ID, &e.SessionID, &e.SpeakerID, &e.SpeakerName, &e.NPCID, &e.Text, &e.RawText, &e.At, &ms, &e.IdempotencyKey, &e.NonCanon)
	e.Duration = time.Duration(ms) * time.Millisecond
	return e, err
}

func validEntry(e memory.TranscriptEntry) error {
	switch {
	case strings.TrimSpace(e.SessionID) == "":
		return fmt.Errorf("%w: transcript entry without a session id", memory.ErrInvalid)
	case e.At.IsZero():
		return fmt.Errorf("%w: transcript entry in session %q without a time", memory.ErrInvalid, e.SessionID)
	case e.Duration < 0:
		return fmt.Errorf("%w: transcript entry in session %q has a negative duration", memory.ErrInvalid, e.SessionID)
	case e.Duration/time.Millisecond > math.MaxInt32:
		// entryArgs stores it as an int32 of milliseconds, which would wrap.
		return fmt.Errorf("%w: transcript entry in session %q lasts %s, more than the %d ms a line may", memory.ErrInvalid, e.SessionID, e.Duration, math.MaxInt32)
	}
	return nil
}

// insertEntrySQL creates the session if needed and inserts the entry; a
// repeated idempotency key inserts nothing.
const insertEntrySQL = `
WITH s AS (
    INSERT INTO sessions (campaign_id, id, started_at) VALUES ($1, $2, $8)
    ON CONFLICT (campaign_id, id) DO UPDATE SET started_at = least(sessions.started_at, excluded.started_at)
    RETURNING 1
)
INSERT INTO transcript_entries (campaign_id, session_id, speaker_id, speaker_name, npc_id, text, raw_text, at, duration_ms, idempotency_key)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, nullif($10, '') FROM s
ON CONFLICT (campaign_id, idempotency_key) WHERE idempotency_key IS NOT NULL DO NOTHING`

func entryArgs(campaign string, e memory.TranscriptEntry) []any {
	return []any{campaign, e.SessionID, e.SpeakerID, e.SpeakerName, e.NPCID, e.Text, e.RawText,
		e.At, int32(e.Duration / time.Millisecond), e.IdempotencyKey}
}

// WriteEntry appends one entry, creating its session if needed. It reports
// false when an entry with the same idempotency key already exists. A line
// stored late is marked as [SessionLog.WriteEntries] marks it.
func (l *SessionLog) WriteEntry(ctx context.Context, e memory.TranscriptEntry) (bool, error) {
	if err := validEntry(e); err != nil {
		return false, err
	}
	n, err := l.write(ctx, []memory.TranscriptEntry{e})
	if err != nil {
		return false, fmt.Errorf("writing a transcript entry to session %q: %w", e.SessionID, err)
	}
	return n == 1, nil
}

// WriteEntries appends entries in one transaction and one round trip, and
// reports how many were new. A line stored in a session that ended and
// whose processing began, or before the last line its live extraction
// covered, marks the session's processing owed again in the same
// transaction (see [LateLinesStage]).
func (l *SessionLog) WriteEntries(ctx context.Context, es []memory.TranscriptEntry) (int, error) {
	if len(es) == 0 {
		return 0, nil
	}
	for i, e := range es {
		if err := validEntry(e); err != nil {
			return 0, fmt.Errorf("entry %d: %w", i, err)
		}
	}
	return l.write(ctx, es)
}

// write stores valid entries es (WriteEntry, WriteEntries) and marks the
// sessions that received lines late (markLateLines).
func (l *SessionLog) write(ctx context.Context, es []memory.TranscriptEntry) (int, error) {
	// The batch's sessions are created or locked first, in the order of
	// their ids: each line's statement locks its session's row, and two
	// batches that reached the same sessions in opposite orders each held
	// one the other waited for (a deadlock, one batch refused).
	first := map[string]time.Time{}
	for _, e := range es {
		if at, ok := first[e.SessionID]; !ok || e.At.Before(at) {
			first[e.SessionID] = e.At
		}
	}
	sessions := slices.Sorted(maps.Keys(first))
	var inserted int
	err := pgx.BeginFunc(ctx, l.db, func(tx pgx.Tx) error {
		inserted = 0
		b := &pgx.Batch{}
		for _, id := range sessions {
			b.Queue(`INSERT INTO sessions (campaign_id, id, started_at) VALUES ($1, $2, $3)
				ON CONFLICT (campaign_id, id) DO UPDATE SET started_at = least(sessions.started_at, excluded.started_at)
				RETURNING ended_at IS NOT NULL, (SELECT max(p.covered_at) FROM session_processing p
				    WHERE p.campaign_id = sessions.campaign_id AND p.session_id = sessions.id)`,
				l.campaign, id, first[id])
		}
		for _, e := range es {
			b.Queue(insertEntrySQL, entryArgs(l.campaign, e)...)
		}
		br := tx.SendBatch(ctx, b)
		// A line is late when its session ended, or when it falls before
		// the last line its processing covered (see markLateLines).
		ended := map[string]bool{}
		covered := map[string]time.Time{}
		for _, id := range sessions {
			var e bool
			var c *time.Time
			if err := br.QueryRow().Scan(&e, &c); err != nil {
				br.Close()
				return fmt.Errorf("writing transcript entries: their sessions: %w", err)
			}
			ended[id] = e
			if c != nil {
				covered[id] = *c
			}
		}
		var late []string
		for i, e := range es {
			tag, err := br.Exec()
			if err != nil {
				br.Close()
				return fmt.Errorf("writing transcript entry %d of %d: %w", i+1, len(es), err)
			}
			inserted += int(tag.RowsAffected())
			c, ok := covered[e.SessionID]
			if tag.RowsAffected() == 1 && (ended[e.SessionID] || ok && e.At.Before(c)) && !slices.Contains(late, e.SessionID) {
				late = append(late, e.SessionID)
			}
		}
		if err := br.Close(); err != nil {
			return err
		}
		return markLateLines(ctx, tx, l.campaign, late)
	})
	if err != nil {
		return 0, err
	}
	return inserted, nil
}

// LateLinesStage is the session_processing stage that marks a session
// whose processing began (or was owed) and that received lines late: after
// it ended, or before lines its live extraction had already covered. They
// are lines an outage spool held, replayed later (a killed process's,
// after another process took the session over, or ended and processed it).
// The ended session is listed by [Processing.NotDone] again, and
// [Processing.TakeLateLines] resets its processing, so that its chunks and
// facts are made again with those lines (postsession.StageLate names it
// there).
const LateLinesStage = "late_lines"

// markLateLines marks, in tx, the sessions among ids as having received
// lines late: after they ended, or (a session still being played) before
// the last line its live extraction covered (Processing.SaveCovering),
// into windows already extracted. Those whose processing began or was owed
// are marked with [LateLinesStage] (processed again, chunks included); the
// other ended ones that have chunks (chunked without an LLM) with
// [RechunkStage].
func markLateLines(ctx context.Context, tx pgx.Tx, campaign string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `
		WITH got AS (
		    SELECT s.id, s.ended_at IS NOT NULL AS ended,
		           EXISTS (SELECT 1 FROM session_processing p WHERE p.campaign_id = s.campaign_id
		                   AND p.session_id = s.id AND p.stage <> $4) AS processed,
		           EXISTS (SELECT 1 FROM chunks c WHERE c.campaign_id = s.campaign_id AND c.session_id = s.id) AS chunked
		    FROM sessions s WHERE s.campaign_id = $1 AND s.id = ANY($2)
		), late AS (
		    INSERT INTO session_processing (campaign_id, session_id, stage)
		    SELECT $1, id, $3 FROM got WHERE processed
		    ON CONFLICT (campaign_id, session_id, stage) DO UPDATE SET updated_at = now()
		)
		INSERT INTO session_processing (campaign_id, session_id, stage, updated_at)
		SELECT $1, id, $4, clock_timestamp() FROM got WHERE ended AND NOT processed AND chunked
		ON CONFLICT (campaign_id, session_id, stage) DO UPDATE SET updated_at = excluded.updated_at`,
		campaign, ids, LateLinesStage, RechunkStage)
	if err != nil {
		return fmt.Errorf("marking the processing of sessions %v owed again for lines stored late: %w", ids, err)
	}
	return nil
}

// GetRecent returns the canon entries of a session within window before its
// newest entry, oldest first; a player's handle, those of them the player
// may read (see [view.lineVisible]).
func (l *SessionLog) GetRecent(ctx context.Context, sessionID string, window time.Duration) ([]memory.TranscriptEntry, error) {
	rows, err := l.db.Query(ctx, `
		SELECT `+entryColumnsT+` FROM transcript_entries t
		WHERE t.campaign_id = $1 AND t.session_id = $2 AND NOT t.noncanon AND `+l.view.lineVisible()+`
		  AND t.at >= (SELECT max(at) FROM transcript_entries WHERE campaign_id = $1 AND session_id = $2) - $3::interval
		ORDER BY t.at, t.id`, l.campaign, sessionID, window)
	if err != nil {
		return nil, fmt.Errorf("reading recent entries of session %q: %w", sessionID, err)
	}
	return pgx.CollectRows(rows, scanEntry)
}

// Entries returns every entry of a session, oldest first; a player's
// handle, only those the player may read (see [view.lineVisible]: any
// player, those said while the party was not split; bound to a player,
// those and the lines of split scenes their character witnessed). A recap
// is written from these.
func (l *SessionLog) Entries(ctx context.Context, sessionID string) ([]memory.TranscriptEntry, error) {
	rows, err := l.db.Query(ctx, `SELECT `+entryColumnsT+` FROM transcript_entries t
		WHERE t.campaign_id = $1 AND t.session_id = $2 AND `+l.view.lineVisible()+`
		ORDER BY t.at, t.id`, l.campaign, sessionID)
	if err != nil {
		return nil, fmt.Errorf("reading entries of session %q: %w", sessionID, err)
	}
	return pgx.CollectRows(rows, scanEntry)
}

// Search finds entries whose corrected text matches query, ranked with
// ts_rank, best first, words stemmed in the campaign's language
// ([Campaign.SetLanguage]). Non-canon lines are left out. A handle bound to
// one player (memory.PlayerViewerOf) finds only the lines their character
// witnessed (see [Campaign.KnowledgeOf]: a line of a split scene reaches
// the scene's players only) and those said before any presence was
// recorded; one for any player (memory.PlayerViewer) only the lines said
// while the party was not split (see [view.lineVisible]).
//
// A search for all of its words that more than [SearchCandidates] lines
// match ranks the newest of them: ts_rank sets apart only lines that
// repeat a word, every other line ties and ties go to the newest, so the
// best-ranked of the newest lines are those a search of every match
// returns, save an older line that says the word twice. Ranking every
// match of a common word took seconds at a million lines (2 s for one
// said in half of them). A search for any of the words (o.Any) ranks
// every match: there a line with more of the words ranks higher, however
// old.
func (l *SessionLog) Search(ctx context.Context, query string, o memory.SearchOpts) ([]memory.EntryHit, error) {
	if err := memory.CheckQuery(query); err != nil {
		return nil, err
	}
	if strings.TrimSpace(query) == "" {
		return nil, fmt.Errorf("%w: empty search query", memory.ErrInvalid)
	}
	limit := o.Limit
	if limit <= 0 {
		limit = 20
	}
	// The configuration is read first and passed as a value, and the
	// statement is planned for its own arguments (QueryExecModeExec): the
	// planner then plans each read below for the query's own words. Under
	// a cached generic plan, or with the query behind a subquery, it took
	// every word for a rare one.
	var cfg string
	err := l.db.QueryRow(ctx, `SELECT coalesce((SELECT text_config::text FROM campaigns WHERE id = $1), $2)`,
		l.campaign, DefaultLanguage).Scan(&cfg)
	if err != nil {
		return nil, fmt.Errorf("searching the session log for %q: reading the campaign's language: %w", query, err)
	}
	tsq, hits := l.searchSQL(o)
	rows, err := l.db.Query(ctx, `
		WITH hits AS MATERIALIZED (`+hits+`)
		SELECT `+entryColumns+`, ts_rank(tsv, `+tsq+`) AS rank FROM hits
		ORDER BY rank DESC, at DESC, id DESC
		LIMIT $7`, pgx.QueryExecModeExec, l.campaign, query, o.SessionID, o.SpeakerID, nullTime(o.After), nullTime(o.Before), limit, cfg)
	if err != nil {
		return nil, fmt.Errorf("searching the session log for %q: %w", query, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.EntryHit, error) {
		var h memory.EntryHit
		var ms int32
		var rank float32
		err := row.Scan(&h.Entry.ID, &h.Entry.SessionID, &h.Entry.SpeakerID, &h.Entry.SpeakerName, &h.Entry.NPCID,
			&h.Entry.Text, &h.Entry.RawText, &h.Entry.At, &ms, &h.Entry.IdempotencyKey, &h.Entry.NonCanon, &rank)
		h.Entry.Duration = time.Duration(ms) * time.Millisecond
		h.Rank = float64(rank)
		return h, err
	})
}

// searchSQL returns, for [SessionLog.Search] with o, the full-text query
// and the statement listing the lines its ranking reads (columns cols and
// tsv). Parameters: $1 the campaign, $2 the query, $3 the session, $4 the
// speaker, $5 and $6 the time bounds, $8 the text configuration.
func (l *SessionLog) searchSQL(o memory.SearchOpts) (tsq, hits string) {
	tsq, match := l.searchMatch(o)
	cols := `id, session_id, speaker_id, speaker_name, npc_id, text, raw_text, at, duration_ms, idempotency_key, noncanon, tsv`
	hits = `SELECT ` + cols + ` FROM transcript_entries t WHERE ` + match
	if o.Any {
		return tsq, hits
	}
	// The newest SearchCandidates matches, read by the plan that costs
	// least for this query's words, chosen by how often the campaign's
	// newest lines say them rather than by the planner's estimate: a word
	// the table's statistics do not list (a name, as a rule) is estimated
	// at one line in 200, and the planner then read a million lines
	// newest first to find its nine (0.7 s at the 100k bench scale). See
	// searchSample. The sample counts the lines the search may return
	// (the viewer's, through the filters): counting a split scene's lines
	// a player may not read, the time a search took told them whether the
	// scene had said the word.
	n := strconv.Itoa(SearchCandidates)
	return tsq, `
		    WITH ` + commonCTE(match) + `
		    (` + hits + ` AND (SELECT yes FROM common) ORDER BY at DESC, id DESC LIMIT ` + n + `)
		    UNION ALL
		    (SELECT * FROM (` + hits + ` AND NOT (SELECT yes FROM common) OFFSET 0) g
		     ORDER BY at DESC, id DESC LIMIT ` + n + `)`
}

// searchMatch returns the full-text query of a search with o and the
// predicate on transcript entry t of the lines it may return (the
// viewer's, through o's filters).
func (l *SessionLog) searchMatch(o memory.SearchOpts) (tsq, match string) {
	tsq = `websearch_to_tsquery($8::regconfig, $2)`
	if o.Any {
		tsq = `coalesce(nullif(replace(plainto_tsquery($8::regconfig, $2)::text, '&', '|'), ''), '')::tsquery`
	}
	return tsq, `campaign_id = $1 AND tsv @@ ` + tsq + ` AND NOT noncanon
		      AND ` + l.view.lineVisible() + `
		      AND ($3 = '' OR session_id = $3)
		      AND ($4 = '' OR speaker_id = $4)
		      AND ($5::timestamptz IS NULL OR at > $5)
		      AND ($6::timestamptz IS NULL OR at < $6)`
}

// commonCTE is the common table "common", one row: yes when at least
// searchSampleCommon of the campaign's newest searchSample lines match
// match (a predicate on transcript entry t).
func commonCTE(match string) string {
	return `common AS (SELECT count(*) >= ` + strconv.Itoa(searchSampleCommon) + ` AS yes
		    FROM (SELECT * FROM transcript_entries WHERE campaign_id = $1
		          ORDER BY at DESC, id DESC LIMIT ` + strconv.Itoa(searchSample) + `) t
		    WHERE ` + match + `)`
}

// SearchCandidates is how many of the newest lines matching every word of
// a session-log search [SessionLog.Search] ranks: ten times its largest
// page (the MCP tool's 50 lines).
const SearchCandidates = 500

// searchSample and searchSampleCommon choose how a search for all of its
// words ([SessionLog.Search]) reads its newest SearchCandidates matches.
// When at least searchSampleCommon of the campaign's newest searchSample
// lines match (one in 200), the words are common: their newest matches lie
// among the newest lines, read in time order (at most 100,000 lines to
// find 500 matches said once in 200 lines). Otherwise every match is read
// through the full-text index and the newest kept: a name said in ten of a
// million lines costs ten reads. A random read of a line costs what a few
// dozen in order do, so at a million lines the two reads cost about the
// same at one line in 200. The sample costs 2,000 lines read in order.
const (
	searchSample       = 2000
	searchSampleCommon = 10
)

// StartSession records a session; starting it again changes nothing.
func (l *SessionLog) StartSession(ctx context.Context, id string, at time.Time) error {
	if strings.TrimSpace(id) == "" {
		return fmt.Errorf("%w: empty session id", memory.ErrInvalid)
	}
	if at.IsZero() {
		at = time.Now()
	}
	_, err := l.db.Exec(ctx, `INSERT INTO sessions (campaign_id, id, started_at) VALUES ($1, $2, $3)
		ON CONFLICT (campaign_id, id) DO NOTHING`, l.campaign, id, at)
	if err != nil {
		return fmt.Errorf("starting session %q: %w", id, err)
	}
	return nil
}

// EndSession marks a session as ended at the given time.
func (l *SessionLog) EndSession(ctx context.Context, id string, at time.Time) error {
	if at.IsZero() {
		at = time.Now()
	}
	tag, err := l.db.Exec(ctx, `UPDATE sessions SET ended_at = $3 WHERE campaign_id = $1 AND id = $2`, l.campaign, id, at)
	if err != nil {
		return fmt.Errorf("ending session %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("ending session %q: %w", id, memory.ErrNotFound)
	}
	return nil
}

// SaveSummary stores the running summary of a session.
func (l *SessionLog) SaveSummary(ctx context.Context, id, summary string) error {
	tag, err := l.db.Exec(ctx, `UPDATE sessions SET summary = $3 WHERE campaign_id = $1 AND id = $2`, l.campaign, id, summary)
	if err != nil {
		return fmt.Errorf("saving the summary of session %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("saving the summary of session %q: %w", id, memory.ErrNotFound)
	}
	return nil
}

// SetGameDate records a session's date in the game's calendar ("" clears
// it). When the campaign has a calendar ([SessionLog.SetCalendar]) the
// date must be one of its dates (an error wrapping memory.ErrInvalid
// names the calendar's months); without one it is free text.
func (l *SessionLog) SetGameDate(ctx context.Context, id, gameDate string) error {
	if gameDate = strings.TrimSpace(gameDate); gameDate != "" {
		cal, set, err := l.Calendar(ctx)
		if err != nil {
			return err
		}
		if set {
			if _, err := cal.Parse(gameDate); err != nil {
				return fmt.Errorf("setting the game date of session %q: %w: %w", id, memory.ErrInvalid, err)
			}
		}
	}
	tag, err := l.db.Exec(ctx, `UPDATE sessions SET game_date = $3 WHERE campaign_id = $1 AND id = $2`,
		l.campaign, id, strings.TrimSpace(gameDate))
	if err != nil {
		return fmt.Errorf("setting the game date of session %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("setting the game date of session %q: %w", id, memory.ErrNotFound)
	}
	return nil
}

// GameDates returns the sessions that have a date in the game's calendar,
// oldest first (without entry counts).
func (l *SessionLog) GameDates(ctx context.Context) ([]memory.Session, error) {
	return l.starts(ctx, true)
}

// Starts returns every session's id, start, end and game date, oldest
// first, without entry counts (a player's count reads the lines of the
// campaign's split scenes).
func (l *SessionLog) Starts(ctx context.Context) ([]memory.Session, error) {
	return l.starts(ctx, false)
}

func (l *SessionLog) starts(ctx context.Context, datedOnly bool) ([]memory.Session, error) {
	rows, err := l.db.Query(ctx, `SELECT id, started_at, coalesce(ended_at, 'epoch'), game_date FROM sessions
		WHERE campaign_id = $1 AND (NOT $2 OR game_date <> '') ORDER BY started_at, id`, l.campaign, datedOnly)
	if err != nil {
		return nil, fmt.Errorf("listing the game dates of sessions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Session, error) {
		var s memory.Session
		err := row.Scan(&s.ID, &s.StartedAt, &s.EndedAt, &s.GameDate)
		if s.EndedAt.Equal(time.Unix(0, 0)) {
			s.EndedAt = time.Time{}
		}
		return s, err
	})
}

// Session returns one session with its entry count.
func (l *SessionLog) Session(ctx context.Context, id string) (memory.Session, error) {
	ss, err := l.sessions(ctx, id)
	if err != nil {
		return memory.Session{}, err
	}
	if len(ss) == 0 {
		return memory.Session{}, fmt.Errorf("session %q: %w", id, memory.ErrNotFound)
	}
	return ss[0], nil
}

// Sessions lists the campaign's sessions, oldest first, with entry counts.
// A player's handle counts only the lines the player's pages show
// (view.sessionLines: readable, not struck) and reads no
// summary: the running summary (SaveSummary) is written from every line of
// the session, split scenes included, for the table's own NPC context.
func (l *SessionLog) Sessions(ctx context.Context) ([]memory.Session, error) {
	return l.sessions(ctx, "")
}

func (l *SessionLog) sessions(ctx context.Context, only string) ([]memory.Session, error) {
	player := l.view.v.Role == memory.RolePlayer
	ctes, count := l.view.sessionLines("s")
	rows, err := l.db.Query(ctx, withCTEs(ctes)+`
		SELECT s.id, s.started_at, s.ended_at, CASE WHEN `+strconv.FormatBool(player)+` THEN '' ELSE s.summary END,
		       `+count+`,
		       s.game_date
		FROM sessions s WHERE s.campaign_id = $1 AND ($2 = '' OR s.id = $2)
		ORDER BY s.started_at, s.id`, l.campaign, only)
	if err != nil {
		return nil, fmt.Errorf("listing sessions: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Session, error) {
		var s memory.Session
		var ended *time.Time
		var n int64
		err := row.Scan(&s.ID, &s.StartedAt, &ended, &s.Summary, &n, &s.GameDate)
		if ended != nil {
			s.EndedAt = *ended
		}
		s.Entries = int(n)
		return s, err
	})
}

// sessionLines returns the common tables (for withCTEs; "" when none)
// and the SQL expression of the number of lines of session alias (a
// sessions row of campaign $1) the viewer's pages show. The count is the
// session's (sessions.entries, kept as lines are written, deleted and
// struck, migration 0037); a player's leaves out the lines the DM struck
// from the record (sessions.struck) and the canon lines they may not read,
// counted as a set (view.unreadableCTE): line by line, listing 200
// sessions of 250 lines took about a second where the DM's took 65 ms.
// SessionLog.Sessions lists it per session, Campaign.Counts sums it.
func (w view) sessionLines(alias string) (ctes, count string) {
	if w.v.Role != memory.RolePlayer {
		return "", alias + ".entries"
	}
	return w.unreadableCTE() + `,
		hidden AS MATERIALIZED (SELECT session_id, count(*) AS n FROM unreadable WHERE NOT noncanon GROUP BY session_id)`,
		`(` + alias + `.entries - ` + alias + `.struck - coalesce((SELECT h.n FROM hidden h WHERE h.session_id = ` + alias + `.id), 0))`
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// isNoRows reports whether err is pgx's "no rows".
func isNoRows(err error) bool { return errors.Is(err, pgx.ErrNoRows) }

// AmendEntry replaces the corrected text of one entry, found by its
// session and idempotency key, keeping its raw text (memory.EntryAmender).
// The text-search vector follows the text.
func (l *SessionLog) AmendEntry(ctx context.Context, sessionID, key, text string) (bool, error) {
	switch {
	case strings.TrimSpace(sessionID) == "" || strings.TrimSpace(key) == "":
		return false, fmt.Errorf("%w: amending an entry needs a session id and an idempotency key", memory.ErrInvalid)
	case strings.TrimSpace(text) == "":
		return false, fmt.Errorf("%w: amending entry %q of session %q to empty text", memory.ErrInvalid, key, sessionID)
	}
	var changed bool
	err := l.db.QueryRow(ctx, `
WITH e AS (
  SELECT id, text FROM transcript_entries
  WHERE campaign_id = $1 AND session_id = $2 AND idempotency_key = $3
), u AS (
  UPDATE transcript_entries t SET text = $4 FROM e WHERE t.campaign_id = $1 AND t.id = e.id AND e.text <> $4
  RETURNING t.id
)
SELECT EXISTS (SELECT 1 FROM u) FROM e`, l.campaign, sessionID, key, text).Scan(&changed)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("amending entry %q of session %q: %w", key, sessionID, memory.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("amending entry %q of session %q: %w", key, sessionID, err)
	}
	return changed, nil
}
