package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// InTxAs is InTx with the writer named: the change log records actor for
// every change fn makes, so that agents syncing later can skip their own.
func (s *Store) InTxAs(ctx context.Context, campaignID, actor string, fn func(*Campaign) error) error {
	return s.InTx(ctx, campaignID, func(c *Campaign) error {
		if _, err := c.l1.db.Exec(ctx, "SELECT set_config('glyphoxa.actor', $1, true)", actor); err != nil {
			return fmt.Errorf("naming the writer: %w", err)
		}
		return fn(c)
	})
}

// Change is one entry of the knowledge graph's change log.
type Change struct {
	// ID is the change's id in the log, numbered for every change; a
	// player's sync leaves it out (zero), since the steps between ids
	// would count the changes the player may not see.
	ID    int64     `json:"id,omitempty"`
	At    time.Time `json:"at"`
	Kind  string    `json:"kind"`
	Ref   string    `json:"ref"`
	Op    string    `json:"op"`
	Actor string    `json:"actor,omitempty"`
	// Pos is where the change stands in the order readers see changes
	// commit: what [Campaign.ChangesSince]'s cursor counts (see
	// [Campaign.LastChange]).
	Pos int64 `json:"-"`
}

// ChangesSince returns up to limit changes after cursor, in the order
// they were published, leaving out those made by exclude (when not
// empty), and the cursor to pass next: the last change's position when
// limit were returned (more may follow), else the newest position the
// handle's viewer may see ([Campaign.LastChange]), read in the same
// statement, so that nothing published between the two is stepped over.
//
// cursor is a [Change.Pos] or a [Campaign.LastChange]. Positions are
// given in the order changes commit ([Campaign.publishChanges]), not in
// the order their ids were taken: a change committed late by a long
// transaction comes after a cursor read before its commit. Changes to the
// DM's private notes (the kg "dm" level) are never listed here: only
// KGSync shows them, to the DM.
func (c *Campaign) ChangesSince(ctx context.Context, cursor int64, exclude string, limit int) ([]Change, int64, error) {
	return c.ChangesSinceFor(ctx, cursor, exclude, limit, true)
}

// ChangesSinceFor is ChangesSince for a caller who is the DM or not: for
// anyone else, changes to secret facts and to others' proposals (a player's
// or an NPC's pending fact) are left out, so the log does not tell that a
// hidden fact exists.
func (c *Campaign) ChangesSinceFor(ctx context.Context, cursor int64, exclude string, limit int, dm bool) ([]Change, int64, error) {
	if limit <= 0 {
		limit = 500
	}
	if err := c.publishChanges(ctx); err != nil {
		return nil, cursor, err
	}
	rows, err := c.l1.db.Query(ctx, `
		SELECT (`+c.lastPosSQL()+`) AS top, ch.id, ch.at, ch.kind, ch.ref, ch.op, ch.actor, ch.pos
		FROM (SELECT 1) one LEFT JOIN LATERAL (
		    SELECT * FROM graph_changes ch
		    WHERE ch.campaign_id = $1 AND ch.pos > $2 AND ($3 = '' OR ch.actor <> $3) AND ch.kind NOT IN ('dm_node', 'dm_edge')
		      AND ($5 OR ch.kind <> 'fact' OR EXISTS (SELECT 1 FROM relationships r WHERE r.campaign_id = $1 AND r.id::text = ch.ref
		           AND r.proposed_by = '' AND r.attributes->'secret' IS DISTINCT FROM 'true'::jsonb))
		      AND `+c.changeVisible()+`
		    ORDER BY ch.pos LIMIT $4) ch ON true
		ORDER BY ch.pos`, c.id, cursor, exclude, limit, dm)
	if err != nil {
		return nil, cursor, fmt.Errorf("reading changes: %w", err)
	}
	var out []Change
	var top int64
	var id, pos *int64
	var at *time.Time
	var kind, ref, op, actor *string
	_, err = pgx.ForEachRow(rows, []any{&top, &id, &at, &kind, &ref, &op, &actor, &pos}, func() error {
		if id != nil {
			out = append(out, Change{ID: *id, At: *at, Kind: *kind, Ref: *ref, Op: *op, Actor: *actor, Pos: *pos})
		}
		return nil
	})
	if err != nil {
		return nil, cursor, fmt.Errorf("reading changes: %w", err)
	}
	next := max(cursor, top)
	if len(out) == limit {
		next = out[len(out)-1].Pos
	}
	return out, next, nil
}

