package table

import (
	"context"
	"time"

	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// Voice is a joined voice channel: a *conn.Conn on Discord, the scene
// player's transport in the demo and the benchmarks.
type Voice interface {
	// Packets delivers each speaker's Opus frames; it is closed when the
	// connection ends.
	Packets() <-chan audio.Packet
	// Events reports users joining and leaving, reconnects and the end.
	Events() <-chan conn.Event
	// WriteOpus sends one 20 ms Opus frame now.
	WriteOpus(frame []byte) error
	// SetSpeaking(false) ends a stream of frames.
	SetSpeaking(on bool) error
	// Users are the user ids in the channel besides the bot.
	Users() []string
	Close() error
}

// Transcriber turns an utterance (16 kHz mono) into text, boosting the
// hinted names (an stt.Recognizer).
type Transcriber interface {
	Transcribe(ctx context.Context, pcm audio.PCM, h stt.Hints) (stt.Transcript, error)
}

// Responder answers as an NPC (an *npc.Agent).
type Responder interface {
	Turn(ctx context.Context, in npc.TurnInput, onSentence func(string)) (npc.TurnResult, error)
}

// Speaker gives an NPC a voice: it synthesises each sentence as it arrives
// on sentences and sends it as 20 ms Opus frames with send, paced in real
// time, until sentences is closed. When ctx is cancelled (a player
// interrupted) it stops at a frame boundary. It returns the sentences that
// were played to the end. [Voices] is the product's.
type Speaker interface {
	Speak(ctx context.Context, voice npc.Voice, sentences <-chan string, send func(opus []byte) error) (heard []string, err error)
}

// Controls are the DM's live controls of a session (a *live.Controls).
type Controls interface {
	// PresentNPCs are the NPCs in the scene; empty means every NPC may be
	// addressed.
	PresentNPCs() []string
	// TakeNext returns, once, the NPC the DM said answers the next line.
	TakeNext() string
	// Muted reports whether an NPC is muted.
	Muted(npcID string) bool
	// TakeDirection returns the DM's standing instruction for the reply
	// an NPC is about to make ("" for none), and counts the reply.
	TakeDirection(npcID string) string
}

// Observer receives the session's measurements (a *metrics.Metrics).
// Stages are those of package internal/metrics.
type Observer interface {
	ObserveStage(stage string, sinceEndOfSpeech time.Duration)
	CountTurn(outcome string)
	SessionStarted()
	SessionEnded()
}

// An Observer may also take memory health, DAVE epoch changes, voice
// packets dropped by the per-speaker rate limit and damaged spool records.
// (LLM tokens are counted where the LLM client is built:
// internal/llm.Config.OnUsage.)
type (
	healthObserver interface {
		SetMemoryHealth(campaign string, degraded bool, pending int)
	}
	daveObserver interface{ DAVEEpochChanged() }
	dropObserver interface{ VoicePacketDropped(reason string) }
	// rejoiner is a Voice that can start a new voice session (and DAVE
	// session) in its channel, as *conn.Conn does.
	rejoiner interface {
		Rejoin(ctx context.Context) error
	}
	spoolObserver  interface{ SpoolQuarantined(campaign string) }
	engineObserver interface {
		CountEngineTurn(engine, outcome string)
		AddS2SAudio(d time.Duration)
	}
)

// prefetcher is an optional capability of a Responder: it starts
// assembling an NPC's context before the player's words are known.
type prefetcher interface {
	Prefetch(ctx context.Context, npcID, sessionID string)
}

type nopObserver struct{}

func (nopObserver) ObserveStage(string, time.Duration) {}
func (nopObserver) CountTurn(string)                   {}
func (nopObserver) SessionStarted()                    {}
func (nopObserver) SessionEnded()                      {}

type noControls struct{}

func (noControls) PresentNPCs() []string { return nil }
func (noControls) TakeNext() string      { return "" }
func (noControls) Muted(string) bool     { return false }

func (noControls) TakeDirection(string) string { return "" }
