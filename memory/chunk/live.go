package chunk

import (
	"context"
	"fmt"
	"sync"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mention"
)

// Live keeps the chunks of a session that is being played up to date with
// its log, so that what was said minutes ago is found by retrieval before
// the session ends.
//
// Each Update splits the whole session again (Split is deterministic and a
// chunk's id derives from the lines it spans), embeds and indexes only the
// chunks it has not indexed yet (usually the one still growing at the end,
// and whatever a scene break or a topic shift closed since) or whose text
// changed (a line amended by the background name correction) or that
// went missing from the index (another process rebuilt the session's chunks
// from an earlier read of its log), and removes
// the chunks that no longer exist (the earlier shape of the growing one, or
// chunks that held a forgotten speaker's lines). At the end of the session
// its result is the same as [Process]'s. A Live is safe for concurrent use;
// updates run one at a time.
type Live struct {
	camp    Campaign
	emb     embed.Embedder
	opts    Options
	session string
	matcher func(ctx context.Context) (*mention.Matcher, error)

	mu      sync.Mutex
	indexed map[string]string // chunk id → content known to be in the index
	loaded  bool
}

// NewLive returns a Live for one session. matcher supplies the entity
// matcher for the chunks' mentions (it is called on every Update, so it
// should be cheap: the caller keeps it up to date as entities change); nil
// finds no mentions.
func NewLive(c Campaign, e embed.Embedder, o Options, sessionID string, matcher func(ctx context.Context) (*mention.Matcher, error)) (*Live, error) {
	if err := embed.CheckDimensions(e, c.Index().Dimensions()); err != nil {
		return nil, err
	}
	return &Live{camp: c, emb: e, opts: o, session: sessionID, matcher: matcher, indexed: map[string]string{}}, nil
}

// LiveReport says what an Update did.
type LiveReport struct {
	// Chunks is the number of chunks the session has now; Added of them
	// were embedded and indexed by this update.
	Chunks, Added int
	// Removed counts chunks that no longer exist.
	Removed int64
}

// Update brings the session's chunks up to date with its log.
func (l *Live) Update(ctx context.Context) (LiveReport, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rep LiveReport
	if !l.loaded {
		have, err := l.camp.Index().Chunks(ctx, l.session)
		if err != nil {
			return rep, fmt.Errorf("reading the indexed chunks of session %q: %w", l.session, err)
		}
		// A chunk's id derives from the lines it spans, so a chunk an
		// earlier run indexed (before a restart) is the same chunk.
		for _, c := range have {
			l.indexed[c.ID] = c.Content
		}
		// On an error the embedder stays as it was: the next Update tries
		// again (it was set to nil, and the next Update panicked).
		emb, err := inLanguage(ctx, l.camp, l.emb)
		if err != nil {
			return rep, err
		}
		l.emb, l.loaded = emb, true
	} else {
		// Others remove chunks too: a rebuild of the session after a
		// forget-me or a span declared non-canon replaces its chunks with
		// those of the lines it read, and may take away one this chunker
		// indexed meanwhile for lines said since. A chunk believed indexed
		// but gone is indexed again, so the session's latest lines are not
		// left out of retrieval until it ends.
		ids, err := l.camp.Index().ChunkIDs(ctx, l.session)
		if err != nil {
			return rep, err
		}
		present := make(map[string]bool, len(ids))
		for _, id := range ids {
			present[id] = true
		}
		for id := range l.indexed {
			if !present[id] {
				delete(l.indexed, id)
			}
		}
	}
	entries, err := l.camp.Sessions().Entries(ctx, l.session)
	if err != nil {
		return rep, fmt.Errorf("reading session %q: %w", l.session, err)
	}
	var m *mention.Matcher
	if l.matcher != nil {
		if m, err = l.matcher(ctx); err != nil {
			return rep, fmt.Errorf("the entity matcher for chunking: %w", err)
		}
	}
	chunks := Split(entries, m, l.opts)
	keep := make([]string, len(chunks))
	var fresh []int
	for i, c := range chunks {
		keep[i] = c.ID
		// A chunk whose line was amended (a name corrected after the
		// fact) keeps its id and is indexed again with its new text.
		if have, ok := l.indexed[c.ID]; !ok || have != c.Content {
			fresh = append(fresh, i)
		}
	}
	if len(fresh) > 0 {
		texts := make([]string, len(fresh))
		for k, i := range fresh {
			texts[k] = chunks[i].Content
		}
		vs, err := embed.All(ctx, l.emb, texts)
		if err != nil {
			return rep, fmt.Errorf("embedding the chunks of session %q: %w", l.session, err)
		}
		add := make([]memory.Chunk, len(fresh))
		for k, i := range fresh {
			chunks[i].Embedding = vs[k]
			add[k] = chunks[i]
		}
		if err := l.camp.Index().IndexChunks(ctx, add); err != nil {
			return rep, err
		}
	}
	n, err := l.camp.Index().DeleteSessionChunks(ctx, l.session, keep)
	if err != nil {
		return rep, err
	}
	now := make(map[string]string, len(chunks))
	for _, c := range chunks {
		now[c.ID] = c.Content
	}
	l.indexed = now
	return LiveReport{Chunks: len(chunks), Added: len(fresh), Removed: n}, nil
}
