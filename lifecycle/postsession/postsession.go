// Package postsession processes a session after it ended: chunking and
// embedding into the semantic index (L2), then extracting entities and
// relationships into the knowledge graph (L3).
//
// A [Processor] runs in stages and records its progress after every step
// (see [Progress]): killed half-way, it resumes where it stopped. Running
// it again on a processed session creates no duplicates either: mentions
// are resolved against existing entities (by name, alias or sound, see
// [Resolver]) and facts are upserted by (source, target, type).
//
// # Extraction
//
// The transcript is read in windows of entries; an [Extractor] (an LLM
// answering in JSON, [OpenAIExtractor]) names the entities and facts of
// each. Facts carry provenance: the session, the time of the last line of
// their window, the model's confidence and whether they were stated or
// inferred. Facts at or above the knowledge graph's review threshold
// (0.7 by default) become canon; the others wait for the DM's review.
package postsession

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Stages of the processing, in order.
const (
	// StageStarted marks a session whose processing began: a run that
	// stops before the end leaves it, and ResumePending finds it.
	StageStarted = "started"
	StageL2      = "l2"
	StageExtract = "extract"
	// StageLate marks a session whose processing began and that received
	// lines late: after it ended, or, while it is played, before the last
	// line its live extraction covered (the extraction records that line's
	// time, StoredProgress.SaveCovering). They are lines a killed process
	// had spooled during an outage, replayed when it started again, after
	// another process took the session over (or ended and processed it).
	// The store sets it as it stores such lines (memory/postgres
	// LateLinesStage); Run takes it and processes the session again from
	// the start, and Unfinished and RunInterrupted list such ended
	// sessions.
	StageLate = "late_lines"
)

// Defaults.
const (
	DefaultWindow    = 40
	DefaultThreshold = 0.7
)

// L2 chunks and embeds a session into the semantic index. It must be
// idempotent: processing a session again replaces its chunks.
type L2 interface {
	ProcessSession(ctx context.Context, sessionID string) error
}

// L2Func adapts a function to L2.
type L2Func func(ctx context.Context, sessionID string) error

// ProcessSession calls f.
func (f L2Func) ProcessSession(ctx context.Context, sessionID string) error { return f(ctx, sessionID) }

// Transcript is what the processor reads from the session log.
type Transcript interface {
	Entries(ctx context.Context, sessionID string) ([]memory.TranscriptEntry, error)
}

// Graph is what the processor needs from the knowledge graph.
type Graph interface {
	FindEntities(ctx context.Context, f memory.EntityFilter) ([]memory.Entity, error)
	UpsertEntity(ctx context.Context, e memory.Entity) error
	UpsertRelationship(ctx context.Context, r memory.Relationship) (memory.Relationship, error)
}

// lateTaker is the optional capability of a Progress that keeps the mark
// of lines a session received after it ended and was processed
// (StoredProgress.TakeLate): taking it forgets the session's progress.
type lateTaker interface {
	TakeLate(ctx context.Context, sessionID string) (bool, error)
}

// holder is the optional capability of a Progress that claims a
// session's processing (StoredProgress.Hold): of two runs of one session
// at once (a session's end and serve's sweep, in two processes), the
// second waits for the first, and then finds the work done instead of
// paying the model for it again.
type holder interface {
	Hold(ctx context.Context, sessionID string) (func(), error)
}

// lineChecker is the optional capability of a Transcript that reports
// whether lines are still in their session and canon, waiting for a
// deletion under way (postgres.SessionLog.StillCanon).
type lineChecker interface {
	StillCanon(ctx context.Context, sessionID string, ids []int64) (bool, error)
}

// maxRereads bounds how many times an extraction reads its session again
// because lines left it while a window was extracted.
const maxRereads = 3

// thresholder is the optional capability of a Graph that reports its review
// threshold.
type thresholder interface{ ReviewThreshold() float64 }

// factRecorder is the optional capability of a Graph that keeps the history
// of facts (memory.FactTimeline): a fact that conflicts with a canon one
// does not overwrite it, the two are linked and the DM reviews the pair.
type factRecorder interface {
	RecordFact(ctx context.Context, r memory.Relationship) (memory.Relationship, []memory.Conflict, error)
}

