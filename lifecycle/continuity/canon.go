// Package continuity finds the lines said at the table that contradict the
// campaign's canon, without an LLM, while the session runs: someone placed
// where canon puts them elsewhere, a dead NPC spoken of as alive, an item
// in the hands of someone canon does not give it to.
//
// # Canon
//
// A [Canon] is built once from the campaign's confirmed (active) facts and
// its entities, and held in memory: a [Checker] rebuilds it when the
// campaign's change log moves (one cheap query per poll, never a query per
// line), so a line is checked in microseconds and still is while the
// database is down. What canon says:
//
//   - where someone is: the active LOCATED_AT fact of an entity (LIVES_IN
//     for "lives in"). A place inside the canon place (LOCATED_AT or
//     PART_OF, followed upwards) or around it agrees with it.
//   - who is dead: an entity the DM retired with a reason that says so
//     ("died", "killed", "dead", "death", "slain"), an active DIED, IS_DEAD
//     or KILLED_BY fact whose source is the entity, or an entity attribute
//     status "dead" or "deceased".
//   - who holds an item: the recipient of the latest GAVE handover of it
//     (the ledger's, its "what" attribute naming the item), or the source
//     of the latest OWNS, HOLDS, CARRIES or WIELDS fact whose target is an
//     item entity.
//
// # Precision before recall
//
// A DM flooded with false cards turns them off, so a sentence is only
// checked when it states something plainly, in the present tense: a
// question, a hypothesis ("if", "maybe", "what if"), reported speech ("she
// said", "rumour has it"), a belief ("I think"), a joke ("just kidding"),
// the past ("was at") or a negation are left alone. What is left is matched
// against a few fixed shapes ("<someone> is at <place>", "<someone> lives
// in <place>", "<dead one> says …", "let's ask <dead one>", "<someone> has
// the <item>", "here, take the <item>"). The corpus in testdata measures
// it (see corpus_test.go).
package continuity

