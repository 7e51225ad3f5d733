package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/memory"
)

func (b *Bot) npcCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	controls := b.state.controlsFor(g.ID)
	switch c.path {
	case "npc mute", "npc unmute", "npc next", "npc direct":
		// These change the table at once: acknowledged first, they act
		// only if Discord still takes the answer (see ack).
		if !b.ack(i, false) {
			return
		}
	}
	switch c.path {
	case "npc list":
		if !b.deferReply(i, true) {
			return
		}
		camp, err := b.campaignFor(ctx, g, i)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		npcs, err := camp.Graph().FindEntities(ctx, memory.EntityFilter{Type: memory.EntityNPC})
		if err != nil {
			b.finishErr(i, err)
			return
		}
		scene := controls.Scene()
		var out strings.Builder
		if scene.LocationID != "" || len(scene.Present) > 0 {
			n := names(ctx, camp.Graph(), append([]string{scene.LocationID}, scene.Present...)...)
			var present []string
			for _, p := range scene.Present {
				present = append(present, n[p])
			}
			fmt.Fprintf(&out, "**Scene:** %s — present: %s\n\n", orNone(n[scene.LocationID]), orNone(strings.Join(present, ", ")))
		}
		fmt.Fprintf(&out, "**NPCs** (%d)\n", len(npcs))
		for _, e := range npcs {
			flags := ""
			if controls.Muted(e.ID) {
				flags += " 🔇 muted"
			}
			for _, p := range scene.Present {
				if p == e.ID {
					flags += " 📍 in the scene"
				}
			}
			if d, ok := controls.Direction(e.ID); ok {
				flags += " 🎬 directed: " + d.Text
			}
			occupation, _ := e.Attributes["occupation"].(string)
			fmt.Fprintf(&out, "• **%s**%s%s\n", e.Name, ifNotEmpty(" — ", occupation), flags)
		}
		b.finish(i, true, out.String(), nil, nil)
	case "npc mute", "npc unmute":
		mute := c.path == "npc mute"
		target := c.str("npc")
		label := "All NPCs"
		if !strings.EqualFold(target, "all") {
			camp, err := b.campaignFor(ctx, g, i)
			if err != nil {
				b.reply(i, true, "⚠️ "+errText(err))
				return
			}
			e, err := resolveEntity(ctx, camp.Graph(), target)
			if err != nil {
				b.reply(i, true, "⚠️ "+errText(err))
				return
			}
			target, label = e.ID, e.Name
		} else {
			target = "all"
		}
		controls.SetMuted(target, mute)
		if mute {
			b.reply(i, true, fmt.Sprintf("🔇 %s will not answer until unmuted.", label))
		} else {
			b.reply(i, true, fmt.Sprintf("🔊 %s may answer again.", label))
		}
	case "npc next":
		camp, err := b.campaignFor(ctx, g, i)
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		e, err := resolveEntity(ctx, camp.Graph(), c.str("npc"))
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		if e.Type != memory.EntityNPC {
			b.reply(i, true, fmt.Sprintf("⚠️ %s is not an NPC.", e.Name))
			return
		}
		controls.SetNext(e.ID)
		b.reply(i, true, fmt.Sprintf("🎭 %s answers the next thing a player says.", e.Name))
	case "npc direct":
		camp, err := b.campaignFor(ctx, g, i)
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		e, err := resolveEntity(ctx, camp.Graph(), c.str("npc"))
		if err != nil {
			b.reply(i, true, "⚠️ "+errText(err))
			return
		}
		if e.Type != memory.EntityNPC {
			b.reply(i, true, fmt.Sprintf("⚠️ %s is not an NPC.", e.Name))
			return
		}
		text := c.str("instruction")
		n, given := c.integer("replies")
		if given && n < 1 {
			b.reply(i, true, fmt.Sprintf("⚠️ replies must be 1 or more, not %d.", n))
			return
		}
		if len([]rune(text)) > maxDirection {
			b.reply(i, true, fmt.Sprintf("⚠️ An instruction is at most %d characters (this one has %d).", maxDirection, len([]rune(text))))
			return
		}
		controls.SetDirection(e.ID, text, n)
		switch {
		case text == "":
			b.reply(i, true, fmt.Sprintf("🎬 %s's direction is cleared.", e.Name))
		case n > 0:
			b.reply(i, true, fmt.Sprintf("🎬 %s's next %d replies follow your direction: %s", e.Name, n, text))
		default:
			b.reply(i, true, fmt.Sprintf("🎬 %s follows your direction until you clear it (`/npc direct %s` without an instruction): %s", e.Name, e.Name, text))
		}
	case "npc undo":
		u, ok := b.deps.Voice.(Undoer)
		if !ok {
			b.reply(i, true, "⚠️ no voice session is running; start one with /session start")
			return
		}
		if !b.deferReply(i, true) {
			return
		}
		got, running, err := u.Undo(ctx, g.ID)
		switch {
		case !running:
			b.finishErr(i, fmt.Errorf("no voice session is running; start one with /session start"))
		case err != nil && got.NPCName == "":
			b.finishErr(i, err)
		case err != nil:
			b.finish(i, true, fmt.Sprintf("↩️ %s's reply is withdrawn from the conversation, but: %s", got.NPCName, errText(err)), nil, nil)
		case got.Interrupted:
			b.finish(i, true, fmt.Sprintf("↩️ %s stopped; the reply is withdrawn and the next line is not taken as a follow-up to it.", got.NPCName), nil, nil)
		default:
			b.finish(i, true, fmt.Sprintf("↩️ Withdrawn: %s's reply “%s”. It is not part of %s's memory, and the next line is not taken as a follow-up to it.",
				got.NPCName, got.Reply, got.NPCName), nil, nil)
		}
	case "npc say":
		if !b.deferReply(i, true) {
			return
		}
		if b.deps.Voice == nil || !b.state.hasSession(g.ID) {
			b.finishErr(i, fmt.Errorf("no voice session is running; start one with /session start"))
			return
		}
		camp, err := b.campaignFor(ctx, g, i)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		e, err := resolveEntity(ctx, camp.Graph(), c.str("npc"))
		if err != nil {
			b.finishErr(i, err)
			return
		}
		if err := b.deps.Voice.Say(ctx, g.ID, e.ID, c.str("text")); err != nil {
			b.finishErr(i, err)
			return
		}
		b.finish(i, true, fmt.Sprintf("🗣️ %s says: %s", e.Name, c.str("text")), nil, nil)
	case "npc scene":
		if !b.deferReply(i, true) {
			return
		}
		camp, err := b.campaignFor(ctx, g, i)
		if err != nil {
			b.finishErr(i, err)
			return
		}
		scene := controls.Scene()
		var desc []string
		if loc := c.str("location"); loc != "" {
			e, err := resolveEntity(ctx, camp.Graph(), loc)
			if err != nil {
				b.finishErr(i, err)
				return
			}
			scene.LocationID = e.ID
			desc = append(desc, "at "+e.Name)
		}
		if _, given := c.opts["present"]; given {
			scene.Present = nil
			var who []string
			for _, n := range strings.Split(c.str("present"), ",") {
				if n = strings.TrimSpace(n); n == "" {
					continue
				}
				e, err := resolveEntity(ctx, camp.Graph(), n)
				if err != nil {
					b.finishErr(i, err)
					return
				}
				if e.Type != memory.EntityNPC {
					b.finishErr(i, fmt.Errorf("%s is a %s, not an NPC", e.Name, e.Type))
					return
				}
				scene.Present = append(scene.Present, e.ID)
				who = append(who, e.Name)
			}
			desc = append(desc, "with "+orNone(strings.Join(who, ", ")))
		}
		if _, given := c.opts["players"]; given {
			players, err := parsePlayers(c.str("players"))
			if err != nil {
				b.finishErr(i, err)
				return
			}
			scene.Players = players
			if u := user(i); u != nil {
				scene.By = u.ID // their lines are narration the scene hears
			}
			desc = append(desc, scenePlayersText(players))
		}
		controls.SetScene(scene)
		b.finish(i, true, "🎬 Scene set: "+orNone(strings.Join(desc, ", "))+".", nil, nil)
	}
}

// maxDirection bounds the DM's instruction to an NPC, in characters.
const maxDirection = 500

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "nobody"
	}
	return s
}

func ifNotEmpty(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}
