package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Entities first heard in a split scene (migration 0032). Post-session
// extraction writes an entity it draws from a window holding lines of a
// split scene, and named in none of its lines said with the party
// together, with [Graph.AddSceneEntity]: the entity is scene_only and
// rests on the lines it was heard in (entity_evidence). A player sees it
// only through a trace they may read ([view.entityVisible]); later
// windows naming it add their lines ([Graph.AddEntityEvidence]), so a name
// said with the party together reaches every player. The DM, who reads
// every entity, publishes one with [Graph.PublishEntity]; editing it
// (UpdateEntity, UpsertEntity, kg_put_node, a campaign file) leaves it as
// it is.

// AddSceneEntity creates entity e as first heard in a split scene, resting
// on the transcript lines heard (ids of the campaign's lines; at least
// one), in one transaction: a process killed halfway leaves neither the
// entity nor its evidence, never an entity every player sees. An entity
// that already exists with e's id is replaced as [Graph.UpsertEntity]
// does, keeping whether it is scene_only; its evidence grows by heard only
// if it is. System and DM handles only.
func (g *Graph) AddSceneEntity(ctx context.Context, e memory.Entity, heard []int64) error {
	if err := g.dmOnly("saving an entity heard in a split scene"); err != nil {
		return err
	}
	if err := validEntity(e); err != nil {
		return err
	}
	if len(heard) == 0 {
		return fmt.Errorf("%w: entity %q heard in a split scene without the lines it was heard in", memory.ErrInvalid, e.ID)
	}
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `
			INSERT INTO entities (campaign_id, id, type, name, aliases, attributes, scene_only) VALUES ($1, $2, $3, $4, $5, $6, true)
			ON CONFLICT (campaign_id, id) DO UPDATE SET
			    type = excluded.type, name = excluded.name, aliases = excluded.aliases, attributes = excluded.attributes,
			    updated_at = now()
			WHERE (entities.type, entities.name, entities.aliases, entities.attributes)
			      IS DISTINCT FROM (excluded.type, excluded.name, excluded.aliases, excluded.attributes)`,
			entityArgs(g.campaign, e)...); err != nil {
			return err
		}
		return addEntityEvidence(ctx, tx, g.campaign, []string{e.ID}, [][]int64{heard})
	})
	if err != nil {
		return fmt.Errorf("saving entity %q heard in a split scene: %w", e.ID, err)
	}
	return nil
}

