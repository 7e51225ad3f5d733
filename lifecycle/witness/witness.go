// Package witness keeps, for each NPC of a running session, the memory of
// the session as that NPC witnessed it.
//
// # What an NPC witnessed
//
// A [Log] holds the session's lines in the memory of the process (so an NPC
// keeps its memory while PostgreSQL is down). Each line notes the NPCs in
// the scene when it was said ([Log.Heard]: the DM's /npc scene at the time
// of the line; with no scene set, every NPC of the cast then) and the NPC it
// was said to ([Log.SaidTo]: addressed by name or as a follow-up). An NPC
// witnessed a line when it was said to it, when it was in the scene, or when
// it said the line itself; lines from before it arrived or while it was away
// are not its memory.
//
// # Digest
//
// Each NPC has a digest of the session as it witnessed it ([Log.Digest]),
// refreshed on a cadence: once DigestLines witnessed lines or DigestEvery
// have passed since the last refresh. Without a summariser the digest is
// extractive: the lines said to the NPC (newest kept), the names, places
// and things it heard, and the promises and plans it heard. With
// Config.Summarizer (an LLM) the digest is the model's summary of the
// witnessed lines, written in the background; until the first one is
// ready, and whenever it fails, the extractive digest stands in.
//
// # Recall
//
// [Log.Recall] returns the witnessed lines of others (said to the NPC
// first) that bear on a question, by meaning (cosine of Config.Embedder's
// vectors), by entity (campaign names and speakers named in both), and by
// shared word stems; never the NPC's own lines.
//
// # Forgetting
//
// [Log.Forget] removes a speaker's lines; every digest is rebuilt without
// them at once and summaries written from them are discarded, so their
// words reach no later digest, recall or context.
package witness

import (
	"context"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/embed"
)

// Defaults of a Config.
const (
	DefaultDigestEvery    = 3 * time.Minute
	DefaultDigestLines    = 12
	DefaultDigestTokens   = 250
	DefaultQueryTimeout   = 300 * time.Millisecond
	DefaultSummaryTimeout = 60 * time.Second
)

// Config configures a Log. Every field is optional.
type Config struct {
	// Embedder embeds lines and questions for recall by meaning (nil:
	// recall by entity and word stems only).
	Embedder embed.Embedder
	// QueryTimeout bounds the embedding done by one Recall (default
	// 300 ms); when it runs out, recall goes on without meaning.
	QueryTimeout time.Duration
	// Names returns the campaign names (NPCs, places, things) mentioned
	// in a text (the table's cast).
	Names func(text string) []string
	// Summarizer, when set, writes the digests (an LLM); without one they
	// are extractive.
	Summarizer contextmgr.Summarizer
	// SummaryTimeout bounds one summary (default 60 s).
	SummaryTimeout time.Duration
	// DigestEvery and DigestLines are the digest's cadence: it is
	// refreshed once either has passed since the last refresh (defaults
	// 3 min and 12 lines).
	DigestEvery time.Duration
	DigestLines int
	// DigestTokens bounds a digest (default 250 tokens, four characters
	// each).
	DigestTokens int
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives summary failures (default slog.Default()).
	Logger *slog.Logger
}

// line is one recorded line and what the log derived from it.
type line struct {
	e       memory.TranscriptEntry
	present []string // NPCs in the scene when it was said, sorted
	to      string   // NPC it was said to
	stems   []string // content word stems, sorted, unique
	shapes  []string // focus tokens of its shape (see whFocus)
	names   []string // campaign names mentioned, lower case
	proper  []string // other capitalised words (names the campaign lacks)
	who     string   // the speaker's first name, lower case
	promise bool     // a promise or plan (isPromise)
	vec     []float32
	norm    float64 // of vec
}

func (l *line) witnessedBy(npcID string) bool {
	if l.e.NPCID == npcID || l.to == npcID {
		return true
	}
	_, ok := slices.BinarySearch(l.present, npcID)
	return ok
}

