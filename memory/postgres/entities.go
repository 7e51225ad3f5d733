package postgres

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// The DM's entity operations: add, merge and retire. Editing is
// [Graph.UpdateEntity]. Discord's /memory entity commands and the console's
// entity pages both call these, through a DM-bound handle of memory/access;
// a handle bound to a player or an NPC is refused. Every change they make
// lands in the change log (graph_changes, by trigger), which kg_sync and
// the console read.

// EntityID derives an entity id from a name: lower-case letters and digits
// joined by hyphens ("Old Mill Tower" → "old-mill-tower"). It is "" for a
// name without letters or digits.
func EntityID(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		dash = true
	}
	return b.String()
}

// AddEntity creates a new entity and returns it as stored. An empty ID is
// derived from the name (see [EntityID]). It refuses, with an error
// wrapping memory.ErrInvalid that names the entity in the way, an id that
// is taken and a name (or alias) that another entity already has by name
// or alias: the DM edits or merges that one instead.
func (g *Graph) AddEntity(ctx context.Context, e memory.Entity) (memory.Entity, error) {
	if err := g.dmOnly("adding an entity"); err != nil {
		return memory.Entity{}, err
	}
	e.Name = strings.TrimSpace(e.Name)
	e.Type = strings.ToLower(strings.TrimSpace(e.Type))
	e.ID = strings.TrimSpace(e.ID)
	if e.ID == "" {
		e.ID = EntityID(e.Name)
	}
	if err := validEntity(e); err != nil {
		return memory.Entity{}, err
	}
	e.Aliases = cleanAliases(e.Name, e.Aliases)
	var out memory.Entity
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		var id, name string
		err := tx.QueryRow(ctx, `
			SELECT id, name FROM entities
			WHERE campaign_id = $1 AND (id = $2 OR lower(name) = ANY($3) OR EXISTS (
			      SELECT 1 FROM unnest(aliases) a WHERE lower(a) = ANY($3)))
			ORDER BY id = $2 DESC LIMIT 1`, g.campaign, e.ID, lowerAll(append([]string{e.Name}, e.Aliases...))).Scan(&id, &name)
		switch {
		case err == nil && id == e.ID:
			return fmt.Errorf("%w: an entity with id %q already exists (%s); edit it, or give the new one another id", memory.ErrInvalid, id, name)
		case err == nil:
			return fmt.Errorf("%w: %q (id %s) already has that name or alias; edit it, or merge the two", memory.ErrInvalid, name, id)
		case !isNoRows(err):
			return err
		}
		rows, err := tx.Query(ctx, `INSERT INTO entities (campaign_id, id, type, name, aliases, attributes)
			VALUES ($1, $2, $3, $4, $5, $6) RETURNING `+entityColumns, entityArgs(g.campaign, e)...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectExactlyOneRow(rows, scanEntity)
		return err
	})
	if err != nil {
		return memory.Entity{}, fmt.Errorf("adding entity %q: %w", e.Name, err)
	}
	return out, nil
}

// hiddenAliases is the attribute keeping the names of an entity first
// heard in a split scene merged into one every player sees: a secret
// attribute (memory.SecretKey), read by the DM only.
const hiddenAliases = "hidden_aliases"

// hiddenAttributes is the attribute keeping the public attributes of an
// entity first heard in a split scene merged into one every player sees
// (those the kept entity lacks): a secret attribute, read by the DM only.
const hiddenAttributes = "hidden_attributes"

