package stt

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/voice/audio"
	"github.com/glyphoxa/glyphoxa/voice/provider"
)

// DefaultSphinxModel is where Debian's pocketsphinx-en-us installs the
// model.
const DefaultSphinxModel = "/usr/share/pocketsphinx/model/en-us"

//go:embed sphinx_corpus.txt
var tableTalk string

// Sphinx transcribes offline with pocketsphinx_continuous (pocketsphinx
// 0.8 and its en-us model). Without keyterms it uses the stock language
// model. With keyterms it builds, once per vocabulary, a campaign language
// model (a bigram model of everyday table talk, the campaign's sentences
// in Corpus and the keyterms in common phrases) and a dictionary holding
// every word of it, taking pronunciations of unknown names from
// compounds of known words ("grimjaw" = grim + jaw) or from espeak-ng's
// IPA. The campaign model knows far fewer words than the stock one: it
// hears the campaign's names, and mishears talk that strays far from the
// table. Accuracy on synthetic speech is poor either way; this is the
// fallback for running without keys.
//
// Set the fields before first use; it is safe for concurrent use after
// that. Close removes the generated files.
type Sphinx struct {
	// Program is pocketsphinx_continuous's path ($PATH lookup when empty).
	Program string
	// Model is the model directory (DefaultSphinxModel), holding en-us/,
	// en-us.lm.bin and cmudict-en-us.dict.
	Model string
	// Espeak is espeak-ng's path, for pronunciations ($PATH when empty).
	Espeak string
	// Corpus holds campaign sentences added to the campaign model.
	Corpus []string
	// Timeout bounds one transcription (DefaultTimeout).
	Timeout time.Duration

	mu    sync.Mutex
	dict  map[string][]string // cmudict, loaded on first use
	dir   string              // generated files
	built map[string]string   // vocabulary hash → directory
}

var _ Recognizer = (*Sphinx)(nil)

func (s *Sphinx) model() string {
	if s.Model == "" {
		return DefaultSphinxModel
	}
	return s.Model
}

// Close removes the generated dictionaries and language models.
func (s *Sphinx) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.dir)
	s.dir, s.built = "", nil
	return err
}

// Transcribe runs pocketsphinx on the utterance.
func (s *Sphinx) Transcribe(ctx context.Context, pcm audio.PCM, h Hints) (Transcript, error) {
	if err := checkAudio(pcm); err != nil {
		return Transcript{}, err
	}
	args := []string{"-hmm", filepath.Join(s.model(), "en-us")}
	if len(h.Keyterms) > 0 || len(s.Corpus) > 0 {
		dir, err := s.campaignModel(ctx, h.Keyterms)
		if err != nil {
			return Transcript{}, err
		}
		args = append(args, "-lm", filepath.Join(dir, "campaign.lm"), "-dict", filepath.Join(dir, "campaign.dict"))
	} else {
		args = append(args, "-lm", filepath.Join(s.model(), "en-us.lm.bin"), "-dict", filepath.Join(s.model(), "cmudict-en-us.dict"))
	}
	tmp, err := os.CreateTemp("", "glyphoxa-utt-*.wav")
	if err != nil {
		return Transcript{}, &provider.Error{Provider: "pocketsphinx", Op: "write audio", Err: err}
	}
	defer os.Remove(tmp.Name())
	// Half a second of silence either side lets its voice activity
	// detector find the speech.
	pad := make([]int16, audio.Rate/2)
	padded := append(append(append([]int16(nil), pad...), pcm.Samples...), pad...)
	if _, err := tmp.Write(audio.EncodeWAV(audio.PCM{Rate: audio.Rate, Samples: padded})); err != nil {
		tmp.Close()
		return Transcript{}, &provider.Error{Provider: "pocketsphinx", Op: "write audio", Err: err}
	}
	tmp.Close()
	args = append(args, "-infile", tmp.Name(), "-time", "yes", "-logfn", os.DevNull)

	t := s.Timeout
	if t == 0 {
		t = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	prog := s.Program
	if prog == "" {
		prog = "pocketsphinx_continuous"
	}
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, prog, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		return Transcript{}, &provider.Error{Provider: "pocketsphinx", Op: "run", Body: snippet(errOut.Bytes()), Err: err}
	}
	tr := parseSphinx(out.String(), 0.5)
	restoreCase(&tr, h.Keyterms)
	return tr, nil
}

