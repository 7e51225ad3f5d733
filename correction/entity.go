package correction

import (
	"context"
	"fmt"

	"github.com/glyphoxa/glyphoxa/memory"
)

// Entity is a name the matcher can restore: a knowledge-graph entity's id,
// canonical name and aliases.
type Entity struct {
	ID      string   `json:"id" yaml:"id"`
	Name    string   `json:"name" yaml:"name"`
	Aliases []string `json:"aliases,omitempty" yaml:"aliases"`
	// Type is the entity's kind ("npc", "player", "location", ...), or
	// "" when unknown. The common-word guard reads it: a person's name
	// does not follow an article.
	Type string `json:"type,omitempty" yaml:"type"`
}

// EntityLister lists a campaign's entities. *postgres.Graph (a campaign's
// knowledge graph) implements it.
type EntityLister interface {
	FindEntities(ctx context.Context, f memory.EntityFilter) ([]memory.Entity, error)
}

// LoadEntities reads every entity of a campaign's knowledge graph.
func LoadEntities(ctx context.Context, l EntityLister) ([]Entity, error) {
	es, err := l.FindEntities(ctx, memory.EntityFilter{})
	if err != nil {
		return nil, fmt.Errorf("listing entities for correction: %w", err)
	}
	return FromMemory(es), nil
}

// FromMemory converts knowledge-graph entities.
func FromMemory(es []memory.Entity) []Entity {
	out := make([]Entity, len(es))
	for i, e := range es {
		out[i] = Entity{ID: e.ID, Name: e.Name, Aliases: append([]string(nil), e.Aliases...), Type: e.Type}
	}
	return out
}
