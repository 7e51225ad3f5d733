package npc

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/glyphoxa/glyphoxa/correction"
)

// Mention is a name found in an utterance: an entity's name or alias,
// matched phonetically so a half-corrected name still counts.
type Mention = correction.Mention

// NameFinder finds the names of known NPCs and player characters in text
// (a *correction.Pipeline).
type NameFinder interface {
	FindNames(text string) []Mention
}

// AddressInput is one utterance to route.
type AddressInput struct {
	// Text is the corrected utterance.
	Text      string
	SpeakerID string
	At        time.Time
	// Present are the NPCs in the scene; empty means the scene is not set
	// and every NPC may be addressed.
	Present []string
	// Directed is the NPC the DM told to answer next, if any.
	Directed string
}

// Decision says who answers an utterance.
type Decision struct {
	// NPCID is empty when no NPC should answer; it is NPCIDs[0].
	NPCID string
	// NPCIDs are the NPCs that answer, in the order they were named
	// ("Tyrul and Goryr, what do you both think?"): each answers in turn.
	// There are at most MaxAnswering.
	NPCIDs []string
	// Reason explains the decision (for the DM's audit and tests).
	Reason string
}

// Reasons.
const (
	ReasonDirected   = "directed by the DM"
	ReasonNamed      = "addressed by name"
	ReasonFollowUp   = "follow-up to the last NPC"
	ReasonLoneNPC    = "the only NPC in the scene"
	ReasonPlayerTalk = "players talking among themselves"
	ReasonMuted      = "the NPC is muted"
	ReasonNotPresent = "the NPC is not in the scene"
	ReasonSeveral    = "spoken to together (plural you)"
)

// MaxAnswering is the most NPCs that answer one line. A line to several
// NPCs ("Tyrul and Goryr, what do you both think?", "what do you all
// think?") has each answer in turn, and every turn is a model call and
// seconds of speech the table sits through; a player naming every NPC of
// a crowded scene would hold the floor for minutes. At a table the DM
// voices a crowd's answer with two or three voices, not eight, so the
// first three NPCs in the addressing rules' order answer: the first
// named, or the NPC in conversation and then the scene's order. The rest
// answer when named again, or when the DM hands them the next line.
const MaxAnswering = 3

// maxGarbledWords is the longest line a name that starts it, without a
// comma, addresses on the strength of a "you" later on.
const maxGarbledWords = 14

// exchangeWindow is how long an exchange between players goes on after
// its last line: lines within it are the players answering each other,
// not follow-ups to the NPC (unless the NPC's partner asks it again).
const exchangeWindow = 10 * time.Second

// Addresser decides which NPC, if any, an utterance is for. It remembers
// who spoke last, so a conversation can continue without names, and which
// lines the players said to each other since, so a player answering another
// player is not taken for a follow-up. Decide sees every line in the order
// said. It is safe for concurrent use.
type Addresser struct {
	finder NameFinder
	isNPC  func(entityID string) bool
	muted  func(npcID string) bool
	follow time.Duration

	mu      sync.Mutex
	rules   *rules
	lastNPC string
	lastAt  time.Time
	lastTo  string // the player the last NPC answered
	// talked counts the lines no NPC answered since the last reply;
	// exchangeAt is when the last line of an exchange between players (a
	// line naming a player, and the lines that came soon after) was said.
	talked     int
	exchangeAt time.Time
}

// NewAddresser returns an addresser with the English rules (see
// UseLanguage). isNPC tells NPC entities from player characters; muted may
// be nil. A conversation with an NPC continues without names for
// followWindow after its last reply (default 45 s).
func NewAddresser(f NameFinder, isNPC, muted func(string) bool, followWindow time.Duration) *Addresser {
	if followWindow == 0 {
		followWindow = 45 * time.Second
	}
	if muted == nil {
		muted = func(string) bool { return false }
	}
	return &Addresser{finder: f, isNPC: isNPC, muted: muted, follow: followWindow, rules: &english}
}

// UseLanguage sets the addressing rules of the table's language, a BCP-47
// code such as "en", "de" or "de-AT" (the campaign's speech-to-text
// language). It returns false, and keeps the English rules, for a language
// it has no rules for; "" is English.
func (a *Addresser) UseLanguage(code string) bool {
	r, ok := rulesFor(code)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rules = r
	return ok
}