// npcState is an NPC's digest and its cadence.
type npcState struct {
	extract  string    // extractive digest
	summary  string    // the summariser's, when it wrote one
	since    int       // witnessed lines since the last refresh
	at       time.Time // of the last refresh
	running  bool      // a summary is under way
	gen      uint64    // Log.gen when the summary started
	hasLines bool
}

// Log is the witness log of one session. It is safe for concurrent use.
type Log struct {
	cfg Config
	log *slog.Logger

	mu    sync.Mutex
	lines []*line
	byKey map[string]*line
	npcs  map[string]*npcState
	gen   uint64 // bumped by Forget: summaries from older lines are void

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns an empty log. Close stops its background summaries.
func New(cfg Config) *Log {
	if cfg.QueryTimeout <= 0 {
		cfg.QueryTimeout = DefaultQueryTimeout
	}
	if cfg.SummaryTimeout <= 0 {
		cfg.SummaryTimeout = DefaultSummaryTimeout
	}
	if cfg.DigestEvery <= 0 {
		cfg.DigestEvery = DefaultDigestEvery
	}
	if cfg.DigestLines <= 0 {
		cfg.DigestLines = DefaultDigestLines
	}
	if cfg.DigestTokens <= 0 {
		cfg.DigestTokens = DefaultDigestTokens
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Log{cfg: cfg, log: cfg.Logger, byKey: map[string]*line{}, npcs: map[string]*npcState{}}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// Close stops the summaries under way and waits for them. The log stays
// readable.
func (l *Log) Close() {
	l.cancel()
	l.wg.Wait()
}

// Heard records a line of the session: a player's (e.NPCID empty) or an
// NPC's own (e.NPCID set). present are the NPCs in the scene when it was
// said; pass every NPC of the cast when no scene is set. A line whose
// IdempotencyKey is already recorded is ignored.
func (l *Log) Heard(e memory.TranscriptEntry, present []string) {
	ln := &line{e: e, present: slices.Sorted(slices.Values(present))}
	ln.present = slices.Compact(ln.present)
	ln.stems = stems(e.Text)
	if l.cfg.Names != nil {
		for _, n := range l.cfg.Names(e.Text) {
			ln.names = appendUnique(ln.names, strings.ToLower(n))
		}
	}
	ln.proper = properWords(e.Text, ln.names)
	ln.shapes = shapes(ln.stems, e.Text, ln.proper)
	ln.who = strings.ToLower(firstWord(e.SpeakerName))
	ln.promise = isPromise(e.Text)
	l.mu.Lock()
	defer l.mu.Unlock()
	if e.IdempotencyKey != "" {
		if _, ok := l.byKey[e.IdempotencyKey]; ok {
			return
		}
		l.byKey[e.IdempotencyKey] = ln
	}
	l.lines = append(l.lines, ln)
	for _, id := range ln.present {
		l.noteLocked(id)
	}
	if e.NPCID != "" {
		l.noteLocked(e.NPCID)
	}
}

// SaidTo notes that the line recorded under key was said to npcID (by
// name, or as a follow-up). It reports whether the line is known.
func (l *Log) SaidTo(key, npcID string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln, ok := l.byKey[key]
	if !ok || npcID == "" {
		return false
	}
	seen := ln.witnessedBy(npcID)
	ln.to = npcID
	if !seen {
		l.noteLocked(npcID)
	}
	// A line said to the NPC belongs in its digest's first part at once;
	// the summary keeps its cadence.
	l.extractLocked(npcID)
	return true
}

// Witnessed reports whether npcID witnessed the line recorded under key;
// a key the log does not know counts as witnessed (it cannot tell).
func (l *Log) Witnessed(npcID, key string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	ln, ok := l.byKey[key]
	return !ok || ln.witnessedBy(npcID)
}

func (l *Log) stateLocked(npcID string) *npcState {
	st, ok := l.npcs[npcID]
	if !ok {
		st = &npcState{}
		l.npcs[npcID] = st
	}
	return st
}

// noteLocked counts a witnessed line toward npcID's cadence and refreshes
// its digest when it is due.
func (l *Log) noteLocked(npcID string) {
	st := l.stateLocked(npcID)
	st.since++
	st.hasLines = true
	if st.at.IsZero() {
		st.at = l.cfg.Now()
	}
	if st.since >= l.cfg.DigestLines || l.cfg.Now().Sub(st.at) >= l.cfg.DigestEvery {
		l.refreshLocked(npcID)
	}
}

// refreshLocked rebuilds npcID's extractive digest now and starts a summary
// when a summariser is configured and none is under way.
func (l *Log) refreshLocked(npcID string) {
	st := l.stateLocked(npcID)
	st.since, st.at = 0, l.cfg.Now()
	seen := l.extractLocked(npcID)
	if l.cfg.Summarizer == nil || st.running || l.ctx.Err() != nil || len(seen) == 0 {
		return
	}
	st.running, st.gen = true, l.gen
	msgs := summaryInput(npcID, seen, l.cfg.DigestTokens*4*16)
	gen := l.gen
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(l.ctx, l.cfg.SummaryTimeout)
		defer cancel()
		text, err := l.cfg.Summarizer.Summarize(ctx, msgs)
		l.mu.Lock()
		defer l.mu.Unlock()
		if st.gen == gen {
			st.running = false
		}
		if err != nil {
			if l.ctx.Err() == nil {
				l.log.Warn("summarising what an NPC witnessed failed; its digest stays extractive", "npc", npcID, "err", err)
			}
			return
		}
		if gen != l.gen {
			return // a speaker was forgotten since: the summary may hold their words
		}
		st.summary = clip(strings.TrimSpace(text), l.cfg.DigestTokens*4)
	}()
}

// extractLocked rebuilds npcID's extractive digest and returns the lines
// it witnessed.
func (l *Log) extractLocked(npcID string) []*line {
	var seen []*line
	for _, ln := range l.lines {
		if ln.witnessedBy(npcID) {
			seen = append(seen, ln)
		}
	}
	st := l.stateLocked(npcID)
	st.extract = extractive(npcID, seen, l.cfg.DigestTokens*4)
	return seen
}

// summaryInput is what the summariser reads of npcID's witnessed lines:
// the newest within limit characters, oldest first.
func summaryInput(npcID string, seen []*line, limit int) []contextmgr.Message {
	var out []contextmgr.Message
	used := 0
	for i := len(seen) - 1; i >= 0; i-- {
		ln := seen[i]
		role, name := "user", ln.e.SpeakerName
		if ln.e.NPCID == npcID {
			role = "assistant"
		}
		text := ln.e.Text
		if ln.to == npcID && ln.e.NPCID != npcID {
			text = "(to you) " + text
		}
		used += len(text) + len(name) + 4
		if used > limit && len(out) > 0 {
			break
		}
		out = append(out, contextmgr.Message{Role: role, Name: name, Content: labelled(name, text), Entry: ln.e})
	}
	slices.Reverse(out)
	return out
}

// Digest is npcID's digest of the session as it witnessed it: the
// summariser's when it wrote one since the last Forget, else the
// extractive one; empty when it witnessed nothing.
func (l *Log) Digest(npcID string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	st, ok := l.npcs[npcID]
	if !ok || !st.hasLines {
		return ""
	}
	if st.extract == "" && st.summary == "" {
		l.refreshLocked(npcID)
	}
	if st.summary != "" {
		return st.summary
	}
	return st.extract
}

// Forget removes speakerID's lines and rebuilds every digest without them;
// summaries under way are discarded. It returns the lines removed.
func (l *Log) Forget(speakerID string) int {
	return l.remove(func(ln *line) bool { return ln.e.SpeakerID == speakerID })
}

// Withdraw removes the line recorded under key (an NPC reply the DM
// withdrew) and rebuilds every digest without it. It reports whether the
// line was known.
func (l *Log) Withdraw(key string) bool {
	return key != "" && l.remove(func(ln *line) bool { return ln.e.IdempotencyKey == key }) > 0
}

// remove drops the lines drop selects, rebuilds every digest and voids
// the summaries under way; it returns the lines removed.
func (l *Log) remove(drop func(*line) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := l.lines[:0]
	n := 0
	for _, ln := range l.lines {
		if drop(ln) {
			delete(l.byKey, ln.e.IdempotencyKey)
			n++
			continue
		}
		kept = append(kept, ln)
	}
	clear(l.lines[len(kept):])
	l.lines = kept
	if n == 0 {
		return 0
	}
	l.gen++
	for id, st := range l.npcs {
		st.summary = ""
		st.running = false // a running summary finishes into the void (gen)
		l.refreshLocked(id)
	}
	return n
}

// Amend replaces the text of the line recorded under key (a correction
// that came after it was heard) and refreshes the extractive digests of
// the NPCs who witnessed it. It reports whether the line was known.
func (l *Log) Amend(key, text string) bool {
	text = strings.TrimSpace(text)
	if key == "" || text == "" {
		return false
	}
	var names []string
	if l.cfg.Names != nil {
		for _, n := range l.cfg.Names(text) {
			names = appendUnique(names, strings.ToLower(n))
		}
	}
	st, proper, promise := stems(text), properWords(text, names), isPromise(text)
	sh := shapes(st, text, proper)
	l.mu.Lock()
	defer l.mu.Unlock()
	ln, ok := l.byKey[key]
	if !ok {
		return false
	}
	ln.e.Text, ln.stems, ln.shapes, ln.names, ln.proper, ln.promise, ln.vec, ln.norm = text, st, sh, names, proper, promise, nil, 0
	for id := range l.npcs {
		if ln.witnessedBy(id) {
			l.extractLocked(id)
		}
	}
	return true
}

// Lines are the lines npcID witnessed, oldest first (for tests and the DM).
func (l *Log) Lines(npcID string) []memory.TranscriptEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []memory.TranscriptEntry
	for _, ln := range l.lines {
		if ln.witnessedBy(npcID) {
			out = append(out, ln.e)
		}
	}
	return out
}

// Query is one recall.
type Query struct {
	NPCID string
	// Text is the question.
	Text string
	// Before leaves out lines said at or after it (the recent window the
	// NPC is sent anyway); zero: none.
	Before time.Time
	// Exclude is the key of the line being answered.
	Exclude string
	// Limit bounds the lines returned (default 4).
	Limit int
	// Ignore are the NPC's own name and aliases: naming it in the question
	// ("Brannoc, …") says nothing of what the question is about.
	Ignore []string
}

// Recalled is a line recall found, with its score.
type Recalled struct {
	Entry memory.TranscriptEntry
	// To is true when the line was said to the NPC.
	To    bool
	Score float64
}

// Recall weights and the bar a line must clear.
const (
	meaningWeight = 0.8
	stemWeight    = 1.0
	entityWeight  = 0.45
	speakerWeight = 0.3
	toBonus       = 0.2
	minScore      = 0.35
	// minMeaning is the cosine that counts as evidence on its own.
	minMeaning = 0.5
)

// Recall returns the lines npcID witnessed from others that bear on
// q.Text, best first: by meaning, by the names and speakers they share
// with it, and by shared word stems. Never the NPC's own lines.
func (l *Log) Recall(ctx context.Context, q Query) []Recalled {
	if q.Limit <= 0 {
		q.Limit = 4
	}
	ignore := map[string]bool{}
	for _, n := range q.Ignore {
		ignore[strings.ToLower(n)] = true
		for _, w := range embed.Words(n) {
			ignore[w] = true
		}
	}
	var qs []string
	for _, w := range stems(q.Text) {
		if !ignore[w] {
			qs = append(qs, w)
		}
	}
	qs = appendFocus(qs, q.Text)
	qf := questionFocus(q.Text)
	var qn []string
	if l.cfg.Names != nil {
		for _, n := range l.cfg.Names(q.Text) {
			if n = strings.ToLower(n); !ignore[n] {
				qn = appendUnique(qn, n)
			}
		}
	}
	for _, w := range properWords(q.Text, qn) {
		if !ignore[w] {
			qn = append(qn, w)
		}
	}
	qwords := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(q.Text), notWord) {
		qwords[strings.TrimSuffix(w, "'s")] = true
	}

	l.mu.Lock()
	var cands []*line
	for _, ln := range l.lines {
		if ln.e.NPCID == q.NPCID || ln.e.SpeakerID == q.NPCID || (q.Exclude != "" && ln.e.IdempotencyKey == q.Exclude) {
			continue
		}
		if !q.Before.IsZero() && !ln.e.At.Before(q.Before) {
			continue
		}
		if ln.witnessedBy(q.NPCID) {
			cands = append(cands, ln)
		}
	}
	var missing []*line
	for _, ln := range cands {
		if ln.vec == nil {
			missing = append(missing, ln)
		}
	}
	l.mu.Unlock()

	var qv []float32
	if l.cfg.Embedder != nil && len(cands) > 0 && strings.TrimSpace(q.Text) != "" {
		qv = l.embed(ctx, q.Text, missing)
	}

	qn2 := 0.0
	if qv != nil {
		qn2 = math.Sqrt(dot(qv, qv))
		if qn2 == 0 {
			qv = nil
		}
	}
	// Scored lines are sorted as small records; only those kept are
	// copied out.
	type scored struct {
		ln    *line
		to    bool
		score float64
	}
	var out []scored
	l.mu.Lock()
	for _, ln := range cands {
		lex := overlap(qs, ln.stems, len(qf), countIn(qf, ln.shapes))
		s := stemWeight * lex
		sem := 0.0
		if qv != nil && ln.vec != nil {
			sem = max(0, dot(qv, ln.vec)/(qn2*ln.norm))
			s += meaningWeight * sem
		}
		evidence := lex > 0 || sem >= minMeaning
		if shares(qn, ln.names) || shares(qn, ln.proper) {
			s += entityWeight
			evidence = true
		}
		if ln.who != "" && qwords[ln.who] {
			s += speakerWeight
			evidence = true
		}
		if !evidence {
			continue // closeness of vectors alone, below minMeaning, is noise
		}
		// What was said to the NPC clears a lower bar than what it
		// overheard.
		to := ln.to == q.NPCID
		if to {
			s += toBonus
		}
		if s < minScore {
			continue
		}
		out = append(out, scored{ln: ln, to: to, score: s})
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		if a.score != b.score {
			if a.score > b.score {
				return -1
			}
			return 1
		}
		return b.ln.e.At.Compare(a.ln.e.At)
	})
	// The same words said again are one memory (the best scored, newest).
	seen := map[string]bool{}
	var kept []Recalled
	for _, r := range out {
		k := strings.ToLower(strings.TrimSpace(r.ln.e.Text))
		if seen[k] {
			continue
		}
		seen[k] = true
		kept = append(kept, Recalled{Entry: r.ln.e, To: r.to, Score: r.score})
		if len(kept) == q.Limit {
			break
		}
	}
	l.mu.Unlock()
	return kept
}

