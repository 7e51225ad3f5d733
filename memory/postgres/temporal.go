package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// ExclusiveTypes returns the relationship types a source holds with one
// target at a time: a new target conflicts with the old one.
func ExclusiveTypes() []string { return []string{"LOCATED_AT", "LIVES_IN"} }

// negationPrefix marks a fact that denies another: NOT_LOCATED_AT denies
// LOCATED_AT between the same entities.
const negationPrefix = "NOT_"

func isExclusive(t string) bool {
	for _, x := range ExclusiveTypes() {
		if x == t {
			return true
		}
	}
	return false
}

var _ memory.FactTimeline = (*Graph)(nil)

// RecordFact stores r as post-session extraction does: WriteFact with the
// extraction writer. See WriteFact for how a conflict with canon is kept.
func (g *Graph) RecordFact(ctx context.Context, r memory.Relationship) (memory.Relationship, []memory.Conflict, error) {
	w, err := g.WriteFact(ctx, memory.Writer{Role: memory.WriterExtraction}, r, "")
	return w.Fact, w.Conflicts, err
}

// RecordFactOn is RecordFact for a fact resting on the transcript lines
// evidence: the fact and its evidence are written in one transaction, so
// that no reader sees the fact before the lines that decide which players
// may read it (a fact told only in a split scene reaches that scene's
// players only; without its lines it reached every player).
func (g *Graph) RecordFactOn(ctx context.Context, r memory.Relationship, evidence []int64) (memory.Relationship, []memory.Conflict, error) {
	w, err := g.writeFact(ctx, memory.Writer{Role: memory.WriterExtraction}, r, "", evidence)
	return w.Fact, w.Conflicts, err
}

// canon returns the active facts matching where ($2..$4 bound to args).
func (g *Graph) canon(ctx context.Context, where string, args ...any) ([]memory.Relationship, error) {
	rows, err := g.db.Query(ctx, `SELECT `+relColumns+` FROM relationships r
		WHERE r.campaign_id = $1 AND r.status = 'active' AND `+where+` ORDER BY r.id`, append([]any{g.campaign}, args...)...)
	if err != nil {
		return nil, fmt.Errorf("finding conflicting facts: %w", err)
	}
	return pgx.CollectRows(rows, scanRel)
}

// laterSession reports whether session a started after session b. A fact
// entered outside play (no session) comes before every session; a new fact
// without a session cannot be ordered.
func (g *Graph) laterSession(ctx context.Context, a, b string) (bool, error) {
	if a == "" {
		return false, nil
	}
	if b == "" {
		return true, nil
	}
	var later bool
	err := g.db.QueryRow(ctx, `SELECT coalesce((SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $2) >
		(SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $3), false)`, g.campaign, a, b).Scan(&later)
	if err != nil {
		return false, fmt.Errorf("ordering sessions %q and %q: %w", a, b, err)
	}
	return later, nil
}

// LinkFacts records a link between two facts of the campaign (again: the
// weight is updated).
func (g *Graph) LinkFacts(ctx context.Context, l memory.FactLink) error {
	return g.linkFacts(ctx, l, "")
}

