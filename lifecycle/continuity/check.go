package continuity

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Kind is what a finding contradicts.
type Kind string

// Kinds of contradiction.
const (
	// KindPlace: someone placed where canon puts them elsewhere.
	KindPlace Kind = "place"
	// KindDead: a dead one spoken of as alive.
	KindDead Kind = "dead"
	// KindHolder: an item in the hands of someone canon does not give it to.
	KindHolder Kind = "holder"
)

// Finding is one contradiction between a sentence and canon.
type Finding struct {
	Kind Kind `json:"kind"`
	// Sentence is the sentence of the line that contradicts canon.
	Sentence string `json:"sentence"`
	// Claim says what the sentence claims ("Grimjaw is at the Docks").
	Claim string `json:"claim"`
	// Canon is the fact it contradicts.
	Canon Fact `json:"canon"`
	// Subject is the entity the claim is about (the claimed holder, for
	// KindHolder); Object the place claimed (KindPlace) or the holder canon
	// names (KindHolder). Rel is the relation the claim would be as a fact
	// (LOCATED_AT, LIVES_IN, GAVE; empty for KindDead).
	Subject string `json:"subject"`
	Object  string `json:"object,omitempty"`
	Rel     string `json:"rel,omitempty"`
	// Item is the item's words (KindHolder).
	Item string `json:"item,omitempty"`
	// Unsaid: the sentence was an NPC's draft reply, and was not said.
	Unsaid bool `json:"unsaid,omitempty"`
}

// hedges mark a sentence that does not state canon: hypotheses, beliefs,
// reported speech, jokes, the past, negations, time clauses.
var hedges = map[string]bool{
	"if": true, "maybe": true, "perhaps": true, "might": true, "could": true, "would": true, "should": true,
	"suppose": true, "supposedly": true, "imagine": true, "probably": true, "possibly": true, "unless": true,
	"whether": true, "wonder": true, "rumor": true, "rumour": true, "rumors": true, "rumours": true, "heard": true,
	"said": true, "say": true, "told": true, "tells": true, "claims": true, "claimed": true, "claim": true,
	"according": true, "apparently": true, "allegedly": true, "lie": true, "lied": true, "lying": true, "liar": true,
	"lies": true, "joke": true, "joking": true, "kidding": true, "jk": true, "lol": true, "haha": true, "pretend": true,
	"pretending": true, "dream": true, "dreamt": true, "dreamed": true, "wish": true, "hope": true, "think": true,
	"thought": true, "guess": true, "believe": true, "believes": true, "bet": true, "assume": true, "was": true,
	"were": true, "used": true, "had": true, "yesterday": true, "ago": true, "last": true, "earlier": true,
	"not": true, "never": true, "no": true, "nobody": true, "when": true, "until": true, "whispers": true,
	"whispered": true, "insists": true, "swears": true, "swore": true, "pretends": true, "disguised": true,
	"illusion": true, "fake": true, "forgery": true, "replica": true, "copy": true, "seems": true, "looks": true,
	"ooc": true, "hypothetically": true, "story": true, "legend": true, "song": true, "hear": true, "hears": true,
}

// deathTalk marks a sentence that speaks of a death: the dead one in it
// is not spoken of as alive.
var deathTalk = map[string]bool{
	"dead": true, "died": true, "death": true, "killed": true, "kill": true, "slain": true, "corpse": true, "body": true,
	"ghost": true, "spirit": true, "grave": true, "tomb": true, "buried": true, "bury": true, "funeral": true,
	"remains": true, "memory": true, "memorial": true, "undead": true, "zombie": true, "skeleton": true,
	"resurrect": true, "resurrected": true, "revive": true, "revived": true, "raise": true, "seance": true,
	"necromancer": true, "avenge": true, "late": true, "rip": true, "mourn": true, "mourning": true, "murdered": true,
	"murderer": true, "killer": true, "bones": true, "haunt": true, "haunts": true, "haunted": true, "statue": true,
	"portrait": true, "painting": true, "shrine": true, "alive": false,
}

// speech verbs report what someone else says.
var speech = set("says", "writes", "reads", "shouts", "mentions", "reports", "tell", "swear", "announces", "sings")

