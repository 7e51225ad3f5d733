package table

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/reconnect"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/guard"
	"github.com/glyphoxa/glyphoxa/lifecycle/ledger"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/lifecycle/spool"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/chunk"
	"github.com/glyphoxa/glyphoxa/memory/embed"
	"github.com/glyphoxa/glyphoxa/memory/hotctx"
	"github.com/glyphoxa/glyphoxa/memory/retrieve"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Defaults of Settings.
const (
	DefaultRecentWindow      = 5 * time.Minute
	DefaultHistoryTokens     = 1500
	DefaultHotContextTokens  = 1500
	DefaultNamesEvery        = 2 * time.Second
	DefaultLeaveWhenEmpty    = 5 * time.Minute
	DefaultMaxLength         = 8 * time.Hour
	DefaultTranscribeTimeout = 30 * time.Second
	DefaultTurnTimeout       = 2 * time.Minute
	DefaultMergeWait         = 2 * time.Second
)

// Providers are the outside services a table uses, built once from the
// configuration (cmd/glyphoxa) or by a test.
type Providers struct {
	// STT transcribes utterances (required). STTProvider names it
	// (ProviderDeepgram, ProviderOpenAI, ProviderPocketsphinx) for its
	// keyword budget; Language is a BCP-47 code or empty.
	STT         Transcriber
	STTProvider string
	Language    string
	// STTStreaming sends each utterance to speech-to-text while the player
	// speaks, when STT can stream (an stt.StreamRecognizer): the final
	// transcript comes soon after the end of speech, and partial
	// transcripts name the NPC being addressed early enough to assemble
	// its context before the player stops. When a stream cannot be opened
	// or fails, the utterance is transcribed whole.
	STTStreaming bool
	// Speaker voices the NPCs; nil posts their replies with Announce.
	Speaker Speaker
	// LLM answers as the NPCs. Without one, or when it fails, an NPC
	// answers from its memory without a model (npc.Fallback), and says so
	// in the logs and metrics.
	LLM llm.Streamer
	// LLMCorrector is the LLM pass of name correction (nil: phonetic
	// only).
	LLMCorrector *correction.LLMCorrector
	// Summarizer condenses the conversation as it grows (nil: it is kept
	// whole and the NPCs see its last minutes).
	Summarizer contextmgr.Summarizer
	// Extractor extracts facts after the session (nil: chunks only).
	Extractor postsession.Extractor
	// Embedder embeds chunks and questions (required).
	Embedder embed.Embedder
	// Realtime is the speech-to-speech engine of the NPCs whose persona
	// asks for it (nil: they answer through the cascaded engine).
	Realtime *Realtime
}

