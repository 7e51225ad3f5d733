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
// still answers, from memory, and honestly.
//
// The reply is extractive. Fallback looks for what the question names (the
// entities the NPC can know, by name or alias) and what it asks about (its
// content words), and answers with at most [FallbackMaxSentences] sentences
// taken from the NPC's own knowledge: the facts of its visible subgraph
// rendered as plain sentences (in the first person where the fact is about
// the NPC), the public descriptions of what it knows, and the lines it
// heard, quoted with who said them. It never reveals the NPC's
// secret_knowledge nor a secret fact, because it cannot judge, as a model
// told to guard them can, when the character would. When nothing matches,
// the NPC says it does not know — it never invents.
//
// Every fallback reply is marked ([TurnResult.Fallback]), logged at Warn
// level with its reason, and counted ([Fallback.Stats]).
type Fallback struct {
	cfg FallbackConfig

	answered   atomic.Int64
	didNotKnow atomic.Int64
}

// FallbackConfig configures a [Fallback].
type FallbackConfig struct {
	// Graph is the knowledge graph; required.
	Graph Graph
	// Heard finds the lines the NPC heard; nil answers from the graph only.
	Heard HeardSearcher
	// Recall, when set, is asked when neither the graph nor what the NPC
	// heard has an answer; the best matching sentence of its results is
	// used.
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
	// DidNotKnow is the number of replies in which the NPC said it does
	// not know.
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
	q := parseQuestion(in.Text, p)

	ents, rels, err := g.VisibleSubgraph(ctx, p.ID, memory.VisibilityScope{RelTypes: p.KnowledgeScope})
	if err != nil && !errors.Is(err, memory.ErrNotFound) {
		return res, fmt.Errorf("reading what %s knows: %w", p.Name, err)
	}
	cands := knownSentences(p, q, ents, rels)
	if f.cfg.Heard != nil && len(q.terms) > 0 {
		hits, err := f.cfg.Heard.SearchHeard(ctx, p.ID, strings.Join(q.terms, " or "), 10)
		if err != nil {
			// What the NPC heard is one source among others: answer
			// from the rest.
			f.cfg.Logger.Warn("npc fallback: searching what the NPC heard", "npc", p.ID, "err", err)
		}
		cands = append(cands, heardSentences(p, q, in, hits)...)
	}
	best := pick(cands)
	if len(best) == 0 && f.cfg.Recall != nil && len(q.terms) > 0 {
		rs, err := f.cfg.Recall.Recall(ctx, p.ID, strings.Join(q.terms, " "), 5)
		if err != nil {
			f.cfg.Logger.Warn("npc fallback: recall", "npc", p.ID, "err", err)
		}
		best = pick(recalledSentences(q, rs))
	}

	knew := len(best) > 0
	if knew {
		res.Sentences = append([]string{opener(p, in)}, best...)
		f.answered.Add(1)
	} else {
		res.Sentences = []string{dontKnow(p, q)}
		f.didNotKnow.Add(1)
	}
	for _, s := range res.Sentences {
		if onSentence != nil {
			onSentence(s)
		}
	}
	res.Text = strings.Join(res.Sentences, " ")
	f.cfg.Logger.Warn("npc answered without an LLM (extractive fallback)", "npc", p.ID, "reason", reason,
		"knew", knew, "sentences", len(res.Sentences))
	if f.cfg.OnReply != nil {
		f.cfg.OnReply(p.ID, knew)
	}
	return res, nil
}

// question is what a line asks: its content words and what it names.
type question struct {
	terms []string        // content words, lower case, in order, deduplicated
	set   map[string]bool // terms as a set
	norm  string          // the normalised line, " word word "
	topic string          // the content words as spoken ("the Ashen Circle")
	asks  string          // "where", "who", "what", … or ""
}

func parseQuestion(text string, p Persona) question {
	words := wordsOf(text)
	q := question{set: map[string]bool{}, norm: " " + strings.Join(words, " ") + " "}
	self := map[string]bool{}
	for _, n := range p.Names() {
		for _, w := range wordsOf(n) {
			self[w] = true
		}
	}
	var topic []string
	for _, w := range strings.Fields(text) {
		lw := wordsOf(w)
		if len(lw) == 1 && !stopWords[lw[0]] && !self[lw[0]] && len(lw[0]) >= 3 {
			topic = append(topic, strings.Trim(w, ",.;:!?\"'()"))
		}
	}
	q.topic = strings.Join(topic, " ")
	for _, w := range words {
		if q.asks == "" && askWords[w] {
			q.asks = w
		}
		if stopWords[w] || self[w] || len(w) < 3 || q.set[w] {
			continue
		}
		q.set[w] = true
		q.terms = append(q.terms, w)
	}
	return q
}

// candidate is one sentence the NPC could say, with how well it answers.
type candidate struct {
	text  string
	score float64
}

// mentioned scores how much of an entity's name or aliases the question
// names: 1 when a whole name is in it, the share of a name's content words
// otherwise.
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
			if stopWords[w] || len(w) < 3 {
				continue
			}
			content++
			if q.set[w] {
				hit++
			}
		}
		if content > 0 {
			best = max(best, float64(hit)/float64(content))
		}
	}
	return best
}

