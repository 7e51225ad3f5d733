package tts

import (
	"context"
	"fmt"

	"github.com/glyphoxa/glyphoxa/voice/audio"
)

// Sink takes a stretch of a sentence's speech as it arrives, at rate Hz;
// it may keep samples. An error from it ends the synthesis with that error.
type Sink func(rate int, samples []int16) error

// Streamer is a Synthesizer that hands a sentence's speech over as it
// arrives, so that playback can start before the provider has sent the
// whole sentence. The HTTP providers are Streamers: OpenAI's and
// ElevenLabs' speech endpoints send raw PCM as they make it.
type Streamer interface {
	Synthesizer
	// SynthesizeStream synthesises one sentence, calling sink with each
	// stretch of samples in order, all at one rate, and returns once the
	// sentence is complete (nil) or has failed. Samples may have reached
	// sink before a failure.
	SynthesizeStream(ctx context.Context, text string, v Voice, sink Sink) error
}

// collect gathers a streamed sentence into one PCM: Synthesize of a
// Streamer.
func collect(stream func(Sink) error) (audio.PCM, error) {
	var pcm audio.PCM
	err := stream(func(rate int, s []int16) error {
		if pcm.Rate == 0 {
			pcm.Rate = rate
		} else if rate != pcm.Rate {
			return fmt.Errorf("the rate changed from %d to %d Hz within a sentence", pcm.Rate, rate)
		}
		pcm.Samples = append(pcm.Samples, s...)
		return nil
	})
	if err != nil {
		return audio.PCM{}, err
	}
	return pcm, nil
}
