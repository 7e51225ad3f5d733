package table

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/metrics"
	"github.com/glyphoxa/glyphoxa/lifecycle/contextmgr"
	"github.com/glyphoxa/glyphoxa/lifecycle/postsession"
	"github.com/glyphoxa/glyphoxa/lifecycle/session"
	"github.com/glyphoxa/glyphoxa/lifecycle/witness"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave"
	"github.com/glyphoxa/glyphoxa/voice/realtime"
)

const (
	// optOutRefresh is how often the session re-reads who opted out.
	optOutRefresh = 5 * time.Second
	// emptyCheck is how often the session looks for humans in its channel.
	emptyCheck = 5 * time.Second
	// maxLatencySamples bounds the reply latencies kept for the status.
	maxLatencySamples = 1000
)

// line is a recorded player utterance on its way to the NPCs.
type line struct {
	entry     memory.TranscriptEntry
	heard     string
	endOfTalk time.Time
	detected  time.Time // when the lane closed the utterance
	timing    Timing
	audio     audio.PCM // the utterance, for a speech-to-speech NPC
	// joined is a name said alone just before by the same speaker, held
	// for this line: the two are one turn, whose words are said.
	joined memory.TranscriptEntry
	said   string
	// direction is the DM's standing instruction to the NPC answering.
	direction string
	// outside: the line was said at the table outside the split scene
	// (see Session.present); the scene's NPCs did not hear it.
	outside bool
	// rec is the line's write to the session log, under way while the
	// NPCs start on the line; prev is the line before's (nil for none).
	rec, prev *recording
}

// recording is a line's write to the session log (lifecycle/session's
// Record: the session log, or the outage spool during an outage). It runs
// beside the NPC's turn, which reads only the process's memory until it
// speaks: no NPC speaks to a line before it is recorded, and a line whose
// recording failed is dropped, its turn stopped, as if it had failed
// first. Recordings run one at a time, in the order the lines were said.
type recording struct {
	done chan struct{}
	err  error
	// took is from the lane closing the utterance to the line recorded.
	took time.Duration
}

// wait waits for the recording and returns its error.
func (r *recording) wait() error {
	<-r.done
	return r.err
}

// text is the words the NPCs answer: the line, or a name said alone
// joined with it.
func (l line) text() string {
	if l.said != "" {
		return l.said
	}
	return l.entry.Text
}

// utterance is a closed utterance waiting for speech-to-text, with when the
// lane closed it.
type utterance struct {
	audio.Utterance
	detected time.Time
	listen   *listening // its speech-to-text stream, when it was streamed
}

// Session is one running session of a table. Its methods are safe for
// concurrent use.
type Session struct {
	cfg   Config
	camp  string
	id    string
	start time.Time
	cast  *Cast
	mem   *session.Session
	wit   *witness.Log // what each NPC witnessed of the session
	agent Responder
	voice Voice
	log   *slog.Logger
	// whole is the recogniser when whole utterances are sent through a
	// stream opened as the player starts speaking (nil otherwise).
	whole wholeStreamer

	router *audio.Router
	addr   *npc.Addresser
	floor  npc.Floor

	capture context.Context // packets and utterances; cancelled first on stop
	stopCap context.CancelFunc
	work    context.Context // transcription and turns; cancelled last
	stopAll context.CancelFunc
	wg      sync.WaitGroup
	// entry lets a caller outside the session's goroutines (Say) count
	// itself in wg: Add from such a caller could race the Wait of End or
	// Release, so it goes through enter, which refuses once stopping began
	// (closeEntry, before the Wait).
	entry struct {
		mu     sync.Mutex
		closed bool
	}

	queue   chan utterance // utterances waiting for speech-to-text
	lines   chan line      // recorded lines waiting for the NPCs
	refines chan refineJob // recorded lines waiting for the LLM correction
	stopped sync.Once
	stopErr error
	ended   atomic.Bool
	// released says the session was handed over to another process
	// (Release), not ended.
	released atomic.Bool

	optedOut atomic.Pointer[map[string]bool]
	pres     presence // the presence spans written

	mu        sync.Mutex
	recorded  map[string]string // user id → name of recorded speakers
	talking   map[string]bool   // user ids speaking now
	turns     []LineReport      // the latest NPC turns, oldest first
	s2s       map[string]*s2sNPC
	s2sBudget *realtime.Budget
	s2sBilled time.Duration // of s2sBudget, reported to the observer
	warnOnce  sync.Once
	latencies []time.Duration
	speaking  context.CancelFunc // interrupts the NPC speaking now
	lost      uint64             // packets the transport reported lost
	// e2eeRejoins are when the session rejoined after end-to-end
	// encryption failed, those of the last e2eeRejoinWindow.
	e2eeRejoins []time.Time
	// listening are the open speech-to-text streams, by user.
	listening map[string]*listening
	// startedAt and droppedAt are when each player last started speaking
	// and last had an utterance dropped (the merge of a name said alone
	// waits for what they say next).
	startedAt, droppedAt map[string]time.Time
	// fetchedAtStart is, by user, the NPC whose context was prefetched
	// when they started speaking, and when (prefetch).
	fetchedAtStart map[string]startFetch
	// turn is the NPC turn under way; lastReply the last NPC reply
	// recorded (Undo withdraws them).
	turn      *turnState
	lastReply *replyState
}

// turnState is an NPC turn under way.
type turnState struct {
	npcID     string
	withdrawn bool
}

// replyState is an NPC reply recorded in the session.
type replyState struct {
	npcID, key, text string
	at               time.Time
	withdrawn        bool
}

// start runs the turn loop on cfg.Voice.
func start(ctx context.Context, cfg Config, cast *Cast, mem *session.Session, agent Responder, log *slog.Logger) (*Session, error) {
	s := &Session{cfg: cfg, camp: cfg.Campaign.ID(), id: cfg.SessionID, start: cfg.Clock.Now(), cast: cast, mem: mem,
		agent: agent, voice: cfg.Voice, log: log, recorded: map[string]string{}, talking: map[string]bool{},
		queue: make(chan utterance, 256), lines: make(chan line, 64), refines: make(chan refineJob, maxRefines),
		listening: map[string]*listening{}, startedAt: map[string]time.Time{}, droppedAt: map[string]time.Time{},
		fetchedAtStart: map[string]startFetch{}}
	s.addr = npc.NewAddresser(cast, cast.IsNPC, cfg.Controls.Muted, 0)
	if !s.addr.UseLanguage(cfg.Providers.Language) {
		log.Warn("no addressing rules for the table's language; the English rules decide who is spoken to",
			"language", cfg.Providers.Language)
	}
	if err := s.refreshOptOuts(ctx); err != nil {
		return nil, err
	}
	s.wit = witness.New(witness.Config{Embedder: cfg.Providers.Embedder, Names: cast.MentionedNames,
		Summarizer: cfg.Providers.Summarizer, DigestEvery: cfg.Settings.DigestEvery, DigestLines: cfg.Settings.DigestLines,
		Now: cfg.Clock.Now, Logger: log})
	acfg := cfg.Settings.Audio
	acfg.Logger = log
	acfg.OnUtterance = s.onUtterance
	acfg.OnEvent = s.onSpeech
	if _, ok := cfg.Providers.STT.(streamer); ok && cfg.Providers.STTStreaming {
		acfg.OnAudio = s.onAudio
	} else if w, ok := cfg.Providers.STT.(wholeStreamer); ok {
		// Whole utterances go through a stream opened when the player
		// starts speaking (listen.go).
		s.whole = w
		acfg.OnAudio = s.onAudio
	}
	if d, ok := cfg.Observer.(dropObserver); ok {
		acfg.OnDrop = func(string) { d.VoicePacketDropped("rate") }
	}
	var err error
	if s.router, err = audio.NewRouter(acfg); err != nil {
		return nil, err
	}
	s.work, s.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	s.capture, s.stopCap = context.WithCancel(s.work)

	// Unbuffered: when the pump takes the next packet from the transport,
	// the lanes hold the one before (the transport buffers bursts).
	packets := make(chan audio.Packet)
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.pump(packets) }()
	go func() {
		defer s.wg.Done()
		defer close(s.queue)
		if err := s.router.Run(s.capture, packets, cfg.Clock); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("audio lanes stopped", "err", err)
		}
	}()
	go func() {
		defer s.wg.Done()
		defer close(s.lines)
		defer close(s.refines)
		s.transcribeLoop()
	}()
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.refineLoop() }()
	go func() { defer s.wg.Done(); s.turnLoop() }()
	go func() { defer s.wg.Done(); s.watch() }()
	cfg.Observer.SessionStarted()
	s.log.Info("session started")
	return s, nil
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Cast is the session's names and personas.
func (s *Session) Cast() *Cast { return s.cast }

