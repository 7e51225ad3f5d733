package tts_test

import (
	"context"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/memory/campaignfile"
	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/audio/audiotest"
	"github.com/glyphoxa/glyphoxa/voice/stt"
	"github.com/glyphoxa/glyphoxa/voice/tts"
)

var intelligibility = flag.Bool("intelligibility", false,
	"run TestLocalVoicesIntelligibility: every installed offline voice through Opus and pocketsphinx (a few minutes)")

// demoLines is how many of sceneLines are the demo's scene.
const demoLines = 4

// sceneLines are the demo's scene (cmd/glyphoxa/demo.go) and the
// campaign sentences of voice/stt's evaluation, with the names a listener
// should hear in each.
var sceneLines = []struct {
	said  string
	names []string
}{
	{"Brannoc, what do you know about the Ashen Circle?", []string{"Brannoc", "Ashen Circle"}},
	{"They took the steel to the Tower of Whispers.", []string{"Tower of Whispers"}},
	{"Brannoc, will the Guild still pay us two hundred gold?", []string{"Brannoc", "Guild"}},
	{"Vexa was with them. I think she serves Eldrinax.", []string{"Vexa", "Eldrinax"}},
	{"Grimjaw, tell me about the Tower of Whispers in Ironhold.", []string{"Grimjaw", "Tower of Whispers", "Ironhold"}},
	{"We want to find the missing cart on the Duskwood road.", []string{"Duskwood"}},
	{"Elara, do you know who holds the key to the Sunken Vault?", []string{"Elara", "Sunken Vault"}},
	{"Brannoc, bring us some bread and tell us the news.", []string{"Brannoc"}},
	{"Is Vexa Thorn working for the guild?", []string{"Vexa Thorn"}},
	{"I attack the goblin with my sword.", nil},
	{"Let us rest at the Rusty Tankard tonight.", []string{"Rusty Tankard"}},
	{"What does the Ashen Circle want with Eldrinax?", []string{"Ashen Circle", "Eldrinax"}},
}

