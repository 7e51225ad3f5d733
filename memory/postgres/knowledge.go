package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Per-player knowledge (migration 0023): who plays whom, which players were
// present when a line was said, and what the DM granted a player. A line
// said at t in a session was witnessed by the players of the session's
// last presence row at or before t (and by its speaker); a line said
// before any presence row of its session (an imported session, one played
// before presence was recorded) was witnessed by no one but its speaker:
// the store never guesses that a character was there.

// PlayerCharacter is a Discord member's character in a campaign.
type PlayerCharacter struct {
	UserID   string
	EntityID string
	// Name is the character entity's name.
	Name string
}

// Grant is a handout or whisper the DM gave one player, or a fact the DM
// let that player's character know.
type Grant struct {
	ID     int64
	UserID string
	// Text is the handout or whisper ("" for a granted fact).
	Text string
	// FactID is the granted fact (0 for a text).
	FactID int64
	// Fact is the granted fact as "Source REL Target".
	Fact      string
	SessionID string
	At        time.Time
}

// KnownFact is a canon fact a character knows: it was revealed in the
// character's presence (a line it rests on, fact_evidence, was witnessed).
type KnownFact struct {
	ID        int64
	Source    string
	Rel       string
	Target    string
	SessionID string
	At        time.Time
}

// Knowledge is what one player's character knows of a span of sessions.
type Knowledge struct {
	UserID    string
	Character PlayerCharacter
	// Sessions are the sessions read, in the order played.
	Sessions []string
	// Lines are the canon lines the character witnessed, in order.
	Lines []memory.TranscriptEntry
	// Facts are the canon, player-visible facts revealed in its presence.
	Facts []KnownFact
	// Grants are the DM's handouts, whispers and granted facts.
	Grants []Grant
	// Withheld counts the canon lines of these sessions the character did
	// not witness (left out).
	Withheld int
}

// maxGrantText bounds a handout or whisper.
const maxGrantText = 4000

// validUserID refuses an empty or malformed Discord user id.
func validUserID(id string) error {
	if strings.TrimSpace(id) == "" || strings.TrimSpace(id) != id || strings.ContainsRune(id, 0) ||
		!utf8.ValidString(id) || len(id) > 64 {
		return fmt.Errorf("%w: invalid player id %q", memory.ErrInvalid, memory.Quote(id, 40))
	}
	return nil
}

// SetPlayerCharacter records that userID plays entity entityID (DM only). An
// entity that does not exist is an error wrapping memory.ErrNotFound.
// Characters are listed to every player (PlayerCharacters): an entity
// first heard in a split scene made a character is published with it.
func (c *Campaign) SetPlayerCharacter(ctx context.Context, userID, entityID string) (PlayerCharacter, error) {
	if err := c.graph.dmOnly("setting a player's character"); err != nil {
		return PlayerCharacter{}, err
	}
	if err := validUserID(userID); err != nil {
		return PlayerCharacter{}, err
	}
	pc := PlayerCharacter{UserID: userID, EntityID: entityID}
	err := c.db.QueryRow(ctx, `
		WITH e AS (SELECT id, name FROM entities WHERE campaign_id = $1 AND id = $3),
		pub AS (UPDATE entities SET scene_only = false WHERE campaign_id = $1 AND id = $3 AND scene_only),
		ins AS (
			INSERT INTO player_characters (campaign_id, user_id, entity_id)
			SELECT $1, $2, id FROM e
			ON CONFLICT (campaign_id, user_id) DO UPDATE SET entity_id = excluded.entity_id, updated_at = now()
			RETURNING 1)
		SELECT name FROM e, ins`, c.id, userID, entityID).Scan(&pc.Name)
	if errors.Is(err, pgx.ErrNoRows) {
		return PlayerCharacter{}, fmt.Errorf("setting the character of %s: %w: no entity %q", userID, memory.ErrNotFound, entityID)
	}
	if err != nil {
		return PlayerCharacter{}, fmt.Errorf("setting the character of %s: %w", userID, err)
	}
	return pc, nil
}

