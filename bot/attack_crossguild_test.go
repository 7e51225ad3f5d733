package bot_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
)

// The other server of the deployment, which plays the hostile campaign.
const (
	foreignGuild  = "100000000000000077"
	foreignDMRole = "100000000000000078"
	foreignDMUser = "200000000000000077"
)

// TestAttackCrossGuildIDs (cross-guild attacker): one bot serves two
// servers, each with its campaign, in one database. The DM of the first
// (guildID, the sample campaign) types the ids of the second's rows into
// every command, autocomplete, button and form of the first (fact,
// conflict, review batch, card, session and entity ids), and into the
// second's continuity button in the first server and in a direct message.
// Nothing of the second campaign is shown and none of its rows changes.
// (attack5_test.go covers fact ids in the fact commands; this covers the
// other ids and every other door.)
func TestAttackCrossGuildIDs(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	f := pgtest.ForeignCampaign(t, store, "../testdata/campaigns/hostile-keep.yaml")
	h := newHarnessGuilds(t, bot.Deps{}, []bot.Guild{
		{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}, DMUserIDs: []string{theDM.UserID}},
		{ID: foreignGuild, Campaign: f.Campaign, DMRoleIDs: []string{foreignDMRole}, DMUserIDs: []string{foreignDMUser}},
	}, store, nil)
	before := f.State(t, store)

	fact, pending := fmt.Sprint(f.Facts[0]), fmt.Sprint(f.Pending[0])
	conflict, batch, card := fmt.Sprint(f.Conflicts[0]), fmt.Sprint(f.Batches[0]), f.Cards[0]
	cmd := func(name string, opts ...discordtest.Opt) discordtest.Interaction {
		return h.fake.Command(guildID, channelID, theDM, name, opts...)
	}
	auto := func(name string, opts ...discordtest.Opt) discordtest.Interaction {
		return h.fake.Autocomplete(guildID, channelID, theDM, name, opts...)
	}
	btn := func(id string) discordtest.Interaction { return h.fake.Button(guildID, channelID, theDM, id) }
	mem, ent, fct := "memory", func(sub string, o ...discordtest.Opt) discordtest.Opt {
		return discordtest.Group("entity", discordtest.Sub(sub, o...))
	}, func(sub string, o ...discordtest.Opt) discordtest.Opt {
		return discordtest.Group("fact", discordtest.Sub(sub, o...))
	}
	S := discordtest.Str
	attempts := []struct {
		name  string
		typed string // what the attacker typed: echoing it is no leak
		i     discordtest.Interaction
	}{
		// Entity ids of the other campaign.
		{"entity show", "aldric", cmd(mem, ent("show", S("entity", "aldric")))},
		{"entity show as_of", "brenna " + f.Session, cmd(mem, ent("show", S("entity", "brenna"), S("as_of", f.Session)))},
		{"entity edit", "aldric", cmd(mem, ent("edit", S("entity", "aldric")))},
		{"entity merge from", "aldric", cmd(mem, ent("merge", S("entity", "aldric"), S("into", "grimjaw")))},
		{"entity merge into", "aldric", cmd(mem, ent("merge", S("entity", "grimjaw"), S("into", "aldric")))},
		{"entity retire", "brenna", cmd(mem, ent("retire", S("entity", "brenna"), S("reason", "x")))},
		{"entity reveal", "undercroft", cmd(mem, ent("reveal", S("entity", "undercroft")))},
		{"fact list", "brenna", cmd(mem, fct("list", S("entity", "brenna")))},
		{"fact list as_of", "aldric " + f.Session, cmd(mem, fct("list", S("entity", "aldric"), S("as_of", f.Session)))},
		// Session ids of the other campaign.
		{"pending of session", f.Session, cmd(mem, discordtest.Sub("pending", S("session", f.Session)))},
		{"forget span", f.Session, cmd(mem, discordtest.Group("forget", discordtest.Sub("span", S("session", f.Session), S("from", "18:00"), S("to", "20:00"))))},
		{"changes since", f.Session, cmd(mem, discordtest.Sub("changes", S("session", f.Session)))},
		{"recap of session", f.Session, cmd("recap", S("scope", "session"), S("session", f.Session))},
		{"session date", "", cmd("session", discordtest.Sub("date", S("date", "day 3")))},
		{"session player", "aldric", cmd("session", discordtest.Sub("player", S("member", player.UserID), S("character", "aldric")))},
		// Words only the other campaign holds.
		{"search words", "mkf-foreign-line Undercroft", cmd(mem, discordtest.Sub("search", S("query", "mkf-foreign-line Undercroft"), S("mode", "text")))},
		{"search both", "Brenna ledger", cmd(mem, discordtest.Sub("search", S("query", "Brenna ledger")))},
		{"ledger who", "Aldric", cmd("ledger", S("who", "Aldric"))},
		{"ledger", "", cmd("ledger")},
		{"recap campaign", "", cmd("recap", S("scope", "campaign"))},
		// Fact ids: the pending one, which attack5 does not try.
		{"confirm pending", pending, cmd(mem, discordtest.Sub("confirm", S("fact", pending)))},
		{"reject pending", pending, cmd(mem, discordtest.Sub("reject", S("fact", pending)))},
		// Autocomplete typing the other campaign's names and ids.
		{"complete entity", "Ald", auto(mem, ent("show", discordtest.Focused("entity", "Ald")))},
		{"complete subject", "Bren", auto(mem, fct("add", discordtest.Focused("subject", "Bren")))},
		{"complete fact by id", pending, auto(mem, discordtest.Sub("confirm", discordtest.Focused("fact", pending)))},
		{"complete fact by name", "Brenna", auto(mem, fct("retire", discordtest.Focused("fact", "Brenna")))},
		{"complete session", "foreign", auto("recap", S("scope", "session"), discordtest.Focused("session", "foreign"))},
		{"complete as_of", "s1", auto(mem, ent("show", S("entity", "grimjaw"), discordtest.Focused("as_of", "s1")))},
		{"complete npc", "Ald", auto("npc", discordtest.Sub("say", discordtest.Focused("npc", "Ald")))},
		{"complete present", "grimjaw, Bre", auto("npc", discordtest.Sub("scene", discordtest.Focused("present", "grimjaw, Bre")))},
		{"complete character", "Thor", auto("session", discordtest.Sub("player", S("member", player.UserID), discordtest.Focused("character", "Thor")))},
		// Buttons and forms naming the other campaign's rows.
		{"pending confirm button", pending, btn("pend:c:" + pending + ":0:")},
		{"pending reject button", pending, btn("pend:r:" + pending + ":0:")},
		{"pending edit button", fact, btn("pend:e:" + fact + ":0:")},
		{"pending accept all of session", f.Session, btn("pend:a:0:0:" + f.Session)},
		{"undo batch button", batch, btn("pend:u:" + batch + ":0:")},
		{"conflict keep new", conflict, btn("conf:n:" + conflict + ":0")},
		{"conflict keep old", conflict, btn("conf:o:" + conflict + ":0")},
		{"fact edit form", fact + " aldric brenna", h.fake.ModalSubmit(guildID, channelID, theDM, "factedit:"+fact+":0:",
			map[string]string{"subject": "grimjaw", "relation": "KNOWS", "object": "elara"})},
		{"entity edit form", "aldric", h.fake.ModalSubmit(guildID, channelID, theDM, "entedit:aldric",
			map[string]string{"name": "Pwned", "kind": "npc", "aliases": "", "attributes": "{}"})},
		// The other server's continuity card: its button pressed in this
		// server, this server's button naming it, and both in a direct
		// message by this server's DM (listed here, not there).
		{"card of the other guild", card + " " + foreignGuild, btn("cont:r:" + foreignGuild + ":" + card)},
		{"card through this guild", card, btn("cont:k:" + guildID + ":" + card)},
		{"card in a direct message", card + " " + foreignGuild, h.fake.DMButton(theDM, "cont:r:"+foreignGuild+":"+card)},
		{"card through this guild, direct", card, h.fake.DMButton(theDM, "cont:k:"+guildID+":"+card)},
		// Last: it may add entities of these names to this campaign.
		{"fact add", "aldric brenna", cmd(mem, fct("add", S("subject", "aldric"), S("relation", "KNOWS"), S("object", "brenna")))},
		// Commands with no server at all.
		{"command in a direct message", "aldric", dmCommand(h, "memory", ent("show", S("entity", "aldric")))},
		{"autocomplete in a direct message", "Ald", dmAutocomplete(h, "memory", ent("show", discordtest.Focused("entity", "Ald")))},
	}
	for _, a := range attempts {
		r := h.send(a.i)
		out := strings.ToLower(string(r.raw) + "\n" + r.Data.Content)
		for _, typed := range strings.Fields(a.typed) {
			out = strings.ReplaceAll(out, strings.ToLower(typed), "")
		}
		for _, w := range f.Words {
			if strings.Contains(out, strings.ToLower(w)) {
				t.Errorf("%s: the answer in the other server shows %q of campaign %s: %.600s", a.name, w, f.Campaign, out)
			}
		}
	}
	if after := f.State(t, store); after != before {
		t.Errorf("the other campaign changed:\nbefore %s\nafter  %s", before, after)
	}
}

// dmCommand is a slash command sent in a direct message: no guild, a user
// rather than a member.
func dmCommand(h *harness, name string, opts ...discordtest.Opt) discordtest.Interaction {
	return dmOnly(h.fake.Command("", discordtest.DMChannel(theDM.UserID), theDM, name, opts...))
}

// dmAutocomplete is dmCommand's autocomplete.
func dmAutocomplete(h *harness, name string, opts ...discordtest.Opt) discordtest.Interaction {
	return dmOnly(h.fake.Autocomplete("", discordtest.DMChannel(theDM.UserID), theDM, name, opts...))
}

func dmOnly(i discordtest.Interaction) discordtest.Interaction {
	m := i.Payload["member"].(map[string]any)
	delete(i.Payload, "guild_id")
	delete(i.Payload, "member")
	i.Payload["user"] = m["user"]
	return i
}