// changeVisible is the SQL predicate true when the viewer may see change
// ch: a change of a fact it may not see (or one deleted since) is left out
// for all but the DM.
func (c *Campaign) changeVisible() string {
	if c.view.system() {
		return "true"
	}
	return `(ch.kind <> 'fact' OR EXISTS (SELECT 1 FROM relationships r
		WHERE r.campaign_id = ch.campaign_id AND r.id::text = ch.ref AND ` + c.view.factVisible("r") + `)) AND ` + c.entityChangeVisible()
}

// entityChangeVisible is the SQL predicate true when the viewer may see
// change ch if it is an entity's: the entity is one the viewer may see
// ([view.entityVisible]), or it is gone and was not scene_only when it
// was deleted (migration 0032 marks the changes of a scene_only entity
// deleted or merged away): a player's change feed and kg_sync name no
// entity first heard in a split scene they may not know of. Nor do they
// count the changes that touched only an entity's or a fact's DM-only
// attributes (dm_only, migrations 0045 and 0048): the DM's notes.
func (c *Campaign) entityChangeVisible() string {
	if c.view.v.Role != memory.RolePlayer {
		return "true"
	}
	return `(NOT ch.dm_only AND (ch.kind <> 'entity' OR (
		    EXISTS (SELECT 1 FROM entities ge WHERE ge.campaign_id = ch.campaign_id AND ge.id = ch.ref
		        AND ` + c.view.entityVisible("ge") + `)
		    OR (NOT ch.scene_only AND NOT EXISTS (SELECT 1 FROM entities ge WHERE ge.campaign_id = ch.campaign_id AND ge.id = ch.ref)))))`
}

// publishChanges gives the campaign's committed changes that have no
// position yet the next ones (glyphoxa_publish_changes, migration 0044),
// in statements of their own, so that a read after them sees changes in
// the order they became visible: a change committed late by a long
// transaction is published after the changes a reader has already
// counted, and a cursor of positions never steps over it. A backlog is
// published publishBatch at a time, each batch committed: a statement
// that numbered a large import at once ran past the store's statement
// timeout, was rolled back, and the next reader started over. Call it
// outside a transaction: within one, the campaign's publication lock is
// held until the transaction ends, and every other reader waits for it.
func (c *Campaign) publishChanges(ctx context.Context) error {
	for {
		var n int
		if err := c.l1.db.QueryRow(ctx, `SELECT glyphoxa_publish_changes($1, $2)`, c.id, publishBatch).Scan(&n); err != nil {
			return fmt.Errorf("publishing the change log: %w", err)
		}
		if n < publishBatch {
			return nil
		}
	}
}

// publishBatch is how many changes one statement publishes: 13–18 µs a
// change on a quiet machine, 40–90 under load (every index of the log is
// written again; BenchmarkPublishBacklog), so a batch takes well under a
// second, against the store's 10 s statement timeout.
const publishBatch = 5000

// LastChange is the position of the campaign's newest published change
// (0 if none), after publishing those committed since the last reader
// ([Change.Pos]): the cursor for [Campaign.ChangesSince], and a number
// that moves whenever a change commits, also one with an older id.
//
// For a handle bound to a player it is the newest change they may see
// ([Campaign.changeVisible]): their cursor (the MCP sync's) does not move
// when something hidden from them is written, so it does not tell them
// that an entity first heard in a split scene they were not in, or a fact
// they may not read, was written. It reads the campaign's log backwards
// from its newest change, and stops at the first the player may see:
// usually the newest. A cache of a player's reads is keyed on
// [Campaign.Revision] instead.
func (c *Campaign) LastChange(ctx context.Context) (int64, error) {
	if err := c.publishChanges(ctx); err != nil {
		return 0, err
	}
	var id int64
	if err := c.l1.db.QueryRow(ctx, `SELECT `+c.lastPosSQL(), c.id).Scan(&id); err != nil {
		return 0, fmt.Errorf("reading the last change: %w", err)
	}
	return id, nil
}

