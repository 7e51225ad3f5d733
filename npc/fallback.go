package npc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unicode"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Fallback answers an addressed NPC's line without a language model: when
// no LLM is configured, or the LLM fails before saying anything, the NPC
// still answers, briefly, from what it knows, and honestly.
//
// [OfflineBehaviour] is what the product says about it, everywhere.
//
// The reply is extractive. Fallback reads what the line names (the
// entities the NPC can know, by name or alias) and what it is about (its
// meaningful words, stemmed, without stop words), and answers with at most
// [FallbackMaxSentences] short sentences taken from the NPC's own
// knowledge: the facts of its visible subgraph rendered as plain sentences
// (in the first person where the fact is about the NPC), the public
// attributes of what it knows, and the lines others said to it or near it
// ([TurnInput.Said], [TurnInput.History], the session log, recall), told
// with who said them. A line bears on the question when it names what the
// question names or shares at least two meaningful words with it, and
// tells something the question does not already say.
//
// It never quotes a reply of an NPC (its own or another's: lines with an
// NPC id or an NPC's name as speaker, and any line that reads like a
// fallback reply, such as "I remember this: …", are skipped), never a
// question, never the line it answers. It never reveals the NPC's
// secret_knowledge nor a secret fact, because it cannot judge, as a model
// told to guard them can, when the character would. When nothing bears on
// the question, the NPC says briefly, in its own manner, that it does not
// know or cannot help, in words that never repeat the question's: it never
// invents, and it cannot hold a conversation. A greeting, thanks, a
// farewell, small talk ("how are you?", "how's business?", "what's new?")
// or its name called alone ("Grimjaw?") gets a word back in its manner
// ("Aye.", "Well enough.", "Same as ever.", "Yes?"), which tells nothing;
// "who are you?" its
// occupation and description. A heard sentence that says "I" or "you" is
// never retold: in the NPC's voice it would name someone else.
//
// Every fallback reply is marked ([TurnResult.Fallback]), logged at Warn
// level with its reason, and counted ([Fallback.Stats]).
type Fallback struct {
	cfg FallbackConfig

	answered   atomic.Int64
	didNotKnow atomic.Int64
}

// OfflineBehaviour is the one statement of what NPCs do without an LLM:
// the README, config.example.yaml, `glyphoxa config check`, `glyphoxa
// init`, the demo, `chat` and `serve` all say it in these words.
const OfflineBehaviour = "Without an LLM, NPCs answer from what they know in short sentences taken from memory, " +
	"and say so when they do not know; they cannot hold a conversation."

// FallbackConfig configures a [Fallback].
type FallbackConfig struct {
	// Graph is the knowledge graph; required.
	Graph Graph
	// Heard finds the lines the NPC heard; nil answers from the graph and
	// the turn's own lines only.
	Heard HeardSearcher
	// Recall, when set, is asked when nothing else bears on the question;
	// the lines others said in its transcript results are used (never its
	// facts or summaries, which the graph already gives).
	Recall Recaller
	// Logger receives one Warn line per fallback reply (default
	// slog.Default()).
	Logger *slog.Logger
	// OnReply, when set, is called after each reply with whether the NPC
	// knew something (for metrics).
	OnReply func(npcID string, knew bool)
}

// FallbackMaxSentences bounds a fallback reply: the NPC speaks briefly.
const FallbackMaxSentences = 3

// FallbackStats counts fallback replies.
type FallbackStats struct {
	// Answered is the number of replies that said something the NPC knows.
	Answered int64
	// DidNotKnow is the number of replies that told nothing from memory:
	// the NPC said it does not know, or answered a greeting, thanks, a
	// farewell, small talk or its name called.
	DidNotKnow int64
}

