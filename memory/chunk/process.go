package chunk

import (
	"context"
	"fmt"
	"slices"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mention"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// Report says what [Process] did.
type Report struct {
	Sessions int
	// Chunks is the number of chunks the sessions now have.
	Chunks int
	// Removed counts chunks of an earlier run that no longer exist.
	Removed int64
}

// Campaign is the memory chunking reads from and writes to: a campaign of
// the store (memory/postgres) or a handle from the door (memory/access).
type Campaign interface {
	Graph() *postgres.Graph
	Sessions() *postgres.SessionLog
	Index() *postgres.SemanticIndex
}

// Process chunks and embeds sessions of a campaign (all of them when none
// are named), replacing each session's earlier chunks. Only the chunks the
// index lacks as they are now (new, changed, or without an embedding) are
// embedded and written: a session indexed live as it was played costs
// its last lines, not all of it again. Running it again on an unchanged
// session changes nothing.
func Process(ctx context.Context, c Campaign, e embed.Embedder, o Options, sessions ...string) (Report, error) {
	var rep Report
	if err := embed.CheckDimensions(e, c.Index().Dimensions()); err != nil {
		return rep, err
	}
	e, err := inLanguage(ctx, c, e)
	if err != nil {
		return rep, err
	}
	if len(sessions) == 0 {
		all, err := c.Sessions().Sessions(ctx)
		if err != nil {
			return rep, err
		}
		for _, s := range all {
			sessions = append(sessions, s.ID)
		}
	}
	ents, err := c.Graph().FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return rep, fmt.Errorf("loading entities for chunking: %w", err)
	}
	m := mention.NewMatcher(ents)
	for _, sid := range sessions {
		n, removed, err := processSession(ctx, c, e, m, o, sid)
		if err != nil {
			return rep, err
		}
		rep.Sessions++
		rep.Chunks += n
		rep.Removed += removed
	}
	return rep, nil
}

// maxChunkings bounds how many times processSession chunks a session
// whose lines keep leaving while it is chunked.
const maxChunkings = 3

// processSession chunks and embeds one session, replacing its earlier
// chunks, and returns how many chunks it has and how many were removed.
// Lines that left the session while it was chunked (a forget-me, a line
// marked non-canon: SessionLog.StillCanon) have it chunked again, so no
// chunk quotes them.
func processSession(ctx context.Context, c Campaign, e embed.Embedder, m *mention.Matcher, o Options, sid string) (int, int64, error) {
	var removed int64
	for range maxChunkings {
		entries, err := c.Sessions().Entries(ctx, sid)
		if err != nil {
			return 0, removed, fmt.Errorf("reading session %q: %w", sid, err)
		}
		var ids []int64
		for _, en := range entries {
			if en.ID != 0 && !en.NonCanon {
				ids = append(ids, en.ID)
			}
		}
		chunks := Split(entries, m, o)
		keep := make([]string, len(chunks))
		for i, ch := range chunks {
			keep[i] = ch.ID
		}
		// Only the chunks the index lacks as they are now are embedded
		// and written: at the end of a session the live chunker indexed
		// nearly all of them, and writing a five-hour session's hundreds
		// of chunks again, in one statement, outlasted the door's
		// statement timeout on a loaded machine.
		fresh, err := unindexed(ctx, c, sid, chunks)
		if err != nil {
			return 0, removed, err
		}
		texts := make([]string, len(fresh))
		for i, ch := range fresh {
			texts[i] = ch.Content
		}
		vs, err := embed.All(ctx, e, texts)
		if err != nil {
			return 0, removed, fmt.Errorf("embedding the chunks of session %q: %w", sid, err)
		}
		for i := range fresh {
			fresh[i].Embedding = vs[i]
		}
		if err := c.Index().IndexChunks(ctx, fresh); err != nil {
			return 0, removed, err
		}
		n, err := c.Index().DeleteSessionChunks(ctx, sid, keep)
		if err != nil {
			return 0, removed, err
		}
		removed += n
		still, err := c.Sessions().StillCanon(ctx, sid, ids)
		if err != nil {
			return 0, removed, err
		}
		if still {
			return len(chunks), removed, nil
		}
	}
	return 0, removed, fmt.Errorf("chunking session %q: its lines kept leaving while it was chunked (%d times); run it again",
		sid, maxChunkings)
}

// unindexed returns the chunks of session sid that the index does not
// hold as they are (content, speakers, times, entity links), with an
// embedding.
func unindexed(ctx context.Context, c Campaign, sid string, chunks []memory.Chunk) ([]memory.Chunk, error) {
	have, err := c.Index().Chunks(ctx, sid)
	if err != nil {
		return nil, fmt.Errorf("reading the indexed chunks of session %q: %w", sid, err)
	}
	embedded, err := c.Index().EmbeddedChunkIDs(ctx, sid)
	if err != nil {
		return nil, err
	}
	withVector := make(map[string]bool, len(embedded))
	for _, id := range embedded {
		withVector[id] = true
	}
	byID := make(map[string]memory.Chunk, len(have))
	for _, h := range have {
		byID[h.ID] = h
	}
	var out []memory.Chunk
	for _, ch := range chunks {
		if h, ok := byID[ch.ID]; !ok || !withVector[ch.ID] || !sameChunk(h, ch) {
			out = append(out, ch)
		}
	}
	return out, nil
}

// sameChunk reports whether two chunks hold the same content, speakers,
// times and entity links (their embeddings aside).
func sameChunk(a, b memory.Chunk) bool {
	sorted := func(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }
	return a.Content == b.Content && a.StartAt.Equal(b.StartAt) && a.EndAt.Equal(b.EndAt) &&
		slices.Equal(sorted(a.SpeakerIDs), sorted(b.SpeakerIDs)) && slices.Equal(sorted(a.EntityIDs), sorted(b.EntityIDs))
}

// EmbedPending embeds every chunk of the campaign that has no embedding
// (after `glyphoxa migrate --reembed`, or chunks indexed without one) and
// reports how many it embedded.
func EmbedPending(ctx context.Context, c Campaign, e embed.Embedder) (int, error) {
	if err := embed.CheckDimensions(e, c.Index().Dimensions()); err != nil {
		return 0, err
	}
	e, err := inLanguage(ctx, c, e)
	if err != nil {
		return 0, err
	}
	total := 0
	for {
		cs, err := c.Index().UnembeddedChunks(ctx, 256)
		if err != nil || len(cs) == 0 {
			return total, err
		}
		texts := make([]string, len(cs))
		for i, ch := range cs {
			texts[i] = ch.Content
		}
		vs, err := embed.All(ctx, e, texts)
		if err != nil {
			return total, err
		}
		m := make(map[string][]float32, len(cs))
		for i, ch := range cs {
			m[ch.ID] = vs[i]
		}
		if err := c.Index().SetEmbeddings(ctx, m); err != nil {
			return total, err
		}
		total += len(cs)
	}
}

// inLanguage returns e for the campaign's language ([embed.ForLanguage]):
// the offline embedder's words follow the campaign's text-search
// language, as full-text search does.
func inLanguage(ctx context.Context, c Campaign, e embed.Embedder) (embed.Embedder, error) {
	lang, err := c.Index().Language(ctx)
	if err != nil {
		return nil, err
	}
	return embed.ForLanguage(e, lang), nil
}