// linkFacts is LinkFacts with the reason for the link.
func (g *Graph) linkFacts(ctx context.Context, l memory.FactLink, reason string) error {
	switch {
	case !l.Kind.Valid():
		return fmt.Errorf("%w: unknown fact link kind %q", memory.ErrInvalid, l.Kind)
	case l.Weight < 0 || l.Weight > 1:
		return fmt.Errorf("%w: fact link weight %v is outside 0..1", memory.ErrInvalid, l.Weight)
	case l.FromFact == l.ToFact:
		return fmt.Errorf("%w: fact %d cannot be linked to itself", memory.ErrInvalid, l.FromFact)
	}
	tag, err := g.db.Exec(ctx, `
		INSERT INTO fact_links (campaign_id, from_fact, to_fact, kind, weight, reason)
		SELECT $1, a.id, b.id, $4, $5, $6 FROM relationships a, relationships b
		WHERE a.campaign_id = $1 AND a.id = $2 AND b.campaign_id = $1 AND b.id = $3
		ON CONFLICT (from_fact, to_fact, kind) DO UPDATE SET weight = excluded.weight`,
		g.campaign, l.FromFact, l.ToFact, string(l.Kind), l.Weight, reason)
	if err != nil {
		return fmt.Errorf("linking fact %d to %d: %w", l.FromFact, l.ToFact, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("linking fact %d to %d: %w", l.FromFact, l.ToFact, memory.ErrNotFound)
	}
	return nil
}

// FactLinks returns the links from and to a fact.
func (g *Graph) FactLinks(ctx context.Context, factID int64) ([]memory.FactLink, error) {
	rows, err := g.db.Query(ctx, `SELECT from_fact, to_fact, kind, weight FROM fact_links
		WHERE campaign_id = $1 AND (from_fact = $2 OR to_fact = $2) ORDER BY created_at, from_fact, to_fact`, g.campaign, factID)
	if err != nil {
		return nil, fmt.Errorf("reading the links of fact %d: %w", factID, err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (memory.FactLink, error) {
		var l memory.FactLink
		var kind string
		err := row.Scan(&l.FromFact, &l.ToFact, &kind, &l.Weight)
		l.Kind = memory.LinkKind(kind)
		return l, err
	})
}

// FactsAsOf returns the facts of an entity (either end; every entity when
// entityID is empty) that held when a session started: canon or since
// retired, established in that session or before, and not yet ended by
// then. A fact entered outside play holds from the start, unless it
// superseded another: then it holds from when it was written, and the fact
// it replaced until then.
func (g *Graph) FactsAsOf(ctx context.Context, entityID, sessionID string) ([]memory.Relationship, error) {
	at, err := g.sessionStart(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("facts as of session %q: %w", sessionID, err)
	}
	facts, err := g.factsAt(ctx, entityID, at)
	if err != nil {
		return nil, fmt.Errorf("facts of %q as of session %q: %w", entityID, sessionID, err)
	}
	return facts, nil
}

// FactsAsOfTime is FactsAsOf for a moment instead of a session: the facts
// that held at t. A fact of a session holds from that session's start; a
// retired fact holds until the session it was retired in started or, when
// retired outside play, until it was retired (its recorded retirement time).
func (g *Graph) FactsAsOfTime(ctx context.Context, entityID string, t time.Time) ([]memory.Relationship, error) {
	if t.IsZero() {
		return nil, fmt.Errorf("%w: facts as of a date need a date", memory.ErrInvalid)
	}
	facts, err := g.factsAt(ctx, entityID, t)
	if err != nil {
		return nil, fmt.Errorf("facts of %q as of %s: %w", entityID, t.UTC().Format(time.RFC3339), err)
	}
	return facts, nil
}

// FactsAsOfRef is FactsAsOf when ref names a session of the campaign,
// else FactsAsOfTime when it is a date (see ParseAsOfDate), else, when it
// is an in-world date of the campaign's calendar, FactsAsOf the last
// session on or before that date (see SessionLog.SessionOnGameDate). It
// also returns how to say the moment ("session s2", "2026-03-08",
// "3 Frostfall 1452 DR (session s2)"). A ref that is none of these is an
// error wrapping memory.ErrNotFound that names the calendar's months; an
// in-world date before every dated session is one too.
func (g *Graph) FactsAsOfRef(ctx context.Context, entityID, ref string) ([]memory.Relationship, string, error) {
	ref = strings.TrimSpace(ref)
	_, err := g.sessionStart(ctx, ref)
	switch {
	case err == nil:
		facts, err := g.FactsAsOf(ctx, entityID, ref)
		return facts, "session " + ref, err
	case !errors.Is(err, memory.ErrNotFound):
		return nil, "", fmt.Errorf("facts as of %q: %w", ref, err)
	}
	if t, ok := ParseAsOfDate(ref); ok {
		facts, err := g.FactsAsOfTime(ctx, entityID, t)
		return facts, ref, err
	}
	sl := &SessionLog{db: g.db, campaign: g.campaign, view: g.view}
	cal, _, err := sl.Calendar(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("facts as of %q: %w", ref, err)
	}
	d, perr := cal.Parse(ref)
	if perr != nil {
		return nil, "", fmt.Errorf("%w: %q is neither a session of this campaign, a date (2006-01-02 or RFC 3339) nor an in-world date of %s",
			memory.ErrNotFound, ref, cal.Describe())
	}
	s, ok, err := sl.SessionOnGameDate(ctx, cal, d)
	if err != nil {
		return nil, "", fmt.Errorf("facts as of %q: %w", ref, err)
	}
	if !ok {
		return nil, "", fmt.Errorf("%w: no session of this campaign is dated on or before %s (`/session date` dates one)", memory.ErrNotFound, cal.Format(d))
	}
	facts, err := g.FactsAsOf(ctx, entityID, s.ID)
	return facts, fmt.Sprintf("%s (session %s)", cal.Format(d), s.ID), err
}

// ParseAsOfDate reads an "as of" date: 2006-01-02 is the end of that day
// (UTC), or an RFC 3339 moment.
func ParseAsOfDate(s string) (time.Time, bool) {
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, true
	}
	if d, err := time.Parse("2006-01-02", s); err == nil {
		return d.Add(24*time.Hour - time.Nanosecond), true
	}
	return time.Time{}, false
}

// sessionStart returns when session id started.
func (g *Graph) sessionStart(ctx context.Context, id string) (time.Time, error) {
	var at time.Time
	err := g.db.QueryRow(ctx, `SELECT started_at FROM sessions WHERE campaign_id = $1 AND id = $2`, g.campaign, id).Scan(&at)
	if isNoRows(err) {
		return at, memory.ErrNotFound
	}
	return at, err
}

// factsAt returns the facts of entityID (every entity when empty) that held
// at the moment at.
func (g *Graph) factsAt(ctx context.Context, entityID string, at time.Time) ([]memory.Relationship, error) {
	rows, err := g.db.Query(ctx, `
		SELECT `+g.view.relCols()+` FROM relationships r
		LEFT JOIN sessions fs ON fs.campaign_id = r.campaign_id AND fs.id = r.session_id
		LEFT JOIN sessions us ON us.campaign_id = r.campaign_id AND us.id = r.valid_until_session
		WHERE r.campaign_id = $1 AND ($2 = '' OR r.source_id = $2 OR r.target_id = $2)
		  AND `+g.view.factVisible("r")+`
		  AND r.status IN ('active', 'retired')
		  AND ((r.session_id <> '' AND fs.started_at <= $3)
		       OR (r.session_id = '' AND (r.established_at <= $3 OR NOT EXISTS (SELECT 1 FROM fact_links l
		           WHERE l.from_fact = r.id AND l.kind = 'supersedes'))))
		  AND ((r.valid_until_session <> '' AND us.started_at > $3)
		       OR (r.valid_until_session = '' AND (r.status = 'active' OR coalesce(r.retired_at, `+g.view.updatedCol("r")+`) > $3)))
		ORDER BY r.rel_type, r.id`, g.campaign, entityID, at)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRel)
}

