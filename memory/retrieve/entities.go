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
	ents, err := r.camp.Graph().FindEntities(ctx, memory.EntityFilter{IDs: ids})
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
// Grim", "occupation: blacksmith"). Secret attributes are left out.
func describeEntity(e memory.Entity) string {
	var b strings.Builder
	b.WriteString(e.Name)
	if e.Type != "" {
		fmt.Fprintf(&b, " (%s)", e.Type)
	}
	if len(e.Aliases) > 0 {
		fmt.Fprintf(&b, "\nalso: %s", strings.Join(e.Aliases, ", "))
	}
	pub, _ := publicValue(map[string]any(e.Attributes)).(map[string]any)
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

// secretKey reports whether an attribute name is for the game master's and
// the entity's eyes only: its secret knowledge, the secret and known-by
// markers and any name starting with "secret".
func secretKey(key string) bool {
	k := strings.ToLower(key)
	return k == memory.AttrSecretKnowledge || k == memory.AttrSecret || k == memory.AttrKnownBy || strings.HasPrefix(k, "secret")
}

// publicValue is v without what is secret, at any depth: objects marked
// {"secret": true} and keys secretKey names. It returns nil for a value
// that is secret as a whole.
func publicValue(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if x[memory.AttrSecret] == true {
			return nil
		}
		out := make(map[string]any, len(x))
		for k, y := range x {
			if secretKey(k) {
				continue
			}
			if p := publicValue(y); p != nil || y == nil {
				out[k] = p
			}
		}
		return out
	case []any:
		out := make([]any, 0, len(x))
		for _, y := range x {
			if p := publicValue(y); p != nil || y == nil {
				out = append(out, p)
			}
		}
		return out
	}
	return v
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
