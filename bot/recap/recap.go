// Package recap writes "Previously on…" recaps of game sessions in which
// every sentence is traceable to the transcript lines it rests on.
//
// With an LLM it writes prose and checks it: a sentence that cites no line,
// cites a line it was not given, or repeats something on the avoid list (a
// secret, an unconfirmed fact) is dropped. Without one, or when the model's
// answer is unusable, it picks the session's key lines instead.
package recap

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"

	openai "github.com/sashabaranov/go-openai"

	"github.com/glyphoxa/glyphoxa/npc/llm"
)

// Line is one numbered transcript line offered to the recap.
type Line struct {
	ID        int64
	SessionID string
	At        time.Time
	Speaker   string
	// NPC is true for lines spoken by an NPC.
	NPC  bool
	Text string
}

// Input is what a recap is written from.
type Input struct {
	Lines []Line
	// Facts are canon facts the recap may use, as short sentences.
	Facts []string
	// Avoid lists texts the recap must not reveal (secrets, unconfirmed
	// facts for a player-safe recap).
	Avoid []string
	// Sentences is the length of the recap (default 6).
	Sentences int
}

// Sentence is one recap sentence and the lines it rests on.
type Sentence struct {
	Text  string
	Lines []int64
}

// Recap is a finished recap.
type Recap struct {
	Sentences []Sentence
	// Extractive is true when the recap is made of key lines rather than
	// written prose.
	Extractive bool
	// Dropped counts written sentences rejected by the checks.
	Dropped int
}

// Streamer is the LLM (an *llm.Client).
type Streamer interface {
	Stream(ctx context.Context, req llm.Request, onText func(string)) (llm.Response, error)
}

// Writer writes recaps. A nil LLM makes extractive recaps only.
type Writer struct {
	LLM Streamer
}

// Write returns the recap of in.
func (w Writer) Write(ctx context.Context, in Input) (Recap, error) {
	if in.Sentences <= 0 {
		in.Sentences = 6
	}
	if len(in.Lines) == 0 {
		return Recap{}, nil
	}
	if w.LLM == nil {
		return extractive(in), nil
	}
	resp, err := w.LLM.Stream(ctx, llm.Request{Messages: prompt(in), Temperature: ptr(float32(0.3)), MaxTokens: 900}, nil)
	if err != nil {
		return extractive(in), nil
	}
	r, ok := check(resp.Text, in)
	if !ok {
		ex := extractive(in)
		ex.Dropped = r.Dropped
		return ex, nil
	}
	return r, nil
}

func ptr[T any](v T) *T { return &v }

func prompt(in Input) []openai.ChatCompletionMessage {
	var b strings.Builder
	fmt.Fprintf(&b, "Write a \"Previously on…\" recap of this tabletop role-playing game for the players: at most %d short sentences in the past tense, "+
		"in the order things happened, about what the characters did, learned, promised and decided.\n", in.Sentences)
	b.WriteString("Use only the numbered transcript lines and the facts below. Every sentence must cite the numbers of the lines it rests on.\n")
	b.WriteString("Answer with JSON only: {\"sentences\": [{\"text\": \"...\", \"lines\": [12, 14]}]}\n")
	if len(in.Avoid) > 0 {
		b.WriteString("\nNever mention or hint at any of these:\n")
		for _, a := range in.Avoid {
			fmt.Fprintf(&b, "- %s\n", a)
		}
	}
	if len(in.Facts) > 0 {
		b.WriteString("\nFacts:\n")
		for _, f := range in.Facts {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	var t strings.Builder
	for _, l := range in.Lines {
		fmt.Fprintf(&t, "[%d] %s %s: %s\n", l.ID, l.At.UTC().Format("15:04"), l.Speaker, l.Text)
	}
	return []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: b.String()},
		{Role: openai.ChatMessageRoleUser, Content: "Transcript:\n" + t.String()},
	}
}

