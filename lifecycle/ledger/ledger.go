// Package ledger keeps the table's promises, debts and handovers: who
// promised what to whom and by when, who owes whom, who gave which item to
// whom, each resting on the line it was said in.
//
// Entries are facts of the knowledge graph (relations PROMISED, OWES and
// GAVE, with the quoted line, its time and what was promised, owed or
// given as attributes), so the DM reviews them like any fact, NPCs know
// those that concern them, and the MCP tools, the console and exports see
// them with no second store. They are found after the session by the fact
// extractor: the LLM when one is configured (its instructions ask for
// them), and without one by [Find], which catches the explicit forms ("I
// promise…", "you owe me…", "take this sword") and nothing else.
package ledger

import (
	"regexp"
	"strings"
	"unicode"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Kind is the kind of a ledger entry.
type Kind string

// Kinds of entries.
const (
	Promise  Kind = "promise"
	Debt     Kind = "debt"
	Handover Kind = "handover"
)

// Relation types of the entries in the knowledge graph: the fact's source
// is who promised, owes or gave; its target to whom.
const (
	RelPromised = "PROMISED"
	RelOwes     = "OWES"
	RelGave     = "GAVE"
)

// Relation is the relation type of a kind.
func (k Kind) Relation() string {
	switch k {
	case Promise:
		return RelPromised
	case Debt:
		return RelOwes
	case Handover:
		return RelGave
	}
	return ""
}

// KindOf is the kind of a relation type ("" for other relations).
func KindOf(rel string) Kind {
	switch strings.ToUpper(rel) {
	case RelPromised:
		return Promise
	case RelOwes:
		return Debt
	case RelGave:
		return Handover
	}
	return ""
}

// Person is someone who can promise, owe or give: an entity of the
// campaign or a speaker at the table.
type Person struct {
	Name    string
	Type    string
	Aliases []string
}

// Entry is one promise, debt or handover found in a line.
type Entry struct {
	Kind Kind
	// From promised, owes or gave; To is to whom.
	From, To string
	// What was promised, is owed or was given, in the line's words.
	What string
	// Due is when, if the line says ("before the new moon").
	Due string
	// Line is the index of the line it rests on.
	Line int
}

// notItems are words after "take this/the …" that are no item handed over.
var notItems = map[string]bool{
	"seriously": true, "road": true, "way": true, "path": true, "chance": true, "lead": true, "look": true,
	"seat": true, "moment": true, "rest": true, "time": true, "turn": true, "word": true, "care": true,
	"stairs": true, "door": true, "left": true, "right": true, "risk": true, "bait": true, "hint": true,
	"point": true, "advice": true, "offer": true, "deal": true, "job": true, "fight": true, "night": true,
	"day": true, "watch": true, "first": true, "floor": true, "shot": true, "breath": true, "bridge": true,
	"tunnel": true, "trail": true, "pass": true, "ship": true, "boat": true, "one": true,
}

var (
	// A promise: "I promise/swear/vow (you) (that) …" about what will be.
	rePromise = regexp.MustCompile(`(?i)\b(?:i|we)\s+(?:also\s+)?(?:promise|swear|vow|give you my word)\b(?:\s+(?:to\s+)?you)?,?\s*(?:that\s+)?([^.!?]*)`)
	// "You have my word": the promise is the sentence before it.
	reWord     = regexp.MustCompile(`(?i)\byou have my word\b`)
	rePayBack  = regexp.MustCompile(`(?i)\b(?:i|we)(?:'ll|\s+will|\s+shall)\s+(pay\s+you\s+back[^.!?]*)`)
	future     = regexp.MustCompile(`(?i)(?:\b(?:will|shall|gonna|going to)\b|'ll\b|^to\s)`)
	reYouOweMe = regexp.MustCompile(`(?i)\byou\s+(?:also\s+)?owe\s+me\s+([^.!?]*)`)
	reIOweYou  = regexp.MustCompile(`(?i)\bi\s+(?:also\s+)?owe\s+you\s+([^.!?]*)`)
	// "<name> owes me/you/<name> …": the names are checked after.
	reOwes = regexp.MustCompile(`\b` + name + `\s+owes\s+(me|you|` + name[1:len(name)-1] + `)\s+([^.!?]*)`)
	// "take this hammer", "have my spare dagger", "here, you take the lantern".
	reTake = regexp.MustCompile(`(?i)\b(?:you\s+)?(?:take|have)\s+(?:this|these|my|the|a|an|our)\s+([^.!?,;]*)`)
	reGive = regexp.MustCompile(`(?i)\b(?:i|we)(?:'m|\s+am|'re|\s+are)?\s+(?:give|giving|hand|handing)\s+you\s+(?:this|these|my|the|a|an|our)\s+([^.!?,;]*)`)
	// Narration: "<name> gives/gave <name> a small silver key".
	reGives = regexp.MustCompile(`\b` + name + `\s+(?:gives|gave|hands|handed|passes|passed)\s+` + name + `\s+(?:a|an|the|his|her|their|its|my|this)\s+([^.!?,;]*)`)
	// "<name> promised <name> (that) …".
	rePromised = regexp.MustCompile(`\b` + name + `\s+(?:promised|swore to|vowed to)\s+` + name + `\s+(?:that\s+)?([^.!?]*)`)
	reDue      = regexp.MustCompile(`(?i)\b(?:(?:before|by|until|within|after)\s+(?:the\s+)?(?:new moon|full moon|dawn|dusk|nightfall|midnight|sunrise|sunset|winter|spring|summer|autumn|harvest|(?:next|this)\s+\w+|end of (?:the\s+)?\w+|\w+day|\w+\s+days?)|tomorrow(?:\s+(?:morning|night|evening))?|tonight)\b`)
	reSentence = regexp.MustCompile(`[^.!?]+[.!?]*`)
)

// name is a capitalised name of one or two words, as a regexp group.
const name = `(\p{Lu}[\p{L}']*(?:\s+\p{Lu}[\p{L}']*)?)`

// itemEnds are the words that end the noun phrase of an item handed over.
var itemEnds = map[string]bool{
	"to": true, "for": true, "and": true, "but": true, "so": true, "because": true, "it": true, "yours": true,
	"from": true, "with": true, "now": true, "here": true, "there": true, "please": true, "if": true, "then": true,
	"back": true, "instead": true, "too": true, "as": true, "while": true, "when": true, "i": true, "you": true,
}

// item cuts the noun phrase of an item: up to three words, ending before
// a preposition, conjunction or pronoun.
func item(phrase string) []string {
	var words []string
	for _, w := range strings.Fields(strings.ToLower(phrase)) {
		if itemEnds[w] || len(words) == 3 {
			break
		}
		words = append(words, w)
	}
	return words
}

// Find returns the promises, debts and handovers said outright in lines,
// between the people listed (speakers of the lines count too). "I" is the
// speaker; "you" is the person the line names, else the speaker of the
// line before (a reply answers it), else of the line after. Lines by
// nobody in people (the DM's narration) count only in the third person
// ("Elara gives Lyra a key"). A line that is not about the future ("I
// swear, that wasn't me") promises nothing.
//
// A retraction ("no wait", "scratch that", "actually he didn't", "Thorin
// never gave…", the DM's "retcon:") takes back what it refers to: the
// entries of the lines just before it whose what it names (else those of
// the nearest line before it), and what its own line said before it. The
// DM takes back anyone's words, anyone else only their own.
func Find(lines []memory.TranscriptEntry, people []Person) []Entry {
	out, _ := find(lines, people)
	return out
}

// find is Find, also returning the entries that retractions took back.
func find(lines []memory.TranscriptEntry, people []Person) (kept, taken []Entry) {
	f := finder{lines: lines, people: people}
	for i, l := range lines {
		if k := retraction(l.Text); k >= 0 {
			var t []Entry
			kept, t = retract(kept, i, l.Text, func(e Entry) bool { return mayRetract(l, lines[e.Line]) })
			taken = append(taken, t...)
			before := l
			before.Text = l.Text[:k]
			taken = append(taken, f.line(i, before)...)
			l.Text = l.Text[k:]
		}
		kept = append(kept, f.line(i, l)...)
	}
	return kept, taken
}

type finder struct {
	lines  []memory.TranscriptEntry
	people []Person
}

func (f finder) line(i int, l memory.TranscriptEntry) []Entry {
	text := l.Text
	me, speaks := f.person(l.SpeakerName)
	var out []Entry
	add := func(k Kind, from, to, what string) {
		what = clean(what)
		if from == "" || to == "" || from == to || what == "" {
			return
		}
		for _, e := range out {
			if e.Kind == k && e.From == from && e.To == to {
				return
			}
		}
		out = append(out, Entry{Kind: k, From: from, To: to, What: what, Due: due(what), Line: i})
	}
	// Third person, from anyone.
	for _, m := range reGives.FindAllStringSubmatch(text, -1) {
		a, okA := f.person(m[1])
		b, okB := f.person(m[2])
		if okA && okB {
			add(Handover, a, b, m[3])
		}
	}
	for _, m := range rePromised.FindAllStringSubmatch(text, -1) {
		a, okA := f.person(m[1])
		b, okB := f.person(m[2])
		if okA && okB {
			add(Promise, a, b, m[3])
		}
	}
	for _, m := range reOwes.FindAllStringSubmatch(text, -1) {
		debtor, ok := f.person(m[1])
		if !ok {
			continue
		}
		switch strings.ToLower(m[2]) {
		case "me":
			if speaks {
				add(Debt, debtor, me, m[3])
			}
		case "you":
			if speaks {
				add(Debt, debtor, f.addressee(i, me), m[3])
			}
		default:
			if to, ok := f.person(m[2]); ok {
				add(Debt, debtor, to, m[3])
			}
		}
	}
	if !speaks {
		return out
	}
	you := f.addressee(i, me)
	for _, m := range rePromise.FindAllStringSubmatch(text, -1) {
		if future.MatchString(m[1]) {
			add(Promise, me, you, m[1])
		}
	}
	if loc := reWord.FindStringIndex(text); loc != nil {
		// The sentence before "you have my word" is what is promised.
		var prev string
		for _, s := range reSentence.FindAllString(text[:loc[0]], -1) {
			if strings.TrimSpace(s) != "" {
				prev = s
			}
		}
		add(Promise, me, you, prev)
	}
	for _, m := range rePayBack.FindAllStringSubmatch(text, -1) {
		add(Promise, me, you, m[1])
	}
	for _, m := range reYouOweMe.FindAllStringSubmatch(text, -1) {
		if !nothing(m[1]) {
			add(Debt, you, me, m[1])
		}
	}
	for _, m := range reIOweYou.FindAllStringSubmatch(text, -1) {
		if !nothing(m[1]) {
			add(Debt, me, you, m[1])
		}
	}
	for _, re := range []*regexp.Regexp{reTake, reGive} {
		for _, m := range re.FindAllStringSubmatch(text, -1) {
			words := item(m[1])
			if len(words) == 0 || notItems[words[len(words)-1]] || notItems[words[0]] {
				continue
			}
			add(Handover, me, you, strings.Join(words, " "))
		}
	}
	return out
}

// person resolves a name, alias or first name to a person's name.
func (f finder) person(name string) (string, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	if n == "" {
		return "", false
	}
	for _, p := range f.people {
		if strings.EqualFold(p.Name, n) || first(p.Name) == n {
			return p.Name, true
		}
		for _, a := range p.Aliases {
			if strings.EqualFold(a, n) {
				return p.Name, true
			}
		}
	}
	return "", false
}

// addressee is who "you" is in line i spoken by me: the person the line
// names, else the speaker of the line before, else of the line after.
func (f finder) addressee(i int, me string) string {
	text := f.lines[i].Text
	best, at := "", len(text)+1
	for _, p := range f.people {
		if p.Name == me || !p.speaksTo() {
			continue
		}
		for _, n := range append([]string{p.Name, first(p.Name)}, p.Aliases...) {
			if k := wordIndex(text, n); k >= 0 && k < at {
				best, at = p.Name, k
			}
		}
	}
	if best != "" {
		return best
	}
	for _, j := range []int{i - 1, i + 1} {
		if j < 0 || j >= len(f.lines) {
			continue
		}
		if p, ok := f.person(f.lines[j].SpeakerName); ok && p != me {
			return p
		}
	}
	return ""
}

// wordIndex is where name occurs in text as whole words, or -1.
func wordIndex(text, name string) int {
	if name == "" {
		return -1
	}
	lt, ln := strings.ToLower(text), strings.ToLower(name)
	for off := 0; ; {
		k := strings.Index(lt[off:], ln)
		if k < 0 {
			return -1
		}
		k += off
		end := k + len(ln)
		if (k == 0 || !isWord(rune(lt[k-1]))) && (end == len(lt) || !isWord(rune(lt[end]))) {
			return k
		}
		off = k + 1
	}
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'' }

// first is the first word of a name, lower-cased; "" when it is an
// article or the like ("The Rusty Tankard" is no "the").
func first(name string) string {
	if f := strings.Fields(strings.ToLower(name)); len(f) > 0 && !fillers[f[0]] {
		return f[0]
	}
	return ""
}

// speaksTo reports whether someone can be "you" at the table: a player
// or an NPC (a person of unknown type too), never a place or a thing.
func (p Person) speaksTo() bool {
	return p.Type == "" || p.Type == memory.EntityNPC || p.Type == memory.EntityPlayer
}

// nothing reports whether what is owed is nothing at all.
func nothing(what string) bool {
	w := strings.ToLower(strings.TrimSpace(what))
	return w == "" || strings.HasPrefix(w, "nothing") || strings.HasPrefix(w, "no ")
}

// clean trims a clause: spaces, a trailing comma and a vocative after it.
func clean(what string) string {
	what = strings.TrimSpace(what)
	what = strings.TrimRight(what, ",;: ")
	return what
}

// due is when what says it is due, if it does.
func due(what string) string {
	return reDue.FindString(what)
}

// fillers are the words two whats may differ in and still be the same
// thing ("the lantern", "my lantern").
var fillers = map[string]bool{
	"a": true, "an": true, "the": true, "my": true, "your": true, "his": true, "her": true, "their": true, "our": true,
	"its": true, "this": true, "that": true, "these": true, "those": true, "of": true, "for": true, "to": true,
	"and": true, "me": true, "you": true, "it": true, "back": true, "some": true, "from": true, "with": true,
}

// Similar reports whether two whats name the same thing: they share a
// word that is not a filler ("fifty gold for the map" and "fifty gold",
// "the lantern" and "my lantern").
func Similar(a, b string) bool {
	words := func(s string) []string {
		return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !isWord(r) })
	}
	in := map[string]bool{}
	for _, w := range words(a) {
		if !fillers[w] && !notReferring[w] {
			in[strings.TrimSuffix(w, "'s")] = true
		}
	}
	for _, w := range words(b) {
		if !fillers[w] && !notReferring[w] && in[strings.TrimSuffix(w, "'s")] {
			return true
		}
	}
	return false
}

