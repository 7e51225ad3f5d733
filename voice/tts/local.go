package tts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// Offline engines, as [Local] names them.
const (
	EngineFestival = "festival"
	EngineFlite    = "flite"
	EngineEspeak   = "espeak"
)

// LocalVoice is one installed offline voice, named "engine:voice" (e.g.
// "festival:cmu_us_slt_arctic_hts", "flite:awb", "espeak:en-us+m3").
type LocalVoice struct {
	Engine string
	Name   string
	// Label says what it sounds like ("female, US English, HTS").
	Label string
	// SentenceTime is how long it took to synthesise one NPC sentence
	// (BenchmarkLocalVoices), the engine running.
	SentenceTime time.Duration
	// StartTime is what a first sentence takes longer when the engine is
	// not running (festival's start, BenchmarkFestivalStart); 0 for the
	// engines that run once a sentence.
	StartTime time.Duration
}

// Voice is the [Voice] that selects it through [Local].
func (v LocalVoice) Voice() Voice { return Voice{Name: v.Engine + ":" + v.Name} }

// rankedVoices lists the offline voices best understood first: by how
// well pocketsphinx, with the sample campaign's vocabulary, understood them
// on the demo's scene and the campaign's sentences after Opus and the voice
// path (TestLocalVoicesIntelligibility), with how long one NPC sentence
// takes to synthesise, festival already running (BenchmarkLocalVoices,
// medians of 3 runs), November 2026, 2 cores:
//
//	voice                  names  word errors  one sentence
//	festival kal_diphone   18/18  18.2%        0.07 s
//	flite rms              17/18  15.5%        0.12 s
//	festival slt (HTS)     15/18  19.1%        0.16 s
//	festival ked_diphone   17/18  22.7%        0.06 s
//	flite slt              16/18  20.9%        0.11 s
//	flite kal16            15/18  18.2%        0.03 s
//	flite awb              15/18  21.8%        0.11 s
//	espeak-ng en-us        11/18  46.4%        0.03 s
//	espeak-ng en-us+m7      9/18  51.8%        0.03 s
//	espeak-ng en-gb+f3      6/18  62.7%        0.03 s
//
// Festival and flite are within a name or two of one another; espeak-ng is
// far behind and stays the last fallback. The female HTS voice comes third
// so that the first three voices (three players, say) are distinct: two men
// and a woman. Festival's first sentence, when it is not running (the
// process's first, or after DefaultFestivalIdle without one), also starts
// it: 1.6 s for kal_diphone, 1.8 s for the HTS voice
// (BenchmarkFestivalStart). [Local.Best], the voice of an NPC without one
// of its own, is the best understood of the voices quick from the first
// sentence: flite's rms, one name behind festival's kal_diphone and fewer
// word errors, without festival's start or its 330 MB.
var rankedVoices = []LocalVoice{
	{EngineFestival, FestivalKAL, "male, US English, diphone", 70 * time.Millisecond, 1520 * time.Millisecond},
	{EngineFlite, "rms", "male, US English", 120 * time.Millisecond, 0},
	{EngineFestival, FestivalSLT, "female, US English, HTS", 160 * time.Millisecond, 1610 * time.Millisecond},
	{EngineFestival, FestivalKED, "male, US English, diphone", 60 * time.Millisecond, 1520 * time.Millisecond},
	{EngineFlite, "slt", "female, US English", 110 * time.Millisecond, 0},
	{EngineFlite, "kal16", "male, US English", 30 * time.Millisecond, 0},
	{EngineFlite, "awb", "male, Scottish English", 110 * time.Millisecond, 0},
	{EngineEspeak, "en-us", "male, US English, formant", 30 * time.Millisecond, 0},
	{EngineEspeak, "en-us+m7", "male, US English, formant", 30 * time.Millisecond, 0},
	{EngineEspeak, "en-gb+f3", "female, British English, formant", 30 * time.Millisecond, 0},
}

// QuickVoice is the longest a voice may take to synthesise one sentence
// for [Local.Best] to choose it: an NPC's first words wait for it.
const QuickVoice = 300 * time.Millisecond

// LocalConfig says where [NewLocal] looks for engines. The zero value looks
// on $PATH and in Debian's directories.
type LocalConfig struct {
	// LookPath finds a program (exec.LookPath when nil).
	LookPath func(string) (string, error)
	// FestivalVoices is festival's voice directory (DefaultFestivalVoices
	// when empty); a festival voice counts as installed when a directory of
	// its name is under it.
	FestivalVoices string
	// Logger receives a warning when an engine fails and espeak-ng speaks
	// instead (default slog.Default()).
	Logger *slog.Logger
}

// Local synthesises with the best offline engine installed. A voice name
// "engine:voice" picks an engine and its voice; a bare name is a festival
// or flite voice if one of them has it, otherwise an espeak-ng voice (so
// personas written for espeak-ng keep their voices); an empty name is the
// best voice installed. A voice no engine has is an error ([ErrBadVoice]);
// when an engine fails to run, espeak-ng speaks the sentence instead, with
// a warning: a reply is never lost to a broken installation. It is safe
// for concurrent use.
type Local struct {
	voices         []LocalVoice // installed, best first
	engines        map[string]Synthesizer
	festival       *Festival // nil when not installed
	festivalVoices map[string]bool
	log            *slog.Logger
}

var _ Synthesizer = (*Local)(nil)

