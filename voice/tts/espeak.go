package tts

import (
	"bytes"
	"context"
	"os/exec"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// Espeak synthesises with the espeak-ng program.
type Espeak struct {
	// Path is the program (espeak-ng on $PATH when empty).
	Path string
}

var _ Synthesizer = Espeak{}

// Synthesize runs espeak-ng for text; the voice name defaults to en-us.
func (e Espeak) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return audio.PCM{}, ErrNoText
	}
	path := e.Path
	if path == "" {
		path = "espeak-ng"
	}
	name := v.Name
	if name == "" {
		name = "en-us"
	}
	args := []string{"--stdout", "-v", name}
	if v.Speed > 0 {
		args = append(args, "-s", strconv.Itoa(int(175*v.Speed)))
	}
	if v.Pitch > 0 {
		args = append(args, "-p", strconv.Itoa(min(v.Pitch, 99)))
	}
	// Text on stdin: nothing in it can be taken for an option.
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(text)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return audio.PCM{}, &provider.Error{Provider: "espeak-ng", Op: "run", Body: snippet(errOut.Bytes()), Err: err}
	}
	pcm, err := audio.DecodeWAV(out.Bytes())
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "espeak-ng", Op: "decode output", Body: snippet(errOut.Bytes()), Err: err}
	}
	if len(pcm.Samples) == 0 {
		return audio.PCM{}, &provider.Error{Provider: "espeak-ng", Op: "run", Body: snippet(errOut.Bytes()), Err: ErrNoText}
	}
	return pcm, nil
}
