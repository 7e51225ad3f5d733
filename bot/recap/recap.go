// Package recap writes "Previously on…" recaps of game sessions in which
// every sentence is traceable to the transcript lines it rests on.
//
// With an LLM it writes prose and checks it: a sentence that cites no line,
// cites a line it was not given, or repeats something on the avoid list (a
// secret, an unconfirmed fact) is dropped. Without one, or when the model's
// answer is unusable, it picks the session's key lines instead (an
// extractive recap).
//
// # Player-safe recaps
//
// A player-safe recap is safe by construction: the caller builds its
// [Input] from what players may see (the lines spoken at the table, the
// facts a player's view of the store returns), so no secret is ever in the
// prompt, and the model cannot paraphrase what it was never told. The
// avoid list is a second, local check: it is never sent to the model.
//
// # Extractive recaps
//
// Without a model the recap is the session's key lines, chosen by
// salience: lines that are the evidence of a fact, lines that bring in a
// new entity, decisions and promises, NPCs' answers to questions, the DM's
// narration, longer statements over chatter, and no table talk (dice,
// rules, snacks). Each sentence is one line, cited by its id, in the order
// spoken.
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

	"github.com/glyphoxa/glyphoxa/internal/llm"
	"github.com/glyphoxa/glyphoxa/memory"
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
	// facts for a player-safe recap). It is checked locally and never sent
	// to the model.
	Avoid []string
	// Evidence maps a line id to the facts (short sentences) it is the
	// evidence of: such lines are key lines.
	Evidence map[int64][]string
	// Names are the entities the recap may name; New marks those that
	// entered the story in this session.
	Names []Name
	// Sentences is the length of the recap (default 6).
	Sentences int
}

