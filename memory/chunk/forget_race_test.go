package chunk

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
)

// heldEmbedder embeds like next, but its first call waits for release:
// the chunking in progress is held after it read the session's lines.
type heldEmbedder struct {
	next    embed.Embedder
	held    chan struct{} // closed when the first call arrived
	release chan struct{}
	once    sync.Once
}

func (h *heldEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	first := false
	h.once.Do(func() { first = true; close(h.held) })
	if first {
		select {
		case <-h.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return h.next.Embed(ctx, texts)
}

func (h *heldEmbedder) Dimensions() int { return h.next.Dimensions() }

// TestProcessAfterLinesLeftWhileItChunked (ATTACK4): Process read a
// session's lines, and while it embedded them (a remote call: seconds)
// a player asked to be forgotten, or the DM marked a line non-canon; the
// chunks it then wrote quoted the lines that had just left, and nothing
// took them out again (post-session processing racing a forget-me). A
// Process whose lines changed under it chunks the session again.
func TestProcessAfterLinesLeftWhileItChunked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		leave func(ctx context.Context, c Campaign) error
		gone  string
	}{
		{"forget-me", func(ctx context.Context, c Campaign) error {
			_, err := c.(interface {
				ForgetSpeaker(context.Context, string) (memory.ForgetReport, error)
			}).ForgetSpeaker(ctx, "thorin")
			return err
		}, "north gate"},
		{"non-canon", func(ctx context.Context, c Campaign) error {
			_, err := c.Sessions().MarkNonCanon(ctx, "s1", t0.Add(20*time.Second), t0.Add(20*time.Second))
			return err
		}, "Vermithrax"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
			defer cancel()
			camp, _ := startSession(ctx, t,
				line(0, 0, "Lyra", "We should ask the miller about the grain."),
				line(0, 10, "Thorin", "I will stand watch at the north gate tonight."),
				line(0, 20, "Lyra", "The dragon Vermithrax sleeps under the mountain."),
				line(0, 30, "Lyra", "The bridge at Ashford washed out last spring."))
			off, _ := embed.NewOffline(64)
			h := &heldEmbedder{next: off, held: make(chan struct{}), release: make(chan struct{})}
			done := make(chan error, 1)
			go func() { _, err := Process(ctx, camp, h, Options{}, "s1"); done <- err }()
			select {
			case <-h.held:
			case err := <-done:
				t.Fatalf("Process ended before it embedded: %v", err)
			}
			if err := tc.leave(ctx, camp); err != nil {
				t.Fatal(err)
			}
			close(h.release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			cs, err := camp.Index().Chunks(ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			var all []string
			for _, c := range cs {
				all = append(all, c.Content)
			}
			text := strings.Join(all, "\n---\n")
			if strings.Contains(text, tc.gone) {
				t.Errorf("a line that left while the session was chunked is in its chunks:\n%s", text)
			}
			for _, want := range []string{"miller", "Ashford"} {
				if !strings.Contains(text, want) {
					t.Errorf("the line with %q is missing from the chunks:\n%s", want, text)
				}
			}
		})
	}
}