// evidencedRecorder is the optional capability of a Graph that records a
// fact and the transcript lines it rests on in one transaction
// (postgres.Graph.RecordFactOn): between RecordFact and AddEvidence a
// fact told only in a split scene rested on nothing, and every player
// could read it.
type evidencedRecorder interface {
	RecordFactOn(ctx context.Context, r memory.Relationship, evidence []int64) (memory.Relationship, []memory.Conflict, error)
}

// evidenceLinker is the optional capability of a Graph that links a fact
// to the transcript lines it rests on (postgres.Graph.AddEvidence): the
// store shows a fact to a player only when one of them is a line the
// player may read, so a fact told in a split scene reaches only the
// scene's players.
type evidenceLinker interface {
	AddEvidence(ctx context.Context, factID int64, entryIDs []int64) error
}

// sceneEntityWriter is the optional capability of a Graph that keeps an
// entity first heard in a split scene from the players who were not there
// (postgres.Graph.AddSceneEntity): the entity is written with the lines it
// was heard in, in one transaction, and a player sees it only through a
// trace they may read; later windows naming it add their lines
// (AddEntityEvidence), so a name said with the party together reaches
// every player.
type sceneEntityWriter interface {
	AddSceneEntity(ctx context.Context, e memory.Entity, heard []int64) error
	AddEntityEvidence(ctx context.Context, heard map[string][]int64) error
}

// hiddenLister is the optional capability of a Graph that lists the
// entities some player may not see (postgres.Graph.HiddenFromPlayers): the
// model extracting a window said with the party together is not told of
// them, so that it cannot write their names into what every player reads
// (a new entity's alias or description, a fact's quote).
type hiddenLister interface {
	HiddenFromPlayers(ctx context.Context) ([]string, error)
}

// splitLiner is the optional capability of a Transcript that reports which
// lines of a session were said while the DM had split the party
// (postgres.SessionLog.SplitLines): what the processor draws from a window
// holding one may come from the split scene, so it rests on the scene's
// lines (see [Processor] apply).
type splitLiner interface {
	SplitLines(ctx context.Context, sessionID string, ids []int64) ([]int64, error)
}

// Config configures a Processor. Transcript, Graph, Extractor and Progress
// are required; L2 is optional (without it that stage is skipped).
type Config struct {
	L2         L2
	Transcript Transcript
	Graph      Graph
	Extractor  Extractor
	Progress   Progress
	// Window is the number of entries per extraction request (default 40).
	Window int
	// Logger receives progress and rejected facts (default slog.Default()).
	Logger *slog.Logger
	// Cache keeps the extractor's answer per window, so a re-run stores
	// the same entities and facts without asking again (default: Progress,
	// if it implements ExtractionCache; else none).
	Cache ExtractionCache
	// OnStep, if set, is told of each window done (for progress reports).
	OnStep func(Step)
	// Stage names the extraction's progress (default: the Extractor's, if
	// it implements StagedExtractor, else StageExtract). Under any other
	// stage than StageExtract no answer is cached, so that a later run
	// through the LLM, under StageExtract, extracts the session afresh.
	Stage string
	// Settle is how long after its last line a window is left to the
	// lines still on their way, measured from the session's newest line,
	// before ExtractLive extracts it: the longest a line can take from
	// when its speaker began (its time) to when it is stored, an
	// utterance, its transcription and a merge. A line stored after the
	// window that it falls in was extracted is a late line, which makes
	// the session extract again at its end (LateLines): without the
	// margin, players talking over each other made every session's
	// extraction run twice. Zero: no margin.
	Settle time.Duration
}

// StagedExtractor is an extractor that keeps its progress under its own
// stage: the ledger's explicit forms, found without an LLM, must not mark
// a session as extracted.
type StagedExtractor interface {
	Extractor
	Stage() string
}

// Step is one window of a session's extraction, done.
type Step struct {
	SessionID string
	// Window counts from 1 to Windows.
	Window, Windows int
	// Cached is true when the extractor's answer came from the cache.
	Cached bool
}