// AddEntityEvidence records that the entities of heard (by id) were heard
// in the given transcript lines: post-session extraction's later windows
// naming an entity. Only scene_only entities keep evidence (another is
// seen by every player anyway); unknown entities and lines of another
// campaign are ignored. System and DM handles only.
func (g *Graph) AddEntityEvidence(ctx context.Context, heard map[string][]int64) error {
	if err := g.dmOnly("recording where entities were heard"); err != nil {
		return err
	}
	if len(heard) == 0 {
		return nil
	}
	ids := make([]string, 0, len(heard))
	for id := range heard {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	lines := make([][]int64, len(ids))
	for i, id := range ids {
		lines[i] = heard[id]
	}
	if err := addEntityEvidence(ctx, g.db, g.campaign, ids, lines); err != nil {
		return fmt.Errorf("recording where %d entities were heard: %w", len(ids), err)
	}
	return nil
}

// addEntityEvidence links each scene_only entity ids[i] to lines[i].
func addEntityEvidence(ctx context.Context, db querier, campaign string, ids []string, lines [][]int64) error {
	var ents []string
	var entries []int64
	for i, id := range ids {
		for _, l := range lines[i] {
			ents = append(ents, id)
			entries = append(entries, l)
		}
	}
	if len(ents) == 0 {
		return nil
	}
	_, err := db.Exec(ctx, `
		INSERT INTO entity_evidence (campaign_id, entity_id, entry_id)
		SELECT $1, e.id, t.id FROM unnest($2::text[], $3::bigint[]) u(entity_id, entry_id)
		JOIN entities e ON e.campaign_id = $1 AND e.id = u.entity_id AND e.scene_only
		JOIN transcript_entries t ON t.campaign_id = $1 AND t.id = u.entry_id
		ON CONFLICT DO NOTHING`, campaign, ents, entries)
	return err
}

// PublishEntity makes entity id one every player sees, whatever split
// scene it was first heard in (the DM reveals it): /memory entity edit's
// reveal, the console's Reveal button. It returns the entity as stored;
// publishing one players already see changes nothing. DM only.
func (g *Graph) PublishEntity(ctx context.Context, id string) (memory.Entity, error) {
	if err := g.dmOnly("revealing an entity to every player"); err != nil {
		return memory.Entity{}, err
	}
	rows, err := g.db.Query(ctx, `UPDATE entities SET scene_only = false, updated_at = CASE WHEN scene_only THEN now() ELSE updated_at END
		WHERE campaign_id = $1 AND id = $2 RETURNING `+entityColumns, g.campaign, id)
	if err != nil {
		return memory.Entity{}, fmt.Errorf("revealing entity %q: %w", id, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEntity)
	if isNoRows(err) {
		return memory.Entity{}, fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return memory.Entity{}, fmt.Errorf("revealing entity %q: %w", id, err)
	}
	return e, nil
}

// SceneOnly reports whether entity id was first heard in a split scene and
// not published since: players see it only through a trace they may read.
// DM only (it says a split scene named it).
func (g *Graph) SceneOnly(ctx context.Context, id string) (bool, error) {
	if err := g.dmOnly("reading whether an entity was heard in a split scene"); err != nil {
		return false, err
	}
	var scene bool
	err := g.db.QueryRow(ctx, `SELECT scene_only FROM entities WHERE campaign_id = $1 AND id = $2`, g.campaign, id).Scan(&scene)
	if isNoRows(err) {
		return false, fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return false, fmt.Errorf("reading entity %q: %w", id, err)
	}
	return scene, nil
}

// HiddenFromPlayers lists, sorted, the ids of the entities some player may
// not see: first heard in a split scene, not published, and without a
// trace every player may read ([view.tracedSceneSQL] for
// memory.PlayerViewer). Post-session extraction leaves them out of the
// known entities it hands the model for a window said with the party
// together, so that the model cannot write their names into what every
// player reads. DM only.
func (g *Graph) HiddenFromPlayers(ctx context.Context) ([]string, error) {
	if err := g.dmOnly("listing the entities hidden from players"); err != nil {
		return nil, err
	}
	anyone := view{v: memory.PlayerViewer(), campaign: g.campaign}
	rows, err := g.db.Query(ctx, `SELECT e.id FROM entities e WHERE e.campaign_id = $1 AND e.scene_only AND NOT `+
		anyone.entityVisible("e")+` ORDER BY e.id COLLATE "C"`, g.campaign)
	if err != nil {
		return nil, fmt.Errorf("listing the entities hidden from players: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing the entities hidden from players: %w", err)
	}
	return ids, nil
}

// SceneEntitiesSeen lists, sorted, the ids of the entities first heard in
// a split scene (scene_only) that the viewer may see now: what a player's
// cached view of the graph depends on besides the change log, since a
// trace (a line, a chunk) comes and goes without a change of the graph
// (a forget-me deletes the only line that named one; a later window's
// evidence shows one); so does an NPC's ([view.npcEntity]). For a handle
// that sees every entity (the DM, the system) it is nil: nothing to
// follow.
func (g *Graph) SceneEntitiesSeen(ctx context.Context) ([]string, error) {
	if g.view.system() {
		return nil, nil
	}
	var ids []string
	if err := g.db.QueryRow(ctx, `SELECT `+g.view.sceneEntitiesSeenSQL(), g.campaign).Scan(&ids); err != nil {
		return nil, fmt.Errorf("listing the scene entities seen: %w", err)
	}
	return ids, nil
}

// sceneEntitiesSeenSQL is the SQL expression of [Graph.SceneEntitiesSeen]
// for campaign $1: a text[], empty for a viewer who sees every entity.
func (w view) sceneEntitiesSeenSQL() string {
	if w.system() {
		return `'{}'::text[]`
	}
	return `ARRAY(SELECT e.id FROM entities e WHERE e.campaign_id = $1 AND e.scene_only AND ` +
		w.entityVisible("e") + ` ORDER BY e.id COLLATE "C")`
}