// lastPosSQL is the SQL expression of [Campaign.LastChange] for campaign
// $1, once published.
func (c *Campaign) lastPosSQL() string {
	if c.view.v.Role != memory.RolePlayer {
		return `coalesce((SELECT max(pos) FROM graph_changes WHERE campaign_id = $1), 0)`
	}
	// The DM's private notes are never listed to a player: their cursor
	// does not move when the DM writes one.
	return `coalesce((SELECT ch.pos FROM graph_changes ch WHERE ch.campaign_id = $1 AND ch.pos IS NOT NULL
		AND ch.kind NOT IN ('dm_node', 'dm_edge') AND ` + c.changeVisible() + `
		ORDER BY ch.pos DESC LIMIT 1), 0)`
}

// lastChangeSQL is the SQL expression of the newest change id of campaign
// $1 the handle's viewer may see, as [Campaign.lastPosSQL] is of its
// position: where an agent session's [ChangeCursor] starts.
func (c *Campaign) lastChangeSQL() string {
	if c.view.v.Role != memory.RolePlayer {
		return `coalesce((SELECT max(id) FROM graph_changes WHERE campaign_id = $1), 0)`
	}
	return `coalesce((SELECT ch.id FROM graph_changes ch WHERE ch.campaign_id = $1 AND ` + c.changeVisible() + `
		ORDER BY ch.id DESC LIMIT 1), 0)`
}

