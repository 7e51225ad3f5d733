package postsession_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// readingExtractor answers like a model that quotes the lines it is given:
// a fact per line that names a place it knows. Its first call waits for
// release (the model is slow), after it was handed the lines.
type readingExtractor struct {
	held    chan struct{}
	release chan struct{}
	once    sync.Once
}

func (x *readingExtractor) Extract(ctx context.Context, _ []memory.Entity, es []memory.TranscriptEntry) (postsession.Extraction, error) {
	first := false
	x.once.Do(func() { first = true; close(x.held) })
	if first {
		select {
		case <-x.release:
		case <-ctx.Done():
			return postsession.Extraction{}, ctx.Err()
		}
	}
	out := postsession.Extraction{Entities: []postsession.ExtractedEntity{
		{Name: "Thorin", Type: "player"}, {Name: "Lyra", Type: "player"},
		{Name: "North Gate", Type: "location"}, {Name: "Mill", Type: "location"}}}
	for _, e := range es {
		var place string
		switch {
		case strings.Contains(e.Text, "north gate"):
			place = "North Gate"
		case strings.Contains(e.Text, "miller"):
			place = "Mill"
		default:
			continue
		}
		out.Relationships = append(out.Relationships, postsession.ExtractedRelationship{Source: e.SpeakerName, Target: place,
			Type: "GOES_TO", Confidence: 0.9, Basis: "stated", Evidence: e.SpeakerName + ": " + e.Text})
	}
	return out, nil
}

// TestExtractionAfterLinesLeftWhileTheModelRead (ATTACK4): the processing
// of a session that just ended handed a window to the model, and while the
// model answered (seconds) the player asked to be forgotten; the facts it
// then stored quoted the forgotten line, after forget-me had deleted the
// facts resting on it. The extraction checks the window's lines once the
// model answered and, when some left, reads the session again.
func TestExtractionAfterLinesLeftWhileTheModelRead(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "race")
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	if err := camp.Sessions().StartSession(ctx, "s1", t0); err != nil {
		t.Fatal(err)
	}
	for i, l := range []struct{ id, who, text string }{
		{"lyra", "Lyra", "We should ask the miller about the grain."},
		{"thorin", "Thorin", "I will stand watch at the north gate tonight."},
	} {
		if _, err := camp.Sessions().WriteEntry(ctx, memory.TranscriptEntry{SessionID: "s1", SpeakerID: l.id, SpeakerName: l.who,
			Text: l.text, At: t0.Add(time.Duration(i) * time.Minute)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := camp.Sessions().EndSession(ctx, "s1", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	x := &readingExtractor{held: make(chan struct{}), release: make(chan struct{})}
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: x,
		Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := p.Run(ctx, "s1"); done <- err }()
	select {
	case <-x.held:
	case err := <-done:
		t.Fatalf("the processing ended before the model was asked: %v", err)
	}
	if _, err := camp.ForgetSpeaker(ctx, "thorin"); err != nil {
		t.Fatal(err)
	}
	close(x.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	count := func(like string) int {
		t.Helper()
		var n int
		if err := store.Pool().QueryRow(ctx, `SELECT count(*) FROM relationships WHERE campaign_id = 'race'
			AND attributes->>'evidence' LIKE $1`, "%"+like+"%").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count("north gate"); n != 0 {
		t.Errorf("%d facts quote the line of the player forgotten while the model read it", n)
	}
	if n := count("miller"); n != 1 {
		t.Errorf("%d facts quote the other player's line; want 1", n)
	}
}
