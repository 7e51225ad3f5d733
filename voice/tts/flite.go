package tts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// fliteVoices are the voices built into Debian's flite 2.2.
var fliteVoices = []string{"slt", "awb", "rms", "kal16", "kal"}

// FliteVoices returns the voices built into Debian's flite 2.2. flite
// falls back to kal, silently, for a name it does not know, so [Flite]
// refuses other names.
func FliteVoices() []string { return slices.Clone(fliteVoices) }

// Flite synthesises with flite, festival's small run-time engine
// (Debian: flite).
type Flite struct {
	// Path is flite's path (flite on $PATH when empty).
	Path string
}

var _ Synthesizer = Flite{}

// Synthesize runs flite for text; the voice name is one of FliteVoices
// ("slt" when empty).
func (f Flite) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return audio.PCM{}, ErrNoText
	}
	name := v.Name
	if name == "" {
		name = "slt"
	}
	if !slices.Contains(fliteVoices, name) {
		return audio.PCM{}, &provider.Error{Provider: "flite", Op: "choose voice",
			Err: fmt.Errorf("%w: %q is not one of flite's voices %v", ErrBadVoice, name, fliteVoices)}
	}
	path := f.Path
	if path == "" {
		path = "flite"
	}
	tmp, err := os.CreateTemp("", "glyphoxa-flite-*.wav")
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "flite", Op: "create output", Err: err}
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	args := []string{"-voice", name, "-o", tmp.Name()}
	if v.Speed > 0 {
		args = append(args, "--setf", "duration_stretch="+strconv.FormatFloat(1/v.Speed, 'f', 3, 64))
	}
	// -t takes the next argument as text, whatever it looks like.
	args = append(args, "-t", text)
	cmd := exec.CommandContext(ctx, path, args...)
	var errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &errOut, &errOut
	if err := cmd.Run(); err != nil {
		return audio.PCM{}, &provider.Error{Provider: "flite", Op: "run", Body: snippet(errOut.Bytes()), Err: err}
	}
	b, err := os.ReadFile(tmp.Name())
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "flite", Op: "read output", Err: err}
	}
	pcm, err := audio.DecodeWAV(b)
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "flite", Op: "decode output", Body: snippet(errOut.Bytes()), Err: err}
	}
	if len(pcm.Samples) == 0 {
		return audio.PCM{}, &provider.Error{Provider: "flite", Op: "run", Body: snippet(errOut.Bytes()), Err: ErrNoText}
	}
	return pcm, nil
}
