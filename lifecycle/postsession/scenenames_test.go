package postsession_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// recordingExtractor answers out and records the ids of the known
// entities it was handed, call by call.
type recordingExtractor struct {
	out   postsession.Extraction
	mu    sync.Mutex
	known [][]string
}

func (x *recordingExtractor) Extract(_ context.Context, known []memory.Entity, _ []memory.TranscriptEntry) (postsession.Extraction, error) {
	ids := make([]string, 0, len(known))
	for _, e := range known {
		ids = append(ids, e.ID)
	}
	x.mu.Lock()
	x.known = append(x.known, ids)
	x.mu.Unlock()
	return x.out, nil
}

// TestSceneEntityNamedOnlyByItsFullName extracts sessions after Thorin
// alone heard of "Korrin Ashvale" (alias "Korrin") in a split scene: the
// model extracting a window said with the party together is not told of
// him, while one extracting a split window is; his alias said exactly
// with the party together does not show him to Lyra (an alias may be a
// common word, and he would show his full name); his full name said with
// the party together does.
func TestSceneEntityNamedOnlyByItsFullName(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
	defer cancel()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "fullname")
	sl := camp.Sessions()
	t0 := time.Date(2026, 3, 1, 19, 0, 0, 0, time.UTC)
	write := func(sess, who, text string, at time.Time) {
		t.Helper()
		if _, err := sl.WriteEntry(ctx, memory.TranscriptEntry{SessionID: sess, SpeakerID: who, SpeakerName: who, Text: text, At: at}); err != nil {
			t.Fatal(err)
		}
	}
	// session records sess at start with one line, split or not.
	session := func(sess string, start time.Time, split bool, who, text string) {
		t.Helper()
		if err := sl.StartSession(ctx, sess, start); err != nil {
			t.Fatal(err)
		}
		players := []string{"lyra", "thorin"}
		if split {
			if err := sl.RecordPresence(ctx, sess, start, players, false); err != nil {
				t.Fatal(err)
			}
			players = []string{"thorin"}
		}
		if err := sl.RecordPresence(ctx, sess, start.Add(time.Minute), players, split); err != nil {
			t.Fatal(err)
		}
		write(sess, who, text, start.Add(2*time.Minute))
		if err := sl.EndSession(ctx, sess, start.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	run := func(sess string, x *recordingExtractor) {
		t.Helper()
		p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(),
			Extractor: x, Progress: postsession.NewStoredProgress(camp.Processing()), Logger: quiet()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Run(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	lyraSees := func() bool {
		t.Helper()
		c, err := camp.As(memory.PlayerViewerOf("lyra"))
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Graph().Entity(ctx, "korrin-ashvale")
		return err == nil
	}
	korrin := postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Korrin Ashvale", Type: "npc", Aliases: []string{"Korrin"}}}}

	session("s1", t0, true, "marla", "They call me Korrin Ashvale, and my boat leaves at dawn.")
	run("s1", &recordingExtractor{out: korrin})
	if lyraSees() {
		t.Fatal("Lyra sees Korrin Ashvale after s1, heard only in Thorin's scene")
	}

	// The party together says his alias, exactly.
	s2 := &recordingExtractor{out: postsession.Extraction{Entities: []postsession.ExtractedEntity{{Name: "Korrin", Type: "npc"}}}}
	session("s2", t0.Add(24*time.Hour), false, "thorin", "Korrin will take us across, I trust him.")
	run("s2", s2)
	for _, known := range s2.known {
		if slices.Contains(known, "korrin-ashvale") {
			t.Errorf("the model extracting s2 (said with the party together) was told of korrin-ashvale: %v", known)
		}
	}
	if len(s2.known) == 0 {
		t.Fatal("s2 was not extracted")
	}
	if lyraSees() {
		t.Error("Lyra sees Korrin Ashvale after only his alias \"Korrin\" was said with the party together")
	}

	// Another split scene: the model is told of him there.
	s3 := &recordingExtractor{out: korrin}
	session("s3", t0.Add(48*time.Hour), true, "marla", "Korrin Ashvale remembers you, Thorin.")
	run("s3", s3)
	if len(s3.known) == 0 || !slices.Contains(s3.known[0], "korrin-ashvale") {
		t.Errorf("the model extracting s3 (Thorin's scene) was not told of korrin-ashvale: %v", s3.known)
	}
	if lyraSees() {
		t.Error("Lyra sees Korrin Ashvale after a second scene of Thorin's")
	}

	// His full name said with the party together.
	session("s4", t0.Add(72*time.Hour), false, "thorin", "Lyra, this is Korrin Ashvale, our captain.")
	run("s4", &recordingExtractor{out: korrin})
	if !lyraSees() {
		t.Error("Lyra does not see Korrin Ashvale after his full name was said with the party together")
	}
}