// Revision is the campaign's newest change id whatever the handle's
// viewer may see (0 if none): what the server's own caches of a viewer's
// reads are keyed on (the console's graph snapshot, its recaps). Those must
// be dropped when something hidden from the viewer changes too: a fact a
// player has read and the DM has made secret since leaves their view, and
// its change is no longer one they may see, so their [Campaign.LastChange]
// does not move. Never show it to a player: it moves when something they
// may not see is written.
func (c *Campaign) Revision(ctx context.Context) (int64, error) {
	var id int64
	if err := c.l1.db.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM graph_changes WHERE campaign_id = $1`, c.id).Scan(&id); err != nil {
		return 0, fmt.Errorf("reading the last change: %w", err)
	}
	return id, nil
}

// ChangeCursor is how far a server-side cache of the graph has read the
// change log, whatever its viewer may see. Ids are taken when a change is
// written but seen when its transaction commits, so a long transaction
// (extraction writing a session's facts) can commit changes with ids below
// one a short transaction (a DM's confirm) committed first: a cursor of
// the newest id alone would step over them for good. Running lists the
// transactions in progress when the cursor was read
// (pg_snapshot_xip): a change with an id up to ID that the reader has not
// seen was written by one of them (graph_changes.xid, migration 0038), as
// a transaction begun later takes a higher id.
type ChangeCursor struct {
	ID      int64
	Running []int64
}

// Covers reports whether a cache read at c has seen everything now (a
// cursor read later) has: no newer change, and no transaction of c's
// Running has ended since.
func (c ChangeCursor) Covers(now ChangeCursor) bool {
	if c.ID != now.ID {
		return false
	}
	for _, x := range c.Running {
		if !slices.Contains(now.Running, x) {
			return false
		}
	}
	return true
}

// Cursor is the campaign's change cursor now (see [ChangeCursor]). Like
// [Campaign.Revision] it is never shown to a player.
func (c *Campaign) Cursor(ctx context.Context) (ChangeCursor, error) {
	var cur ChangeCursor
	err := c.l1.db.QueryRow(ctx, `SELECT coalesce(max(id), 0), `+runningSQL+` FROM graph_changes WHERE campaign_id = $1`,
		c.id).Scan(&cur.ID, &cur.Running)
	if err != nil {
		return cur, fmt.Errorf("reading the change cursor: %w", err)
	}
	return cur, nil
}

// runningSQL is the transactions in progress in the statement's snapshot,
// as a bigint[].
const runningSQL = `ARRAY(SELECT x::text::bigint FROM pg_snapshot_xip(pg_current_snapshot()) x ORDER BY 1)`

// lateSQL is the SQL predicate true when change ch, with an id up to $2,
// was written by a transaction of $3 (a cursor's Running): one that was in
// progress when the cursor was read, and has committed since (the row is
// seen).
const lateSQL = `(ch.id <= $2 AND ch.xid = ANY($3::text[]::xid8[]))`

// ChangesAfter returns the changes a cache at cur has not seen, oldest
// first, at most limit, and the cursor after them: those with a higher
// id, and those with a lower one that a transaction running at cur has
// committed since. Changes to the DM's private notes are left out, as in
// [Campaign.ChangesSince]. For the server's caches: the system's and the
// DM's handles only.
func (c *Campaign) ChangesAfter(ctx context.Context, cur ChangeCursor, limit int) ([]Change, ChangeCursor, error) {
	if !c.view.system() {
		return nil, cur, fmt.Errorf("reading the change log: %w: it is for the server's caches", memory.ErrForbidden)
	}
	// One statement, one snapshot: the transactions running, the newest
	// id and the changes are read as of the same moment.
	rows, err := c.l1.db.Query(ctx, `
		WITH now AS (SELECT `+runningSQL+` AS running,
		                    (SELECT coalesce(max(id), 0) FROM graph_changes WHERE campaign_id = $1) AS top)
		SELECT now.running, now.top, ch.id, ch.at, ch.kind, ch.ref, ch.op, ch.actor
		FROM now LEFT JOIN LATERAL (
		    SELECT * FROM graph_changes ch
		    WHERE ch.campaign_id = $1 AND ch.kind NOT IN ('dm_node', 'dm_edge') AND (ch.id > $2 OR `+lateSQL+`)
		    ORDER BY ch.id LIMIT $4) ch ON true
		ORDER BY ch.id`, c.id, cur.ID, xidTexts(cur.Running), limit)
	if err != nil {
		return nil, cur, fmt.Errorf("reading changes: %w", err)
	}
	var out []Change
	var next ChangeCursor
	var top int64
	var id *int64
	var at *time.Time
	var kind, ref, op, actor *string
	_, err = pgx.ForEachRow(rows, []any{&next.Running, &top, &id, &at, &kind, &ref, &op, &actor}, func() error {
		if id != nil {
			out = append(out, Change{ID: *id, At: *at, Kind: *kind, Ref: *ref, Op: *op, Actor: *actor})
		}
		return nil
	})
	if err != nil {
		return nil, cur, fmt.Errorf("reading changes: %w", err)
	}
	next.ID = max(cur.ID, top)
	if len(out) == limit {
		// More may follow: read them from cur again.
		next = cur
	}
	return out, next, nil
}

// xidTexts are transaction ids as text, for an xid8[] parameter.
func xidTexts(xs []int64) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = strconv.FormatInt(x, 10)
	}
	return out
}

// EntityChanges reports whether the campaign's entities changed after a
// reader of their names (retrieval's name index) read them at cur, and
// the cursor of entity changes now: a newer entity change, or one that a
// transaction running at cur has committed since, with a lower id
// ([ChangeCursor]; an extraction's long transaction writing the session's
// new people and places, a DM's edit committing first). New facts, which
// arrive all through a live session, do not count. The zero cursor is
// changed by any entity. Server-side only, like [Campaign.Cursor].
func (c *Campaign) EntityChanges(ctx context.Context, cur ChangeCursor) (bool, ChangeCursor, error) {
	var next ChangeCursor
	var late bool
	err := c.l1.db.QueryRow(ctx, `
		SELECT `+runningSQL+`, coalesce((SELECT max(id) FROM graph_changes WHERE campaign_id = $1 AND kind = 'entity'), 0),
		       EXISTS (SELECT 1 FROM graph_changes ch WHERE ch.campaign_id = $1 AND ch.kind = 'entity' AND `+lateSQL+`)`,
		c.id, cur.ID, xidTexts(cur.Running)).Scan(&next.Running, &next.ID, &late)
	if err != nil {
		return false, cur, fmt.Errorf("reading the entity changes: %w", err)
	}
	return late || next.ID != cur.ID, next, nil
}

// Proposal is a change an agent without DM rights asked for.
type Proposal struct {
	ID        int64           `json:"id"`
	Kind      string          `json:"kind"`
	Payload   json.RawMessage `json:"payload"`
	Actor     string          `json:"actor"`
	Status    string          `json:"status"`
	CreatedAt time.Time       `json:"created_at"`
}

// Propose records a proposal and returns its id.
func (c *Campaign) Propose(ctx context.Context, kind string, payload any, actor string) (int64, error) {
	var id int64
	err := c.l1.db.QueryRow(ctx, `INSERT INTO proposals (campaign_id, kind, payload, actor) VALUES ($1, $2, $3, $4) RETURNING id`,
		c.id, kind, payload, actor).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("recording a %s proposal: %w", kind, err)
	}
	return id, nil
}

// PendingProposals lists the proposals waiting for the DM, oldest first.
func (c *Campaign) PendingProposals(ctx context.Context) ([]Proposal, error) {
	rows, err := c.l1.db.Query(ctx, `SELECT id, kind, payload, actor, status, created_at FROM proposals
		WHERE campaign_id = $1 AND status = 'pending' ORDER BY id`, c.id)
	if err != nil {
		return nil, fmt.Errorf("listing proposals: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Proposal])
}

// ResolveProposal marks a pending proposal accepted or rejected and returns
// it; applying an accepted one is the caller's job, in the same transaction.
func (c *Campaign) ResolveProposal(ctx context.Context, id int64, accept bool) (Proposal, error) {
	status := "rejected"
	if accept {
		status = "accepted"
	}
	rows, err := c.l1.db.Query(ctx, `UPDATE proposals SET status = $3, resolved_at = now()
		WHERE campaign_id = $1 AND id = $2 AND status = 'pending'
		RETURNING id, kind, payload, actor, status, created_at`, c.id, id, status)
	if err != nil {
		return Proposal{}, fmt.Errorf("resolving proposal %d: %w", id, err)
	}
	p, err := pgx.CollectExactlyOneRow(rows, pgx.RowToStructByPos[Proposal])
	if isNoRows(err) {
		return Proposal{}, fmt.Errorf("proposal %d: %w (or already resolved)", id, memory.ErrNotFound)
	}
	return p, err
}

// Counts are the sizes of a campaign's memory.
type Counts struct {
	Entities  int `json:"entities"`
	Facts     int `json:"facts"`
	Pending   int `json:"pending_facts"`
	Sessions  int `json:"sessions"`
	Entries   int `json:"transcript_entries"`
	Chunks    int `json:"chunks"`
	Proposals int `json:"pending_proposals"`
}

// Counts counts the campaign's memory in one query; what the viewer may
// not read is not counted: facts it may not see, for a player the
// transcript lines and chunks of split scenes they were not in (a count
// would tell them how much was said there), and for anyone but the DM the
// pending proposals (only the DM reads them: a count would tell how many
// others made, and when the DM settled them).
func (c *Campaign) Counts(ctx context.Context) (Counts, error) {
	var n Counts
	args := []any{c.id}
	// Lines as the viewer's session list counts them (view.sessionLines).
	ctes, count := c.view.sessionLines("s")
	entries := `(` + withCTEs(ctes) + `SELECT coalesce(sum(` + count + `), 0)::bigint FROM sessions s WHERE s.campaign_id = $1)`
	chunks := `(SELECT count(*) FROM chunks WHERE campaign_id = $1)`
	proposals := `(SELECT count(*) FROM proposals WHERE campaign_id = $1 AND status = 'pending')`
	if !c.view.system() {
		proposals = `0`
	}
	if c.view.v.Role == memory.RolePlayer {
		// As sets, as the visible chunks are listed (view.visibleChunksSQL).
		chunks = `(SELECT count(*) FROM (` + c.view.visibleChunksSQL() + `) v)`
		args = append(args, nil) // $2: every chunk
	}
	err := c.l1.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM entities e WHERE e.campaign_id = $1 AND `+c.view.entityVisible("e")+`),
		(SELECT count(*) FROM relationships r WHERE r.campaign_id = $1 AND r.status = 'active' AND `+c.view.factVisible("r")+`),
		(SELECT count(*) FROM relationships r WHERE r.campaign_id = $1 AND r.status = 'pending' AND `+c.view.factVisible("r")+`),
		(SELECT count(*) FROM sessions WHERE campaign_id = $1),
		`+entries+`,
		`+chunks+`,
		`+proposals, args...).
		Scan(&n.Entities, &n.Facts, &n.Pending, &n.Sessions, &n.Entries, &n.Chunks, &n.Proposals)
	if err != nil {
		return n, fmt.Errorf("counting: %w", err)
	}
	return n, nil
}