// embed embeds the question and the lines not embedded yet, in one call
// bounded by QueryTimeout; it returns the question's vector, nil when
// embedding failed.
func (l *Log) embed(ctx context.Context, q string, missing []*line) []float32 {
	ctx, cancel := context.WithTimeout(ctx, l.cfg.QueryTimeout)
	defer cancel()
	texts := make([]string, 0, len(missing)+1)
	texts = append(texts, q)
	for _, ln := range missing {
		texts = append(texts, ln.e.Text)
	}
	vs, err := embed.All(ctx, l.cfg.Embedder, texts)
	if err != nil || len(vs) != len(texts) {
		l.log.Debug("embedding for recall failed; recall goes on by entity and words", "err", err)
		return nil
	}
	l.mu.Lock()
	for i, ln := range missing {
		if ln.e.Text != texts[i+1] {
			continue // amended while it was being embedded
		}
		if n := math.Sqrt(dot(vs[i+1], vs[i+1])); n > 0 {
			ln.vec, ln.norm = vs[i+1], n
		}
	}
	l.mu.Unlock()
	return vs[0]
}

// extractive is the digest of the lines npcID witnessed, within limit
// characters: what was said to it (newest kept), the names, places and
// things it heard, and the promises and plans it heard.
func extractive(npcID string, seen []*line, limit int) string {
	var to, promises []*line
	count := map[string]int{}
	display := map[string]string{}
	var order []string
	for _, ln := range seen {
		if ln.e.NPCID == npcID {
			continue
		}
		if ln.to == npcID {
			to = append(to, ln)
		}
		if ln.promise {
			promises = append(promises, ln)
		}
		for _, ns := range [2][]string{ln.names, ln.proper} {
			for _, n := range ns {
				if count[n] == 0 {
					order = append(order, n)
					display[n] = properCase(ln.e.Text, n)
				}
				count[n]++
			}
		}
	}
	var b strings.Builder
	section := func(title string, items []string, room int) {
		if len(items) == 0 {
			return
		}
		var s strings.Builder
		s.WriteString(title)
		for _, it := range items {
			if s.Len()+len(it) > room {
				break
			}
			s.WriteString(it)
		}
		if s.Len() > len(title) {
			b.WriteString(s.String())
		}
	}
	// Said to it: newest first until half the room is used, then in order.
	var said []string
	room := limit / 2
	used := 0
	for i := len(to) - 1; i >= 0; i-- {
		it := "- " + who(to[i].e) + ": " + clip(strings.TrimSpace(to[i].e.Text), 160) + "\n"
		if used+len(it) > room {
			break
		}
		used += len(it)
		said = append(said, it)
	}
	slices.Reverse(said)
	section("Said to you:\n", said, room+len("Said to you:\n"))
	if len(order) > 0 {
		sort.SliceStable(order, func(i, j int) bool { return count[order[i]] > count[order[j]] })
		var names []string
		for i, n := range order {
			sep := ", "
			if i == 0 {
				sep = ""
			}
			names = append(names, sep+display[n])
		}
		names = append(names, ".\n")
		section("Names, places and things you heard: ", names, (limit-b.Len())*2/3)
	}
	var ps []string
	for i := len(promises) - 1; i >= 0 && len(ps) < 5; i-- {
		ps = append(ps, "- "+who(promises[i].e)+": "+clip(strings.TrimSpace(promises[i].e.Text), 160)+"\n")
	}
	slices.Reverse(ps)
	section("Promises and plans you heard:\n", ps, limit-b.Len())
	return clip(b.String(), limit)
}