// parseSphinx reads pocketsphinx_continuous -time yes output: a hypothesis
// line, then "word start end confidence" lines, per segment. Times are
// shifted back by pad seconds.
func parseSphinx(out string, pad float64) Transcript {
	var t Transcript
	var confSum float64
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 {
			continue
		}
		start, e1 := strconv.ParseFloat(f[1], 64)
		end, e2 := strconv.ParseFloat(f[2], 64)
		conf, e3 := strconv.ParseFloat(f[3], 64)
		if e1 != nil || e2 != nil || e3 != nil {
			continue
		}
		w := f[0]
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i] // alternate pronunciation
		}
		if w == "<s>" || w == "</s>" || w == "<sil>" || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "++") {
			continue
		}
		// A posterior summed in pocketsphinx's log domain can come out a
		// hair above 1 ("1.0001"); a confidence is 0 to 1.
		conf = min(max(conf, 0), 1)
		t.Words = append(t.Words, Word{Text: w, Start: seconds(max(start-pad, 0)), End: seconds(max(end-pad, 0)), Confidence: conf})
		confSum += conf
	}
	t.Text = joinWords(t.Words)
	if len(t.Words) > 0 {
		t.Confidence = confSum / float64(len(t.Words))
	}
	return t
}

// restoreCase writes recognised keyterms the way the campaign spells them.
func restoreCase(t *Transcript, keyterms []string) {
	terms := append([]string(nil), keyterms...)
	sort.Slice(terms, func(i, j int) bool { return len(terms[i]) > len(terms[j]) })
	for _, k := range terms {
		kw := strings.Fields(k)
		norm := normWords(k)
		if len(norm) == 0 || len(norm) != len(kw) {
			continue
		}
		for i := 0; i+len(norm) <= len(t.Words); i++ {
			match := true
			for j, n := range norm {
				if t.Words[i+j].Text != n {
					match = false
					break
				}
			}
			if match {
				for j := range norm {
					t.Words[i+j].Text = kw[j]
				}
			}
		}
	}
	t.Text = joinWords(t.Words)
}