// Witness is what each NPC witnessed of the session (its lines, digest and
// recall); it stays readable after the session ended.
func (s *Session) Witness() *witness.Log { return s.wit }

// Memory is the session's lifecycle (its conversation, summary and guarded
// memory).
func (s *Session) Memory() *session.Session { return s.mem }

// End ends the session: no new audio is taken, utterances already spoken
// are transcribed and recorded, the last consolidation runs, the voice
// connection is closed and post-session processing starts in the
// background (Finish waits for it). Calling it again returns the first
// result; after Release it does nothing and returns an error wrapping
// lifecycle/session.ErrReleased.
func (s *Session) End(ctx context.Context) error {
	if s.released.Load() {
		return fmt.Errorf("ending session %s: %w", s.id, session.ErrReleased)
	}
	s.stopped.Do(func() {
		s.ended.Store(true)
		s.stopCap()
		s.interrupt()
		s.closeEntry()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.stopAll()
			<-done
		}
		s.stopAll()
		s.stopErr = s.closeDown("session ended", func() error {
			if err := s.mem.End(ctx); err != nil {
				return fmt.Errorf("ending the session's memory: %w", err)
			}
			return nil
		})
	})
	return s.stopErr
}

// closeDown closes what a stopped session holds, once its goroutines are
// done: the witness log, the speech-to-speech sessions, its memory (by
// closeMemory: ending it or handing it over) and the voice connection; it
// logs done and returns every error joined.
func (s *Session) closeDown(done string, closeMemory func() error) error {
	s.wit.Close()
	var errs []error
	if err := s.closeS2S(); err != nil {
		errs = append(errs, fmt.Errorf("closing the speech-to-speech sessions: %w", err))
	}
	if err := closeMemory(); err != nil {
		errs = append(errs, err)
	}
	if err := s.voice.Close(); err != nil && !errors.Is(err, conn.ErrClosed) {
		errs = append(errs, fmt.Errorf("closing the voice connection: %w", err))
	}
	s.cfg.Observer.SessionEnded()
	err := errors.Join(errs...)
	s.log.Info(done, "err", err)
	return err
}

// Release hands the session over to another process (it took the guild's
// claim over) without ending it. At once, before anything else, the
// session's memory is fenced: no line is recorded or amended from now on
// (lifecycle/session.Session.Fence), so a Release called from the claim's
// heartbeat stops the writes as soon as the loss is noticed. Then audio
// capture, transcription, the turn loop and the NPC speaking now stop
// (utterances not yet recorded are dropped: the new owner hears the table
// now), the witness log and the speech-to-speech sessions close, the lines
// already acknowledged are drained from the outage spool into the session
// log (bounded, lifecycle/session.Session.Release), and the voice connection
// closes. The session is not marked ended and no post-session processing
// runs: the new owner goes on with the same session id. Release does not
// leave the voice channel (the caller must not either: the bot user's
// voice state is the new owner's). After End it returns an error; calling
// it again returns the first result.
func (s *Session) Release(ctx context.Context) error {
	s.mem.Fence()
	ran := false
	s.stopped.Do(func() {
		ran = true
		s.released.Store(true)
		s.ended.Store(true)
		s.stopCap()
		s.stopAll()
		s.interrupt()
		s.closeEntry()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			// Everything is cancelled; what still runs is a provider call
			// that ignores its context, and whatever it yields is refused.
			s.log.Warn("releasing the session: waiting for its goroutines", "err", ctx.Err())
			<-done
		}
		s.stopErr = s.closeDown("session handed over to another process", func() error {
			if err := s.mem.Release(ctx); err != nil {
				return fmt.Errorf("handing the session's memory over: %w", err)
			}
			return nil
		})
	})
	if !ran && !s.released.Load() {
		return fmt.Errorf("releasing session %s: %w", s.id, session.ErrEnded)
	}
	return s.stopErr
}

// Released reports whether the session was handed over (Release).
func (s *Session) Released() bool { return s.released.Load() }

// Finish waits for post-session processing (started by End) and releases
// the session's memory. Without End it ends the session first. Its error
// includes End's: one wrapping a *guard.PendingError says that lines wait
// in the outage spool for the next run.
func (s *Session) Finish(ctx context.Context) (postsession.Report, error) {
	endErr := s.End(ctx)
	if endErr != nil {
		s.log.Warn("ending the session", "err", endErr)
	}
	rep, werr := s.mem.Wait(ctx)
	if err := s.mem.Close(ctx); err != nil {
		werr = errors.Join(werr, err)
	}
	return rep, errors.Join(endErr, werr)
}

// pump hands packets of players who did not opt out to the audio lanes.
func (s *Session) pump(out chan<- audio.Packet) {
	defer close(out)
	in := s.voice.Packets()
	for {
		select {
		case <-s.capture.Done():
			return
		case p, ok := <-in:
			if !ok {
				return
			}
			if (*s.optedOut.Load())[p.UserID] {
				continue
			}
			if p.Lost > 0 {
				s.mu.Lock()
				s.lost += uint64(p.Lost)
				s.mu.Unlock()
			}
			// Arrival as the transport saw it (voice/conn stamps each
			// packet when the socket delivered it), so a pump or lane that
			// stalls under load does not turn real-time speech into a
			// burst the per-speaker rate limit cuts; a transport that
			// stamps nothing (the scene player) arrives on the table's
			// clock, which times the lanes.
			if p.Received.IsZero() {
				p.Received = s.cfg.Clock.Now()
			}
			select {
			case out <- p:
			case <-s.capture.Done():
				return
			}
		}
	}
}

// onUtterance queues a finished utterance; it runs on the router's
// goroutine and never blocks it for long.
func (s *Session) onUtterance(au audio.Utterance) {
	u := utterance{Utterance: au, detected: s.cfg.Clock.Now(), listen: s.takeListening(au.UserID)}
	if u.listen != nil {
		u.listen.end()
	}
	select {
	case s.queue <- u:
	default:
		// Speech-to-text has fallen far behind; waiting here would stall
		// every lane, so the utterance waits on its own.
		s.log.Warn("speech-to-text is behind; an utterance waits", "user", u.UserID, "queued", len(s.queue))
		select {
		case s.queue <- u:
		case <-s.work.Done():
			s.log.Error("utterance not transcribed: the session ended while speech-to-text was behind", "user", u.UserID)
			s.releaseLater(u.listen)
		}
	}
}