// ErrNoLocalEngine is returned by [NewLocal] when no offline engine is
// installed.
var ErrNoLocalEngine = errors.New("no offline speech synthesis installed (Debian: festival festvox-us-slt-hts, flite or espeak-ng; scripts/testdeps.sh installs them)")

// NewLocal finds the offline engines installed.
func NewLocal(cfg LocalConfig) (*Local, error) {
	look := cfg.LookPath
	if look == nil {
		look = exec.LookPath
	}
	dir := cfg.FestivalVoices
	if dir == "" {
		dir = DefaultFestivalVoices
	}
	l := &Local{engines: map[string]Synthesizer{}, festivalVoices: map[string]bool{}, log: cfg.Logger}
	if l.log == nil {
		l.log = slog.Default()
	}
	if p, err := look("festival"); err == nil {
		for _, v := range []string{FestivalSLT, FestivalKAL, FestivalKED} {
			if m, _ := filepath.Glob(filepath.Join(dir, "*", v)); len(m) > 0 {
				l.festivalVoices[v] = true
			}
		}
		if len(l.festivalVoices) > 0 {
			l.festival = &Festival{Path: p}
			l.engines[EngineFestival] = l.festival
		}
	}
	if p, err := look("flite"); err == nil {
		l.engines[EngineFlite] = Flite{Path: p}
	}
	if p, err := look("espeak-ng"); err == nil {
		l.engines[EngineEspeak] = Espeak{Path: p}
	}
	for _, v := range rankedVoices {
		if _, ok := l.engines[v.Engine]; ok && (v.Engine != EngineFestival || l.festivalVoices[v.Name]) {
			l.voices = append(l.voices, v)
		}
	}
	if len(l.voices) == 0 {
		return nil, ErrNoLocalEngine
	}
	return l, nil
}

// Close stops the festival Local keeps running (see [Festival]): festival
// voices fail after it with an error wrapping [ErrClosed]. The other
// engines run a program per sentence and keep speaking.
func (l *Local) Close() error {
	if l.festival != nil {
		return l.festival.Close()
	}
	return nil
}

// Voices returns the installed voices, best understood first.
func (l *Local) Voices() []LocalVoice { return slices.Clone(l.voices) }

// PlayerVoices returns n voices for n speakers (synthetic players, NPCs
// without a voice of their own): the best installed voices in order, taken
// again from the start when there are fewer than n.
func (l *Local) PlayerVoices(n int) []Voice {
	out := make([]Voice, 0, max(n, 0))
	for i := 0; i < n; i++ {
		out = append(out, l.voices[i%len(l.voices)].Voice())
	}
	return out
}

// Best returns the voice for NPCs without one of their own: the best
// understood of the installed festival and flite voices that synthesise a
// sentence within QuickVoice, a first sentence too (festival's start
// counts: an NPC's first words wait for it, and so do the first words after
// festival was idle), else the best understood voice. (espeak-ng is quick
// but poorly understood: it is chosen only when it is all there is.)
func (l *Local) Best() LocalVoice {
	for _, v := range l.voices {
		if v.Engine == EngineEspeak {
			break
		}
		if v.SentenceTime+v.StartTime <= QuickVoice {
			return v
		}
	}
	return l.voices[0]
}

// resolve finds the engine and engine voice for a voice name.
func (l *Local) resolve(name string) (string, string, error) {
	if name == "" {
		b := l.Best()
		return b.Engine, b.Name, nil
	}
	if eng, v, ok := strings.Cut(name, ":"); ok {
		switch eng {
		case EngineFestival, EngineFlite, EngineEspeak:
		case "espeak-ng":
			eng = EngineEspeak
		default:
			return "", "", fmt.Errorf("%w: %q names no offline engine (want festival:, flite: or espeak:)", ErrBadVoice, name)
		}
		if v == "" {
			return "", "", fmt.Errorf("%w: %q names no voice after the engine", ErrBadVoice, name)
		}
		if _, ok := l.engines[eng]; !ok {
			return "", "", fmt.Errorf("%w: %q: %s is not installed", ErrBadVoice, name, eng)
		}
		return eng, v, nil
	}
	switch {
	case l.festivalVoices[name]:
		return EngineFestival, name, nil
	case slices.Contains(fliteVoices, name) && l.engines[EngineFlite] != nil:
		return EngineFlite, name, nil
	case l.engines[EngineEspeak] != nil:
		return EngineEspeak, name, nil
	}
	return "", "", fmt.Errorf("%w: %q is not an installed festival or flite voice, and espeak-ng is not installed", ErrBadVoice, name)
}

// Synthesize speaks text with the voice v names.
func (l *Local) Synthesize(ctx context.Context, text string, v Voice) (audio.PCM, error) {
	eng, name, err := l.resolve(v.Name)
	if err != nil {
		return audio.PCM{}, &provider.Error{Provider: "local", Op: "choose voice", Err: err}
	}
	v.Name = name
	pcm, err := l.engines[eng].Synthesize(ctx, text, v)
	if err == nil || eng == EngineEspeak || errors.Is(err, ErrNoText) || errors.Is(err, ErrBadVoice) || errors.Is(err, ErrClosed) || ctx.Err() != nil ||
		l.engines[EngineEspeak] == nil {
		return pcm, err
	}
	l.log.Warn("offline speech synthesis failed; espeak-ng speaks instead", "engine", eng, "voice", name, "err", err)
	return l.engines[EngineEspeak].Synthesize(ctx, text, Voice{Speed: v.Speed, Pitch: v.Pitch})
}
