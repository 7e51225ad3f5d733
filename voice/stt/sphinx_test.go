package stt_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"strings"
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
// rate and name recall of both. The clips are recognised in one run of
// pocketsphinx per model, laid one after another with a second of silence
// between them: its voice activity detector cuts the recording at the
// silences and decodes each clip as an utterance of its own, as it would
// alone, and the words are given back to their clips by time. Each run
// loads its model (the stock one's 134,000-word dictionary: about a second
// of CPU); with the stock model, eight runs of one clip took 22.6 s of CPU,
// one run of all eight 15.7 s.
func TestSphinxCampaignVocabulary(t *testing.T) {
	if testing.Short() {
		t.Skip("slow: runs pocketsphinx on every clip twice")
	}
	audiotest.Need(t, "pocketsphinx_continuous")
	// A hang guard, not a budget: one run decodes all eight clips (about
	// 40 s of audio), and a loaded machine recognises slowly (at load 65 on
	// two cores a run of one clip took over 5 min).
	sp := &stt.Sphinx{Timeout: 10 * time.Minute}
	defer sp.Close()
	ctx := context.Background()

	// The clips, each the utterance the lane made of it, one after another.
	gap := make([]int16, audio.Rate) // a second of silence
	all := audio.PCM{Rate: audio.Rate, Samples: slices.Clone(gap)}
	spans := make([][2]float64, len(evalClips)) // seconds, in all
	for i, c := range evalClips {
		u := utterance(t, c.said)
		start := float64(len(all.Samples)) / audio.Rate
		all.Samples = append(all.Samples, u.Audio.Samples...)
		spans[i] = [2]float64{start, float64(len(all.Samples)) / audio.Rate}
		all.Samples = append(all.Samples, gap...)
	}
	// clipOf is the clip a word belongs to: the one its middle is nearest.
	clipOf := func(w stt.Word) int {
		mid := (w.Start + w.End).Seconds() / 2
		best, dist := 0, math.Inf(1)
		for i, s := range spans {
			d := max(s[0]-mid, mid-s[1], 0)
			if d < dist {
				best, dist = i, d
			}
		}
		return best
	}

	type score struct{ errs, words, found, names int }
	var stock, campaign score
	for _, mode := range []struct {
		name  string
		hints stt.Hints
		s     *score
	}{{"stock", stt.Hints{}, &stock}, {"campaign", stt.Hints{Keyterms: ironholdNames}, &campaign}} {
		tr, err := sp.Transcribe(ctx, all, mode.hints)
		if err != nil {
			t.Fatalf("%s: %v", mode.name, err)
		}
		heard := make([][]string, len(evalClips))
		for _, w := range tr.Words {
			if w.Confidence < 0 || w.Confidence > 1 || w.End < w.Start {
				t.Errorf("%s: word %+v", mode.name, w)
			}
			i := clipOf(w)
			heard[i] = append(heard[i], w.Text)
		}
		for i, c := range evalClips {
			text := strings.Join(heard[i], " ")
			e, n := wer(c.said, text)
			mode.s.errs += e
			mode.s.words += n
			for _, name := range c.names {
				mode.s.names++
				if contains(text, name) {
					mode.s.found++
				}
			}
			t.Logf("%-8s %q → %q (%d/%d errors)", mode.name, c.said, text, e, n)
		}
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