// onSpeech interrupts the NPC speaking now when a player talks over it
// for long enough, and, when a player starts speaking, starts assembling
// the context of the NPC likely to answer while they speak and
// speech-to-text runs (again when they stop, if they spoke for longer than
// restartFetch).
func (s *Session) onSpeech(e audio.Event) {
	switch e.Kind {
	case audio.SpeechStarted:
		s.mu.Lock()
		s.talking[e.UserID] = true
		s.startedAt[e.UserID] = s.cfg.Clock.Now()
		s.mu.Unlock()
		s.log.Debug("speech started", "user", e.UserID, "now", s.cfg.Clock.Now())
		s.prefetch(e.UserID, true)
		return
	case audio.SpeechEnded:
		s.mu.Lock()
		delete(s.talking, e.UserID)
		s.mu.Unlock()
		s.prefetch(e.UserID, false)
		return
	}
	if e.Kind != audio.SpeechHeld {
		return
	}
	if !s.mayAddress(e.UserID, s.cfg.Clock.Now()) {
		// A player at the table outside the split scene talks among the
		// table, not over the scene's NPC.
		return
	}
	s.mu.Lock()
	stop := s.speaking
	s.mu.Unlock()
	if stop != nil {
		s.log.Info("a player interrupted the NPC", "user", e.UserID)
		stop()
	}
}

// restartFetch is how long a player may speak before the context
// prefetched when they started is fetched again when they stop: a long
// monologue's answer is not given a context older than this (plus the
// transcription).
const restartFetch = 5 * time.Second

// startFetch is a prefetch started when a player started speaking.
type startFetch struct {
	npcID string
	at    time.Time
}

// prefetch starts assembling the context of the NPC likely to answer
// user: when they start speaking (start), so that the database's reads
// overlap their speech and the transcription rather than wait after them,
// and when they stop, unless the same NPC's was started when they started
// (less than restartFetch before) or by a partial transcript.
func (s *Session) prefetch(user string, start bool) {
	p, ok := s.agent.(prefetcher)
	if !ok {
		return
	}
	now := s.cfg.Clock.Now()
	id := s.addr.Likely(s.cfg.Controls.PresentNPCs(), now)
	if !s.mayAddress(user, now) {
		// An opted-out player is not listened to; a player outside the
		// split scene is heard by none of its NPCs.
		id = ""
	}
	s.mu.Lock()
	began, had := s.fetchedAtStart[user]
	delete(s.fetchedAtStart, user)
	if start && id != "" {
		s.fetchedAtStart[user] = startFetch{npcID: id, at: now}
	}
	s.mu.Unlock()
	if id == "" || (!start && had && began.npcID == id && now.Sub(began.at) < restartFetch) || s.prefetchedEarly(user, id) {
		return
	}
	p.Prefetch(s.work, id, s.id)
}