// Name is an entity's name and aliases, as lines mention it.
type Name struct {
	Name    string
	Aliases []string
	// New is true for an entity that entered the story in this session.
	New bool
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

// Writer writes recaps. A nil LLM makes extractive recaps only.
type Writer struct {
	LLM llm.Streamer
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

func prompt(in Input) []llm.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Write a \"Previously on…\" recap of this tabletop role-playing game for the players: at most %d short sentences in the past tense, "+
		"in the order things happened, about what the characters did, learned, promised and decided.\n", in.Sentences)
	b.WriteString("Use only the numbered transcript lines and the facts below. Every sentence must cite the numbers of the lines it rests on.\n")
	b.WriteString("Answer with JSON only: {\"sentences\": [{\"text\": \"...\", \"lines\": [12, 14]}]}\n")
	// in.Avoid is not written here: a secret in the prompt is a secret the
	// model can paraphrase.
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
	return []llm.Message{
		{Role: llm.RoleSystem, Content: b.String()},
		{Role: llm.RoleUser, Content: "Transcript:\n" + t.String()},
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

// decisionWords mark decisions and promises ("we'll", "let's", "I swear").
var decisionWords = map[string]bool{"we'll": true, "we’ll": true, "let's": true, "let’s": true, "promise": true,
	"promised": true, "swear": true, "swore": true, "agree": true, "agreed": true, "deal": true, "decide": true,
	"decided": true, "accept": true, "accepted": true, "refuse": true, "refused": true, "vow": true, "shall": true}

// Salience weights of an extractive recap.
const (
	// minKeyScore keeps short chatter out of an extractive recap even when
	// that leaves it shorter than asked.
	minKeyScore   = 2
	scoreEvidence = 3   // the line is the evidence of a fact
	scoreNewName  = 2   // the line brings in a new entity
	scoreName     = 0.5 // each other entity it names
	scoreDecision = 1.5 // a decision or a promise
	scoreAnswer   = 1.5 // an NPC answering a question
	scoreNPC      = 1.5 // any NPC line
	scoreDM       = 2.5 // the DM's narration
	scoreQuestion = -1  // a question, unanswered in the line itself
	scoreTable    = -3  // talk about the game, not in it
)

// isDM reports whether a speaker is the game master ([memory.IsDMName]):
// a live table labels only the session's DM so, a campaign file's "DM"
// lines are the DM's.
func isDM(speaker string) bool {
	return memory.IsDMName(speaker)
}

// salience scores line i of in.
func salience(in Input, i int, names []nameMatcher) float64 {
	l := in.Lines[i]
	w := strings.Fields(l.Text)
	s := float64(min(len(w), 30)) / 10
	if len(in.Evidence[l.ID]) > 0 {
		s += scoreEvidence
	}
	lower := " " + strings.Join(words(l.Text), " ") + " "
	capitalised := 0
	for k, x := range w {
		if k > 0 && x != "" && unicode.IsUpper([]rune(x)[0]) {
			capitalised++
		}
	}
	named := 0
	for _, n := range names {
		if n.in(lower) {
			named++
			if n.isNew {
				s += scoreNewName
			} else {
				s += scoreName
			}
		}
	}
	if named == 0 {
		// No known names: capitalised words stand in for them.
		s += float64(min(capitalised, 4)) * scoreName
	}
	for _, x := range strings.Fields(strings.ToLower(l.Text)) {
		if decisionWords[strings.Trim(x, ".,!?;:\"“”")] {
			s += scoreDecision
			break
		}
	}
	switch {
	case l.NPC:
		s += scoreNPC
		if i > 0 && !in.Lines[i-1].NPC && strings.HasSuffix(strings.TrimSpace(in.Lines[i-1].Text), "?") {
			s += scoreAnswer
		}
	case isDM(l.Speaker):
		s += scoreDM
	}
	if strings.HasSuffix(strings.TrimSpace(l.Text), "?") {
		s += scoreQuestion
	}
	for _, x := range words(l.Text) {
		if tableTalk[x] {
			s += scoreTable
			break
		}
	}
	return s
}

// nameMatcher finds an entity's name or an alias, as whole words.
type nameMatcher struct {
	forms []string // " word word " forms, lower case
	isNew bool
}

func (n nameMatcher) in(padded string) bool {
	for _, f := range n.forms {
		if strings.Contains(padded, f) {
			return true
		}
	}
	return false
}

func matchers(ns []Name) []nameMatcher {
	out := make([]nameMatcher, 0, len(ns))
	for _, n := range ns {
		m := nameMatcher{isNew: n.New}
		for _, x := range append([]string{n.Name}, n.Aliases...) {
			if ws := words(x); len(ws) > 0 {
				m.forms = append(m.forms, " "+strings.Join(ws, " ")+" ")
			}
		}
		if len(m.forms) > 0 {
			out = append(out, m)
		}
	}
	return out
}

// extractive picks the session's key lines by salience (see the package
// documentation). Each line is its own evidence; the avoid list is
// honoured.
func extractive(in Input) Recap {
	type scored struct {
		i     int
		score float64
	}
	names := matchers(in.Names)
	var ss []scored
	for i, l := range in.Lines {
		if len(strings.Fields(l.Text)) < 4 || reveals(l.Text, in.Avoid) {
			continue
		}
		if s := salience(in, i, names); s >= minKeyScore {
			ss = append(ss, scored{i, s})
		}
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].score > ss[b].score })
	if len(ss) > in.Sentences {
		ss = ss[:in.Sentences]
	}
	sort.Slice(ss, func(a, b int) bool { return ss[a].i < ss[b].i })
	r := Recap{Extractive: true}
	for _, s := range ss {
		l := in.Lines[s.i]
		r.Sentences = append(r.Sentences, Sentence{Text: keyLine(l), Lines: []int64{l.ID}})
	}
	return r
}

// keyLine renders a line as a recap sentence: the DM's narration as it is,
// anyone else's as a quotation.
func keyLine(l Line) string {
	text := strings.TrimSpace(l.Text)
	if isDM(l.Speaker) {
		return text
	}
	verb := "said"
	if strings.HasSuffix(text, "?") {
		verb = "asked"
	}
	return fmt.Sprintf("%s %s: “%s”", l.Speaker, verb, text)
}
