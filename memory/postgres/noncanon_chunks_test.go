package postgres_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestNonCanonLinesLeaveTheChunks (ATTACK4): a line marked non-canon (the
// DM's Keep canon on a continuity card, /memory forget span, /npc undo)
// stayed in the chunk that quoted it, so text search and the NPCs' recall
// still found it once its session had ended (only a live session's next
// chunking left it out). MarkNonCanon deletes the chunks spanning the lines
// it marks; the session's other chunks stay.
func TestNonCanonLinesLeaveTheChunks(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	ctx := ctxT(t)
	c := pgtest.Campaign(t, s, "camp")
	log := c.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := log.StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	lines := []struct {
		after time.Duration
		text  string
	}{
		{0, "We should ask the miller about the grain."},
		{time.Minute, "Grimjaw lurks in Duskwood with his wolves."},
		{10 * time.Minute, "The bridge at Ashford washed out last spring."},
	}
	for _, l := range lines {
		if _, err := log.WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: "u1", SpeakerName: "Lyra",
			Text: l.text, At: t0.Add(l.after), Duration: 3 * time.Second}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Index().IndexChunks(ctx, []memory.Chunk{
		{ID: "s1/a", SessionID: "s1", Content: "Lyra: " + lines[0].text + "\nLyra: " + lines[1].text,
			SpeakerIDs: []string{"u1"}, StartAt: t0, EndAt: t0.Add(time.Minute + 3*time.Second)},
		{ID: "s1/b", SessionID: "s1", Content: "Lyra: " + lines[2].text,
			SpeakerIDs: []string{"u1"}, StartAt: t0.Add(10 * time.Minute), EndAt: t0.Add(10*time.Minute + 3*time.Second)},
	}); err != nil {
		t.Fatal(err)
	}
	found := func(q string) bool {
		t.Helper()
		hits, err := c.Index().TextSearch(ctx, q, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range hits {
			if strings.Contains(h.Chunk.Content, q) {
				return true
			}
		}
		return false
	}
	if !found("Duskwood") {
		t.Fatal("the chunk was not indexed as the test expects")
	}

	n, err := log.MarkNonCanon(ctx, "s1", t0.Add(time.Minute), t0.Add(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("MarkNonCanon = %d, %v; want 1 line", n, err)
	}
	if found("Duskwood") {
		t.Error("text search still finds the line marked non-canon")
	}
	cs, err := c.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 1 || cs[0].ID != "s1/b" {
		t.Errorf("chunks after marking: %+v; want only s1/b, which holds no marked line", cs)
	}
	// Marking again changes nothing and deletes nothing.
	if n, err := log.MarkNonCanon(ctx, "s1", t0, t0.Add(time.Hour)); err != nil || n != 2 {
		t.Fatalf("marking the rest = %d, %v; want 2", n, err)
	}
	if n, err := log.MarkNonCanon(ctx, "s1", t0, t0.Add(time.Hour)); err != nil || n != 0 {
		t.Fatalf("marking again = %d, %v; want 0", n, err)
	}
	if cs, err := c.Index().Chunks(ctx, "s1"); err != nil || len(cs) != 0 {
		t.Errorf("chunks after marking every line: %+v %v", cs, err)
	}
}