// Settings tune a table. Zero fields take the defaults.
type Settings struct {
	// Audio tunes the per-speaker lanes; its handlers are set by the table.
	Audio audio.Config
	// Name correction thresholds (zero: the correction package's).
	PhoneticThreshold, FuzzyThreshold, LowConfidence float64
	// HotContextTokens is the NPC's hot context budget (default 1500).
	HotContextTokens int
	// ToolTime bounds the time one NPC reply spends in its tools, on
	// either engine (npc.ToolBudget.MaxTime; its default, 2 s, when zero).
	ToolTime time.Duration
	// RecentWindow is how far back, from now, the conversation an NPC is
	// sent reaches (default 5 min); older lines reach it as the running
	// summary and, when they bear on the question, through its hot context
	// and tools. HistoryTokens bounds those recent lines (default 1500).
	RecentWindow  time.Duration
	HistoryTokens int
	// MaxContextTokens is the conversation's budget before it is
	// summarised (lifecycle/session's default when zero); SummarizeAt is
	// the fraction of it at which summarising starts (contextmgr's
	// default, 0.75, when zero).
	MaxContextTokens int
	SummarizeAt      float64
	// DigestEvery and DigestLines are the cadence of each NPC's digest of
	// what it witnessed (lifecycle/witness's defaults, 3 min and 12
	// lines, when zero).
	DigestEvery time.Duration
	DigestLines int
	// StateDir holds each campaign's outage spool, in a directory named
	// after it (required).
	StateDir string
	// ConsolidateEvery, IndexEvery: see lifecycle/session.Config.
	ConsolidateEvery, IndexEvery time.Duration
	Probe                        reconnect.Backoff
	SpoolMaxBytes                int64
	ShutdownTimeout              time.Duration
	// DrainTimeout bounds End's wait for the outage spool to be replayed
	// into the database (lifecycle/session's default when zero); when the
	// database stays down, the spool stays in StateDir for the next
	// session of the campaign and End's error wraps a
	// *guard.PendingError.
	DrainTimeout time.Duration
	// NamesEvery is how often the table looks for entity changes (default
	// 2 s).
	NamesEvery time.Duration
	// LeaveWhenEmpty ends a session whose channel has had no human in it
	// this long (default 5 min); MaxLength ends any session (default 8 h).
	LeaveWhenEmpty, MaxLength time.Duration
	// TranscribeTimeout bounds one speech-to-text request (default 30 s),
	// a stream's wait for its final transcript (StreamFinalTimeout) and
	// the batch endpoint after a failed stream together; TurnTimeout
	// bounds one NPC turn (default 2 min).
	TranscribeTimeout, TurnTimeout time.Duration
	// StreamFinalTimeout is how long a speech-to-text stream is given for
	// its final transcript once the utterance ended (default half of
	// TranscribeTimeout): a stream that took the audio and never answers
	// leaves the batch endpoint the rest (a final normally comes within a
	// second).
	StreamFinalTimeout time.Duration
	// MergeWait is how long a name said alone ("Goryr…") waits, from when
	// it is heard (transcribed), for its speaker to go on (default 2 s):
	// their next line joins it as one turn. A speaker who starts speaking
	// again in time is waited for until heard. No other line waits.
	MergeWait time.Duration
}

func (s *Settings) withDefaults() {
	if s.HotContextTokens <= 0 {
		s.HotContextTokens = DefaultHotContextTokens
	}
	if s.RecentWindow <= 0 {
		s.RecentWindow = DefaultRecentWindow
	}
	if s.HistoryTokens <= 0 {
		s.HistoryTokens = DefaultHistoryTokens
	}
	if s.NamesEvery <= 0 {
		s.NamesEvery = DefaultNamesEvery
	}
	if s.LeaveWhenEmpty <= 0 {
		s.LeaveWhenEmpty = DefaultLeaveWhenEmpty
	}
	if s.MaxLength <= 0 {
		s.MaxLength = DefaultMaxLength
	}
	if s.TranscribeTimeout <= 0 {
		s.TranscribeTimeout = DefaultTranscribeTimeout
	}
	if s.TurnTimeout <= 0 {
		s.TurnTimeout = DefaultTurnTimeout
	}
	if s.StreamFinalTimeout <= 0 {
		s.StreamFinalTimeout = s.TranscribeTimeout / 2
	}
	if s.MergeWait <= 0 {
		s.MergeWait = DefaultMergeWait
	}
}