// NoteReply records that npcID answered playerID at a time.
func (a *Addresser) NoteReply(npcID, playerID string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastNPC, a.lastAt, a.lastTo = npcID, at, playerID
	a.talked, a.exchangeAt = 0, time.Time{}
}

// Withdraw forgets npcID's last reply (the DM withdrew it: the line was not
// for that NPC): the next line is not taken for a follow-up to it.
func (a *Addresser) Withdraw(npcID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lastNPC == npcID {
		a.lastNPC, a.lastAt, a.lastTo = "", time.Time{}, ""
	}
}

// Likely returns the NPC most likely to be addressed next, before the
// words are known (for assembling its context ahead of time): the NPC in
// conversation, if it is still present, else the only NPC in the scene.
func (a *Addresser) Likely(present []string, at time.Time) string {
	a.mu.Lock()
	lastNPC, lastAt := a.lastNPC, a.lastAt
	a.mu.Unlock()
	if lastNPC != "" && at.Sub(lastAt) <= a.follow && (len(present) == 0 || slices.Contains(present, lastNPC)) && !a.muted(lastNPC) {
		return lastNPC
	}
	if len(present) == 1 && a.isNPC(present[0]) && !a.muted(present[0]) {
		return present[0]
	}
	return ""
}

// Lone reports whether text is a name said alone, to an NPC that may
// answer: nothing but the NPC's name, greetings or openers before it, and
// punctuation ("Goryr…", "Hey Tyrul.", "Excuse me, Goryr?"). Such a line
// usually has its question still to come: the table waits briefly for the
// same speaker to go on and makes the two one turn. It returns the first
// NPC named. Every other line, including a player's name alone, is not.
func (a *Addresser) Lone(text string, present []string) (string, bool) {
	a.mu.Lock()
	r := a.rules
	a.mu.Unlock()
	words := tokenize(text)
	ms := a.finder.FindNames(text)
	if len(ms) == 0 || len(words) == 0 {
		return "", false
	}
	named := make([]bool, len(words))
	for _, m := range ms {
		for k, w := range words {
			if w.start >= m.Start && w.end <= m.End {
				named[k] = true
			}
		}
	}
	for k, w := range words {
		if !named[k] && !r.openers[w.text] && !r.fillers[w.text] && !r.joiners[w.text] {
			return "", false
		}
	}
	for _, m := range ms {
		if a.isNPC(m.EntityID) && !a.muted(m.EntityID) && (len(present) == 0 || slices.Contains(present, m.EntityID)) {
			return m.EntityID, true
		}
	}
	return "", false
}

// Decide routes one utterance. Lines must come in the order they were said:
// Decide notes the lines the players say among themselves.
func (a *Addresser) Decide(in AddressInput) Decision {
	a.mu.Lock()
	r := a.rules
	lastNPC, lastAt, lastTo := a.lastNPC, a.lastAt, a.lastTo
	talked, exchangeAt := a.talked, a.exchangeAt
	a.mu.Unlock()
	d, exchange := a.decide(r, in, lastNPC, lastAt, lastTo, talked, exchangeAt)
	if d.NPCID == "" && d.Reason == ReasonPlayerTalk {
		a.mu.Lock()
		a.talked++
		if exchange && in.At.After(a.exchangeAt) {
			a.exchangeAt = in.At
		}
		a.mu.Unlock()
	}
	return d
}

// Peek routes a partial transcript without noting it: what Decide would
// say now, for starting an NPC's context while the player still speaks.
func (a *Addresser) Peek(in AddressInput) Decision {
	a.mu.Lock()
	r := a.rules
	lastNPC, lastAt, lastTo := a.lastNPC, a.lastAt, a.lastTo
	talked, exchangeAt := a.talked, a.exchangeAt
	a.mu.Unlock()
	d, _ := a.decide(r, in, lastNPC, lastAt, lastTo, talked, exchangeAt)
	return d
}

