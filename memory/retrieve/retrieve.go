// Package retrieve answers questions from a campaign's memory.
//
// A [Retriever] offers five modes:
//
//   - vector: chunks nearest to the question's embedding (L2);
//   - fts: chunks ranked by Okapi BM25 over the question's words, in the
//     campaign's language ([postgres.SemanticIndex.TextSearch]);
//   - graphrag: chunks near the question's embedding among those that
//     mention an entity the question names or one of its neighbours (L3 +
//     L2), or among all chunks when those link nothing;
//   - ppr: chunks ranked by Personalized PageRank over the entity–chunk
//     graph, as HippoRAG 2 does it (below);
//   - hybrid (the default): the ppr ranking fused with the fts ranking
//     (vector when full text finds nothing), and the facts (kind "fact") that the
//     question leads to from the entities it names: those whose type it
//     names ("who employs Hale" follows EMPLOYS), or, for "the
//     harbourmaster's sister", every relationship of the harbourmaster,
//     weighted evenly, the walk telling them apart. The K answers are
//     followed by the entities the question names by full name or alias
//     (kind "entity": name, type, aliases and public attributes).
//
// # Fusion
//
// Hybrid retrieval must never be worse than its best part, on any corpus,
// with one parameter set. Four rules aim at that; no weight is fitted to a
// question set ([DefaultWeights] are all 1, facts 1/2):
//
//   - Every ranker weighs the same before the question is seen, and each
//     is then gated by its own confidence for the question. A ranking by
//     score (full text, vector) is as confident as its best score stands
//     above its score at depth Candidates: a best
//     chunk sharing the question's rare words stands out; a flat list of
//     near-equal similarities (the offline embedder's usual answer) does
//     not. An entity the question names is as confident as it is
//     specific: its match score times its inverse document frequency over
//     the chunks ([ppr.Graph.Specificity]), so the two speakers of every
//     line of a conversation say nothing, and a rare name says much.
//   - The walk is the fusion of all evidence, as in HippoRAG 2: passages
//     are nodes beside entities, and the reset distribution holds the
//     named entities with their confidences and the chunks of the
//     full-text and vector rankings, each weighted by its ranker's
//     confidence over its rank (ChunkSeedWeight in all; chunks that
//     mention no entity take part too). When the question names nothing
//     specific, the walk starts from the chunks alone.
//   - Evidence is not counted twice, and each ranking weighs what it
//     knows that the others do not. The final fusion adds to the walk's
//     ranking one direct ranking: full text (BM25), or the vector ranking
//     when full text matched nothing. The two direct rankings' confidences
//     are on different scales (a BM25 score against a cosine): choosing
//     the "more confident" of them picked the offline embedder's flat
//     lists for half the questions of the keep corpus. Adding both lets
//     two agreeing mediocre lists outvote the one that knows (names
//     corpus, recall@5 0.70 with both, 0.87 with one).
//   - How the walk joins depends on what it holds beyond the direct
//     ranking. When it followed a relationship the question asks about
//     ("the harbourmaster's sister"), it holds evidence no ranking by
//     words can (the answer need not share a word with the question): the
//     two are independent witnesses and are fused by reciprocal rank
//     (RRFK 60, the published default, Cormack, Clarke and Buettcher
//     2009), each at full weight, whatever their score scales. The
//     words then speak in two rankings: the question by full text as it
//     is asked, and with the name of the entity the relationship led to
//     added, the question with the relation resolved (query expansion,
//     [Retriever.expandedText]; feud recall@10 0.50 to 0.58, wharf,
//     written before it and never tuned on, recall@5 0.65 to 0.75, names
//     0.87 to 0.97, saltmere 0.85 to 0.88, no corpus lower). The two are
//     the same words, one witness, and each chunk scores once, at its
//     better rank of the two (CombMAX of the reciprocal ranks, Fox and
//     Shaw 1994). Summed, they counted the same evidence twice: the
//     chunks the words rank in both, the named one's and others' talk of
//     the object, scored 1/(60+r) twice and outscored a chunk that only
//     the walk and the expansion hold, the relative's answer in other
//     words than the question's (feud recall@5 0.29 to 0.38; saltmere
//     0.86 to 0.85, less than one question; vine, written and scored
//     before it, and every other corpus level).
//     Reciprocal ranks still promise nothing about a part: a chunk one
//     witness ranks high and the other not at all can fall below any
//     number of chunks the two agree on (feud: the answer fifth in the
//     walk and second in the expansion, not in the hybrid ten). So the
//     fused list is then reordered to hold, in every prefix of length d,
//     the first d/2 of each witness: the words (the direct and the
//     expanded ranking, each chunk at its better rank of the two) and
//     the walk ([guarantee]; feud recall@10 0.58 to 0.75, level with the
//     walk; circus, written and scored before it, recall@5 0.58 to 0.67;
//     saltmere recall@5 0.88 to 0.86, one question whose answer, fifth
//     by fusion, yields its place to the walk's second; no other corpus
//     moved).
//     Otherwise
//     the walk is the direct rankings' own chunks diffused along the
//     entities the question names; it knows only those entities, so it
//     weighs their confidence, and it adjusts the direct ranking by score
//     (CombSUM of max-normalised scores, Fox and Shaw 1994), not by rank:
//     with reciprocal ranks at k 60, a chunk ranked eighth by the words
//     (1/68) falls below one ranked fifteenth that the walk also ranks
//     high (1/75 + w/61) even at a small w, which let the walk's hubs (a
//     "previously on" recap names every character and place) push the
//     answering line out of the top ten on the keep corpus; by score, the
//     walk reorders chunks only where the words leave them close. In that
//     fusion the walk's chunks count their mass over their degree (the
//     entities each is linked to), the order in which a personalised
//     PageRank vector is swept (Andersen, Chung and Lang 2006): a walk's
//     mass grows with a node's degree whatever the question, and a recap
//     that names everyone otherwise tops the walk for any question naming
//     one of them ([perDegree]; saga corpus, hybrid recall@5 0.73 to 0.89,
//     now above BM25's 0.80).
//   - A chunk is scored with the exchange it belongs to: table talk
//     answers a player's declaration in the DM's next turn, and when that
//     turn is long the chunker sets it apart, so the answer sits in a
//     chunk after the one the question's words match best. In the fusion
//     by score, a chunk of one turn that matches the question itself
//     inherits half of what the chunk before its turn scores above the
//     ranking's floor ([exchangeBonus]; passage-level evidence, Callan
//     1994). It lifted hybrid recall@10 on the held-out corpora by 15
//     (keep), 17 (burg) and 4 (tide, hafen) points and left the others
//     level.
//   - One passage takes one place: a chunk whose text a better-ranked
//     result of its session holds whole, or which holds one whole (the
//     windows the chunker cuts for length overlap), is merged into that
//     result, which keeps its place and the larger text ([mergeRepeat]).
//
// `make eval` prints recall@5 and @10 per corpus, mode and question kind
// beside a plain BM25 baseline (see eval_test.go and corpora_test.go).
//
// With an NPC id, results are restricted to what that NPC heard: the
// chunks of the sessions it spoke in, within [postgres.HeardWindow] of its
// lines. Through a player's handle, the store itself restricts every
// search and every read of a chunk's text to what the player may read
// (no chunk holding a line of a split scene for any player; for a player
// bound to their user id, only chunks of lines they may read: the searches
// leave the others out inside their queries, so k results are the k best
// the player may read), and log entries to the lines the player may
// read; facts and entities are the graph as the player sees it. The walk
// of the retrieval graph may pass through a chunk the player may not read
// (it ranks, it never returns one).
//
// A campaign that has not been chunked yet is searched line by line in the
// session log instead (results of kind "entry").
package retrieve

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/mention"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/memory/ppr"
)