// TestLocalVoicesIntelligibility speaks the scene with every installed
// offline voice, sends it through the voice path (Opus at 48 kHz, a
// speaker's lane, end of turn) and pocketsphinx with the sample campaign's
// vocabulary, as `make demo` does, and reports each voice's word error
// rate and names heard, and the demo's scene as cast before (espeak-ng)
// and as Local.PlayerVoices casts it. It checks that Local.Best is within a
// name of the best understood voice and ahead of espeak-ng. Run it with
//
//	go test -count=1 -run TestLocalVoicesIntelligibility -v ./voice/tts/ -args -intelligibility
func TestLocalVoicesIntelligibility(t *testing.T) {
	if !*intelligibility {
		t.Skip("a report: run with -args -intelligibility")
	}
	audiotest.Need(t, "pocketsphinx_continuous")
	local, err := tts.NewLocal(tts.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	hints, corpus := campaignVocabulary(t)
	sp := &stt.Sphinx{Corpus: corpus, Timeout: 5 * time.Minute} // a hang guard, not a budget
	defer sp.Close()
	ctx := context.Background()
	type score struct{ errs, words, found, names int }
	scores := map[string]score{}
	for _, v := range local.Voices() {
		var s, demo score
		for i, l := range sceneLines {
			if i == demoLines {
				demo = s
			}
			pcm, err := local.Synthesize(ctx, l.said, v.Voice())
			if err != nil {
				t.Fatalf("%s:%s: %v", v.Engine, v.Name, err)
			}
			u := throughVoicePath(t, pcm)
			tr, err := sp.Transcribe(ctx, u.Audio, stt.Hints{Keyterms: hints})
			if err != nil {
				t.Fatal(err)
			}
			e, n := wer(l.said, tr.Text)
			s.errs += e
			s.words += n
			for _, name := range l.names {
				s.names++
				if containsWords(tr.Text, name) {
					s.found++
				}
			}
			t.Logf("%s:%s %q → %q", v.Engine, v.Name, l.said, tr.Text)
		}
		key := v.Engine + ":" + v.Name
		scores[key] = s
		t.Logf("REPORT %-32s WER %5.1f%% (%d/%d words), names heard %d/%d; demo scene alone: WER %5.1f%%, names %d/%d", key,
			100*float64(s.errs)/float64(s.words), s.errs, s.words, s.found, s.names,
			100*float64(demo.errs)/float64(demo.words), demo.found, demo.names)
	}
	// The demo's scene as cast before (espeak-ng, a voice per player) and
	// as PlayerVoices casts it now.
	speakers := []string{"Thorin", "Lyra", "Kael", "Thorin"}
	before := map[string]tts.Voice{"Thorin": {Name: "espeak:en-us"}, "Lyra": {Name: "espeak:en-gb+f3"}, "Kael": {Name: "espeak:en-us+m7"}}
	after := map[string]tts.Voice{}
	for i, v := range local.PlayerVoices(3) {
		after[[]string{"Thorin", "Lyra", "Kael"}[i]] = v
	}
	for _, cast := range []struct {
		name  string
		voice map[string]tts.Voice
	}{{"before (espeak-ng)", before}, {"after (Local.PlayerVoices)", after}} {
		var s score
		for i, l := range sceneLines[:demoLines] {
			pcm, err := local.Synthesize(ctx, l.said, cast.voice[speakers[i]])
			if err != nil {
				t.Fatal(err)
			}
			tr, err := sp.Transcribe(ctx, throughVoicePath(t, pcm).Audio, stt.Hints{Keyterms: hints})
			if err != nil {
				t.Fatal(err)
			}
			e, n := wer(l.said, tr.Text)
			s.errs += e
			s.words += n
			for _, name := range l.names {
				s.names++
				if containsWords(tr.Text, name) {
					s.found++
				}
			}
		}
		t.Logf("REPORT demo scene cast %-28s WER %5.1f%% (%d/%d words), names heard %d/%d", cast.name,
			100*float64(s.errs)/float64(s.words), s.errs, s.words, s.found, s.names)
	}

	// The first-ranked voice is within a name of the best, and far ahead
	// of espeak-ng, the last fallback.
	best := local.Best()
	b := scores[best.Engine+":"+best.Name]
	for k, s := range scores {
		if s.found > b.found+1 {
			t.Errorf("%s heard %d names, more than the first-ranked %s:%s (%d)", k, s.found, best.Engine, best.Name, b.found)
		}
		if strings.HasPrefix(k, tts.EngineEspeak+":") && best.Engine != tts.EngineEspeak && (s.found >= b.found || s.errs <= b.errs) {
			t.Errorf("espeak-ng voice %s (%d names, %d errors) is no worse than %s:%s (%d names, %d errors)",
				k, s.found, s.errs, best.Engine, best.Name, b.found, b.errs)
		}
	}
}

// campaignVocabulary is the sample campaign's names (keyterms) and
// transcript (corpus), as the demo gives them to pocketsphinx.
func campaignVocabulary(t *testing.T) (hints, corpus []string) {
	t.Helper()
	const path = "../../testdata/campaigns/ironhold-saga.yaml"
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cf, err := campaignfile.Parse(f, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range cf.Entities {
		hints = append(hints, e.Name)
		hints = append(hints, e.Aliases...)
	}
	for _, s := range cf.Sessions {
		for _, e := range s.Entries {
			corpus = append(corpus, e.Text)
		}
	}
	return hints, corpus
}

// throughVoicePath encodes speech as a Discord client sends it and cuts it
// into an utterance as the bot does.
func throughVoicePath(t *testing.T, pcm audio.PCM) audio.Utterance {
	t.Helper()
	t0 := time.Unix(0, 0)
	sig, _ := audiotest.Compose(48000, []time.Duration{500 * time.Millisecond}, []audio.PCM{audio.Resample(pcm, 48000)}, 1500*time.Millisecond)
	s := audiotest.Encode(t, sig, "111", 1, t0)
	var got []audio.Utterance
	r, err := audio.NewRouter(audio.Config{OnUtterance: func(u audio.Utterance) { got = append(got, u) }})
	if err != nil {
		t.Fatal(err)
	}
	audiotest.Deliver(r, s.Packets, t0, t0.Add(time.Duration(sig.Duration()*float64(time.Second))+time.Second))
	if len(got) == 0 {
		t.Fatal("the lane cut no utterance")
	}
	// A long pause inside a line can cut it in two: hear it whole.
	u := got[0]
	for _, x := range got[1:] {
		u.Audio.Samples = append(u.Audio.Samples, x.Audio.Samples...)
	}
	return u
}

func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
}

// wer counts word errors of hyp against ref (Levenshtein over words).
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

func containsWords(hyp, name string) bool {
	return strings.Contains(" "+strings.Join(words(hyp), " ")+" ", " "+strings.Join(words(name), " ")+" ")
}