// Conflicts lists the open conflicts, oldest first.
func (g *Graph) Conflicts(ctx context.Context) ([]memory.Conflict, error) {
	if !g.view.system() {
		return nil, fmt.Errorf("%w: fact conflicts are for the DM", memory.ErrForbidden)
	}
	rows, err := g.db.Query(ctx, `SELECT id, new_fact, old_fact, kind, resolution, created_at FROM fact_conflicts
		WHERE campaign_id = $1 AND resolution = '' ORDER BY id`, g.campaign)
	if err != nil {
		return nil, fmt.Errorf("listing fact conflicts: %w", err)
	}
	type row struct {
		c        memory.Conflict
		new, old int64
	}
	rs, err := pgx.CollectRows(rows, func(cr pgx.CollectableRow) (row, error) {
		var r row
		var kind string
		err := cr.Scan(&r.c.ID, &r.new, &r.old, &kind, &r.c.Resolution, &r.c.CreatedAt)
		r.c.Kind = memory.LinkKind(kind)
		return r, err
	})
	if err != nil {
		return nil, fmt.Errorf("listing fact conflicts: %w", err)
	}
	out := make([]memory.Conflict, len(rs))
	for i, r := range rs {
		if r.c.NewFact, err = g.Fact(ctx, r.new); err != nil {
			return nil, err
		}
		if r.c.OldFact, err = g.Fact(ctx, r.old); err != nil {
			return nil, err
		}
		out[i] = r.c
	}
	return out, nil
}