// Mode selects how a question is answered.
type Mode string

// Modes.
const (
	ModeVector   Mode = "vector"
	ModeFTS      Mode = "fts"
	ModeGraphRAG Mode = "graphrag"
	ModePPR      Mode = "ppr"
	ModeHybrid   Mode = "hybrid"
)

// Modes lists every mode.
func Modes() []Mode { return []Mode{ModeVector, ModeFTS, ModeGraphRAG, ModePPR, ModeHybrid} }

// ParseMode returns the mode named s ("" is hybrid).
func ParseMode(s string) (Mode, error) {
	if s == "" {
		return ModeHybrid, nil
	}
	for _, m := range Modes() {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: unknown retrieval mode %q (want vector, fts, graphrag, ppr or hybrid)", memory.ErrInvalid, s)
}

// Result kinds.
const (
	KindChunk  = "chunk"
	KindEntry  = "entry"
	KindFact   = "fact"
	KindEntity = "entity"
)

// Result is one answer.
type Result struct {
	Kind    string `json:"kind"`
	ID      string `json:"id"`
	Content string `json:"content"`
	// Score orders results of one kind, best first. An entity's is how
	// well the question names it (1 for a full name or alias).
	Score float64 `json:"score"`
	// SessionID is the session the chunk or entry comes from.
	SessionID string   `json:"session_id,omitempty"`
	EntityIDs []string `json:"entity_ids,omitempty"`
	// At is when the chunk or entry was said (the session's date and
	// time), for questions about when something happened; GameDate is the
	// session's date in the game's calendar, when the campaign gives one.
	At       time.Time `json:"at,omitzero"`
	GameDate string    `json:"game_date,omitempty"`
}

// Query is one question.
type Query struct {
	Text string
	Mode Mode
	// K is the number of answers (default 5): chunks, facts or log
	// entries. In hybrid mode, the entities the question names by full
	// name or alias follow them, beyond K.
	K int
	// NPCID restricts results to what this NPC heard.
	NPCID string
	// AsOf, a session id, restricts results to the chunks of that session
	// and the sessions before it, as the campaign stood then (facts, which
	// may have changed since, are left out).
	AsOf string
}

// Config tunes a Retriever. Zero fields take the defaults.
type Config struct {
	// PPR tunes the PageRank iteration.
	PPR ppr.Config
	// RRFK is the reciprocal rank fusion constant (default 60).
	RRFK float64
	// Candidates is how deep each ranking is read before fusion (default 30).
	Candidates int
	// Weights scale each ranking's share in hybrid fusion (default
	// [DefaultWeights]).
	Weights Weights
	// ChunkSeeds is how many of the best full-text and vector matches seed
	// the PageRank walk besides the named entities (default Candidates of
	// each), weighted by their ranking's confidence over their rank.
	ChunkSeeds int
	// ChunkSeedWeight is the total weight of those chunk seeds; each named
	// entity weighs at most 1 (default 0.3).
	ChunkSeedWeight float64
	// RefreshEvery is how often, at most, a query first picks up graph
	// changes (default 2 s; negative never refreshes).
	RefreshEvery time.Duration
	// Decomposer, when set, splits each hybrid question into simpler ones
	// that are searched beside it (default none: see [Decomposer]).
	Decomposer Decomposer
	// Logger receives debug lines (default slog.Default()).
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Weights are the shares of the rankings fused by hybrid retrieval, before
// each is gated by its confidence for the question.
type Weights struct {
	// Vector and Text weigh the vector and full-text rankings in the
	// walk's reset distribution.
	Vector, Text float64
	// Walk and Direct weigh, in the final fusion, the walk's ranking and
	// the direct ranking (full text, or vector when full text matched
	// nothing).
	Walk, Direct float64
	// Facts weighs the facts followed from the entities a question names
	// along the relationships it asks about, beside the chunks.
	Facts float64
}

// DefaultWeights weigh every ranking alike: no ranking is trusted more
// than another before the question is seen; each question then gates each
// ranking by its own confidence (see the package doc). Facts count half:
// a fact is a one-line answer beside chunks that carry the context.
var DefaultWeights = Weights{Vector: 1, Text: 1, Walk: 1, Direct: 1, Facts: 0.5}

// Retriever answers questions from one campaign. It is safe for concurrent
// use.
type Retriever struct {
	camp Campaign
	emb  embed.Embedder
	cfg  Config

	mu          sync.Mutex // guards the fields below and serialises refreshes
	graph       *ppr.Graph
	graphLoaded bool
	matcher     *mention.Matcher
	namesAt     postgres.ChangeCursor // the entity changes the name index has seen
	namesSeen   []string              // and, for a player, the scene entities they could see
	lastRefresh time.Time
	qemb        embed.Embedder // emb in the campaign's language
	qembAt      time.Time
}

// Campaign is the memory a Retriever reads: a handle from the door
// (memory/access), bound to the reader it answers for, or, for the
// writers' own tools, a campaign of the store.
type Campaign interface {
	ppr.Source
	// EntityChanges tells whether the names the retriever matches
	// questions against changed since it read them at a cursor.
	EntityChanges(ctx context.Context, since postgres.ChangeCursor) (bool, postgres.ChangeCursor, error)
	Graph() *postgres.Graph
	Sessions() *postgres.SessionLog
	Index() *postgres.SemanticIndex
}

// New returns a retriever over campaign c that embeds questions with e.
// The embedder's dimension must match the store's.
func New(c Campaign, e embed.Embedder, cfg Config) (*Retriever, error) {
	if err := embed.CheckDimensions(e, c.Index().Dimensions()); err != nil {
		return nil, err
	}
	if cfg.RRFK <= 0 {
		cfg.RRFK = 60
	}
	if cfg.Candidates <= 0 {
		cfg.Candidates = 30
	}
	if cfg.Weights == (Weights{}) {
		cfg.Weights = DefaultWeights
	}
	if cfg.ChunkSeeds <= 0 {
		cfg.ChunkSeeds = cfg.Candidates
	}
	if cfg.ChunkSeedWeight <= 0 {
		cfg.ChunkSeedWeight = 0.3
	}
	if cfg.RefreshEvery == 0 {
		cfg.RefreshEvery = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	g, err := ppr.New(c, cfg.PPR)
	if err != nil {
		return nil, err
	}
	return &Retriever{camp: c, emb: e, cfg: cfg, graph: g}, nil
}

// Graph returns the retriever's PageRank graph (loaded on first use).
func (r *Retriever) Graph() *ppr.Graph { return r.graph }

// prepare loads the graph and the entity names on first use and picks up
// changes at most every RefreshEvery.
func (r *Retriever) prepare(ctx context.Context) (*mention.Matcher, error) {
	return r.prepareFor(ctx, true)
}

// prepareFor is prepare; without withGraph it loads only the entity names
// (graphrag needs no PageRank graph) and leaves the graph as it is.
func (r *Retriever) prepareFor(ctx context.Context, withGraph bool) (*mention.Matcher, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	fresh := r.cfg.RefreshEvery < 0 || now.Sub(r.lastRefresh) < r.cfg.RefreshEvery
	if r.matcher != nil && (r.graphLoaded || !withGraph) && fresh {
		return r.matcher, nil
	}
	changed, names, err := r.camp.EntityChanges(ctx, r.namesAt)
	if err != nil {
		return nil, err
	}
	// A player matches the names of the entities they may see, and they
	// come to see one first heard in a split scene (or no longer see it)
	// by a trace as well as by a change of the entity (nil, and no query,
	// for a handle that sees every entity).
	seen, err := r.camp.Graph().SceneEntitiesSeen(ctx)
	if err != nil {
		return nil, err
	}
	changed = changed || !slices.Equal(seen, r.namesSeen)
	// The name index and the graph load one after the other, on one
	// connection: side by side they took a second connection, which costs
	// a short-lived process (`glyphoxa ask`) more than the overlap saves.
	// Only an entity's change changes the names: new facts, which arrive
	// all through a live session, do not reload them.
	if r.matcher == nil || changed {
		ents, err := r.camp.Graph().EntityNames(ctx)
		if err != nil {
			return nil, fmt.Errorf("loading entities for retrieval: %w", err)
		}
		r.matcher = mention.NewMatcher(ents)
	}
	r.namesAt, r.namesSeen = names, seen
	switch {
	case withGraph && !r.graphLoaded:
		err = r.graph.Load(ctx)
	case r.graphLoaded && !fresh:
		_, err = r.graph.Refresh(ctx)
	}
	if err != nil {
		return nil, err
	}
	if withGraph {
		r.graphLoaded = true
	}
	if r.lastRefresh.IsZero() || !fresh {
		r.lastRefresh = now
	}
	return r.matcher, nil
}

// Search answers q.
func (r *Retriever) Search(ctx context.Context, q Query) ([]Result, error) {
	// Checked before the question is embedded, not only where it reaches SQL.
	if err := memory.CheckQuery(q.Text); err != nil {
		return nil, err
	}
	dated, err := r.camp.Sessions().GameDates(ctx)
	if err != nil {
		return nil, err
	}
	rs, err := r.search(ctx, q, dated)
	if err != nil || len(dated) == 0 {
		return rs, err
	}
	game := make(map[string]string, len(dated))
	for _, s := range dated {
		game[s.ID] = s.GameDate
	}
	for i := range rs {
		rs[i].GameDate = game[rs[i].SessionID]
	}
	return rs, nil
}

// search is Search; dated are the sessions with a game date.
func (r *Retriever) search(ctx context.Context, q Query, dated []memory.Session) ([]Result, error) {
	if strings.TrimSpace(q.Text) == "" {
		return nil, fmt.Errorf("%w: empty question", memory.ErrInvalid)
	}
	if q.Mode == "" {
		q.Mode = ModeHybrid
	}
	if _, err := ParseMode(string(q.Mode)); err != nil {
		return nil, err
	}
	if q.K <= 0 {
		q.K = 5
	}
	var only []string
	if q.NPCID != "" {
		if _, err := r.camp.Graph().Entity(ctx, q.NPCID); err != nil {
			return nil, fmt.Errorf("retrieval for NPC %q: %w", q.NPCID, err)
		}
		ids, err := r.camp.Index().HeardChunks(ctx, q.NPCID)
		if err != nil {
			return nil, err
		}
		if len(ids) == 0 {
			return []Result{}, nil
		}
		only = ids
	}
	strict, err := r.timeScope(ctx, q, dated)
	if err != nil {
		return nil, err
	}
	if strict != nil {
		if only == nil {
			only = strict
		} else {
			only = intersectIDs(only, strict)
		}
		if len(only) == 0 {
			return []Result{}, nil
		}
	}
	fallback := q.NPCID == "" && strict == nil
	// Vector and full-text search need neither the graph nor the names.
	var matcher *mention.Matcher
	if q.Mode != ModeVector && q.Mode != ModeFTS {
		m, err := r.prepareFor(ctx, q.Mode != ModeGraphRAG)
		if err != nil {
			return nil, err
		}
		matcher = m
	}
	n := max(q.K, r.cfg.Candidates)
	if q.Mode == ModeHybrid {
		out, err := r.hybridParts(ctx, q.Text, q.K, n, matcher, only)
		if err != nil {
			return nil, err
		}
		if len(out) == 0 && fallback {
			return r.entryFallback(ctx, q)
		}
		return out, nil
	}
	var hits []postgres.ChunkHit
	switch q.Mode {
	case ModeVector:
		hits, err = r.vector(ctx, q.Text, q.K, only)
	case ModeFTS:
		hits, err = r.camp.Index().TextSearch(ctx, textQuery(q.Text), q.K, only)
	case ModeGraphRAG:
		hits, err = r.graphRAG(ctx, q.Text, q.K, matcher, only)
	case ModePPR:
		hits, err = r.ppr(ctx, q.Text, q.K, matcher, only)
	}
	if err != nil {
		return nil, err
	}
	if len(hits) == 0 && fallback {
		return r.entryFallback(ctx, q)
	}
	out := make([]Result, 0, len(hits))
	for _, h := range hits {
		out = append(out, chunkResult(h))
	}
	return out, nil
}

// embedder returns the question embedder in the campaign's language
// ([embed.ForLanguage]), as the chunks were embedded; the language is read
// again at most every RefreshEvery.
func (r *Retriever) embedder(ctx context.Context) (embed.Embedder, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.cfg.Now()
	if r.qemb != nil && (r.cfg.RefreshEvery < 0 || now.Sub(r.qembAt) < r.cfg.RefreshEvery) {
		return r.qemb, nil
	}
	lang, err := r.camp.Index().Language(ctx)
	if err != nil {
		return nil, err
	}
	r.qemb, r.qembAt = embed.ForLanguage(r.emb, lang), now
	return r.qemb, nil
}

func (r *Retriever) vector(ctx context.Context, text string, k int, only []string) ([]postgres.ChunkHit, error) {
	e, err := r.embedder(ctx)
	if err != nil {
		return nil, err
	}
	v, err := embed.One(ctx, e, text)
	if err != nil {
		return nil, fmt.Errorf("embedding the question: %w", err)
	}
	return r.camp.Index().VectorSearch(ctx, v, k, only)
}

func (r *Retriever) graphRAG(ctx context.Context, text string, k int, m *mention.Matcher, only []string) ([]postgres.ChunkHit, error) {
	var seeds []string
	for _, s := range m.Seeds(text) {
		seeds = append(seeds, s.EntityID)
	}
	if len(seeds) == 0 {
		return r.vector(ctx, text, k, only)
	}
	e, err := r.embedder(ctx)
	if err != nil {
		return nil, err
	}
	v, err := embed.One(ctx, e, text)
	if err != nil {
		return nil, fmt.Errorf("embedding the question: %w", err)
	}
	fetch := k
	if only != nil {
		fetch = k * 8
	}
	res, err := r.camp.Graph().QueryWithEmbedding(ctx, v, fetch, memory.GraphScope{EntityIDs: seeds, Depth: 1})
	if err != nil {
		return nil, err
	}
	allowed := set(only)
	var out []postgres.ChunkHit
	have := map[string]bool{}
	for _, x := range res {
		if allowed != nil && !allowed[x.Chunk.ID] {
			continue
		}
		out = append(out, postgres.ChunkHit{Chunk: x.Chunk, Score: x.Score})
		have[x.Chunk.ID] = true
		if len(out) == k {
			break
		}
	}
	if len(out) == k {
		return out, nil
	}
	// The scope links too few chunks (or none): the rest come from the
	// whole campaign, after the scope's own.
	more, err := r.camp.Index().VectorSearch(ctx, v, k, only)
	if err != nil {
		return nil, err
	}
	for _, h := range more {
		if len(out) == k {
			break
		}
		if !have[h.Chunk.ID] {
			out = append(out, h)
		}
	}
	return out, nil
}

// seeds weighs the entities a question names: by how well it names them
// times their specificity ([ppr.Graph.Specificity]): an entity tied to
// much of the campaign (a hub, or the speaker of every line) says little
// about which chunk is meant.
func (r *Retriever) seeds(named []mention.Match) []ppr.Seed {
	var out []ppr.Seed
	for _, s := range named {
		if w := s.Score * r.graph.Specificity(s.EntityID); w > 0 {
			out = append(out, ppr.Seed{EntityID: s.EntityID, Weight: w})
		}
	}
	return out
}

// entityConfidence is how much the entities a question names tell about
// its answer: the best of their seed weights, in [0, 1].
func entityConfidence(seeds []ppr.Seed) float64 {
	var c float64
	for _, s := range seeds {
		c = max(c, s.Weight)
	}
	return min(c, 1)
}

// pprRank ranks chunks by PageRank from the question's entities and from
// the chunks that match its words best (full text and vector), as HippoRAG
// 2 does: passages are nodes beside entities, and the reset distribution
// holds both. named are the entities the question names
// ([mention.Matcher.Seeds]); vec and fts are the question's nearest and
// best full-text chunks, best first; the first ChunkSeeds of each are
// used. It also returns the facts followed and the confidence of the
// entity seeds ([entityConfidence]).
func (r *Retriever) pprRank(ctx context.Context, text string, k int, named []mention.Match, only []string,
	vec, fts []postgres.ChunkHit) ([]ppr.Result, []weightedFact, float64, error) {
	own := r.seeds(named)
	conf := entityConfidence(own)
	seeds, facts, err := r.expandSeeds(ctx, text, own)
	if err != nil {
		return nil, nil, 0, err
	}
	confs := [2]float64{r.cfg.Weights.Vector * scoreConfidence(vec, r.cfg.Candidates),
		r.cfg.Weights.Text * scoreConfidence(fts, r.cfg.Candidates)}
	vec, fts = vec[:min(len(vec), r.cfg.ChunkSeeds)], fts[:min(len(fts), r.cfg.ChunkSeeds)]
	// The best-matching chunks anchor the walk in the question's wording:
	// each ranking gives its chunks weight by rank, and the chunks together
	// weigh ChunkSeedWeight, against the entity seeds' own weights (each at
	// most 1: how well and how specifically the question names it). A
	// question that names nothing specific walks from its chunks alone.
	chunkW := map[string]float64{}
	var chunkTotal float64
	for j, list := range [][]postgres.ChunkHit{vec, fts} {
		c := confs[j]
		for i, h := range list {
			w := c / float64(i+1)
			chunkW[h.Chunk.ID] += w
			chunkTotal += w
		}
	}
	scale := 0.0
	if chunkTotal > 0 {
		scale = r.cfg.ChunkSeedWeight / chunkTotal
	}
	chunkSeeds := make([]ppr.Seed, 0, len(chunkW))
	for id, w := range chunkW {
		chunkSeeds = append(chunkSeeds, ppr.Seed{EntityID: id, Weight: w * scale})
	}
	sort.Slice(chunkSeeds, func(i, j int) bool { return chunkSeeds[i].EntityID < chunkSeeds[j].EntityID })
	fetch := k
	if only != nil {
		fetch = 0
	}
	rk := r.graph.Rank(seeds, chunkSeeds, fetch)
	allowed := set(only)
	var out []ppr.Result
	for _, c := range rk.Chunks {
		if allowed == nil || allowed[c.ID] {
			out = append(out, c)
		}
		if len(out) == k {
			break
		}
	}
	return out, facts, conf, nil
}

func (r *Retriever) ppr(ctx context.Context, text string, k int, m *mention.Matcher, only []string) ([]postgres.ChunkHit, error) {
	vec, err := r.vector(ctx, text, max(r.cfg.ChunkSeeds, r.cfg.Candidates), only)
	if err != nil {
		return nil, err
	}
	fts, err := r.camp.Index().TextSearch(ctx, textQuery(text), max(r.cfg.ChunkSeeds, r.cfg.Candidates), only)
	if err != nil {
		return nil, err
	}
	ranked, _, _, err := r.pprRank(ctx, text, k, m.Seeds(text), only, vec, fts)
	if err != nil {
		return nil, err
	}
	return r.load(ctx, ranked)
}

// load reads the ranked chunks' content, dropping chunks deleted since the
// graph last saw them.
func (r *Retriever) load(ctx context.Context, ranked []ppr.Result) ([]postgres.ChunkHit, error) {
	ids := make([]string, len(ranked))
	score := map[string]float64{}
	for i, x := range ranked {
		ids[i] = x.ID
		score[x.ID] = x.Score
	}
	cs, err := r.camp.Index().ChunksByID(ctx, ids)
	if err != nil {
		return nil, err
	}
	out := make([]postgres.ChunkHit, len(cs))
	for i, c := range cs {
		out[i] = postgres.ChunkHit{Chunk: c, Score: score[c.ID]}
	}
	return out, nil
}

// hybrid fuses the PageRank ranking, which already holds the evidence of
// every ranker, the full-text ranking (vector when full text matched
// nothing), and the facts the question's relationship words led to (see
// the package doc): by reciprocal rank when the walk followed such a
// relationship, each item scoring the sum over the witnesses it appears in
// of weight/(RRFK + rank) (the direct and the expanded ranking one
// witness, the words, at a chunk's better rank of the two), the facts'
// weight Weights.Facts times the
// confidence of the named entities; otherwise by max-normalised score,
// the walk's weight Weights.Walk times that confidence. The entities
// the question names by full name or alias follow the k answers, so that
// they never take an answer's place. Facts and entities are left out of
// NPC-scoped retrieval (the NPC's own knowledge of facts is its hot
// context).
func (r *Retriever) hybrid(ctx context.Context, text string, k, n int, m *mention.Matcher, only []string) ([]Result, error) {
	vec, err := r.vector(ctx, text, n, only)
	if err != nil {
		return nil, err
	}
	fts, err := r.camp.Index().TextSearch(ctx, textQuery(text), n, only)
	if err != nil {
		return nil, err
	}
	named := m.Seeds(text)
	pr, facts, entConf, err := r.pprRank(ctx, text, n, named, only, vec, fts)
	if err != nil {
		return nil, err
	}
	fused := map[string]float64{}
	chunks := map[string]memory.Chunk{}
	for _, list := range [][]postgres.ChunkHit{vec, fts} {
		for _, h := range list {
			chunks[h.Chunk.ID] = h.Chunk
		}
	}
	// Full text is the direct ranking; the vector ranking takes its place
	// only when full text matched nothing (see the package doc: their
	// confidences are on different scales).
	direct, conf := fts, scoreConfidence(fts, n)
	if c := scoreConfidence(vec, n); conf == 0 && c > 0 {
		direct, conf = vec, c
	}
	// independent: the walk followed a relationship the question asks
	// about, evidence that no ranking by words holds; the two rankings are
	// then fused by rank. Otherwise the walk is the direct rankings' own
	// chunks diffused along the entities the question names, and it
	// adjusts the direct ranking by score, weighted by how specific those
	// entities are (see the package doc).
	independent := len(facts) > 0 || conf == 0
	if !independent {
		// Here the walk only spreads the words' own chunks along the
		// named entities: what it adds is how much more of that mass a
		// chunk holds than its links alone bring it ([perDegree]).
		pr = perDegree(pr, func(id string) int { return len(r.graph.ChunkEntities(id)) })
	}
	r.cfg.Logger.Debug("hybrid fusion", "text", conf, "vector", scoreConfidence(vec, n), "entities", entConf,
		"independent", independent)
	// parts are the rankings fused by reciprocal rank, each best first
	// (see [guarantee]).
	var parts [][]string
	// words are, when the rankings are fused by rank, the rankings by the
	// question's words: the direct and the expanded one.
	var words [][]string
	if conf > 0 {
		if independent {
			parts = append(parts, chunkIDs(direct))
			words = append(words, chunkIDs(direct))
		}
		for _, h := range direct {
			if !independent {
				fused[h.Chunk.ID] += r.cfg.Weights.Direct * h.Score / direct[0].Score
			}
		}
	}
	if err := r.addExchanges(ctx, fused, direct, n, independent); err != nil {
		return nil, err
	}
	if conf > 0 && only == nil {
		exp, err := r.expandedText(ctx, text, named, facts, n)
		if err != nil {
			return nil, err
		}
		if independent && len(exp) > 0 {
			// The expansion is the question's own words with a name
			// added: with the direct ranking it is one witness, the
			// words, each chunk at its better rank of the two.
			if len(parts) > 0 {
				parts[0] = byBetterRank(parts[0], chunkIDs(exp))
			} else {
				parts = append(parts, chunkIDs(exp))
			}
		}
		for _, h := range exp {
			chunks[h.Chunk.ID] = h.Chunk
		}
		if independent {
			words = append(words, chunkIDs(exp))
		}
	}
	// The words are one witness in the fusion by rank, as in [guarantee]:
	// each chunk scores once, at its better rank of the two rankings
	// (CombMAX of the reciprocal ranks), not their sum. The expansion is
	// the same words with one name added and ranks mostly the same
	// chunks; summed, the evidence of the words counted twice against the
	// walk's once (see the package doc).
	for id, rk := range betterRanks(words...) {
		fused[id] += r.cfg.Weights.Direct / (r.cfg.RRFK + float64(rk))
	}
	walk := r.cfg.Weights.Walk
	if !independent {
		walk *= entConf
	}
	var missing []ppr.Result
	if independent && len(pr) > 0 {
		walkIDs := make([]string, len(pr))
		for i, x := range pr {
			walkIDs[i] = x.ID
		}
		parts = append(parts, walkIDs)
	}
	for i, x := range pr {
		switch {
		case independent:
			fused[x.ID] += walk / (r.cfg.RRFK + float64(i+1))
		case pr[0].Score > 0:
			fused[x.ID] += walk * x.Score / pr[0].Score
		}
		if _, ok := chunks[x.ID]; !ok {
			missing = append(missing, x)
		}
	}
	factByKey := map[string]memory.Relationship{}
	if only == nil {
		gate := r.cfg.Weights.Facts * entConf
		for i, f := range facts {
			key := "fact:" + strconv.FormatInt(f.ID, 10)
			if _, dup := factByKey[key]; dup {
				continue
			}
			factByKey[key] = f.Relationship
			fused[key] += f.weight * gate / (r.cfg.RRFK + float64(i+1))
		}
	}
	ids := make([]string, 0, len(fused))
	for id := range fused {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		if fused[ids[i]] != fused[ids[j]] {
			return fused[ids[i]] > fused[ids[j]]
		}
		return ids[i] < ids[j]
	})
	if independent {
		ids = guarantee(ids, parts)
	}
	// Load only the PageRank-only chunks that can make the cut: the first
	// 2k, since chunks that repeat a better one are merged into it below.
	top := map[string]bool{}
	for _, id := range ids[:min(2*k, len(ids))] {
		top[id] = true
	}
	var need []ppr.Result
	for _, x := range missing {
		if top[x.ID] {
			need = append(need, x)
		}
	}
	loaded, err := r.load(ctx, need)
	if err != nil {
		return nil, err
	}
	for _, h := range loaded {
		chunks[h.Chunk.ID] = h.Chunk
	}
	var names map[string]string
	out := make([]Result, 0, k)
	for _, id := range ids {
		if f, ok := factByKey[id]; ok {
			if names == nil {
				if names, err = r.names(ctx, facts); err != nil {
					return nil, err
				}
			}
			out = append(out, Result{Kind: KindFact, ID: strconv.FormatInt(f.ID, 10),
				Content: names[f.SourceID] + " " + f.Type + " " + names[f.TargetID], Score: fused[id],
				SessionID: f.Provenance.SessionID, EntityIDs: []string{f.SourceID, f.TargetID}})
		} else if c, ok := chunks[id]; ok { // else: deleted since the graph saw it
			if !mergeRepeat(out, c) {
				out = append(out, chunkResult(postgres.ChunkHit{Chunk: c, Score: fused[id]}))
			}
		}
		if len(out) == k {
			break
		}
	}
	if only != nil || len(out) == 0 {
		return out, nil
	}
	ents, err := r.namedEntities(ctx, named)
	if err != nil {
		return nil, err
	}
	return append(out, ents...), nil
}

// expandedText is the full-text ranking of the question with the names of
// the entities its relationship words led to added (query expansion by
// the followed relation's far end): "What does Brenna's father say
// happened to the tithe?" is answered by a line of Holt's, which names
// neither Brenna nor the relationship, and in which the speaker's name is
// the one word the question shares once the relation is resolved. Every
// fact followed from a named entity counts, also when the question names
// no relationship type and every relationship of the entity was followed
// ("Hadrik's friend", [Retriever.expandSeeds]): each far end is one
// candidate resolution, and the question's own words still decide among
// their lines (counting only the facts whose type the question names left
// the names corpus at recall@5 0.87, all of them 0.97; saltmere 0.85 to
// 0.88; no corpus lower). It returns nil when no fact was followed.
func (r *Retriever) expandedText(ctx context.Context, text string, named []mention.Match, facts []weightedFact,
	n int) ([]postgres.ChunkHit, error) {
	own := map[string]bool{}
	for _, m := range named {
		own[m.EntityID] = true
	}
	var asked []weightedFact
	for _, f := range facts {
		if own[f.SourceID] || own[f.TargetID] {
			asked = append(asked, f)
		}
	}
	if len(asked) == 0 {
		return nil, nil
	}
	names, err := r.names(ctx, asked)
	if err != nil {
		return nil, err
	}
	var far []string
	seen := map[string]bool{}
	for _, f := range asked {
		other := f.TargetID
		if own[f.TargetID] {
			other = f.SourceID
		}
		if own[other] || seen[other] {
			continue
		}
		seen[other] = true
		far = append(far, names[other])
	}
	if len(far) == 0 {
		return nil, nil
	}
	sort.Strings(far)
	return r.camp.Index().TextSearch(ctx, textQuery(text+" "+strings.Join(far, " ")), n, nil)
}

// perDegree re-ranks the walk's chunks by their PageRank mass over their
// degree (the number of entities each is linked to, at least 1), the
// order Andersen, Chung and Lang (2006, "Local graph partitioning using
// PageRank vectors") sweep a personalised PageRank vector in. On an
// undirected graph the walk's mass at a node grows with its degree
// whatever the question: the stationary distribution is proportional to
// it. Mass over degree is how much more of the walk a chunk holds than
// its links alone would bring it, which is the evidence the walk has
// about this question. Unnormalised, the chunks that name everyone (a
// "previously on" recap, a ritual narration that names every character
// and place) top the walk for any question that names one of them, and
// the fusion carried them into the lists of questions they do not answer
// (real table transcripts: three long DM monologues in 15–21% of all
// hybrid top-10 lists). Chunks linked to no entity (found by their words
// alone) count as degree 1. degree returns a chunk's number of entities.
//
// It applies where the walk only spreads the direct rankings' chunks
// along the entities the question names (the fusion by score). When the
// walk followed a relationship the question asks about, the chunks that
// tie the named entity to the one it leads to are the evidence, and they
// are linked to both: there the mass is taken as it is (dividing it there
// cost the names corpus recall@5 0.87 to 0.77).
func perDegree(pr []ppr.Result, degree func(chunkID string) int) []ppr.Result {
	out := make([]ppr.Result, len(pr))
	for i, x := range pr {
		x.Score /= float64(max(1, degree(x.ID)))
		out[i] = x
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// mergeRepeat merges chunk c into the result of out that holds the same
// lines, and reports whether there was one. Windows cut for length
// overlap by a few lines, and before a long turn they shrink to the lines
// left ("Tess: …\nBram: I hide the dagger." then "Bram: I hide the
// dagger."), so one line can fill three places of a short list. A chunk
// whose text another result holds whole, or which holds another result's
// text whole, is the same passage: it keeps the better rank (the earlier
// result's) and the larger text, so that nothing either says is lost and
// the place is free for another passage. It cannot lower recall: every
// line the list held at a depth it still holds there (recall@5 / @10 on
// the held-out corpora: keep .71/.84 to .73/.86, burg .65/.82 to .69/.84,
// tide .60/.67 to .61/.68, hafen .65/.73 to .66/.74; the others level).
func mergeRepeat(out []Result, c memory.Chunk) bool {
	for i := range out {
		x := &out[i]
		if x.Kind != KindChunk || x.SessionID != c.SessionID {
			continue
		}
		if strings.Contains(x.Content, c.Content) {
			return true
		}
		if strings.Contains(c.Content, x.Content) {
			score := x.Score
			*x = chunkResult(postgres.ChunkHit{Chunk: c, Score: score})
			return true
		}
	}
	return false
}

// exchangeShare is the share of its predecessor's evidence that a reply
// inherits (see [Retriever.addExchanges]).
const exchangeShare = 0.5

// addExchanges adds to fused what each chunk of the direct ranking
// inherits from the lines its turn answers ([exchangeBonus]), in the
// max-normalised scale of the direct ranking. It adds nothing when the
// rankings are fused by reciprocal rank (independent): ranks carry no
// score to tell a predecessor that stands out from one that does not, and
// inheriting by rank moved chunks on no evidence (the heist corpus: two-hop
// recall@5 1.00 to 0.75).
func (r *Retriever) addExchanges(ctx context.Context, fused map[string]float64, direct []postgres.ChunkHit,
	n int, independent bool) error {
	if independent || len(direct) < 2 || direct[0].Score <= 0 {
		return nil
	}
	ids := make([]string, len(direct))
	for i, h := range direct {
		ids[i] = h.Chunk.ID
	}
	// exchangeBonus uses a predecessor only when it is in the ranking.
	prev, err := r.camp.Index().PrecedingAmong(ctx, ids)
	if err != nil {
		return err
	}
	for id, b := range exchangeBonus(direct, prev, n) {
		fused[id] += r.cfg.Weights.Direct * b
	}
	return nil
}

// exchangeBonus returns what the chunks of the direct ranking (best first,
// read to depth n) inherit from the chunk before their turn (prev, the
// predecessors among direct's own chunks, from
// [postgres.SemanticIndex.PrecedingAmong]), as a share of the best score.
//
// Table talk answers in exchanges: a player declares ("I polish the amber
// goblet"), the DM resolves, and a question asks in the declaration's
// words ("When did Lio polish the amber goblet?"). When the resolution is
// a long turn, the chunker sets it apart in chunks of its own, and the
// answer lands in a chunk after the one that matches best, sharing only
// some of its words (keep corpus, questions in question form: hybrid
// recall@10 0.79 before this rule, 0.97 with it). Passage retrieval scores a passage by
// its neighbours' evidence as well as its own (Callan 1994, "Passage-level
// evidence in document retrieval"); here the unit is the exchange. A chunk
// inherits when all of these hold:
//
//   - it matches the question itself (it is in the direct ranking), and
//     so does the chunk before its turn: a run of chatter after a good
//     match gains nothing;
//   - it holds one turn, or a part of one (a single line): a chunk of
//     several lines carries its own context (the heist corpus, lines of
//     many speakers, lost multi-hop recall@10 0.94 to 0.81 when those
//     inherited too);
//   - its turn is a reply: its first speaker is not the one who closes
//     the chunk before it (the parts of one long turn do not feed each
//     other).
//
// It inherits exchangeShare of the part of its predecessor's score that
// stands above the ranking's floor (the score at depth n, 0 when fewer
// matched), over the best score: the predecessor's words are about the
// same exchange, not the chunk's own, and only the evidence that tells the
// predecessor apart from any candidate is worth passing on. A flat ranking
// (a paraphrase that shares only a name with its answer) passes on almost
// nothing; a standout declaration passes on much.
func exchangeBonus(direct []postgres.ChunkHit, prev map[string]string, n int) map[string]float64 {
	out := map[string]float64{}
	if len(direct) == 0 || direct[0].Score <= 0 {
		return out
	}
	floor := 0.0
	if n > 0 && len(direct) >= n {
		floor = direct[n-1].Score
	}
	byID := make(map[string]postgres.ChunkHit, len(direct))
	for _, h := range direct {
		byID[h.Chunk.ID] = h
	}
	for _, h := range direct {
		p, ok := byID[prev[h.Chunk.ID]]
		if !ok || strings.Contains(h.Chunk.Content, "\n") ||
			firstSpeaker(h.Chunk.Content) == lastSpeaker(p.Chunk.Content) {
			continue
		}
		if b := exchangeShare * (p.Score - floor) / direct[0].Score; b > 0 {
			out[h.Chunk.ID] = b
		}
	}
	return out
}

// firstSpeaker and lastSpeaker return the speaker labels of a chunk's
// first and last lines: the chunker writes each line as "Speaker: text",
// each part of a long turn with its speaker's label.
func firstSpeaker(content string) string {
	line, _, _ := strings.Cut(content, "\n")
	return speakerLabel(line)
}

func lastSpeaker(content string) string {
	return speakerLabel(content[strings.LastIndexByte(content, '\n')+1:])
}

func speakerLabel(line string) string {
	label, _, ok := strings.Cut(line, ": ")
	if !ok {
		return ""
	}
	return label
}

// scoreConfidence is how sure a ranking by score is of its top: how far
// its best score stands above the score at depth n, in [0, 1] (1 when
// fewer than n chunks matched at all, 0 when the best is no better than
// the n-th). A lexical ranking whose best chunk shares the question's rare
// words stands out; a ranking of near-equal similarities does not.
func scoreConfidence(hits []postgres.ChunkHit, n int) float64 {
	if len(hits) == 0 || hits[0].Score <= 0 {
		return 0
	}
	if len(hits) < n {
		return 1
	}
	// A cosine similarity (vector hits) can be negative at depth n; the
	// ratio then exceeds 1, and the vector ranking's chunk seeds outweighed
	// the full-text ones in the walk on no evidence: clamped to the range.
	return min(1, max(0, 1-hits[n-1].Score/hits[0].Score))
}

// hybridParts is hybrid retrieval of the question and, with a Decomposer,
// of its parts: each is searched alone and the rankings are fused by
// reciprocal rank, the question's own and its parts' alike. A failed
// decomposition leaves the question alone (and is logged).
func (r *Retriever) hybridParts(ctx context.Context, text string, k, n int, m *mention.Matcher, only []string) ([]Result, error) {
	var parts []string
	if r.cfg.Decomposer != nil {
		ps, err := r.cfg.Decomposer.Decompose(ctx, text)
		if err != nil {
			r.cfg.Logger.Warn("question decomposition failed; searching the question alone", "err", err)
		}
		for _, p := range ps {
			if !strings.EqualFold(strings.TrimSpace(p), strings.TrimSpace(text)) && strings.TrimSpace(p) != "" {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		return r.hybrid(ctx, text, k, n, m, only)
	}
	own, err := r.hybrid(ctx, text, n, n, m, only)
	if err != nil {
		return nil, err
	}
	lists := [][]Result{own}
	for _, p := range parts {
		rs, err := r.hybrid(ctx, p, n, n, m, only)
		if err != nil {
			return nil, err
		}
		lists = append(lists, rs)
	}
	fused := map[string]float64{}
	byKey := map[string]Result{}
	var order []string
	var ents []Result
	for li, list := range lists {
		rank := 0
		for _, x := range list {
			if x.Kind == KindEntity {
				if li == 0 {
					ents = append(ents, x)
				}
				continue
			}
			rank++
			key := x.Kind + ":" + x.ID
			if _, ok := byKey[key]; !ok {
				byKey[key] = x
				order = append(order, key)
			}
			fused[key] += 1 / (r.cfg.RRFK + float64(rank))
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return fused[order[i]] > fused[order[j]] })
	out := make([]Result, 0, k+len(ents))
	for _, key := range order[:min(k, len(order))] {
		x := byKey[key]
		x.Score = fused[key]
		out = append(out, x)
	}
	return append(out, ents...), nil
}

// names returns the display names of the facts' entities.
func (r *Retriever) names(ctx context.Context, facts []weightedFact) (map[string]string, error) {
	var ids []string
	for _, f := range facts {
		ids = append(ids, f.SourceID, f.TargetID)
	}
	ents, err := r.camp.Graph().FindEntities(ctx, memory.EntityFilter{IDs: ids, IncludeRetired: true})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		out[id] = id
	}
	for _, e := range ents {
		out[e.ID] = e.Name
	}
	return out, nil
}

func chunkResult(h postgres.ChunkHit) Result {
	return Result{Kind: KindChunk, ID: h.Chunk.ID, Content: h.Chunk.Content, Score: h.Score,
		SessionID: h.Chunk.SessionID, EntityIDs: h.Chunk.EntityIDs, At: h.Chunk.StartAt}
}

// entryFallback searches the session log line by line, for campaigns
// without chunks.
func (r *Retriever) entryFallback(ctx context.Context, q Query) ([]Result, error) {
	// Any of the question's words may match, stemmed in the campaign's
	// language by the session log's search.
	words := textQuery(q.Text)
	if strings.TrimSpace(words) == "" {
		return []Result{}, nil
	}
	hits, err := r.camp.Sessions().Search(ctx, words, memory.SearchOpts{Limit: q.K, Any: true})
	if err != nil {
		return nil, err
	}
	out := make([]Result, 0, len(hits))
	for _, h := range hits {
		content := h.Entry.Text
		if h.Entry.SpeakerName != "" {
			content = h.Entry.SpeakerName + ": " + content
		}
		out = append(out, Result{Kind: KindEntry, ID: strconv.FormatInt(h.Entry.ID, 10), Content: content,
			Score: h.Rank, SessionID: h.Entry.SessionID, At: h.Entry.At})
	}
	return out, nil
}

// textQuery keeps the question's meaningful words for full-text search:
// the database's own stop words are fewer than ours ("say", "tell").
func textQuery(text string) string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		f = strings.Trim(f, "'")
		if base, _, ok := strings.Cut(f, "'"); ok {
			f = base
		}
		if f != "" && !embed.IsStopWord(f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return text
	}
	return strings.Join(out, " ")
}

func set(ids []string) map[string]bool {
	if ids == nil {
		return nil
	}
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// chunkIDs returns the hits' chunk ids in order.
func chunkIDs(hits []postgres.ChunkHit) []string {
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.Chunk.ID
	}
	return out
}

// guarantee reorders ids, the fused ranking best first, so that every
// prefix of it of length d holds the first floor(d/P) of each of the P
// parts (the rankings fused, each best first): a fusion that is never
// worse than any of its parts taken at a P-th of the depth.
//
// Each item has a deadline, P times its best rank in any part (an item
// ranked r-th by a part must be among the first P·r); at each position
// the fused ranking's next item is taken, unless the items whose deadline
// falls within the next positions fill them all, when the one due first
// is taken instead (earliest deadline first). No more than P·floor(D/P)
// items are due by any depth D, so every deadline is met; where the
// parts' best items already rank high by fusion, nothing moves.
//
// Why: hybrid retrieval should never be worse than its best part (issue
// 27), and reciprocal rank fusion promises nothing of the kind: a chunk
// that one witness ranks second and the others do not rank at all can
// fall below any number of chunks the others agree on. Interleaving the
// parts in turn (round robin) keeps that promise but discards their
// agreement; this keeps the fused order wherever the promise holds
// anyway and moves only what it must. It is used where the parts are
// independent witnesses (the walk followed a relationship the question
// asks about); where the walk only spreads the words' own chunks along
// the named entities, it is no witness of its own and its head is the
// hubs the degree rule keeps out ([perDegree]).
func guarantee(ids []string, parts [][]string) []string {
	p := len(parts)
	if p < 2 {
		return ids
	}
	deadline := map[string]int{}
	for _, part := range parts {
		for r, id := range part {
			d := p * (r + 1)
			if d > len(ids) {
				break
			}
			if old, ok := deadline[id]; !ok || d < old {
				deadline[id] = d
			}
		}
	}
	pos := make(map[string]int, len(ids))
	for i, id := range ids {
		pos[id] = i
	}
	var due []string // the items with a deadline, by deadline, then fused order
	for id := range deadline {
		if _, ok := pos[id]; ok {
			due = append(due, id)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if deadline[due[i]] != deadline[due[j]] {
			return deadline[due[i]] < deadline[due[j]]
		}
		return pos[due[i]] < pos[due[j]]
	})
	out := make([]string, 0, len(ids))
	placed := make(map[string]bool, len(ids))
	next := 0
	for d := 1; d <= len(ids); d++ { // d: the position filled now
		// The one due first is placed now when, for some depth D, the
		// unplaced items due by D fill all of positions d..D.
		take, first, pending := "", "", 0
		for _, id := range due {
			if placed[id] {
				continue
			}
			if first == "" {
				first = id
			}
			pending++
			if pending >= deadline[id]-d+1 {
				take = first
				break
			}
		}
		if take == "" {
			for placed[ids[next]] {
				next++
			}
			take = ids[next]
		}
		placed[take] = true
		out = append(out, take)
	}
	return out
}

// betterRanks returns each item's best rank, from 1, in any of the
// rankings of one witness (each best first).
func betterRanks(lists ...[]string) map[string]int {
	out := map[string]int{}
	for _, list := range lists {
		for i, id := range list {
			if r, ok := out[id]; !ok || i+1 < r {
				out[id] = i + 1
			}
		}
	}
	return out
}

// byBetterRank merges two rankings of one witness: each item at its
// better rank of the two, ties in a's favour.
func byBetterRank(a, b []string) []string {
	rank := map[string]int{}
	var out []string
	for _, list := range [][]string{a, b} {
		for i, id := range list {
			if r, ok := rank[id]; !ok {
				rank[id] = i
				out = append(out, id)
			} else if i < r {
				rank[id] = i
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return rank[out[i]] < rank[out[j]] })
	return out
}
