package stt_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/provider"
	"github.com/glyphoxa/glyphoxa/voice/stt"
)

// ironholdNames are the names of the sample campaign (testdata/campaigns).
var ironholdNames = []string{
	"Grimjaw", "Elara Moonwhisper", "Elara", "Brannoc", "Vexa Thorn", "Vexa", "Eldrinax",
	"Thorin", "Lyra", "Kael", "Ironhold", "Rusty Tankard", "Tower of Whispers",
	"Sunken Vault", "Duskwood", "Smiths' Guild", "Ashen Circle", "Dawn Hammer",
}

// evalClips are what players might say; none is a line of the built-in
// table-talk corpus.
var evalClips = []struct {
	said  string
	names []string
}{
	{"Grimjaw, tell me about the Tower of Whispers in Ironhold.", []string{"Grimjaw", "Tower of Whispers", "Ironhold"}},
	{"We want to find the missing cart on the Duskwood road.", []string{"Duskwood"}},
	{"Elara, do you know who holds the key to the Sunken Vault?", []string{"Elara", "Sunken Vault"}},
	{"Brannoc, bring us some bread and tell us the news.", []string{"Brannoc"}},
	{"Is Vexa Thorn working for the guild?", []string{"Vexa Thorn"}},
	{"I attack the goblin with my sword.", nil},
	{"Let us rest at the Rusty Tankard tonight.", []string{"Rusty Tankard"}},
	{"What does the Ashen Circle want with Eldrinax?", []string{"Ashen Circle", "Eldrinax"}},
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
}

// wer is the word error rate of hyp against ref (Levenshtein over words).
func wer(ref, hyp string) (errs, n int) {
	r, h := words(ref), words(hyp)
	prev := make([]int, len(h)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur := make([]int, len(h)+1)
		cur[0] = i
		for j := 1; j <= len(h); j++ {
			sub := prev[j-1]
			if r[i-1] != h[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev = cur
	}
	return prev[len(h)], len(r)
}

func contains(hyp, name string) bool {
	return strings.Contains(" "+strings.Join(words(hyp), " ")+" ", " "+strings.Join(words(name), " ")+" ")
}

// TestSphinxCampaignVocabulary runs pocketsphinx end to end (espeak-ng
// speech, Opus with loss and jitter, a lane, then recognition) with the
// stock model and with the campaign's vocabulary, and reports word error
// rate and name recall of both. The clips are recognised in parallel
// subtests (each run of pocketsphinx is a process of its own that loads
// its model; one after another they took 70 s on two cores).
func TestSphinxCampaignVocabulary(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs pocketsphinx on every clip twice")
	}
	audiotest.Need(t, "pocketsphinx_continuous")
	sp := &stt.Sphinx{Timeout: 5 * time.Minute} // a hang guard: a loaded machine recognises slowly
	defer sp.Close()
	ctx := context.Background()
	type score struct{ errs, words, found, names int }
	var (
		mu              sync.Mutex
		stock, campaign score
	)
	t.Run("clips", func(t *testing.T) {
		for _, c := range evalClips {
			t.Run(c.said, func(t *testing.T) {
				t.Parallel()
				u := utterance(t, c.said)
				for _, mode := range []struct {
					name  string
					hints stt.Hints
					s     *score
				}{{"stock", stt.Hints{}, &stock}, {"campaign", stt.Hints{Keyterms: ironholdNames}, &campaign}} {
					tr, err := sp.Transcribe(ctx, u.Audio, mode.hints)
					if err != nil {
						t.Fatalf("%s: %v", mode.name, err)
					}
					e, n := wer(c.said, tr.Text)
					mu.Lock()
					mode.s.errs += e
					mode.s.words += n
					for _, name := range c.names {
						mode.s.names++
						if contains(tr.Text, name) {
							mode.s.found++
						}
					}
					mu.Unlock()
					for _, w := range tr.Words {
						if w.Confidence < 0 || w.Confidence > 1 || w.End < w.Start {
							t.Errorf("%s: word %+v", mode.name, w)
						}
					}
					t.Logf("%-8s %q → %q (%d/%d errors)", mode.name, c.said, tr.Text, e, n)
				}
			})
		}
	})
	if t.Failed() {
		return // a clip was not recognised: the scores are incomplete
	}
	report := func(name string, s score) float64 {
		w := float64(s.errs) / float64(s.words)
		t.Logf("%s model: WER %.1f%% (%d/%d words), name recall %d/%d (%.0f%%)",
			name, 100*w, s.errs, s.words, s.found, s.names, 100*float64(s.found)/float64(s.names))
		return w
	}
	stockWER := report("stock", stock)
	campaignWER := report("campaign", campaign)
	if campaign.found <= stock.found {
		t.Errorf("the campaign vocabulary recalled %d names, the stock model %d", campaign.found, stock.found)
	}
	if campaignWER >= stockWER {
		t.Errorf("the campaign vocabulary did not lower the word error rate (%.2f vs %.2f)", campaignWER, stockWER)
	}
}

func TestSphinxFailures(t *testing.T) {
	pcm := audio.PCM{Rate: audio.Rate, Samples: make([]int16, audio.Rate)}
	sp := &stt.Sphinx{Program: "/nonexistent/pocketsphinx_continuous"}
	_, err := sp.Transcribe(context.Background(), pcm, stt.Hints{})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Provider != "pocketsphinx" {
		t.Errorf("missing program: %v", err)
	}
	sp = &stt.Sphinx{Model: t.TempDir()}
	if _, err := sp.Transcribe(context.Background(), pcm, stt.Hints{Keyterms: []string{"Grimjaw"}}); !errors.As(err, &pe) {
		t.Errorf("missing model: %v", err)
	} else {
		t.Log(err)
	}
}