// decide routes one utterance; exchange reports a line of an exchange
// between players.
func (a *Addresser) decide(r *rules, in AddressInput, lastNPC string, lastAt time.Time, lastTo string, talked int, exchangeAt time.Time) (Decision, bool) {
	present := func(id string) bool { return len(in.Present) == 0 || slices.Contains(in.Present, id) }
	choose := func(id, reason string) Decision {
		if a.muted(id) {
			return Decision{Reason: ReasonMuted}
		}
		return Decision{NPCID: id, NPCIDs: []string{id}, Reason: reason}
	}
	if in.Directed != "" {
		return choose(in.Directed, ReasonDirected), false
	}
	words := tokenize(in.Text)
	mentions := a.finder.FindNames(in.Text)
	inExchange := !exchangeAt.IsZero() && in.At.Sub(exchangeAt) <= exchangeWindow
	if group, ok := r.vocative(in.Text, words, mentions); ok {
		var npcs []string
		reason := ReasonPlayerTalk
		for _, m := range group {
			switch {
			case !a.isNPC(m.EntityID) || slices.Contains(npcs, m.EntityID):
			case !present(m.EntityID):
				if reason == ReasonPlayerTalk {
					reason = ReasonNotPresent
				}
			case a.muted(m.EntityID):
				reason = ReasonMuted
			default:
				npcs = append(npcs, m.EntityID)
			}
		}
		if len(npcs) == 0 {
			// A player's name: the players talk among themselves.
			return Decision{Reason: reason}, reason == ReasonPlayerTalk
		}
		return answering(npcs, ReasonNamed), false
	}
	if !inExchange && !mentionsPlayer(mentions, a.isNPC) && r.speaksToSeveral(in.Text, words) {
		if npcs := a.several(r, in, words, mentions, lastNPC, lastAt); len(npcs) > 0 {
			return answering(npcs, ReasonSeveral), false
		}
	}
	addressed := r.secondPerson(in.Text, words) || r.isQuestion(in.Text, words) || r.isImperative(words)
	// An NPC named in the third person is talked about, not to ("did
	// Tyrul say ten or twelve?"); a mention of another NPC ("do you
	// trust Elara?") does not turn the conversation away from the NPC
	// being spoken to.
	mentioned := func(id string) bool {
		return slices.ContainsFunc(mentions, func(m Mention) bool { return m.EntityID == id })
	}
	if lastNPC != "" && in.At.Sub(lastAt) <= a.follow && present(lastNPC) && !mentioned(lastNPC) &&
		(addressed || r.isShortReply(words)) {
		partner := lastTo == "" || lastTo == in.SpeakerID
		switch {
		case inExchange:
			// The players are answering each other; only the NPC's
			// partner asking again goes back to it.
			if partner && r.isQuestion(in.Text, words) {
				return choose(lastNPC, ReasonFollowUp), false
			}
		case partner:
			return choose(lastNPC, ReasonFollowUp), false
		case r.secondPerson(in.Text, words) && talked == 0:
			// Another player asks the NPC right after its reply, before
			// anyone else spoke.
			return choose(lastNPC, ReasonFollowUp), false
		}
	}
	if addressed && len(in.Present) == 1 && a.isNPC(in.Present[0]) && !mentionsPlayer(mentions, a.isNPC) &&
		!mentioned(in.Present[0]) && !inExchange {
		return choose(in.Present[0], ReasonLoneNPC), false
	}
	// A line that names a player, or comes soon after such a line, is
	// part of an exchange between players.
	return Decision{Reason: ReasonPlayerTalk}, inExchange || mentionsPlayer(mentions, a.isNPC)
}

// several resolves a plural "you" ("was wisst ihr…?", "you both"): the NPCs
// named in the line, other than as an object ("was haltet ihr von
// Tyrul?"), in the order named; else, while a conversation with an NPC of
// the scene goes on, every NPC of the scene, that one first (decide keeps
// the first MaxAnswering). Without a scene set, or a conversation, it
// resolves to none (the usual rules decide): the players may be speaking
// to each other.
func (a *Addresser) several(r *rules, in AddressInput, words []word, mentions []Mention, lastNPC string, lastAt time.Time) []string {
	present := func(id string) bool { return len(in.Present) == 0 || slices.Contains(in.Present, id) }
	var npcs []string
	add := func(id string) {
		if a.isNPC(id) && present(id) && !a.muted(id) && !slices.Contains(npcs, id) {
			npcs = append(npcs, id)
		}
	}
	for _, g := range r.groups(in.Text, words, mentions) {
		if g.first > 0 && r.objectTakers[words[g.first-1].text] {
			continue
		}
		for _, m := range g.names {
			add(m.EntityID)
		}
	}
	if len(npcs) > 0 || len(in.Present) < 2 || lastNPC == "" || in.At.Sub(lastAt) > a.follow || !present(lastNPC) {
		return npcs
	}
	add(lastNPC)
	for _, id := range in.Present {
		add(id)
	}
	return npcs
}