// ExtractionCache keeps the extractor's answers by session and window,
// with a hash of the lines read: the idempotency key of a window.
type ExtractionCache interface {
	LoadExtraction(ctx context.Context, sessionID string, window int, hash string) (Extraction, bool, error)
	SaveExtraction(ctx context.Context, sessionID string, window int, hash string, x Extraction) error
}

// Report says what one run did.
type Report struct {
	SessionID string
	// L2Done is true when the L2 stage ran in this run.
	L2Done bool
	// Windows is the number of windows extracted in this run; Resumed is
	// the window the run started at; Cached of the windows reused the
	// extractor's earlier answer.
	Windows, Resumed, Cached int
	// EntitiesCreated are new entities; EntitiesResolved are mentions
	// matched to existing ones (Phonetic of them by sound).
	EntitiesCreated, EntitiesResolved, Phonetic int
	// Accepted facts are canon; Pending ones wait for the DM.
	Accepted, Pending int
	// Rejected are extracted facts that could not be stored (an unknown
	// entity, a bad confidence, …), each logged.
	Rejected int
	// Conflicts are canon facts a new fact contradicts or supersedes;
	// each pair waits for the DM's review.
	Conflicts int
}

// Processor runs post-session processing. It is safe for concurrent use on
// different sessions.
type Processor struct {
	cfg       Config
	log       *slog.Logger
	threshold float64
}

