package continuity_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// leftQuoting lists the rows of every table of the campaign's database
// whose text holds quote, as "table: row".
func leftQuoting(ctx context.Context, t *testing.T, db interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, quote string) []string {
	t.Helper()
	rows, err := db.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tb := range tables {
		rows, err := db.Query(ctx, fmt.Sprintf(`SELECT x::text FROM %s x WHERE strpos(x::text, $1) > 0`, pgx.Identifier{tb}.Sanitize()), quote)
		if err != nil {
			t.Fatal(err)
		}
		found, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range found {
			out = append(out, tb+": "+f)
		}
	}
	return out
}

// TestForgetMeAfterARetconLeavesNoQuote: the DM retconned canon to a
// player's line (the card's Retcon), then the player asked to be
// forgotten. No row of the database quotes the line any more: not the
// session log, not the card, not the retcon's evidence nor its reason
// (the DM-only dm_reason, the links' and conflicts' reasons); and the
// DM's decision survives as a fact of the DM's, without the quote.
func TestForgetMeAfterARetconLeavesNoQuote(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, campID, card := storedFixture(t, "u-thorin")
	dm := pgtest.Open(t, store, campID, memory.DMViewer())
	got, err := continuity.SettleStored(ctx, dm, card.ID, true, "dm-1")
	if err != nil || got.Status != continuity.CardRetconned {
		t.Fatalf("retcon: %+v, %v", got, err)
	}
	if left := leftQuoting(ctx, t, store.Pool(), card.Line.Text); len(left) == 0 {
		t.Fatal("nothing quotes the line before forget-me: the scan finds nothing")
	}
	if _, err := dm.ForgetSpeaker(ctx, "u-thorin"); err != nil {
		t.Fatal(err)
	}
	for _, row := range leftQuoting(ctx, t, store.Pool(), card.Line.Text) {
		t.Errorf("after forget-me a row still quotes the player's line: %s", row)
	}
	// The DM's retcon is still canon.
	var live int
	if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM relationships WHERE campaign_id = $1 AND status = 'active'
		AND source_id = $2 AND target_id = $3 AND rel_type = $4 AND attributes ? 'dm_reason'`,
		campID, card.Subject, card.Object, card.Rel).Scan(&live); err != nil {
		t.Fatal(err)
	}
	if live != 1 {
		t.Errorf("the DM's retcon (%s %s %s) is gone with the player's words: %d live facts", card.Subject, card.Rel, card.Object, live)
	}
}