// connectors between someone and a place.
var (
	atPlace = set("is at", "is in", "is inside", "is still at", "is still in", "is now at", "is now in", "is back at",
		"is back in", "is staying at", "is staying in", "is waiting at", "is waiting in", "is waiting for us at",
		"is waiting for us in", "is hiding in", "is hiding at", "is currently at", "is currently in", "is over at",
		"is right at", "is right in", "is down at", "is up at", "am at", "am in", "am still at", "am still in",
		"am now in", "am now at", "are at", "are in", "is sitting in", "is sitting at", "is standing in", "is standing at")
	livesIn = set("lives in", "lives at", "is living in", "is living at", "now lives in", "still lives in", "live in",
		"live at", "am living in")
	holdsIt = set("has", "has got", "is got", "got", "is holding", "holds", "is carrying", "carries", "is wielding",
		"wields", "owns", "now has", "still has", "is now holding", "have", "have got", "am holding", "am carrying",
		"am wielding", "own")
	// alive after a dead one's name.
	aliveAfter = []string{"is alive", "is still alive", "is here", "is waiting", "is coming", "is asking", "is looking",
		"is selling", "is at", "is in", "is standing", "is sitting", "is going", "is watching", "is running",
		"is hiding", "is staying", "is living", "lives", "says", "wants", "knows", "will", "can", "needs",
		"is telling", "just told", "is expecting", "sends", "greets", "smiles", "nods", "walks", "runs", "waves",
		"is drinking", "is working", "is open", "is back", "is on", "is fine", "is well", "walks in", "laughs",
		"offers", "agrees", "is offering", "is serving", "pours"}
	// alive before a dead one's name.
	aliveBefore = []string{"talk to", "speak to", "speak with", "talk with", "ask", "tell", "meet", "meet with",
		"visit", "go see", "pay", "hire", "greet", "hello", "hi", "thank", "thanks"}
	determiners = set("the", "a", "an", "my", "his", "her", "their", "our", "your", "this", "that", "its")
)

