package postsession_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/internal/llm/llmtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// TestAttackSpoolReplayedIntoALiveSession: process B took session s1 over
// from process A, killed during an outage, and goes on with it; B's live
// extraction (ExtractLive) extracts windows as they fill. A's replica
// starts again and replays its spool: A's lines, said before B's, land in
// the middle of s1, in windows B already extracted, and push B's lines on.
// When s1 ends, its processing must read A's lines too.
func TestAttackSpoolReplayedIntoALiveSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store, _ := pgtest.NewStore(t, 8)
	camp := pgtest.Campaign(t, store, "late-live")
	var mu sync.Mutex
	var asked []string
	srv := llmtest.New(func(_ int, req llmtest.Request) llmtest.Reply {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, req.Messages[len(req.Messages)-1].Content)
		return llmtest.Reply{Text: `{"entities":[{"name":"Grimjaw","type":"npc"}],"relationships":[]}`}
	})
	defer srv.Close()
	p := newProcessor(t, store, camp, extractor(srv), nil)
	write := func(key, text string, at time.Time) {
		t.Helper()
		if _, err := camp.Sessions().WriteEntries(ctx, []memory.TranscriptEntry{{SessionID: session, SpeakerID: "p1",
			SpeakerName: "Ayla", Text: text, At: at, IdempotencyKey: key}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 12 {
		write(fmt.Sprintf("b/%d", i), fmt.Sprintf("B's line %d", i), t0.Add(time.Duration(i)*time.Minute))
	}
	if rep, err := p.ExtractLive(ctx, session); err != nil || rep.Windows != 3 {
		t.Fatalf("live extraction: %+v, %v; want 3 windows", rep, err)
	}
	// A's spool, replayed: two lines said between B's first ones.
	write("a/0", "A's spooled line about the vault", t0.Add(90*time.Second))
	write("a/1", "A's spooled line about the key", t0.Add(330*time.Second))
	if err := camp.Sessions().EndSession(ctx, session, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Run(ctx, session); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	all := strings.Join(asked, "\n")
	calls := len(asked)
	mu.Unlock()
	for _, l := range []string{"A's spooled line about the vault", "A's spooled line about the key", "B's line 11"} {
		if !strings.Contains(all, l) {
			t.Errorf("s1 was processed without extracting %q (%d extraction requests)", l, calls)
		}
	}
	// Processed once: a second run asks nothing.
	if _, err := p.Run(ctx, session); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != calls {
		t.Errorf("a second run of the processed session sent %d more extraction requests", len(asked)-calls)
	}
}