// ResolveConflict settles an open conflict. Keeping the new fact makes it
// DM-confirmed canon and retires the old one as of the new fact's session,
// with the reason recorded; keeping the old one rejects the new fact and, if
// the conflict had retired the old one, makes it canon again. Either way the
// facts' other open conflicts are settled with them (see ConfirmFact).
func (g *Graph) ResolveConflict(ctx context.Context, id int64, keepNew bool) (memory.Conflict, error) {
	if err := g.dmOnly("settling a conflict"); err != nil {
		return memory.Conflict{}, err
	}
	var c memory.Conflict
	err := pgx.BeginFunc(ctx, g.db, func(tx pgx.Tx) error {
		tg := g.txGraph(tx)
		var src string
		if err := tx.QueryRow(ctx, `SELECT r.source_id FROM fact_conflicts c JOIN relationships r ON r.id = c.new_fact
			WHERE c.campaign_id = $1 AND c.id = $2`, g.campaign, id).Scan(&src); err != nil && !isNoRows(err) {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT 1 FROM entities WHERE campaign_id = $1 AND id = $2 FOR UPDATE`, g.campaign, src); err != nil {
			return err
		}
		var err error
		c, err = tg.settle(ctx, id, keepNew, "settled by the DM")
		return err
	})
	if err != nil {
		return memory.Conflict{}, fmt.Errorf("resolving conflict %d: %w", id, err)
	}
	return c, nil
}

// NamedFactsAsOf returns the facts that held as of a session (see
// FactsAsOf) about the entities a text names, by name or alias as whole
// words, with the names of their ends: what `ask --as-of` answers from.
// Secret facts are left out unless withSecrets.
func (g *Graph) NamedFactsAsOf(ctx context.Context, text, sessionID string, withSecrets bool) ([]FactWithNames, error) {
	if err := memory.CheckQuery(text); err != nil {
		return nil, fmt.Errorf("facts as of session %q: %w", sessionID, err)
	}
	var exists bool
	if err := g.db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM sessions WHERE campaign_id = $1 AND id = $2)`, g.campaign, sessionID).Scan(&exists); err != nil {
		return nil, fmt.Errorf("facts as of session %q: %w", sessionID, err)
	}
	if !exists {
		return nil, fmt.Errorf("facts as of session %q: %w", sessionID, memory.ErrNotFound)
	}
	return g.namedFacts(ctx, text, withSecrets, func(id string) ([]memory.Relationship, error) { return g.FactsAsOf(ctx, id, sessionID) })
}

// NamedFactsAsOfTime is NamedFactsAsOf for a moment (see FactsAsOfTime):
// `ask --as-of 2026-11-01`.
func (g *Graph) NamedFactsAsOfTime(ctx context.Context, text string, t time.Time, withSecrets bool) ([]FactWithNames, error) {
	if err := memory.CheckQuery(text); err != nil {
		return nil, fmt.Errorf("facts as of %s: %w", t.UTC().Format(time.RFC3339), err)
	}
	return g.namedFacts(ctx, text, withSecrets, func(id string) ([]memory.Relationship, error) { return g.FactsAsOfTime(ctx, id, t) })
}

// namedFacts returns the facts asOf gives for each entity text names, once
// each, with the names of their ends.
func (g *Graph) namedFacts(ctx context.Context, text string, withSecrets bool, asOf func(entityID string) ([]memory.Relationship, error)) ([]FactWithNames, error) {
	rows, err := g.db.Query(ctx, `
		WITH q AS (SELECT ' ' || lower(regexp_replace($2, '[^[:alnum:]]+', ' ', 'g')) || ' ' AS t)
		SELECT e.id FROM entities e, q
		WHERE e.campaign_id = $1 AND `+g.view.entityVisible("e")+`
		  AND (strpos(q.t, ' ' || trim(lower(regexp_replace(e.name, '[^[:alnum:]]+', ' ', 'g'))) || ' ') > 0
		       OR EXISTS (SELECT 1 FROM unnest(e.aliases) a
		                  WHERE strpos(q.t, ' ' || trim(lower(regexp_replace(a, '[^[:alnum:]]+', ' ', 'g'))) || ' ') > 0))
		ORDER BY e.id`, g.campaign, text)
	if err != nil {
		return nil, fmt.Errorf("finding the entities %q names: %w", text, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("finding the entities %q names: %w", text, err)
	}
	seen := map[int64]bool{}
	var out []FactWithNames
	for _, id := range ids {
		facts, err := asOf(id)
		if err != nil {
			return nil, err
		}
		for _, f := range facts {
			if seen[f.ID] || (!withSecrets && f.Attributes[memory.AttrSecret] == true) {
				continue
			}
			seen[f.ID] = true
			var src, dst string
			if err := g.db.QueryRow(ctx, `SELECT (SELECT name FROM entities WHERE campaign_id = $1 AND id = $2),
				(SELECT name FROM entities WHERE campaign_id = $1 AND id = $3)`, g.campaign, f.SourceID, f.TargetID).Scan(&src, &dst); err != nil {
				return nil, fmt.Errorf("naming fact %d: %w", f.ID, err)
			}
			out = append(out, FactWithNames{Relationship: f, SourceName: src, TargetName: dst})
		}
	}
	return out, nil
}
