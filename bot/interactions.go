package bot

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"

	"github.com/bwmarrin/discordgo"
)

// command is a parsed slash command: its path ("memory entity show") and
// options by name.
type command struct {
	path string
	opts map[string]*discordgo.ApplicationCommandInteractionDataOption
	// focused is the option being typed, for autocomplete.
	focused *discordgo.ApplicationCommandInteractionDataOption
}

func parseCommand(d discordgo.ApplicationCommandInteractionData) command {
	c := command{path: d.Name, opts: map[string]*discordgo.ApplicationCommandInteractionDataOption{}}
	opts := d.Options
	for len(opts) == 1 && (opts[0].Type == discordgo.ApplicationCommandOptionSubCommand ||
		opts[0].Type == discordgo.ApplicationCommandOptionSubCommandGroup) {
		c.path += " " + opts[0].Name
		opts = opts[0].Options
	}
	for _, o := range opts {
		c.opts[o.Name] = o
		if o.Focused {
			c.focused = o
		}
	}
	return c
}

func (c command) str(name string) string {
	if o, ok := c.opts[name]; ok {
		if s, ok := o.Value.(string); ok {
			return strings.TrimSpace(s)
		}
	}
	return ""
}

// integer returns an integer option (Discord sends numbers as JSON
// numbers).
func (c command) integer(name string) (int, bool) {
	if o, ok := c.opts[name]; ok {
		if v, ok := o.Value.(float64); ok {
			return int(v), true
		}
	}
	return 0, false
}

func (c command) boolean(name string) (bool, bool) {
	if o, ok := c.opts[name]; ok {
		if v, ok := o.Value.(bool); ok {
			return v, true
		}
	}
	return false, false
}

// user returns the member or user behind an interaction.
func user(i *discordgo.Interaction) *discordgo.User {
	if i.Member != nil && i.Member.User != nil {
		return i.Member.User
	}
	return i.User
}

func (b *Bot) onInteraction(i *discordgo.Interaction) {
	b.inflight.Add(1)
	defer b.inflight.Done()
	if b.handled != nil {
		defer b.handled(i.ID)
	}
	ctx, cancel := context.WithTimeout(b.ctx, interactionTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			b.log.Error("interaction handler panicked", "interaction", i.ID, "panic", r, "stack", string(debug.Stack()))
		}
	}()
	// Discord may deliver an interaction twice (a resumed gateway
	// replaying it, a retry): the second runs nothing (a command twice is
	// two writes, and Discord refuses a second answer anyway).
	if !b.seen.first(i.ID) {
		b.log.Debug("an interaction delivered twice is dropped", "interaction", i.ID)
		return
	}
	defer b.acks.Delete(i.ID)
	// Run before the ack is forgotten, and when the handler panics too.
	defer b.answerIfSilent(i)
	defer b.watch(i)()
	if i.GuildID == "" {
		// A continuity card's buttons are pressed in a direct message:
		// they name their guild (see continuity.go).
		if i.Type == discordgo.InteractionMessageComponent {
			if rest, ok := strings.CutPrefix(i.MessageComponentData().CustomID, contPrefix+":"); ok {
				// Only a bound guild is claimed: a forged id names none.
				guild, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(rest, "k:"), "r:"), ":")
				if _, bound := b.guild(guild); !bound {
					b.reply(i, true, "This button has expired.")
					return
				}
				if b.owns(ctx, guild) {
					b.continuityButton(ctx, i, rest)
				}
				return
			}
		}
		b.reply(i, true, "glyphoxa works inside a server that runs a campaign.")
		return
	}
	// Among several processes, only the guild's owner answers; a guild
	// nobody owns yet is claimed first (a /session start included).
	if !b.owns(ctx, i.GuildID) {
		return
	}
	g, ok := b.guild(i.GuildID)
	if !ok {
		b.reply(i, true, errUnbound.Error())
		return
	}
	switch i.Type {
	case discordgo.InteractionApplicationCommand:
		b.onCommand(ctx, i, g, parseCommand(i.ApplicationCommandData()))
	case discordgo.InteractionApplicationCommandAutocomplete:
		b.onAutocomplete(ctx, i, g, parseCommand(i.ApplicationCommandData()))
	case discordgo.InteractionMessageComponent:
		b.onComponent(ctx, i, g, i.MessageComponentData())
	case discordgo.InteractionModalSubmit:
		b.onModal(ctx, i, g, i.ModalSubmitData())
	}
}

// access is who may run a command. Its zero value is the DM: a handler
// that does not state its role is for the DM only.
type access int

const (
	// forDM commands change the game or the campaign's memory.
	forDM access = iota
	// forEveryone commands are for players too: their answer holds
	// nothing a player could not know already (what was said at the
	// table, a player-safe recap, the player's own privacy). The README's
	// command table states the same (TestREADMECommandTableMatches).
	forEveryone
)

// handler is one command path: who may run it and what runs it.
type handler struct {
	who access
	run func(b *Bot, ctx context.Context, i *discordgo.Interaction, g Guild, c command)
}

