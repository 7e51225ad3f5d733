package bot

import "github.com/bwmarrin/discordgo"

// Top-level command names.
const (
	cmdSession = "session"
	cmdNPC     = "npc"
	cmdMemory  = "memory"
	cmdRecap   = "recap"
	cmdPrivacy = "privacy"
	cmdLedger  = "ledger"
)

// commandSpecs are the guild commands glyphoxa registers. They are
// registered with a bulk overwrite, so commands that are no longer here
// disappear from Discord.
func commandSpecs() []*discordgo.ApplicationCommand {
	oneReply := 1.0 // the least replies a direction is kept for
	str := func(name, desc string, required, auto bool) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name,
			Description: desc, Required: required, Autocomplete: auto}
	}
	sub := func(name, desc string, opts ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommand, Name: name,
			Description: desc, Options: opts}
	}
	group := func(name, desc string, subs ...*discordgo.ApplicationCommandOption) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionSubCommandGroup, Name: name,
			Description: desc, Options: subs}
	}
	choice := func(name, desc string, choices ...string) *discordgo.ApplicationCommandOption {
		o := &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: desc}
		for i := 0; i+1 < len(choices); i += 2 {
			o.Choices = append(o.Choices, &discordgo.ApplicationCommandOptionChoice{Name: choices[i], Value: choices[i+1]})
		}
		return o
	}
	member := func(name, desc string) *discordgo.ApplicationCommandOption {
		return &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionUser, Name: name, Description: desc, Required: true}
	}
	guildOnly := []discordgo.InteractionContextType{discordgo.InteractionContextGuild}
	return []*discordgo.ApplicationCommand{
		{Name: cmdSession, Description: "Run a recorded game session", Contexts: &guildOnly, Options: []*discordgo.ApplicationCommandOption{
			sub("start", "Join your voice channel and start recording the session (DM)"),
			sub("end", "Stop recording, leave the channel and process the session (DM)"),
			sub("status", "Who is recorded, which NPCs are present, memory health and latency (DM)"),
			sub("date", "Set the in-world date of the running (or last) session (DM)",
				str("date", "a date of the campaign calendar, e.g. \"3 Frostfall 1452\" or \"day 12\"", true, false)),
			sub("player", "Set the character a member plays (DM)", member("member", "the member"),
				str("character", "the character they play", true, true)),
		}},
		{Name: cmdNPC, Description: "The campaign's NPCs", Contexts: &guildOnly, Options: []*discordgo.ApplicationCommandOption{
			sub("list", "List the NPCs and who is in the scene (DM)"),
			sub("mute", "Stop an NPC (or all) from answering (DM)", str("npc", "the NPC, or \"all\"", true, true)),
			sub("unmute", "Let an NPC (or all) answer again (DM)", str("npc", "the NPC, or \"all\"", true, true)),
			sub("say", "Make an NPC say exactly these words (DM)", str("npc", "the NPC", true, true), str("text", "what the NPC says", true, false)),
			sub("next", "Make an NPC answer the next thing a player says (DM)", str("npc", "the NPC", true, true)),
			sub("direct", "Steer an NPC's next replies without scripting its words; no instruction clears it (DM)",
				str("npc", "the NPC", true, true), str("instruction", "what the NPC should do, e.g. \"stall, and hint at the smugglers\"", false, false),
				&discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionInteger, Name: "replies",
					Description: "for this many replies (default: until cleared)", MinValue: &oneReply, MaxValue: 50}),
			sub("undo", "Withdraw the last NPC reply: that wasn't for it (DM)"),
			sub("scene", "Set where the scene is and who is present (DM)", str("location", "where the scene is", false, true),
				str("present", "NPCs present, comma-separated", false, true),
				str("players", "players in the scene when the party splits: @mentions, or \"all\"", false, false)),
		}},
		{Name: cmdLedger, Description: "Promises, debts and handovers heard at the table", Contexts: &guildOnly, Options: []*discordgo.ApplicationCommandOption{
			str("who", "only those naming this character", false, false),
		}},
		{Name: cmdMemory, Description: "Review and edit the campaign's memory (DM)", Contexts: &guildOnly, Options: []*discordgo.ApplicationCommandOption{
			sub("pending", "Facts waiting for your review, with buttons", str("session", "only facts from this session", false, true)),
			sub("conflicts", "New facts that conflict with canon: keep the new one or the old"),
			sub("confirm", "Make a pending fact canon", str("fact", "the fact", true, true)),
			sub("reject", "Reject a pending fact", str("fact", "the fact", true, true)),
			group("entity", "People, places and things",
				sub("show", "Show an entity and what is known about it", str("entity", "the entity", true, true),
					str("as_of", "what held in this session, at this date (2026-03-08) or in-world date (3 Frostfall 1452)", false, true)),
				sub("edit", "Edit an entity's name, kind, aliases and attributes", str("entity", "the entity", true, true)),
				sub("add", "Add a person, place or thing", str("name", "its name", true, false),
					str("kind", "npc, location, faction, item, … or your own", true, true),
					str("aliases", "other names, comma-separated", false, false),
					str("description", "what it is (players and NPCs may know this)", false, false),
					str("dm_notes", "notes for you only: never shown to players or NPCs", false, false)),
				sub("merge", "Merge a duplicate into another entity: its facts move, its names become aliases",
					str("entity", "the duplicate, which disappears", true, true), str("into", "the entity that stays", true, true)),
				sub("retire", "Retire an entity (dead, destroyed, gone): its facts stop holding, kept for \"as of\"",
					str("entity", "the entity", true, true), str("reason", "why, e.g. \"killed by the dragon\"", false, false)),
				sub("reveal", "Show every player an entity first heard in a split scene", str("entity", "the entity", true, true))),
			group("fact", "Facts",
				sub("add", "Add a fact as DM canon", str("subject", "who or what", true, true), str("relation", "e.g. LOCATED_AT, KNOWS, OWNS", true, false),
					str("object", "who or what", true, true), str("reason", "why it changed: a fact it replaces is retired with this reason", false, false)),
				sub("retire", "Record that a fact no longer holds", str("fact", "the fact", true, true)),
				sub("list", "The facts of an entity, now or as of a session", str("entity", "the entity", true, true),
					str("as_of", "what held in this session, at this date (2026-03-08) or in-world date (3 Frostfall 1452)", false, true))),
			sub("grant", "Give one player a handout or a whisper, or a fact: only they (and you) can read it",
				member("player", "the player"), str("text", "the handout or whisper", false, false),
				str("fact", "a fact their character now knows", false, true)),
			sub("known-by", "What a player's character knows: lines witnessed, facts revealed in their presence, grants",
				member("player", "the player")),
			sub("changes", "What changed in the memory since the last session (or since a session)",
				str("session", "since the end of this session (default: the last one)", false, true)),
			sub("search", "Search what was said and remembered", str("query", "words or a question", true, false),
				choice("mode", "how to search (default: both)", "words (full text)", "text", "meaning (semantic)", "semantic", "both", "both")),
			group("forget", "Declare something non-canon",
				sub("fact", "Retire a fact as non-canon", str("fact", "the fact", true, true)),
				sub("span", "Mark transcript lines of a session as non-canon", str("session", "the session", true, true),
					str("from", "start time, HH:MM (UTC)", true, false), str("to", "end time, HH:MM (UTC)", true, false))),
		}},
		{Name: cmdRecap, Description: "\"Previously on…\": a recap of the last session, one session, or the campaign", Contexts: &guildOnly,
			Options: []*discordgo.ApplicationCommandOption{
				choice("scope", "what to recap (default: the last session)", "last session", "last", "one session", "session", "the campaign so far", "campaign"),
				choice("for", "me: what you missed, only what your character witnessed or was told (private)", "me", "me"),
				str("session", "the session, for scope \"one session\"", false, true),
				choice("delivery", "who sees it (default: only you)", "only me", "private", "the channel", "public", "spoken by the narrator", "voice"),
				{Type: discordgo.ApplicationCommandOptionBoolean, Name: "player_safe", Description: "leave out unconfirmed and secret facts (always on for players)"},
			}},
		{Name: cmdPrivacy, Description: "Your recordings and data", Contexts: &guildOnly, Options: []*discordgo.ApplicationCommandOption{
			sub("opt-out", "Stop the bot from transcribing or storing anything you say"),
			sub("opt-in", "Allow the bot to transcribe you again"),
			sub("forget-me", "Delete everything stored from what you said"),
		}},
	}
}