// New returns a Processor.
func New(cfg Config) (*Processor, error) {
	switch {
	case cfg.Transcript == nil:
		return nil, errors.New("postsession: Config.Transcript is required")
	case cfg.Graph == nil:
		return nil, errors.New("postsession: Config.Graph is required")
	case cfg.Extractor == nil:
		return nil, errors.New("postsession: Config.Extractor is required")
	case cfg.Progress == nil:
		return nil, errors.New("postsession: Config.Progress is required")
	}
	if cfg.Window <= 0 {
		cfg.Window = DefaultWindow
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Stage == "" {
		cfg.Stage = StageExtract
		if x, ok := cfg.Extractor.(StagedExtractor); ok && x.Stage() != "" {
			cfg.Stage = x.Stage()
		}
	}
	if cfg.Stage != StageExtract {
		cfg.Cache = nil
	} else if cfg.Cache == nil {
		if c, ok := cfg.Progress.(ExtractionCache); ok {
			cfg.Cache = c
		}
	}
	p := &Processor{cfg: cfg, log: cfg.Logger.With("component", "post-session"), threshold: DefaultThreshold}
	if t, ok := cfg.Graph.(thresholder); ok {
		p.threshold = t.ReviewThreshold()
	}
	return p, nil
}

// Threshold is the confidence at or above which extracted facts are
// accepted: the graph's review threshold.
func (p *Processor) Threshold() float64 { return p.threshold }

// Run processes a session, resuming where an earlier run stopped. A
// session that received lines after it was processed (see StageLate) is
// processed again from the start: chunked anew, and its windows extracted
// again, the unchanged ones from the cache. Of two runs of one session at
// once, the second waits for the first (when Progress can claim a session,
// as StoredProgress does), so the model is paid once.
func (p *Processor) Run(ctx context.Context, sessionID string) (Report, error) {
	rep := Report{SessionID: sessionID}
	if strings.TrimSpace(sessionID) == "" {
		return rep, fmt.Errorf("%w: empty session id", memory.ErrInvalid)
	}
	if h, ok := p.cfg.Progress.(holder); ok {
		release, err := h.Hold(ctx, sessionID)
		if err != nil {
			return rep, err
		}
		defer release()
	}
	if lt, ok := p.cfg.Progress.(lateTaker); ok {
		late, err := lt.TakeLate(ctx, sessionID)
		if err != nil {
			return rep, err
		}
		if late {
			p.log.Info("the session received lines after it was processed: processing it again", "session", sessionID)
		}
	}
	if err := p.cfg.Progress.Save(ctx, sessionID, StageStarted, 0, false); err != nil {
		return rep, err
	}
	if p.cfg.L2 != nil {
		_, done, err := p.cfg.Progress.Load(ctx, sessionID, StageL2)
		if err != nil {
			return rep, err
		}
		if !done {
			if err := p.cfg.L2.ProcessSession(ctx, sessionID); err != nil {
				return rep, fmt.Errorf("chunking and embedding session %q: %w", sessionID, err)
			}
			if err := p.cfg.Progress.Save(ctx, sessionID, StageL2, 1, true); err != nil {
				return rep, err
			}
			rep.L2Done = true
		}
	}
	if err := p.extractFrom(ctx, sessionID, &rep, false); err != nil {
		return rep, err
	}
	p.log.Info("session processed", "session", sessionID, "windows", rep.Windows, "resumed_at", rep.Resumed,
		"entities_created", rep.EntitiesCreated, "entities_resolved", rep.EntitiesResolved,
		"facts_accepted", rep.Accepted, "facts_pending", rep.Pending, "facts_rejected", rep.Rejected)
	return rep, nil
}

// ExtractLive extracts facts from a session that is still being played:
// the windows its lines fill completely, from where the last run stopped.
// The open window, chunking and the end of the session are left to Run,
// which picks up where this stopped (a crash in between is resumed by
// RunInterrupted).
func (p *Processor) ExtractLive(ctx context.Context, sessionID string) (Report, error) {
	rep := Report{SessionID: sessionID}
	if strings.TrimSpace(sessionID) == "" {
		return rep, fmt.Errorf("%w: empty session id", memory.ErrInvalid)
	}
	if err := p.cfg.Progress.Save(ctx, sessionID, StageStarted, 0, false); err != nil {
		return rep, err
	}
	return rep, p.extractFrom(ctx, sessionID, &rep, true)
}

// settled is the number of complete windows of entries (in time order)
// whose last line was said at least settle before the newest one.
func settled(entries []memory.TranscriptEntry, window int, settle time.Duration) int {
	n := len(entries) / window
	if settle <= 0 || n == 0 {
		return n
	}
	newest := entries[len(entries)-1].At
	for n > 0 && newest.Sub(entries[n*window-1].At) < settle {
		n--
	}
	return n
}

// extractFrom extracts the session's windows from where the last run
// stopped: all of them, or, live, those the lines fill completely.
func (p *Processor) extractFrom(ctx context.Context, sessionID string, rep *Report, live bool) error {
	pos, done, err := p.cfg.Progress.Load(ctx, sessionID, p.cfg.Stage)
	if err != nil || done {
		return err
	}
	rep.Resumed = pos
	var entries []memory.TranscriptEntry
	var windows int
	read := func() error {
		all, err := p.cfg.Transcript.Entries(ctx, sessionID)
		if err != nil {
			return fmt.Errorf("reading session %q: %w", sessionID, err)
		}
		entries = all[:0:0]
		for _, e := range all {
			if !e.NonCanon {
				entries = append(entries, e)
			}
		}
		windows = (len(entries) + p.cfg.Window - 1) / p.cfg.Window
		if live {
			windows = settled(entries, p.cfg.Window, p.cfg.Settle)
		}
		return nil
	}
	if err := read(); err != nil {
		return err
	}
	if pos >= windows {
		if live {
			return nil
		}
		// Live runs extracted every window: the session is done.
		return p.cfg.Progress.Save(ctx, sessionID, p.cfg.Stage, pos, true)
	}
	known, err := p.cfg.Graph.FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return fmt.Errorf("loading the known entities: %w", err)
	}
	res := NewResolver(known)
	hidden := map[string]bool{}
	if hl, ok := p.cfg.Graph.(hiddenLister); ok {
		ids, err := hl.HiddenFromPlayers(ctx)
		if err != nil {
			return fmt.Errorf("loading the entities hidden from players: %w", err)
		}
		for _, id := range ids {
			hidden[id] = true
		}
	}
	rereads := 0
	for w := pos; w < windows; w++ {
		lo, hi := w*p.cfg.Window, min((w+1)*p.cfg.Window, len(entries))
		span := entries[lo:hi]
		var split []int64
		if sl, ok := p.cfg.Transcript.(splitLiner); ok {
			if split, err = sl.SplitLines(ctx, sessionID, lineIDs(span)); err != nil {
				return fmt.Errorf("reading the split scenes of window %d of %d of session %q: %w", w+1, windows, sessionID, err)
			}
		}
		// A window said with the party together is extracted without
		// the entities some player may not see (hiddenLister); one holding
		// split lines with every entity (what it draws is the scene's).
		knownHere := res.entities
		if len(split) == 0 && len(hidden) > 0 {
			knownHere = slices.DeleteFunc(slices.Clone(res.entities), func(e memory.Entity) bool { return hidden[e.ID] })
		}
		x, cached, err := p.extract(ctx, sessionID, w, knownHere, span)
		if err != nil {
			return fmt.Errorf("extracting window %d of %d of session %q: %w", w+1, windows, sessionID, err)
		}
		// Lines that left the session while the model read them (a
		// forget-me, a line marked non-canon) may be quoted in its answer:
		// the session is read again and the window extracted anew.
		if lc, ok := p.cfg.Transcript.(lineChecker); ok {
			still, err := lc.StillCanon(ctx, sessionID, lineIDs(span))
			if err != nil {
				return fmt.Errorf("checking window %d of %d of session %q: %w", w+1, windows, sessionID, err)
			}
			if !still {
				if rereads++; rereads > maxRereads {
					return fmt.Errorf("extracting window %d of session %q: its lines kept leaving while it was extracted (%d times); run it again",
						w+1, sessionID, maxRereads)
				}
				if err := read(); err != nil {
					return err
				}
				w--
				continue
			}
		}
		if err := p.apply(ctx, sessionID, span, split, x, res, hidden, rep); err != nil {
			return fmt.Errorf("storing window %d of %d of session %q: %w", w+1, windows, sessionID, err)
		}
		if err := p.saveWindow(ctx, sessionID, w+1, !live && w+1 == windows, span[len(span)-1].At); err != nil {
			return err
		}
		rep.Windows++
		if cached {
			rep.Cached++
		}
		if p.cfg.OnStep != nil {
			p.cfg.OnStep(Step{SessionID: sessionID, Window: w + 1, Windows: windows, Cached: cached})
		}
	}
	return nil
}

