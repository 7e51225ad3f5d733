// Package playback plays NPC speech into a voice connection.
//
// A [Player] takes sentences as the language model writes them,
// synthesises each with a [tts.Synthesizer] while the previous one plays
// (a [tts.Streamer]'s speech plays as it arrives), resamples to 48 kHz
// stereo and encodes 20 ms Opus frames a frame at a time as they are sent
// (the first frame waits for no more than itself and the input samples its
// resampling reads), and
// paces them on a 20 ms clock. Frame n of a stretch of speech is due at start + n×20 ms, so
// a late timer never accumulates into drift; after the speech come five
// silence frames, as Discord expects.
//
// Barge-in: [Player.Interrupt] (or [Player.OnSpeech] with a lane's
// SpeechHeld event, which comes once a player has talked for 250 ms) stops
// playback at the next frame boundary. The [Result] tells which sentences
// were heard to the end; only those count as said.
package playback
