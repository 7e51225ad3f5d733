package retrieve

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/mention"
)

// namedEntities returns, as results of kind "entity", the entities among
// named that the question names by full name or alias, in order. Each
// scores ScoreExact; entities deleted since the matcher was built are
// skipped.
func (r *Retriever) namedEntities(ctx context.Context, named []mention.Match) ([]Result, error) {
	var ids []string
	for _, s := range named {
		if s.Score >= mention.ScoreExact {
			ids = append(ids, s.EntityID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	ents, err := r.camp.Graph().FindEntities(ctx, memory.EntityFilter{IDs: ids, IncludeRetired: true})
	if err != nil {
		return nil, fmt.Errorf("loading named entities %v: %w", ids, err)
	}
	byID := make(map[string]memory.Entity, len(ents))
	for _, e := range ents {
		byID[e.ID] = e
	}
	out := make([]Result, 0, len(ids))
	for _, id := range ids {
		if e, ok := byID[id]; ok {
			out = append(out, Result{Kind: KindEntity, ID: e.ID, Content: describeEntity(e), Score: mention.ScoreExact,
				EntityIDs: []string{e.ID}})
		}
	}
	return out, nil
}

// describeEntity is what a player may read about an entity: its name, type,
// aliases and public attributes, one per line ("Grimjaw (npc)", "also:
// Grim", "occupation: blacksmith"). Secret attributes are left out
// (memory.PublicAttributes, the store's one definition).
func describeEntity(e memory.Entity) string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if len(e.Aliases) > 0 {
		fmt.Fprintf(&b, "\nalso: %s", strings.Join(e.Aliases, ", "))
	}
	pub := memory.PublicAttributes(e.Attributes)
	keys := make([]string, 0, len(pub))
	for k := range pub {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n%s: %s", k, attributeText(pub[k]))
	}
	return b.String()
}

// attributeText renders an attribute value: strings as they are, lists of
// strings joined by commas, anything else as JSON.
func attributeText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		parts := make([]string, 0, len(x))
		for _, p := range x {
			s, ok := p.(string)
			if !ok {
				return jsonText(v)
			}
			parts = append(parts, s)
		}
		return strings.Join(parts, ", ")
	}
	return jsonText(v)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}
