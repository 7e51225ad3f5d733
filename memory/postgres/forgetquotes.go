package postgres

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// forgottenWords stands in the text of a reason for a quote of a line a
// player asked to be forgotten.
const forgottenWords = "[words of a forgotten player]"

// scrubQuotes takes the quotes of a speaker's lines (those of at least
// minQuotedLine characters, as said or as %q quotes them) out of the
// reasons that survive forget-me: why a fact was retired or superseded,
// the DM's reason on a fact of theirs (a retcon quotes the line it made
// canon), a link's and a conflict's reason, an entity's retirement. It
// runs in ForgetSpeaker's transaction, before the lines are deleted.
func scrubQuotes(ctx context.Context, tx pgx.Tx, campaign, userID string) error {
	rows, err := tx.Query(ctx, `SELECT DISTINCT text FROM transcript_entries
		WHERE campaign_id = $1 AND speaker_id = $2 AND length(text) >= $3`, campaign, userID, minQuotedLine)
	if err != nil {
		return fmt.Errorf("reading the lines to take out of reasons: %w", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("reading the lines to take out of reasons: %w", err)
	}
	if len(lines) == 0 {
		return nil
	}
	var olds []string
	for _, l := range lines {
		olds = append(olds, l)
		if q := strconv.Quote(l); q[1:len(q)-1] != l {
			olds = append(olds, q[1:len(q)-1])
		}
	}
	scrub := func(s string) string {
		for _, o := range olds {
			s = strings.ReplaceAll(s, o, forgottenWords)
		}
		return s
	}
	// Each target: the rows with a non-empty reason, keyed by a text
	// form of their key, and the update that writes one back.
	targets := []struct {
		what, read, write string
	}{
		{"facts' retirement reasons",
			`SELECT id::text, retire_reason FROM relationships WHERE campaign_id = $1 AND retire_reason <> ''`,
			`UPDATE relationships SET retire_reason = $3 WHERE campaign_id = $1 AND id = $2::bigint`},
		{"the DM's reasons",
			`SELECT id::text, attributes->>'dm_reason' FROM relationships
			 WHERE campaign_id = $1 AND jsonb_typeof(attributes->'dm_reason') = 'string'`,
			`UPDATE relationships SET attributes = jsonb_set(attributes, '{dm_reason}', to_jsonb($3::text))
			 WHERE campaign_id = $1 AND id = $2::bigint`},
		{"links' reasons",
			`SELECT from_fact || ':' || to_fact || ':' || kind, reason FROM fact_links WHERE campaign_id = $1 AND reason <> ''`,
			`UPDATE fact_links SET reason = $3 WHERE campaign_id = $1 AND from_fact || ':' || to_fact || ':' || kind = $2`},
		{"conflicts' reasons",
			`SELECT id::text, reason FROM fact_conflicts WHERE campaign_id = $1 AND reason <> ''`,
			`UPDATE fact_conflicts SET reason = $3 WHERE campaign_id = $1 AND id = $2::bigint`},
		{"entities' retirement reasons",
			`SELECT id, retired_reason FROM entities WHERE campaign_id = $1 AND retired_reason <> ''`,
			`UPDATE entities SET retired_reason = $3 WHERE campaign_id = $1 AND id = $2`},
	}
	for _, tg := range targets {
		rows, err := tx.Query(ctx, tg.read, campaign)
		if err != nil {
			return fmt.Errorf("reading %s: %w", tg.what, err)
		}
		type keyed struct{ key, text string }
		var changed []keyed
		var k, text string
		if _, err := pgx.ForEachRow(rows, []any{&k, &text}, func() error {
			if s := scrub(text); s != text {
				changed = append(changed, keyed{k, s})
			}
			return nil
		}); err != nil {
			return fmt.Errorf("reading %s: %w", tg.what, err)
		}
		for _, c := range changed {
			if _, err := tx.Exec(ctx, tg.write, campaign, c.key, c.text); err != nil {
				return fmt.Errorf("taking a forgotten player's words out of %s: %w", tg.what, err)
			}
		}
	}
	return nil
}