func who(e memory.TranscriptEntry) string {
	if e.SpeakerName != "" {
		return e.SpeakerName
	}
	return e.SpeakerID
}

func labelled(name, text string) string {
	if name == "" {
		return text
	}
	return name + ": " + text
}

// promiseMarkers are words and phrases of promises, deals and plans.
var promiseMarkers = []string{"promise", "swear", "i will ", "i'll ", "we will ", "we'll ", "owe", "deal", "tomorrow",
	"tonight", "meet ", "pay ", "bring ", "i shall ", "we shall "}

func isPromise(text string) bool {
	t := strings.ToLower(text) + " "
	for _, m := range promiseMarkers {
		if strings.Contains(t, m) {
			return true
		}
	}
	return false
}

// stems are the content-word stems of text, sorted and unique.
func stems(text string) []string {
	ws := embed.Words(text)
	for _, w := range ws {
		if c, ok := concepts[w]; ok {
			ws = append(ws, c)
		} else {
			ws = compoundConcepts(ws, w)
		}
	}
	slices.Sort(ws)
	return slices.Compact(ws)
}

// overlap scores the stems question q shares with line b: the cosine of
// the two sets, or, for a long line (a monologue, whose many words dilute
// the cosine), most of the share of the question's stems it holds. The
// question asks besides for focus tokens (qf of them), of which the line's
// shape shows bf.
func overlap(q, b []string, qf, bf int) float64 {
	if len(q)+qf == 0 || len(b)+bf == 0 {
		return 0
	}
	n := float64(bf)
	for _, w := range q {
		if _, ok := slices.BinarySearch(b, w); ok {
			n++
		} else if compounds(w, b) {
			n += compoundWeight
		}
	}
	cos := n / math.Sqrt(float64((len(q)+qf)*(len(b)+bf)))
	return max(cos, coverageWeight*n/float64(len(q)+qf))
}

