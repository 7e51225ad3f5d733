package table

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/glyphoxa/glyphoxa/correction"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
	"github.com/glyphoxa/glyphoxa/memory/mention"
	"github.com/glyphoxa/glyphoxa/npc"
)

// Speech-to-text providers, for their keyword budgets.
const (
	ProviderDeepgram     = "deepgram"
	ProviderOpenAI       = "openai"
	ProviderPocketsphinx = "pocketsphinx"
)

// maxVocabulary bounds the names given to an engine without a documented
// budget (pocketsphinx builds a vocabulary from them).
const maxVocabulary = 500

// recentMention is how long a mentioned entity ranks above the rest in
// the keyword lists.
const recentMention = 10 * time.Minute

// Cast is what a running table knows of its campaign's names: the
// entities and their aliases, the NPCs' personas, the one name finder and
// corrector (a correction.Pipeline) and the speech-to-text keyword lists,
// ranked by salience. Refresh re-reads them when the DM changes an entity,
// so that an NPC added mid-session is boosted, corrected and addressable
// within seconds. It is safe for concurrent use.
type Cast struct {
	camp *access.Campaign
	pipe *correction.Pipeline

	mu        sync.Mutex
	stamp     access.EntityStamp
	ents      []correction.Entity
	personas  map[string]npc.Persona
	matcher   *mention.Matcher
	mentioned map[string]time.Time // entity id → last mentioned
	gen       int                  // counts the entity lists read
	// keyterms is the last keyterm list and what it was ranked from:
	// each utterance asks for them, and they change only with the
	// scene, the names mentioned or the entities.
	keyterms struct {
		key string
		out []string
	}
}

// NewCast reads the campaign's entities into pipe.
func NewCast(ctx context.Context, camp *access.Campaign, pipe *correction.Pipeline) (*Cast, error) {
	c := &Cast{camp: camp, pipe: pipe, mentioned: map[string]time.Time{}}
	if _, err := c.Refresh(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Pipeline is the correction pipeline: it corrects and finds names.
func (c *Cast) Pipeline() *correction.Pipeline { return c.pipe }

// Refresh re-reads the entities when they changed since the last read and
// reports whether they had.
func (c *Cast) Refresh(ctx context.Context) (bool, error) {
	st, err := c.camp.Graph().EntityStamp(ctx)
	if err != nil {
		return false, err
	}
	c.mu.Lock()
	same := c.personas != nil && st == c.stamp
	c.mu.Unlock()
	if same {
		return false, nil
	}
	ents, err := c.camp.Graph().FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return false, fmt.Errorf("reading the campaign's entities: %w", err)
	}
	// The names corrected, found in lines and boosted are those every
	// player may see: the correction rewrites a player's guess to the
	// campaign's spelling in their own line, and the keyword lists are
	// shared by every speaker, so an entity first heard in a split scene
	// (memory/postgres: scene_only) is left out until every player may see
	// it. Its NPC persona is kept; the chunker's matcher keeps every name
	// (the store shows a chunk's mentions only to those who may see them).
	vocab := ents
	if v := c.camp.Viewer(); v.Role == 0 || v.Role == memory.RoleDM {
		hidden, err := c.camp.Graph().HiddenFromPlayers(ctx)
		if err != nil {
			return false, fmt.Errorf("reading the campaign's entities: %w", err)
		}
		if len(hidden) > 0 {
			// hidden is sorted by id in byte order (COLLATE "C"), as Go
			// compares strings.
			vocab = slices.DeleteFunc(slices.Clone(ents), func(e memory.Entity) bool {
				_, found := slices.BinarySearch(hidden, e.ID)
				return found
			})
		}
	}
	cents := correction.FromMemory(vocab)
	if err := c.pipe.SetEntities(cents); err != nil {
		return false, fmt.Errorf("preparing the campaign's names: %w", err)
	}
	personas := map[string]npc.Persona{}
	for _, e := range ents {
		if e.Type == memory.EntityNPC {
			personas[e.ID] = npc.PersonaFromEntity(e)
		}
	}
	m := mention.NewMatcher(ents)
	c.mu.Lock()
	c.stamp, c.ents, c.personas, c.matcher = st, cents, personas, m
	c.gen++
	c.mu.Unlock()
	return true, nil
}

// FindNames finds the campaign's names in text (correction.Pipeline).
func (c *Cast) FindNames(text string) []npc.Mention { return c.pipe.FindNames(text) }

// MentionedNames are the names of the campaign's entities mentioned in
// text, as the campaign spells them (an alias heard gives the entity's
// name).
func (c *Cast) MentionedNames(text string) []string {
	ms := c.pipe.FindNames(text)
	if len(ms) == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		name := text[m.Start:m.End]
		for _, e := range c.ents {
			if e.ID == m.EntityID {
				name = e.Name
				break
			}
		}
		out = append(out, name)
	}
	return out
}

