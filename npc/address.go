package npc

import (
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

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
	// NPCID is empty when no NPC should answer.
	NPCID string
	// NPCIDs are the NPCs that answer, in turn (NPCID first).
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
)

// Addresser decides which NPC, if any, an utterance is for. It remembers
// who spoke last, so a conversation can continue without names. It is safe
// for concurrent use.
type Addresser struct {
	finder  NameFinder
	isNPC   func(entityID string) bool
	muted   func(npcID string) bool
	follow  time.Duration
	mu      sync.Mutex
	lastNPC string
	lastAt  time.Time
	lastTo  string // the player the last NPC answered
}

// NewAddresser returns an addresser. isNPC tells NPC entities from player
// characters; muted may be nil. A conversation with an NPC continues
// without names for followWindow after its last reply (default 45 s).
func NewAddresser(f NameFinder, isNPC, muted func(string) bool, followWindow time.Duration) *Addresser {
	if followWindow == 0 {
		followWindow = 45 * time.Second
	}
	if muted == nil {
		muted = func(string) bool { return false }
	}
	return &Addresser{finder: f, isNPC: isNPC, muted: muted, follow: followWindow}
}

// NoteReply records that npcID answered playerID at a time.
func (a *Addresser) NoteReply(npcID, playerID string, at time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lastNPC, a.lastAt, a.lastTo = npcID, at, playerID
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

// Decide routes one utterance.
func (a *Addresser) Decide(in AddressInput) Decision {
	a.mu.Lock()
	lastNPC, lastAt, lastTo := a.lastNPC, a.lastAt, a.lastTo
	a.mu.Unlock()
	present := func(id string) bool {
		if len(in.Present) == 0 {
			return true
		}
		for _, p := range in.Present {
			if p == id {
				return true
			}
		}
		return false
	}
	choose := func(id, reason string) Decision {
		if a.muted(id) {
			return Decision{Reason: ReasonMuted}
		}
		return Decision{NPCID: id, NPCIDs: []string{id}, Reason: reason}
	}
	if in.Directed != "" {
		return choose(in.Directed, ReasonDirected)
	}
	words := tokenize(in.Text)
	mentions := a.finder.FindNames(in.Text)
	if m, ok := vocative(in.Text, words, mentions); ok {
		if !a.isNPC(m.EntityID) {
			return Decision{Reason: ReasonPlayerTalk}
		}
		if !present(m.EntityID) {
			return Decision{Reason: ReasonNotPresent}
		}
		return choose(m.EntityID, ReasonNamed)
	}
	addressed := secondPerson(words) || isQuestion(in.Text) || isImperative(words)
	// A mention of another NPC in the third person ("ask Elara about it")
	// does not turn the conversation away from the NPC being spoken to.
	if lastNPC != "" && in.At.Sub(lastAt) <= a.follow && present(lastNPC) &&
		(addressed || isShortReply(words)) && (lastTo == "" || lastTo == in.SpeakerID || secondPerson(words)) {
		return choose(lastNPC, ReasonFollowUp)
	}
	if addressed && len(in.Present) == 1 && a.isNPC(in.Present[0]) && !mentionsPlayer(mentions, a.isNPC) {
		return choose(in.Present[0], ReasonLoneNPC)
	}
	return Decision{Reason: ReasonPlayerTalk}
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

// greetings and openers may stand before a vocative name.
var openers = map[string]bool{"hey": true, "hi": true, "hello": true, "oi": true, "oy": true, "ok": true, "okay": true,
	"so": true, "well": true, "excuse": true, "me": true, "pardon": true, "greetings": true, "good": true, "morning": true,
	"evening": true, "afternoon": true, "and": true, "but": true, "now": true, "listen": true, "look": true, "yo": true,
	"ah": true, "oh": true, "please": true, "sir": true, "madam": true, "master": true, "lady": true, "lord": true, "dear": true,
	"thanks": true, "thank": true, "you": false}

// thirdPerson verbs after a name mark a reference, not an address:
// "Grimjaw said…", "Elara is…".
var thirdPerson = map[string]bool{"is": true, "was": true, "said": true, "says": true, "told": true, "tells": true,
	"has": true, "had": true, "knows": true, "knew": true, "thinks": true, "thought": true, "wants": true, "wanted": true,
	"will": true, "would": true, "might": true, "must": true, "lives": true, "lied": true, "lies": true, "went": true,
	"gave": true, "gives": true, "did": true, "does": true, "can't": true, "isn't": true, "wasn't": true, "and": true,
	"or": true, "mentioned": true, "seems": true, "looks": true, "'s": true, "s": true}

// vocative finds a name used to address someone: at the start (after
// openers) or at the end of the utterance or of one of its clauses, set off
// by a comma or question mark, and not followed by a third-person verb.
func vocative(text string, words []word, ms []Mention) (Mention, bool) {
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
		after := strings.TrimSpace(text[m.End:])
		// A possessive or a third-person verb right after: a reference.
		if strings.HasPrefix(after, "'s") || strings.HasPrefix(after, "’s") {
			continue
		}
		// Speech-to-text often hears the pause after a name as "and" or
		// "uh" ("Brannoc and what do you know…"): a filler that a question
		// or "you" follows is the comma it stands for.
		if last+2 < len(words) && fillers[words[last+1].text] && secondPersonNext(words, last+1) {
			after = ", " + after
			last++
		}
		if last+1 < len(words) && thirdPerson[words[last+1].text] && !strings.HasPrefix(after, ",") {
			continue
		}
		atStart := true
		for k := 0; k < first; k++ {
			if !openers[words[k].text] {
				atStart = false
				break
			}
		}
		setOff := after == "" || strings.HasPrefix(after, ",") || strings.HasPrefix(after, "?") ||
			strings.HasPrefix(after, "!") || strings.HasPrefix(after, ".") || strings.HasPrefix(after, "—") ||
			strings.HasPrefix(after, "-")
		before := strings.TrimSpace(text[:m.Start])
		clauseEnd := setOff && (strings.HasSuffix(before, ",") || before == "") // "…, Grimjaw?"
		if (atStart && (setOff || secondPersonNext(words, last))) || clauseEnd {
			return m, true
		}
		// Speech-to-text writes no commas and may hear a name's last part
		// as another word ("Brannoc guild do you know…" for Brannoc
		// Gildmane): a name that starts the line addresses its bearer when
		// the rest speaks to someone, and so does a name that ends a line
		// spoken to someone, unless it is the object of the last words
		// ("do you trust Elara").
		rest := words[last+1:]
		if atStart && (secondPerson(rest) || strings.HasSuffix(strings.TrimSpace(text), "?") || hasQuestionWord(rest)) {
			return m, true
		}
		if last == len(words)-1 && first > 0 && !objectTakers[words[first-1].text] &&
			(secondPerson(words[:first]) || questionWords[words[0].text] || isImperative(words[:first])) {
			return m, true
		}
	}
	return Mention{}, false
}

// fillers are what speech-to-text writes for a pause.
var fillers = map[string]bool{"and": true, "uh": true, "um": true, "er": true, "ah": true}

func hasQuestionWord(ws []word) bool {
	return slices.ContainsFunc(ws, func(w word) bool { return questionWords[w.text] })
}

// objectTakers are words after which a name is their object, not the
// person spoken to: prepositions, articles, and verbs that take a person.
var objectTakers = map[string]bool{"of": true, "about": true, "to": true, "with": true, "for": true, "from": true,
	"at": true, "in": true, "on": true, "by": true, "like": true, "than": true, "and": true, "or": true, "nor": true,
	"the": true, "a": true, "an": true, "trust": true, "know": true, "knew": true, "see": true, "saw": true, "seen": true,
	"meet": true, "met": true, "ask": true, "asked": true, "tell": true, "told": true, "find": true, "found": true,
	"love": true, "hate": true, "kill": true, "killed": true, "help": true, "helped": true, "fight": true, "follow": true,
	"believe": true, "think": true, "heard": true, "hear": true, "call": true, "called": true, "fear": true,
	"serve": true, "serves": true, "is": true, "was": true, "are": true, "were": true, "be": true, "not": true,
	"visit": true, "pay": true, "paid": true, "owe": true, "thank": true, "against": true, "without": true, "under": true,
	"before": true, "after": true, "behind": true, "beside": true, "near": true, "into": true, "through": true,
	"towards": true, "toward": true, "his": true, "her": true, "their": true, "my": true, "our": true, "your": true}

// secondPersonNext: "Grimjaw what do you know" (no comma in speech-to-text
// output) still addresses Grimjaw when a question word or "you" follows.
func secondPersonNext(words []word, last int) bool {
	if last+1 >= len(words) {
		return true
	}
	n := words[last+1].text
	return questionWords[n] || n == "you" || n == "your" || n == "tell" || n == "can" || n == "could" || n == "do" ||
		n == "did" || n == "have" || n == "are" || n == "will" || n == "would" || n == "please" || n == "i" || n == "we"
}

var questionWords = map[string]bool{"what": true, "who": true, "where": true, "when": true, "why": true, "how": true,
	"which": true, "whose": true}

func secondPerson(ws []word) bool {
	for _, w := range ws {
		switch w.text {
		case "you", "your", "yours", "you're", "you've", "you'll", "you'd", "yourself", "thee", "thou", "thy", "ye":
			return true
		}
	}
	return false
}

func isQuestion(s string) bool {
	s = strings.TrimSpace(s)
	if strings.HasSuffix(s, "?") {
		return true
	}
	ws := tokenize(s)
	return len(ws) > 0 && (questionWords[ws[0].text] || ws[0].text == "do" || ws[0].text == "does" || ws[0].text == "can" ||
		ws[0].text == "could" || ws[0].text == "would" || ws[0].text == "will" || ws[0].text == "is" || ws[0].text == "are" ||
		ws[0].text == "have" || ws[0].text == "did")
}

// imperatives that players direct at an NPC.
var imperatives = map[string]bool{"tell": true, "show": true, "give": true, "sell": true, "take": true, "help": true,
	"wait": true, "stop": true, "listen": true, "explain": true, "describe": true, "follow": true, "lead": true, "open": true}

func isImperative(ws []word) bool {
	return len(ws) > 0 && imperatives[ws[0].text]
}

// shortReplies continue a conversation without being questions.
var shortReplies = map[string]bool{"yes": true, "no": true, "yeah": true, "nope": true, "okay": true, "ok": true,
	"thanks": true, "sure": true, "deal": true, "agreed": true, "fine": true, "alright": true, "really": true,
	"hmm": true, "aye": true, "nay": true, "please": true}

func isShortReply(ws []word) bool {
	return len(ws) > 0 && len(ws) <= 4 && shortReplies[ws[0].text]
}

// UseLanguage stub (before tuning).
func (a *Addresser) UseLanguage(string) bool { return true }

// Lone stub (before tuning).
func (a *Addresser) Lone(string, []string) (string, bool) { return "", false }