// countIn counts the tokens of a that b holds.
func countIn(a, b []string) int {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return n
}

// Compounds: a word that holds another whole at its start or end
// ("dockmaster" and "docks", "Waffenschmied" and "Schmied") shares most of
// its meaning with it, in English and even more in German.
const (
	// minCompoundPart is the shortest word counted as part of a compound:
	// shorter ones are syllables ("ring" in "during" is none).
	minCompoundPart = 4
	// compoundWeight is what a compound match counts against an equal
	// stem.
	compoundWeight = 0.8
)

// compounds reports whether stem w is the start or end of a longer stem of
// b, or one of b's stems is of w; concept tokens ("~boat") are no words.
func compounds(w string, b []string) bool {
	if strings.HasPrefix(w, "~") {
		return false
	}
	for _, x := range b {
		if strings.HasPrefix(x, "~") {
			continue
		}
		long, short := x, w
		if len(short) > len(long) {
			long, short = short, long
		}
		if len(short) < minCompoundPart || len(long) < len(short)+minCompoundPart-1 {
			continue
		}
		if strings.HasPrefix(long, short) || strings.HasSuffix(long, short) {
			return true
		}
	}
	return false
}

// coverageWeight discounts the share of the question a line covers
// against the cosine.
const coverageWeight = 0.6

