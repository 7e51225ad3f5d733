package postsession_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestOverlappingSpeechIsExtractedOnce: players talk over each other, so a
// line (timed from when its speaker began) is often stored after lines
// said after it began. Live extraction leaves the windows within Settle of
// the newest line to the lines still on their way: such a line lands
// after every window extracted, is no late line, and each window of the
// session goes to the model once. Extracting every full window at once
// made the line late and the whole rest of the session extracted again at
// its end.
func TestOverlappingSpeechIsExtractedOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "overlap")
	var mu sync.Mutex
	asked := 0
	srv := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		asked++
		return llmtest.Reply{Text: `{"entities":[],"relationships":[]}`}
	})
	defer srv.Close()
	p, err := postsession.New(postsession.Config{Transcript: camp.Sessions(), Graph: camp.Graph(), Extractor: extractor(srv),
		Progress: postsession.NewStoredProgress(camp.Processing()), Window: 4, Logger: quiet(), Settle: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	write := func(key, text string, at time.Time) {
		t.Helper()
		if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: session, SpeakerID: key,
			SpeakerName: "Ayla", Text: text, At: at, IdempotencyKey: key}}); err != nil {
			t.Fatal(err)
		}
	}
	// 20 lines, one every 10 s (the newest at 190 s): the windows whose
	// last line is a minute older than it are lines 0–11 (up to 110 s).
	for i := range 20 {
		write(fmt.Sprintf("l%d", i), fmt.Sprintf("line %d", i), t0.Add(time.Duration(i)*10*time.Second))
	}
	if rep, err := p.ExtractLive(ctx, session); err != nil || rep.Windows != 3 {
		t.Fatalf("live extraction: %+v, %v; want the 3 windows a minute older than the newest line", rep, err)
	}
	// A long line begun at 150 s is stored now, after the line of 190 s.
	write("long", "a long line begun before the last one", t0.Add(150*time.Second))
	if rep, err := p.ExtractLive(ctx, session); err != nil || rep.Windows != 0 {
		t.Fatalf("second live pass: %+v, %v; want nothing settled yet", rep, err)
	}
	if err := camp.Sessions().EndSession(ctx, session, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, session); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := 6; asked != want { // 21 lines, windows of 4
		t.Fatalf("the session's 6 windows took %d extraction requests: windows were extracted twice", asked)
	}
}
