package tts_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

func TestFestivalAndFlite(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "festival")
	audiotest.Need(t, "flite")
	ctx := context.Background()
	// One festival speaks every festival case, as it would at a table.
	fest := &tts.Festival{}
	t.Cleanup(func() { fest.Close() })
	tests := []struct {
		name  string
		synth tts.Synthesizer
		voice tts.Voice
		rate  int
		// odd: check text that looks like an option or like Scheme. It
		// reaches a program the same way whatever the voice, so once a
		// program.
		odd bool
	}{
		{"festival HTS", fest, tts.Voice{}, 32000, true},
		{"festival diphone", fest, tts.Voice{Name: tts.FestivalKAL}, 16000, false},
		{"festival slower", fest, tts.Voice{Name: tts.FestivalKAL, Speed: 0.5}, 16000, false},
		{"flite", tts.Flite{}, tts.Voice{}, 16000, true},
		{"flite awb", tts.Flite{}, tts.Voice{Name: "awb"}, 16000, false},
	}
	// Flite's syntheses are a program run each; they run in parallel
	// subtests (festival's take turns in its one process).
	var mu sync.Mutex
	durations := map[string]float64{}
	t.Run("voices", func(t *testing.T) {
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				p, err := tt.synth.Synthesize(ctx, "Welcome to Ironhold, traveller.", tt.voice)
				if err != nil {
					t.Fatal(err)
				}
				if p.Rate != tt.rate {
					t.Errorf("rate %d, want %d", p.Rate, tt.rate)
				}
				if lvl := p.RMS(); lvl < -35 {
					t.Errorf("%.1f dBFS, not audible", lvl)
				}
				if d := p.Duration(); d < 1 || d > 6 {
					t.Errorf("%.2f s for four words", d)
				}
				mu.Lock()
				durations[tt.name] = p.Duration()
				mu.Unlock()
				if _, err := tt.synth.Synthesize(ctx, " \n", tt.voice); !errors.Is(err, tts.ErrNoText) {
					t.Errorf("blank text: %v, want ErrNoText", err)
				}
				// Text that looks like an option or like Scheme is spoken.
				if !tt.odd {
					return
				}
				for _, text := range []string{"--help", "(quit)", "-t", `") (quit) ("`, `\") (quit) (\"`} {
					t.Run(text, func(t *testing.T) {
						t.Parallel()
						if _, err := tt.synth.Synthesize(ctx, text, tt.voice); err != nil {
							t.Errorf("%q: %v", text, err)
						}
					})
				}
			})
		}
	})
	if durations["festival slower"] < 1.5*durations["festival diphone"] {
		t.Errorf("half speed lasts %.2f s, normal %.2f s", durations["festival slower"], durations["festival diphone"])
	}
	bad := []struct {
		name  string
		synth tts.Synthesizer
		voice string
	}{
		{"festival: unknown voice", fest, "nobody_here"},
		{"festival: not a voice name", fest, "kal_diphone)(quit"},
		{"flite: unknown voice", tts.Flite{}, "kal_diphone"},
		{"flite: a path is no voice", tts.Flite{}, "/tmp/x.flitevox"},
	}
	t.Run("bad voices", func(t *testing.T) {
		for _, b := range bad {
			t.Run(b.name, func(t *testing.T) {
				t.Parallel()
				_, err := b.synth.Synthesize(ctx, "hello", tts.Voice{Name: b.voice})
				var pe *provider.Error
				if !errors.Is(err, tts.ErrBadVoice) || !errors.As(err, &pe) || !strings.Contains(err.Error(), b.voice) && b.name != "festival: unknown voice" {
					t.Errorf("%s: %v, want a provider.Error wrapping ErrBadVoice and naming the voice", b.name, err)
				} else {
					t.Logf("%s: %v", b.name, err)
				}
			})
		}
	})
	for _, s := range []tts.Synthesizer{&tts.Festival{Path: "/nonexistent/festival"}, tts.Flite{Path: "/nonexistent/flite"}} {
		var pe *provider.Error
		if _, err := s.Synthesize(ctx, "hello", tts.Voice{}); !errors.As(err, &pe) {
			t.Errorf("%T with a missing program: %v, want a provider.Error", s, err)
		}
	}
}

