package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
)

// OptOut records that a player does not want to be transcribed or stored in
// this campaign. It is idempotent.
func (c *Campaign) OptOut(ctx context.Context, userID string) error {
	if strings.TrimSpace(userID) == "" {
		return fmt.Errorf("%w: empty user id", memory.ErrInvalid)
	}
	_, err := c.l1.db.Exec(ctx, `INSERT INTO privacy_optouts (campaign_id, user_id) VALUES ($1, $2)
		ON CONFLICT DO NOTHING`, c.id, userID)
	if err != nil {
		return fmt.Errorf("recording the opt-out of %s: %w", userID, err)
	}
	return nil
}

// OptIn removes a player's opt-out.
func (c *Campaign) OptIn(ctx context.Context, userID string) error {
	_, err := c.l1.db.Exec(ctx, `DELETE FROM privacy_optouts WHERE campaign_id = $1 AND user_id = $2`, c.id, userID)
	if err != nil {
		return fmt.Errorf("removing the opt-out of %s: %w", userID, err)
	}
	return nil
}

// OptedOut returns the players who opted out of this campaign.
func (c *Campaign) OptedOut(ctx context.Context) (map[string]time.Time, error) {
	rows, err := c.l1.db.Query(ctx, `SELECT user_id, opted_out_at FROM privacy_optouts WHERE campaign_id = $1`, c.id)
	if err != nil {
		return nil, fmt.Errorf("reading opt-outs: %w", err)
	}
	out := map[string]time.Time{}
	var id string
	var at time.Time
	_, err = pgx.ForEachRow(rows, []any{&id, &at}, func() error { out[id] = at; return nil })
	return out, err
}

// AddEvidence links a fact to the transcript lines it was extracted from.
func (g *Graph) AddEvidence(ctx context.Context, factID int64, entryIDs []int64) error {
	if len(entryIDs) == 0 {
		return nil
	}
	_, err := g.db.Exec(ctx, `
		INSERT INTO fact_evidence (fact_id, entry_id)
		SELECT r.id, t.id FROM relationships r, transcript_entries t
		WHERE r.campaign_id = $1 AND r.id = $2 AND t.campaign_id = $1 AND t.id = ANY($3)
		ON CONFLICT DO NOTHING`, g.campaign, factID, entryIDs)
	if err != nil {
		return fmt.Errorf("linking fact %d to its evidence: %w", factID, err)
	}
	return nil
}

// minQuotedLine is the shortest line ForgetSpeaker looks for inside a
// fact's quoted evidence.
const minQuotedLine = 20

