package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Graph is the L3 knowledge graph of one campaign. It also answers GraphRAG
// queries, which join it with the semantic index.
type Graph struct {
	db        querier
	campaign  string
	threshold float64
	// view filters every read (see [Campaign.As]).
	view view
}

// ReviewThreshold is the confidence below which new facts wait for the DM.
func (g *Graph) ReviewThreshold() float64 { return g.threshold }

const entityColumns = `id, type, name, aliases, attributes, created_at, updated_at`

func scanEntity(row pgx.CollectableRow) (memory.Entity, error) {
	var e memory.Entity
	err := row.Scan(&e.ID, &e.Type, &e.Name, &e.Aliases, &e.Attributes, &e.CreatedAt, &e.UpdatedAt)
	if e.Attributes == nil {
		e.Attributes = map[string]any{}
	}
	return e, err
}

func validEntity(e memory.Entity) error {
	switch {
	case strings.TrimSpace(e.ID) == "":
		return fmt.Errorf("%w: entity without an id", memory.ErrInvalid)
	case strings.TrimSpace(e.Name) == "":
		return fmt.Errorf("%w: entity %q without a name", memory.ErrInvalid, e.ID)
	case strings.TrimSpace(e.Type) == "":
		return fmt.Errorf("%w: entity %q without a type", memory.ErrInvalid, e.ID)
	}
	if err := memory.CheckSecretMarkers(e.Attributes); err != nil {
		return fmt.Errorf("entity %q: %w", e.ID, err)
	}
	return nil
}

// upsertEntitySQL replaces an entity; updated_at moves only when something
// actually changed, so re-importing the same campaign changes nothing.
const upsertEntitySQL = `
INSERT INTO entities (campaign_id, id, type, name, aliases, attributes) VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (campaign_id, id) DO UPDATE SET
    type = excluded.type, name = excluded.name, aliases = excluded.aliases, attributes = excluded.attributes,
    updated_at = now()
WHERE (entities.type, entities.name, entities.aliases, entities.attributes)
      IS DISTINCT FROM (excluded.type, excluded.name, excluded.aliases, excluded.attributes)`

func entityArgs(campaign string, e memory.Entity) []any {
	attrs := e.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	return []any{campaign, e.ID, e.Type, e.Name, nonNil(e.Aliases), attrs}
}

// UpsertEntity creates or replaces an entity.
func (g *Graph) UpsertEntity(ctx context.Context, e memory.Entity) error {
	if err := g.dmOnly("saving an entity"); err != nil {
		return err
	}
	if err := validEntity(e); err != nil {
		return err
	}
	if _, err := g.db.Exec(ctx, upsertEntitySQL, entityArgs(g.campaign, e)...); err != nil {
		return fmt.Errorf("saving entity %q: %w", e.ID, err)
	}
	return nil
}

// UpsertEntities creates or replaces entities in one transaction and one
// round trip.
func (g *Graph) UpsertEntities(ctx context.Context, es []memory.Entity) error {
	if err := g.dmOnly("saving entities"); err != nil {
		return err
	}
	for _, e := range es {
		if err := validEntity(e); err != nil {
			return err
		}
	}
	if len(es) == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, e := range es {
			b.Queue(upsertEntitySQL, entityArgs(g.campaign, e)...)
		}
		br := tx.SendBatch(ctx, b)
		for _, e := range es {
			if _, err := br.Exec(); err != nil {
				br.Close()
				return fmt.Errorf("saving entity %q: %w", e.ID, err)
			}
		}
		return br.Close()
	})
}