// PlayerCharacters lists who plays whom, by user id. Characters are public
// (players see each other at the table).
func (c *Campaign) PlayerCharacters(ctx context.Context) ([]PlayerCharacter, error) {
	rows, err := c.db.Query(ctx, `SELECT p.user_id, p.entity_id, e.name FROM player_characters p
		JOIN entities e ON e.campaign_id = p.campaign_id AND e.id = p.entity_id
		WHERE p.campaign_id = $1 ORDER BY p.user_id`, c.id)
	if err != nil {
		return nil, fmt.Errorf("reading the player characters: %w", err)
	}
	var out []PlayerCharacter
	var pc PlayerCharacter
	_, err = pgx.ForEachRow(rows, []any{&pc.UserID, &pc.EntityID, &pc.Name}, func() error { out = append(out, pc); return nil })
	if err != nil {
		return nil, fmt.Errorf("reading the player characters: %w", err)
	}
	return out, nil
}

// RecordPresence records that from at on, the players present in session
// sessionID are players (a presence span; see migration 0023), and whether
// the DM had split the party then (split, migration 0031: true for the
// scene's span and for the empty span of a line said outside the scene
// alike). It creates the session if needed and is idempotent: a second
// record at the same time replaces the first.
func (l *SessionLog) RecordPresence(ctx context.Context, sessionID string, at time.Time, players []string, split bool) error {
	if strings.TrimSpace(sessionID) == "" {
		return fmt.Errorf("%w: presence without a session id", memory.ErrInvalid)
	}
	if at.IsZero() {
		return fmt.Errorf("%w: presence in session %q without a time", memory.ErrInvalid, sessionID)
	}
	ps := slices.Clone(players)
	for _, p := range ps {
		if err := validUserID(p); err != nil {
			return fmt.Errorf("presence in session %q: %w", sessionID, err)
		}
	}
	slices.Sort(ps)
	ps = slices.Compact(ps)
	if ps == nil {
		ps = []string{}
	}
	_, err := l.db.Exec(ctx, `
		WITH s AS (
			INSERT INTO sessions (campaign_id, id, started_at) VALUES ($1, $2, $3)
			ON CONFLICT (campaign_id, id) DO UPDATE SET started_at = least(sessions.started_at, excluded.started_at)
			RETURNING 1)
		INSERT INTO session_presence (campaign_id, session_id, at, players, split) SELECT $1, $2, $3, $4, $5 FROM s
		ON CONFLICT (campaign_id, session_id, at) DO UPDATE SET players = excluded.players, split = excluded.split`,
		l.campaign, sessionID, at.UTC(), ps, split)
	if err != nil {
		return fmt.Errorf("recording presence in session %q: %w", sessionID, err)
	}
	return nil
}

// Presence is one presence span's start: who was present from At on.
type Presence struct {
	SessionID string
	At        time.Time
	Players   []string
	// Split reports that the DM had split the party from At on.
	Split bool
}

// Presence lists a session's presence rows in order (DM only: it says
// who attended).
func (c *Campaign) Presence(ctx context.Context, sessionID string) ([]Presence, error) {
	if err := c.graph.dmOnly("reading who was present"); err != nil {
		return nil, err
	}
	rows, err := c.db.Query(ctx, `SELECT session_id, at, players, split FROM session_presence
		WHERE campaign_id = $1 AND session_id = $2 ORDER BY at`, c.id, sessionID)
	if err != nil {
		return nil, fmt.Errorf("reading the presence of session %q: %w", sessionID, err)
	}
	var out []Presence
	var p Presence
	_, err = pgx.ForEachRow(rows, []any{&p.SessionID, &p.At, &p.Players, &p.Split}, func() error { out = append(out, p); return nil })
	if err != nil {
		return nil, fmt.Errorf("reading the presence of session %q: %w", sessionID, err)
	}
	return out, nil
}

// ownKnowledge refuses to read another player's knowledge: the DM reads
// anyone's, a player only their own (a handle bound with
// memory.PlayerViewerOf), an NPC and "any player" no one's.
func (c *Campaign) ownKnowledge(what, userID string) error {
	if err := validUserID(userID); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if c.view.system() {
		return nil
	}
	if c.view.v.Role == memory.RolePlayer && c.view.v.PlayerID != "" && c.view.v.PlayerID == userID {
		return nil
	}
	return fmt.Errorf("%s: %w: a player reads only their own (this handle reads as %s)", what, memory.ErrForbidden, c.view.v)
}