// stringsOf is v's strings when v is a list (an attribute read from JSON).
func stringsOf(v any) []string {
	var out []string
	switch x := v.(type) {
	case []string:
		out = append(out, x...)
	case []any:
		for _, y := range x {
			if s, ok := y.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// cleanAliases trims aliases and drops empty ones, duplicates and the name
// itself, case-insensitively, keeping the first spelling.
func cleanAliases(name string, aliases []string) []string {
	seen := map[string]bool{strings.ToLower(strings.TrimSpace(name)): true}
	out := []string{}
	for _, a := range aliases {
		a = strings.TrimSpace(a)
		if k := strings.ToLower(a); a != "" && !seen[k] {
			seen[k] = true
			out = append(out, a)
		}
	}
	return out
}

func lowerAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.ToLower(s)
	}
	return out
}

// EntityMerge is what merging one entity into another did.
type EntityMerge struct {
	// Into is the surviving entity as it now stands.
	Into memory.Entity
	// From is the id of the entity merged away.
	From string
	// FactsMoved counts the facts (of any status) that now name Into.
	FactsMoved int
	// FactsRetired are the live facts that would have repeated one of
	// Into's or pointed from Into to itself: retired, their evidence moved
	// to the fact they repeat.
	FactsRetired []int64
	// Mentions counts the transcript chunks linked to From that now link
	// to Into; Lines the NPC lines spoken as From that are now Into's.
	Mentions, Lines int
	// ToolRefs counts the memory tools' nodes and edges (touches, edge
	// ends, the DM's notes on From) that named From and now name Into.
	ToolRefs int
}

// MergeEntities merges entity fromID into entity intoID in one
// transaction: every fact of fromID (active, pending, retired or rejected)
// now names intoID; a live fact that would repeat one of intoID's (or tie
// intoID to itself) is retired as of sessionID, its evidence kept on the
// fact it repeats; chunk mentions and the NPC lines spoken as fromID move
// to intoID, and so do the memory tools' references to fromID (see
// moveMemoryToolRefs); fromID's name and aliases become aliases of intoID,
// and its attributes fill the keys intoID lacks. Then fromID is deleted.
//
// An entity first heard in a split scene (scene_only, see
// [view.entityVisible]) merged into one every player sees gives its names
// to intoID's hiddenAliases, a secret attribute only the DM reads, not to
// its aliases, and its public attributes intoID lacks to hiddenAttributes,
// not to intoID's keys; two such entities merge into one resting on the lines of
// both (the players of either scene then see both names: the DM said they
// are one). Merging an entity players know into a scene_only one is
// refused: the merged entity would carry the known one's facts and
// mentions, and show the scene's name to everyone who knows them.
func (g *Graph) MergeEntities(ctx context.Context, fromID, intoID, sessionID string) (EntityMerge, error) {
	out := EntityMerge{From: fromID}
	if err := g.dmOnly("merging entities"); err != nil {
		return out, err
	}
	if fromID == intoID {
		return out, fmt.Errorf("%w: cannot merge %q into itself", memory.ErrInvalid, fromID)
	}
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+entityColumns+` FROM entities WHERE campaign_id = $1 AND id = ANY($2)
			ORDER BY id FOR UPDATE`, g.campaign, []string{fromID, intoID})
		if err != nil {
			return err
		}
		es, err := pgx.CollectRows(rows, scanEntity)
		if err != nil {
			return err
		}
		var from, into *memory.Entity
		for k := range es {
			switch es[k].ID {
			case fromID:
				from = &es[k]
			case intoID:
				into = &es[k]
			}
		}
		if from == nil {
			return fmt.Errorf("entity %q: %w", fromID, memory.ErrNotFound)
		}
		if into == nil {
			return fmt.Errorf("entity %q: %w", intoID, memory.ErrNotFound)
		}
		var fromScene, intoScene bool
		if err := tx.QueryRow(ctx, `SELECT bool_or(scene_only) FILTER (WHERE id = $2), bool_or(scene_only) FILTER (WHERE id = $3)
			FROM entities WHERE campaign_id = $1 AND id IN ($2, $3)`, g.campaign, fromID, intoID).Scan(&fromScene, &intoScene); err != nil {
			return err
		}
		if intoScene && !fromScene {
			// The merged entity would carry fromID's traces (its facts and
			// mentions) and so show intoID's name to every player who may
			// read them.
			return fmt.Errorf("%w: %q was first heard in a split scene and %q was not: merging would show %q's name to every player who knows %q; "+
				"publish %q first, or merge %q into %q", memory.ErrInvalid, into.Name, from.Name, into.Name, from.Name, intoID, intoID, fromID)
		}
		// $2 from, $3 into, $4 the session. The fact's ends after the merge:
		const src, dst = `CASE WHEN r.source_id = $2 THEN $3 ELSE r.source_id END`, `CASE WHEN r.target_id = $2 THEN $3 ELSE r.target_id END`
		rows, err = tx.Query(ctx, `
			WITH dup AS (
			    SELECT r.id, (SELECT o.id FROM relationships o
			                  WHERE o.campaign_id = $1 AND o.status IN ('active', 'pending') AND o.id <> r.id
			                    AND o.source_id = `+src+` AND o.target_id = `+dst+`
			                    AND o.rel_type = r.rel_type AND o.proposed_by = r.proposed_by AND o.entry = r.entry
			                    AND o.source_id <> $2 AND o.target_id <> $2
			                  ORDER BY o.id LIMIT 1) AS kept
			    FROM relationships r
			    WHERE r.campaign_id = $1 AND r.status IN ('active', 'pending') AND (r.source_id = $2 OR r.target_id = $2)
			), gone AS (
			    UPDATE relationships r SET status = CASE WHEN r.status = 'pending' THEN 'rejected' ELSE 'retired' END,
			        valid_until_session = $4, updated_at = now()
			    FROM dup WHERE r.id = dup.id AND (dup.kept IS NOT NULL OR `+src+` = `+dst+`)
			    RETURNING r.id, dup.kept
			), ev AS (
			    INSERT INTO fact_evidence (fact_id, entry_id)
			    SELECT gone.kept, fe.entry_id FROM gone JOIN fact_evidence fe ON fe.fact_id = gone.id
			    WHERE gone.kept IS NOT NULL
			    ON CONFLICT DO NOTHING
			)
			SELECT id FROM gone ORDER BY id`, g.campaign, fromID, intoID, sessionID)
		if err != nil {
			return fmt.Errorf("retiring repeated facts: %w", err)
		}
		if out.FactsRetired, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return fmt.Errorf("retiring repeated facts: %w", err)
		}
		tag, err := tx.Exec(ctx, `UPDATE relationships r SET source_id = `+src+`, target_id = `+dst+`, updated_at = now()
			WHERE r.campaign_id = $1 AND (r.source_id = $2 OR r.target_id = $2)`, g.campaign, fromID, intoID)
		if err != nil {
			return fmt.Errorf("moving facts: %w", err)
		}
		out.FactsMoved = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, `INSERT INTO chunk_entities (campaign_id, chunk_id, entity_id)
			SELECT campaign_id, chunk_id, $3 FROM chunk_entities WHERE campaign_id = $1 AND entity_id = $2
			ON CONFLICT DO NOTHING`, g.campaign, fromID, intoID)
		if err != nil {
			return fmt.Errorf("moving mentions: %w", err)
		}
		out.Mentions = int(tag.RowsAffected())
		tag, err = tx.Exec(ctx, `UPDATE transcript_entries SET npc_id = $3,
			speaker_id = CASE WHEN speaker_id = $2 THEN $3 ELSE speaker_id END
			WHERE campaign_id = $1 AND npc_id = $2`, g.campaign, fromID, intoID)
		if err != nil {
			return fmt.Errorf("moving the lines spoken as %s: %w", fromID, err)
		}
		out.Lines = int(tag.RowsAffected())
		if out.ToolRefs, err = moveMemoryToolRefs(ctx, tx, g.campaign, fromID, intoID); err != nil {
			return err
		}
		aliases := cleanAliases(into.Name, slices.Concat(into.Aliases, []string{from.Name}, from.Aliases))
		attrs := make(map[string]any, len(into.Attributes)+len(from.Attributes)+1)
		for k, v := range from.Attributes {
			attrs[k] = v
		}
		for k, v := range into.Attributes {
			attrs[k] = v
		}
		if fromScene && !intoScene {
			// fromID's names were heard in a split scene only: intoID, seen
			// by every player, keeps them where only the DM reads them
			// (hiddenAliases, a secret attribute).
			hidden := cleanAliases(into.Name, slices.Concat(stringsOf(into.Attributes[hiddenAliases]), []string{from.Name}, from.Aliases))
			hidden = slices.DeleteFunc(hidden, func(a string) bool {
				return slices.ContainsFunc(into.Aliases, func(b string) bool { return strings.EqualFold(a, b) })
			})
			aliases = cleanAliases(into.Name, into.Aliases)
			attrs[hiddenAliases] = hidden
			// So are its public attributes (a title, a gist: they may say
			// its name or what only the scene heard): those intoID lacks
			// go to hiddenAttributes, not to intoID's own keys. Its secret
			// ones fill intoID's keys as before, read by the DM only.
			moved, _ := into.Attributes[hiddenAttributes].(map[string]any)
			moved = maps.Clone(moved)
			for k, v := range from.Attributes {
				if _, ok := into.Attributes[k]; ok || memory.SecretKey(k) {
					continue
				}
				delete(attrs, k)
				if moved == nil {
					moved = map[string]any{}
				}
				if _, ok := moved[k]; !ok {
					moved[k] = v
				}
			}
			if moved != nil {
				attrs[hiddenAttributes] = moved
			}
		}
		if fromScene && intoScene {
			// Both heard in split scenes: the merged entity rests on the
			// lines of both.
			if _, err := tx.Exec(ctx, `INSERT INTO entity_evidence (campaign_id, entity_id, entry_id)
				SELECT campaign_id, $3, entry_id FROM entity_evidence WHERE campaign_id = $1 AND entity_id = $2
				ON CONFLICT DO NOTHING`, g.campaign, fromID, intoID); err != nil {
				return fmt.Errorf("moving %s's evidence: %w", fromID, err)
			}
		}
		// The merged entity's own touches (read before they were moved):
		// from becomes into, which does not touch itself.
		if ts, ok := attrs["touches"].([]any); ok {
			kept := make([]any, 0, len(ts))
			for _, t := range ts {
				if t == fromID || t == intoID || slices.Contains(kept, t) {
					continue
				}
				kept = append(kept, t)
			}
			attrs["touches"] = kept
		}
		rows, err = tx.Query(ctx, `UPDATE entities SET aliases = $3, attributes = $4, updated_at = now()
			WHERE campaign_id = $1 AND id = $2 RETURNING `+entityColumns, g.campaign, intoID, aliases, attrs)
		if err != nil {
			return fmt.Errorf("adding %s's names to %s: %w", fromID, intoID, err)
		}
		if out.Into, err = pgx.CollectExactlyOneRow(rows, scanEntity); err != nil {
			return fmt.Errorf("adding %s's names to %s: %w", fromID, intoID, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM entities WHERE campaign_id = $1 AND id = $2`, g.campaign, fromID); err != nil {
			return fmt.Errorf("deleting %s: %w", fromID, err)
		}
		return nil
	})
	if err != nil {
		return EntityMerge{From: fromID}, fmt.Errorf("merging entity %q into %q: %w", fromID, intoID, err)
	}
	return out, nil
}

// EntityRetirement records that the DM retired an entity.
type EntityRetirement struct {
	// At is when; Session the session running then ("" outside play).
	At      time.Time
	Session string
	Reason  string
	// Facts are the canon facts that were retired with it.
	Facts []int64
}

// RetireEntity records that entity id no longer takes part in the game
// (the NPC died, the tower fell), as of sessionID ("" outside play) and
// for reason: it leaves FindEntities' name lists (unless asked for) and
// its active canon facts are retired as of sessionID, kept for "as of".
// Pending facts stay for review. Retiring a retired entity is an error
// wrapping memory.ErrInvalid.
func (g *Graph) RetireEntity(ctx context.Context, id, sessionID, reason string) (EntityRetirement, error) {
	if err := g.dmOnly("retiring an entity"); err != nil {
		return EntityRetirement{}, err
	}
	out := EntityRetirement{Session: sessionID, Reason: strings.TrimSpace(reason)}
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		var at *time.Time
		err := tx.QueryRow(ctx, `SELECT retired_at FROM entities WHERE campaign_id = $1 AND id = $2 FOR UPDATE`,
			g.campaign, id).Scan(&at)
		if isNoRows(err) {
			return fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if at != nil {
			return fmt.Errorf("%w: it was retired on %s", memory.ErrInvalid, at.UTC().Format("2006-01-02 15:04 UTC"))
		}
		if err := tx.QueryRow(ctx, `UPDATE entities SET retired_at = now(), retired_session = $3, retired_reason = $4, updated_at = now()
			WHERE campaign_id = $1 AND id = $2 RETURNING retired_at`, g.campaign, id, sessionID, out.Reason).Scan(&out.At); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT r.id FROM relationships r WHERE r.campaign_id = $1 AND r.status = 'active'
			AND r.proposed_by = '' AND (r.source_id = $2 OR r.target_id = $2) ORDER BY r.id`, g.campaign, id)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		// Through the fact timeline's own retirement, so a retired fact of
		// an entity reads like any other.
		tg := &Graph{db: tx, campaign: g.campaign, threshold: g.threshold}
		for _, fid := range ids {
			if _, err := tg.RetireFact(ctx, fid, sessionID); err != nil {
				return err
			}
		}
		out.Facts = ids
		return nil
	})
	if err != nil {
		return EntityRetirement{}, fmt.Errorf("retiring entity %q: %w", id, err)
	}
	return out, nil
}

