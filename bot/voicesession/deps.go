package voicesession

import (
	"context"
	"time"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/npc"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/conn"
)

// Voice is a joined voice channel (a *conn.Conn).
type Voice interface {
	// Packets delivers each speaker's Opus frames; it is closed when the
	// connection ends.
	Packets() <-chan conn.Packet
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

// Link joins and leaves voice channels through the main gateway.
type Link interface {
	Join(ctx context.Context, guildID, channelID string) (Voice, error)
	Leave(guildID string) error
}

// Word is one recognised word. Confidence is 0..1, or negative when the
// engine gives none.
type Word struct {
	Text       string
	Confidence float64
}

// Transcript is what speech-to-text heard in one utterance.
type Transcript struct {
	Text  string
	Words []Word
}

// Transcriber turns an utterance (16 kHz mono) into text. hints are the
// campaign's proper nouns, most relevant first, for keyword boosting.
type Transcriber interface {
	Transcribe(ctx context.Context, pcm audio.PCM, hints []string) (Transcript, error)
}

// Corrector restores the names speech-to-text misheard. When part of it
// fails (a late LLM pass, say) it returns its best text with the error.
type Corrector interface {
	Correct(ctx context.Context, t Transcript) (string, error)
}

// Responder answers as an NPC (an *npc.Agent).
type Responder interface {
	Turn(ctx context.Context, in npc.TurnInput, onSentence func(string)) (npc.TurnResult, error)
}

// Speaker gives an NPC a voice: it synthesises each sentence as it arrives
// on sentences and sends it as 20 ms Opus frames with send, paced in real
// time, until sentences is closed. When ctx is cancelled (a player
// interrupted) it stops at a frame boundary. It returns the sentences that
// were played to the end.
type Speaker interface {
	Speak(ctx context.Context, voice npc.Voice, sentences <-chan string, send func(opus []byte) error) (heard []string, err error)
}

// Recorder writes a session's lines to the session log (L1), exactly
// once each, and flushes on Close.
type Recorder interface {
	Record(ctx context.Context, e memory.TranscriptEntry) error
	Close(ctx context.Context) error
}

// Health is an optional capability of a Recorder that keeps the session
// running while the database is unreachable.
type Health interface {
	IsDegraded() bool
	// SpoolPending is the number of lines waiting to be written.
	SpoolPending() int
}

// Table is what a session needs of its campaign.
type Table struct {
	// Correct restores misheard names; nil keeps the words as heard.
	Correct Corrector
	// Names finds NPC and player-character names in corrected text.
	Names npc.NameFinder
	// IsNPC tells NPC entities from player characters.
	IsNPC func(entityID string) bool
	// NPCName is an NPC's display name.
	NPCName func(npcID string) string
	// Voice is an NPC's voice.
	Voice func(npcID string) npc.Voice
	// Hints are the proper nouns to boost in speech-to-text.
	Hints []string
	// Agent answers as the NPCs; nil records without answering.
	Agent Responder
}

// Observer receives the session's measurements (a *metrics.Metrics).
// Stages are those of package bot/metrics.
type Observer interface {
	ObserveStage(stage string, sinceEndOfSpeech time.Duration)
	CountTurn(outcome string)
	SessionStarted()
	SessionEnded()
}

// An Observer may also take memory health and DAVE epoch changes.
type (
	healthObserver interface {
		SetMemoryHealth(campaign string, degraded bool, pending int)
	}
	daveObserver interface{ DAVEEpochChanged() }
)

// prefetcher is an optional capability of a Responder: it starts
// assembling an NPC's context before the player's words are known.
type prefetcher interface {
	Prefetch(ctx context.Context, npcID, sessionID string)
}
