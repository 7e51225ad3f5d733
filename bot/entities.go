package bot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"
	"gopkg.in/yaml.v3"

	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// The DM's entity operations. `/memory entity add|edit|merge|retire` and
// the console's entity pages both call the exported functions below, which
// go through the campaign's handle from memory/access: the store refuses a
// handle bound to anyone but the DM, and every change is written in one
// transaction with the DM named in the change log (kg_sync and the console
// read it).

// EntityKinds are the well-known entity kinds the DM is offered beside the
// campaign's own.
func EntityKinds() []string {
	return []string{memory.EntityNPC, memory.EntityLocation, memory.EntityFaction, memory.EntityItem,
		memory.EntityPlayer, memory.EntityEvent, memory.EntityQuest, memory.EntityConcept}
}

// Attribute keys the DM's entity forms write. dm_notes is one of the keys
// the store keeps from players and NPCs (memory/viewer.go).
const (
	attrDescription = "description"
	attrDMNotes     = "dm_notes"
)

// EntityInput is a new entity as the DM writes it.
type EntityInput struct {
	Name string
	// Kind is the entity type: npc, location, faction, item, … or the
	// DM's own.
	Kind string
	// Aliases are comma-separated.
	Aliases string
	// Description is what everyone may know; DMNotes are for the DM only.
	Description, DMNotes string
}

// editorActor names the DM in the change log.
func editorActor(editor string) string { return "dm:" + editor }

// AddEntity adds an entity to the campaign for the DM editor.
func AddEntity(ctx context.Context, camp *memaccess.Campaign, in EntityInput, editor string) (memory.Entity, error) {
	kind, err := entityKind(in.Kind)
	if err != nil {
		return memory.Entity{}, err
	}
	e := memory.Entity{Name: strings.TrimSpace(in.Name), Type: kind, Aliases: splitList(in.Aliases), Attributes: map[string]any{}}
	if e.Name == "" {
		return memory.Entity{}, errors.New("the entity needs a name")
	}
	if memaccess.EntityID(e.Name) == "" {
		return memory.Entity{}, fmt.Errorf("%q has no letters or digits to make an id from", e.Name)
	}
	if d := strings.TrimSpace(in.Description); d != "" {
		e.Attributes[attrDescription] = d
	}
	if d := strings.TrimSpace(in.DMNotes); d != "" {
		e.Attributes[attrDMNotes] = d
	}
	var out memory.Entity
	err = camp.InTx(ctx, editorActor(editor), func(tc *memaccess.Campaign) error {
		out, err = tc.Graph().AddEntity(ctx, e)
		return err
	})
	return out, err
}

// EditEntity applies the DM's edit of entity id: its name, kind (empty:
// unchanged), comma-separated aliases and attributes as YAML (`key: value`
// lines; keys such as dm_notes or secret_… stay the DM's). An attribute
// not in the YAML is removed. Invalid input changes nothing.
func EditEntity(ctx context.Context, camp *memaccess.Campaign, id, name, kind, aliases, attributes, editor string) (memory.Entity, error) {
	attrs := map[string]any{}
	if strings.TrimSpace(attributes) != "" {
		dec := yaml.NewDecoder(strings.NewReader(attributes))
		if err := dec.Decode(&attrs); err != nil && !errors.Is(err, io.EOF) {
			return memory.Entity{}, fmt.Errorf("the attributes are not valid YAML (%v); write one `key: value` per line", err)
		}
		// What follows a "---" is another YAML document, which Decode
		// leaves unread: its keys would be taken for removed ones.
		var more yaml.Node
		if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
			return memory.Entity{}, errors.New(`the attributes hold a line "---" (or "..."), which ends a YAML document: ` +
				"indent it inside a value, or remove it; write one `key: value` per line")
		}
	}
	u := memory.EntityUpdate{SetAttributes: attrs}
	if name = strings.TrimSpace(name); name == "" {
		return memory.Entity{}, errors.New("the entity needs a name")
	}
	u.Name = &name
	if strings.TrimSpace(kind) != "" {
		k, err := entityKind(kind)
		if err != nil {
			return memory.Entity{}, err
		}
		u.Type = &k
	}
	al := splitList(aliases)
	u.Aliases = &al
	var out memory.Entity
	err := camp.InTx(ctx, editorActor(editor), func(tc *memaccess.Campaign) error {
		old, err := tc.Graph().Entity(ctx, id)
		if err != nil {
			return err
		}
		for k := range old.Attributes {
			if _, ok := attrs[k]; !ok {
				u.DeleteAttributes = append(u.DeleteAttributes, k)
			}
		}
		out, err = tc.Graph().UpdateEntity(ctx, id, u)
		return err
	})
	return out, err
}