// RetiredEntity reports whether entity id is retired, and when and why.
// It is for the DM, as [Graph.Retirement] is: a reason may name a secret.
func (g *Graph) RetiredEntity(ctx context.Context, id string) (EntityRetirement, bool, error) {
	if !g.view.system() {
		return EntityRetirement{}, false, fmt.Errorf("%w: why an entity was retired is for the DM", memory.ErrForbidden)
	}
	var r EntityRetirement
	var at *time.Time
	err := g.db.QueryRow(ctx, `SELECT retired_at, retired_session, retired_reason FROM entities WHERE campaign_id = $1 AND id = $2`,
		g.campaign, id).Scan(&at, &r.Session, &r.Reason)
	if isNoRows(err) {
		return r, false, fmt.Errorf("entity %q: %w", id, memory.ErrNotFound)
	}
	if err != nil {
		return r, false, fmt.Errorf("reading entity %q: %w", id, err)
	}
	if at == nil {
		return EntityRetirement{}, false, nil
	}
	r.At = *at
	return r, true, nil
}

// SessionEntities returns the ids of the entities the sessions' lines name,
// sorted: those the chunker linked to the sessions' chunks (full names,
// aliases and distinctive name words, memory/mention), the ends of the
// facts extraction rested on their lines (fact_evidence), and the entities
// first heard in them in a split scene (entity_evidence). For a player,
// only through the chunks, lines and facts they may read, and only the
// entities they may see: what a split scene they were not in named is not
// told. A line not yet chunked or extracted names nothing here yet.
func (g *Graph) SessionEntities(ctx context.Context, sessionIDs []string) ([]string, error) {
	rows, err := g.db.Query(ctx, `
		SELECT e.id FROM entities e
		WHERE e.campaign_id = $1 AND e.id IN (
		        SELECT ce.entity_id FROM chunks c JOIN chunk_entities ce ON ce.campaign_id = c.campaign_id AND ce.chunk_id = c.id
		        WHERE c.campaign_id = $1 AND c.session_id = ANY($2) AND `+g.view.chunkVisible("c")+`
		        UNION
		        SELECT unnest(ARRAY[r.source_id, r.target_id]) FROM transcript_entries t
		            JOIN fact_evidence fe ON fe.entry_id = t.id JOIN relationships r ON r.id = fe.fact_id
		        WHERE t.campaign_id = $1 AND t.session_id = ANY($2) AND `+g.view.lineVisible()+` AND `+g.view.factVisible("r")+`
		        UNION
		        SELECT ee.entity_id FROM transcript_entries t JOIN entity_evidence ee ON ee.entry_id = t.id
		        WHERE t.campaign_id = $1 AND t.session_id = ANY($2) AND `+g.view.lineVisible()+`)
		  AND `+g.view.entityVisible("e")+`
		ORDER BY e.id`, g.campaign, nonNil(sessionIDs))
	if err != nil {
		return nil, fmt.Errorf("reading the entities sessions name: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// EntityKind is an entity type in use and how many entities have it.
type EntityKind struct {
	Type  string
	Count int
}

// EntityKinds lists the entity types in use, most used first: what the
// DM's kind suggestions offer beside the well-known ones. A player's
// handle counts the entities it may see ([view.entityVisible]).
func (g *Graph) EntityKinds(ctx context.Context) ([]EntityKind, error) {
	rows, err := g.db.Query(ctx, `SELECT e.type, count(*)::int FROM entities e WHERE e.campaign_id = $1
		AND `+g.view.entityVisible("e")+`
		GROUP BY e.type ORDER BY count(*) DESC, e.type`, g.campaign)
	if err != nil {
		return nil, fmt.Errorf("listing entity kinds: %w", err)
	}
	return pgx.CollectRows(rows, pgx.RowToStructByPos[EntityKind])
}