// numbers are the words that give an amount ("fifty gold", "a dozen arrows").
var numbers = map[string]bool{
	"one": true, "two": true, "three": true, "four": true, "five": true, "six": true, "seven": true, "eight": true,
	"nine": true, "ten": true, "eleven": true, "twelve": true, "dozen": true, "fifteen": true, "twenty": true,
	"thirty": true, "forty": true, "fifty": true, "sixty": true, "seventy": true, "eighty": true, "ninety": true,
	"hundred": true, "thousand": true,
}

// amounts are the words of what that give an amount.
func amounts(what string) map[string]bool {
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(what), func(r rune) bool { return !isWord(r) }) {
		if numbers[w] || strings.IndexFunc(w, func(r rune) bool { return !unicode.IsDigit(r) }) < 0 {
			out[w] = true
		}
	}
	return out
}

// Same reports whether two whats are the same promise, debt or item: they
// are [Similar] and do not name different amounts ("fifty gold for the map"
// and "fifty gold" are; "five gold" and "ten gold" are two debts).
func Same(a, b string) bool {
	if !Similar(a, b) {
		return false
	}
	x, y := amounts(a), amounts(b)
	if len(x) == 0 || len(y) == 0 {
		return true
	}
	for w := range x {
		if y[w] {
			return true
		}
	}
	return false
}

// EntryKey is the key a new entry is stored under, so that different
// promises, debts or handovers between the same two are facts of their
// own: the words of its what that are no filler, lower-cased, at most
// four ("fifty gold for the map" is "fifty gold map"). A restatement is
// stored under the key of the entry it restates, whatever its words.
func EntryKey(what string) string {
	var words []string
	for _, w := range strings.FieldsFunc(strings.ToLower(what), func(r rune) bool { return !isWord(r) }) {
		if w = strings.TrimSuffix(w, "'s"); !fillers[w] && w != "" {
			words = append(words, w)
		}
		if len(words) == 4 {
			break
		}
	}
	return strings.Join(words, " ")
}