func (s *Session) interrupt() {
	s.mu.Lock()
	stop := s.speaking
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// transcribeLoop turns utterances into recorded lines, in the order they
// were spoken. It returns once the last line's recording is done.
func (s *Session) transcribeLoop() {
	var prev *recording
	defer func() {
		if prev != nil {
			prev.wait()
		}
	}()
	for u := range s.queue {
		if (*s.optedOut.Load())[u.UserID] || s.released.Load() {
			s.releaseLater(u.listen)
			continue
		}
		l, ok := s.transcribe(u, prev)
		if !ok {
			continue
		}
		prev = l.rec
		select {
		case s.lines <- l:
		case <-s.capture.Done():
			// Ending: the line is recorded; no NPC answers it.
			s.report(LineReport{At: l.entry.At, SpeakerID: l.entry.SpeakerID, Speaker: l.entry.SpeakerName,
				Heard: l.heard, Corrected: l.entry.Text, Reason: "the session is ending"})
		}
	}
}

// scene is the salience scene: the NPCs present, or every NPC when the
// scene is not set.
func (s *Session) scene() []string {
	if p := s.cfg.Controls.PresentNPCs(); len(p) > 0 {
		return p
	}
	s.cast.mu.Lock()
	defer s.cast.mu.Unlock()
	ids := make([]string, 0, len(s.cast.personas))
	for id := range s.cast.personas {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// hearers are the NPCs that hear a line said in the scene at at (the
// witness log's present): those the DM put in the scene; with none put
// there, every NPC, unless the DM has split the party: then none but the
// NPC the line is said to (witness.Log.SaidTo) and the NPC that says it.
// No NPC is known to be in the split scene, and an NPC taken to be there
// would retell it, once the party is together, to the players who were
// not.
func (s *Session) hearers(at time.Time) []string {
	if p := s.cfg.Controls.PresentNPCs(); len(p) > 0 {
		return p
	}
	if split, _ := s.splitAt(at); len(split) > 0 {
		return nil
	}
	return s.scene()
}

// speakerName labels the lines of userID: [memory.DMSpeaker] for the
// session's DM (Config.IsDM), the display name for a player
// ([Cast.PlayerLabel], which marks a player named like an NPC or the DM).
func (s *Session) speakerName(userID string) string {
	if s.cfg.IsDM != nil && s.cfg.IsDM(userID) {
		return memory.DMSpeaker
	}
	return s.cast.PlayerLabel(s.cfg.UserName(userID))
}

// transcribe turns an utterance into a line and starts recording it once
// prev (the line before, nil for none) is recorded.
func (s *Session) transcribe(u utterance, prev *recording) (line, bool) {
	ctx, cancel := context.WithTimeout(s.work, s.cfg.Settings.TranscribeTimeout)
	defer cancel()
	obs := s.cfg.Observer
	name := s.speakerName(u.UserID)
	rep := LineReport{At: u.Start.UTC(), SpeakerID: u.UserID, Speaker: name}
	t, err := s.recognize(ctx, u)
	if err != nil {
		s.log.Error("speech-to-text failed; the utterance is not recorded", "user", u.UserID,
			"start", u.Start, "duration", u.Duration(), "err", err)
		rep.Dropped = "speech-to-text failed: " + err.Error()
		s.report(rep)
		return line{}, false
	}
	obs.ObserveStage(metrics.StageSTTFinal, s.cfg.Clock.Now().Sub(u.End))
	var tm Timing
	tm.STT = s.cfg.Clock.Now().Sub(u.detected)
	if at := u.listen.addressedAt(); !at.IsZero() {
		tm.Addressed = at.Sub(u.detected)
	}
	raw := strings.TrimSpace(t.Text)
	rep.Heard = raw
	if raw == "" {
		rep.Dropped = "speech-to-text heard no words"
		s.report(rep)
		return line{}, false
	}
	// Stage 1 only: the table answers on the phonetic correction; the LLM
	// pass (refineLoop) amends the recorded line afterwards.
	cu := correction.Utterance{Text: raw, Words: t.Words,
		InPlay: s.cast.InPlay(s.scene(), s.cfg.Clock.Now())}
	res := s.cast.Pipeline().Correct(cu)
	text := raw
	if c := strings.TrimSpace(res.Text); c != "" {
		text = c
	}
	obs.ObserveStage(metrics.StageCorrection, s.cfg.Clock.Now().Sub(u.End))
	tm.Corrected = s.cfg.Clock.Now().Sub(u.detected)
	e := memory.TranscriptEntry{SessionID: s.id, SpeakerID: u.UserID, SpeakerName: name, Text: text, RawText: raw,
		At: u.Start.UTC(), Duration: u.Duration(),
		IdempotencyKey: fmt.Sprintf("voice:%s:%s:%d", s.id, u.UserID, u.Start.UnixNano())}
	// The witness log takes the line at once (the NPC's turn notes it was
	// said to it); it lets go of it if the recording fails.
	npcs := s.hearers(e.At)
	outside, written := s.notePresence(e.At, e.SpeakerID)
	if outside {
		// Said at the table outside the split scene: its NPCs did not
		// hear it.
		npcs = nil
	}
	s.wit.Heard(e, npcs)
	s.cast.NoteMentions(s.cast.FindNames(text), s.cfg.Clock.Now())
	rec := &recording{done: make(chan struct{})}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(rec.done)
		if prev != nil {
			prev.wait()
		}
		ctx, cancel := context.WithTimeout(s.work, s.cfg.Settings.TranscribeTimeout)
		defer cancel()
		awaitPresence(ctx, written) // the span the line is in, first
		if rec.err = s.mem.Record(ctx, e); rec.err != nil {
			s.log.Error("recording a line failed", "user", u.UserID, "err", rec.err)
			s.wit.Withdraw(e.IdempotencyKey)
			return
		}
		rec.took = s.cfg.Clock.Now().Sub(u.detected)
		if s.cfg.OnRecorded != nil {
			s.cfg.OnRecorded(e)
		}
		s.refineLater(refineJob{u: cu, res: res, key: e.IdempotencyKey, speaker: u.UserID})
		s.mu.Lock()
		s.recorded[u.UserID] = name
		s.mu.Unlock()
	}()
	return line{entry: e, heard: raw, endOfTalk: u.End, detected: u.detected, timing: tm, audio: u.Audio, rec: rec, prev: prev,
		outside: outside}, true
}

// waitRecorded waits for l's recording and notes its time in l's timing;
// when it failed it reports the line dropped and returns false.
func (s *Session) waitRecorded(l *line) bool {
	err := l.rec.wait()
	if err == nil {
		l.timing.Recorded = l.rec.took
		return true
	}
	s.report(LineReport{At: l.entry.At, SpeakerID: l.entry.SpeakerID, Speaker: l.entry.SpeakerName, Heard: l.heard,
		Corrected: l.entry.Text, Dropped: "recording failed: " + err.Error()})
	return false
}

// maxSaid bounds the earlier lines an NPC is sent with a turn.
const maxSaid = 4

// memoryOf is what npcID is sent of the session as it witnessed it (see
// lifecycle/witness): its digest, the earlier lines it heard from others
// that bear on the line it answers (never its own), and the conversation,
// the lines of the last RecentWindow (measured from now) it witnessed
// within HistoryTokens, newest kept; the line being answered is left out.
// It reads only the process's memory, so it holds during a database
// outage.
func (s *Session) memoryOf(ctx context.Context, answering memory.TranscriptEntry, npcID string) (history []npc.Message, digest string, said []npc.Message) {
	from := s.cfg.Clock.Now().Add(-s.cfg.Settings.RecentWindow)
	said = []npc.Message{}
	var ignore []string
	if p, ok := s.cast.Persona(npcID); ok {
		ignore = append([]string{p.Name}, p.Aliases...)
	}
	for _, r := range s.wit.Recall(ctx, witness.Query{NPCID: npcID, Text: answering.Text, Before: from,
		Exclude: answering.IdempotencyKey, Limit: maxSaid, Ignore: ignore}) {
		e := r.Entry
		said = append(said, npc.Message{SpeakerID: e.SpeakerID, Speaker: e.SpeakerName, NPCID: e.NPCID, Text: e.Text, At: e.At})
	}
	return s.history(answering, npcID), s.wit.Digest(npcID), said
}

// history is the conversation npcID is sent: the lines of the last
// RecentWindow (measured from now) it witnessed, within HistoryTokens,
// newest kept; the line being answered is left out. Older lines reach it
// through its digest and the lines that bear on the question (memoryOf).
func (s *Session) history(answering memory.TranscriptEntry, npcID string) []npc.Message {
	msgs := s.mem.Messages()
	from := s.cfg.Clock.Now().Add(-s.cfg.Settings.RecentWindow)
	var lines []contextmgr.Message
	for _, m := range msgs {
		switch {
		case m.Summary:
		case m.Entry.IdempotencyKey == answering.IdempotencyKey:
		case !m.Entry.At.Before(from) && s.wit.Witnessed(npcID, m.Entry.IdempotencyKey):
			lines = append(lines, m)
		}
	}
	budget := s.cfg.Settings.HistoryTokens
	first := len(lines)
	for first > 0 {
		n := contextmgr.Tokens(lines[first-1].Content) + 4
		if n > budget {
			break
		}
		budget -= n
		first--
	}
	var out []npc.Message
	for _, m := range lines[first:] {
		out = append(out, npc.Message{SpeakerID: m.Entry.SpeakerID, Speaker: m.Entry.SpeakerName, NPCID: m.Entry.NPCID,
			Text: m.Entry.Text, At: m.Entry.At})
	}
	return out
}

// Reasons of the table's own (besides npc.Reason*).
const (
	// ReasonHeld: the line is a name said alone ("Goryr…"); the table
	// waits for the rest.
	ReasonHeld = "a name said alone: waiting for the rest of the line"
	// ReasonOutsideScene: the party is split and the speaker is at the
	// table outside the scene; the scene's NPCs did not hear the line
	// and none of them answers it.
	ReasonOutsideScene = "said outside the split scene: its NPCs did not hear it"
)

// mergePoll is how often a held name checks again whether its speaker,
// who started speaking, has been heard.
const mergePoll = 250 * time.Millisecond

// heldLine is a name said alone, waiting for its speaker to go on.
type heldLine struct {
	l        line
	deadline time.Time
}

// turnLoop lets the addressed NPCs answer each line. A line that is a name
// said alone ("Goryr…") is held: when its speaker starts speaking again
// before MergeWait has passed since the name was heard (or already has),
// their next line joins it and the two are one turn; otherwise the name is
// answered alone. No other line waits.
func (s *Session) turnLoop() {
	clk := s.cfg.Clock
	held := map[string]*heldLine{}
	var timer clock.Timer
	var fire <-chan time.Time
	arm := func() {
		if timer != nil {
			timer.Stop()
			timer, fire = nil, nil
		}
		var next time.Time
		for _, h := range held {
			if next.IsZero() || h.deadline.Before(next) {
				next = h.deadline
			}
		}
		if !next.IsZero() {
			timer = clk.NewTimer(next.Sub(clk.Now()))
			fire = timer.C()
		}
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// due answers the held names whose wait is over at now.
	due := func(now time.Time) {
		timer, fire = nil, nil
		for sp, h := range held {
			if now.Before(h.deadline) {
				continue
			}
			if s.goingOn(sp, h.l.endOfTalk, now) {
				h.deadline = now.Add(mergePoll)
				continue
			}
			delete(held, sp)
			s.log.Debug("a name said alone is answered alone: its speaker did not go on", "user", sp,
				"ended", h.l.endOfTalk, "now", now)
			s.take(h.l, true)
		}
		arm()
	}
	for {
		// A held name whose wait is over is answered before any line
		// heard after it: select alone would pick either at random when
		// both are ready (a loaded machine runs this loop late).
		select {
		case now := <-fire:
			due(now)
			continue
		default:
		}
		select {
		case l, ok := <-s.lines:
			if !ok {
				for sp, h := range held {
					delete(held, sp)
					s.take(h.l, true)
				}
				return
			}
			if h, ok := held[l.entry.SpeakerID]; ok {
				delete(held, l.entry.SpeakerID)
				arm()
				l.joined, l.said = h.l.entry, joinWords(h.l.entry.Text, l.entry.Text)
				s.take(l, false)
				continue
			}
			if _, ok := s.addr.Lone(l.entry.Text, s.cfg.Controls.PresentNPCs()); ok && !l.outside {
				// A name said alone waits anyway: for its recording first.
				if !s.waitRecorded(&l) {
					continue
				}
				// The wait runs from when the name is heard (speech-to-text
				// done), so a slow transcription does not eat it.
				until := clk.Now().Add(s.cfg.Settings.MergeWait)
				held[l.entry.SpeakerID] = &heldLine{l: l, deadline: until}
				s.log.Debug("a name said alone waits for the rest", "user", l.entry.SpeakerID, "ended", l.endOfTalk,
					"until", until)
				arm()
				s.report(LineReport{At: l.entry.At, SpeakerID: l.entry.SpeakerID, Speaker: l.entry.SpeakerName, Heard: l.heard,
					Corrected: l.entry.Text, Timing: l.timing, Reason: ReasonHeld, Held: true})
				continue
			}
			s.take(l, false)
		case now := <-fire:
			due(now)
		}
	}
}

// maxMergeHold bounds how long a name said alone waits for the rest of its
// speaker's words once they started speaking again.
const maxMergeHold = 2 * time.Minute

// goingOn reports whether a player who said a name alone, ending at end,
// started speaking again and has not been heard yet: still speaking, or
// their utterance is with speech-to-text (it was not dropped since).
func (s *Session) goingOn(userID string, end, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	started := s.startedAt[userID]
	if !started.After(end) || now.Sub(end) > maxMergeHold {
		return false
	}
	return s.talking[userID] || !s.droppedAt[userID].After(started)
}

// joinWords joins a name said alone and the words that follow it.
func joinWords(name, rest string) string {
	name = strings.TrimSpace(name)
	if name != "" && !setOffByPunct(name) {
		name += ","
	}
	return name + " " + strings.TrimSpace(rest)
}

func setOffByPunct(s string) bool {
	return strings.HasSuffix(s, ",") || strings.HasSuffix(s, "…") || strings.HasSuffix(s, ".") ||
		strings.HasSuffix(s, "?") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "-") || strings.HasSuffix(s, "—")
}

// take routes one line (or a name said alone joined with the next) and
// lets each NPC addressed answer in turn, in the order they were named; the
// floor keeps them from talking over each other. late marks a name said
// alone that is answered alone.
func (s *Session) take(l line, late bool) {
	rep := LineReport{At: l.entry.At, SpeakerID: l.entry.SpeakerID, Speaker: l.entry.SpeakerName, Heard: l.heard,
		Corrected: l.entry.Text, Timing: l.timing, Late: late}
	if l.said != "" {
		rep.Joined = l.joined.Text
	}
	if l.outside {
		// Nobody in the split scene heard it (see present): no NPC
		// answers, the DM's "answers next" waits for a line of the
		// scene, and the addresser does not count it.
		if !s.waitRecorded(&l) {
			return
		}
		rep.Timing.Recorded = l.timing.Recorded
		rep.Reason = ReasonOutsideScene
		s.report(rep)
		return
	}
	d := s.addr.Decide(npc.AddressInput{Text: l.text(), SpeakerID: l.entry.SpeakerID, At: l.entry.At,
		Present: s.cfg.Controls.PresentNPCs(), Directed: s.cfg.Controls.TakeNext()})
	rep.Reason = d.Reason
	if len(d.NPCIDs) == 0 {
		if !s.waitRecorded(&l) {
			return
		}
		rep.Timing.Recorded = l.timing.Recorded
		if d.Reason == npc.ReasonMuted {
			s.cfg.Observer.CountTurn("muted")
		}
		s.report(rep)
		return
	}
	for k, id := range d.NPCIDs {
		r := rep
		r.Addressee, r.More = id, k < len(d.NPCIDs)-1
		s.answer(l, id, &r)
		// The NPC spoke only once the line was recorded; a line whose
		// recording failed is dropped, whatever its turn had begun.
		if !s.waitRecorded(&l) {
			return
		}
		r.Timing.Recorded = l.timing.Recorded
		s.report(r)
	}
}

// maxTurns bounds the turns kept for the status.
const maxTurns = 20

func (s *Session) report(r LineReport) {
	if r.Dropped != "" {
		s.mu.Lock()
		s.droppedAt[r.SpeakerID] = s.cfg.Clock.Now()
		s.mu.Unlock()
	}
	if r.Addressee != "" {
		s.mu.Lock()
		s.turns = append(s.turns, r)
		if len(s.turns) > maxTurns {
			s.turns = slices.Clone(s.turns[len(s.turns)-maxTurns:])
		}
		s.mu.Unlock()
	}
	if s.cfg.OnLine != nil {
		s.cfg.OnLine(r)
	}
}

// answer runs one NPC turn and speaks it.
func (s *Session) answer(l line, npcID string, rep *LineReport) {
	ctx, cancel := context.WithTimeout(s.work, s.cfg.Settings.TurnTimeout)
	defer cancel()
	release, err := s.floor.Acquire(ctx, npcID)
	if err != nil {
		rep.Error = "waiting for the floor: " + err.Error()
		return
	}
	defer release()
	obs := s.cfg.Observer
	s.wit.SaidTo(l.entry.IdempotencyKey, npcID)
	if l.prev != nil {
		// The conversation holds every line said before this one (the
		// recordings run in order; the one before is all but always done).
		l.prev.wait()
	}
	history, digest, said := s.memoryOf(ctx, l.entry, npcID)
	if l.said != "" {
		// The name said alone is part of the turn, not of the history.
		history = slices.DeleteFunc(history, func(m npc.Message) bool {
			return !m.Summary && m.SpeakerID == l.joined.SpeakerID && m.Text == l.joined.Text && m.At.Equal(l.joined.At)
		})
	}
	l.direction = s.cfg.Controls.TakeDirection(npcID)
	cur := &turnState{npcID: npcID}
	s.mu.Lock()
	s.turn = cur
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.turn == cur {
			s.turn = nil
		}
		s.mu.Unlock()
	}()
	if s.s2sEngine(npcID) {
		if l.rec.wait() != nil {
			return // take reports the line dropped
		}
		s.answerS2S(ctx, l, npcID, history, digest, said, rep)
		return
	}
	sentences := make(chan string, 16)
	first := sync.Once{}
	spoken, speakErr := s.speakAsync(ctx, npcID, sentences, func() {
		first.Do(func() {
			rep.Timing.FirstPacket = s.cfg.Clock.Now().Sub(l.detected)
			lat := s.cfg.Clock.Now().Sub(l.endOfTalk)
			obs.ObserveStage(metrics.StageFirstPacket, lat)
			s.mu.Lock()
			if len(s.latencies) < maxLatencySamples {
				s.latencies = append(s.latencies, lat)
			}
			s.mu.Unlock()
		})
	})
	turnStart := s.cfg.Clock.Now()
	// The first sentence is spoken once the line is recorded (it is by
	// then, unless the session log is slower than the LLM); if the
	// recording failed, the turn stops and nothing is said.
	var gate sync.Once
	var recErr error
	var unsaid atomic.Int32
	res, err := s.agent.Turn(ctx, npc.TurnInput{NPCID: npcID, SessionID: s.id, SpeakerID: l.entry.SpeakerID,
		SpeakerName: l.entry.SpeakerName, Text: l.text(), History: history, Live: true, Direction: l.direction,
		Digest: digest, Said: said},
		func(sentence string) {
			gate.Do(func() {
				if recErr = l.rec.wait(); recErr != nil {
					cancel()
				}
			})
			if recErr != nil {
				return
			}
			// The draft's sentence is checked against canon before it is
			// said (Config.CheckSentence): one that contradicts it is not.
			if s.cfg.CheckSentence != nil {
				if why := s.cfg.CheckSentence(npcID, sentence); why != "" {
					unsaid.Add(1)
					s.log.Info("a sentence of the NPC's reply contradicts canon: it is not said", "npc", npcID, "why", why)
					return
				}
			}
			select {
			case sentences <- sentence:
			case <-ctx.Done():
			}
		})
	close(sentences)
	heard := <-spoken
	if err := <-speakErr; err != nil && !errors.Is(err, context.Canceled) {
		s.log.Warn("speaking the reply failed", "npc", npcID, "err", err)
	}
	if recErr != nil {
		return // take reports the line dropped
	}
	for _, m := range res.Messages {
		rep.Context = append(rep.Context, ContextMessage{Role: m.Role, Content: m.Content})
	}
	rep.Tools, rep.Fallback, rep.Degraded = res.Tools, res.Fallback, res.Degraded
	if err != nil {
		rep.Error = err.Error()
		obs.CountTurn("failed")
		if errors.Is(err, npc.ErrNoLLM) {
			s.log.Info("no NPC answers: no LLM is configured and no fallback answered", "npc", npcID)
		} else {
			s.log.Error("NPC turn failed", "npc", npcID, "err", err)
		}
		return
	}
	if res.Timings.ContextReady > 0 {
		rep.Timing.ContextReady = turnStart.Sub(l.detected) + res.Timings.ContextReady
	}
	if res.Timings.FirstToken > 0 {
		rep.Timing.FirstToken = turnStart.Sub(l.detected) + res.Timings.FirstToken
	}
	if sinceEnd := turnStart.Sub(l.endOfTalk); res.Timings.ContextReady > 0 {
		obs.ObserveStage(metrics.StageHotContext, sinceEnd+res.Timings.ContextReady)
		if res.Timings.FirstToken > 0 {
			obs.ObserveStage(metrics.StageLLMFirstToken, sinceEnd+res.Timings.FirstToken)
		}
	}
	outcome := "answered"
	switch {
	case res.Fallback:
		outcome = "fallback"
	case len(heard)+int(unsaid.Load()) < len(res.Sentences):
		outcome = "interrupted"
	}
	s.mu.Lock()
	withdrawn := cur.withdrawn
	s.mu.Unlock()
	if withdrawn {
		outcome = "withdrawn"
	}
	obs.CountTurn(outcome)
	if eo, ok := obs.(engineObserver); ok {
		eo.CountEngineTurn(string(npc.EngineCascaded), outcome)
	}
	rep.Reply = strings.Join(heard, " ")
	if withdrawn {
		// The DM withdrew the reply while it was under way: it is not
		// the NPC's, and the next line is no follow-up to it.
		rep.Withdrawn = true
		return
	}
	s.addr.NoteReply(npcID, l.entry.SpeakerID, s.cfg.Clock.Now())
	if len(heard) == 0 {
		return
	}
	key := fmt.Sprintf("voice:%s:%s:reply:%d", s.id, npcID, l.entry.At.UnixNano())
	if at, err := s.recordNPC(ctx, npcID, rep.Reply, key); err == nil {
		s.noteReply(&replyState{npcID: npcID, key: key, text: rep.Reply, at: at}, l.entry.SpeakerID, s.cfg.Providers.Speaker != nil)
	}
}

// Reply is an NPC reply as recorded, for OnReply.
type Reply struct {
	// ID names the reply for UndoReply.
	ID      string
	NPCID   string
	NPCName string
	Text    string
	// To is the user the NPC answered.
	To string
	// Voiced is false when the reply was posted in the text channel (no
	// voice) rather than spoken.
	Voiced bool
}

// id names a reply: its instant, which no other line of the session shares.
func (r *replyState) id() string { return strconv.FormatInt(r.at.UnixNano(), 36) }

// noteReply makes r the reply Undo withdraws and reports it to OnReply.
func (s *Session) noteReply(r *replyState, to string, voiced bool) {
	s.mu.Lock()
	s.lastReply = r
	s.mu.Unlock()
	if s.cfg.OnReply != nil {
		s.cfg.OnReply(Reply{ID: r.id(), NPCID: r.npcID, NPCName: s.cast.NPCName(r.npcID), Text: r.text, To: to,
			Voiced: voiced})
	}
}

// speakAsync voices sentences as they come. It returns channels that
// deliver the sentences heard and the error once speaking has finished.
func (s *Session) speakAsync(ctx context.Context, npcID string, sentences <-chan string, onFirstFrame func()) (<-chan []string, <-chan error) {
	heardC, errC := make(chan []string, 1), make(chan error, 1)
	speakCtx, stop := context.WithCancel(ctx)
	s.mu.Lock()
	s.speaking = stop
	s.mu.Unlock()
	go func() {
		defer func() {
			stop()
			s.mu.Lock()
			s.speaking = nil
			s.mu.Unlock()
		}()
		if s.cfg.Providers.Speaker == nil {
			// No voice: the reply goes to the text channel.
			var all []string
			for sentence := range sentences {
				all = append(all, sentence)
			}
			if len(all) > 0 && s.cfg.Announce != nil {
				onFirstFrame()
				s.cfg.Announce(fmt.Sprintf("**%s:** %s", s.cast.NPCName(npcID), strings.Join(all, " ")))
			}
			heardC <- all
			errC <- nil
			return
		}
		send := func(frame []byte) error {
			onFirstFrame()
			return s.voice.WriteOpus(frame)
		}
		var v npc.Voice
		if p, ok := s.cast.Persona(npcID); ok {
			v = p.Voice
		}
		heard, err := s.cfg.Providers.Speaker.Speak(speakCtx, v, sentences, send)
		if err := s.voice.SetSpeaking(false); err != nil && !errors.Is(err, conn.ErrClosed) {
			s.log.Debug("ending the speaking state", "err", err)
		}
		// Drain what the turn still produces after an interruption.
		for range sentences {
		}
		heardC <- heard
		errC <- err
	}()
	return heardC, errC
}

// recordNPC records an NPC's line and returns when it was said; the error
// says it is not in the session log (it was logged too). It wraps
// lifecycle/session.ErrReleased when the session was handed over to
// another process (Release): the line is the new owner's to record, and
// this one no longer writes.
func (s *Session) recordNPC(ctx context.Context, npcID, text, key string) (time.Time, error) {
	e := memory.TranscriptEntry{SessionID: s.id, SpeakerID: npcID, SpeakerName: s.cast.NPCName(npcID), NPCID: npcID,
		Text: text, RawText: text, At: s.cfg.Clock.Now().UTC(), IdempotencyKey: key}
	_, written := s.notePresence(e.At, "")
	awaitPresence(ctx, written) // the span the line is in, first
	if err := s.mem.Record(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("recording the NPC's line failed", "npc", npcID, "err", err)
		return time.Time{}, err
	}
	s.wit.Heard(e, s.hearers(e.At))
	return e.At, nil
}

// enter counts a caller from outside the session's goroutines in s.wg
// until it calls s.wg.Done; false once the session is stopping (End,
// Release), when it must not start.
func (s *Session) enter() bool {
	s.entry.mu.Lock()
	defer s.entry.mu.Unlock()
	if s.entry.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// closeEntry refuses every later enter; End and Release call it before they
// wait for s.wg.
func (s *Session) closeEntry() {
	s.entry.mu.Lock()
	s.entry.closed = true
	s.entry.mu.Unlock()
}

// ErrNothingToUndo is returned by Undo when no NPC reply can be withdrawn.
var ErrNothingToUndo = errors.New("no NPC reply to withdraw in this session")

// Undone is what Undo withdrew.
type Undone struct {
	NPCID string
	// Reply is the reply withdrawn; empty when the NPC was still
	// answering (Interrupted): it stopped, and nothing of it is kept.
	Reply       string
	Interrupted bool
	// Marked counts the lines marked non-canon in the session log.
	Marked int64
}

// Undo withdraws the last NPC reply ("that wasn't for you"). An NPC still
// answering stops at once and its reply is not recorded. A reply already
// recorded leaves the live conversation (so no NPC is sent it again; a
// reply already folded into the running summary stays there) and is
// marked non-canon in the session log (so no recall, search or recap
// finds it; the line is kept as it was said); in both cases the next line
// is not taken for a follow-up to that NPC. It returns ErrNothingToUndo
// when there is no reply to withdraw, and an error naming what was not
// done when the session log could not be marked.
func (s *Session) Undo(ctx context.Context) (Undone, error) {
	s.mu.Lock()
	if t := s.turn; t != nil && !t.withdrawn {
		t.withdrawn = true
		stop := s.speaking
		s.mu.Unlock()
		if stop != nil {
			stop()
		}
		s.addr.Withdraw(t.npcID)
		return Undone{NPCID: t.npcID, Interrupted: true}, nil
	}
	r := s.lastReply
	if r == nil || r.withdrawn {
		s.mu.Unlock()
		return Undone{}, ErrNothingToUndo
	}
	return s.withdrawLocked(ctx, r)
}

// ErrNotLastReply is returned by UndoReply for a reply that is no longer
// the NPCs' latest: only the latest can be withdrawn.
var ErrNotLastReply = errors.New("that reply is no longer the latest; only the latest NPC reply can be withdrawn")

// UndoReply withdraws the reply named id (Reply.ID) as Undo does, if it is
// still the latest NPC reply and no NPC is answering now: ErrNothingToUndo
// when it was withdrawn already, ErrNotLastReply when a later reply (or
// one under way) came since.
func (s *Session) UndoReply(ctx context.Context, id string) (Undone, error) {
	s.mu.Lock()
	r := s.lastReply
	switch {
	case r == nil:
		s.mu.Unlock()
		return Undone{}, ErrNothingToUndo
	case r.id() != id || (s.turn != nil && !s.turn.withdrawn):
		s.mu.Unlock()
		return Undone{}, ErrNotLastReply
	case r.withdrawn:
		s.mu.Unlock()
		return Undone{NPCID: r.npcID}, ErrNothingToUndo
	}
	return s.withdrawLocked(ctx, r)
}

// withdrawLocked withdraws reply r; s.mu is held and released.
func (s *Session) withdrawLocked(ctx context.Context, r *replyState) (Undone, error) {
	r.withdrawn = true
	s.mu.Unlock()
	s.addr.Withdraw(r.npcID)
	s.mem.Withdraw(r.key)
	s.wit.Withdraw(r.key)
	u := Undone{NPCID: r.npcID, Reply: r.text}
	// The reply's instant names it in the session log (lines are stored
	// to the microsecond; no other line of the session shares it).
	n, err := s.cfg.Campaign.Sessions().MarkNonCanon(ctx, s.id, r.at, r.at)
	if err != nil {
		return u, fmt.Errorf("the reply left the live conversation, but the session log still holds it as canon: %w", err)
	}
	u.Marked = n
	s.log.Info("the DM withdrew an NPC's reply", "npc", r.npcID, "marked", n)
	return u, nil
}

// Say speaks exact words as an NPC (the DM puppeting it) and records what
// was heard of them. It returns nil only when the line is in the session
// log (or the outage spool, which the session log gets from): a caller
// acknowledges the line on nil and on nothing else. When the session is
// handed over to another process (Release) or ended while the NPC speaks,
// nothing more is recorded here and Say returns an error wrapping
// lifecycle/session.ErrReleased or ErrEnded: the line is not in the session
// log, and the DM is to say it again (in the process that runs the session
// now).
func (s *Session) Say(ctx context.Context, npcID, text string) error {
	if s.capture.Err() != nil || !s.enter() {
		return errors.New("the session is ending")
	}
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Settings.TurnTimeout)
	defer cancel()
	release, err := s.floor.Acquire(ctx, npcID)
	if err != nil {
		return fmt.Errorf("waiting for the NPC speaking now to finish: %w", err)
	}
	defer release()
	var split npc.SentenceSplitter
	parts := append(split.Write(text), split.Flush()...)
	sentences := make(chan string, len(parts))
	for _, p := range parts {
		sentences <- p
	}
	close(sentences)
	spoken, speakErr := s.speakAsync(ctx, npcID, sentences, func() {})
	heard := <-spoken
	if err := <-speakErr; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("speaking as %s: %w", s.cast.NPCName(npcID), err)
	}
	if len(heard) == 0 {
		// Cut before a word was spoken: by a hand-over or an end (an
		// error: the DM must not read that the NPC said it), or by the
		// DM's own undo.
		switch {
		case s.released.Load():
			return fmt.Errorf("%s's line was not spoken or recorded: %w", s.cast.NPCName(npcID), session.ErrReleased)
		case s.ended.Load():
			return fmt.Errorf("%s's line was not spoken or recorded: %w", s.cast.NPCName(npcID), session.ErrEnded)
		}
		return nil
	}
	if _, err := s.recordNPC(ctx, npcID, strings.Join(heard, " "), fmt.Sprintf("voice:%s:%s:say:%d", s.id, npcID, s.cfg.Clock.Now().UnixNano())); err != nil {
		return fmt.Errorf("%s's line is not in the session log: %w", s.cast.NPCName(npcID), err)
	}
	return nil
}

