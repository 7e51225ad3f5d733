package tts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// Festival voices Debian packages for US English.
const (
	// FestivalSLT is festvox-us-slt-hts: a female US English HTS voice,
	// 32 kHz; of the local voices, the one speech-to-text hears best.
	FestivalSLT = "cmu_us_slt_arctic_hts"
	// FestivalKAL is festvox-kallpc16k: a male US English diphone voice.
	FestivalKAL = "kal_diphone"
	// FestivalKED is festvox-kdlpc16k: another male US English diphone
	// voice.
	FestivalKED = "ked_diphone"
)

// DefaultFestivalVoices is where Debian installs festival's voices.
const DefaultFestivalVoices = "/usr/share/festival/voices"

// voiceName is what a festival or flite voice name may look like: it is
// put into a Scheme expression, so nothing else is accepted.
var voiceName = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)

// Festival synthesises with the festival speech synthesis system's
// text2wave program (Debian: festival and a festvox-* voice).
type Festival struct {
	// Path is text2wave's path (text2wave on $PATH when empty).
	Path string
}

var _ Synthesizer = Festival{}

// Synthesize runs text2wave for text; the voice name is a festival voice
// (FestivalSLT when empty). Speed stretches or shortens durations.
func (f Festival) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return audio.PCM{}, ErrNoText
	}
	name := v.Name
	if name == "" {
		name = FestivalSLT
	}
	if !voiceName.MatchString(name) {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "choose voice", Err: fmt.Errorf("%w: %q is not a festival voice name", ErrBadVoice, name)}
	}
	path := f.Path
	if path == "" {
		path = "text2wave"
	}
	args := []string{"-eval", "(voice_" + name + ")"}
	if v.Speed > 0 {
		// Duration_Stretch > 1 is slower speech.
		args = append(args, "-eval", "(Parameter.set 'Duration_Stretch "+strconv.FormatFloat(1/v.Speed, 'f', 3, 64)+")")
	}
	// Text on stdin, read as text (never as Scheme); WAV on stdout.
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Stdin = strings.NewReader(text)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "run", Body: snippet(errOut.Bytes()), Err: err}
	}
	if out.Len() == 0 {
		// An unknown voice is an error festival reports on stderr only.
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "voice " + name, Body: snippet(errOut.Bytes()), Err: ErrBadVoice}
	}
	pcm, err := audio.DecodeWAV(out.Bytes())
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "decode output", Body: snippet(errOut.Bytes()), Err: err}
	}
	if len(pcm.Samples) == 0 {
		return audio.PCM{}, &provider.Error{Provider: "festival", Op: "run", Body: snippet(errOut.Bytes()), Err: ErrNoText}
	}
	return pcm, nil
}