// coverer is the optional capability of a Progress that keeps the time
// of the last line a position covers (StoredProgress.SaveCovering).
type coverer interface {
	SaveCovering(ctx context.Context, sessionID, stage string, pos int, done bool, covered time.Time) error
}

// saveWindow records the extraction's position pos, whose last line was
// said at covered.
func (p *Processor) saveWindow(ctx context.Context, sessionID string, pos int, done bool, covered time.Time) error {
	if c, ok := p.cfg.Progress.(coverer); ok {
		return c.SaveCovering(ctx, sessionID, p.cfg.Stage, pos, done, covered)
	}
	return p.cfg.Progress.Save(ctx, sessionID, p.cfg.Stage, pos, done)
}

// RunUnfinished processes every ended session whose processing is not
// done, oldest first; it stops at the first error.
func (p *Processor) RunUnfinished(ctx context.Context) ([]Report, error) {
	ids, err := p.cfg.Progress.Unfinished(ctx)
	if err != nil {
		return nil, err
	}
	var reps []Report
	for _, id := range ids {
		r, err := p.Run(ctx, id)
		reps = append(reps, r)
		if err != nil {
			return reps, err
		}
	}
	return reps, nil
}

// extract returns the extractor's answer for window w, from the cache when
// it holds one for the same lines.
func (p *Processor) extract(ctx context.Context, sessionID string, w int, known []memory.Entity, span []memory.TranscriptEntry) (Extraction, bool, error) {
	if p.cfg.Cache == nil {
		x, err := p.cfg.Extractor.Extract(ctx, known, span)
		return x, false, err
	}
	hash := linesHash(span)
	x, ok, err := p.cfg.Cache.LoadExtraction(ctx, sessionID, w, hash)
	if err != nil || ok {
		return x, ok, err
	}
	if x, err = p.cfg.Extractor.Extract(ctx, known, span); err != nil {
		return x, false, err
	}
	return x, false, p.cfg.Cache.SaveExtraction(ctx, sessionID, w, hash, x)
}