// commandHandlers is the table of every command path. Commands deny by
// default: a path that is not in the table is refused, and every entry
// states its role (TestEveryCommandStatesItsRole checks the table against
// the registered commands).
func commandHandlers() map[string]handler {
	dm := func(f func(*Bot, context.Context, *discordgo.Interaction, Guild, command)) handler {
		return handler{forDM, f}
	}
	all := func(f func(*Bot, context.Context, *discordgo.Interaction, Guild, command)) handler {
		return handler{forEveryone, f}
	}
	session, npc, mem, rec, priv := (*Bot).sessionCommand, (*Bot).npcCommand, (*Bot).memoryCommand, (*Bot).recapCommand, (*Bot).privacyCommand
	return map[string]handler{
		// Status names the NPCs present and who opted out; the NPC list
		// names NPCs the players have not met and who is in the scene.
		"session start": dm(session), "session end": dm(session), "session status": dm(session), "session date": dm(session),
		"npc list": dm(npc), "npc mute": dm(npc), "npc unmute": dm(npc), "npc say": dm(npc), "npc next": dm(npc), "npc scene": dm(npc),
		"npc direct": dm(npc), "npc undo": dm(npc), "session player": dm(session),
		"memory pending": dm(mem), "memory conflicts": dm(mem), "memory confirm": dm(mem), "memory reject": dm(mem),
		"memory entity show": dm(mem), "memory entity edit": dm(mem), "memory fact add": dm(mem), "memory fact retire": dm(mem),
		"memory entity add": dm(mem), "memory entity merge": dm(mem), "memory entity retire": dm(mem), "memory entity reveal": dm(mem),
		"memory forget fact": dm(mem), "memory forget span": dm(mem), "memory fact list": dm(mem), "memory changes": dm(mem),
		// A grant and what a character knows name what other players
		// may not know (a player reads their own with /recap for:me).
		"memory grant": dm(mem), "memory known-by": dm(mem),
		// Search reads what was said at the table: a player's, through a
		// handle bound to them, the lines their character witnessed.
		"memory search": all(mem),
		// Recaps are player-safe for players (recapCommand); for:me reads
		// through a handle bound to the member, their own knowledge only.
		"recap": all(rec),
		// The ledger reads through the member's handle: players see what
		// the DM confirmed.
		"ledger":          all((*Bot).ledgerCommand),
		"privacy opt-out": all(priv), "privacy opt-in": all(priv), "privacy forget-me": all(priv),
	}
}

// requiresDM reports whether a command path is for the DM; unknown paths
// are.
func (b *Bot) requiresDM(path string) bool {
	h, ok := b.handlers[path]
	return !ok || h.who != forEveryone
}

func (b *Bot) onCommand(ctx context.Context, i *discordgo.Interaction, g Guild, c command) {
	h, ok := b.handlers[c.path]
	if !ok {
		b.reply(i, true, fmt.Sprintf("Unknown command `/%s`.", c.path))
		return
	}
	if h.who != forEveryone && !isDM(g, i.Member) {
		b.refuse(i, fmt.Sprintf("`/%s` is for the DM. Ask your DM, or an admin can add you to the DM role in glyphoxa's configuration.", c.path))
		return
	}
	h.run(b, ctx, i, g, c)
}

func (b *Bot) onComponent(ctx context.Context, i *discordgo.Interaction, g Guild, d discordgo.MessageComponentInteractionData) {
	kind, rest, _ := strings.Cut(d.CustomID, ":")
	switch kind {
	case "pend":
		if !isDM(g, i.Member) {
			b.refuse(i, "Only the DM can review facts.")
			return
		}
		b.pendingButton(ctx, i, g, rest)
	case "conf":
		if !isDM(g, i.Member) {
			b.refuse(i, "Only the DM can settle conflicting facts.")
			return
		}
		b.conflictButton(ctx, i, g, rest)
	case "forgetme":
		b.forgetMeButton(ctx, i, g, rest)
	case contPrefix:
		b.continuityButton(ctx, i, rest)
	case undoPrefix:
		if !isDM(g, i.Member) {
			b.refuse(i, "Only the DM can withdraw an NPC's reply.")
			return
		}
		b.undoButton(ctx, i, g, rest)
	default:
		b.reply(i, true, "This button has expired.")
	}
}

func (b *Bot) onModal(ctx context.Context, i *discordgo.Interaction, g Guild, d discordgo.ModalSubmitInteractionData) {
	kind, rest, _ := strings.Cut(d.CustomID, ":")
	if !isDM(g, i.Member) {
		b.refuse(i, "Only the DM can edit the campaign's memory.")
		return
	}
	switch kind {
	case "factedit":
		b.factEditSubmit(ctx, i, g, rest, modalValues(d))
	case "entedit":
		b.entityEditSubmit(ctx, i, g, rest, modalValues(d))
	default:
		b.reply(i, true, "This form has expired.")
	}
}

// modalValues returns a modal's text inputs by custom id.
func modalValues(d discordgo.ModalSubmitInteractionData) map[string]string {
	out := map[string]string{}
	for _, row := range d.Components {
		r, ok := row.(*discordgo.ActionsRow)
		if !ok {
			continue
		}
		for _, c := range r.Components {
			if ti, ok := c.(*discordgo.TextInput); ok {
				out[ti.CustomID] = ti.Value
			}
		}
	}
	return out
}

func (b *Bot) onVoiceState(v *discordgo.VoiceStateUpdate) {
	// The voice session owner follows voice states itself; the bot only
	// notes its own departure from a channel (kicked or moved by a human).
	if b.sess.State.User == nil || v.UserID != b.sess.State.User.ID || v.ChannelID != "" {
		return
	}
	if b.state.hasSession(v.GuildID) && b.deps.Voice != nil {
		if _, ok := b.deps.Voice.Status(v.GuildID); !ok {
			b.state.setSession(v.GuildID, false)
		}
	}
}