// overlap counts the question's content words in text.
func (q question) overlap(text string) int {
	n := 0
	seen := map[string]bool{}
	for _, w := range wordsOf(text) {
		if q.set[w] && !seen[w] {
			n++
			seen[w] = true
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
	for _, r := range rels {
		if secret(r) || (ment[r.SourceID] == 0 && ment[r.TargetID] == 0) {
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
		if e.ID == p.ID || ment[e.ID] == 0 {
			continue
		}
		for _, s := range attributeSentences(e) {
			out = append(out, candidate{s, 2*ment[e.ID] + 0.5 + float64(q.overlap(s))*0.5})
		}
	}
	return out
}

// heardSentences quotes the lines the NPC heard that answer the question;
// questions and the line being answered are not answers.
func heardSentences(p Persona, q question, in TurnInput, hits []memory.EntryHit) []candidate {
	var out []candidate
	for _, h := range hits {
		t := strings.TrimSpace(h.Entry.Text)
		own := h.Entry.NPCID == p.ID || h.Entry.SpeakerID == p.ID
		// What the NPC itself just said in this conversation is not news,
		// and quoting an earlier fallback reply would echo it.
		if t == "" || strings.HasSuffix(t, "?") || strings.EqualFold(t, strings.TrimSpace(in.Text)) ||
			(own && in.SessionID != "" && h.Entry.SessionID == in.SessionID) {
			continue
		}
		n := q.overlap(t)
		if n < 2 && !(n == 1 && len(q.terms) == 1) {
			continue
		}
		who := h.Entry.SpeakerName
		var s string
		switch {
		case own:
			s = "As I said before: " + t
		case who == "":
			s = "I heard it said: " + t
		default:
			s = fmt.Sprintf("I heard %s say: %s", who, t)
		}
		out = append(out, candidate{ensureStop(s), 1 + float64(n)})
	}
	return out
}

// recalledSentences takes the best matching sentence of each recollection.
func recalledSentences(q question, rs []Recollection) []candidate {
	var out []candidate
	for _, r := range rs {
		best, bestN := "", 0
		for _, s := range splitSentences(r.Content) {
			if strings.HasSuffix(s, "?") {
				continue
			}
			if n := q.overlap(s); n > bestN {
				best, bestN = s, n
			}
		}
		if bestN >= 2 {
			out = append(out, candidate{ensureStop("I remember this: " + best), float64(bestN)})
		}
	}
	return out
}

// pick returns the best distinct sentences that answer at all, best first.
func pick(cs []candidate) []string {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score > cs[j].score })
	var out []string
	for _, c := range cs {
		if c.score < 1.5 || slices.Contains(out, c.text) {
			continue
		}
		out = append(out, c.text)
		if len(out) == FallbackMaxSentences-1 { // the opener is the first sentence
			break
		}
	}
	return out
}

// opener starts a reply in the NPC's voice, to whoever asked.
func opener(p Persona, in TurnInput) string {
	who := strings.TrimSpace(in.SpeakerName)
	lines := []string{"Here is what I know.", "Let me think, this much I know.", "Aye, I can tell you this."}
	if strings.Contains(strings.ToLower(p.SpeakingStyle+" "+p.Personality), "formal") {
		lines = []string{"Allow me to tell you what I know.", "This much I can tell you."}
	}
	s := lines[hashString(in.Text)%uint32(len(lines))]
	if who != "" {
		s = who + ", " + strings.ToLower(s[:1]) + s[1:]
	}
	return s
}

// dontKnow says, in character, that the NPC does not know, naming what was
// asked about when the question names it.
func dontKnow(p Persona, q question) string {
	about := "that"
	if n := len(strings.Fields(q.topic)); n > 0 && n <= 4 {
		about = q.topic
		if n == 1 && !unicode.IsUpper([]rune(q.topic)[0]) {
			about = "the " + q.topic
		}
	}
	if strings.Contains(strings.ToLower(p.SpeakingStyle+" "+p.Personality), "formal") {
		return fmt.Sprintf("I am afraid I know nothing about %s.", about)
	}
	return fmt.Sprintf("I don't know anything about %s, sorry.", about)
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

// attributeSentences renders an entity's public attributes.
func attributeSentences(e memory.Entity) []string {
	keys := make([]string, 0, len(e.Attributes))
	for k := range e.Attributes {
		if !privateAttr[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		v := strings.TrimSpace(str(e.Attributes[k]))
		if v == "" || strings.HasPrefix(v, "map[") || strings.HasPrefix(v, "[") {
			continue
		}
		switch k {
		case "description":
			out = append(out, ensureStop(fmt.Sprintf("%s is %s", e.Name, v)))
		case "occupation", "class":
			out = append(out, ensureStop(fmt.Sprintf("%s is %s %s", e.Name, article(v), v)))
		case "goals":
			out = append(out, ensureStop(fmt.Sprintf("%s wants to %s", e.Name, v)))
		case "properties":
			out = append(out, ensureStop(fmt.Sprintf("About %s: %s", e.Name, v)))
		default:
			out = append(out, ensureStop(fmt.Sprintf("The %s of %s is %s", strings.ReplaceAll(k, "_", " "), e.Name, v)))
		}
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

// askWords are the question words a fallback distinguishes.
var askWords = map[string]bool{"where": true, "who": true, "what": true, "when": true, "why": true, "how": true}

// stopWords are words that carry no topic.
var stopWords = wordSet(`a an the and or but if of to in on at by for with from about into over under
	is are was were be been being am do does did doing have has had having will would shall should can could may might must
	i me my mine you your yours he him his she her hers it its we us our they them their this that these those there here
	what who whom whose which where when why how not no yes so too very just also still any some all
	tell know knows knew think say said ask heard hear anything something nothing anyone someone please well now then
	hey hello hi oh ah friend again really good`)

func wordSet(list string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(list) {
		m[w] = true
	}
	return m
}
