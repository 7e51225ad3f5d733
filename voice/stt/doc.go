// Package stt turns utterances into text behind one interface,
// [Recognizer], carrying each word's confidence through (correction of
// campaign names depends on it).
//
// Providers:
//   - [Deepgram]: streaming over WebSocket (interim and final results,
//     endpointing and utterance-end events) with nova-3 keyterm boosting,
//     falling back to the batch endpoint when the stream cannot be opened.
//     A stream can be opened ahead of its utterance, kept alive
//     ([DeepgramStream.KeepAlive]) and given the whole utterance later
//     ([Deepgram.TranscribeStream]).
//   - [OpenAI]: any OpenAI-compatible /v1/audio/transcriptions endpoint
//     (OpenAI, self-hosted Whisper servers), with the campaign's names in
//     the prompt and a guard against Whisper's hallucinations on silence.
//   - [OpenAIRealtime]: an OpenAI-compatible Realtime API transcription
//     session (/v1/realtime?intent=transcription) for streaming: audio
//     appended as it is spoken, transcript deltas as interim results, the
//     committed item's transcript as the final one; whole utterances go to
//     [OpenAI].
//   - [Sphinx]: offline pocketsphinx through pocketsphinx_continuous, with
//     the campaign's names added to its dictionary and language model; a
//     fallback for running without keys, far less accurate than the others.
//
// Keyword boosting takes the campaign's terms as a plain []string in
// [Hints] (or a [Keyterms] source for a [Transcriber]); whatever builds the
// list (the knowledge graph) stays outside.
//
// A [StreamRecognizer] also transcribes while the player speaks: its
// [Stream] takes audio as it comes and gives the final transcript soon
// after the end; [DeepgramStream] and [RealtimeStream] also deliver
// interim results (Results) while the audio arrives.
//
// A [Transcriber] connects the lanes of package voice/audio to a
// recogniser: each finished utterance is transcribed in the background and
// reported as [Heard], with speaker, start and end time and raw text, or
// with the provider's error.
//
// Provider failures (timeouts, HTTP errors, malformed answers) come back as
// [*provider.Error] naming the provider and the failing step; a caller's
// lane keeps running and simply has no text for that utterance. A stream
// whose provider sends more than an utterance can need (one message over
// [MaxMessage], or more than [MaxText] of transcript) fails at once with
// [ErrTooLarge], so a broken or hostile peer's flood is neither held in
// memory nor waited out; one whose provider stops reading the audio fails
// its write after the provider's time-out instead of blocking.
package stt
