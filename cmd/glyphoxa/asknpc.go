package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// checkNPC returns nil when id is an NPC of the campaign camp reads, and
// otherwise an error that names the NPCs nearest to what was typed (by id
// or by name) and lists them, instead of a bare "not found" from
// retrieval.
func checkNPC(ctx context.Context, camp *access.Campaign, id string) error {
	e, err := camp.Graph().Entity(ctx, id)
	switch {
	case err == nil && e.Type == memory.EntityNPC:
		return nil
	case err == nil:
		return fmt.Errorf("--npc %q: %s is a %s, not an NPC; %s", id, e.Name, e.Type, npcList(ctx, camp, id))
	case !errors.Is(err, memory.ErrNotFound):
		return err
	}
	return fmt.Errorf("--npc %q: campaign %q has no NPC with that id; %s", id, camp.ID(), npcList(ctx, camp, id))
}

// npcList suggests the NPCs nearest to typed and lists them all (up to
// 20), by id with their names.
func npcList(ctx context.Context, camp *access.Campaign, typed string) string {
	npcs, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{Type: memory.EntityNPC})
	if err != nil || len(npcs) == 0 {
		return "the campaign has no NPCs (add them with `glyphoxa import` or /memory entity add)"
	}
	// Match the typed text against ids and names; suggest ids.
	byKey := map[string]string{}
	var keys []string
	for _, e := range npcs {
		for _, k := range append([]string{e.ID, e.Name}, e.Aliases...) {
			if _, ok := byKey[k]; !ok {
				byKey[k] = e.ID
				keys = append(keys, k)
			}
		}
	}
	var near []string
	seen := map[string]bool{}
	for _, k := range nearest(typed, keys, 10) {
		if id := byKey[k]; !seen[id] && len(near) < 3 {
			seen[id] = true
			near = append(near, id)
		}
	}
	names := map[string]string{}
	all := make([]string, 0, len(npcs))
	for _, e := range npcs {
		names[e.ID] = e.Name
		if len(all) < 20 {
			all = append(all, fmt.Sprintf("%s (%s)", e.ID, e.Name))
		}
	}
	var b strings.Builder
	if len(near) > 0 {
		q := make([]string, len(near))
		for i, id := range near {
			q[i] = fmt.Sprintf("%q (%s)", id, names[id])
		}
		fmt.Fprintf(&b, "did you mean %s? ", strings.Join(q, " or "))
	}
	fmt.Fprintf(&b, "NPCs: %s", strings.Join(all, ", "))
	if len(npcs) > len(all) {
		fmt.Fprintf(&b, " and %d more", len(npcs)-len(all))
	}
	return b.String()
}
