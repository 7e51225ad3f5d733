package chunk

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mention"
)

// countingEmbedder counts the texts it embeds.
type countingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	texts int
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	c.texts += len(texts)
	c.mu.Unlock()
	return c.Embedder.Embed(ctx, texts)
}

func (c *countingEmbedder) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.texts
}

// TestAttackEndOfALongSessionRewritesEveryChunk: a session played for
// hours was indexed as it went (Live); at its end post-session processing
// (Process) embedded every chunk of it again and wrote them all back in
// one statement, hundreds of chunks, a cost that grew with the session
// (the soak's five-hour session: 750 chunks, past the door's statement
// timeout on a loaded machine, so its processing failed). Process must
// embed and write only what the index lacks: the chunks whose lines
// changed, and the chunk whose lines came after the last live update.
func TestAttackEndOfALongSessionRewritesEveryChunk(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	var es []memory.TranscriptEntry
	for i := range 400 {
		e := line(0, i*8, "Thorin", fmt.Sprintf("Line %d about Grimjaw and the forge in Ironhold.", i))
		e.IdempotencyKey = fmt.Sprint("k", i)
		es = append(es, e)
	}
	camp, _ := startSession(ctx, t, es...)
	if err := camp.Graph().UpsertEntities(ctx, world); err != nil {
		t.Fatal(err)
	}
	m := mention.NewMatcher(world)
	emb, _ := embed.NewOffline(64)
	live, err := NewLive(camp, emb, Options{}, "s1", func(context.Context) (*mention.Matcher, error) { return m, nil })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := live.Update(ctx); err != nil {
		t.Fatal(err)
	}
	before, err := camp.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	// One line is amended after the live update: its chunk changes.
	if ok, err := camp.Sessions().AmendEntry(ctx, "s1", "k200", "Line 200 about Elara and the forge in Ironhold."); err != nil || !ok {
		t.Fatalf("amending a line: %v, %v", ok, err)
	}
	counting := &countingEmbedder{Embedder: emb}
	rep, err := Process(ctx, camp, counting, Options{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := camp.Index().Chunks(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Chunks != len(after) || len(after) != len(before) || len(after) < 20 {
		t.Fatalf("report %+v, %d chunks before, %d after", rep, len(before), len(after))
	}
	was := map[string]string{}
	for _, c := range before {
		was[c.ID] = c.Content
	}
	changed := 0
	for _, c := range after {
		if content, ok := was[c.ID]; !ok || content != c.Content {
			changed++
		}
	}
	if changed == 0 || changed > 3 {
		t.Fatalf("amending one line changed %d chunks", changed)
	}
	if n := counting.count(); n != changed {
		t.Errorf("processing the ended session embedded %d of its %d chunks again; only the %d the amended line changed are new", n, len(after), changed)
	}
	elara := false
	for _, c := range after {
		elara = elara || slices.Contains(c.EntityIDs, "elara")
	}
	if !elara {
		t.Error("no chunk links Elara, whom the amended line names")
	}
	if n, err := EmbedPending(ctx, camp, emb); err != nil || n != 0 {
		t.Errorf("chunks left without an embedding: %d, %v", n, err)
	}
}