// Config configures a session of a table.
type Config struct {
	// Campaign is the campaign's memory, opened through the door for the
	// DM (memory/access): the table records every line and runs the
	// session's consolidation and extraction through it, and each NPC reads
	// through its own narrowed handle (Campaign.As(memory.NPCViewer(id))).
	Campaign  *access.Campaign
	SessionID string
	// Voice is the joined voice channel.
	Voice     Voice
	Providers Providers
	Settings  Settings
	// Controls are the DM's scene, next-speaker and mute controls (nil:
	// none).
	Controls Controls
	// Announce posts in the session's text channel (nil: nowhere).
	Announce func(text string)
	// OnReply receives each NPC reply once it is recorded (nil: none):
	// the bot posts it with a button for the DM to withdraw it
	// (Session.UndoReply). It must not block.
	OnReply func(Reply)
	// UserName is a player's display name (nil: the user id).
	UserName func(userID string) string
	// IsDM reports whether a user is the session's DM (nil: nobody is).
	// The DM's lines are labelled memory.DMSpeaker, which recaps read as
	// narration; nobody else's are, whatever their display name (a player
	// named "DM" is "DM (player)": Cast.PlayerLabel).
	IsDM func(userID string) bool
	// OnEnd is called when the session ends by itself (its channel stayed
	// empty, it ran too long, or the voice connection ended), with why;
	// the caller then calls End.
	OnEnd func(reason string)
	// OnLine receives a report of every line once the table is done with
	// it (nil: none): the demo prints them, tests read them.
	OnLine func(LineReport)
	// OnRecorded receives each player line once it is recorded (in the
	// session log, or in the outage spool during an outage), before any
	// NPC speaks to it (nil: none): live continuity checks it. It runs on
	// the line's recording and must return within microseconds.
	OnRecorded func(memory.TranscriptEntry)
	// CheckSentence checks each sentence of an NPC's draft reply before
	// it is said (nil: none); a sentence for which it returns a reason
	// (it contradicts what the NPC knows of canon) is not said, and the
	// checker flags it to the DM. It runs on the turn and must return
	// within microseconds. Speech-to-speech NPCs and Say are not checked.
	CheckSentence func(npcID, sentence string) (why string)
	// OnForgotten receives what a player's forget-me removed from
	// long-term memory when it ran late: the database was down when they
	// asked, so the erase waited in the outage spool and ran when the
	// spool was replayed (by this session, possibly in another process
	// than the one that answered them). The caller takes down what it
	// posted of the deleted continuity cards (ForgetReport.Cards) and
	// rebuilds the sessions named (Sessions). It runs on the replay and
	// must not block (nil: none).
	OnForgotten func(speakerID string, rep memory.ForgetReport)
	// OnAmend receives each recorded line the LLM name correction amended
	// after the table answered it (nil: none; the log says it too).
	OnAmend func(Amendment)
	// Held, if set, says whether this process still holds the claim under
	// which it runs the session (see lifecycle/session.Config.Held): once
	// it says no, nothing more is recorded here (Say returns an error
	// wrapping lifecycle/session.ErrReleased). It must return at once.
	// nil: always held.
	Held     func() bool
	Observer Observer
	Clock    clock.Clock
	Logger   *slog.Logger
}

// LineReport is what the table did with one utterance.
type LineReport struct {
	At        time.Time `json:"at"`
	SpeakerID string    `json:"speaker_id"`
	Speaker   string    `json:"speaker"`
	// Heard is what speech-to-text returned; Corrected is the line as
	// recorded. Dropped says why an utterance was not recorded.
	Heard     string `json:"heard"`
	Corrected string `json:"corrected"`
	Dropped   string `json:"dropped,omitempty"`
	// Addressee is the NPC that answered (empty: none) and Reason why.
	Addressee string `json:"addressee"`
	Reason    string `json:"reason"`
	// Context is the exact message list the NPC's LLM got (without an
	// LLM, the one it would have got).
	Context []ContextMessage `json:"context"`
	Tools   []npc.ToolUse    `json:"tools"`
	Reply   string           `json:"reply"`
	// Fallback: the reply came from memory without the LLM; Degraded: the
	// NPC could not read its memory (an outage).
	Fallback bool   `json:"fallback,omitempty"`
	Degraded bool   `json:"degraded,omitempty"`
	Error    string `json:"error,omitempty"`
	// Timing is when each stage was reached, measured on the table's
	// clock from the moment the lane closed the utterance.
	Timing Timing `json:"timing"` // Held: the line is a name said alone; the table waits for the rest
	// of the speaker's words (a later report answers it: the next line's,
	// with Joined, or its own, with Late). Joined is the name said alone
	// that this line completes: the NPCs answered both as one turn. Late:
	// the report answers a line reported Held before, whose speaker did
	// not go on.
	Held   bool   `json:"held,omitempty"`
	Joined string `json:"joined,omitempty"`
	Late   bool   `json:"late,omitempty"`
	// More: another NPC answers the same line next (several were named
	// together); its report follows.
	More bool `json:"more,omitempty"`
	// Withdrawn: the DM withdrew the reply while the NPC gave it (Undo).
	Withdrawn bool `json:"withdrawn,omitempty"`
}

