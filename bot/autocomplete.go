package bot

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
	memaccess "github.com/glyphoxa/glyphoxa/memory/access"
)

// onAutocomplete suggests values for the option being typed: at most 25,
// names clipped to 100 characters.
func (b *Bot) onAutocomplete(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	var choices []*discordgo.ApplicationCommandOptionChoice
	if c.focused != nil && (!b.requiresDM(c.path) || isDM(g, i.Member)) {
		if camp, err := b.campaignFor(ctx, g, i); err == nil {
			typed, _ := c.focused.Value.(string)
			choices = b.suggest(ctx, camp, c.path, c.focused.Name, strings.TrimSpace(typed))
		}
	}
	if len(choices) > maxChoices {
		choices = choices[:maxChoices]
	}
	if choices == nil {
		choices = []*discordgo.ApplicationCommandOptionChoice{}
	}
	b.respond(i, &discordgo.InteractionResponse{Type: discordgo.InteractionApplicationCommandAutocompleteResult,
		Data: &discordgo.InteractionResponseData{Choices: choices}})
}

func choice(name, value string) *discordgo.ApplicationCommandOptionChoice {
	return &discordgo.ApplicationCommandOptionChoice{Name: truncate(name, maxChoiceName), Value: truncate(value, maxChoiceName)}
}

func (b *Bot) suggest(ctx context.Context, camp *memaccess.Campaign, path, option, typed string) []*discordgo.ApplicationCommandOptionChoice {
	g := camp.Graph()
	entities := func(typ string) []*discordgo.ApplicationCommandOptionChoice {
		es, err := g.FindEntities(ctx, memory.EntityFilter{Type: typ, Name: typed, Limit: maxChoices})
		if err != nil {
			return nil
		}
		var out []*discordgo.ApplicationCommandOptionChoice
		for _, e := range es {
			out = append(out, choice(fmt.Sprintf("%s (%s)", e.Name, e.Type), e.ID))
		}
		return out
	}
	facts := func(statuses ...memory.FactStatus) []*discordgo.ApplicationCommandOptionChoice {
		fs, err := g.FindFacts(ctx, memaccess.FactQuery{Statuses: statuses, Text: typed, Limit: maxChoices})
		if err != nil {
			return nil
		}
		var out []*discordgo.ApplicationCommandOptionChoice
		for _, f := range fs {
			out = append(out, choice(fmt.Sprintf("#%d %s %s %s (%.2f)", f.ID, f.SourceName, f.Type, f.TargetName, f.Provenance.Confidence),
				fmt.Sprint(f.ID)))
		}
		return out
	}
	switch option {
	case "npc":
		out := entities(memory.EntityNPC)
		if (path == "npc mute" || path == "npc unmute") && strings.Contains("all", strings.ToLower(typed)) {
			out = append([]*discordgo.ApplicationCommandOptionChoice{choice("all NPCs", "all")}, out...)
		}
		return out
	case "present":
		// A comma-separated list: complete its last item.
		done, last := "", typed
		if k := strings.LastIndex(typed, ","); k >= 0 {
			done, last = strings.TrimSpace(typed[:k])+", ", strings.TrimSpace(typed[k+1:])
		}
		es, err := g.FindEntities(ctx, memory.EntityFilter{Type: memory.EntityNPC, Name: last, Limit: maxChoices})
		if err != nil {
			return nil
		}
		var out []*discordgo.ApplicationCommandOptionChoice
		for _, e := range es {
			out = append(out, choice(done+e.Name, done+e.Name))
		}
		return out
	case "location":
		return entities(memory.EntityLocation)
	case "character":
		return entities(memory.EntityPlayer)
	case "entity", "subject", "object", "into":
		return entities("")
	case "kind":
		return kindChoices(ctx, g, typed)
	case "fact":
		if path == "memory confirm" || path == "memory reject" {
			return facts(memory.StatusPending)
		}
		if path == "memory grant" {
			return facts(memory.StatusActive)
		}
		return facts(memory.StatusActive, memory.StatusPending)
	case "session", "as_of":
		ss, err := camp.Sessions().Sessions(ctx)
		if err != nil {
			return nil
		}
		slices.Reverse(ss) // newest first
		var out []*discordgo.ApplicationCommandOptionChoice
		for _, s := range ss {
			// A session is found by its id or its in-world date.
			if typed != "" && !strings.Contains(strings.ToLower(s.ID), strings.ToLower(typed)) &&
				!strings.Contains(strings.ToLower(s.GameDate), strings.ToLower(typed)) {
				continue
			}
			when := s.StartedAt.UTC().Format("2006-01-02")
			if s.GameDate != "" {
				when += ", " + truncate(s.GameDate, 40)
			}
			out = append(out, choice(fmt.Sprintf("%s — %s (%d lines)", s.ID, when, s.Entries), s.ID))
		}
		return out
	}
	return nil
}