// linesHash identifies the lines of a window: their ids and text.
func linesHash(span []memory.TranscriptEntry) string {
	h := sha256.New()
	for _, e := range span {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", e.ID, e.SpeakerName, e.Text)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// lineIDs are the ids of the stored lines of span.
func lineIDs(span []memory.TranscriptEntry) []int64 {
	ids := make([]int64, 0, len(span))
	for _, e := range span {
		if e.ID != 0 {
			ids = append(ids, e.ID)
		}
	}
	return ids
}

// hiddenDescription is the attribute that keeps the description of an
// entity first extracted from a window holding lines of a split scene: a
// secret attribute (memory.SecretKey), read by the DM only.
const hiddenDescription = "hidden_description"

// apply stores one window's extraction. split are the window's lines said
// while the DM had split the party: the model read them with the rest, and
// a model's answer cannot be traced to its lines with certainty (it
// paraphrases, quotes several lines in one evidence, describes an entity
// from what it heard), so what it draws from such a window is kept from
// the players who were not in the scene:
//   - a fact rests on the split lines its evidence quotes, or, when it
//     quotes none of them (a paraphrase, a quote of a line said with the
//     party together), on every split line of the window. A fact resting
//     on a line said with the party and one of the scene is thus not
//     public: what the scene added to it cannot be told apart. (The store
//     shows a fact to a player when a line it rests on is one they may
//     read, so a fact also revealed elsewhere, in another window or
//     session, stays readable to those who were there; its quote only
//     when every line it rests on is.)
//   - a new entity's description is kept as hiddenDescription, for the
//     DM. Its name, unless one of the window's lines said with the party
//     together names it, is the scene's: the entity is written as heard
//     in the split lines naming it (or in every split line of the window
//     when none names it: the model may have respelt it), and a player
//     sees it only through a trace they may read (sceneEntityWriter).
//   - the lines of the window naming an entity it extracted or resolved
//     are added to the entity's evidence (kept only for an entity first
//     heard in a split scene): a name said with the party together, in
//     this window or a later one, reaches every player.
//
// A window without split lines is stored as it was said: a fact rests on
// the lines its evidence quotes, and on none when it quotes none.
func (p *Processor) apply(ctx context.Context, sessionID string, span []memory.TranscriptEntry, split []int64, x Extraction, res *Resolver,
	hidden map[string]bool, rep *Report) error {
	at := span[len(span)-1].At
	ids := map[string]string{} // name used in this extraction -> entity id
	scene, _ := p.cfg.Graph.(sceneEntityWriter)
	if len(split) > 0 && scene == nil {
		p.log.Warn("the graph cannot keep entities first heard in a split scene from other players: their names are listed to every player",
			"session", sessionID)
	}
	ensure := func(name, typ string, aliases []string, desc string) (string, error) {
		if id, ok := ids[normalise(name)]; ok {
			return id, nil
		}
		if e, how, ok := res.Resolve(name, aliases...); ok {
			rep.EntitiesResolved++
			if how == MatchPhonetic {
				rep.Phonetic++
				p.log.Debug("mention resolved by sound", "mention", name, "entity", e.ID)
			}
			ids[normalise(name)] = e.ID
			return e.ID, nil
		}
		if typ = strings.ToLower(strings.TrimSpace(typ)); typ == "" {
			typ = memory.EntityConcept
		}
		e := memory.Entity{ID: res.NewID(name), Type: typ, Name: strings.TrimSpace(name), Aliases: cleanAliases(name, aliases),
			Attributes: map[string]any{"first_session": sessionID}}
		switch {
		case desc != "" && len(split) > 0:
			e.Attributes[hiddenDescription] = desc
		case desc != "":
			e.Attributes["description"] = desc
		}
		if heard := sceneHeard(span, split, e.Name, e.Aliases); heard != nil && scene != nil {
			if err := scene.AddSceneEntity(ctx, e, heard); err != nil {
				return "", err
			}
			hidden[e.ID] = true
		} else if err := p.cfg.Graph.UpsertEntity(ctx, e); err != nil {
			return "", err
		}
		res.Add(e)
		rep.EntitiesCreated++
		ids[normalise(name)] = e.ID
		return e.ID, nil
	}
	for _, xe := range x.Entities {
		if normalise(xe.Name) == "" {
			p.log.Warn("extracted entity without a name ignored", "session", sessionID, "type", xe.Type)
			continue
		}
		if _, err := ensure(xe.Name, xe.Type, xe.Aliases, xe.Description); err != nil {
			return err
		}
	}
	for _, xr := range x.Relationships {
		reject := func(why string) {
			rep.Rejected++
			p.log.Warn("extracted fact rejected", "session", sessionID, "source", xr.Source, "type", xr.Type,
				"target", xr.Target, "reason", why)
		}
		typ := relType(xr.Type)
		switch {
		case typ == "":
			reject("no relationship type")
			continue
		case xr.Confidence < 0 || xr.Confidence > 1:
			reject(fmt.Sprintf("confidence %v is outside 0..1", xr.Confidence))
			continue
		}
		src, okS := idFor(xr.Source, ids, res)
		dst, okT := idFor(xr.Target, ids, res)
		if !okS || !okT {
			reject("it names an entity that is neither extracted nor known")
			continue
		}
		if src == dst {
			reject("source and target are the same entity")
			continue
		}
		basis := memory.FactSource(strings.ToLower(strings.TrimSpace(xr.Basis)))
		if !basis.Valid() {
			basis = memory.SourceInferred
		}
		attrs := map[string]any{"extracted": true}
		if xr.Evidence != "" {
			attrs["evidence"] = xr.Evidence
		}
		for _, k := range LedgerAttributes {
			if v, ok := xr.Attributes[k].(string); ok && strings.TrimSpace(v) != "" {
				attrs[k] = strings.TrimSpace(v)
			}
		}
		fact := memory.Relationship{
			SourceID: src, TargetID: dst, Type: typ, Attributes: attrs,
			Provenance: memory.Provenance{SessionID: sessionID, Timestamp: at, Confidence: xr.Confidence, Source: basis},
		}
		lines := restsOn(quotedLines(span, xr.Evidence), split)
		var stored memory.Relationship
		var err error
		linked := false
		if er, ok := p.cfg.Graph.(evidencedRecorder); ok {
			var conflicts []memory.Conflict
			stored, conflicts, err = er.RecordFactOn(ctx, fact, lines)
			rep.Conflicts += len(conflicts)
			linked = true
		} else if fr, ok := p.cfg.Graph.(factRecorder); ok {
			var conflicts []memory.Conflict
			stored, conflicts, err = fr.RecordFact(ctx, fact)
			rep.Conflicts += len(conflicts)
		} else {
			stored, err = p.cfg.Graph.UpsertRelationship(ctx, fact)
		}
		if err != nil {
			if errors.Is(err, memory.ErrInvalid) {
				reject(err.Error())
				continue
			}
			return err
		}
		if ev, ok := p.cfg.Graph.(evidenceLinker); ok && !linked && stored.ID != 0 && len(lines) > 0 {
			if err := ev.AddEvidence(ctx, stored.ID, lines); err != nil {
				return err
			}
		}
		switch stored.Status {
		case memory.StatusActive:
			rep.Accepted++
		case memory.StatusPending:
			rep.Pending++
		}
	}
	if scene != nil {
		if err := scene.AddEntityEvidence(ctx, namedIn(span, ids, res)); err != nil {
			return err
		}
	}
	return nil
}

// sceneHeard are the lines a new entity was heard in, when it is the
// scene's: nil when the window holds no split line (split) or a line said
// with the party together says its full name; else the split lines naming
// it (by its name or an alias), or every split line when none does (the
// model may have respelt a name the speech-to-text wrote otherwise). Only
// the full name said with the party together makes it everyone's: an
// alias ("the Abbess") is often a common word, and the entity would show
// its full name, heard only in the scene.
func sceneHeard(span []memory.TranscriptEntry, split []int64, name string, aliases []string) []int64 {
	if len(split) == 0 {
		return nil
	}
	for _, id := range namingLines(span, []string{name}) {
		if !slices.Contains(split, id) {
			return nil
		}
	}
	heard := slices.DeleteFunc(namingLines(span, append([]string{name}, aliases...)), func(id int64) bool {
		return !slices.Contains(split, id) // an alias said with the party together
	})
	if len(heard) == 0 {
		return slices.Clone(split)
	}
	return heard
}

// namedIn are, for each entity this window's extraction named or resolved
// (ids, by the name used), the lines of span saying its full name. Only
// the full name counts (as in memory/postgres's view.tracedSceneSQL): the
// name the extraction used may be a sound-alike guess ("Corin" resolved to
// "Korrin Ashvale"), an epithet the model took for an alias ("the rich
// lady") or a generic alias ("the Abbess"); a line saying one of those,
// with the party together, must not show the full name to every player.
func namedIn(span []memory.TranscriptEntry, ids map[string]string, res *Resolver) map[string][]int64 {
	named := map[string]bool{}
	for _, id := range ids {
		named[id] = true
	}
	out := map[string][]int64{}
	for _, e := range res.entities {
		if !named[e.ID] {
			continue
		}
		if lines := namingLines(span, []string{e.Name}); len(lines) > 0 {
			out[e.ID] = lines
		}
	}
	return out
}

// namingLines are the ids of the lines of span that say one of names as
// whole words, compared as flatten does (without case or punctuation).
func namingLines(span []memory.TranscriptEntry, names []string) []int64 {
	var ns []string
	for _, n := range names {
		if f := flatten(n); f != "" {
			ns = append(ns, " "+f+" ")
		}
	}
	var out []int64
	for _, e := range span {
		if e.ID == 0 {
			continue
		}
		line := " " + flatten(e.Text) + " "
		for _, n := range ns {
			if strings.Contains(line, n) {
				out = append(out, e.ID)
				break
			}
		}
	}
	return out
}

// restsOn are the lines a fact quoting lines quoted rests on, in a window
// whose split-scene lines are split: quoted when there are none, else the
// split lines it quotes, else every split line (see [Processor.apply]).
func restsOn(quoted, split []int64) []int64 {
	if len(split) == 0 {
		return quoted
	}
	var out []int64
	for _, id := range quoted {
		if slices.Contains(split, id) {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return split
	}
	return out
}

// idFor finds the entity a relationship end names: one of this window's
// entities, or a known one.
func idFor(name string, ids map[string]string, res *Resolver) (string, bool) {
	if id, ok := ids[normalise(name)]; ok {
		return id, true
	}
	if e, _, ok := res.Resolve(name); ok {
		ids[normalise(name)] = e.ID
		return e.ID, true
	}
	return "", false
}

func cleanAliases(name string, aliases []string) []string {
	seen := map[string]bool{normalise(name): true}
	var out []string
	for _, a := range aliases {
		k := normalise(a)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, strings.TrimSpace(a))
	}
	return out
}

// relType upper-cases a relationship type and joins its words with
// underscores ("located at" -> LOCATED_AT).
func relType(s string) string {
	return strings.ReplaceAll(strings.ToUpper(normalise(s)), " ", "_")
}

// minQuoted is the shortest text quotedLines matches: a shorter quote or
// line ("Yes.") would match lines it does not come from.
const minQuoted = 12

// quotedLines are the ids of the lines of span a fact's evidence quotes:
// the model quotes a line, or part of one, sometimes after its speaker's
// name ("Thorin: I will stand watch"), sometimes several lines. A line
// matches when its text holds the quote, or the quote holds its text,
// compared without case, punctuation or repeated spaces. A quote that
// matches no line links none (the fact then rests on no line, as one the
// DM wrote).
func quotedLines(span []memory.TranscriptEntry, quote string) []int64 {
	qs := []string{flatten(quote)}
	if _, after, ok := strings.Cut(quote, ": "); ok {
		qs = append(qs, flatten(after))
	}
	var out []int64
	for _, e := range span {
		line := flatten(e.Text)
		for _, q := range qs {
			if len(q) >= minQuoted && strings.Contains(line, q) || len(line) >= minQuoted && strings.Contains(q, line) {
				out = append(out, e.ID)
				break
			}
		}
	}
	return out
}

// flatten lower-cases s and keeps its letters and digits, one space
// between words.
func flatten(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}