// Entity returns one entity. One the viewer may not see
// ([view.entityVisible]) is not found, as one that does not exist.
func (g *Graph) Entity(ctx context.Context, id string) (memory.Entity, error) {
	rows, err := g.db.Query(ctx, `SELECT `+g.view.entityCols("e")+` FROM entities e WHERE e.campaign_id = $1 AND e.id = $2
		AND `+g.view.entityVisible("e"), g.campaign, id)
	if err != nil {
		return memory.Entity{}, fmt.Errorf("reading entity %q: %w", id, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEntity)
	if isNoRows(err) {
		return memory.Entity{}, fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return memory.Entity{}, fmt.Errorf("reading entity %q: %w", id, err)
	}
	return e, nil
}

// UpdateEntity changes part of an entity and returns the result.
func (g *Graph) UpdateEntity(ctx context.Context, id string, u memory.EntityUpdate) (memory.Entity, error) {
	if err := g.dmOnly("editing an entity"); err != nil {
		return memory.Entity{}, err
	}
	if u.Name != nil && strings.TrimSpace(*u.Name) == "" {
		return memory.Entity{}, fmt.Errorf("%w: entity %q: empty name", memory.ErrInvalid, id)
	}
	if u.Type != nil && strings.TrimSpace(*u.Type) == "" {
		return memory.Entity{}, fmt.Errorf("%w: entity %q: empty type", memory.ErrInvalid, id)
	}
	var aliases []string
	if u.Aliases != nil {
		aliases = nonNil(*u.Aliases)
	}
	if err := memory.CheckSecretMarkers(u.SetAttributes); err != nil {
		return memory.Entity{}, fmt.Errorf("entity %q: %w", id, err)
	}
	set := u.SetAttributes
	if set == nil {
		set = map[string]any{}
	}
	rows, err := g.db.Query(ctx, `
		UPDATE entities SET
		    name = coalesce($3, name), type = coalesce($4, type), aliases = coalesce($5, aliases),
		    attributes = (attributes || $6::jsonb) - $7::text[], updated_at = now()
		WHERE campaign_id = $1 AND id = $2
		RETURNING `+entityColumns, g.campaign, id, u.Name, u.Type, aliases, set, nonNil(u.DeleteAttributes))
	if err != nil {
		return memory.Entity{}, fmt.Errorf("updating entity %q: %w", id, err)
	}
	e, err := pgx.CollectExactlyOneRow(rows, scanEntity)
	if isNoRows(err) {
		return memory.Entity{}, fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return memory.Entity{}, fmt.Errorf("updating entity %q: %w", id, err)
	}
	return e, nil
}

// DeleteEntity removes an entity, its relationships and its chunk links.
func (g *Graph) DeleteEntity(ctx context.Context, id string) error {
	if err := g.dmOnly("deleting an entity"); err != nil {
		return err
	}
	tag, err := g.db.Exec(ctx, `DELETE FROM entities WHERE campaign_id = $1 AND id = $2`, g.campaign, id)
	if err != nil {
		return fmt.Errorf("deleting entity %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
	}
	return nil
}

// FindEntities lists entities matching f the viewer may see
// ([view.entityVisible]), ordered by name. Retired entities (see
// [Graph.RetireEntity]) are left out of a search by name or type unless
// f.IncludeRetired; a search by ids finds them.
func (g *Graph) FindEntities(ctx context.Context, f memory.EntityFilter) ([]memory.Entity, error) {
	if err := memory.CheckQuery(f.Name); err != nil {
		return nil, fmt.Errorf("finding entities by name: %w", err)
	}
	var ids []string
	if f.IDs != nil {
		ids = nonNil(f.IDs)
	}
	limit := any(nil)
	if f.Limit > 0 {
		limit = f.Limit
	}
	if ids != nil && f.Type == "" && f.Name == "" {
		// By id alone: a query of its own, so that its plan is always the
		// primary key's (the catch-all's cached generic plan scans every
		// entity: 40 ms at 100k). Its attributes are the viewer's, as
		// everywhere else: a player asking by id is still a player.
		rows, err := g.db.Query(ctx, `SELECT `+g.view.entityCols("e")+` FROM entities e WHERE e.campaign_id = $1 AND e.id = ANY($2)
			AND ($4 OR e.retired_at IS NULL) AND `+g.view.entityVisible("e")+`
			ORDER BY lower(e.name), e.id LIMIT $3`, g.campaign, ids, limit, f.IncludeRetired)
		if err != nil {
			return nil, fmt.Errorf("finding entities: %w", err)
		}
		return pgx.CollectRows(rows, scanEntity)
	}
	// A part of a name is looked for in the trigram index of names and
	// aliases (entities_words, migration 0035) as a LIKE pattern, then
	// checked in the name and each alias exactly. Each call is planned for
	// its own arguments (pgx.QueryExecModeExec): a cached generic plan
	// keeps the "no name given" branch and reads every entity.
	rows, err := g.db.Query(ctx, `
		SELECT `+g.view.entityCols("e")+` FROM entities e
		WHERE e.campaign_id = $1
		  AND ($2 = '' OR type = $2)
		  AND ($3 = '' OR `+nameHoldsSQL("e", "$3", "$7")+`)
		  AND ($4::text[] IS NULL OR id = ANY($4))
		  AND ($6 OR e.retired_at IS NULL)
		  AND `+g.view.entityVisible("e")+`
		ORDER BY lower(e.name), e.id
		LIMIT $5`, pgx.QueryExecModeExec, g.campaign, f.Type, f.Name, ids, limit, f.IncludeRetired, likeLiteral(f.Name))
	if err != nil {
		return nil, fmt.Errorf("finding entities: %w", err)
	}
	return pgx.CollectRows(rows, scanEntity)
}

// nameHoldsSQL is the SQL predicate true when entity alias's name or one
// of its aliases holds term (an SQL text), in any letter case: found in
// the trigram index of names and aliases (entities_words, migration 0035)
// by pattern (an SQL text: likeLiteral of term), then checked in the name
// and each alias exactly (nameHoldsExactlySQL), so that a term spanning
// a name and an alias is no match.
func nameHoldsSQL(alias, term, pattern string) string {
	return `(glyphoxa_entity_words(` + alias + `.name, ` + alias + `.aliases) LIKE '%' || lower(` + pattern + `) || '%'
		AND ` + nameHoldsExactlySQL(alias, term) + `)`
}

// nameHoldsExactlySQL is nameHoldsSQL's exact check alone, for an entity
// already found (the ends of a fact).
func nameHoldsExactlySQL(alias, term string) string {
	return `(strpos(lower(` + alias + `.name), lower(` + term + `)) > 0
		OR EXISTS (SELECT 1 FROM unnest(` + alias + `.aliases) a WHERE strpos(lower(a), lower(` + term + `)) > 0))`
}

// likeLiteral escapes s for a LIKE pattern (backslash, the default
// escape character, before \, % and _), so that it matches itself.
func likeLiteral(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// EntityNames returns every entity of the campaign the viewer may see
// ([view.entityVisible]) with its id, type, name and aliases only (no
// attributes): what a name index needs, at a third of the cost of
// FindEntities.
func (g *Graph) EntityNames(ctx context.Context) ([]memory.Entity, error) {
	rows, err := g.db.Query(ctx, `SELECT e.id, e.type, e.name, e.aliases FROM entities e WHERE e.campaign_id = $1
		AND `+g.view.entityVisible("e")+` ORDER BY e.id`, g.campaign)
	if err != nil {
		return nil, fmt.Errorf("listing entity names: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.Entity, error) {
		var e memory.Entity
		err := row.Scan(&e.ID, &e.Type, &e.Name, &e.Aliases)
		return e, err
	})
}

// relColumns are the columns of a relationship, prefixed with r.
const relColumns = `r.id, r.source_id, r.target_id, r.rel_type, r.attributes, r.session_id, r.established_at,
	r.confidence, r.source, r.dm_confirmed, r.status, r.valid_until_session, r.created_at, r.updated_at`

func scanRel(row pgx.CollectableRow) (memory.Relationship, error) {
	var r memory.Relationship
	var src, status string
	err := row.Scan(relDest(&r, &src, &status)...)
	return finishRel(r, src, status), err
}

// relDest are the scan destinations of [relColumns] into r, with its
// source and status read into src and status ([finishRel] sets them).
func relDest(r *memory.Relationship, src, status *string) []any {
	return []any{&r.ID, &r.SourceID, &r.TargetID, &r.Type, &r.Attributes, &r.Provenance.SessionID,
		&r.Provenance.Timestamp, &r.Provenance.Confidence, src, &r.Provenance.DMConfirmed, status,
		&r.ValidUntilSession, &r.CreatedAt, &r.UpdatedAt}
}

func finishRel(r memory.Relationship, src, status string) memory.Relationship {
	r.Provenance.Source = memory.FactSource(src)
	r.Status = memory.FactStatus(status)
	if r.Attributes == nil {
		r.Attributes = map[string]any{}
	}
	return r
}

func validRel(r memory.Relationship) error {
	switch {
	case strings.TrimSpace(r.SourceID) == "" || strings.TrimSpace(r.TargetID) == "":
		return fmt.Errorf("%w: relationship needs a source and a target", memory.ErrInvalid)
	case strings.TrimSpace(r.Type) == "":
		return fmt.Errorf("%w: relationship %s→%s without a type", memory.ErrInvalid, r.SourceID, r.TargetID)
	case r.Provenance.Confidence < 0 || r.Provenance.Confidence > 1:
		return fmt.Errorf("%w: relationship %s -%s-> %s: confidence %v is outside 0..1", memory.ErrInvalid,
			r.SourceID, r.Type, r.TargetID, r.Provenance.Confidence)
	case r.Provenance.Source != "" && !r.Provenance.Source.Valid():
		return fmt.Errorf("%w: relationship %s -%s-> %s: source %q is neither stated nor inferred", memory.ErrInvalid,
			r.SourceID, r.Type, r.TargetID, r.Provenance.Source)
	}
	if err := memory.CheckSecretMarkers(r.Attributes); err != nil {
		return fmt.Errorf("relationship %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, err)
	}
	return nil
}

// upsertRelSQL records a fact in one round trip.
//
// A fact the DM rejected stays rejected: proposing it again (say, by
// re-running extraction on the same session) returns the rejected fact
// unchanged, unless the DM writes it. Otherwise the live fact for (source,
// target, type, and the ledger's "entry" key: two debts between the same
// two are two facts, migration 0025) is created or updated: attributes merge, confidence only
// rises, "stated" beats "inferred", DM confirmation sticks, and the fact
// becomes active once confirmed or confident enough. Its original session and
// time are kept. Proposals of players and NPCs ($12, their writer's key) are
// rows of their own, never merged into canon. A proposal that changes nothing leaves the row (and its
// updated_at) alone and returns it as it is.
const upsertRelSQL = `
WITH rejected AS (
    SELECT ` + relColumns + ` FROM relationships r
    WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.target_id = $3 AND r.rel_type = $4
      AND r.status = 'rejected' AND NOT $9::boolean AND r.proposed_by = $12 AND r.entry = coalesce($5::jsonb->>'entry', '')
    ORDER BY r.updated_at DESC LIMIT 1
), upsert AS (
    INSERT INTO relationships AS r (campaign_id, source_id, target_id, rel_type, attributes, session_id,
                                    established_at, confidence, source, dm_confirmed, status, proposed_by)
    SELECT $1, $2, $3, $4, $5, $6, $7, $8::float8, $10, $9,
           CASE WHEN ($9 OR $8::float8 >= $11::float8) AND $12 = '' THEN 'active' ELSE 'pending' END, $12
    WHERE NOT EXISTS (SELECT 1 FROM rejected)
    ON CONFLICT (campaign_id, source_id, target_id, rel_type, proposed_by, entry) WHERE status IN ('active', 'pending')
    DO UPDATE SET
        attributes   = r.attributes || excluded.attributes,
        confidence   = greatest(r.confidence, excluded.confidence),
        source       = CASE WHEN r.source = 'stated' OR excluded.source = 'stated' THEN 'stated' ELSE 'inferred' END,
        dm_confirmed = r.dm_confirmed OR excluded.dm_confirmed,
        status       = CASE WHEN r.status = 'active' OR excluded.status = 'active' THEN 'active' ELSE 'pending' END,
        updated_at   = now()
    WHERE (r.attributes || excluded.attributes, greatest(r.confidence, excluded.confidence),
           CASE WHEN r.source = 'stated' OR excluded.source = 'stated' THEN 'stated' ELSE 'inferred' END,
           r.dm_confirmed OR excluded.dm_confirmed,
           CASE WHEN r.status = 'active' OR excluded.status = 'active' THEN 'active' ELSE 'pending' END)
          IS DISTINCT FROM (r.attributes, r.confidence, r.source, r.dm_confirmed, r.status)
    RETURNING ` + relColumns + `
)
SELECT * FROM upsert
UNION ALL SELECT * FROM rejected
UNION ALL
SELECT ` + relColumns + ` FROM relationships r
WHERE r.campaign_id = $1 AND r.source_id = $2 AND r.target_id = $3 AND r.rel_type = $4
  AND r.status IN ('active', 'pending') AND r.proposed_by = $12 AND r.entry = coalesce($5::jsonb->>'entry', '')
  AND NOT EXISTS (SELECT 1 FROM upsert) AND NOT EXISTS (SELECT 1 FROM rejected)`

// UpsertRelationship records a fact and returns it as stored. Both entities
// must exist in the campaign.
func (g *Graph) UpsertRelationship(ctx context.Context, r memory.Relationship) (memory.Relationship, error) {
	if err := g.dmOnly("saving a fact"); err != nil {
		return memory.Relationship{}, err
	}
	if err := validRel(r); err != nil {
		return memory.Relationship{}, err
	}
	if !isExclusive(r.Type) {
		return g.upsertRel(ctx, r, "")
	}
	// A single-valued relation never gets a second active fact: the check
	// runs with the source locked, as WriteFact's does. The DM's write
	// retires the old one; any other is refused.
	var out memory.Relationship
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := g.txGraph(tx)
		if _, err := tx.Exec(ctx, `SELECT 1 FROM entities WHERE campaign_id = $1 AND id = $2 FOR UPDATE`, g.campaign, r.SourceID); err != nil {
			return fmt.Errorf("saving fact %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, err)
		}
		var err error
		if out, err = tg.upsertRel(ctx, r, ""); err != nil {
			return err
		}
		switch {
		case out.Status != memory.StatusActive:
			return nil
		case out.Provenance.DMConfirmed:
			// DM canon supersedes where the source was.
			return tg.supersedeOthers(ctx, out, "written by the DM")
		}
		if err := tg.exclusiveFree(ctx, out); err != nil {
			return fmt.Errorf("saving fact %s -%s-> %s: %w (write it with WriteFact to supersede the old one)", r.SourceID, r.Type, r.TargetID, err)
		}
		return nil
	})
	return out, err
}

// upsertRel is UpsertRelationship for a writer: proposedBy is empty for
// canon writes, else the proposing writer's key (see memory.Writer.Key), and
// the fact is that writer's own pending proposal.
func (g *Graph) upsertRel(ctx context.Context, r memory.Relationship, proposedBy string) (memory.Relationship, error) {
	rows, err := g.db.Query(ctx, upsertRelSQL, append(relArgs(g.campaign, r, g.threshold), proposedBy)...)
	if err != nil {
		return memory.Relationship{}, fmt.Errorf("saving fact %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, explainFK(err))
	}
	out, err := pgx.CollectExactlyOneRow(rows, scanRel)
	if err != nil {
		return memory.Relationship{}, fmt.Errorf("saving fact %s -%s-> %s: %w", r.SourceID, r.Type, r.TargetID, explainFK(err))
	}
	return out, nil
}

func relArgs(campaign string, r memory.Relationship, threshold float64) []any {
	src := r.Provenance.Source
	if src == "" {
		src = memory.SourceStated
	}
	at := r.Provenance.Timestamp
	if at.IsZero() {
		at = time.Now()
	}
	attrs := r.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	return []any{campaign, r.SourceID, r.TargetID, r.Type, attrs, r.Provenance.SessionID, at,
		r.Provenance.Confidence, r.Provenance.DMConfirmed, string(src), threshold}
}

// explainFK turns a foreign-key violation into a not-found error naming the
// missing entity.
func explainFK(err error) error {
	if pgErr := asPgError(err); pgErr != nil && pgErr.Code == "23503" {
		return fmt.Errorf("%w: an entity it refers to does not exist (%s)", memory.ErrNotFound, pgErr.Detail)
	}
	return err
}

// Fact returns one relationship by id, whatever its status.
func (g *Graph) Fact(ctx context.Context, id int64) (memory.Relationship, error) {
	rows, err := g.db.Query(ctx, `SELECT `+g.view.relCols()+` FROM relationships r WHERE r.campaign_id = $1 AND r.id = $2
		AND `+g.view.factVisible("r"), g.campaign, id)
	if err != nil {
		return memory.Relationship{}, fmt.Errorf("reading fact %d: %w", id, err)
	}
	r, err := pgx.CollectExactlyOneRow(rows, scanRel)
	if isNoRows(err) {
		return memory.Relationship{}, fmt.Errorf("fact %d: %w", id, memory.ErrNotFound)
	}
	return r, err
}

// Relationships returns an entity's active edges, newest first.
func (g *Graph) Relationships(ctx context.Context, entityID string, o memory.TraversalOpts) ([]memory.Relationship, error) {
	q, args := g.relationshipsQuery(entityID, o)
	rows, err := g.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading relationships of %q: %w", entityID, err)
	}
	return pgx.CollectRows(rows, scanRel)
}

// relationshipsQuery is the query of [Graph.Relationships] for one entity,
// with its arguments.
func (g *Graph) relationshipsQuery(entityID string, o memory.TraversalOpts) (string, []any) {
	out, in := directions(o.Direction)
	limit := any(nil)
	if o.Limit > 0 {
		limit = o.Limit
	}
	return `
		SELECT ` + g.view.relCols() + ` FROM relationships r
		WHERE r.campaign_id = $1 AND r.status = 'active' AND ` + g.view.factVisible("r") + `
		  AND (($3 AND r.source_id = $2) OR ($4 AND r.target_id = $2))
		  AND (cardinality($5::text[]) = 0 OR r.rel_type = ANY($5))
		ORDER BY ` + g.view.updatedCol("r") + ` DESC, r.id DESC
		LIMIT $6`, []any{g.campaign, entityID, out, in, nonNil(o.RelTypes), limit}
}

// RelationshipsOfEach returns, for each of entityIDs in order, what
// [Graph.Relationships] returns for it, in one statement (one plan and one
// execution, where a batch of one query per entity cost one of each per
// entity: 86 for a question whose word sounds like 85 names).
func (g *Graph) RelationshipsOfEach(ctx context.Context, entityIDs []string, o memory.TraversalOpts) ([][]memory.Relationship, error) {
	if len(entityIDs) == 0 {
		return nil, nil
	}
	q, args := g.ofEachQuery(g.view.relCols(), entityIDs, o)
	rows, err := g.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading relationships: %w", err)
	}
	all := make([][]memory.Relationship, len(entityIDs))
	var ord int
	if _, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (struct{}, error) {
		var r memory.Relationship
		var src, status string
		if err := row.Scan(append([]any{&ord}, relDest(&r, &src, &status)...)...); err != nil {
			return struct{}{}, err
		}
		if ord < 1 || ord > len(all) {
			return struct{}{}, fmt.Errorf("relationship of entity number %d of %d", ord, len(all))
		}
		all[ord-1] = append(all[ord-1], finishRel(r, src, status))
		return struct{}{}, nil
	}); err != nil {
		return nil, fmt.Errorf("reading relationships: %w", err)
	}
	return all, nil
}

// FactType is the id and type of a relationship.
type FactType struct {
	ID   int64
	Type string
}

// FactTypesOfEach returns, for each of entityIDs in order, the ids and
// types of what [Graph.Relationships] returns for it, in that order, in one
// statement. A reader that follows only some types of relationship reads
// these and then the facts it follows ([Graph.Facts]), not every column of
// every relationship.
func (g *Graph) FactTypesOfEach(ctx context.Context, entityIDs []string, o memory.TraversalOpts) ([][]FactType, error) {
	if len(entityIDs) == 0 {
		return nil, nil
	}
	q, args := g.ofEachQuery("r.id, r.rel_type, "+g.view.updatedCol("r")+" AS updated_at", entityIDs, o)
	rows, err := g.db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("reading relationship types: %w", err)
	}
	all := make([][]FactType, len(entityIDs))
	var ord int
	var f FactType
	var at time.Time
	if _, err := pgx.ForEachRow(rows, []any{&ord, &f.ID, &f.Type, &at}, func() error {
		if ord < 1 || ord > len(all) {
			return fmt.Errorf("relationship of entity number %d of %d", ord, len(all))
		}
		all[ord-1] = append(all[ord-1], f)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading relationship types: %w", err)
	}
	return all, nil
}

// Facts returns the active relationships with the given ids that the
// viewer may see, by id; ids that are not there are left out.
func (g *Graph) Facts(ctx context.Context, ids []int64) (map[int64]memory.Relationship, error) {
	out := make(map[int64]memory.Relationship, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := g.db.Query(ctx, `SELECT `+g.view.relCols()+` FROM relationships r
		WHERE r.campaign_id = $1 AND r.id = ANY($2) AND r.status = 'active' AND `+g.view.factVisible("r"), g.campaign, ids)
	if err != nil {
		return nil, fmt.Errorf("reading facts: %w", err)
	}
	rels, err := pgx.CollectRows(rows, scanRel)
	if err != nil {
		return nil, fmt.Errorf("reading facts: %w", err)
	}
	for _, r := range rels {
		out[r.ID] = r
	}
	return out, nil
}

// ofEachQuery is the query of [Graph.Relationships] for each of entityIDs
// at once: its first column is the entity's position in entityIDs (from
// 1), then cols (of relationships r, ending with the viewer's stamp named
// updated_at, [view.updatedCol]), the rows of each entity as Relationships
// orders them.
func (g *Graph) ofEachQuery(cols string, entityIDs []string, o memory.TraversalOpts) (string, []any) {
	out, in := directions(o.Direction)
	limit := any(nil)
	if o.Limit > 0 {
		limit = o.Limit
	}
	return `
		SELECT q.ord, x.* FROM unnest($2::text[]) WITH ORDINALITY AS q(id, ord)
		CROSS JOIN LATERAL (
		    SELECT ` + cols + ` FROM relationships r
		    WHERE r.campaign_id = $1 AND r.status = 'active' AND ` + g.view.factVisible("r") + `
		      AND (($3 AND r.source_id = q.id) OR ($4 AND r.target_id = q.id))
		      AND (cardinality($5::text[]) = 0 OR r.rel_type = ANY($5))
		    ORDER BY ` + g.view.updatedCol("r") + ` DESC, r.id DESC
		    LIMIT $6) x
		ORDER BY q.ord, x.updated_at DESC, x.id DESC`, []any{g.campaign, entityIDs, out, in, nonNil(o.RelTypes), limit}
}

func directions(d memory.Direction) (out, in bool) {
	switch d {
	case memory.Outgoing:
		return true, false
	case memory.Incoming:
		return false, true
	default:
		return true, true
	}
}

// Neighbors returns the entities within depth hops of entityID along active
// edges, nearest first (then by name and id), each with its least number of
// hops.
//
// It is one statement: a breadth-first search that carries each level's
// frontier and the entities visited so far as arrays, so no entity is
// expanded twice and each level reads the edges of its whole frontier in
// one index scan per direction; the walk stops at depth or when a level
// finds nobody new. The entities already visited are taken out by an
// anti-join with the visited array, which the planner hashes: testing
// each edge's far end against the array (NOT x.id = ANY(visited)) costs
// edges × visited comparisons, and at 1k entities that was up to a fifth
// of the database's time for a 3-hop walk from a well-connected entity
// (the walks that make the 95th percentile). The entities are then read by
// primary key, level by level, with the public attributes stored when
// they were written (publicAttrs). (Walking one row per entity and depth
// instead re-expands an entity for every depth it is reached at, and
// reading the entities by a join hashes the whole campaign's entities: at
// 1k entities that made a 3-hop walk several times dearer.)
func (g *Graph) Neighbors(ctx context.Context, entityID string, depth int, o memory.TraversalOpts) ([]memory.Neighbor, error) {
	if depth <= 0 {
		return nil, nil
	}
	out, in := directions(o.Direction)
	limit := any(nil)
	if o.Limit > 0 {
		limit = o.Limit
	}
	rows, err := g.db.Query(ctx, `
		WITH RECURSIVE bfs(depth, frontier, visited) AS (
		    SELECT 0, ARRAY[$2::text], ARRAY[$2::text]
		    UNION ALL
		    SELECT b.depth + 1, nxt.ids, b.visited || nxt.ids
		    FROM bfs b
		    CROSS JOIN LATERAL (
		        SELECT array_agg(DISTINCT x.id) AS ids FROM (
		            SELECT r.target_id AS id FROM relationships r
		            WHERE $4 AND r.campaign_id = $1 AND r.source_id = ANY(b.frontier) AND r.status = 'active' AND `+g.view.factVisible("r")+`
		              AND (cardinality($6::text[]) = 0 OR r.rel_type = ANY($6))
		            UNION ALL
		            SELECT r.source_id FROM relationships r
		            WHERE $5 AND r.campaign_id = $1 AND r.target_id = ANY(b.frontier) AND r.status = 'active' AND `+g.view.factVisible("r")+`
		              AND (cardinality($6::text[]) = 0 OR r.rel_type = ANY($6))
		        ) x LEFT JOIN unnest(b.visited) v(id) ON v.id = x.id
		        WHERE v.id IS NULL
		    ) nxt
		    WHERE b.depth < $3 AND nxt.ids IS NOT NULL
		)
		SELECT `+publicEntityCols("e")+`, b.depth
		FROM bfs b JOIN entities e ON e.campaign_id = $1 AND e.id = ANY(b.frontier)
		WHERE b.depth > 0
		ORDER BY b.depth, lower(e.name), e.id
		LIMIT $7`, g.campaign, entityID, depth, out, in, nonNil(o.RelTypes), limit)
	if err != nil {
		return nil, fmt.Errorf("walking the graph from %q: %w", entityID, err)
	}
	defer rows.Close()
	// One set of destinations for every row: a walk returns hundreds.
	var ns []memory.Neighbor
	var n memory.Neighbor
	var attrs attributesScan
	e := &n.Entity
	dest := []any{&e.ID, &e.Type, &e.Name, &e.Aliases, &attrs, &e.CreatedAt, &e.UpdatedAt, &n.Depth}
	for rows.Next() {
		n = memory.Neighbor{}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("walking the graph from %q: %w", entityID, err)
		}
		e.Attributes = attrs.m
		ns = append(ns, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("walking the graph from %q: %w", entityID, err)
	}
	return ns, nil
}

// attributesScan decodes a jsonb attribute object into a fresh map, never
// nil, as scanning into a *map[string]any does, with a third fewer
// allocations:
// pgx hands it the row's bytes without copying them (pgtype.BytesScanner),
// and decoding into an interface takes encoding/json's path that builds
// maps without reflection.
type attributesScan struct{ m map[string]any }

// ScanBytes implements pgtype.BytesScanner.
func (a *attributesScan) ScanBytes(b []byte) error {
	var v any
	if b != nil {
		if err := json.Unmarshal(b, &v); err != nil {
			return fmt.Errorf("decoding attributes: %w", err)
		}
	}
	switch v := v.(type) {
	case map[string]any:
		a.m = v
	case nil:
		a.m = map[string]any{}
	default:
		return fmt.Errorf("decoding attributes: %T, not an object", v)
	}
	return nil
}

// FindPath returns a shortest path of at most maxDepth hops between two
// entities, following active edges either way. It runs as one query: a
// breadth-first search that keeps each level's frontier and every visited
// entity (so no entity is expanded twice), then a walk back from the target
// through the levels.
func (g *Graph) FindPath(ctx context.Context, fromID, toID string, maxDepth int) ([]memory.PathStep, error) {
	if maxDepth <= 0 {
		maxDepth = 6
	}
	rows, err := g.db.Query(ctx, `
		WITH RECURSIVE bfs(depth, frontier, visited) AS (
		    SELECT 0, ARRAY[$2::text], ARRAY[$2::text]
		    WHERE EXISTS (SELECT 1 FROM entities se WHERE se.campaign_id = $1 AND se.id = $2 AND `+g.view.entityVisible("se")+`)
		    UNION ALL
		    SELECT b.depth + 1, nxt.ids, b.visited || nxt.ids
		    FROM bfs b
		    CROSS JOIN LATERAL (
		        SELECT array_agg(DISTINCT x.id) AS ids FROM (
		            SELECT r.target_id AS id FROM relationships r
		            WHERE r.campaign_id = $1 AND r.source_id = ANY(b.frontier) AND r.status = 'active' AND `+g.view.factVisible("r")+`
		            UNION
		            SELECT r.source_id FROM relationships r
		            WHERE r.campaign_id = $1 AND r.target_id = ANY(b.frontier) AND r.status = 'active' AND `+g.view.factVisible("r")+`
		        ) x WHERE NOT x.id = ANY(b.visited)
		    ) nxt
		    WHERE b.depth < $4 AND NOT $3::text = ANY(b.visited) AND nxt.ids IS NOT NULL
		), back(depth, id, rel_id) AS (
		    SELECT depth, $3::text, NULL::bigint FROM bfs WHERE $3::text = ANY(frontier)
		    UNION ALL
		    SELECT bk.depth - 1, p.id, p.rel_id
		    FROM back bk
		    CROSS JOIN LATERAL (
		        SELECT CASE WHEN r.source_id = bk.id THEN r.target_id ELSE r.source_id END AS id, r.id AS rel_id
		        FROM relationships r, bfs prev
		        WHERE prev.depth = bk.depth - 1 AND r.campaign_id = $1 AND r.status = 'active' AND `+g.view.factVisible("r")+`
		          AND ((r.source_id = bk.id AND r.target_id = ANY(prev.frontier))
		            OR (r.target_id = bk.id AND r.source_id = ANY(prev.frontier)))
		        ORDER BY r.id LIMIT 1
		    ) p
		    WHERE bk.depth > 0
		)
		SELECT b.depth, `+publicEntityCols("e")+`, `+g.view.factJSON("r")+`
		FROM back b
		JOIN entities e ON e.campaign_id = $1 AND e.id = b.id
		LEFT JOIN back nb ON nb.depth = b.depth - 1
		LEFT JOIN relationships r ON r.id = nb.rel_id
		ORDER BY b.depth`, g.campaign, fromID, toID, maxDepth)
	if err != nil {
		return nil, fmt.Errorf("finding a path from %q to %q: %w", fromID, toID, err)
	}
	// The walk back stores on each entity's row the edge towards the next
	// entity on the path, so the edge that reaches step i sits on row i-1.
	steps, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.PathStep, error) {
		var s memory.PathStep
		var depth int
		var rel []byte
		e := &s.Entity
		if err := row.Scan(&depth, &e.ID, &e.Type, &e.Name, &e.Aliases, &e.Attributes, &e.CreatedAt, &e.UpdatedAt, &rel); err != nil {
			return s, err
		}
		if e.Attributes == nil {
			e.Attributes = map[string]any{}
		}
		if rel != nil {
			r, err := decodeJSON[relJSON](rel, "a path edge")
			if err != nil {
				return s, err
			}
			s.Via = r.relationship()
		}
		return s, nil
	})
	if err != nil {
		return nil, fmt.Errorf("finding a path from %q to %q: %w", fromID, toID, err)
	}
	if len(steps) == 0 {
		return nil, fmt.Errorf("no path of at most %d hops from %q to %q: %w", maxDepth, fromID, toID, memory.ErrNotFound)
	}
	return steps, nil
}