import (
	"fmt"
	"slices"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Relation types canon is read from.
const (
	RelLocatedAt = "LOCATED_AT"
	RelLivesIn   = "LIVES_IN"
	RelPartOf    = "PART_OF"
	RelGave      = "GAVE"
	RelDied      = "DIED"
	RelIsDead    = "IS_DEAD"
	RelKilledBy  = "KILLED_BY"
)

// holdRels are the relations whose source holds their target item.
var holdRels = []string{"OWNS", "HOLDS", "CARRIES", "WIELDS"}

// deathWords in a retirement reason make the retired entity dead.
var deathWords = []string{"died", "dead", "death", "killed", "slain", "deceased", "murdered"}

// Entity is an entity as canon reads it: with the DM's retirement reason,
// when it was retired.
type Entity struct {
	memory.Entity
	// Retired is the reason the DM gave when retiring it; RetiredAt is
	// false when it was not.
	Retired       bool
	RetiredReason string
}

// Fact is a canon fact as a card shows it.
type Fact struct {
	ID int64 `json:"id"`
	// Text says it ("Grimjaw —LOCATED_AT→ Ironhold").
	Text string `json:"text"`
	// Secret facts are for the DM only, and the NPCs KnownBy lists (and
	// the fact's ends, Source and Target).
	Secret  bool     `json:"secret,omitempty"`
	Source  string   `json:"source,omitempty"`
	Target  string   `json:"target,omitempty"`
	KnownBy []string `json:"known_by,omitempty"`
}

// KnownTo reports whether NPC npcID may know the fact: it is not secret,
// or the NPC is one of its ends or listed as knowing it.
func (f Fact) KnownTo(npcID string) bool {
	return !f.Secret || npcID == f.Source || npcID == f.Target || slices.Contains(f.KnownBy, npcID)
}

// place is where canon puts someone.
type place struct {
	target string
	fact   Fact
}

// holding is who canon says holds an item.
type holding struct {
	holder string
	item   string // the item's words
	fact   Fact
	order  [2]int64 // established (unix nanoseconds), id
}

// name is one way to say an entity, as words.
type name struct {
	words []string
	id    string
}

// Canon is the campaign's canon as the checker reads it. It is immutable
// once built: a Checker swaps in a new one when canon changes.
type Canon struct {
	names   []name            // longest first
	byFirst map[string][]name // by first word, longest first
	ents    map[string]Entity
	located map[string]place
	lives   map[string]place
	parent  map[string][]string // LOCATED_AT and PART_OF targets
	dead    map[string]Fact
	holds   map[string]holding // by the item's words
	items   [][]string         // item words, longest first
}

// NewCanon builds canon from the campaign's entities and its active facts
// (other statuses are ignored).
func NewCanon(ents []Entity, facts []memory.Relationship) *Canon {
	c := &Canon{ents: map[string]Entity{}, located: map[string]place{}, lives: map[string]place{},
		parent: map[string][]string{}, dead: map[string]Fact{}, holds: map[string]holding{}}
	for _, e := range ents {
		c.ents[e.ID] = e
		for _, n := range append([]string{e.Name}, e.Aliases...) {
			if w := words(n); len(w) > 0 {
				c.names = append(c.names, name{words: w, id: e.ID})
			}
		}
		if e.Retired && hasAny(strings.ToLower(e.RetiredReason), deathWords) {
			c.dead[e.ID] = Fact{Text: fmt.Sprintf("%s was retired by the DM: %s", e.Name, e.RetiredReason)}
		}
		if s, _ := e.Attributes["status"].(string); s == "dead" || s == "deceased" {
			c.dead[e.ID] = Fact{Text: fmt.Sprintf("%s has status: %s", e.Name, s)}
		}
	}
	slices.SortStableFunc(c.names, func(a, b name) int { return len(b.words) - len(a.words) })
	c.byFirst = map[string][]name{}
	for _, n := range c.names {
		c.byFirst[n.words[0]] = append(c.byFirst[n.words[0]], n)
	}
	for _, f := range facts {
		if f.Status != memory.StatusActive {
			continue
		}
		cf := Fact{ID: f.ID, Text: c.factText(f), Secret: f.Attributes[memory.AttrSecret] == true, Source: f.SourceID,
			Target: f.TargetID, KnownBy: knownBy(f.Attributes[memory.AttrKnownBy])}
		order := [2]int64{f.Provenance.Timestamp.UnixNano(), f.ID}
		switch t := strings.ToUpper(f.Type); {
		case t == RelLocatedAt:
			c.located[f.SourceID] = place{target: f.TargetID, fact: cf}
			c.parent[f.SourceID] = append(c.parent[f.SourceID], f.TargetID)
		case t == RelPartOf:
			c.parent[f.SourceID] = append(c.parent[f.SourceID], f.TargetID)
		case t == RelLivesIn:
			c.lives[f.SourceID] = place{target: f.TargetID, fact: cf}
		case t == RelDied || t == RelIsDead:
			c.dead[f.SourceID] = cf
		case t == RelKilledBy:
			c.dead[f.SourceID] = cf
		case t == RelGave:
			what, _ := f.Attributes["what"].(string)
			c.hold(itemWords(what), holding{holder: f.TargetID, item: what, fact: cf, order: order})
		case slices.Contains(holdRels, t):
			if e, ok := c.ents[f.TargetID]; ok {
				c.hold(itemWords(e.Name), holding{holder: f.SourceID, item: e.Name, fact: cf, order: order})
			}
		}
	}
	for k := range c.holds {
		c.items = append(c.items, strings.Fields(k))
	}
	slices.SortFunc(c.items, func(a, b []string) int {
		if d := len(b) - len(a); d != 0 {
			return d
		}
		return strings.Compare(strings.Join(a, " "), strings.Join(b, " "))
	})
	return c
}

// hold records h unless canon knows a later holder of the item.
func (c *Canon) hold(item []string, h holding) {
	if len(item) == 0 || h.holder == "" {
		return
	}
	k := strings.Join(item, " ")
	if old, ok := c.holds[k]; ok && (old.order[0] > h.order[0] || (old.order[0] == h.order[0] && old.order[1] > h.order[1])) {
		return
	}
	c.holds[k] = h
}

// Name is an entity's display name (its id when canon does not know it).
func (c *Canon) Name(id string) string {
	if e, ok := c.ents[id]; ok && e.Name != "" {
		return e.Name
	}
	return id
}

// Entity returns the entity named by id.
func (c *Canon) Entity(id string) (Entity, bool) {
	e, ok := c.ents[id]
	return e, ok
}

// Resolve returns the entity a name (a speaker's display name, say) names.
func (c *Canon) Resolve(s string) (string, bool) {
	w := words(s)
	for _, n := range c.names {
		if slices.Equal(n.words, w) {
			return n.id, true
		}
	}
	return "", false
}

func (c *Canon) factText(f memory.Relationship) string {
	s := fmt.Sprintf("%s —%s→ %s", c.Name(f.SourceID), f.Type, c.Name(f.TargetID))
	if w, _ := f.Attributes["what"].(string); w != "" {
		s += " (" + w + ")"
	}
	return s
}

// within reports whether place a lies within b or b within a, by
// LOCATED_AT and PART_OF followed upwards (the docks of Ironhold are in
// Ironhold; someone at the Rusty Anchor is in Ironhold).
func (c *Canon) within(a, b string) bool {
	return a == b || c.ancestor(a, b) || c.ancestor(b, a)
}

// ancestor reports whether up is reached from id going upwards.
func (c *Canon) ancestor(id, up string) bool {
	seen := map[string]bool{}
	stack := []string{id}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[x] {
			continue
		}
		seen[x] = true
		for _, p := range c.parent[x] {
			if p == up {
				return true
			}
			stack = append(stack, p)
		}
	}
	return false
}

// knownBy reads the known_by attribute (a list of NPC ids).
func knownBy(v any) []string {
	switch x := v.(type) {
	case []string:
		return x
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	case string:
		return []string{x}
	}
	return nil
}

// hasAny reports whether s contains any of subs.
func hasAny(s string, subs []string) bool {
	for _, x := range subs {
		if strings.Contains(s, x) {
			return true
		}
	}
	return false
}