// Forget removes a player's words from the live session: lines on their
// way are dropped, those waiting in the outage spool are taken out of it
// (counted in ForgetReport.Spooled), erase deletes what long-term memory
// holds of them (the caller's access.Campaign.ForgetSpeaker; during an
// outage the erase is queued in the spool and runs when the database is
// back, ForgetReport.Deferred), then the conversation and its
// summaries lose them and the session's chunks are rebuilt at once (see
// lifecycle/session.Session.Forget).
func (s *Session) Forget(ctx context.Context, userID string, erase func(ctx context.Context) error) (memory.ForgetReport, error) {
	// What the NPCs witnessed lives only here: it loses the player first,
	// whatever happens to the database. So do the turns kept for the
	// status (the console's Live page and its feed show their lines).
	s.wit.Forget(userID)
	s.mu.Lock()
	s.turns = slices.DeleteFunc(s.turns, func(r LineReport) bool { return r.SpeakerID == userID })
	delete(s.recorded, userID)
	s.mu.Unlock()
	return s.mem.Forget(ctx, userID, erase)
}

// watch follows the connection and ends the session when its channel has
// been empty too long, when it ran too long, or when the connection ended;
// it also picks up entity changes and opt-outs.
func (s *Session) watch() {
	clk, st := s.cfg.Clock, s.cfg.Settings
	events := s.voice.Events()
	every := min(emptyCheck, st.LeaveWhenEmpty/4)
	check := clk.NewTimer(every)
	refresh := clk.NewTimer(optOutRefresh)
	names := clk.NewTimer(st.NamesEvery)
	defer func() { check.Stop(); refresh.Stop(); names.Stop() }()
	var emptySince time.Time
	end := func(reason string) {
		if s.cfg.OnEnd != nil {
			s.cfg.OnEnd(reason)
		}
	}
	for {
		select {
		case <-s.capture.Done():
			return
		case e, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			switch e.Kind {
			case conn.EventUserLeft:
				s.router.Remove(e.UserID)
			case conn.EventClosed:
				reason := "the voice connection ended"
				if e.Err != nil {
					reason += ": " + e.Err.Error()
				}
				end(reason)
				return
			case conn.EventReconnecting:
				s.log.Warn("voice connection lost; reconnecting", "err", e.Err)
			case conn.EventE2EEEpoch:
				if d, ok := s.cfg.Observer.(daveObserver); ok {
					d.DAVEEpochChanged()
				}
			case conn.EventE2EEFailed:
				s.e2eeFailed(e.Err)
			}
		case <-names.C():
			names = clk.NewTimer(st.NamesEvery)
			if changed, err := s.cast.Refresh(s.capture); err != nil && s.capture.Err() == nil {
				s.log.Warn("reading the campaign's names", "err", err)
			} else if changed {
				s.log.Info("the campaign's names changed; speech-to-text, correction and addressing follow")
			}
		case <-refresh.C():
			refresh = clk.NewTimer(optOutRefresh)
			if err := s.refreshOptOuts(s.capture); err != nil && s.capture.Err() == nil {
				s.log.Warn("reading privacy opt-outs", "err", err)
			}
		case now := <-check.C():
			check = clk.NewTimer(every)
			s.reportHealth()
			if now.Sub(s.start) >= st.MaxLength {
				end(fmt.Sprintf("the session reached its maximum length (%s)", st.MaxLength))
				return
			}
			if len(s.voice.Users()) > 0 {
				emptySince = time.Time{}
				continue
			}
			if emptySince.IsZero() {
				emptySince = now
			}
			if now.Sub(emptySince) >= st.LeaveWhenEmpty {
				end(fmt.Sprintf("the voice channel has been empty for %s", st.LeaveWhenEmpty))
				return
			}
		}
	}
}