// MergeEntity merges the entity from (an id, name or alias) into the
// entity into: facts, mentions and lines move, from's names become
// aliases of into, and from is gone. sessionID is the running session, if
// any: a repeated fact is retired as of it.
func MergeEntity(ctx context.Context, camp *memaccess.Campaign, from, into, sessionID, editor string) (memaccess.EntityMerge, error) {
	var out memaccess.EntityMerge
	err := camp.InTx(ctx, editorActor(editor), func(tc *memaccess.Campaign) error {
		f, err := resolveEntity(ctx, tc.Graph(), from)
		if err != nil {
			return err
		}
		t, err := resolveEntity(ctx, tc.Graph(), into)
		if err != nil {
			return err
		}
		if f.ID == t.ID {
			return fmt.Errorf("%q and %q are the same entity (%s)", from, into, f.Name)
		}
		out, err = tc.Graph().MergeEntities(ctx, f.ID, t.ID, sessionID)
		return err
	})
	return out, err
}

// RetireEntity retires the entity ref (an id, name or alias) as of
// sessionID with the DM's reason: its canon facts stop holding, kept for
// "as of".
func RetireEntity(ctx context.Context, camp *memaccess.Campaign, ref, sessionID, reason, editor string) (memory.Entity, memaccess.EntityRetirement, error) {
	var (
		e   memory.Entity
		out memaccess.EntityRetirement
	)
	err := camp.InTx(ctx, editorActor(editor), func(tc *memaccess.Campaign) error {
		var err error
		if e, err = resolveEntity(ctx, tc.Graph(), ref); err != nil {
			return err
		}
		out, err = tc.Graph().RetireEntity(ctx, e.ID, sessionID, reason)
		return err
	})
	return e, out, err
}

// entityKind normalises a kind: lower case, words joined by "_".
func entityKind(s string) (string, error) {
	k := strings.ToLower(strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_')
	}), "_"))
	if k == "" {
		return "", fmt.Errorf("the entity needs a kind, e.g. %s", strings.Join(EntityKinds(), ", "))
	}
	return k, nil
}

// splitList splits a comma-separated list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