// Timing is when a line's stages were reached, from the moment its
// utterance was closed (the speaker's silence reached the endpoint). A zero
// stage was not reached.
type Timing struct {
	// STT: speech-to-text returned; Corrected: names were restored;
	// Recorded: the line is in the session log (or the outage spool).
	STT       time.Duration `json:"stt"`
	Corrected time.Duration `json:"corrected"`
	Recorded  time.Duration `json:"recorded"`
	// ContextReady: the NPC's hot context was assembled; FirstToken: the
	// LLM's first token; FirstPacket: the first Opus frame of the answer
	// was sent.
	ContextReady time.Duration `json:"context_ready,omitempty"`
	FirstToken   time.Duration `json:"first_token,omitempty"`
	FirstPacket  time.Duration `json:"first_packet,omitempty"`
	// Addressed: a partial transcript (streaming speech-to-text) named the
	// NPC being addressed and its hot context started being assembled;
	// negative when that was before the utterance was closed.
	Addressed time.Duration `json:"addressed,omitempty"`
}

// ContextMessage is one message of an NPC's LLM request.
type ContextMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// SpoolDir is the outage spool of a campaign's sessions under a state
// directory (Settings.StateDir).
func SpoolDir(stateDir, campaignID string) string {
	return filepath.Join(stateDir, campaignID, "spool")
}