// maxE2EERejoins is how many times within e2eeRejoinWindow a session
// rejoins its voice channel after end-to-end encryption failed before it
// leaves it to the DM: a call whose encryption keeps failing is not
// rejoined again and again, while failures hours apart in a long session
// are each rejoined.
const (
	maxE2EERejoins   = 2
	e2eeRejoinWindow = time.Hour
)

// e2eeFailed handles EventE2EEFailed: the DAVE session gave up, so the bot
// can neither hear nor be heard (it never sends audio unencrypted). The
// table rejoins the channel with a new voice and DAVE session, in the
// background; if the connection cannot rejoin, or rejoining failed, or it
// already rejoined maxE2EERejoins times in the last hour, it tells the DM in the text
// channel. It runs on the watch loop.
func (s *Session) e2eeFailed(cause error) {
	s.log.Error("end-to-end encryption with the voice channel failed; rejoining", "err", cause)
	r, ok := s.voice.(rejoiner)
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	recent := s.e2eeRejoins[:0]
	for _, at := range s.e2eeRejoins {
		if now.Sub(at) < e2eeRejoinWindow {
			recent = append(recent, at)
		}
	}
	s.e2eeRejoins = recent
	again := ok && len(recent) < maxE2EERejoins
	if again {
		s.e2eeRejoins = append(s.e2eeRejoins, now)
	}
	s.mu.Unlock()
	if !again {
		why := "this connection cannot rejoin by itself"
		if ok {
			why = fmt.Sprintf("it already rejoined %d times in the last hour", maxE2EERejoins)
		}
		s.tellDM(fmt.Sprintf("End-to-end encryption with the voice channel failed (%v) and %s: the NPCs can neither hear "+
			"nor be heard. %s", cause, why, e2eeAdvice(cause)))
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := r.Rejoin(s.capture); err != nil {
			if s.capture.Err() != nil {
				return // the session is ending
			}
			s.log.Error("rejoining the voice channel after end-to-end encryption failed", "err", err)
			s.tellDM(fmt.Sprintf("End-to-end encryption with the voice channel failed (%v) and rejoining the channel "+
				"failed: %v. The NPCs can neither hear nor be heard. %s", cause, err, e2eeAdvice(cause, err)))
			return
		}
		s.log.Info("rejoined the voice channel after end-to-end encryption failed")
	}()
}

