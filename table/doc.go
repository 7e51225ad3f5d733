// Package table runs a game table's voice session: the one turn loop that
// `glyphoxa serve` (through bot/voicesession), `glyphoxa demo` and
// `make bench-voice` all run.
//
//	Opus packets ─▶ lanes (decode, VAD, end of turn, one per speaker)
//	  ─▶ speech-to-text, boosted with the campaign's names
//	  ─▶ name correction ─▶ session log (L1), beside the NPC's turn
//	  ─▶ who is addressed? ─▶ the NPC's turn (hot context, the
//	     conversation, LLM or fallback, tools)
//	  ─▶ sentence-by-sentence speech ─▶ Opus packets back
//
// [Open] starts a [Session] on a joined voice channel ([Voice]) with the
// table's [Providers] and [Settings]; [Session.End] stops it and starts
// post-session processing, [Session.Finish] waits for it. [Session.Release]
// stops it without ending it, for another process that took the guild over
// (lifecycle/lease) and goes on with the same session.
//
// # Live memory
//
// Every line, a player's or an NPC's, is written to the session log as it
// is said, through the memory guard (lifecycle/session): spooled on disk
// while PostgreSQL is unreachable and replayed when it is back. A player's
// line is recorded beside its NPC's turn (one line at a time, in order),
// and the NPC speaks only once the line is recorded; a line that cannot be
// recorded is dropped unanswered. The
// consolidator indexes the session's chunks every few seconds, saves the
// running summary and, with an LLM, extracts facts as the session goes, so
// that what was said five minutes ago is known now: to the NPCs' hot
// context and tools, to /memory search, to MCP agents.
//
// Each NPC remembers the session as it witnessed it (lifecycle/witness,
// in the process's memory): the lines said to it (by name or as a
// follow-up), the lines said while it was in the scene (the DM's scene at
// the time of the line; every NPC when none is set, none while the DM has
// split the party without putting NPCs in the scene) and its own. An NPC is
// sent its digest of what it witnessed (npc.TurnInput.Digest), the earlier
// lines it heard from others that bear on what it was asked
// (npc.TurnInput.Said, never its own replies), then the lines of the last
// Settings.RecentWindow measured from now that it witnessed, within
// Settings.HistoryTokens, each labelled with its speaker (other NPCs by
// name; only its own lines as its own; the session's DM (Config.IsDM) as
// "DM"; a player by display name, marked "(player)" in the line itself
// when it is an NPC's name or a name of the game master's such as "DM" or
// "Narrator": [Cast.PlayerLabel]). Recaps take only the DM's lines for
// narration, so a player cannot narrate by nickname.
// Its hot context (memory/hotctx)
// holds what it knows through its persona's knowledge scope. During a
// database outage it answers from its persona, what it witnessed and the
// conversation.
//
// # Names
//
// A [Cast] keeps the campaign's names: the correction pipeline that
// restores misheard names and finds them (one name finder for correction,
// addressing and salience), the NPCs' personas, and the speech-to-text
// keyword lists, ranked by salience (the NPCs in the scene, the entities
// named in the last minutes, then the rest) within each provider's budget.
// It re-reads the entities when they change (Settings.NamesEvery), so an
// NPC the DM adds mid-session is boosted, corrected and addressable within
// seconds.
//
// # Listening while the player speaks
//
// With Providers.STTStreaming and a recogniser that can stream (Deepgram's
// live WebSocket, an OpenAI-compatible Realtime API transcription session),
// each utterance is streamed to speech-to-text as the lane decodes it: a
// stream opens at the utterance's first audio and finishes when the lane
// closes it, so the final transcript comes a short flush after the end of
// speech instead of a whole transcription later. Partial transcripts go
// through the phonetic name correction and the addresser while the player
// speaks; when they name an NPC, its hot context starts being assembled
// (once per NPC and utterance, Timing.Addressed), so the answer starts
// sooner. Only the final transcript is recorded, corrected and answered.
// A stream that cannot be opened or fails leaves the utterance to the
// recogniser's batch endpoint: it is never lost. Without STTStreaming, a
// recogniser whose whole-utterance transcription itself streams (Deepgram)
// has its stream opened at the utterance's first audio all the same, kept
// alive, and given the whole utterance once the lane closes it: no audio
// leaves before the end, but the end of speech waits for no connection
// (the keyword hints are those of the utterance's start). `make bench-voice`
// (BenchmarkListen) measures end of speech → first NPC audio both ways.
//
// # Reports
//
// Every line ends in a [LineReport] (Config.OnLine): what was heard and
// recorded, who answered and why, the exact messages the NPC's LLM got, its
// tools, its reply and the stage timings. The demo prints them, the tests
// read them, the DM console's live page shows the latest.
package table
