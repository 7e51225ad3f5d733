package voicesession

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/metrics"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

const (
	// historyLen is how many lines of the conversation an NPC turn sees
	// besides its hot context.
	historyLen = 30
	// optOutRefresh is how often the session re-reads who opted out.
	optOutRefresh = 5 * time.Second
	// emptyCheck is how often the session looks for humans in its channel.
	emptyCheck = 5 * time.Second
	// maxLatencySamples bounds the reply latencies kept for /session status.
	maxLatencySamples = 1000
)

// line is a recorded player utterance on its way to the NPCs.
type line struct {
	entry     memory.TranscriptEntry
	endOfTalk time.Time
}

// session is one guild's running voice session.
type session struct {
	m     *Manager
	req   bot.StartRequest
	camp  *postgres.Campaign
	id    string
	start time.Time
	table Table
	rec   Recorder
	voice Voice
	log   *slog.Logger

	router *audio.Router
	addr   *npc.Addresser
	floor  npc.Floor

	capture context.Context // packets and utterances; cancelled first on stop
	stopCap context.CancelFunc
	work    context.Context // transcription and turns; cancelled last
	stopAll context.CancelFunc
	wg      sync.WaitGroup

	queue   chan audio.Utterance // utterances waiting for speech-to-text
	lines   chan line            // recorded lines waiting for the NPCs
	stopped sync.Once
	stopErr error

	optedOut atomic.Pointer[map[string]bool]

	mu        sync.Mutex
	recorded  map[string]string // user id → name of recorded speakers
	history   []npc.Message
	latencies []time.Duration
	speaking  context.CancelFunc // interrupts the NPC speaking now
	speakerID string             // whom the NPC speaking now answers
}

// sessionID names a session after its start time.
func sessionID(t time.Time) string { return t.UTC().Format("2006-01-02T1504") }

func (m *Manager) open(ctx context.Context, req bot.StartRequest) (*session, error) {
	camp, err := m.cfg.Store.Campaign(ctx, req.Campaign)
	if err != nil {
		return nil, fmt.Errorf("opening campaign %q: %w", req.Campaign, err)
	}
	table, err := m.cfg.Table(ctx, camp)
	if err != nil {
		return nil, fmt.Errorf("preparing campaign %q: %w", req.Campaign, err)
	}
	if table.Names == nil || table.IsNPC == nil {
		return nil, fmt.Errorf("preparing campaign %q: the table has no name finder", req.Campaign)
	}
	now := m.clk.Now()
	s := &session{m: m, req: req, camp: camp, id: sessionID(now), start: now, table: table,
		log: m.log.With("guild", req.GuildID, "campaign", camp.ID()), recorded: map[string]string{},
		queue: make(chan audio.Utterance, 256), lines: make(chan line, 64)}
	s.log = s.log.With("session", s.id)
	muted := func(string) bool { return false }
	if req.Controls != nil {
		muted = req.Controls.Muted
	}
	s.addr = npc.NewAddresser(table.Names, table.IsNPC, muted, 0)
	if err := s.refreshOptOuts(ctx); err != nil {
		return nil, err
	}
	if err := camp.Sessions().StartSession(ctx, s.id, now); err != nil {
		return nil, fmt.Errorf("recording the session start: %w", err)
	}
	if s.rec, err = m.cfg.Recorder(ctx, camp, s.id); err != nil {
		s.abandon(ctx)
		return nil, fmt.Errorf("opening the session log: %w", err)
	}
	acfg := m.cfg.Audio
	acfg.Logger = s.log
	acfg.OnUtterance = s.onUtterance
	acfg.OnEvent = s.onSpeech
	if s.router, err = audio.NewRouter(acfg); err != nil {
		s.abandon(ctx)
		return nil, err
	}
	if s.voice, err = m.cfg.Link.Join(ctx, req.GuildID, req.VoiceChannelID); err != nil {
		s.abandon(ctx)
		return nil, fmt.Errorf("joining the voice channel: %w", err)
	}
	s.work, s.stopAll = context.WithCancel(context.WithoutCancel(ctx))
	s.capture, s.stopCap = context.WithCancel(s.work)

	packets := make(chan audio.Packet, 64)
	s.wg.Add(5)
	go func() { defer s.wg.Done(); s.pump(packets) }()
	go func() {
		defer s.wg.Done()
		defer close(s.queue)
		if err := s.router.Run(s.capture, packets, m.cfg.Clock); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("audio lanes stopped", "err", err)
		}
	}()
	go func() { defer s.wg.Done(); defer close(s.lines); s.transcribeLoop() }()
	go func() { defer s.wg.Done(); s.turnLoop() }()
	go func() { defer s.wg.Done(); s.watch() }()
	m.cfg.Observer.SessionStarted()
	s.log.Info("voice session started", "channel", req.VoiceChannelID)
	return s, nil
}