// AddGrant gives player userID a handout or whisper (text), or lets their
// character know fact factID (DM only). sessionID, when not empty, is the
// session it was given in.
func (c *Campaign) AddGrant(ctx context.Context, userID, text string, factID int64, sessionID string) (Grant, error) {
	if err := c.graph.dmOnly("granting a player knowledge"); err != nil {
		return Grant{}, err
	}
	if err := validUserID(userID); err != nil {
		return Grant{}, err
	}
	text = strings.TrimSpace(text)
	switch {
	case text == "" && factID == 0:
		return Grant{}, fmt.Errorf("%w: a grant needs a text or a fact", memory.ErrInvalid)
	case !utf8.ValidString(text) || strings.ContainsRune(text, 0):
		return Grant{}, fmt.Errorf("%w: a grant's text must be valid UTF-8 without NUL bytes", memory.ErrInvalid)
	case utf8.RuneCountInString(text) > maxGrantText:
		return Grant{}, fmt.Errorf("%w: a grant's text is longer than %d characters", memory.ErrInvalid, maxGrantText)
	case factID < 0:
		return Grant{}, fmt.Errorf("%w: fact id %d", memory.ErrInvalid, factID)
	}
	g := Grant{UserID: userID, Text: text, FactID: factID, SessionID: sessionID}
	var fact *int64
	if factID != 0 {
		fact = &factID
		var ok bool
		if err := c.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM relationships WHERE campaign_id = $1 AND id = $2
			AND status = 'active')`, c.id, factID).Scan(&ok); err != nil {
			return Grant{}, fmt.Errorf("granting fact %d: %w", factID, err)
		}
		if !ok {
			return Grant{}, fmt.Errorf("granting fact %d: %w: no canon fact with that id", factID, memory.ErrNotFound)
		}
	}
	err := c.db.QueryRow(ctx, `INSERT INTO player_grants (campaign_id, user_id, text, fact_id, session_id)
		VALUES ($1, $2, $3, $4, $5) RETURNING id, granted_at`, c.id, userID, text, fact, sessionID).Scan(&g.ID, &g.At)
	if err != nil {
		return Grant{}, fmt.Errorf("granting %s knowledge: %w", userID, err)
	}
	return g, nil
}

// Grants lists what the DM granted player userID, oldest first, from since
// on (zero: all). The DM reads anyone's, a player their own only. A
// granted fact the DM took out of canon afterwards (rejected, or back to
// pending) is no longer known: a grant of it alone is left out, and one
// with a text keeps its text only.
func (c *Campaign) Grants(ctx context.Context, userID string, since time.Time) ([]Grant, error) {
	if err := c.ownKnowledge("reading a player's grants", userID); err != nil {
		return nil, err
	}
	rows, err := c.db.Query(ctx, `
		SELECT g.id, g.user_id, g.text, coalesce(r.id, 0),
		       coalesce(s.name || ' ' || r.rel_type || ' ' || t.name, ''), g.session_id, g.granted_at
		FROM player_grants g
		LEFT JOIN relationships r ON r.campaign_id = g.campaign_id AND r.id = g.fact_id AND r.status IN ('active', 'retired')
		LEFT JOIN entities s ON s.campaign_id = r.campaign_id AND s.id = r.source_id
		LEFT JOIN entities t ON t.campaign_id = r.campaign_id AND t.id = r.target_id
		WHERE g.campaign_id = $1 AND g.user_id = $2 AND g.granted_at >= $3 AND (g.text <> '' OR r.id IS NOT NULL)
		ORDER BY g.granted_at, g.id`, c.id, userID, since)
	if err != nil {
		return nil, fmt.Errorf("reading the grants of %s: %w", userID, err)
	}
	var out []Grant
	var g Grant
	_, err = pgx.ForEachRow(rows, []any{&g.ID, &g.UserID, &g.Text, &g.FactID, &g.Fact, &g.SessionID, &g.At},
		func() error { out = append(out, g); return nil })
	if err != nil {
		return nil, fmt.Errorf("reading the grants of %s: %w", userID, err)
	}
	return out, nil
}

// entryColumnsT is entryColumns of transcript_entries t.
const entryColumnsT = `t.id, t.session_id, t.speaker_id, t.speaker_name, t.npc_id, t.text, t.raw_text, t.at, t.duration_ms,
	coalesce(t.idempotency_key, ''), t.noncanon`

// witnessedSQL is the predicate "transcript entry t was witnessed by player
// $2": they said it, or the session's last presence row at or before it
// lists them, unless its speaker is a player (one with a character) that
// row leaves out: a player talking across a split party is heard at the
// table, not in the scene.
const witnessedSQL = `(t.speaker_id = $2 OR coalesce((
	SELECT $2 = ANY(p.players) AND (t.speaker_id = ANY(p.players) OR NOT EXISTS (
		SELECT 1 FROM player_characters pc WHERE pc.campaign_id = t.campaign_id AND pc.user_id = t.speaker_id))
	FROM session_presence p
	WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
	ORDER BY p.at DESC LIMIT 1), false))`

// heardSQL is witnessedSQL without the speaker's own line: the session's
// last presence row at or before transcript entry t lists player $2 and
// its speaker is in that row or has no character. A player talking at the
// table outside a split scene said their line but heard none of the
// scene's (entity evidence, [view.tracedSceneSQL]).
const heardSQL = `coalesce((
	SELECT $2 = ANY(p.players) AND (t.speaker_id = ANY(p.players) OR NOT EXISTS (
		SELECT 1 FROM player_characters pc WHERE pc.campaign_id = t.campaign_id AND pc.user_id = t.speaker_id))
	FROM session_presence p
	WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
	ORDER BY p.at DESC LIMIT 1), false)`

// heardBy is heardSQL with the player as SQL literal lit.
func heardBy(lit string) string { return strings.ReplaceAll(heardSQL, "$2", lit) }

// witnessedBy is witnessedSQL with the player as parameter param (a
// statement whose $2 is something else).
func witnessedBy(param string) string { return strings.ReplaceAll(witnessedSQL, "$2", param) }

// publicLineSQL is the predicate "transcript entry t may be read by any
// player" (a handle bound to no one player, memory.PlayerViewer: a public
// /recap, the MCP player role without a user): the session's last presence
// row at or before t does not say the party was split (migration 0031). A
// line of a split scene, and one said at the table outside it, are in a
// split span; a line before any presence row (an imported session, one
// played before presence was recorded) is in none: no split is known, and
// it stays as readable as before. Unlike witnessedSQL it does not ask who
// was listed: "not listed" also means "not in the voice channel", and a
// player who joined late still reads, in a public recap, what the party
// said together before.
const publicLineSQL = `NOT coalesce((
	SELECT p.split FROM session_presence p
	WHERE p.campaign_id = t.campaign_id AND p.session_id = t.session_id AND p.at <= t.at
	ORDER BY p.at DESC LIMIT 1), false)`

// boundLineSQL is the predicate "player lit (an SQL literal) may read
// transcript entry t": what any player may read (publicLineSQL), and the
// lines of split scenes their character witnessed (witnessedSQL). Binding a
// handle to a player only adds their own knowledge (memory.PlayerViewerOf):
// a player who missed a session reads its table talk in the console as a
// public recap would tell it, but no split scene they were not in. What a
// character knows ([Campaign.KnowledgeOf]) is what it witnessed only.
func boundLineSQL(lit string) string {
	return "(" + publicLineSQL + " OR " + witnessedBy(lit) + ")"
}

// lineVisible is the SQL predicate true when the viewer may read
// transcript entry t (the one witness rule of every player read of the
// session log): the DM and the system read every line; any player
// (memory.PlayerViewer) the lines said while the party was not split
// (publicLineSQL); a player bound to their user id (memory.PlayerViewerOf)
// those and the lines of split scenes their character witnessed
// (boundLineSQL). An NPC's handle reads every line
// here: what an NPC heard is limited where its context is built
// (lifecycle/witness) and where it searches (SearchHeard, HeardChunks).
//
// The player's id is written as a literal, as the NPC's is (see [view]):
// it passed memory.Viewer.Validate when the handle was bound.
func (w view) lineVisible() string {
	switch {
	case w.v.Role != memory.RolePlayer:
		return "true"
	case w.v.PlayerID != "":
		return boundLineSQL(sqlLiteral(w.v.PlayerID))
	}
	return publicLineSQL
}

// chunkVisible is the SQL predicate true when the viewer may read chunk c
// of the semantic index. A chunk holds several lines (those of its session
// said from c.start_at to c.end_at), and its text cannot be cut to what a
// reader may see, so a player reads a chunk only when every line it may
// hold is one they may read: bound to a player, no line in its span they
// may not read (boundLineSQL); any player, no split presence span
// overlapping it (a chunk that mixes public lines and lines of a split
// scene is left out for players: the public lines stay readable line by
// line in the session log). A chunk without times is taken to span its
// whole session. The DM, the system and NPCs read every chunk (an NPC's
// retrieval is limited to what it heard by HeardChunks).
//
// It is checked row by row, for the few chunks a read returns; the set of
// chunks a player may not read is [view.deniedCTEs], the same rule computed
// as sets from the split presence spans, which searches filter by.
func (w view) chunkVisible(alias string) string {
	if w.v.Role != memory.RolePlayer {
		return "true"
	}
	from, to := chunkSpan(alias)
	if w.v.PlayerID != "" {
		return `NOT EXISTS (SELECT 1 FROM transcript_entries t WHERE t.campaign_id = ` + alias + `.campaign_id
			AND t.session_id = ` + alias + `.session_id AND NOT t.noncanon AND t.at BETWEEN ` + from + ` AND ` + to + `
			AND NOT ` + boundLineSQL(sqlLiteral(w.v.PlayerID)) + `)`
	}
	// A split span [p.at, next row's at) overlaps [from, to] when it
	// starts within (from, to], or it is the span in force at from: two
	// lookups in the primary key, not a scan of the session's rows.
	return `(NOT EXISTS (SELECT 1 FROM session_presence p WHERE p.campaign_id = ` + alias + `.campaign_id
			AND p.session_id = ` + alias + `.session_id AND p.split AND p.at > ` + from + ` AND p.at <= ` + to + `)
		AND NOT coalesce((SELECT p.split FROM session_presence p WHERE p.campaign_id = ` + alias + `.campaign_id
			AND p.session_id = ` + alias + `.session_id AND p.at <= ` + from + ` ORDER BY p.at DESC LIMIT 1), false))`
}

// chunkSpan is the span of lines chunk alias may hold.
func chunkSpan(alias string) (from, to string) {
	return "coalesce(" + alias + ".start_at, '-infinity')", "coalesce(" + alias + ".end_at, " + alias + ".start_at, 'infinity')"
}

// deniedCTEs returns the common tables (for a WITH list, without a
// trailing comma) whose last, denied, holds the ids of the chunks of
// campaign $1 a player viewer may not read: [view.chunkVisible]'s rule
// computed as sets. A chunk overlapping no split presence span holds only
// lines every player may read; so the campaign's split spans (splitSpansCTE)
// are read first, then the chunks of their sessions that overlap them (a
// range of chunks_session each), and of those any player may not read
// any, a bound player those holding a canon line of the span they may not
// read (unreadableLine: a range of transcript_entries_session_at each,
// stopping at the first). The table is empty in a campaign never split
// and as small as its split scenes otherwise: a search filters by it
// (notDenied) and pays for the split scenes, not for the campaign's size.
// It returns "" for a viewer who reads every chunk.
// TestSplitSceneReachesOnlyItsPlayers (in memory/access) checks both forms
// against the corpus' truth.
func (w view) deniedCTEs() string {
	if w.v.Role != memory.RolePlayer {
		return ""
	}
	from, to := chunkSpan("c")
	// A chunk [from, to] overlaps a span [p.at, p.until) when it starts
	// before the span ends (or has no start: it spans its session) and
	// ends at or after it starts.
	overlap := splitSpansCTE + `, overlap AS MATERIALIZED (
		SELECT p.session_id, p.at, p.until, p.players, o.id, o.from_at, o.to_at FROM p CROSS JOIN LATERAL (
		    SELECT c.id, ` + from + ` AS from_at, ` + to + ` AS to_at FROM chunks c
		    WHERE c.campaign_id = $1 AND c.session_id = p.session_id AND c.start_at < p.until AND ` + to + ` >= p.at
		    UNION ALL
		    SELECT c.id, ` + from + `, ` + to + ` FROM chunks c
		    WHERE c.campaign_id = $1 AND c.session_id = p.session_id AND c.start_at IS NULL
		    OFFSET 0) o)`
	if w.v.PlayerID == "" {
		return overlap + `, denied AS MATERIALIZED (SELECT DISTINCT id FROM overlap)`
	}
	// A lateral lookup, not EXISTS: as a semi-join, the plan read the
	// campaign's lines whole.
	return overlap + `, denied AS MATERIALIZED (
		SELECT DISTINCT p.id FROM overlap p CROSS JOIN LATERAL (
		    SELECT 1 FROM transcript_entries t WHERE t.campaign_id = $1 AND t.session_id = p.session_id
		      AND t.at >= greatest(p.at, p.from_at) AND t.at <= least(p.until, p.to_at) AND t.at < p.until AND NOT t.noncanon
		      AND ` + unreadableLine(sqlLiteral(w.v.PlayerID)) + ` LIMIT 1) u)`
}

// notDenied is the SQL predicate "chunk id col is not in deniedCTEs' denied
// table" ("true" for a viewer who reads every chunk). NOT IN over a
// subquery is planned as a hashed subplan: one hash probe a row.
func (w view) notDenied(col string) string {
	if w.v.Role != memory.RolePlayer {
		return "true"
	}
	return col + ` NOT IN (SELECT id FROM denied)`
}

// withCTEs is a WITH clause of the non-empty common tables among ctes ("" when
// all are empty), to put before a SELECT.
func withCTEs(ctes ...string) string {
	var out []string
	for _, c := range ctes {
		if c != "" {
			out = append(out, c)
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "WITH " + strings.Join(out, ", ") + "\n"
}

// visibleChunksSQL selects, in id order, the ids of the chunks of campaign
// $1 among $2 (text[], every chunk when NULL) a player viewer may read:
// those not denied (deniedCTEs).
func (w view) visibleChunksSQL() string {
	return withCTEs(w.deniedCTEs()) + `
		SELECT c.id FROM chunks c WHERE c.campaign_id = $1 AND ($2::text[] IS NULL OR c.id = ANY($2))
		  AND ` + w.notDenied("c.id") + `
		ORDER BY c.id`
}

// splitSpansCTE is the common table p: the split presence spans of
// campaign $1, each split row's players from at until the session's next
// row (a lookup in the primary key), read through session_presence_split
// (migration 0033): as many rows as the campaign has split scenes.
const splitSpansCTE = `p AS MATERIALIZED (
		SELECT s.session_id, s.at, s.players,
		       coalesce((SELECT q.at FROM session_presence q WHERE q.campaign_id = $1 AND q.session_id = s.session_id
		                 AND q.at > s.at ORDER BY q.at LIMIT 1), 'infinity') AS until
		FROM session_presence s WHERE s.campaign_id = $1 AND s.split)`

// unreadableCTE is the common tables p (splitSpansCTE) and unreadable: the
// lines (session_id, at, noncanon) of campaign $1 a player viewer may not
// read, as sets: [view.lineVisible]'s rule for every line at once. A line
// is in the span its session's last row at or before it opens; a line in
// no split span (said while the party was together, or before any
// presence was recorded) is readable. Any player may not read the lines of
// split spans; a bound player those of split spans their character did not
// witness (witnessedSQL).
func (w view) unreadableCTE() string {
	cond := "true"
	if w.v.PlayerID != "" {
		cond = unreadableLine(sqlLiteral(w.v.PlayerID))
	}
	return splitSpansCTE + `, unreadable AS MATERIALIZED (
		SELECT t.session_id, t.at, t.noncanon FROM p JOIN transcript_entries t ON t.campaign_id = $1 AND t.session_id = p.session_id
		    AND t.at >= p.at AND t.at < p.until
		WHERE ` + cond + `)`
}

// unreadableLine is the SQL predicate "line t of split span p (its players
// p.players) was not witnessed by player lit (an SQL literal) of campaign
// $1": witnessedSQL's rule, given the span.
func unreadableLine(lit string) string {
	return `t.speaker_id <> ` + lit + ` AND NOT (` + lit + ` = ANY(p.players) AND (t.speaker_id = ANY(p.players)
		    OR NOT EXISTS (SELECT 1 FROM player_characters pc WHERE pc.campaign_id = $1 AND pc.user_id = t.speaker_id)))`
}

// KnowledgeOf is what player userID's character knows from the sessions
// played from session fromSession on (every session when empty): the
// canon lines it witnessed, the canon facts revealed in its presence that
// players may see, and the DM's grants from that session's start on. The
// DM reads anyone's; a player only their own.
func (c *Campaign) KnowledgeOf(ctx context.Context, userID, fromSession string) (Knowledge, error) {
	k := Knowledge{UserID: userID}
	if err := c.ownKnowledge("reading what a character knows", userID); err != nil {
		return k, err
	}
	err := pgx.BeginFunc(ctx, c.db, func(tx pgx.Tx) error {
		var since time.Time
		if fromSession != "" {
			if err := tx.QueryRow(ctx, `SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $2`,
				c.id, fromSession).Scan(&since); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return fmt.Errorf("%w: no session %q", memory.ErrNotFound, fromSession)
				}
				return err
			}
		}
		err := tx.QueryRow(ctx, `SELECT p.entity_id, e.name FROM player_characters p
			JOIN entities e ON e.campaign_id = p.campaign_id AND e.id = p.entity_id
			WHERE p.campaign_id = $1 AND p.user_id = $2`, c.id, userID).Scan(&k.Character.EntityID, &k.Character.Name)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		k.Character.UserID = userID
		rows, err := tx.Query(ctx, `SELECT id FROM sessions WHERE campaign_id = $1 AND started_at >= $2
			ORDER BY started_at, id`, c.id, since)
		if err != nil {
			return err
		}
		if k.Sessions, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `SELECT `+entryColumnsT+` FROM transcript_entries t
			JOIN sessions s ON s.campaign_id = t.campaign_id AND s.id = t.session_id
			WHERE t.campaign_id = $1 AND s.started_at >= $3 AND NOT t.noncanon AND `+witnessedSQL+`
			ORDER BY s.started_at, t.session_id, t.at, t.id`, c.id, userID, since)
		if err != nil {
			return err
		}
		if k.Lines, err = pgx.CollectRows(rows, scanEntry); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM transcript_entries t
			JOIN sessions s ON s.campaign_id = t.campaign_id AND s.id = t.session_id
			WHERE t.campaign_id = $1 AND s.started_at >= $3 AND NOT t.noncanon AND NOT `+witnessedSQL,
			c.id, userID, since).Scan(&k.Withheld); err != nil {
			return err
		}
		// Facts: canon, visible to players, and revealed in the character's
		// presence: a line they rest on was witnessed, said with the party
		// together, or, of a split scene, with every split line the fact
		// rests on witnessed too (as view.factRevealed: a player at the
		// table outside the scene witnessed their own line, not the
		// scene's). A fact resting on no line (the DM's, an import's) is
		// no revelation: the DM grants it. A fact with an end the player
		// may not see (first heard in a split scene they were not in) is
		// hidden with it, as in every read of the graph
		// (view.endsVisibleSQL): the DM reading a player's knowledge is
		// shown what that player knows.
		player := view{v: memory.PlayerViewerOf(userID), campaign: c.id}
		rows, err = tx.Query(ctx, `
			SELECT r.id, s.name, r.rel_type, t2.name, r.session_id, r.established_at
			FROM relationships r
			JOIN entities s ON s.campaign_id = r.campaign_id AND s.id = r.source_id
			JOIN entities t2 ON t2.campaign_id = r.campaign_id AND t2.id = r.target_id
			WHERE r.campaign_id = $1 AND r.status = 'active'
			  AND r.attributes->'secret' IS DISTINCT FROM 'true'::jsonb
			  AND `+player.endsVisibleSQL("r")+`
			  AND EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
			               JOIN sessions st ON st.campaign_id = t.campaign_id AND st.id = t.session_id
			               WHERE fe.fact_id = r.id AND NOT t.noncanon AND st.started_at >= $3 AND `+witnessedSQL+`
			                 AND (`+publicLineSQL+` OR NOT EXISTS (SELECT 1 FROM fact_evidence fe2
			                      JOIN transcript_entries t ON t.id = fe2.entry_id
			                      WHERE fe2.fact_id = r.id AND NOT `+publicLineSQL+` AND NOT `+witnessedSQL+`)))
			ORDER BY r.established_at, r.id`, c.id, userID, since)
		if err != nil {
			return err
		}
		var f KnownFact
		if _, err := pgx.ForEachRow(rows, []any{&f.ID, &f.Source, &f.Rel, &f.Target, &f.SessionID, &f.At},
			func() error { k.Facts = append(k.Facts, f); return nil }); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return k, fmt.Errorf("reading what %s's character knows: %w", userID, err)
	}
	if k.Grants, err = c.grantsFrom(ctx, userID, fromSession); err != nil {
		return k, err
	}
	return k, nil
}