// SessionChanges is what changed in a campaign's memory since a session
// ended: the DM's "what changed since last session".
type SessionChanges struct {
	// Since is the session; empty when there was none to count from.
	Since string
	// Entities are the names of entities created or changed.
	Entities []string
	// Facts became canon; Retired stopped holding.
	Facts, Retired []FactWithNames
	// Pending facts, open Conflicts and pending Proposals that arrived
	// since.
	Pending, Conflicts, Proposals int
}

// changesListed caps the entities and facts SessionChanges lists.
const changesListed = 30

// ChangesSinceSession returns what changed since sessionID ended (or
// started, if it has not ended); with an empty sessionID, since the last
// session that ended.
func (c *Campaign) ChangesSinceSession(ctx context.Context, sessionID string) (SessionChanges, error) {
	out := SessionChanges{Since: sessionID}
	db := c.l1.db
	var since time.Time
	var err error
	if sessionID != "" {
		err = db.QueryRow(ctx, `SELECT coalesce(ended_at, started_at) FROM sessions WHERE campaign_id = $1 AND id = $2`,
			c.id, sessionID).Scan(&since)
		if isNoRows(err) {
			return out, fmt.Errorf("session %q: %w", sessionID, memory.ErrNotFound)
		}
	} else {
		err = db.QueryRow(ctx, `SELECT id, ended_at FROM sessions WHERE campaign_id = $1 AND ended_at IS NOT NULL
			ORDER BY ended_at DESC, id DESC LIMIT 1`, c.id).Scan(&out.Since, &since)
		if isNoRows(err) {
			err = nil
		}
	}
	if err != nil {
		return out, fmt.Errorf("finding when the session ended: %w", err)
	}
	rows, err := db.Query(ctx, `
		SELECT e.name FROM entities e
		WHERE e.campaign_id = $1 AND EXISTS (SELECT 1 FROM graph_changes g
		      WHERE g.campaign_id = $1 AND g.kind = 'entity' AND g.ref = e.id AND g.at > $2)
		ORDER BY lower(e.name) LIMIT $3`, c.id, since, changesListed)
	if err != nil {
		return out, fmt.Errorf("listing changed entities: %w", err)
	}
	if out.Entities, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return out, fmt.Errorf("listing changed entities: %w", err)
	}
	rows, err = db.Query(ctx, `
		SELECT r.id, r.status, s.name, r.rel_type, t.name FROM relationships r
		JOIN entities s ON s.campaign_id = r.campaign_id AND s.id = r.source_id
		JOIN entities t ON t.campaign_id = r.campaign_id AND t.id = r.target_id
		WHERE r.campaign_id = $1 AND r.proposed_by = '' AND r.status IN ('active', 'retired')
		  AND EXISTS (SELECT 1 FROM graph_changes g WHERE g.campaign_id = $1 AND g.kind = 'fact' AND g.ref = r.id::text AND g.at > $2)
		ORDER BY r.id LIMIT $3`, c.id, since, 2*changesListed)
	if err != nil {
		return out, fmt.Errorf("listing changed facts: %w", err)
	}
	type fact struct {
		f      FactWithNames
		status string
	}
	fs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (fact, error) {
		var x fact
		err := row.Scan(&x.f.ID, &x.status, &x.f.SourceName, &x.f.Type, &x.f.TargetName)
		return x, err
	})
	if err != nil {
		return out, fmt.Errorf("listing changed facts: %w", err)
	}
	for _, x := range fs {
		switch {
		case x.status == string(memory.StatusActive) && len(out.Facts) < changesListed:
			out.Facts = append(out.Facts, x.f)
		case x.status == string(memory.StatusRetired) && len(out.Retired) < changesListed:
			out.Retired = append(out.Retired, x.f)
		}
	}
	err = db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'pending' AND created_at > $2),
		(SELECT count(*) FROM fact_conflicts WHERE campaign_id = $1 AND resolution = '' AND created_at > $2),
		(SELECT count(*) FROM proposals WHERE campaign_id = $1 AND status = 'pending' AND created_at > $2)`, c.id, since).
		Scan(&out.Pending, &out.Conflicts, &out.Proposals)
	if err != nil {
		return out, fmt.Errorf("counting what waits for review: %w", err)
	}
	return out, nil
}