// answering is the decision that npcs, in the order they answer, answer a
// line: the first MaxAnswering of them.
func answering(npcs []string, reason string) Decision {
	npcs = npcs[:min(len(npcs), MaxAnswering)]
	return Decision{NPCID: npcs[0], NPCIDs: npcs, Reason: reason}
}

func mentionsPlayer(ms []Mention, isNPC func(string) bool) bool {
	for _, m := range ms {
		if !isNPC(m.EntityID) {
			return true
		}
	}
	return false
}

// word is a token with its byte span.
type word struct {
	text       string // lower case
	start, end int
}

func tokenize(s string) []word {
	var out []word
	start := -1
	for i, r := range s {
		inWord := unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\''
		if inWord && start < 0 {
			start = i
		}
		if !inWord && start >= 0 {
			out = append(out, word{strings.ToLower(s[start:i]), start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, word{strings.ToLower(s[start:]), start, len(s)})
	}
	return out
}

// span is a run of names said together ("Tyrul and Goryr"), as word
// indexes and byte offsets.
type span struct {
	names       []Mention
	first, last int // word indexes
	start, end  int // byte offsets in the text
}

// groups joins the mentions said together: names separated only by
// commas or a joining word ("and", "und").
func (r *rules) groups(text string, words []word, ms []Mention) []span {
	var out []span
	for _, m := range ms {
		first, last := -1, -1
		for k, w := range words {
			if w.start >= m.Start && w.end <= m.End {
				if first < 0 {
					first = k
				}
				last = k
			}
		}
		if first < 0 {
			continue
		}
		if n := len(out); n > 0 && out[n-1].end <= m.Start && r.joinsNames(text[out[n-1].end:m.Start]) {
			g := &out[n-1]
			g.names, g.last, g.end = append(g.names, m), last, m.End
			continue
		}
		out = append(out, span{names: []Mention{m}, first: first, last: last, start: m.Start, end: m.End})
	}
	return out
}

// joinsNames reports whether the text between two names joins them into
// one list: commas, spaces and joining words only.
func (r *rules) joinsNames(between string) bool {
	for _, w := range tokenize(between) {
		if !r.joiners[w.text] {
			return false
		}
	}
	for _, c := range between {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && c != '\'' && c != ' ' && c != ',' && c != '&' {
			return false
		}
	}
	return true
}

// setOff reports whether text (what follows a name) starts with
// punctuation that sets the name off, or is empty.
func setOff(after string) bool {
	if after == "" {
		return true
	}
	r, _ := utf8.DecodeRuneInString(after)
	switch r {
	case ',', '?', '!', '.', '—', '-', '…', ';', ':':
		return true
	}
	return false
}

// sentenceStart is the byte offset where the sentence holding offset i
// begins.
func sentenceStart(text string, i int) int {
	k := strings.LastIndexAny(text[:i], ".!?…")
	if k < 0 {
		return 0
	}
	_, n := utf8.DecodeRuneInString(text[k:])
	return k + n
}

// vocative finds the names used to address someone: at the start of a
// sentence (after openers) or at the end of the utterance or of one of its
// clauses, set off by punctuation, and not followed by a third-person verb.
// Names said together ("Tyrul and Goryr, …") address all of them.
func (r *rules) vocative(text string, words []word, ms []Mention) ([]Mention, bool) {
	for _, g := range r.groups(text, words, ms) {
		first, last := g.first, g.last
		after := strings.TrimSpace(text[g.end:])
		// A possessive right after: a reference.
		if strings.HasPrefix(after, "'s") || strings.HasPrefix(after, "’s") {
			continue
		}
		from := sentenceStart(text, g.start)
		atStart := true
		for k := 0; k < first; k++ {
			if words[k].start >= from && !r.openers[words[k].text] {
				atStart = false
				break
			}
		}
		// Speech-to-text often hears the pause after a name as "and" or
		// "uh" ("Brannoc and what do you know…", "Brannoc and the Guild
		// spilled ale us for the job?" for "Brannoc, can the Guild still
		// pay us…"): fillers that a question follows stand for the comma.
		if atStart && last+1 < len(words) && r.fillers[words[last+1].text] {
			k := last + 1
			for k < len(words) && r.fillers[words[k].text] {
				k++
			}
			if k < len(words) && (r.secondPersonNext(words, k-1) || strings.HasSuffix(strings.TrimSpace(text), "?")) {
				return g.names, true
			}
		}
		if last+1 < len(words) && !setOff(after) && r.isThirdPerson(words[last+1].text) {
			continue
		}
		clauseEnd := setOff(after) && (strings.HasSuffix(strings.TrimSpace(text[:g.start]), ",") || strings.TrimSpace(text[:g.start]) == "")
		if (atStart && (setOff(after) || r.secondPersonNext(words, last))) || clauseEnd {
			return g.names, true
		}
		// Speech-to-text writes no commas and may hear a name's last part
		// as another word ("Brannoc guild do you know…" for Brannoc
		// Gildmane): a name that starts the line addresses its bearer when
		// the rest speaks to someone, and so does a name that ends a line
		// spoken to someone, unless it is the object of the last words
		// ("do you trust Elara").
		// A long line that goes on about the name (the DM's narration:
		// "Sefa the ferrywoman leans on her pole and watches you…") is
		// about its bearer unless it asks something.
		rest := words[last+1:]
		asks := strings.HasSuffix(strings.TrimSpace(text), "?") || r.hasQuestionWord(rest)
		if atStart && (asks || len(words) <= maxGarbledWords && r.secondPerson(text[g.end:], rest)) {
			return g.names, true
		}
		if last == len(words)-1 && first > 0 && !r.objectTakers[words[first-1].text] &&
			(r.secondPerson(text[:g.start], words[:first]) || r.questionWords[words[0].text] || r.isImperative(words[:first])) {
			return g.names, true
		}
	}
	return nil, false
}

func (r *rules) hasQuestionWord(ws []word) bool {
	return slices.ContainsFunc(ws, func(w word) bool { return r.questionWords[w.text] })
}

// isThirdPerson reports a verb that makes the name before it a reference
// ("Grimjaw said…", "Goryr ist…"), including a language's regular
// third-person forms ("Brannoc turns to the party…").
func (r *rules) isThirdPerson(w string) bool {
	if r.thirdPerson[w] {
		return true
	}
	if r.thirdPersonEnding == "" || r.notThirdPerson[w] || r.secondPersonNextWords[w] || r.questionWords[w] {
		return false
	}
	return len(w) > 3 && strings.HasSuffix(w, r.thirdPersonEnding) && !strings.HasSuffix(w, r.thirdPersonEnding+r.thirdPersonEnding) &&
		!(r.notThirdPersonSuffix != "" && strings.HasSuffix(w, r.notThirdPersonSuffix))
}

// secondPersonNext: "Grimjaw what do you know" (no comma in speech-to-text
// output) still addresses Grimjaw when a question word or "you" follows.
func (r *rules) secondPersonNext(words []word, last int) bool {
	if last+1 >= len(words) {
		return true
	}
	n := words[last+1].text
	if r.needsYou[n] {
		// "wissen Sie…" asks; "wissen beide etwas" tells.
		return last+2 < len(words) && (r.secondPersonWords[words[last+2].text] || words[last+2].text == "sie")
	}
	return r.questionWords[n] || r.secondPersonNextWords[n]
}

// secondPerson reports words that speak to someone ("you", "du", "Sie").
// text is the stretch of the utterance the words come from: the formal
// forms of address are told from their homonyms by case ("Sie" is "you",
// "sie" is "she" or "they").
func (r *rules) secondPerson(text string, ws []word) bool {
	several := -1 // unknown
	for _, w := range ws {
		if w.text == r.pluralYou && r.pluralYou != "" {
			// "ihr" is "you" beside a verb of yours, else "her".
			if several < 0 {
				several = 0
				if r.speaksToSeveral(text, tokenize(text)) {
					several = 1
				}
			}
			if several == 0 {
				continue
			}
		}
		if r.secondPersonWords[w.text] {
			return true
		}
	}
	if len(r.formalYou) > 0 {
		tw := tokenize(text)
		for k, w := range tw {
			raw := text[w.start:w.end]
			if slices.Contains(r.formalYou, raw) && (k > 0 || raw == "Ihnen") {
				return true
			}
		}
	}
	return false
}

func (r *rules) isQuestion(s string, ws []word) bool {
	if strings.HasSuffix(strings.TrimSpace(s), "?") {
		return true
	}
	return len(ws) > 0 && (r.questionWords[ws[0].text] || r.questionStarters[ws[0].text])
}

func (r *rules) isImperative(ws []word) bool {
	return len(ws) > 0 && r.imperatives[ws[0].text]
}

func (r *rules) isShortReply(ws []word) bool {
	return len(ws) > 0 && len(ws) <= 4 && r.shortReplies[ws[0].text]
}