// grantsFrom lists the grants of userID from session fromSession's start
// on (all when empty).
func (c *Campaign) grantsFrom(ctx context.Context, userID, fromSession string) ([]Grant, error) {
	var since time.Time
	if fromSession != "" {
		if err := c.db.QueryRow(ctx, `SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $2`,
			c.id, fromSession).Scan(&since); err != nil {
			return nil, fmt.Errorf("reading the grants of %s: %w", userID, err)
		}
	}
	return c.Grants(ctx, userID, since)
}

// LastPresentSession is the last session (in the order played) in which
// player userID was present at some time or spoke; "" when none. The DM
// reads anyone's; a player only their own.
func (c *Campaign) LastPresentSession(ctx context.Context, userID string) (string, error) {
	if err := c.ownKnowledge("reading a player's last session", userID); err != nil {
		return "", err
	}
	var id string
	err := c.db.QueryRow(ctx, `SELECT s.id FROM sessions s WHERE s.campaign_id = $1 AND (
			EXISTS (SELECT 1 FROM session_presence p WHERE p.campaign_id = $1 AND p.session_id = s.id AND $2 = ANY(p.players))
			OR EXISTS (SELECT 1 FROM transcript_entries t WHERE t.campaign_id = $1 AND t.session_id = s.id AND t.speaker_id = $2))
		ORDER BY s.started_at DESC, s.id DESC LIMIT 1`, c.id, userID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading the last session of %s: %w", userID, err)
	}
	return id, nil
}