func set(xs ...string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// mention is an entity named in a sentence: tokens [start, end).
type mention struct {
	start, end int
	id         string
}

// Check returns the contradictions between text, said by speaker (a
// display name; "" when unknown), and canon, one per claim at most. It
// reads only c: it is safe for concurrent use and takes microseconds.
func (c *Canon) Check(speaker, text string) []Finding {
	if c == nil {
		return nil
	}
	me, _ := c.Resolve(speaker)
	var out []Finding
	for _, s := range sentences(text) {
		out = append(out, c.sentence(me, s)...)
	}
	return out
}

// sentences splits text at . ! ? ; and line breaks, keeping each
// sentence's end mark.
func sentences(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if r == '.' || r == '!' || r == '?' || r == ';' || r == '\n' {
			if s := strings.TrimSpace(text[start : i+1]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
	}
	if s := strings.TrimSpace(text[start:]); s != "" {
		out = append(out, s)
	}
	return out
}

func (c *Canon) sentence(me, s string) []Finding {
	if strings.HasSuffix(s, "?") || strings.Contains(s, "\"") || strings.Contains(s, "“") {
		return nil // a question, or someone quoted
	}
	t := words(s)
	for _, w := range t {
		if hedges[w] {
			return nil
		}
	}
	ms := c.mentions(t)
	var out []Finding
	seen := map[string]bool{}
	add := func(f Finding) {
		k := string(f.Kind) + "\x00" + f.Subject + "\x00" + f.Object + "\x00" + f.Item
		if !seen[k] {
			seen[k] = true
			f.Sentence = s
			out = append(out, f)
		}
	}
	// The speaker speaking of themself.
	if me != "" {
		for i, w := range t {
			if w == "i" {
				ms = append(ms, mention{start: i, end: i + 1, id: me})
			}
		}
		slices.SortFunc(ms, func(a, b mention) int { return a.start - b.start })
	}
	talksDeath := false
	for _, w := range t {
		if deathTalk[w] {
			talksDeath = true
		}
	}
	// Words after a speech verb ("the letter says Tobin is waiting") are
	// someone's report, not canon; the speaker of the verb is not.
	reported := len(t)
	for i, w := range t {
		if speech[w] {
			reported = i
			break
		}
	}
	for k, m := range ms {
		if m.start > reported {
			break
		}
		if f, ok := c.placeClaim(t, ms, k); ok {
			add(f)
		}
		if d, ok := c.dead[m.id]; ok && !talksDeath && c.aliveClaim(t, m) {
			add(Finding{Kind: KindDead, Claim: c.Name(m.id) + " is spoken of as alive", Canon: d, Subject: m.id})
		}
		if f, ok := c.holderClaim(t, m); ok {
			add(f)
		}
	}
	if me != "" {
		if f, ok := c.handover(t, me); ok {
			add(f)
		}
	}
	return out
}

// mentions finds the entities named in t, longest names first, left to
// right, without overlaps.
func (c *Canon) mentions(t []string) []mention {
	var out []mention
	for i := 0; i < len(t); {
		found := false
		for _, n := range c.byFirst[t[i]] {
			if i+len(n.words) <= len(t) && slices.Equal(t[i:i+len(n.words)], n.words) {
				out = append(out, mention{start: i, end: i + len(n.words), id: n.id})
				i += len(n.words)
				found = true
				break
			}
		}
		if !found {
			i++
		}
	}
	return out
}

// between is the words from a to b without determiners.
func between(t []string, a, b int) string {
	var ws []string
	for _, w := range t[a:b] {
		if !determiners[w] {
			ws = append(ws, w)
		}
	}
	return strings.Join(ws, " ")
}

// placeClaim reads "<someone> is at <place>" and "<someone> lives in
// <place>" at mention k.
func (c *Canon) placeClaim(t []string, ms []mention, k int) (Finding, bool) {
	if k+1 >= len(ms) {
		return Finding{}, false
	}
	m, n := ms[k], ms[k+1]
	if n.id == m.id || n.start < m.end {
		return Finding{}, false
	}
	conn := between(t, m.end, n.start)
	var canon place
	var ok bool
	rel := ""
	switch {
	case atPlace[conn]:
		canon, ok = c.located[m.id]
		rel = RelLocatedAt
	case livesIn[conn]:
		canon, ok = c.lives[m.id]
		rel = RelLivesIn
	}
	if !ok || c.within(n.id, canon.target) {
		return Finding{}, false
	}
	verb := "is at"
	if rel == RelLivesIn {
		verb = "lives in"
	}
	return Finding{Kind: KindPlace, Claim: fmt.Sprintf("%s %s %s", c.Name(m.id), verb, c.Name(n.id)), Canon: canon.fact,
		Subject: m.id, Object: n.id, Rel: rel}, true
}

// aliveClaim reports whether t speaks of m as alive.
func (c *Canon) aliveClaim(t []string, m mention) bool {
	after := strings.Join(t[m.end:], " ") + " "
	for _, a := range aliveAfter {
		if strings.HasPrefix(after, a+" ") {
			return true
		}
	}
	before := " " + strings.Join(t[:m.start], " ")
	for _, b := range aliveBefore {
		if strings.HasSuffix(before, " "+b) {
			return true
		}
	}
	return false
}

// holderClaim reads "<someone> has the <item>" at mention m.
func (c *Canon) holderClaim(t []string, m mention) (Finding, bool) {
	for n := min(len(t), m.end+3); n > m.end; n-- {
		if !holdsIt[strings.Join(t[m.end:n], " ")] {
			continue
		}
		i := n
		if i < len(t) && determiners[t[i]] {
			i++
		}
		if f, ok := c.itemAt(t, i, m.id); ok {
			return f, true
		}
		return Finding{}, false
	}
	return Finding{}, false
}

// handover reads the speaker handing an item over: "here, take the
// <item>", "take my <item>", "I give you the <item>".
func (c *Canon) handover(t []string, me string) (Finding, bool) {
	for i := range t {
		j := -1
		switch {
		case t[i] == "take" && i > 0 && t[i-1] == "here" && i+1 < len(t) && determiners[t[i+1]]:
			j = i + 2
		case t[i] == "take" && i > 0 && t[i-1] == "here":
			j = i + 1
		case t[i] == "take" && i+1 < len(t) && (t[i+1] == "my" || t[i+1] == "this"):
			j = i + 2
		case i+2 < len(t) && t[i] == "i" && (t[i+1] == "give" || t[i+1] == "hand") && t[i+2] == "you":
			j = i + 3
			if j < len(t) && determiners[t[j]] {
				j++
			}
		}
		if j < 0 {
			continue
		}
		if f, ok := c.itemAt(t, j, me); ok {
			f.Claim = fmt.Sprintf("%s hands over %s", c.Name(me), f.Item)
			return f, true
		}
	}
	return Finding{}, false
}

// itemAt matches a canon item at t[i:] and returns the finding when its
// canon holder is not who.
func (c *Canon) itemAt(t []string, i int, who string) (Finding, bool) {
	if i >= len(t) {
		return Finding{}, false
	}
	var key string
	for _, it := range c.items {
		if i+len(it) <= len(t) && slices.Equal(t[i:i+len(it)], it) {
			key = strings.Join(it, " ")
			break
		}
	}
	if key == "" {
		// The item's last word alone ("the lantern" for "silver
		// lantern"), when it names one item only.
		for _, it := range c.items {
			if it[len(it)-1] == t[i] && (i+1 == len(t) || !isNounLike(t[i+1])) {
				if key != "" {
					return Finding{}, false
				}
				key = strings.Join(it, " ")
			}
		}
	}
	h, ok := c.holds[key]
	if !ok || h.holder == who {
		return Finding{}, false
	}
	return Finding{Kind: KindHolder, Claim: fmt.Sprintf("%s has %s", c.Name(who), h.item), Canon: h.fact,
		Subject: who, Object: h.holder, Rel: RelGave, Item: h.item}, true
}

// isNounLike reports whether w may continue a noun phrase ("lantern
// oil"): anything but a few function words.
func isNounLike(w string) bool {
	switch w {
	case "and", "or", "but", "now", "too", "again", "here", "there", "with", "to", "for", "from", "at", "in", "on", "so", "then":
		return false
	}
	return true
}

// words is s as lower-case words: letters and digits, with "'s", "'m",
// "'re", "'ve", "'ll" and "n't" spelt out (Grimjaw's at → grimjaw is at).
func words(s string) []string {
	s = strings.ToLower(strings.ReplaceAll(s, "’", "'"))
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' }) {
		f = strings.Trim(f, "'")
		switch {
		case f == "":
			continue
		case f == "let's":
			out = append(out, "let", "us")
		case f == "won't":
			out = append(out, "will", "not")
		case f == "can't":
			out = append(out, "can", "not")
		case strings.HasSuffix(f, "n't"):
			out = append(out, strings.TrimSuffix(f, "n't"), "not")
		case strings.HasSuffix(f, "'s"):
			out = append(out, strings.TrimSuffix(f, "'s"), "is")
		case strings.HasSuffix(f, "'m"):
			out = append(out, strings.TrimSuffix(f, "'m"), "am")
		case strings.HasSuffix(f, "'re"):
			out = append(out, strings.TrimSuffix(f, "'re"), "are")
		case strings.HasSuffix(f, "'ve"):
			out = append(out, strings.TrimSuffix(f, "'ve"), "have")
		case strings.HasSuffix(f, "'ll"):
			out = append(out, strings.TrimSuffix(f, "'ll"), "will")
		default:
			out = append(out, strings.ReplaceAll(f, "'", ""))
		}
	}
	return out
}

// itemWords is an item's words without a leading determiner ("the
// silver lantern" → silver lantern).
func itemWords(s string) []string {
	w := words(s)
	for len(w) > 0 && determiners[w[0]] {
		w = w[1:]
	}
	return w
}

// CheckReply checks a sentence of NPC npcID's draft reply against what
// the NPC may know of canon: the findings against a secret fact the NPC
// is not told are left out (it cannot contradict what it does not know;
// saying otherwise is its ignorance, or its lie). The NPC speaks of
// itself as "I".
func (c *Canon) CheckReply(npcID, sentence string) []Finding {
	if c == nil {
		return nil
	}
	fs := c.Check(c.Name(npcID), sentence)
	return slices.DeleteFunc(fs, func(f Finding) bool { return !f.Canon.KnownTo(npcID) })
}
