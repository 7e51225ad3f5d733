package postgres_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestHeardChunksFollowsTheRule: the chunks an NPC heard are those of the
// sessions it spoke in within HeardWindow of one of its canon lines, a
// chunk without a start spanning its session up to its end. HeardChunks
// starts from the NPC's lines; the rule is checked here as it reads,
// chunk by chunk, on chunks of every shape (no start, no end, neither;
// spans ending exactly at the window's edge) and lines of every kind (the
// NPC's canon and struck lines, another NPC's, a player's, a line whose
// speaker is not the NPC it is voiced as).
func TestHeardChunksFollowsTheRule(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "heard")
	rng := rand.New(rand.NewPCG(27, 34))
	day := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	at := func(session int, minute int) time.Time {
		return day.Add(time.Duration(session)*24*time.Hour + time.Duration(minute)*time.Minute)
	}
	var lines []memory.TranscriptEntry
	for sess := range 3 {
		for minute := 0; minute < 240; minute += 1 + rng.IntN(12) {
			e := memory.TranscriptEntry{SessionID: fmt.Sprintf("s%d", sess), SpeakerID: "u1", SpeakerName: "Mira",
				Text: "line", At: at(sess, minute)}
			switch rng.IntN(6) {
			case 0:
				e.SpeakerID, e.NPCID = "grim", "grim"
			case 1:
				e.SpeakerID, e.NPCID = "vex", "vex"
			case 2: // voiced as grim by another speaker id (a campaign file may say so)
				e.SpeakerID, e.NPCID = "dm", "grim"
			}
			lines = append(lines, e)
		}
	}
	must[int](t)(c.Sessions().WriteEntries(ctx, lines))
	// Strike some of grim's lines from the record.
	if _, err := s.Pool().Exec(ctx, `UPDATE transcript_entries SET noncanon = true
		WHERE campaign_id = 'heard' AND npc_id = 'grim' AND id % 3 = 0`); err != nil {
		t.Fatal(err)
	}
	batch := &pgx.Batch{}
	for sess := range 3 {
		for k := range 40 {
			var start, end *time.Time
			from := at(sess, rng.IntN(260)-10)
			to := from.Add(time.Duration(rng.IntN(30)) * time.Minute)
			if k%10 == 3 { // exactly HeardWindow after a minute mark
				to = from.Add(postgres.HeardWindow)
			}
			switch k % 7 {
			case 0: // no start: the whole session, up to its end
				end = &to
			case 1: // no end
				start = &from
			case 2: // neither
			default:
				start, end = &from, &to
			}
			batch.Queue(`INSERT INTO chunks (campaign_id, id, session_id, content, start_at, end_at)
				VALUES ('heard', $1, $2, 'chunk', $3, $4)`, fmt.Sprintf("s%d-%02d", sess, k), fmt.Sprintf("s%d", sess), start, end)
		}
	}
	if err := s.Pool().SendBatch(ctx, batch).Close(); err != nil {
		t.Fatal(err)
	}
	for _, npc := range []string{"grim", "vex", "nobody", ""} {
		t.Run("npc="+npc, func(t *testing.T) {
			got := must[[]string](t)(c.Index().HeardChunks(ctx, npc))
			rows, err := s.Pool().Query(ctx, `SELECT c.id FROM chunks c
				WHERE c.campaign_id = 'heard' AND $1 <> '' AND EXISTS (
				    SELECT 1 FROM transcript_entries t
				    WHERE t.campaign_id = 'heard' AND t.session_id = c.session_id AND t.npc_id = $1 AND NOT t.noncanon
				      AND t.at BETWEEN coalesce(c.start_at, t.at) - $2::interval AND coalesce(c.end_at, c.start_at, t.at) + $2::interval)
				ORDER BY c.id`, npc, postgres.HeardWindow)
			if err != nil {
				t.Fatal(err)
			}
			want, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = []string{}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("heard %d chunks %v\nwant %d %v", len(got), got, len(want), want)
			}
			if npc == "grim" && len(want) < 20 {
				t.Fatalf("the corpus gives grim only %d chunks: too few to tell the rule from another", len(want))
			}
		})
	}
}
