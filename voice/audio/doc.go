// Package audio turns each speaker's Opus packets into utterances.
//
// A [Router] keeps one [Lane] per Discord user id. A lane puts the speaker's
// packets back in order, decodes them straight to 16 kHz mono (the rate
// speech-to-text wants), conceals lost packets (Opus packet-loss
// concealment, with in-band FEC when the next packet carries it), treats
// Discord's three-byte silence frames and gaps in the RTP clock as silence,
// and runs a voice activity detector and an endpointer over the result.
//
// # Voice activity
//
// The detector ([VAD]) looks at 20 ms frames. A frame is voiced when it is
// louder than the tracked noise floor and periodic at a speaking pitch
// (normalised autocorrelation between 70 and 400 Hz): steady background
// noise raises the floor instead of opening the gate, and keyboard clicks,
// being short and aperiodic, never make the run of voiced frames that opens
// an utterance.
//
// # End of turn
//
// An utterance opens after a short run of voiced frames and closes when the
// speaker has been silent for [Config.Endpoint] (600 ms by default), or is
// cut at [Config.MaxUtterance]. Silence is measured in media time from the
// packets, and from the wall clock when packets stop coming (Discord stops
// sending while a user is silent), so a turn ends even when nothing more
// arrives. Each lane is independent: players talking over each other give
// separate utterances.
//
// # Timing
//
// Start and end times are wall-clock times derived from the RTP timestamps,
// anchored at the arrival time of the lane's first packet, so they are
// immune to network jitter and stay comparable across speakers.
package audio