// NewFallback returns a fallback responder.
func NewFallback(cfg FallbackConfig) (*Fallback, error) {
	if cfg.Graph == nil {
		return nil, errors.New("npc fallback needs a knowledge graph")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Fallback{cfg: cfg}, nil
}

// Stats returns how many fallback replies were given so far.
func (f *Fallback) Stats() FallbackStats {
	return FallbackStats{Answered: f.answered.Load(), DidNotKnow: f.didNotKnow.Load()}
}

// Turn answers in as the NPC, without a language model. reason says why
// the fallback is used ("no LLM configured", the LLM's error); it is logged.
// Each sentence goes to onSentence, as [Agent.Turn] does.
func (f *Fallback) Turn(ctx context.Context, in TurnInput, reason string, onSentence func(string)) (TurnResult, error) {
	res := TurnResult{NPCID: in.NPCID, Fallback: true}
	g, err := graphFor(f.cfg.Graph, in.NPCID)
	if err != nil {
		return res, err
	}
	ent, err := g.Entity(ctx, in.NPCID)
	if err != nil {
		return res, fmt.Errorf("loading NPC %q: %w", in.NPCID, err)
	}
	p := PersonaFromEntity(ent)
	p.ID = in.NPCID
	if k := socialKindOf(in.Text, p); k != notSocial {
		// A greeting, thanks, a farewell, small talk or its name called:
		// no question to answer from memory, and a don't-know would be
		// nonsense.
		return f.reply(res, in, reason, false, []string{socialReply(p, k, in.Text)}, onSentence), nil
	}
	q := parseQuestion(in.Text, p)

	ents, rels, err := g.VisibleSubgraph(ctx, p.ID, memory.VisibilityScope{RelTypes: p.KnowledgeScope})
	if err != nil && !errors.Is(err, memory.ErrNotFound) {
		return res, fmt.Errorf("reading what %s knows: %w", p.Name, err)
	}
	ents = append(ents, ent)
	src := newHearing(p, q, in, ents)
	cands := knownSentences(p, q, ents, rels)
	cands = append(cands, ownSentences(p, q, ent)...)
	cands = append(cands, src.lines(turnLines(in))...)
	if f.cfg.Heard != nil && len(q.terms) > 0 {
		hits, err := f.cfg.Heard.SearchHeard(ctx, p.ID, strings.Join(q.words(), " or "), 10)
		if err != nil {
			// What the NPC heard is one source among others: answer
			// from the rest.
			f.cfg.Logger.Warn("npc fallback: searching what the NPC heard", "npc", p.ID, "err", err)
		}
		cands = append(cands, src.lines(entryLines(hits))...)
	}
	best := pick(cands)
	if len(best) == 0 && f.cfg.Recall != nil && len(q.terms) > 0 {
		rs, err := f.cfg.Recall.Recall(ctx, p.ID, strings.Join(q.words(), " "), 5)
		if err != nil {
			f.cfg.Logger.Warn("npc fallback: recall", "npc", p.ID, "err", err)
		}
		best = pick(src.lines(recalledLines(rs)))
	}

	if len(best) > 0 {
		return f.reply(res, in, reason, true, append([]string{opener(p, in)}, best...), onSentence), nil
	}
	n := uint32(f.didNotKnow.Load() + 1)
	return f.reply(res, in, reason, false, []string{dontKnow(p, q, in.Text, n)}, onSentence), nil
}

// reply says sentences, counts, logs and reports the reply.
func (f *Fallback) reply(res TurnResult, in TurnInput, reason string, knew bool, sentences []string,
	onSentence func(string)) TurnResult {
	if knew {
		f.answered.Add(1)
	} else {
		f.didNotKnow.Add(1)
	}
	res.Sentences = sentences
	for _, s := range res.Sentences {
		if onSentence != nil {
			onSentence(s)
		}
	}
	res.Text = strings.Join(res.Sentences, " ")
	f.cfg.Logger.Warn("npc answered without an LLM (extractive fallback)", "npc", in.NPCID, "reason", reason,
		"knew", knew, "sentences", len(res.Sentences))
	if f.cfg.OnReply != nil {
		f.cfg.OnReply(in.NPCID, knew)
	}
	return res
}

// socialKind is what a line says that is neither a question nor a
// request: a greeting, thanks, a farewell, small talk, or the NPC's name
// alone.
type socialKind int

const (
	notSocial socialKind = iota
	greeting
	thanks
	farewell
	called    // its name alone ("Grimjaw?")
	howAreYou // small talk asking after it ("how are you?", "how's business?")
	whatsNew  // small talk asking for nothing in particular ("what's new?")
)

// smallTalk are the phrases of small talk, as wordsOf gives them ("how's"
// is "how"), by what they ask, longest first ("how are you doing" before
// "how are you"). A line holding one and nothing but greetings, fill and
// the NPC's names is small talk; one that goes on ("how are things at the
// docks?") is a question.
var smallTalk = []struct {
	phrase string
	kind   socialKind
}{
	{"how are you keeping", howAreYou}, {"how are you faring", howAreYou}, {"how are you doing", howAreYou},
	{"how have you been", howAreYou}, {"how goes business", howAreYou}, {"how is it going", howAreYou},
	{"how is your day", howAreYou}, {"how is the day", howAreYou}, {"how is business", howAreYou},
	{"how do you do", howAreYou}, {"what is happening", whatsNew},
	{"how are you", howAreYou}, {"how are ya", howAreYou}, {"how you doing", howAreYou}, {"how ya doing", howAreYou},
	{"how fare you", howAreYou}, {"how goes it", howAreYou}, {"how it going", howAreYou}, {"how are things", howAreYou},
	{"how is life", howAreYou}, {"how is trade", howAreYou}, {"how your day", howAreYou}, {"how the day", howAreYou},
	{"are you well", howAreYou}, {"what is new", whatsNew}, {"anything new", whatsNew}, {"what is up", whatsNew},
	{"how goes", howAreYou}, {"how life", howAreYou}, {"how business", howAreYou}, {"how trade", howAreYou},
	{"you well", howAreYou}, {"all well", howAreYou}, {"keeping well", howAreYou},
	{"what new", whatsNew}, {"what up", whatsNew}, {"what happening", whatsNew},
}

// smallTalkFill are words that go with small talk without asking more
// ("how are you today?", "what's new with you these days?").
var smallTalkFill = wordSet("today lately these days with this fine")

// takeSmallTalk takes the phrases of small talk out of ws (wordsOf a
// line) and reports what the first asks (notSocial: none).
func takeSmallTalk(ws []string) ([]string, socialKind) {
	line := " " + strings.Join(ws, " ") + " "
	kind := notSocial
	for _, st := range smallTalk {
		if p := " " + st.phrase + " "; strings.Contains(line, p) {
			line = strings.ReplaceAll(line, p, " ")
			if kind == notSocial {
				kind = st.kind
			}
		}
	}
	if kind == notSocial {
		return ws, notSocial
	}
	return strings.Fields(line), kind
}

// Words of greetings, thanks and farewells, and the words that go with
// them without saying anything ("good evening to you all").
var (
	greetWords  = wordSet("hi hello hey hail greetings evening morning morrow afternoon day met howdy")
	thanksWords = wordSet("thanks thank cheers grateful")
	byeWords    = wordSet("bye goodbye farewell later night see")
	socialFill  = wordSet("good well there to you all again so much very oh ah friend my and for everything ho " +
		"dear sir madam lady master indeed then now for")
)

// socialKindOf tells what a line says when it holds nothing but a
// greeting, thanks, a farewell, small talk and the NPC's names; notSocial
// otherwise.
func socialKindOf(text string, p Persona) socialKind {
	self := selfWords(p)
	var greet, thank, bye bool
	ws, small := takeSmallTalk(wordsOf(text))
	for _, w := range ws {
		switch {
		case w == "yes" || w == "no" || w == "aye":
			return notSocial // an answer, to something asked before
		case self[w], socialFill[w], leadWords[w], small != notSocial && smallTalkFill[w]:
		case thanksWords[w]:
			thank = true
		case byeWords[w]:
			bye = true
		case greetWords[w]:
			greet = true
		default:
			return notSocial
		}
	}
	switch {
	case small != notSocial:
		return small // asked, it is answered before thanks or greetings
	case thank:
		return thanks
	case bye:
		return farewell
	case greet:
		return greeting
	case strings.TrimSpace(text) == "":
		return notSocial
	}
	return called
}

// socialReply answers a greeting, thanks, a farewell, small talk or its
// name called, briefly and in the NPC's manner; it tells nothing.
func socialReply(p Persona, k socialKind, said string) string {
	lines := map[socialKind]map[manner][]string{
		greeting: {plain: {"Hello.", "Good day to you."}, gruff: {"Aye.", "Hmph. What is it?"},
			formal: {"Well met.", "Greetings."}, jovial: {"Welcome, welcome!", "Well met, friend!"}},
		thanks: {plain: {"You're welcome."}, gruff: {"Hmph. Don't mention it."},
			formal: {"You are most welcome."}, jovial: {"Anytime, friend!"}},
		farewell: {plain: {"Farewell."}, gruff: {"Go well."}, formal: {"Farewell, then."}, jovial: {"Safe travels, friend!"}},
		called:   {plain: {"Yes?"}, gruff: {"What?"}, formal: {"Yes?"}, jovial: {"Yes, friend?"}},
		howAreYou: {plain: {"Well enough.", "Fair enough, thank you."}, gruff: {"Mustn't grumble.", "Hmph. Well enough."},
			formal: {"Quite well, thank you.", "Well, thank you."}, jovial: {"Never better, friend!", "Fine as a summer's day!"}},
		whatsNew: {plain: {"Oh, the usual."}, gruff: {"Same as ever."}, formal: {"Much the same as ever."},
			jovial: {"Oh, this and that!"}},
	}[k][mannerOf(p)]
	return lines[hashString(p.ID+"\x00"+said)%uint32(len(lines))]
}

// question is what a line asks: its meaningful words and what it names.
type question struct {
	terms []string        // meaningful words, lower case, in order, deduplicated
	set   map[string]bool // terms as a set
	stems map[string]bool // the stems of terms
	norm  string          // the normalised line, " word word "
	asks  string          // "where", "who", "what", … or ""
	isAsk bool            // a question rather than a request or a remark
	you   bool            // asks about the NPC itself ("you", "your")
}

func parseQuestion(text string, p Persona) question {
	words := wordsOf(text)
	q := question{set: map[string]bool{}, stems: map[string]bool{}, norm: " " + strings.Join(words, " ") + " "}
	self := selfWords(p)
	q.isAsk = strings.Contains(text, "?")
	for i, w := range words {
		if askWords[w] {
			if q.asks == "" {
				q.asks = w
			}
			if i <= 2 {
				q.isAsk = true
			}
		}
		if w == "you" || w == "your" || w == "yours" || w == "yourself" {
			q.you = true
		}
		if !meaningful(w) || self[w] || q.set[w] {
			continue
		}
		q.set[w] = true
		q.stems[stem(w)] = true
		q.terms = append(q.terms, w)
	}
	return q
}

// words is what a search is asked for: the question's meaningful words.
func (q question) words() []string { return q.terms }

// selfWords are the words of the NPC's own names: a vocative is not a topic.
func selfWords(p Persona) map[string]bool {
	self := map[string]bool{}
	for _, n := range p.Names() {
		for _, w := range wordsOf(n) {
			self[w] = true
		}
	}
	return self
}

// meaningful reports whether a lower-case word can carry a topic.
func meaningful(w string) bool {
	return len(w) >= 3 && !stopWords[w]
}

// candidate is one sentence the NPC could say, with how well it answers.
type candidate struct {
	text  string
	score float64
}

// mentioned scores how much of an entity's name or aliases the question
// names: 1 when a whole name is in it, the share of a name's meaningful
// words otherwise.
func (q question) mentioned(e memory.Entity) float64 {
	best := 0.0
	for _, n := range append([]string{e.Name}, e.Aliases...) {
		ws := wordsOf(n)
		if len(ws) == 0 {
			continue
		}
		if strings.Contains(q.norm, " "+strings.Join(ws, " ")+" ") && !allStop(ws) {
			return 1
		}
		content, hit := 0, 0
		for _, w := range ws {
			if !meaningful(w) {
				continue
			}
			content++
			if q.set[w] || q.stems[stem(w)] {
				hit++
			}
		}
		if content > 0 {
			best = max(best, float64(hit)/float64(content))
		}
	}
	return best
}

// overlap counts the question's meaningful words in text, by stem.
func (q question) overlap(text string) int {
	n := 0
	seen := map[string]bool{}
	for _, w := range wordsOf(text) {
		if !meaningful(w) {
			continue
		}
		st := stem(w)
		if q.stems[st] && !seen[st] {
			n++
			seen[st] = true
		}
	}
	return n
}

// novelty counts the meaningful words of text the question does not
// already say: a line that only repeats the question tells nothing.
func (q question) novelty(text string, skip map[string]bool) int {
	n := 0
	seen := map[string]bool{}
	for _, w := range wordsOf(text) {
		if !meaningful(w) || skip[w] {
			continue
		}
		st := stem(w)
		if !q.stems[st] && !seen[st] {
			n++
			seen[st] = true
		}
	}
	return n
}

// knownSentences renders what the NPC knows from its visible subgraph and
// scores each sentence against the question.
func knownSentences(p Persona, q question, ents []memory.Entity, rels []memory.Relationship) []candidate {
	byID := map[string]memory.Entity{}
	ment := map[string]float64{}
	for _, e := range ents {
		byID[e.ID] = e
		if e.ID != p.ID {
			if m := q.mentioned(e); m >= 0.5 {
				ment[e.ID] = m
			}
		}
	}
	name := func(id string) string {
		if e, ok := byID[id]; ok {
			return e.Name
		}
		return id
	}
	var out []candidate
	whereAmI := q.you && q.asks == "where"
	for _, r := range rels {
		if secret(r) {
			continue
		}
		if ment[r.SourceID] == 0 && ment[r.TargetID] == 0 {
			if whereAmI && r.SourceID == p.ID && slices.Contains(askRelations["where"], r.Type) {
				// "Where do you live?": where the NPC is.
				out = append(out, candidate{factSpoken(r, p.ID, name), 2.5})
			}
			continue
		}
		s := factSpoken(r, p.ID, name)
		score := 2*(ment[r.SourceID]+ment[r.TargetID]) + float64(q.overlap(s))*0.5
		if asked, ok := askRelations[q.asks]; ok && slices.Contains(asked, r.Type) {
			score += 1.5
		}
		out = append(out, candidate{s, score})
	}
	for _, e := range ents {
		if e.ID == p.ID {
			continue
		}
		for _, a := range attributeSentences(e) {
			if m := ment[e.ID]; m > 0 {
				score := 2*m + 0.5 + float64(q.overlap(a.value))*0.5
				if q.says(attrAsks[a.key]) {
					score += 1.5 // "what does the Guild want?": its goals
				}
				out = append(out, candidate{a.text, score})
			} else if n := q.overlap(a.value); n >= 2 {
				// Not named, but what the question asks about is what
				// the NPC knows of it ("where did the steel vanish?").
				out = append(out, candidate{a.text, float64(n)})
			}
		}
	}
	return out
}

// ownSentences are what the NPC says of itself, in the first person, when
// the question bears on it: its occupation, description and goals.
func ownSentences(p Persona, q question, self memory.Entity) []candidate {
	var out []candidate
	// "Who are you?", "Tell me about yourself.": what it is.
	who := q.you && (q.asks == "who" || len(q.terms) == 0 && q.says(wordSet("yourself")))
	for _, k := range []string{"occupation", "description", "goals"} {
		v := strings.TrimSpace(str(self.Attributes[k]))
		if v == "" || strings.HasPrefix(v, "map[") || strings.HasPrefix(v, "[") {
			continue
		}
		n := q.overlap(v)
		if q.you && (q.asks == "who" || q.asks == "what") && q.says(selfAsks[k]) || who && k != "goals" {
			n += 2
		}
		if n == 0 {
			continue
		}
		var s string
		switch k {
		case "occupation":
			s = fmt.Sprintf("I am %s %s", article(v), v)
		case "description":
			s = "I am " + lowerArticle(v)
		default:
			s = "I want to " + v
		}
		out = append(out, candidate{ensureStop(s), 1 + float64(n)})
	}
	return out
}

// selfAsks are the words with which a question asks the NPC about itself,
// per attribute ("what is your trade?", "who are you?").
var selfAsks = map[string]map[string]bool{
	"occupation":  wordSet("job trade work occupation living craft"),
	"description": wordSet("who"),
	"goals":       wordSet("want wants goal goals plan plans"),
}

// attrAsks are the words with which a question asks for an attribute of
// what it names ("what does the Guild want?").
var attrAsks = map[string]map[string]bool{
	"goals":       wordSet("want wants wanted goal goals after plan plans aim"),
	"occupation":  wordSet("job trade work occupation do does"),
	"description": wordSet("who what like"),
	"properties":  wordSet("do does power powers special"),
	"reward":      wordSet("reward pay pays paid gold"),
}

// says reports whether the line holds one of words.
func (q question) says(words map[string]bool) bool {
	for _, w := range strings.Fields(q.norm) {
		if words[w] {
			return true
		}
	}
	return false
}

func lowerArticle(v string) string {
	if v == "" {
		return v
	}
	ws := strings.Fields(v)
	if len(ws) > 0 && (strings.EqualFold(ws[0], "a") || strings.EqualFold(ws[0], "an") || strings.EqualFold(ws[0], "the")) {
		return strings.ToLower(ws[0]) + v[len(ws[0]):]
	}
	return v
}

// heardLine is one line someone said that the NPC may retell.
type heardLine struct {
	speaker   string // as the NPC names them
	speakerID string
	npcID     string // set when an NPC said it
	text      string
	toNPC     bool // said to the NPC (TurnInput.Said)
}

// turnLines are the lines the turn brings: those said to the NPC earlier
// this session, and the recent conversation.
func turnLines(in TurnInput) []heardLine {
	var out []heardLine
	for _, m := range in.Said {
		out = append(out, heardLine{speaker: m.Speaker, speakerID: m.SpeakerID, npcID: m.NPCID, text: m.Text, toNPC: true})
	}
	for _, m := range in.History {
		if m.Summary {
			continue
		}
		out = append(out, heardLine{speaker: m.Speaker, speakerID: m.SpeakerID, npcID: m.NPCID, text: m.Text})
	}
	return out
}

// entryLines are the session log's lines the NPC heard.
func entryLines(hits []memory.EntryHit) []heardLine {
	out := make([]heardLine, 0, len(hits))
	for _, h := range hits {
		out = append(out, heardLine{speaker: h.Entry.SpeakerName, speakerID: h.Entry.SpeakerID, npcID: h.Entry.NPCID, text: h.Entry.Text})
	}
	return out
}

// recalledLines are the transcript lines of recalled chunks ("Speaker:
// text" per line). Facts and entities are the graph's, which the NPC
// already reads; a line without a speaker cannot be told apart from an
// NPC's and is left out.
func recalledLines(rs []Recollection) []heardLine {
	var out []heardLine
	for _, r := range rs {
		if r.Kind == "fact" || r.Kind == "entity" {
			continue
		}
		for _, l := range strings.Split(r.Content, "\n") {
			who, text, ok := strings.Cut(l, ": ")
			if !ok || strings.TrimSpace(who) == "" || len(who) > 60 {
				continue
			}
			out = append(out, heardLine{speaker: strings.TrimSpace(who), text: text})
		}
	}
	return out
}

// hearing judges heard lines against a question, for one NPC.
type hearing struct {
	p        Persona
	q        question
	in       TurnInput
	npcNames map[string]bool // lower-case names and aliases of NPCs
	npcIDs   map[string]bool
	names    map[string]bool // words of every entity name: not news
	entities []memory.Entity
}

func newHearing(p Persona, q question, in TurnInput, ents []memory.Entity) hearing {
	h := hearing{p: p, q: q, in: in, npcNames: map[string]bool{}, npcIDs: map[string]bool{p.ID: true}, names: selfWords(p), entities: ents}
	for _, n := range p.Names() {
		h.npcNames[strings.ToLower(strings.TrimSpace(n))] = true
	}
	for _, e := range ents {
		if e.Type == "npc" || e.ID == p.ID {
			h.npcIDs[e.ID] = true
			for _, n := range append([]string{e.Name}, e.Aliases...) {
				h.npcNames[strings.ToLower(strings.TrimSpace(n))] = true
			}
		}
	}
	return h
}

// lines scores the sentences of heard lines that answer the question.
func (h hearing) lines(ls []heardLine) []candidate {
	var out []candidate
	asked := strings.Join(wordsOf(h.in.Text), " ")
	seen := map[string]bool{}
	for _, l := range ls {
		if !h.quotable(l) {
			continue
		}
		for _, s := range splitSentences(l.text) {
			s = trimLead(s, h.names)
			ws := strings.Join(wordsOf(s), " ")
			if ws == "" || seen[ws] || strings.HasSuffix(strings.TrimSpace(s), "?") || ws == asked ||
				strings.Contains(asked, ws) || readsLikeReply(s) || speaksOfSelfOrListener(s) {
				continue
			}
			n := h.q.overlap(s)
			named := 0.0
			for _, e := range h.entities {
				if e.ID != h.p.ID && h.q.mentioned(e) >= 0.5 && mentions(s, e) {
					named = 1
					break
				}
			}
			if n < 2 && !(n == 1 && (named > 0 || len(h.q.terms) == 1)) {
				continue
			}
			if h.q.novelty(s, h.names) < 2 {
				continue
			}
			seen[ws] = true
			score := 1 + float64(n) + named
			if l.toNPC {
				score += 0.5
			}
			out = append(out, candidate{tell(l.speaker, s), score})
		}
	}
	return out
}

// quotable reports whether the NPC may retell a line: never an NPC's
// reply (its own or another's), never the DM's narration, never a line
// that reads like a fallback reply.
func (h hearing) quotable(l heardLine) bool {
	t := strings.TrimSpace(l.text)
	who := strings.ToLower(strings.TrimSpace(l.speaker))
	switch {
	case t == "", who == "", l.npcID != "", h.npcIDs[l.speakerID], h.npcNames[who], memory.IsDMName(who):
		return false
	}
	return !readsLikeReply(t)
}

// replyMarks are the phrases of fallback replies, earlier versions
// included: a line holding one is a reply, however it was recorded.
var replyMarks = []string{"i remember this:", "as i said before", "i heard it said:", "know anything about",
	"know nothing about", " say: ", " said: ", " told me: ", "here is what i know", "this much i know", "i can tell you this"}

func readsLikeReply(s string) bool {
	l := " " + strings.ToLower(s)
	for _, m := range replyMarks {
		if strings.Contains(l, m) {
			return true
		}
	}
	return false
}

// personWords are the words of "I" and "you": told by another, in the
// NPC's voice ("Thorin said I wave to Brannoc"), they name someone else.
var personWords = wordSet("i me my mine myself i'm i've i'll i'd you your yours yourself yourselves you're you've you'll you'd")

// speaksOfSelfOrListener reports whether a sentence says "I" or "you":
// retold, it would mean something its speaker did not say.
func speaksOfSelfOrListener(s string) bool {
	for _, w := range wordsOf(s) {
		if personWords[w] {
			return true
		}
	}
	return false
}

// mentions reports whether s names e.
func mentions(s string, e memory.Entity) bool {
	norm := " " + strings.Join(wordsOf(s), " ") + " "
	for _, n := range append([]string{e.Name}, e.Aliases...) {
		ws := wordsOf(n)
		if len(ws) > 0 && !allStop(ws) && strings.Contains(norm, " "+strings.Join(ws, " ")+" ") {
			return true
		}
	}
	return false
}

// trimLead drops a sentence's leading interjection and vocative ("Listen,
// the key…", "Brannoc, the key…").
func trimLead(s string, self map[string]bool) string {
	s = strings.TrimSpace(s)
	for range 3 {
		head, rest, ok := strings.Cut(s, ",")
		if !ok {
			break
		}
		hw := wordsOf(head)
		lead := len(hw) > 0 && len(hw) <= 2
		for _, w := range hw {
			if !leadWords[w] && !self[w] {
				lead = false
			}
		}
		if !lead {
			break
		}
		s = strings.TrimSpace(rest)
	}
	return s
}

// leadWords open a sentence without saying anything.
var leadWords = wordSet("listen look well so hey oh ah now okay ok right friend friends yes no aye see alright")

// tell retells a heard sentence with who said it.
func tell(who, s string) string {
	s = strings.TrimSpace(s)
	if s != "" {
		r := []rune(s)
		if unicode.IsUpper(r[0]) && !(len(r) > 1 && unicode.IsUpper(r[1])) && !strings.HasPrefix(s, "I ") {
			// Lower-case a sentence's first word unless it is a name.
			first := strings.Fields(s)[0]
			if stopWords[strings.ToLower(strings.Trim(first, ",.;:!"))] {
				s = strings.ToLower(string(r[0])) + string(r[1:])
			}
		}
	}
	return ensureStop(fmt.Sprintf("%s said %s", who, s))
}

// pick returns the best distinct sentences that answer at all, best first;
// a sentence far weaker than the best is left out.
func pick(cs []candidate) []string {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	var out []string
	for _, c := range cs {
		if c.score < 1.5 || (len(cs) > 0 && c.score < cs[0].score/2) || slices.Contains(out, c.text) {
			continue
		}
		out = append(out, c.text)
		if len(out) == FallbackMaxSentences-1 { // the opener is the first sentence
			break
		}
	}
	return out
}

// manner is how an NPC speaks, for its few set phrases.
type manner int

const (
	plain manner = iota
	gruff
	formal
	jovial
)

func mannerOf(p Persona) manner {
	s := strings.ToLower(p.SpeakingStyle + " " + p.Personality)
	switch {
	case strings.Contains(s, "formal") || strings.Contains(s, "riddle") || strings.Contains(s, "precise"):
		return formal
	case strings.Contains(s, "gruff") || strings.Contains(s, "short") || strings.Contains(s, "terse") ||
		strings.Contains(s, "cold") || strings.Contains(s, "blunt"):
		return gruff
	case strings.Contains(s, "jovial") || strings.Contains(s, "gossip") || strings.Contains(s, "cheer") ||
		strings.Contains(s, "friendly") || strings.Contains(s, "warm"):
		return jovial
	}
	return plain
}

// opener starts a reply in the NPC's voice, to whoever asked.
func opener(p Persona, in TurnInput) string {
	lines := map[manner][]string{
		plain:  {"Let me think.", "I can tell you this.", "Here is what I know."},
		gruff:  {"Hmph.", "Aye.", "Listen."},
		formal: {"Very well.", "Let me see.", "Allow me."},
		jovial: {"Oh, that I know!", "Ha, now then.", "Well, well."},
	}[mannerOf(p)]
	s := lines[hashString(in.NPCID+"\x00"+in.Text)%uint32(len(lines))]
	if who := strings.TrimSpace(in.SpeakerName); who != "" {
		s = strings.TrimRight(s, ".!,") + ", " + who + "."
	}
	return s
}

// dontKnow says, briefly and in the NPC's manner, that it does not know
// (to a question) or cannot help (to anything else). It never repeats
// the line's words: the phrases rotate with n and skip any that shares a
// meaningful word with what was said.
func dontKnow(p Persona, q question, said string, n uint32) string {
	type pool struct{ ask, other []string }
	pools := map[manner]pool{
		plain: {ask: []string{"I don't know, sorry.", "I couldn't tell you.", "No idea, I'm afraid.", "That I don't know."},
			other: []string{"I can't help you there.", "Not something I can do, sorry.", "I'm afraid not."}},
		gruff: {ask: []string{"Don't know.", "No idea. Ask elsewhere.", "Couldn't say.", "Not a thing I know."},
			other: []string{"Can't help you.", "Not my business.", "Can't do that."}},
		formal: {ask: []string{"I am afraid I cannot say.", "That, I do not know.", "I have no answer for you there."},
			other: []string{"I am afraid I cannot help you there.", "That is beyond me, I fear."}},
		jovial: {ask: []string{"Ha, you've got me there!", "Haven't heard a thing, sorry.", "Beats me, friend.", "Not a whisper of it, I'm afraid."},
			other: []string{"Ah, can't help you there, friend.", "Wish I could help, truly.", "I'm no help there, sorry."}},
	}
	pl := pools[mannerOf(p)]
	lines := pl.other
	if q.isAsk || strings.TrimSpace(said) == "" {
		lines = pl.ask
	}
	start := (hashString(p.ID+"\x00"+said) + n) % uint32(len(lines))
	for i := range uint32(len(lines)) {
		s := lines[(start+i)%uint32(len(lines))]
		if q.overlap(s) == 0 {
			return s
		}
	}
	return "Hm."
}

// relationPhrase is how a relationship type is said: the verb for a third
// party and for the NPC itself ("is at" / "am at").
var relationPhrase = map[string][2]string{
	"LOCATED_AT":  {"is at", "am at"},
	"NEAR":        {"is near", "am near"},
	"MEMBER_OF":   {"is a member of", "am a member of"},
	"KNOWS":       {"knows", "know"},
	"OWNS":        {"owns", "own"},
	"HOSTILE_TO":  {"is hostile to", "am hostile to"},
	"ALLIED_WITH": {"is allied with", "am allied with"},
	"SERVES":      {"serves", "serve"},
	"WORKS_FOR":   {"works for", "work for"},
	"QUEST_GIVER": {"offers the quest", "offer the quest"},
	"ABOUT":       {"is about", "am about"},
	"FORGED":      {"forged", "forged"},
	"LEADS":       {"leads", "lead"},
	"ENEMY_OF":    {"is an enemy of", "am an enemy of"},
	"PARENT_OF":   {"is a parent of", "am a parent of"},
	"CHILD_OF":    {"is a child of", "am a child of"},
}

// askRelations are the relationship types a question word asks about.
var askRelations = map[string][]string{
	"where": {"LOCATED_AT", "NEAR"},
	"who":   {"MEMBER_OF", "SERVES", "KNOWS", "WORKS_FOR", "LEADS", "ALLIED_WITH", "HOSTILE_TO"},
}

// factSpoken renders a fact as the NPC says it: "Grimjaw is a member of
// Smiths' Guild", "I know Grimjaw", "Thorin knows me".
func factSpoken(r memory.Relationship, self string, name func(string) string) string {
	ph, ok := relationPhrase[r.Type]
	if !ok {
		w := strings.ToLower(strings.ReplaceAll(r.Type, "_", " "))
		ph = [2]string{w, w}
	}
	src, verb := name(r.SourceID), ph[0]
	if r.SourceID == self {
		src, verb = "I", ph[1]
	}
	dst := name(r.TargetID)
	if r.TargetID == self {
		dst = "me"
	}
	return ensureStop(fmt.Sprintf("%s %s %s", src, verb, dst))
}

// attribute is one public attribute of an entity, said as a sentence.
type attribute struct {
	key   string // the attribute
	text  string // the sentence
	value string // what the attribute says, for relevance
}

// attributeSentences renders an entity's public attributes.
func attributeSentences(e memory.Entity) []attribute {
	keys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		if !privateAttr[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []attribute
	for _, k := range keys {
		v := strings.TrimSpace(str(e.Attributes[k]))
		if v == "" || strings.HasPrefix(v, "map[") || strings.HasPrefix(v, "[") {
			continue
		}
		var s string
		switch k {
		case "description":
			s = fmt.Sprintf("%s is %s", e.Name, v)
		case "occupation", "class":
			s = fmt.Sprintf("%s is %s %s", e.Name, article(v), v)
		case "goals":
			s = fmt.Sprintf("%s wants to %s", e.Name, v)
		case "properties":
			s = fmt.Sprintf("About %s: %s", e.Name, v)
		default:
			s = fmt.Sprintf("The %s of %s is %s", strings.ReplaceAll(k, "_", " "), e.Name, v)
		}
		out = append(out, attribute{key: k, text: ensureStop(s), value: strings.ReplaceAll(k, "_", " ") + " " + v})
	}
	return out
}

// privateAttr are attributes a fallback never says: the NPC's secrets, and
// the sheet that tells how to play a character rather than what is known.
var privateAttr = map[string]bool{
	memory.AttrSecretKnowledge: true, attrPersonality: true, attrSpeakingStyle: true, attrVoice: true,
	attrKnowledgeScope: true, attrAppearance: true, "player": true, memory.AttrSecret: true, memory.AttrKnownBy: true,
}

func secret(r memory.Relationship) bool {
	v, ok := r.Attributes[memory.AttrSecret]
	return ok && v != false && v != "false" && v != nil
}

func article(w string) string {
	if w != "" && strings.ContainsRune("aeiouAEIOU", rune(w[0])) {
		return "an"
	}
	return "a"
}

func ensureStop(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.ContainsRune(".!?", rune(s[len(s)-1])) {
		return s
	}
	return s + "."
}

func splitSentences(text string) []string {
	var sp SentenceSplitter
	out := sp.Write(text)
	return append(out, sp.Flush()...)
}

// wordsOf lower-cases text and splits it into words of letters and digits;
// possessives lose their "'s".
func wordsOf(text string) []string {
	f := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\''
	})
	out := f[:0]
	for _, w := range f {
		w = strings.TrimSuffix(strings.Trim(w, "'"), "'s")
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

func allStop(ws []string) bool {
	for _, w := range ws {
		if !stopWords[w] {
			return false
		}
	}
	return true
}

func hashString(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint32(s[i])) * 16777619
	}
	return h
}

