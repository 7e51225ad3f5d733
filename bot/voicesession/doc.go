// Package voicesession runs the voice side of a game session.
//
// A [Manager] implements the bot's session control: /session start joins
// the DM's voice channel, and from then on every player's speech flows
// through one pipeline per session:
//
//	Opus packets ─▶ audio lanes (decode, VAD, end of turn, one per speaker)
//	  ─▶ speech-to-text ─▶ name correction ─▶ session log (L1)
//	  ─▶ who is addressed? ─▶ NPC turn (hot context, LLM, tools)
//	  ─▶ sentence-by-sentence speech ─▶ Opus packets back into the channel
//
// Players who opted out are neither transcribed nor stored: their packets
// are dropped before decoding. A player speaking over an NPC for long
// enough interrupts it, and only the sentences actually heard are recorded
// as said. The session ends by itself when its channel has had no human in
// it for a while, or after a maximum length, so a forgotten session never
// records for hours.
//
// Every collaborator is an interface declared here, so the same pipeline
// runs with cloud providers, offline engines, or local fakes in tests.
package voicesession