func shares(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// dot is the dot product of two vectors (0 when their lengths differ).
func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var d float32
	for i := range a {
		d += a[i] * b[i]
	}
	return float64(d)
}

func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

// properWords are the capitalised words of text that do not start a
// sentence and are not in known (lower case): names the campaign does not
// hold yet ("the Gull", "Seraphine").
func properWords(text string, known []string) []string {
	var out []string
	start := true
	for _, f := range strings.Fields(text) {
		w := strings.TrimFunc(f, func(r rune) bool { return !unicode.IsLetter(r) })
		r, _ := utf8.DecodeRuneInString(w)
		if !start && w != "" && unicode.IsUpper(r) && w != "I" {
			lw := strings.ToLower(strings.TrimSuffix(w, "'s"))
			if !embed.IsStopWord(lw) && !slices.Contains(known, lw) && !coveredBy(known, lw) {
				out = appendUnique(out, lw)
			}
		}
		start = strings.ContainsAny(f[len(f)-1:], ".!?:")
	}
	return out
}

// coveredBy reports whether w is a word of one of the known names.
func coveredBy(known []string, w string) bool {
	for _, k := range known {
		if slices.Contains(strings.Fields(k), w) {
			return true
		}
	}
	return false
}

// properCase is name as text writes it, else title-cased.
func properCase(text, name string) string {
	if i := strings.Index(strings.ToLower(text), name); i >= 0 && len(text) >= i+len(name) {
		if s := text[i : i+len(name)]; s != strings.ToLower(s) {
			return s
		}
	}
	ws := strings.Fields(name)
	for i, w := range ws {
		r, n := utf8.DecodeRuneInString(w)
		ws[i] = string(unicode.ToUpper(r)) + w[n:]
	}
	return strings.Join(ws, " ")
}

func appendUnique(s []string, v string) []string {
	if v == "" || slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// clip cuts s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