// stem reduces an English word to a crude stem, so that "hidden",
// "hides" and "hide", or "vanished" and "vanish", meet. It only has to
// be consistent, not a word.
func stem(w string) string {
	if n, ok := irregular[w]; ok {
		return n
	}
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		w = w[:len(w)-3] + "y"
	case len(w) > 4 && strings.HasSuffix(w, "sses"):
		w = w[:len(w)-2]
	case len(w) > 5 && strings.HasSuffix(w, "ing"):
		w = undouble(w[:len(w)-3])
	case len(w) > 4 && strings.HasSuffix(w, "ed"):
		w = undouble(w[:len(w)-2])
	case len(w) > 4 && (strings.HasSuffix(w, "ches") || strings.HasSuffix(w, "shes") || strings.HasSuffix(w, "xes")):
		w = w[:len(w)-2]
	case len(w) > 5 && strings.HasSuffix(w, "ly"):
		w = w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:len(w)-1]
	}
	if len(w) > 4 && strings.HasSuffix(w, "e") {
		w = w[:len(w)-1]
	}
	return w
}

// undouble drops a doubled final consonant ("stopp" → "stop").
func undouble(w string) string {
	if n := len(w); n > 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

// irregular maps irregular forms to a common stem.
var irregular = map[string]string{
	"hidden": "hid", "hid": "hid", "hide": "hid", "stole": "steal", "stolen": "steal", "took": "tak", "taken": "tak",
	"sold": "sell", "bought": "buy", "went": "go", "gone": "go", "men": "man", "women": "woman", "children": "child",
	"forged": "forg", "forge": "forg", "left": "leav", "leave": "leav", "leaving": "leav", "found": "find",
	"told": "tell", "brought": "bring", "kept": "keep", "lost": "lose", "fled": "flee", "ran": "run",
}

// askWords are the question words a fallback distinguishes.
var askWords = map[string]bool{"where": true, "who": true, "what": true, "when": true, "why": true, "how": true}

// stopWords are words that carry no topic.
var stopWords = wordSet(`a an the and or but if of to in on at by for with from about into over under
	is are was were be been being am do does did doing have has had having will would shall should can could may might must
	i me my mine you your yours he him his she her hers it its we us our they them their this that these those there here
	what who whom whose which where when why how not no yes so too very just also still any some all
	tell know knows knew think say said says ask asked heard hear anything something nothing anyone someone please well now then
	hey hello hi oh ah friend friends again really good evening morning night tonight today tomorrow yesterday week
	want need like get got go going come came take give make let see look way thing things lot much many more most
	other another every each own same such only even back out off down than because while until after before
	news new sure thanks thank sorry everyone anybody somebody everybody nobody yourself myself ourselves
	can't don't won't isn't aren't wasn't i'm you're it's that's there's let's we're they're i've i'll you'll
	listen remember maybe perhaps yeah yep nope okay ok right`)

func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}