// fakeInstall is a machine with some programs and festival voices.
func fakeInstall(t *testing.T, progs map[string]string, festivalVoices ...string) tts.LocalConfig {
	t.Helper()
	dir := t.TempDir()
	for _, v := range festivalVoices {
		if err := os.MkdirAll(filepath.Join(dir, "english", v), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return tts.LocalConfig{FestivalVoices: dir, LookPath: func(p string) (string, error) {
		if path, ok := progs[p]; ok {
			return path, nil
		}
		return "", exec.ErrNotFound
	}}
}

func TestLocalSelection(t *testing.T) {
	all := map[string]string{"festival": "festival", "flite": "flite", "espeak-ng": "espeak-ng"}
	tests := []struct {
		name     string
		progs    map[string]string
		festival []string
		best     string // for NPCs: understood and quick
		first    string // for players: best understood
		voices   int
	}{
		{"everything", all, []string{tts.FestivalSLT, tts.FestivalKAL, tts.FestivalKED}, "flite:rms", "festival:" + tts.FestivalKAL, 10},
		{"flite and espeak-ng", map[string]string{"flite": "flite", "espeak-ng": "espeak-ng"}, nil, "flite:rms", "flite:rms", 7},
		{"festival and espeak-ng", map[string]string{"festival": "festival", "espeak-ng": "espeak-ng"},
			[]string{tts.FestivalSLT}, "festival:" + tts.FestivalSLT, "festival:" + tts.FestivalSLT, 4},
		{"festival alone", map[string]string{"festival": "festival"}, []string{tts.FestivalKED},
			"festival:" + tts.FestivalKED, "festival:" + tts.FestivalKED, 1},
		{"festival without voices, flite", map[string]string{"festival": "festival", "flite": "flite"}, nil, "flite:rms", "flite:rms", 4},
		{"espeak-ng alone", map[string]string{"espeak-ng": "espeak-ng"}, nil, "espeak:en-us", "espeak:en-us", 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := tts.NewLocal(fakeInstall(t, tt.progs, tt.festival...))
			if err != nil {
				t.Fatal(err)
			}
			if got := l.Best().Voice().Name; got != tt.best {
				t.Errorf("best %q, want %q", got, tt.best)
			}
			vs := l.Voices()
			if got := vs[0].Voice().Name; got != tt.first {
				t.Errorf("best understood %q, want %q", got, tt.first)
			}
			if len(vs) != tt.voices {
				t.Errorf("%d voices, want %d: %v", len(vs), tt.voices, vs)
			}
			players := l.PlayerVoices(len(vs) + 1)
			seen := map[string]bool{}
			for _, v := range players[:len(vs)] {
				if seen[v.Name] {
					t.Errorf("voice %s given to two players while others are free", v.Name)
				}
				seen[v.Name] = true
			}
			if players[len(vs)] != players[0] {
				t.Errorf("with more players than voices, the next is %v, want the best again", players[len(vs)])
			}
		})
	}
	if _, err := tts.NewLocal(fakeInstall(t, nil)); !errors.Is(err, tts.ErrNoLocalEngine) {
		t.Errorf("nothing installed: %v, want ErrNoLocalEngine", err)
	}
}

func TestLocalSpeaks(t *testing.T) {
	t.Parallel()
	audiotest.Need(t, "festival")
	audiotest.Need(t, "flite")
	audiotest.Need(t, "espeak-ng")
	ctx := context.Background()
	l, err := tts.NewLocal(tts.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	tests := []struct {
		voice string
		rate  int
	}{
		{"", 16000},              // the best: festival's kal
		{tts.FestivalSLT, 32000}, // a bare festival voice
		{"festival:" + tts.FestivalSLT, 32000},
		{"rms", 16000}, // a bare flite voice
		{"flite:awb", 16000},
		{"en-gb+m3", 22050}, // a persona's espeak-ng voice
		{"espeak-ng:en-us", 22050},
	}
	// One program run per voice, in parallel subtests (l is safe for
	// concurrent use).
	for _, tt := range tests {
		t.Run(tt.voice, func(t *testing.T) {
			t.Parallel()
			p, err := l.Synthesize(ctx, "The gate opens at dawn.", tts.Voice{Name: tt.voice})
			if err != nil {
				t.Fatalf("%q: %v", tt.voice, err)
			}
			if p.Rate != tt.rate || p.RMS() < -35 {
				t.Errorf("%q: %d Hz at %.1f dBFS, want %d Hz and audible", tt.voice, p.Rate, p.RMS(), tt.rate)
			}
		})
	}
	for _, v := range []string{"bogus:voice", "festival:", "festival:kal_diphone)(quit"} {
		if _, err := l.Synthesize(ctx, "hello", tts.Voice{Name: v}); !errors.Is(err, tts.ErrBadVoice) {
			t.Errorf("%q: %v, want ErrBadVoice", v, err)
		}
	}
	if _, err := l.Synthesize(ctx, "", tts.Voice{}); !errors.Is(err, tts.ErrNoText) {
		t.Errorf("no text: %v", err)
	}
}

func TestLocalFallsBackToEspeak(t *testing.T) {
	audiotest.Need(t, "espeak-ng")
	espeak, err := exec.LookPath("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	cfg := fakeInstall(t, map[string]string{"festival": "/bin/false", "espeak-ng": espeak}, tts.FestivalSLT)
	var logs bytes.Buffer
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	l, err := tts.NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	p, err := l.Synthesize(context.Background(), "The gate opens at dawn.", tts.Voice{})
	if err != nil {
		t.Fatalf("festival broken: %v, want espeak-ng to speak", err)
	}
	if p.Rate != 22050 || p.RMS() < -35 {
		t.Errorf("fallback speech: %d Hz, %.1f dBFS", p.Rate, p.RMS())
	}
	if !strings.Contains(logs.String(), "espeak-ng speaks instead") || !strings.Contains(logs.String(), "engine=festival") {
		t.Errorf("the fallback was not logged: %s", logs.String())
	}
	var _ audio.PCM = p
}

// BenchmarkLocalVoices measures how long each installed offline voice takes
// to speak one NPC sentence (the time before an NPC's first words when it
// has no voice of its own), festival already running (one sentence is
// spoken before the timer starts; BenchmarkFestivalStart measures a first
// sentence), and reports the real-time factor.
//
//	go test -run '^$' -bench LocalVoices -benchtime 5x ./voice/tts/
func BenchmarkLocalVoices(b *testing.B) {
	l, err := tts.NewLocal(tts.LocalConfig{})
	if err != nil {
		b.Skip(err)
	}
	b.Cleanup(func() { l.Close() })
	const sentence = "Stolen, not lost! Bring my steel back from Duskwood and the Guild pays two hundred gold."
	for _, v := range l.Voices() {
		b.Run(v.Engine+":"+v.Name, func(b *testing.B) {
			if _, err := l.Synthesize(context.Background(), sentence, v.Voice()); err != nil {
				b.Fatal(err)
			}
			var spoken float64
			for b.Loop() {
				p, err := l.Synthesize(context.Background(), sentence, v.Voice())
				if err != nil {
					b.Fatal(err)
				}
				spoken = p.Duration()
			}
			b.ReportMetric(spoken, "audio-s")
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/spoken, "real-time-factor")
		})
	}
}

// BenchmarkFestivalStart measures a festival voice's first sentence: festival
// started, the voice loaded, the sentence spoken. An NPC waits this long for
// its first words when festival was not running (the first sentence of a
// process, or after Festival.Idle without one).
//
//	go test -run '^$' -bench FestivalStart -benchtime 5x ./voice/tts/
func BenchmarkFestivalStart(b *testing.B) {
	if _, err := exec.LookPath("festival"); err != nil {
		b.Skip(err)
	}
	const sentence = "Stolen, not lost! Bring my steel back from Duskwood and the Guild pays two hundred gold."
	for _, v := range []string{tts.FestivalKAL, tts.FestivalSLT} {
		b.Run(v, func(b *testing.B) {
			for b.Loop() {
				f := &tts.Festival{}
				_, err := f.Synthesize(context.Background(), sentence, tts.Voice{Name: v})
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
