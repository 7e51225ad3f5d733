package postgres_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestSessionLineCounts: a session's line count, kept as lines are
// written, deleted and struck (migration 0037), is the number of its lines
// in the log, and a player's the number not struck from the record (what
// the player's pages show), after single writes, batches that repeat idempotency keys, writers
// racing over the same sessions in opposite orders (each batch whole:
// batches that locked their sessions in the order of their lines
// deadlocked, and one was refused), a struck span and a restored line, a
// forgotten speaker and a deleted
// session, and a session inserted with a count of its own; and a line
// cannot be moved to another session, which would leave both counts wrong.
func TestSessionLineCounts(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "counts")
	other := pgtest.Campaign(t, s, "other") // same session ids, another campaign
	l := c.Sessions()
	player := must[*postgres.Campaign](t)(c.As(memory.PlayerViewer()))
	at := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	line := func(session, speaker string, i int) memory.TranscriptEntry {
		return memory.TranscriptEntry{SessionID: session, SpeakerID: speaker, SpeakerName: speaker, Text: fmt.Sprintf("line %d", i),
			At: at.Add(time.Duration(i) * time.Second), IdempotencyKey: fmt.Sprintf("%s-%s-%d", session, speaker, i)}
	}
	check := func(when string) {
		t.Helper()
		want := map[string]int{}
		rows, err := s.Pool().Query(ctx, `SELECT session_id, count(*) FROM transcript_entries WHERE campaign_id = 'counts' GROUP BY 1`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				t.Fatal(err)
			}
			want[id] = n
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		ss := must[[]memory.Session](t)(l.Sessions(ctx))
		for _, x := range ss {
			if x.Entries != want[x.ID] {
				t.Errorf("%s: session %s counts %d lines, the log holds %d", when, x.ID, x.Entries, want[x.ID])
			}
			one := must[memory.Session](t)(l.Session(ctx, x.ID))
			if one.Entries != x.Entries {
				t.Errorf("%s: session %s alone counts %d, in the list %d", when, x.ID, one.Entries, x.Entries)
			}
		}
		if len(ss) == 0 {
			t.Fatalf("%s: no session listed", when)
		}
		// A player counts the lines their pages show: the canon ones (the
		// party is never split here), in each session and in all.
		all := 0
		for _, x := range must[[]memory.Session](t)(player.Sessions().Sessions(ctx)) {
			all += x.Entries
			var canon int
			if err := s.Pool().QueryRow(ctx, `SELECT count(*) FROM transcript_entries WHERE campaign_id = 'counts'
				AND session_id = $1 AND NOT noncanon`, x.ID).Scan(&canon); err != nil {
				t.Fatal(err)
			}
			if x.Entries != canon {
				t.Errorf("%s: a player counts %d lines in session %s, the log holds %d not struck", when, x.Entries, x.ID, canon)
			}
		}
		if n := must[postgres.Counts](t)(player.Counts(ctx)); n.Entries != all {
			t.Errorf("%s: a player's campaign counts %d lines, their sessions %d", when, n.Entries, all)
		}
		var every int
		for _, x := range ss {
			every += x.Entries
		}
		if n := must[postgres.Counts](t)(c.Counts(ctx)); n.Entries != every {
			t.Errorf("%s: the campaign counts %d lines, its sessions %d", when, n.Entries, every)
		}
	}
	for i := range 5 {
		must[bool](t)(l.WriteEntry(ctx, line("s1", "ana", i)))
	}
	must[bool](t)(other.Sessions().WriteEntry(ctx, line("s1", "ana", 0)))
	if must[bool](t)(l.WriteEntry(ctx, line("s1", "ana", 3))) {
		t.Fatal("a repeated idempotency key was written again")
	}
	check("single writes and a repeat")
	var batch []memory.TranscriptEntry
	for i := range 20 {
		batch = append(batch, line("s2", "bo", i), line("s1", "bo", i))
	}
	batch = append(batch, line("s1", "ana", 4), line("s2", "bo", 7)) // repeats
	if n := must[int](t)(l.WriteEntries(ctx, batch)); n != 40 {
		t.Fatalf("the batch wrote %d lines, want 40", n)
	}
	check("a batch over two sessions")
	// The DM strikes a span, then strikes it again (nothing changes), then
	// a line is restored by hand.
	if n := must[int64](t)(l.MarkNonCanon(ctx, "s1", at.Add(2*time.Second), at.Add(4*time.Second))); n < 3 {
		t.Fatalf("striking a span marked %d lines, want 3 or more", n)
	}
	if n := must[int64](t)(l.MarkNonCanon(ctx, "s1", at.Add(2*time.Second), at.Add(4*time.Second))); n != 0 {
		t.Fatalf("striking it again marked %d lines", n)
	}
	check("a struck span")
	if _, err := s.Pool().Exec(ctx, `UPDATE transcript_entries SET noncanon = false
		WHERE id = (SELECT min(id) FROM transcript_entries WHERE campaign_id = 'counts' AND noncanon)`); err != nil {
		t.Fatal(err)
	}
	check("a line restored")
	// Writers over the same three sessions, each in its own order.
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 37))
			order := []string{"s1", "s2", "s3"}
			rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
			var es []memory.TranscriptEntry
			for i := range 15 {
				es = append(es, line(order[i%3], fmt.Sprintf("w%d", w), i))
			}
			if _, err := l.WriteEntries(ctx, es); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a racing writer: %v", err)
	}
	check("racing writers")
	rep := must[memory.ForgetReport](t)(c.ForgetSpeaker(ctx, "bo"))
	if rep.Entries != 40 {
		t.Errorf("forgetting bo removed %d lines, want 40", rep.Entries)
	}
	check("a forgotten speaker")
	_, err := s.Pool().Exec(ctx, `UPDATE transcript_entries SET session_id = 's3' WHERE campaign_id = 'counts' AND session_id = 's1'`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "23514" {
		t.Errorf("moving lines to another session: %v, want a check violation", err)
	}
	if _, err := s.Pool().Exec(ctx, `UPDATE transcript_entries SET text = 'amended' WHERE campaign_id = 'counts' AND session_id = 's1'`); err != nil {
		t.Errorf("amending lines in place: %v", err)
	}
	check("a refused move")
	// An insert that brings its own count (an import's row) starts at none.
	if _, err := s.Pool().Exec(ctx, `INSERT INTO sessions (campaign_id, id, started_at, entries) VALUES ('counts', 's9', now(), 999)`); err != nil {
		t.Fatal(err)
	}
	check("a session inserted with a count")
	if _, err := s.Pool().Exec(ctx, `DELETE FROM sessions WHERE campaign_id = 'counts' AND id = 's3'`); err != nil {
		t.Fatal(err)
	}
	check("a deleted session")
	if n := must[[]memory.Session](t)(other.Sessions().Sessions(ctx)); len(n) != 1 || n[0].Entries != 1 {
		t.Errorf("the other campaign's sessions: %+v, want s1 with its 1 line", n)
	}
}