// e2eeAdvice is what the DM can do about an end-to-end encryption failure:
// start the session again, unless the voice channel stopped being
// encrypted and unencrypted audio is refused (dave.RequireE2EE, the
// configuration's voice.require_e2ee), which a new session would meet too.
func e2eeAdvice(errs ...error) string {
	for _, err := range errs {
		if errors.Is(err, dave.ErrE2EERequired) {
			return "The voice channel is not end-to-end encrypted any more and unencrypted audio is refused " +
				"(voice.require_e2ee); end the session, or allow unencrypted voice and start it again."
		}
	}
	return "End the session and start it again."
}

// tellDM posts a message for the DM in the session's text channel (or
// logs it when there is none).
func (s *Session) tellDM(msg string) {
	if s.cfg.Announce == nil {
		s.log.Warn("no text channel to tell the DM", "message", msg)
		return
	}
	s.cfg.Announce(msg)
}

// reportHealth tells the observer whether the session's memory is
// reachable and how much waits locally.
func (s *Session) reportHealth() {
	if o, ok := s.cfg.Observer.(healthObserver); ok {
		o.SetMemoryHealth(s.camp, s.mem.IsDegraded(), s.mem.Pending())
	}
}

// refreshOptOuts re-reads who opted out of recording.
func (s *Session) refreshOptOuts(ctx context.Context) error {
	m, err := s.cfg.Campaign.OptedOut(ctx)
	if err != nil {
		if s.optedOut.Load() == nil {
			return fmt.Errorf("reading privacy opt-outs: %w", err)
		}
		return err
	}
	set := make(map[string]bool, len(m))
	for u := range m {
		set[u] = true
	}
	s.optedOut.Store(&set)
	return nil
}