// Open starts a session of the table: the campaign's names and personas,
// name correction, the NPC agents with their memory, the lifecycle session
// that records every line (live, through the memory guard) and keeps
// long-term memory up to date, and the turn loop on the joined voice
// channel. End stops it.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	switch {
	case cfg.Campaign == nil:
		return nil, errors.New("table: a campaign is required")
	case !cfg.Campaign.DM():
		return nil, fmt.Errorf("table: the campaign must be opened for the DM, not as %s: the table records every line and each NPC reads through its own handle", cfg.Campaign.Viewer())
	case cfg.Voice == nil:
		return nil, errors.New("table: a voice channel is required")
	case cfg.Providers.STT == nil:
		return nil, errors.New("table: a speech-to-text engine is required (providers.stt)")
	case cfg.Providers.Embedder == nil:
		return nil, errors.New("table: an embedder is required (providers.embeddings)")
	case cfg.Settings.StateDir == "":
		return nil, errors.New("table: a state directory is required (lifecycle.spool_dir)")
	case cfg.SessionID == "":
		return nil, errors.New("table: a session id is required")
	}
	cfg.Settings.withDefaults()
	cfg.Clock = clock.OrReal(cfg.Clock)
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Observer == nil {
		cfg.Observer = nopObserver{}
	}
	if cfg.Controls == nil {
		cfg.Controls = noControls{}
	}
	// Scene changes are timed on the clock lines are (see presence).
	if c, ok := cfg.Controls.(interface{ UseClock(func() time.Time) }); ok {
		c.UseClock(cfg.Clock.Now)
	}
	if cfg.UserName == nil {
		cfg.UserName = func(id string) string { return id }
	}
	camp, st := cfg.Campaign, cfg.Settings
	log := cfg.Logger.With("campaign", camp.ID(), "session", cfg.SessionID)

	// A session starts on a database that answers: this also reopens a door
	// an earlier outage left degraded, without waiting for its probe.
	if err := camp.Ping(ctx); err != nil {
		return nil, fmt.Errorf("starting a session of campaign %q: %w", camp.ID(), err)
	}
	pipe, err := newPipeline(st, cfg.Providers.LLMCorrector, cfg.Providers.Language, log)
	if err != nil {
		return nil, err
	}
	cast, err := NewCast(ctx, camp, pipe)
	if err != nil {
		return nil, fmt.Errorf("preparing campaign %q: %w", camp.ID(), err)
	}
	live, err := chunk.NewLive(camp, cfg.Providers.Embedder, chunk.Options{}, cfg.SessionID, cast.Matcher)
	if err != nil {
		return nil, err
	}
	post := postProcessor(camp, cfg.Providers, settleTime(st), log)
	var extract func(ctx context.Context, sessionID string) error
	if pp, ok := post.(*postsession.Processor); ok {
		// With an LLM, facts are extracted as the session goes (every
		// ConsolidateEvery), and the end only has the tail left.
		extract = func(ctx context.Context, sid string) error {
			_, err := pp.ExtractLive(ctx, sid)
			return err
		}
	}
	mem, err := session.Start(ctx, session.Config{
		SessionID:        cfg.SessionID,
		Log:              camp.Sessions(),
		Ping:             camp.Ping,
		StateDir:         filepath.Join(st.StateDir, camp.ID()), // its spool: SpoolDir
		Summarizer:       summarizerOrNone(cfg.Providers.Summarizer),
		MaxTokens:        st.MaxContextTokens,
		SummarizeAt:      st.SummarizeAt,
		ConsolidateEvery: st.ConsolidateEvery,
		IndexEvery:       st.IndexEvery,
		IndexChunks: func(ctx context.Context, _ string) error {
			_, err := live.Update(ctx)
			return err
		},
		SaveSummary: camp.Sessions().SaveSummary,
		OnSpoolCorrupt: func(spool.Corruption) {
			if o, ok := cfg.Observer.(spoolObserver); ok {
				o.SpoolQuarantined(camp.ID())
			}
		},
		Held:          cfg.Held,
		Probe:         st.Probe,
		MaxSpoolBytes: st.SpoolMaxBytes,
		PostSession:   post,
		Extract:       extract,
		ForgetSpeaker: func(ctx context.Context, speakerID string) error {
			rep, err := camp.ForgetSpeaker(ctx, speakerID)
			if err == nil && cfg.OnForgotten != nil {
				cfg.OnForgotten(speakerID, rep)
			}
			return err
		},
		PutCard:         camp.PutContinuityCard,
		DrainTimeout:    st.DrainTimeout,
		ShutdownTimeout: st.ShutdownTimeout,
		Clock:           cfg.Clock,
		Logger:          log,
	})
	if err != nil {
		return nil, err
	}
	agent, err := newAgent(camp, cfg, log)
	if err != nil {
		mem.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	s, err := start(ctx, cfg, cast, mem, agent, log)
	if err != nil {
		mem.Close(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

// newPipeline builds name correction.
// The word lists of the correction guard follow the speech-to-text
// language; a language without lists gets the English ones, with a
// warning.
func newPipeline(st Settings, lc *correction.LLMCorrector, language string, log *slog.Logger) (*correction.Pipeline, error) {
	lang, err := correction.ParseLanguage(language)
	if err != nil {
		log.Warn("name correction uses the English word lists", "err", err)
		lang = correction.English
	}
	mopts := []correction.MatcherOption{correction.WithLanguage(lang)}
	if st.PhoneticThreshold > 0 {
		mopts = append(mopts, correction.WithPhoneticThreshold(st.PhoneticThreshold))
	}
	if st.FuzzyThreshold > 0 {
		mopts = append(mopts, correction.WithFuzzyThreshold(st.FuzzyThreshold))
	}
	m, err := correction.NewMatcher(mopts...)
	if err != nil {
		return nil, err
	}
	opts := []correction.Option{correction.WithMatcher(m), correction.WithLogger(log)}
	if st.LowConfidence > 0 {
		opts = append(opts, correction.WithLowConfidence(st.LowConfidence))
	}
	if lc != nil {
		opts = append(opts, correction.WithLLM(lc))
	}
	return correction.NewPipeline(opts...)
}

// newAgent builds the NPCs' agent: hot context, tools and, when there is
// one, the LLM.
func newAgent(camp *access.Campaign, cfg Config, log *slog.Logger) (*npc.Agent, error) {
	p := cfg.Providers
	ncfg := npc.Config{
		Context:       hotctx.New(camp, hotctx.Config{Recent: cfg.Settings.RecentWindow, Now: cfg.Clock.Now, NowWith: ledger.NowWithOf}),
		Graph:         npcMemory{Graph: camp.Graph(), camp: camp},
		Heard:         camp.Sessions(),
		ContextTokens: cfg.Settings.HotContextTokens,
		Budget:        npc.ToolBudget{MaxTime: cfg.Settings.ToolTime},
		Logger:        log,
		Now:           cfg.Clock.Now,
	}
	if p.LLM != nil {
		ncfg.LLM = p.LLM
	}
	if r, err := retrieve.New(camp, p.Embedder, retrieve.Config{}); err != nil {
		log.Warn("the NPCs' recall tool is not available", "err", err)
	} else {
		ncfg.Recall = Recaller{R: r}
	}
	fb, err := npc.NewFallback(npc.FallbackConfig{Graph: npcMemory{Graph: camp.Graph(), camp: camp}, Heard: camp.Sessions(), Recall: ncfg.Recall, Logger: log})
	if err != nil {
		return nil, err
	}
	ncfg.Fallback = fb
	return npc.NewAgent(ncfg)
}

// npcMemory is the knowledge graph as the NPC agent gets it: each NPC's
// turn, persona and tools read through that NPC's own handle (ForNPC), so
// an NPC never reads another NPC's secrets or the DM's notes.
type npcMemory struct {
	*access.Graph
	camp *access.Campaign
}

// NPCGraph is the campaign's graph for an NPC agent outside a table (the
// DM's text chat): each NPC reads through its own handle. camp must be the
// DM's.
func NPCGraph(camp *access.Campaign) npc.Graph { return npcMemory{Graph: camp.Graph(), camp: camp} }

// ForNPC implements npc.NPCGraph.
func (m npcMemory) ForNPC(npcID string) (npc.Graph, error) {
	c, err := m.camp.As(memory.NPCViewer(npcID))
	if err != nil {
		return nil, err
	}
	return c.Graph(), nil
}

// Recaller is the NPCs' recall tool: hybrid retrieval restricted to what
// the NPC can know.
type Recaller struct{ R *retrieve.Retriever }

// Recall implements npc.Recaller.
func (rc Recaller) Recall(ctx context.Context, npcID, query string, k int) ([]npc.Recollection, error) {
	rs, err := rc.R.Search(ctx, retrieve.Query{Text: query, K: k, NPCID: npcID})
	if err != nil {
		return nil, err
	}
	out := make([]npc.Recollection, len(rs))
	for i, x := range rs {
		out[i] = npc.Recollection{Kind: x.Kind, Content: x.Content, SessionID: x.SessionID, Score: x.Score}
	}
	return out, nil
}

// noSummarizer stands in when no LLM is configured: summarising fails, so
// the conversation is kept whole (nothing is dropped).
type noSummarizer struct{}

func (noSummarizer) Summarize(context.Context, []contextmgr.Message) (string, error) {
	return "", errors.New("no LLM is configured to summarise the conversation (providers.llm)")
}

func summarizerOrNone(s contextmgr.Summarizer) contextmgr.Summarizer {
	if s == nil {
		return noSummarizer{}
	}
	return s
}

// postProcessor finishes a session's long-term memory: its last chunks and,
// with an extractor, its facts.
func postProcessor(camp *access.Campaign, p Providers, settle time.Duration, log *slog.Logger) session.PostProcessor {
	l2 := postsession.L2Func(func(ctx context.Context, sessionID string) error {
		_, err := chunk.Process(ctx, camp, p.Embedder, chunk.Options{}, sessionID)
		return err
	})
	if p.Extractor == nil {
		return chunkOnly{l2: l2, log: log}
	}
	proc, err := camp.Processing()
	if err != nil {
		log.Error("fact extraction is not available", "err", err)
		return chunkOnly{l2: l2, log: log}
	}
	x := p.Extractor
	if lx, ok := x.(ledger.Extractor); ok && lx.Ledger == nil {
		// A promise or debt restated from an earlier session is that entry.
		lx.Ledger = camp.Graph()
		x = lx
	}
	pp, err := postsession.New(postsession.Config{L2: l2, Transcript: camp.Sessions(), Graph: camp.Graph(),
		Extractor: x, Progress: postsession.NewStoredProgress(proc), Logger: log, Settle: settle})
	if err != nil {
		log.Error("fact extraction is not available", "err", err)
		return chunkOnly{l2: l2, log: log}
	}
	return pp
}

// settleTime is the longest a line takes from when its speaker began (its
// time) to when it is stored: the longest utterance, its transcription,
// and the wait of a name said alone for the rest of its line. Live fact
// extraction leaves the lines this close to the newest one for later
// (postsession.Config.Settle).
func settleTime(st Settings) time.Duration {
	return cmp.Or(st.Audio.MaxUtterance, audio.DefaultMaxUtterance) + st.TranscribeTimeout + st.MergeWait
}

// chunkOnly processes a session without an LLM: chunks and embeddings only.
type chunkOnly struct {
	l2  postsession.L2Func
	log *slog.Logger
}

func (c chunkOnly) Run(ctx context.Context, sessionID string) (postsession.Report, error) {
	c.log.Info("fact extraction skipped: no LLM is configured (providers.llm)", "session", sessionID)
	return postsession.Report{SessionID: sessionID}, c.l2(ctx, sessionID)
}

// ReplaySpool stores what the outage spool of camp's sessions under
// stateDir holds: the lines (and session starts and ends, presence,
// continuity cards, forget requests) a process acknowledged while
// PostgreSQL was down and did not store before it stopped (it was killed,
// or the database stayed down past its drain timeout). serve calls it at
// start, before any session of the campaign runs in the process, so that
// they reach the session log then, and an ended session's processing,
// resumed next, sees them; without it they would wait for the campaign's
// next session. It waits at most timeout for the database to take them and
// returns a *guard.PendingError naming what still waits, or an error
// wrapping spool.ErrLocked when another process has the spool open. A
// campaign with no spool is nothing to do.
func ReplaySpool(ctx context.Context, camp *access.Campaign, stateDir string, timeout time.Duration, log *slog.Logger) error {
	dir := SpoolDir(stateDir, camp.ID())
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if log == nil {
		log = slog.Default()
	}
	g, err := guard.New(guard.Config{Store: camp.Sessions(), Ping: camp.Ping, SpoolDir: dir,
		Forget: func(ctx context.Context, speakerID string) error {
			_, err := camp.ForgetSpeaker(ctx, speakerID)
			return err
		},
		PutCard: camp.PutContinuityCard, Logger: log.With("campaign", camp.ID())})
	if err != nil {
		return fmt.Errorf("replaying the outage spool of campaign %q: %w", camp.ID(), err)
	}
	defer g.Close()
	pending := g.Stats().Pending
	if pending == 0 {
		return nil
	}
	g.Start(ctx)
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := g.Drain(dctx); err != nil {
		return err
	}
	log.Info("replayed the outage spool an earlier run left", "campaign", camp.ID(), "records", pending, "spool", dir)
	return nil
}