// PlayerLabel is how a player's line is labelled, given their display
// name: the name itself, or, when it is an NPC's name or alias (letters
// and digits compared, case aside) or a name of the game master's
// ([memory.IsDMName]: "DM", "GM", "Narrator"…), the name marked
// "(player)". A nickname is the player's to choose, and a line labelled
// with an NPC's name would be that NPC's to everyone who reads it: the
// NPCs' models, the ledger (which finds a promise's giver by the
// speaker's name), the recaps and the session log; one labelled "DM"
// would be the DM's narration (the DM's own lines are labelled
// [memory.DMSpeaker] by the session, see Config.IsDM).
func (c *Cast) PlayerLabel(name string) string {
	key := nameKey(name)
	if key == "" {
		return name
	}
	if memory.IsDMName(name) {
		return strings.TrimSpace(name) + " (player)"
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, p := range c.personas {
		for _, n := range p.Names() {
			if nameKey(n) == key {
				return strings.TrimSpace(name) + " (player)"
			}
		}
	}
	return name
}

// nameKey is a name's letters and digits, lower case, words joined by one
// space, lookalike letters spelt as the Latin ones (memory.FoldLookalikes).
func nameKey(s string) string {
	return strings.Join(strings.FieldsFunc(strings.ToLower(memory.FoldLookalikes(s)), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}), " ")
}

// IsNPC tells NPC entities from the others.
func (c *Cast) IsNPC(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.personas[id]
	return ok
}

// Persona is an NPC's persona.
func (c *Cast) Persona(id string) (npc.Persona, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.personas[id]
	return p, ok
}

// NPCName is an NPC's display name (its id when unknown).
func (c *Cast) NPCName(id string) string {
	if p, ok := c.Persona(id); ok && p.Name != "" {
		return p.Name
	}
	return id
}

// Matcher is the entity matcher of chunking (package mention), kept in
// step with Refresh.
func (c *Cast) Matcher(context.Context) (*mention.Matcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.matcher, nil
}

// NoteMentions remembers which entities were just named, for salience.
func (c *Cast) NoteMentions(ms []npc.Mention, at time.Time) {
	if len(ms) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range ms {
		c.mentioned[m.EntityID] = at
	}
}

// InPlay is the set of entities in play at now, for the correction guard:
// the NPCs present in the scene (the table passes every NPC of the cast
// when the DM has set no scene, as addressing does) and the entities named
// in the last minutes.
func (c *Cast) InPlay(present []string, now time.Time) map[string]bool {
	out := make(map[string]bool, len(present))
	for _, id := range present {
		out[id] = true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, at := range c.mentioned {
		if now.Sub(at) <= recentMention {
			out[id] = true
		}
	}
	return out
}

// Keyterms are the names to boost in a provider's speech-to-text, most
// salient first (the NPCs in the scene, then the entities named in the
// last minutes, then the rest), within the provider's documented budget:
// Deepgram's keyterm tokens, Whisper's prompt tokens, or a vocabulary of
// maxVocabulary names for the offline engine.
func (c *Cast) Keyterms(provider string, scene []string, now time.Time) []string {
	c.mu.Lock()
	sal := correction.Salience{Scene: scene, LastMentioned: map[string]time.Time{}}
	for id, at := range c.mentioned {
		if now.Sub(at) <= recentMention {
			sal.LastMentioned[id] = at
		}
	}
	ents := c.ents
	key := keytermKey(provider, scene, c.gen, sal.LastMentioned)
	if c.keyterms.out != nil && c.keyterms.key == key {
		out := slices.Clone(c.keyterms.out)
		c.mu.Unlock()
		return out
	}
	c.mu.Unlock()
	ranked := correction.Rank(ents, sal)
	var out []string
	switch provider {
	case ProviderDeepgram:
		out = correction.DeepgramKeyterms(ranked, correction.DeepgramKeytermTokens)
	case ProviderOpenAI:
		out = namesWithin(ranked, correction.WhisperPromptTokens*3, 0)
	default:
		out = namesWithin(ranked, 0, maxVocabulary)
	}
	c.mu.Lock()
	c.keyterms.key, c.keyterms.out = key, slices.Clip(slices.Clone(out))
	if c.keyterms.out == nil {
		c.keyterms.out = []string{}
	}
	c.mu.Unlock()
	return out
}

// keytermKey is what a keyterm list is ranked from: the provider, the
// scene, the entity list read (gen) and the order in which the entities
// named lately were named (Rank orders by it; equal times keep the list's
// order, written "=").
func keytermKey(provider string, scene []string, gen int, mentioned map[string]time.Time) string {
	ids := slices.Collect(maps.Keys(mentioned))
	slices.SortFunc(ids, func(a, b string) int {
		return cmp.Or(mentioned[b].Compare(mentioned[a]), cmp.Compare(a, b))
	})
	var b strings.Builder
	b.WriteString(provider)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(gen))
	for _, id := range scene {
		b.WriteByte(0)
		b.WriteString(id)
	}
	b.WriteByte(1)
	for i, id := range ids {
		if i > 0 && mentioned[id].Equal(mentioned[ids[i-1]]) {
			b.WriteByte('=')
		} else {
			b.WriteByte(0)
		}
		b.WriteString(id)
	}
	return b.String()
}

// namesWithin lists names, then aliases, of ranked entities, until
// maxChars characters (0: no limit) or maxNames names (0: no limit).
func namesWithin(ranked []correction.Ranked, maxChars, maxNames int) []string {
	var out []string
	seen := map[string]bool{}
	used := 0
	add := func(s string) bool {
		k := strings.ToLower(s)
		if s == "" || seen[k] {
			return true
		}
		if maxChars > 0 && used+len(s)+2 > maxChars || maxNames > 0 && len(out) >= maxNames {
			return false
		}
		seen[k] = true
		used += len(s) + 2
		out = append(out, s)
		return true
	}
	for _, r := range ranked {
		if !add(r.Name) {
			return out
		}
	}
	for _, r := range ranked {
		for _, a := range r.Aliases {
			if !add(a) {
				return out
			}
		}
	}
	return out
}