// check parses the model's answer and keeps the sentences that pass. It
// reports false when nothing usable is left.
func check(answer string, in Input) (Recap, bool) {
	var parsed struct {
		Sentences []struct {
			Text  string  `json:"text"`
			Lines []int64 `json:"lines"`
		} `json:"sentences"`
	}
	if err := json.Unmarshal([]byte(jsonPart(answer)), &parsed); err != nil {
		return Recap{}, false
	}
	known := map[int64]bool{}
	for _, l := range in.Lines {
		known[l.ID] = true
	}
	var r Recap
	for _, s := range parsed.Sentences {
		text := strings.TrimSpace(s.Text)
		ok := text != "" && len(s.Lines) > 0
		for _, id := range s.Lines {
			ok = ok && known[id]
		}
		if ok && reveals(text, in.Avoid) {
			ok = false
		}
		if !ok {
			r.Dropped++
			continue
		}
		lines := slices.Clone(s.Lines)
		slices.Sort(lines)
		r.Sentences = append(r.Sentences, Sentence{Text: text, Lines: slices.Compact(lines)})
		if len(r.Sentences) == in.Sentences {
			break
		}
	}
	return r, len(r.Sentences) > 0
}

// jsonPart strips a Markdown code fence around JSON.
func jsonPart(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "{"); i >= 0 {
		if j := strings.LastIndex(s, "}"); j > i {
			return s[i : j+1]
		}
	}
	return s
}

// reveals reports whether text repeats a distinctive part of any avoided
// text: three consecutive significant words in common.
func reveals(text string, avoid []string) bool {
	tw := words(text)
	for _, a := range avoid {
		aw := words(a)
		for i := 0; i+3 <= len(aw); i++ {
			if containsRun(tw, aw[i:i+3]) {
				return true
			}
		}
		if len(aw) > 0 && len(aw) < 3 && containsRun(tw, aw) {
			return true
		}
	}
	return false
}

var stop = map[string]bool{"the": true, "a": true, "an": true, "of": true, "to": true, "and": true, "is": true,
	"was": true, "in": true, "it": true, "he": true, "she": true, "they": true, "his": true, "her": true, "at": true, "on": true}

func words(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !stop[w] {
			out = append(out, w)
		}
	}
	return out
}

func containsRun(hay, run []string) bool {
	for i := 0; i+len(run) <= len(hay); i++ {
		if slices.Equal(hay[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// tableTalk are words of talk about the game rather than in it.
var tableTalk = map[string]bool{"dice": true, "roll": true, "rolled": true, "d20": true, "initiative": true, "hp": true,
	"modifier": true, "check": true, "advantage": true, "disadvantage": true, "pizza": true, "snacks": true,
	"bathroom": true, "rules": true, "rulebook": true}

// minKeyScore keeps short chatter out of an extractive recap even when
// that leaves it shorter than asked.
const minKeyScore = 2

// extractive picks the session's key lines: what NPCs and the DM said, lines
// with names in them, longer statements over chatter. Each line is its own
// evidence.
func extractive(in Input) Recap {
	type scored struct {
		i     int
		score float64
	}
	var ss []scored
	for i, l := range in.Lines {
		if reveals(l.Text, in.Avoid) {
			continue
		}
		w := strings.Fields(l.Text)
		if len(w) < 5 {
			continue
		}
		s := float64(min(len(w), 30)) / 10
		if l.NPC {
			s += 2
		}
		if strings.EqualFold(l.Speaker, "DM") || strings.EqualFold(l.Speaker, "GM") {
			s += 2.5
		}
		for k, x := range w {
			if k > 0 && x != "" && unicode.IsUpper([]rune(x)[0]) {
				s += 0.5
			}
		}
		if strings.HasSuffix(strings.TrimSpace(l.Text), "?") {
			s -= 1
		}
		for _, x := range words(l.Text) {
			if tableTalk[x] {
				s -= 3
				break
			}
		}
		if s < minKeyScore {
			continue
		}
		ss = append(ss, scored{i, s})
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].score > ss[b].score })
	if len(ss) > in.Sentences {
		ss = ss[:in.Sentences]
	}
	sort.Slice(ss, func(a, b int) bool { return ss[a].i < ss[b].i })
	r := Recap{Extractive: true}
	for _, s := range ss {
		l := in.Lines[s.i]
		text := l.Text
		if !strings.EqualFold(l.Speaker, "DM") && !strings.EqualFold(l.Speaker, "GM") {
			text = fmt.Sprintf("%s: “%s”", l.Speaker, l.Text)
		}
		r.Sentences = append(r.Sentences, Sentence{Text: text, Lines: []int64{l.ID}})
	}
	return r
}
