// Package realtime is the speech-to-speech (S2S) engine: a client of the
// OpenAI Realtime API over WebSocket, for NPCs whose persona says
// engine: s2s. The model hears the addressed player and speaks the answer
// itself; the bot keeps the memory (instructions carry the NPC's hot
// context, refreshed per turn; the NPC's tools are the model's function
// calls) and the session log (the model's transcripts of both sides come
// back as events).
//
// # A turn
//
//	s, err := realtime.Dial(ctx, realtime.Config{APIKey: key, Model: m, Voice: v,
//		Instructions: prompt, Tools: tools, Runner: runner, Budget: budget})
//	s.UpdateInstructions(ctx, hotContext) // before each turn
//	s.Hear(ctx, pcm48k)                   // each 20 ms frame of the addressed player
//	s.EndOfTurn(ctx)                      // the pipeline's endpointer decided
//	for ev := range s.Events() { ... }    // EventAudio (48 kHz), transcripts, tool calls
//	s.Interrupt(ctx, played)              // barge-in: cancel and truncate at what was heard
//
// # Protocol
//
// Client events: session.update (instructions, voice, tools, audio formats,
// input transcription, turn_detection null so the client commits turns),
// input_audio_buffer.append / .commit / .clear, response.create,
// response.cancel, conversation.item.truncate (audio_end_ms at what the
// players heard) and conversation.item.create (function_call_output).
//
// Server events read, under their GA names and the beta names where those
// differ: session.created/updated, error,
// conversation.item.input_audio_transcription.completed/.failed,
// response.created, response.output_item.added,
// response.output_audio.delta (beta response.audio.delta),
// response.output_audio.done, response.output_audio_transcript.delta/.done
// (beta response.audio_transcript.*), response.output_text.* (beta
// response.text.*), response.function_call_arguments.done, response.done,
// rate_limits.updated and input_audio_buffer.speech_started. Others are
// ignored.
//
// A function call is run by the [ToolRunner] on its own goroutine; its
// output goes back as a function_call_output item, and once the response
// that made the calls is done and every call is answered, a new
// response.create lets the model answer with the results. A turn may make
// [Config.MaxToolCalls] calls; later ones are answered with an error that
// tells the model to answer now.
//
// # Audio
//
// The API's PCM is 16-bit mono at 24 kHz; Discord's is 48 kHz. Both ways
// go through [audio.Resampler], a polyphase windowed-sinc filter (≥ 80 dB
// against aliasing, 1.3 ms of delay).
//
// # Cost and safety
//
// A [Budget] caps the audio minutes (heard plus spoken) of one session or,
// shared, of every session of a game; when it runs out the session closes
// with [ErrAudioLimit]. A session with no audio either way for
// [Config.IdleTimeout] closes with [ErrIdle]. Server errors and malformed
// events are reported as [EventError] and the session goes on (audio or
// words for an answer after its response.done, as after a barge-in, and
// a duplicate response.done are dropped and reported once, and so are an item's words past 64 KiB); [Metrics]
// receives audio minutes, first-audio latency, responses, tool calls,
// errors, rate limits and closes.
//
// The package realtimetest is a fake Realtime server on loopback that
// speaks the same protocol, for tests.
package realtime