// abandon undoes a start that failed half-way: the session is marked
// ended and its log writer released.
func (s *session) abandon(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	if s.rec != nil {
		if err := s.rec.Close(ctx); err != nil {
			s.log.Warn("closing the session log of a failed start", "err", err)
		}
		if s.m.cfg.AfterSession != nil {
			s.m.bg.Add(1)
			go func() {
				defer s.m.bg.Done()
				if err := s.m.cfg.AfterSession(s.m.ctx, s.camp.ID(), s.id); err != nil {
					s.log.Warn("releasing a failed session", "err", err)
				}
			}()
		}
	}
	if err := s.camp.Sessions().EndSession(ctx, s.id, s.m.clk.Now()); err != nil {
		s.log.Warn("marking a failed session ended", "err", err)
	}
}

// stop ends the session: no new audio is taken, utterances already spoken
// are transcribed and recorded, the log is flushed and the channel left.
func (s *session) stop(ctx context.Context) error {
	s.stopped.Do(func() {
		s.stopCap()
		s.interrupt()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.stopAll()
			<-done
		}
		s.stopAll()
		var errs []error
		if err := s.rec.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("flushing the session log: %w", err))
		}
		if err := s.camp.Sessions().EndSession(ctx, s.id, s.m.clk.Now()); err != nil {
			errs = append(errs, fmt.Errorf("recording the session end: %w", err))
		}
		if err := s.m.cfg.Link.Leave(s.req.GuildID); err != nil {
			errs = append(errs, fmt.Errorf("leaving the voice channel: %w", err))
		}
		if err := s.voice.Close(); err != nil && !errors.Is(err, conn.ErrClosed) {
			errs = append(errs, fmt.Errorf("closing the voice connection: %w", err))
		}
		s.m.cfg.Observer.SessionEnded()
		s.stopErr = errors.Join(errs...)
		s.log.Info("voice session ended", "err", s.stopErr)
	})
	return s.stopErr
}

// pump hands packets of players who did not opt out to the audio lanes.
func (s *session) pump(out chan<- audio.Packet) {
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
			ap := audio.Packet{UserID: p.UserID, SSRC: p.SSRC, Sequence: p.Sequence, Timestamp: p.Timestamp,
				Opus: p.Opus, Received: s.m.clk.Now()}
			select {
			case out <- ap:
			case <-s.capture.Done():
				return
			}
		}
	}
}

// onUtterance queues a finished utterance; it runs on the router's
// goroutine and never blocks it for long.
func (s *session) onUtterance(u audio.Utterance) {
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
		}
	}
}