// entityCommand runs /memory entity add, merge, retire and reveal.
func (b *Bot) entityCommand(ctx context.Context, i *discordgo.Interaction, g Guild, camp *memaccess.Campaign, c command) {
	editor := user(i).ID
	switch c.path {
	case "memory entity add":
		e, err := AddEntity(ctx, camp, EntityInput{Name: c.str("name"), Kind: c.str("kind"), Aliases: c.str("aliases"),
			Description: c.str("description"), DMNotes: c.str("dm_notes")}, editor)
		if err != nil {
			b.finishErr(i, fmt.Errorf("nothing was added: %w", err))
			return
		}
		embed, err := b.entityEmbed(ctx, camp.Graph(), e.ID)
		if err != nil {
			b.finish(i, true, fmt.Sprintf("Added %s (%s).", e.Name, e.Type), nil, nil)
			return
		}
		b.finish(i, true, fmt.Sprintf("Added **%s** (%s, id `%s`). NPCs and recall know it from now on; `dm_notes` stay yours.",
			e.Name, e.Type, e.ID), embeds(embed), nil)
	case "memory entity merge":
		m, err := MergeEntity(ctx, camp, c.str("entity"), c.str("into"), b.currentSession(g.ID), editor)
		if err != nil {
			b.finishErr(i, fmt.Errorf("nothing was merged: %w", err))
			return
		}
		msg := fmt.Sprintf("Merged `%s` into **%s**: %d facts moved, %d chunk mentions and %d NPC lines moved; also called %s now.",
			m.From, m.Into.Name, m.FactsMoved, m.Mentions, m.Lines, strings.Join(m.Into.Aliases, ", "))
		if len(m.FactsRetired) > 0 {
			msg += fmt.Sprintf("\n%d facts repeated one of %s's (or tied it to itself) and were retired: %s.",
				len(m.FactsRetired), m.Into.Name, factRefs(m.FactsRetired))
		}
		b.finish(i, true, msg, nil, nil)
	case "memory entity retire":
		e, r, err := RetireEntity(ctx, camp, c.str("entity"), b.currentSession(g.ID), c.str("reason"), editor)
		if err != nil {
			b.finishErr(i, fmt.Errorf("nothing was retired: %w", err))
			return
		}
		msg := fmt.Sprintf("Retired **%s**: it leaves the name lists and %d canon facts stop holding (kept for \"as of\").", e.Name, len(r.Facts))
		if r.Reason != "" {
			msg += " Reason: " + r.Reason
		}
		b.finish(i, true, msg, nil, nil)
	case "memory entity reveal":
		e, was, err := RevealEntity(ctx, camp, c.str("entity"), editor)
		if err != nil {
			b.finishErr(i, fmt.Errorf("nothing was revealed: %w", err))
			return
		}
		msg := fmt.Sprintf("**%s** was not first heard in a split scene: every player already sees it.", e.Name)
		if was {
			msg = fmt.Sprintf("Every player now sees **%s** (its name, aliases and public attributes; its facts stay as they were).", e.Name)
		}
		b.finish(i, true, msg, nil, nil)
	}
}

// RevealEntity lets every player see the entity ref (an id, name or
// alias), first heard in a split scene (the DM reveals it); was reports
// whether it was hidden from some players before. Editing an entity does
// not reveal it.
func RevealEntity(ctx context.Context, camp *memaccess.Campaign, ref, editor string) (e memory.Entity, was bool, err error) {
	err = camp.InTx(ctx, editorActor(editor), func(tc *memaccess.Campaign) error {
		x, err := resolveEntity(ctx, tc.Graph(), ref)
		if err != nil {
			return err
		}
		if was, err = tc.Graph().SceneOnly(ctx, x.ID); err != nil {
			return err
		}
		e, err = tc.Graph().PublishEntity(ctx, x.ID)
		return err
	})
	return e, was, err
}

func factRefs(ids []int64) string {
	parts := make([]string, len(ids))
	for k, id := range ids {
		parts[k] = fmt.Sprintf("#%d", id)
	}
	return strings.Join(parts, ", ")
}

// kindChoices suggests entity kinds: the campaign's, most used first, then
// the well-known ones, those containing typed.
func kindChoices(ctx context.Context, g *memaccess.Graph, typed string) []*discordgo.ApplicationCommandOptionChoice {
	var kinds []string
	if ks, err := g.EntityKinds(ctx); err == nil {
		for _, k := range ks {
			kinds = append(kinds, k.Type)
		}
	}
	for _, k := range EntityKinds() {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	typed = strings.ToLower(typed)
	var out []*discordgo.ApplicationCommandOptionChoice
	for _, k := range kinds {
		if strings.Contains(k, typed) {
			out = append(out, choice(k, k))
		}
	}
	if typed != "" && !slices.Contains(kinds, typed) {
		if k, err := entityKind(typed); err == nil {
			out = append(out, choice(k+" (new kind)", k))
		}
	}
	return out
}