// relJSON is a relationships row as to_jsonb renders it.
type relJSON struct {
	ID                int64          `json:"id"`
	SourceID          string         `json:"source_id"`
	TargetID          string         `json:"target_id"`
	RelType           string         `json:"rel_type"`
	Attributes        map[string]any `json:"attributes"`
	SessionID         string         `json:"session_id"`
	EstablishedAt     time.Time      `json:"established_at"`
	Confidence        float64        `json:"confidence"`
	Source            string         `json:"source"`
	DMConfirmed       bool           `json:"dm_confirmed"`
	Status            string         `json:"status"`
	ValidUntilSession string         `json:"valid_until_session"`
	CreatedAt         time.Time      `json:"created_at"`
	UpdatedAt         time.Time      `json:"updated_at"`
}

func (r relJSON) relationship() memory.Relationship {
	attrs := r.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	return memory.Relationship{
		ID: r.ID, SourceID: r.SourceID, TargetID: r.TargetID, Type: r.RelType, Attributes: attrs,
		Provenance: memory.Provenance{SessionID: r.SessionID, Timestamp: r.EstablishedAt, Confidence: r.Confidence,
			Source: memory.FactSource(r.Source), DMConfirmed: r.DMConfirmed},
		Status: memory.FactStatus(r.Status), ValidUntilSession: r.ValidUntilSession,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// entityJSON is an entities row as to_jsonb renders it.
type entityJSON struct {
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Name       string         `json:"name"`
	Aliases    []string       `json:"aliases"`
	Attributes map[string]any `json:"attributes"`
	CreatedAt  time.Time      `json:"created_at"`
	UpdatedAt  time.Time      `json:"updated_at"`
}

func (e entityJSON) entity() memory.Entity {
	attrs := e.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	return memory.Entity{ID: e.ID, Type: e.Type, Name: e.Name, Aliases: nonNil(e.Aliases), Attributes: attrs,
		CreatedAt: e.CreatedAt, UpdatedAt: e.UpdatedAt}
}

func prefixed(alias, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = alias + "." + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// decodeJSON unmarshals a JSON column aggregated by the database.
func decodeJSON[T any](b []byte, what string) (T, error) {
	var v T
	if len(b) == 0 {
		return v, nil
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fmt.Errorf("decoding %s: %w", what, err)
	}
	return v, nil
}
