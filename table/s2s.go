package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/internal/clock"
	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/internal/metrics"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/playback"
	"github.com/glyphoxa/glyphoxa/voice/realtime"
)

// Realtime configures the speech-to-speech engine (voice/realtime) of the
// NPCs whose persona asks for it (engine: s2s): the model hears the
// addressed player and speaks the answer itself, with the NPC's hot
// context as its instructions and the NPC's tools as its functions.
// Without it, such NPCs answer through the cascaded engine.
type Realtime struct {
	// URL, APIKey and Protocol reach the Realtime API.
	URL, APIKey string
	Protocol    realtime.Protocol
	// Model and Voice are the defaults; a persona's s2s.model and
	// s2s.voice override them.
	Model, Voice string
	// MaxAudio bounds the audio (heard plus spoken) of all the
	// speech-to-speech NPCs of one table session together (0: no bound);
	// past it they answer through the cascaded engine.
	MaxAudio time.Duration
	// IdleTimeout closes an NPC's model session after this long without
	// audio (realtime's default when zero); it is opened again when the NPC
	// is next addressed.
	IdleTimeout time.Duration
	// ToolTimeout bounds one function call of the model (realtime's
	// default when zero).
	ToolTimeout time.Duration
	// Pace paces the answer's frames (default the system clock).
	Pace clock.Clock
}

// s2sAgent is what the speech-to-speech engine needs of the NPC agent.
type s2sAgent interface {
	Prepare(ctx context.Context, in npc.TurnInput) (npc.Prepared, error)
	Tools() []llm.Tool
	ToolSet(p npc.Prepared, sessionID string) *npc.ToolSet
}

// s2sNPC is one NPC's model session.
type s2sNPC struct {
	sess  *realtime.Session
	tools atomic.Pointer[npc.ToolSet] // the tools of the turn under way
}

// RunTool runs the model's function calls with the NPC's permissions.
func (n *s2sNPC) RunTool(ctx context.Context, name string, args json.RawMessage) (string, error) {
	t := n.tools.Load()
	if t == nil {
		return "", errors.New("no turn is under way")
	}
	use := t.Call(ctx, name, string(args))
	if use.Error != "" {
		return "", errors.New(use.Error)
	}
	return use.Result, nil
}

// s2sEngine wants speech-to-speech for an NPC, with a provider to do it.
func (s *Session) s2sEngine(npcID string) bool {
	p, ok := s.cast.Persona(npcID)
	if !ok || p.Engine.Effective() != npc.EngineS2S {
		return false
	}
	if s.cfg.Providers.Realtime == nil {
		s.warnOnce.Do(func() {
			s.log.Warn("an NPC's persona asks for the speech-to-speech engine, but no realtime provider is configured; it answers through the cascaded engine",
				"npc", npcID)
		})
		return false
	}
	s.mu.Lock()
	spent := s.s2sBudget != nil && s.cfg.Providers.Realtime.MaxAudio > 0 && s.s2sBudget.Remaining() <= 0
	s.mu.Unlock()
	if spent {
		s.log.Info("the session's speech-to-speech minutes are spent; the NPC answers through the cascaded engine", "npc", npcID)
		return false
	}
	_, ok = s.agent.(s2sAgent)
	return ok
}

// s2sSession returns the NPC's model session, dialling it when it has none
// (or its last one closed).
func (s *Session) s2sSession(ctx context.Context, npcID string, p npc.Persona, instructions string, tools []llm.Tool) (*s2sNPC, error) {
	s.mu.Lock()
	n := s.s2s[npcID]
	s.mu.Unlock()
	if n != nil {
		select {
		case <-n.sess.Done():
			n = nil
		default:
			return n, nil
		}
	}
	rt := s.cfg.Providers.Realtime
	n = &s2sNPC{}
	s.mu.Lock()
	if s.s2sBudget == nil {
		s.s2sBudget = realtime.NewBudget(rt.MaxAudio)
	}
	budget := s.s2sBudget
	s.mu.Unlock()
	cfg := realtime.Config{URL: rt.URL, APIKey: rt.APIKey, Protocol: rt.Protocol, Model: rt.Model, Voice: rt.Voice,
		Instructions: instructions, Runner: n, IdleTimeout: rt.IdleTimeout, ToolTimeout: rt.ToolTimeout, Budget: budget, Logger: s.log}
	if p.S2S.Model != "" {
		cfg.Model = p.S2S.Model
	}
	if p.S2S.Voice != "" {
		cfg.Voice = p.S2S.Voice
	}
	for _, t := range tools {
		if t.Function == nil {
			continue
		}
		params, _ := t.Function.Parameters.(map[string]any)
		cfg.Tools = append(cfg.Tools, realtime.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: params})
	}
	sess, err := realtime.Dial(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening %s's speech-to-speech session: %w", p.Name, err)
	}
	n.sess = sess
	s.mu.Lock()
	if s.s2s == nil {
		s.s2s = map[string]*s2sNPC{}
	}
	s.s2s[npcID] = n
	s.mu.Unlock()
	return n, nil
}