// ForgetSpeaker deletes, in one transaction, a speaker's transcript lines,
// every chunk that contains their words, and the facts whose only evidence
// was their lines: linked to them, or quoting one of them in their
// "evidence" attribute (extracted facts and ledger entries do). Facts with
// evidence from other speakers, and facts with no recorded evidence
// (entered by the DM or imported), stay. So do the DM's own facts (written
// with a reason, such as a retcon of a player's line), without the quote
// of the line; the speaker's lines are taken out of every reason that
// quotes them (see scrubQuotes).
func (c *Campaign) ForgetSpeaker(ctx context.Context, userID string) (memory.ForgetReport, error) {
	var rep memory.ForgetReport
	if strings.TrimSpace(userID) == "" {
		return rep, fmt.Errorf("%w: empty user id", memory.ErrInvalid)
	}
	err := pgx.BeginFunc(ctx, c.l1.db, func(tx pgx.Tx) error {
		// The speaker's lines are locked first: a chunking or an
		// extraction that checks the lines it read (SessionLog.StillCanon)
		// waits for this transaction and finds them gone, however far it
		// has got.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM transcript_entries WHERE campaign_id = $1 AND speaker_id = $2 FOR UPDATE`,
			c.id, userID); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT DISTINCT session_id FROM transcript_entries WHERE campaign_id = $1 AND speaker_id = $2
			UNION
			SELECT DISTINCT session_id FROM chunks WHERE campaign_id = $1 AND $2 = ANY(speaker_ids)
			ORDER BY 1`, c.id, userID)
		if err != nil {
			return err
		}
		if rep.Sessions, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		// A fact rests on the speaker's lines when its evidence links
		// name them, or when its "evidence" attribute quotes one of them
		// (what extraction and the ledger record: "Lyra: I promise…"),
		// in the session the line was said in. A quote is the line's
		// text, the ledger's "speaker: text", or holds a line of at least
		// minQuotedLine characters (a shorter one, "yes", is too common
		// to say whose it is).
		// The DM's own facts (written with a reason: a retcon of a
		// player's line) stay, the DM's decision; their quote of the line
		// goes (below, and scrubQuotes for the reason).
		if _, err := tx.Exec(ctx, `
			UPDATE relationships r SET attributes = r.attributes - 'evidence'
			WHERE r.campaign_id = $1 AND r.attributes ? 'dm_reason'
			  AND jsonb_typeof(r.attributes->'evidence') = 'string' AND EXISTS (SELECT 1 FROM transcript_entries t
			      WHERE t.campaign_id = $1 AND t.speaker_id = $2 AND t.session_id = r.session_id AND t.text <> ''
			        AND (r.attributes->>'evidence' IN (t.text, t.speaker_name || ': ' || t.text)
			             OR (length(t.text) >= $3 AND strpos(r.attributes->>'evidence', t.text) > 0)))`,
			c.id, userID, minQuotedLine); err != nil {
			return err
		}
		if err := scrubQuotes(ctx, tx, c.id, userID); err != nil {
			return err
		}
		// Inside the OR, a fact without an evidence quote must be false,
		// not NULL: NULL AND EXISTS (…) runs the EXISTS, a scan of the
		// speaker's lines of the fact's session for every fact without
		// one (1.6 ms a fact for a speaker's 150k lines on the 100k bench
		// campaign: more than 10 minutes for its 489k facts).
		rows, err = tx.Query(ctx, `
			DELETE FROM relationships r
			WHERE r.campaign_id = $1 AND NOT r.attributes ? 'dm_reason'
			  AND (EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
			               WHERE fe.fact_id = r.id AND t.speaker_id = $2)
			       OR (coalesce(jsonb_typeof(r.attributes->'evidence') = 'string', false) AND EXISTS (SELECT 1 FROM transcript_entries t
			           WHERE t.campaign_id = $1 AND t.speaker_id = $2 AND t.session_id = r.session_id AND t.text <> ''
			             AND (r.attributes->>'evidence' IN (t.text, t.speaker_name || ': ' || t.text)
			                  OR (length(t.text) >= $3 AND strpos(r.attributes->>'evidence', t.text) > 0)))))
			  AND NOT EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
			                  WHERE fe.fact_id = r.id AND t.speaker_id <> $2)
			RETURNING r.id, `+c.view.factVisible("r")+``, c.id, userID, minQuotedLine)
		if err != nil {
			return err
		}
		// Each deleted fact is counted as the handle's viewer could read it
		// (the statement's snapshot still holds its row and evidence): a
		// player's own forget-me reply must not count the DM's secrets.
		var gone []int64
		var id int64
		var visible bool
		if _, err := pgx.ForEachRow(rows, []any{&id, &visible}, func() error {
			gone = append(gone, id)
			if visible {
				rep.Facts++
			} else {
				rep.HiddenFacts++
			}
			return nil
		}); err != nil {
			return err
		}
		// A fact that stays (it also rests on other speakers' lines: one
		// extracted from a window holding a split scene rests on the
		// scene's lines, lifecycle/postsession) loses its quote of the
		// speaker's line.
		if _, err := tx.Exec(ctx, `
			UPDATE relationships r SET attributes = r.attributes - 'evidence'
			WHERE r.campaign_id = $1 AND jsonb_typeof(r.attributes->'evidence') = 'string' AND EXISTS (SELECT 1 FROM transcript_entries t
			      WHERE t.campaign_id = $1 AND t.speaker_id = $2 AND t.session_id = r.session_id AND t.text <> ''
			        AND (r.attributes->>'evidence' IN (t.text, t.speaker_name || ': ' || t.text)
			             OR (length(t.text) >= $3 AND strpos(r.attributes->>'evidence', t.text) > 0)))`,
			c.id, userID, minQuotedLine); err != nil {
			return err
		}
		// A bulk review keeps the facts it touched as they were, for its
		// undo: the deleted facts' quotes with them. Its undo could no
		// longer run (a fact it changed is gone), so the batch goes.
		if _, err := tx.Exec(ctx, `DELETE FROM review_batches b WHERE b.campaign_id = $1
			AND EXISTS (SELECT 1 FROM jsonb_array_elements(b.before->'facts') x WHERE (x->>'id')::bigint = ANY($2))`,
			c.id, gone); err != nil {
			return err
		}
		// A fact that stays and that every player could read may rest on
		// the speaker's line as its one line said with the party together
		// (its other lines are of a split scene): it leaves the players'
		// view with the line, and its row does not change. Its change is
		// logged here, so that the players' agents are told it left their
		// graph (KGSync) and the caches of their reads drop it.
		// The facts resting on the speaker's lines are found first, from
		// the lines, and only they are judged: judging every active fact
		// of a large campaign would cost seconds.
		rows, err = tx.Query(ctx, `
			WITH said AS MATERIALIZED (
			    SELECT r AS rel FROM relationships r
			    WHERE r.campaign_id = $1 AND r.status = 'active' AND r.id IN (
			        SELECT fe.fact_id FROM transcript_entries t JOIN fact_evidence fe ON fe.entry_id = t.id
			        WHERE t.campaign_id = $1 AND t.speaker_id = $2))
			SELECT (rel).id FROM said WHERE glyphoxa_fact_public(rel)`, c.id, userID)
		if err != nil {
			return err
		}
		public, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		// A fact that stays and rested on a line of the speaker's said in
		// a split scene, and on no line said with the party together, was
		// read by the scene's players only (view.factRevealed). Without
		// the speaker's lines it would rest on no line (a DM's correction,
		// which stays) or only on lines a player outside the scene may
		// read (their own, said at the table outside it): every player, or
		// that one, would read what was said in the scene. It becomes the
		// DM's secret instead (the DM may grant it again).
		if _, err := tx.Exec(ctx, `
			UPDATE relationships r SET attributes = r.attributes || '{"secret": true}'::jsonb, updated_at = now()
			WHERE r.campaign_id = $1 AND r.attributes->'secret' IS DISTINCT FROM 'true'::jsonb
			  AND EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
			              WHERE fe.fact_id = r.id AND t.speaker_id = $2 AND NOT `+publicLineSQL+`)
			  AND NOT EXISTS (SELECT 1 FROM fact_evidence fe JOIN transcript_entries t ON t.id = fe.entry_id
			                  WHERE fe.fact_id = r.id AND t.speaker_id <> $2 AND `+publicLineSQL+`)`, c.id, userID); err != nil {
			return fmt.Errorf("keeping the split-scene facts of the speaker's lines from other players: %w", err)
		}
		// The lines go before the chunks: a chunking that read them and
		// writes its chunks after this deletion of chunks finds them
		// locked or gone when it checks them (SessionLog.StillCanon)
		// and chunks the session again.
		tag, err := tx.Exec(ctx, `DELETE FROM transcript_entries WHERE campaign_id = $1 AND speaker_id = $2`, c.id, userID)
		if err != nil {
			return err
		}
		rep.Entries = tag.RowsAffected()
		if _, err := tx.Exec(ctx, `INSERT INTO graph_changes (campaign_id, kind, ref, op, actor, gone)
			SELECT r.campaign_id, 'fact', r.id::text, 'update', coalesce(current_setting('glyphoxa.actor', true), ''),
			       glyphoxa_fact_gone(r, false, true)
			FROM relationships r WHERE r.campaign_id = $1 AND r.id = ANY($2) AND NOT glyphoxa_fact_public(r)`, c.id, public); err != nil {
			return err
		}
		if tag, err = tx.Exec(ctx, `DELETE FROM chunks WHERE campaign_id = $1 AND $2 = ANY(speaker_ids)`, c.id, userID); err != nil {
			return err
		}
		rep.Chunks = tag.RowsAffected()
		if err := forgetPlayerKnowledge(ctx, tx, c.id, userID); err != nil {
			return err
		}
		// Continuity cards quote the line that contradicted canon.
		rows, err = tx.Query(ctx, `DELETE FROM continuity_cards WHERE campaign_id = $1 AND speaker_id = $2 RETURNING id`, c.id, userID)
		if err != nil {
			return err
		}
		if rep.Cards, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		// What was derived from the sessions as a whole may quote or
		// paraphrase them: the language model's cached extractions and the
		// running summaries. They are dropped (a re-extraction asks the
		// model again, without the forgotten lines).
		if _, err := tx.Exec(ctx, `DELETE FROM extraction_windows WHERE campaign_id = $1 AND session_id = ANY($2)`,
			c.id, rep.Sessions); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE sessions SET summary = '' WHERE campaign_id = $1 AND id = ANY($2) AND summary <> ''`,
			c.id, rep.Sessions); err != nil {
			return err
		}
		// Their chunks are rebuilt next; if this process dies first, the
		// next start of serve does it (RechunkStage).
		if _, err := tx.Exec(ctx, markRechunkSQL, c.id, rep.Sessions); err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return memory.ForgetReport{}, fmt.Errorf("forgetting speaker %s: %w", userID, err)
	}
	return rep, nil
}