// onSpeech interrupts the NPC speaking now when a player talks over it
// for long enough, and, when a player stops speaking, starts assembling the
// context of the NPC likely to answer while speech-to-text runs.
func (s *session) onSpeech(e audio.Event) {
	if e.Kind == audio.SpeechEnded {
		s.prefetch()
		return
	}
	if e.Kind != audio.SpeechHeld {
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

func (s *session) prefetch() {
	p, ok := s.table.Agent.(prefetcher)
	if !ok {
		return
	}
	var present []string
	if s.req.Controls != nil {
		present = s.req.Controls.Scene().Present
	}
	if id := s.addr.Likely(present, s.m.clk.Now()); id != "" {
		p.Prefetch(s.work, id, s.id)
	}
}

func (s *session) interrupt() {
	s.mu.Lock()
	stop := s.speaking
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// transcribeLoop turns utterances into recorded lines, in the order they
// were spoken.
func (s *session) transcribeLoop() {
	for u := range s.queue {
		if (*s.optedOut.Load())[u.UserID] {
			continue
		}
		l, ok := s.transcribe(u)
		if !ok {
			continue
		}
		select {
		case s.lines <- l:
		case <-s.capture.Done():
			// Ending: the line is recorded; no NPC answers it.
		}
	}
}

func (s *session) transcribe(u audio.Utterance) (line, bool) {
	ctx, cancel := context.WithTimeout(s.work, DefaultTranscribeTimeout)
	defer cancel()
	obs := s.m.cfg.Observer
	t, err := s.m.cfg.STT.Transcribe(ctx, u.Audio, s.table.Hints)
	if err != nil {
		s.log.Error("speech-to-text failed; the utterance is not recorded", "user", u.UserID,
			"start", u.Start, "duration", u.Duration(), "err", err)
		return line{}, false
	}
	obs.ObserveStage(metrics.StageSTTFinal, s.m.clk.Now().Sub(u.End))
	raw := strings.TrimSpace(t.Text)
	if raw == "" {
		return line{}, false
	}
	text := raw
	if s.table.Correct != nil {
		c, err := s.table.Correct.Correct(ctx, t)
		if err != nil {
			s.log.Warn("name correction failed in part", "err", err)
		}
		if strings.TrimSpace(c) != "" {
			text = c
		}
	}
	obs.ObserveStage(metrics.StageCorrection, s.m.clk.Now().Sub(u.End))
	name := s.m.cfg.UserName(s.req.GuildID, u.UserID)
	e := memory.TranscriptEntry{SessionID: s.id, SpeakerID: u.UserID, SpeakerName: name, Text: text, RawText: raw,
		At: u.Start.UTC(), Duration: u.Duration(),
		IdempotencyKey: fmt.Sprintf("voice:%s:%s:%d", s.id, u.UserID, u.Start.UnixNano())}
	if err := s.rec.Record(ctx, e); err != nil {
		s.log.Error("recording a line failed", "user", u.UserID, "err", err)
		return line{}, false
	}
	s.mu.Lock()
	s.recorded[u.UserID] = name
	s.remember(npc.Message{Role: openai.ChatMessageRoleUser, Speaker: name, Text: text})
	s.mu.Unlock()
	return line{entry: e, endOfTalk: u.End}, true
}

// remember appends to the conversation history; s.mu is held.
func (s *session) remember(m npc.Message) {
	s.history = append(s.history, m)
	if len(s.history) > historyLen {
		s.history = slices.Clone(s.history[len(s.history)-historyLen:])
	}
}

// turnLoop lets the addressed NPC answer each line.
func (s *session) turnLoop() {
	for l := range s.lines {
		if s.table.Agent == nil {
			continue
		}
		var present []string
		directed := ""
		if s.req.Controls != nil {
			present = s.req.Controls.Scene().Present
			directed = s.req.Controls.TakeNext()
		}
		d := s.addr.Decide(npc.AddressInput{Text: l.entry.Text, SpeakerID: l.entry.SpeakerID, At: l.entry.At,
			Present: present, Directed: directed})
		if d.NPCID == "" {
			if d.Reason == npc.ReasonMuted {
				s.m.cfg.Observer.CountTurn("muted")
			}
			continue
		}
		s.answer(l, d.NPCID)
	}
}

// answer runs one NPC turn and speaks it.
func (s *session) answer(l line, npcID string) {
	ctx, cancel := context.WithTimeout(s.work, DefaultTurnTimeout)
	defer cancel()
	release, err := s.floor.Acquire(ctx, npcID)
	if err != nil {
		return
	}
	defer release()
	obs := s.m.cfg.Observer
	s.mu.Lock()
	history := slices.Clone(s.history)
	s.mu.Unlock()
	if n := len(history); n > 0 && history[n-1].Text == l.entry.Text {
		history = history[:n-1] // the line itself is the turn's input
	}
	sentences := make(chan string, 16)
	first := sync.Once{}
	spoken, speakErr := s.speakAsync(ctx, npcID, l.entry.SpeakerID, sentences, func() {
		first.Do(func() {
			lat := s.m.clk.Now().Sub(l.endOfTalk)
			obs.ObserveStage(metrics.StageFirstPacket, lat)
			s.mu.Lock()
			if len(s.latencies) < maxLatencySamples {
				s.latencies = append(s.latencies, lat)
			}
			s.mu.Unlock()
		})
	})
	turnStart := s.m.clk.Now()
	res, err := s.table.Agent.Turn(ctx, npc.TurnInput{NPCID: npcID, SessionID: s.id, SpeakerID: l.entry.SpeakerID,
		SpeakerName: l.entry.SpeakerName, Text: l.entry.Text, History: history}, func(sentence string) {
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
	if err != nil {
		obs.CountTurn("failed")
		s.log.Error("NPC turn failed", "npc", npcID, "err", err)
		return
	}
	if sinceEnd := turnStart.Sub(l.endOfTalk); res.Timings.ContextReady > 0 {
		obs.ObserveStage(metrics.StageHotContext, sinceEnd+res.Timings.ContextReady)
		obs.ObserveStage(metrics.StageLLMFirstToken, sinceEnd+res.Timings.FirstToken)
	}
	outcome := "answered"
	if len(heard) < len(res.Sentences) {
		outcome = "interrupted"
	}
	obs.CountTurn(outcome)
	s.addr.NoteReply(npcID, l.entry.SpeakerID, s.m.clk.Now())
	if len(heard) == 0 {
		return
	}
	s.recordNPC(ctx, npcID, strings.Join(heard, " "), fmt.Sprintf("voice:%s:%s:reply:%d", s.id, npcID, l.entry.At.UnixNano()))
}

// speakAsync voices sentences as they come. It returns channels that
// deliver the sentences heard and the error once speaking has finished.
func (s *session) speakAsync(ctx context.Context, npcID, answering string, sentences <-chan string, onFirstFrame func()) (<-chan []string, <-chan error) {
	heardC, errC := make(chan []string, 1), make(chan error, 1)
	speakCtx, stop := context.WithCancel(ctx)
	s.mu.Lock()
	s.speaking, s.speakerID = stop, answering
	s.mu.Unlock()
	go func() {
		defer func() {
			stop()
			s.mu.Lock()
			s.speaking, s.speakerID = nil, ""
			s.mu.Unlock()
		}()
		if s.m.cfg.Speaker == nil {
			// No voice: the reply goes to the text channel.
			var all []string
			for sentence := range sentences {
				all = append(all, sentence)
			}
			if len(all) > 0 && s.req.Announce != nil {
				onFirstFrame()
				s.req.Announce(fmt.Sprintf("**%s:** %s", s.npcName(npcID), strings.Join(all, " ")))
			}
			heardC <- all
			errC <- nil
			return
		}
		send := func(frame []byte) error {
			onFirstFrame()
			return s.voice.WriteOpus(frame)
		}
		heard, err := s.m.cfg.Speaker.Speak(speakCtx, s.voiceOf(npcID), sentences, send)
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

func (s *session) npcName(id string) string {
	if s.table.NPCName != nil {
		if n := s.table.NPCName(id); n != "" {
			return n
		}
	}
	return id
}

func (s *session) voiceOf(id string) npc.Voice {
	if s.table.Voice != nil {
		return s.table.Voice(id)
	}
	return npc.Voice{}
}

func (s *session) recordNPC(ctx context.Context, npcID, text, key string) {
	name := s.npcName(npcID)
	e := memory.TranscriptEntry{SessionID: s.id, SpeakerID: npcID, SpeakerName: name, NPCID: npcID, Text: text, RawText: text,
		At: s.m.clk.Now().UTC(), IdempotencyKey: key}
	if err := s.rec.Record(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("recording the NPC's line failed", "npc", npcID, "err", err)
		return
	}
	s.mu.Lock()
	s.remember(npc.Message{Role: openai.ChatMessageRoleAssistant, Text: text})
	s.mu.Unlock()
}

// say speaks exact words as an NPC (the DM puppeting it).
func (s *session) say(ctx context.Context, npcID, text string) error {
	if s.capture.Err() != nil {
		return errors.New("the session is ending")
	}
	ctx, cancel := context.WithTimeout(ctx, DefaultTurnTimeout)
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
	spoken, speakErr := s.speakAsync(ctx, npcID, "", sentences, func() {})
	heard := <-spoken
	if err := <-speakErr; err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("speaking as %s: %w", s.npcName(npcID), err)
	}
	if len(heard) > 0 {
		s.recordNPC(ctx, npcID, strings.Join(heard, " "), fmt.Sprintf("voice:%s:%s:say:%d", s.id, npcID, s.m.clk.Now().UnixNano()))
	}
	return nil
}

// watch follows the connection and ends the session when its channel has
// been empty too long, when it ran too long, or when the connection ended.
func (s *session) watch() {
	events := s.voice.Events()
	every := min(emptyCheck, s.m.cfg.LeaveWhenEmpty/4)
	check := s.m.clk.NewTimer(every)
	refresh := s.m.clk.NewTimer(optOutRefresh)
	defer func() { check.Stop(); refresh.Stop() }()
	var emptySince time.Time
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
				s.m.endLater(s.req.GuildID, reason)
				return
			case conn.EventReconnecting:
				s.log.Warn("voice connection lost; reconnecting", "err", e.Err)
			case conn.EventE2EEEpoch:
				if d, ok := s.m.cfg.Observer.(daveObserver); ok {
					d.DAVEEpochChanged()
				}
			}
		case <-refresh.C():
			refresh = s.m.clk.NewTimer(optOutRefresh)
			if err := s.refreshOptOuts(s.capture); err != nil && s.capture.Err() == nil {
				s.log.Warn("reading privacy opt-outs", "err", err)
			}
		case now := <-check.C():
			check = s.m.clk.NewTimer(every)
			s.reportHealth()
			if now.Sub(s.start) >= s.m.cfg.MaxLength {
				s.m.endLater(s.req.GuildID, fmt.Sprintf("the session reached its maximum length (%s)", s.m.cfg.MaxLength))
				return
			}
			if len(s.voice.Users()) > 0 {
				emptySince = time.Time{}
				continue
			}
			if emptySince.IsZero() {
				emptySince = now
			}
			if now.Sub(emptySince) >= s.m.cfg.LeaveWhenEmpty {
				s.m.endLater(s.req.GuildID, fmt.Sprintf("the voice channel has been empty for %s", s.m.cfg.LeaveWhenEmpty))
				return
			}
		}
	}
}

// reportHealth tells the observer whether the session's memory is
// reachable and how much waits locally.
func (s *session) reportHealth() {
	h, ok := s.rec.(Health)
	o, ok2 := s.m.cfg.Observer.(healthObserver)
	if ok && ok2 {
		o.SetMemoryHealth(s.camp.ID(), h.IsDegraded(), h.SpoolPending())
	}
}

// refreshOptOuts re-reads who opted out of recording.
func (s *session) refreshOptOuts(ctx context.Context) error {
	m, err := s.camp.OptedOut(ctx)
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

func (s *session) status() bot.SessionStatus {
	st := bot.SessionStatus{SessionID: s.id, StartedAt: s.start}
	s.mu.Lock()
	for _, n := range s.recorded {
		st.Recorded = append(st.Recorded, n)
	}
	lat := slices.Clone(s.latencies)
	s.mu.Unlock()
	sort.Strings(st.Recorded)
	opted := *s.optedOut.Load()
	for _, u := range s.voice.Users() {
		if opted[u] {
			st.OptedOut = append(st.OptedOut, s.m.cfg.UserName(s.req.GuildID, u))
		}
	}
	if s.req.Controls != nil {
		for _, id := range s.req.Controls.Scene().Present {
			st.NPCsPresent = append(st.NPCsPresent, s.npcName(id))
		}
	}
	if h, ok := s.rec.(Health); ok {
		st.Degraded, st.SpoolPending = h.IsDegraded(), h.SpoolPending()
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		st.TurnLatencyP50 = lat[len(lat)*50/100]
		st.TurnLatencyP95 = lat[min(len(lat)-1, len(lat)*95/100)]
	}
	return st
}