// normWords lowercases text and splits it into words, keeping inner
// apostrophes.
func normWords(s string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	}) {
		if f = strings.Trim(f, "'"); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// campaignModel builds (once per vocabulary) the campaign dictionary and
// language model and returns their directory.
func (s *Sphinx) campaignModel(ctx context.Context, keyterms []string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.loadDict(); err != nil {
		return "", err
	}
	sum := sha256.New()
	for _, k := range keyterms {
		fmt.Fprintf(sum, "k%s\n", k)
	}
	for _, c := range s.Corpus {
		fmt.Fprintf(sum, "c%s\n", c)
	}
	key := hex.EncodeToString(sum.Sum(nil))[:16]
	if d, ok := s.built[key]; ok {
		return d, nil
	}
	if s.dir == "" {
		d, err := os.MkdirTemp("", "glyphoxa-sphinx-")
		if err != nil {
			return "", &provider.Error{Provider: "pocketsphinx", Op: "build campaign model", Err: err}
		}
		s.dir, s.built = d, map[string]string{}
	}
	dir := filepath.Join(s.dir, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &provider.Error{Provider: "pocketsphinx", Op: "build campaign model", Err: err}
	}

	var sentences [][]string
	add := func(line string) {
		if ws := normWords(line); len(ws) > 0 {
			sentences = append(sentences, ws)
		}
	}
	for _, l := range strings.Split(tableTalk, "\n") {
		if !strings.HasPrefix(l, "#") {
			add(l)
		}
	}
	for _, c := range s.Corpus {
		add(c)
	}
	for _, k := range keyterms {
		for _, tmpl := range keytermPhrases {
			add(strings.ReplaceAll(tmpl, "%", k))
		}
	}
	// Every word needs a pronunciation.
	pron := map[string][]string{}
	var missing []string
	for _, ws := range sentences {
		for _, w := range ws {
			if _, ok := pron[w]; ok {
				continue
			}
			if p, ok := s.dict[w]; ok {
				pron[w] = p
				continue
			}
			p, err := s.guess(ctx, w)
			if err != nil {
				missing = append(missing, w)
				pron[w] = nil
				continue
			}
			pron[w] = []string{p}
		}
	}
	var kept [][]string
	for _, ws := range sentences {
		ok := true
		for _, w := range ws {
			if pron[w] == nil {
				ok = false
			}
		}
		if ok {
			kept = append(kept, ws)
		}
	}
	if len(missing) > 0 && len(kept) == 0 {
		return "", &provider.Error{Provider: "pocketsphinx", Op: "build campaign model", Err: fmt.Errorf("no pronunciation for %q", missing)}
	}
	var dict bytes.Buffer
	words := make([]string, 0, len(pron))
	for w, p := range pron {
		if p != nil {
			words = append(words, w)
		}
	}
	sort.Strings(words)
	for _, w := range words {
		for i, p := range pron[w] {
			if i == 0 {
				fmt.Fprintf(&dict, "%s %s\n", w, p)
			} else {
				fmt.Fprintf(&dict, "%s(%d) %s\n", w, i+1, p)
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "campaign.dict"), dict.Bytes(), 0o644); err != nil {
		return "", &provider.Error{Provider: "pocketsphinx", Op: "build campaign model", Err: err}
	}
	if err := os.WriteFile(filepath.Join(dir, "campaign.lm"), bigramARPA(kept), 0o644); err != nil {
		return "", &provider.Error{Provider: "pocketsphinx", Op: "build campaign model", Err: err}
	}
	s.built[key] = dir
	return dir, nil
}

// keytermPhrases put each keyterm ("%") in phrases players use.
var keytermPhrases = []string{
	"%", "tell me about %", "what do you know about %", "where is %", "we go to %",
	"talk to %", "ask % about it", "% said", "we found %", "is % here", "the %",
}

// loadDict reads the model's pronouncing dictionary; s.mu is held.
func (s *Sphinx) loadDict() error {
	if s.dict != nil {
		return nil
	}
	path := filepath.Join(s.model(), "cmudict-en-us.dict")
	b, err := os.ReadFile(path)
	if err != nil {
		return &provider.Error{Provider: "pocketsphinx", Op: "read dictionary", Err: err}
	}
	d := make(map[string][]string, 140000)
	for _, line := range strings.Split(string(b), "\n") {
		w, p, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		if i := strings.IndexByte(w, '('); i > 0 {
			w = w[:i]
		}
		d[w] = append(d[w], strings.TrimSpace(p))
	}
	if len(d) == 0 {
		return &provider.Error{Provider: "pocketsphinx", Op: "read dictionary", Err: fmt.Errorf("%s has no entries", path)}
	}
	s.dict = d
	return nil
}

// guess finds a pronunciation for a word the dictionary lacks: two known
// words run together, else espeak-ng's IPA mapped to ARPAbet.
func (s *Sphinx) guess(ctx context.Context, w string) (string, error) {
	for i := len(w) - 3; i >= 3; i-- {
		a, b := s.dict[w[:i]], s.dict[w[i:]]
		if a != nil && b != nil {
			return a[0] + " " + b[0], nil
		}
	}
	prog := s.Espeak
	if prog == "" {
		prog = "espeak-ng"
	}
	out, err := exec.CommandContext(ctx, prog, "-q", "-v", "en-us", "--ipa", w).Output()
	if err != nil {
		return "", fmt.Errorf("espeak-ng --ipa %q: %w", w, err)
	}
	phones := ipaToArpabet(strings.TrimSpace(string(out)))
	if len(phones) == 0 {
		return "", errors.New("no phones")
	}
	return strings.Join(phones, " "), nil
}

// bigramARPA writes a backoff bigram language model of sentences in ARPA
// format: absolute discounting (D = 0.5) for bigrams, add-half smoothed
// unigrams.
func bigramARPA(sentences [][]string) []byte {
	const d = 0.5
	uni := map[string]float64{}
	bi := map[[2]string]float64{}
	hist := map[string]float64{}
	var total float64
	for _, ws := range sentences {
		seq := append(append([]string{"<s>"}, ws...), "</s>")
		for i, w := range seq {
			if i > 0 {
				uni[w]++
				total++
				bi[[2]string{seq[i-1], w}]++
				hist[seq[i-1]]++
			}
		}
	}
	vocab := make([]string, 0, len(uni)+1)
	for w := range uni {
		vocab = append(vocab, w)
	}
	vocab = append(vocab, "<s>")
	sort.Strings(vocab)
	pu := map[string]float64{}
	for _, w := range vocab {
		pu[w] = (uni[w] + 0.5) / (total + 0.5*float64(len(vocab)))
	}
	// Backoff weights: the discounted mass spread over unseen successors.
	types := map[string]float64{}
	seenMass := map[string]float64{}
	for k := range bi {
		types[k[0]]++
		seenMass[k[0]] += pu[k[1]]
	}
	bigrams := make([][2]string, 0, len(bi))
	for k := range bi {
		bigrams = append(bigrams, k)
	}
	sort.Slice(bigrams, func(i, j int) bool {
		if bigrams[i][0] != bigrams[j][0] {
			return bigrams[i][0] < bigrams[j][0]
		}
		return bigrams[i][1] < bigrams[j][1]
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "\\data\\\nngram 1=%d\nngram 2=%d\n\n\\1-grams:\n", len(vocab), len(bigrams))
	for _, w := range vocab {
		lp := math.Log10(pu[w])
		if w == "<s>" {
			lp = -99
		}
		if hist[w] > 0 {
			bow := (d * types[w] / hist[w]) / math.Max(1-seenMass[w], 1e-6)
			fmt.Fprintf(&b, "%.4f %s %.4f\n", lp, w, math.Log10(bow))
		} else {
			fmt.Fprintf(&b, "%.4f %s\n", lp, w)
		}
	}
	b.WriteString("\n\\2-grams:\n")
	for _, k := range bigrams {
		p := (bi[k] - d) / hist[k[0]]
		fmt.Fprintf(&b, "%.4f %s %s\n", math.Log10(p), k[0], k[1])
	}
	b.WriteString("\n\\end\\\n")
	return b.Bytes()
}
