package postgres

import (
	"context"
	"encoding/json"
	"fmt"
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
	ID    int64     `json:"id"`
	At    time.Time `json:"at"`
	Kind  string    `json:"kind"`
	Ref   string    `json:"ref"`
	Op    string    `json:"op"`
	Actor string    `json:"actor,omitempty"`
}

// ChangesSince returns up to limit changes after cursor, oldest first,
// leaving out those made by exclude (when not empty).
func (c *Campaign) ChangesSince(ctx context.Context, cursor int64, exclude string, limit int) ([]Change, error) {
	if limit <= 0 {
		limit = 500
	}
	rows, err := c.l1.db.Query(ctx, `
		SELECT ch.id, ch.at, ch.kind, ch.ref, ch.op, ch.actor FROM graph_changes ch
		WHERE ch.campaign_id = $1 AND ch.id > $2 AND ($3 = '' OR ch.actor <> $3)
		  AND `+c.changeVisible()+`
		ORDER BY ch.id LIMIT $4`, c.id, cursor, exclude, limit)
	if err != nil {
		return nil, fmt.Errorf("reading changes: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[Change])
}

// changeVisible is the SQL predicate true when the viewer may see change
// ch: a change of a fact it may not see (or one deleted since) is left out
// for all but the DM.
func (c *Campaign) changeVisible() string {
	if c.view.system() {
		return "true"
	}
	return `(ch.kind <> 'fact' OR EXISTS (SELECT 1 FROM relationships r
		WHERE r.campaign_id = ch.campaign_id AND r.id::text = ch.ref AND ` + c.view.factVisible("r") + `))`
}

// LastChange is the newest change id of the campaign (0 if none).
func (c *Campaign) LastChange(ctx context.Context) (int64, error) {
	var id int64
	err := c.l1.db.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM graph_changes WHERE campaign_id = $1`, c.id).Scan(&id)
	return id, err
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

// Counts counts the campaign's memory in one query; facts the viewer may
// not see are not counted.
func (c *Campaign) Counts(ctx context.Context) (Counts, error) {
	var n Counts
	err := c.l1.db.QueryRow(ctx, `SELECT
		(SELECT count(*) FROM entities WHERE campaign_id = $1),
		(SELECT count(*) FROM relationships r WHERE r.campaign_id = $1 AND r.status = 'active' AND `+c.view.factVisible("r")+`),
		(SELECT count(*) FROM relationships r WHERE r.campaign_id = $1 AND r.status = 'pending' AND `+c.view.factVisible("r")+`),
		(SELECT count(*) FROM sessions WHERE campaign_id = $1),
		(SELECT count(*) FROM transcript_entries WHERE campaign_id = $1),
		(SELECT count(*) FROM chunks WHERE campaign_id = $1),
		(SELECT count(*) FROM proposals WHERE campaign_id = $1 AND status = 'pending')`, c.id).
		Scan(&n.Entities, &n.Facts, &n.Pending, &n.Sessions, &n.Entries, &n.Chunks, &n.Proposals)
	if err != nil {
		return n, fmt.Errorf("counting: %w", err)
	}
	return n, nil
}