// StillCanon reports whether every line of ids is still in session
// sessionID and canon. A line that a transaction is deleting or marking
// non-canon is waited for (FOR SHARE). A chunking calls it after writing
// chunks made of lines it read earlier: a forget-me or a MarkNonCanon
// that ran meanwhile either deleted those chunks (it ran after they were
// written) or took the lines out before this check, and the session is
// chunked again.
func (l *SessionLog) StillCanon(ctx context.Context, sessionID string, ids []int64) (bool, error) {
	if len(ids) == 0 {
		return true, nil
	}
	rows, err := l.db.Query(ctx, `SELECT id FROM transcript_entries
		WHERE campaign_id = $1 AND session_id = $2 AND id = ANY($3) AND NOT noncanon FOR SHARE`, l.campaign, sessionID, ids)
	if err != nil {
		return false, fmt.Errorf("checking the lines of session %q: %w", sessionID, err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return false, fmt.Errorf("checking the lines of session %q: %w", sessionID, err)
	}
	want := map[int64]bool{}
	for _, id := range ids {
		want[id] = true
	}
	return len(found) == len(want), nil
}

// MarkNonCanon marks the lines of a session between from and to (inclusive)
// as non-canon and reports how many lines changed. In the same statement it
// deletes the session's chunks that span a line it marked: a chunk quotes
// its lines, and search and the NPCs' recall read chunks, so a non-canon
// line is in none. The rest of those chunks' lines are chunked again by
// the next chunking of the session (chunk.Process, or a live session's
// next update), which leaves non-canon lines out; the session is marked as
// owing it ([RechunkStage]) in the same statement.
func (l *SessionLog) MarkNonCanon(ctx context.Context, sessionID string, from, to time.Time) (int64, error) {
	var n int64
	err := l.db.QueryRow(ctx, `
		WITH marked AS (
			UPDATE transcript_entries SET noncanon = true
			WHERE campaign_id = $1 AND session_id = $2 AND at BETWEEN $3 AND $4 AND NOT noncanon
			RETURNING at),
		gone AS (
			DELETE FROM chunks c WHERE c.campaign_id = $1 AND c.session_id = $2
			  AND EXISTS (SELECT 1 FROM marked m WHERE m.at BETWEEN c.start_at AND coalesce(c.end_at, c.start_at))
			RETURNING 1),
		owed AS (
			INSERT INTO session_processing (campaign_id, session_id, stage, updated_at)
			SELECT $1, $2, '`+RechunkStage+`', clock_timestamp() WHERE EXISTS (SELECT 1 FROM gone)
			ON CONFLICT (campaign_id, session_id, stage) DO UPDATE SET updated_at = excluded.updated_at)
		SELECT count(*) FROM marked`,
		l.campaign, sessionID, from, to).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("marking lines of session %q as non-canon: %w", sessionID, err)
	}
	return n, nil
}