// instructions renders a prepared turn for a speech-to-speech model: the
// NPC's system prompt, its notes (hot context), then the conversation so
// far as text (the model hears the line being answered itself).
func instructions(msgs []llm.Message) string {
	if len(msgs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(msgs[0].Content)
	var said []llm.Message
	if len(msgs) > 2 {
		said = msgs[1 : len(msgs)-1]
	}
	if len(said) > 0 && strings.HasPrefix(said[0].Content, npc.KnowledgeTitle) {
		// The NPC's notes (its hot context), before the conversation.
		fmt.Fprintf(&b, "\n%s\n", said[0].Content)
		said = said[1:]
	}
	if len(said) > 0 {
		b.WriteString("\nThe conversation so far (you hear the next line yourself):\n")
		for _, m := range said {
			switch m.Role {
			case llm.RoleAssistant:
				fmt.Fprintf(&b, "You: %s\n", m.Content)
			default:
				fmt.Fprintf(&b, "%s\n", m.Content)
			}
		}
	}
	return b.String()
}

// answerS2S lets a speech-to-speech model hear the line and answer it.
func (s *Session) answerS2S(ctx context.Context, l line, npcID string, history []npc.Message, digest string, said []npc.Message,
	rep *LineReport) {
	ag := s.agent.(s2sAgent)
	obs := s.cfg.Observer
	eo, _ := obs.(engineObserver)
	count := func(outcome string) {
		obs.CountTurn(outcome)
		if eo != nil {
			eo.CountEngineTurn(string(npc.EngineS2S), outcome)
		}
	}
	in := npc.TurnInput{NPCID: npcID, SessionID: s.id, SpeakerID: l.entry.SpeakerID, SpeakerName: l.entry.SpeakerName,
		Text: l.text(), History: history, Live: true, Direction: l.direction, Digest: digest, Said: said}
	prep, err := ag.Prepare(ctx, in)
	if err != nil {
		rep.Error = err.Error()
		count("failed")
		s.logTurnFailed(ctx, npcID, err)
		return
	}
	rep.Degraded = prep.Degraded
	for _, m := range prep.Messages {
		rep.Context = append(rep.Context, ContextMessage{Role: m.Role, Content: m.Content})
	}
	instr := instructions(prep.Messages)
	n, err := s.s2sSession(ctx, npcID, prep.Persona, instr, ag.Tools())
	if err == nil {
		// What an interrupted answer still sent is not this turn's.
		for drained := false; !drained; {
			select {
			case <-n.sess.Events():
			default:
				drained = true
			}
		}
		n.tools.Store(ag.ToolSet(prep, s.id))
		err = n.sess.UpdateInstructions(ctx, instr)
	}
	if err == nil {
		err = n.sess.Hear(ctx, audio.Resample(l.audio, playback.SampleRate).Samples)
	}
	if err == nil {
		err = n.sess.EndOfTurn(ctx)
	}
	if err != nil {
		rep.Error = err.Error()
		count("failed")
		s.logTurnFailed(ctx, npcID, err)
		return
	}
	rep.Timing.ContextReady = s.cfg.Clock.Now().Sub(l.detected)
	text, calls, err := s.speakS2S(ctx, npcID, n, l, rep)
	rep.Tools = calls
	if err != nil && !errors.Is(err, context.Canceled) {
		rep.Error = err.Error()
		count("failed")
		s.logTurnFailed(ctx, npcID, err)
		return
	}
	// The model's transcript of its own speech gets the names back as any
	// line does (phonetic pass, and the LLM pass when configured: the
	// players have heard it already, so it costs them no time).
	if text != "" {
		if res, err := s.cast.Pipeline().CorrectHeard(ctx, correction.Utterance{Text: text}); err != nil {
			s.log.Warn("name correction of the model's transcript failed in part", "err", err)
		} else if c := strings.TrimSpace(res.Text); c != "" {
			text = c
		}
	}
	rep.Reply = text
	count("answered")
	if eo != nil {
		s.mu.Lock()
		used := s.s2sBudget.Used()
		spent := used - s.s2sBilled
		s.s2sBilled = used
		s.mu.Unlock()
		eo.AddS2SAudio(spent)
	}
	s.mu.Lock()
	withdrawn := s.turn != nil && s.turn.withdrawn
	s.mu.Unlock()
	if withdrawn {
		rep.Withdrawn = true
		return
	}
	s.addr.NoteReply(npcID, l.entry.SpeakerID, s.cfg.Clock.Now())
	if text != "" {
		key := fmt.Sprintf("voice:%s:%s:reply:%d", s.id, npcID, l.entry.At.UnixNano())
		if at, err := s.recordNPC(ctx, npcID, text, key); err == nil {
			s.noteReply(&replyState{npcID: npcID, key: key, text: text, at: at}, l.entry.SpeakerID, true)
		}
	}
}

// speakS2S plays the model's answer as it streams and returns what the
// players heard of it. A player talking over it interrupts the model,
// which truncates its answer at what was played.
func (s *Session) speakS2S(ctx context.Context, npcID string, n *s2sNPC, l line, rep *LineReport) (string, []npc.ToolUse, error) {
	enc, err := playback.NewEncoder(64000)
	if err != nil {
		return "", nil, err
	}
	pace := clock.OrReal(s.cfg.Providers.Realtime.Pace)
	speakCtx, stop := context.WithCancel(ctx)
	defer stop()
	var once sync.Once
	s.mu.Lock()
	s.speaking = stop
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.speaking = nil
		s.mu.Unlock()
	}()
	var pending []int16
	played := 0 // samples sent
	var calls []npc.ToolUse
	next := pace.Now()
	send := func(frame []int16) error {
		if d := next.Sub(pace.Now()); d > 0 {
			t := pace.NewTimer(d)
			select {
			case <-t.C():
			case <-speakCtx.Done():
				t.Stop()
				return speakCtx.Err()
			}
		}
		op, err := enc.Frame(frame)
		if err != nil {
			return err
		}
		once.Do(func() {
			rep.Timing.FirstPacket = s.cfg.Clock.Now().Sub(l.detected)
			s.cfg.Observer.ObserveStage(metrics.StageFirstPacket, s.cfg.Clock.Now().Sub(l.endOfTalk))
		})
		if err := s.voice.WriteOpus(op); err != nil {
			return err
		}
		played += len(frame)
		next = next.Add(playback.FrameDuration)
		return nil
	}
	// interrupt truncates the answer at what was played: a player talked
	// over it, or it ran out of the turn's time (said in the log: the
	// players heard it stop mid-sentence).
	interrupt := func() (string, []npc.ToolUse, error) {
		heard := time.Duration(played) * time.Second / playback.SampleRate
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			s.log.Warn(turnTimeoutMsg, "npc", npcID, "engine", "s2s", "turn_timeout", s.cfg.Settings.TurnTimeout,
				"played", heard)
		}
		cut, err := n.sess.Interrupt(context.WithoutCancel(ctx), heard)
		if err != nil {
			return "", calls, err
		}
		return cut.Heard, calls, nil
	}
	for {
		select {
		case <-speakCtx.Done():
			return interrupt()
		case ev, ok := <-n.sess.Events():
			if !ok {
				return "", calls, fmt.Errorf("the speech-to-speech session closed: %w", n.sess.Err())
			}
			switch ev.Kind {
			case realtime.EventAudio:
				pending = append(pending, ev.Audio...)
				for len(pending) >= playback.FrameSamples {
					if err := send(pending[:playback.FrameSamples]); err != nil {
						if speakCtx.Err() != nil {
							// Cut while waiting to send the next frame,
							// where a paced answer spends most of its
							// time: a player talked over it, or the turn's
							// time ran out.
							return interrupt()
						}
						return "", calls, err
					}
					pending = pending[playback.FrameSamples:]
				}
			case realtime.EventToolCall:
				if ev.Tool != nil {
					use := npc.ToolUse{Name: ev.Tool.Name, Args: string(ev.Tool.Args), Result: ev.Tool.Output}
					if ev.Tool.Err != nil {
						use.Error = ev.Tool.Err.Error()
					}
					calls = append(calls, use)
				}
			case realtime.EventNPCTranscript:
				if len(pending) > 0 {
					if err := send(pending); err != nil {
						if speakCtx.Err() != nil {
							return interrupt()
						}
						return "", calls, err
					}
				}
				if err := s.voice.SetSpeaking(false); err != nil {
					s.log.Debug("ending the speaking state", "err", err)
				}
				return strings.TrimSpace(ev.Text), calls, nil
			case realtime.EventError:
				s.log.Warn("the speech-to-speech model reported an error", "err", ev.Err)
			}
		}
	}
}

// turnTimeoutMsg is the log message of a turn cut by Settings.TurnTimeout.
const turnTimeoutMsg = "an NPC's turn ran out of its time and was cut"

// logTurnFailed logs a speech-to-speech turn that failed before the model
// spoke, saying so when the turn's time (Settings.TurnTimeout) ran out.
func (s *Session) logTurnFailed(ctx context.Context, npcID string, err error) {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.log.Error(turnTimeoutMsg, "npc", npcID, "engine", "s2s", "turn_timeout", s.cfg.Settings.TurnTimeout,
			"played", time.Duration(0), "err", err)
		return
	}
	s.log.Error("NPC turn failed", "npc", npcID, "engine", "s2s", "err", err)
}

// closeS2S closes the NPCs' model sessions.
func (s *Session) closeS2S() error {
	s.mu.Lock()
	ns := s.s2s
	s.s2s = nil
	s.mu.Unlock()
	var errs []error
	for _, n := range ns {
		if err := n.sess.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