// Status describes a running session.
type Status struct {
	SessionID string
	StartedAt time.Time
	// Recorded are the user ids and display names of recorded speakers.
	Recorded map[string]string
	// OptedOut are the user ids in the channel who opted out.
	OptedOut []string
	Degraded bool
	// SpoolPending counts writes kept locally until the database is back.
	SpoolPending int
	// LostPackets counts packets the voice transport reported lost (each
	// concealed by the lanes).
	LostPackets uint64
	// TurnLatencyP50/P95 of the NPC turns so far.
	TurnLatencyP50, TurnLatencyP95 time.Duration
	// Speaking are the user ids speaking now.
	Speaking []string
	// Turns are the latest NPC turns (up to 20), newest first.
	Turns []LineReport
}

// Status describes the session now.
func (s *Session) Status() Status {
	st := Status{SessionID: s.id, StartedAt: s.start, Recorded: map[string]string{}}
	s.mu.Lock()
	for id, n := range s.recorded {
		st.Recorded[id] = n
	}
	lat := slices.Clone(s.latencies)
	st.LostPackets = s.lost
	for u := range s.talking {
		st.Speaking = append(st.Speaking, u)
	}
	for i := len(s.turns) - 1; i >= 0; i-- {
		st.Turns = append(st.Turns, s.turns[i])
	}
	s.mu.Unlock()
	sort.Strings(st.Speaking)
	opted := *s.optedOut.Load()
	for _, u := range s.voice.Users() {
		if opted[u] {
			st.OptedOut = append(st.OptedOut, u)
		}
	}
	st.Degraded, st.SpoolPending = s.mem.IsDegraded(), s.mem.Pending()
	if len(lat) > 0 {
		slices.Sort(lat)
		st.TurnLatencyP50 = lat[len(lat)*50/100]
		st.TurnLatencyP95 = lat[min(len(lat)-1, len(lat)*95/100)]
	}
	return st
}