// forgetPlayerKnowledge removes what the store keeps about a player who
// asked to be forgotten: their character, their grants and their name in
// presence rows (run inside ForgetSpeaker's transaction).
func forgetPlayerKnowledge(ctx context.Context, tx pgx.Tx, campaign, userID string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM player_characters WHERE campaign_id = $1 AND user_id = $2`, campaign, userID); err != nil {
		return fmt.Errorf("deleting the player's character: %w", err)
	}
	if _, err := tx.Exec(ctx, `DELETE FROM player_grants WHERE campaign_id = $1 AND user_id = $2`, campaign, userID); err != nil {
		return fmt.Errorf("deleting the player's grants: %w", err)
	}
	if _, err := tx.Exec(ctx, `UPDATE session_presence SET players = array_remove(players, $2)
		WHERE campaign_id = $1 AND $2 = ANY(players)`, campaign, userID); err != nil {
		return fmt.Errorf("removing the player from presence: %w", err)
	}
	return nil
}

// SetPlayer records that userID plays entity entityID: the campaign
// file's players key (a writer's path; the DM's is
// Campaign.SetPlayerCharacter). As there, the character's entity is
// published.
func (l *SessionLog) SetPlayer(ctx context.Context, userID, entityID string) error {
	if err := validUserID(userID); err != nil {
		return err
	}
	tag, err := l.db.Exec(ctx, `WITH pub AS (UPDATE entities SET scene_only = false WHERE campaign_id = $1 AND id = $3 AND scene_only)
		INSERT INTO player_characters (campaign_id, user_id, entity_id)
		SELECT $1, $2, id FROM entities WHERE campaign_id = $1 AND id = $3
		ON CONFLICT (campaign_id, user_id) DO UPDATE SET entity_id = excluded.entity_id, updated_at = now()`,
		l.campaign, userID, entityID)
	if err != nil {
		return fmt.Errorf("setting the character of %s: %w", userID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("setting the character of %s: %w: no entity %q", userID, memory.ErrNotFound, entityID)
	}
	return nil
}

// SplitLines are the lines among ids of session sessionID said while the
// DM had split the party (in a split presence span: what any player may not
// read, see publicLineSQL), in id order. Post-session extraction asks it of
// each window it extracts: what it draws from a window holding such a line
// may come from the split scene. The system's and the DM's handles only.
func (l *SessionLog) SplitLines(ctx context.Context, sessionID string, ids []int64) ([]int64, error) {
	if !l.view.system() {
		return nil, fmt.Errorf("reading which lines were said in a split scene: %w: for the DM only (this handle reads as %s)",
			memory.ErrForbidden, l.view.v)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := l.db.Query(ctx, `SELECT t.id FROM transcript_entries t
		WHERE t.campaign_id = $1 AND t.session_id = $2 AND t.id = ANY($3) AND NOT `+publicLineSQL+`
		ORDER BY t.id`, l.campaign, sessionID, ids)
	if err != nil {
		return nil, fmt.Errorf("reading the split-scene lines of session %q: %w", sessionID, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("reading the split-scene lines of session %q: %w", sessionID, err)
	}
	return out, nil
}
