package bot_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/access"
)

// entityCmd is /memory entity SUB with options.
func entityCmd(sub string, opts ...discordtest.Opt) discordtest.Opt {
	return discordtest.Group("entity", discordtest.Sub(sub, opts...))
}

func choiceValues(cs []*discordgo.ApplicationCommandOptionChoice) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Value.(string))
	}
	return out
}

// The done-when of issue 30: entities can be added from Discord. The DM
// adds one with kind suggestions; it is then suggested, shown and usable in
// a fact; its DM notes stay hidden from players; a player is refused.
func TestDMAddsAnEntityFromDiscord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	cursor, err := h.camp.LastChange(ctx)
	if err != nil {
		t.Fatal(err)
	}

	// Kind suggestions: the campaign's kinds, then a new one as typed.
	r := h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", entityCmd("add",
		discordtest.Str("name", "Old Mill"), discordtest.Focused("kind", "loc"))))
	if got := choiceValues(r.Data.Choices); !slices.Contains(got, "location") {
		t.Fatalf("kind suggestions for \"loc\": %v", got)
	}
	r = h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", entityCmd("add", discordtest.Focused("kind", "Ruin"))))
	if got := choiceValues(r.Data.Choices); !slices.Contains(got, "ruin") {
		t.Fatalf("a new kind is offered as typed: %v", got)
	}

	i := h.fake.Command(guildID, channelID, theDM, "memory", entityCmd("add",
		discordtest.Str("name", "Old Mill Tower"), discordtest.Str("kind", "location"),
		discordtest.Str("aliases", "the mill, Mill Tower"),
		discordtest.Str("description", "a ruined mill by the river"),
		discordtest.Str("dm_notes", "the Ashen Circle meets in its cellar")))
	if r := h.send(i); r.Type != discordgo.InteractionResponseDeferredChannelMessageWithSource || r.Data.Flags != discordgo.MessageFlagsEphemeral {
		t.Fatalf("add must be a deferred ephemeral reply: %+v", r)
	}
	msg := h.original(i)
	if c, _ := msg["content"].(string); !strings.Contains(c, "Added **Old Mill Tower** (location, id `old-mill-tower`)") {
		t.Fatalf("add answered %v", msg)
	}
	e, err := h.camp.Graph().Entity(ctx, "old-mill-tower")
	if err != nil || e.Type != "location" || !slices.Equal(e.Aliases, []string{"the mill", "Mill Tower"}) ||
		e.Attributes["description"] != "a ruined mill by the river" || e.Attributes["dm_notes"] == nil {
		t.Fatalf("stored %+v %v", e, err)
	}

	// Found by autocomplete (by alias) and usable by name at once.
	r = h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", entityCmd("show", discordtest.Focused("entity", "the mill"))))
	if got := choiceValues(r.Data.Choices); !slices.Equal(got, []string{"old-mill-tower"}) {
		t.Fatalf("autocomplete \"the mill\": %v", got)
	}
	i = h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
		discordtest.Str("subject", "Vexa Thorn"), discordtest.Str("relation", "hides at"), discordtest.Str("object", "Mill Tower"))))
	h.send(i)
	if c, _ := h.original(i)["content"].(string); !strings.Contains(c, "Vexa Thorn —HIDES_AT→ Old Mill Tower") {
		t.Fatalf("fact add with the new entity: %q", c)
	}

	// The change log names the DM.
	chs, _, err := h.camp.ChangesSince(ctx, cursor, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(chs, func(c access.Change) bool {
		return c.Kind == "entity" && c.Ref == "old-mill-tower" && c.Op == "insert" && c.Actor == "dm:"+theDM.UserID
	}) {
		t.Fatalf("the change log lacks the DM's insert: %+v", chs)
	}

	// A player's view leaves the DM's notes out.
	pc, err := h.door.Open(ctx, campaign, memory.PlayerViewer())
	if err != nil {
		t.Fatal(err)
	}
	if pe, err := pc.Graph().Entity(ctx, "old-mill-tower"); err != nil || pe.Attributes["dm_notes"] != nil || pe.Attributes["description"] == nil {
		t.Fatalf("a player reads %+v %v", pe.Attributes, err)
	}

	// A player is refused, gets no suggestions, and nothing is written.
	r = h.send(h.fake.Command(guildID, channelID, player, "memory", entityCmd("add",
		discordtest.Str("name", "Sneaky Shop"), discordtest.Str("kind", "location"))))
	if r.Data.Flags != discordgo.MessageFlagsEphemeral || !strings.Contains(r.Data.Content, "`/memory entity add` is for the DM") {
		t.Fatalf("player add: %+v", r)
	}
	if _, err := h.camp.Graph().Entity(ctx, "sneaky-shop"); err == nil {
		t.Fatal("a player's refused add was stored")
	}
	r = h.send(h.fake.Autocomplete(guildID, channelID, player, "memory", entityCmd("add", discordtest.Focused("kind", ""))))
	if len(r.Data.Choices) != 0 {
		t.Fatalf("player kind suggestions: %v", choiceValues(r.Data.Choices))
	}

	// Adding a name that exists names the entity in the way.
	i = h.fake.Command(guildID, channelID, theDM, "memory", entityCmd("add",
		discordtest.Str("name", "grim"), discordtest.Str("kind", "npc")))
	h.send(i)
	if c, _ := h.original(i)["content"].(string); !strings.Contains(c, "nothing was added") || !strings.Contains(c, "Grimjaw") {
		t.Fatalf("duplicate name: %q", c)
	}
}

func TestDMMergesAndRetiresEntitiesFromDiscord(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	g := h.camp.Graph()
	// A duplicate of Grimjaw, as extraction might leave one.
	if err := g.UpsertEntity(ctx, memory.Entity{ID: "grimm", Type: memory.EntityNPC, Name: "Grimm Smith"}); err != nil {
		t.Fatal(err)
	}
	f, err := g.UpsertRelationship(ctx, memory.Relationship{SourceID: "grimm", TargetID: "duskwood", Type: "FEARS",
		Provenance: memory.Provenance{Confidence: 1, Source: memory.SourceStated}})
	if err != nil {
		t.Fatal(err)
	}
	r := h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", entityCmd("merge",
		discordtest.Str("entity", "grimm"), discordtest.Focused("into", "grimj"))))
	if got := choiceValues(r.Data.Choices); !slices.Equal(got, []string{"grimjaw"}) {
		t.Fatalf("into suggestions: %v", got)
	}
	i := h.fake.Command(guildID, channelID, theDM, "memory", entityCmd("merge",
		discordtest.Str("entity", "Grimm Smith"), discordtest.Str("into", "grimjaw")))
	h.send(i)
	if c, _ := h.original(i)["content"].(string); !strings.Contains(c, "Merged `grimm` into **Grimjaw**: 1 facts moved") {
		t.Fatalf("merge answered %q", c)
	}
	if moved, err := g.Fact(ctx, f.ID); err != nil || moved.SourceID != "grimjaw" {
		t.Fatalf("the duplicate's fact: %+v %v", moved, err)
	}
	if e, _ := g.Entity(ctx, "grimjaw"); !slices.Contains(e.Aliases, "Grimm Smith") {
		t.Fatalf("the merged name is not an alias: %v", e.Aliases)
	}

	// Retire the Dawn Hammer: its facts stop holding; it leaves the list.
	i = h.fake.Command(guildID, channelID, theDM, "memory", entityCmd("retire",
		discordtest.Str("entity", "dawn-hammer"), discordtest.Str("reason", "melted in the forge")))
	h.send(i)
	if c, _ := h.original(i)["content"].(string); !strings.Contains(c, "Retired **Dawn Hammer**") || !strings.Contains(c, "melted in the forge") {
		t.Fatalf("retire answered %q", c)
	}
	rels, err := g.Relationships(ctx, "dawn-hammer", memory.TraversalOpts{})
	if err != nil || len(rels) != 0 {
		t.Fatalf("the retired entity still has canon facts: %+v %v", rels, err)
	}
	r = h.send(h.fake.Autocomplete(guildID, channelID, theDM, "memory", entityCmd("show", discordtest.Focused("entity", "dawn"))))
	if len(r.Data.Choices) != 0 {
		t.Fatalf("a retired entity is still suggested: %v", choiceValues(r.Data.Choices))
	}
	// Its name still finds it, and retiring it again says it is retired.
	i = h.fake.Command(guildID, channelID, theDM, "memory", entityCmd("retire", discordtest.Str("entity", "Dawn Hammer")))
	h.send(i)
	if c, _ := h.original(i)["content"].(string); !strings.Contains(c, "nothing was retired") || !strings.Contains(c, "it was retired on") {
		t.Fatalf("retiring twice answered %q", c)
	}

	// Players are refused both.
	for _, sub := range []string{"merge", "retire"} {
		r = h.send(h.fake.Command(guildID, channelID, player, "memory", entityCmd(sub,
			discordtest.Str("entity", "elara"), discordtest.Str("into", "vexa"))))
		if !strings.Contains(r.Data.Content, "is for the DM") {
			t.Fatalf("player %s: %+v", sub, r)
		}
	}
	if _, err := g.Entity(ctx, "elara"); err != nil {
		t.Fatalf("a player's refused merge removed Elara: %v", err)
	}
}

// TestPlayerGetsNoSuggestionsFromDMCommands: every DM command option that
// suggests entities, facts, kinds or sessions suggests nothing to a
// player, whatever they type (the same options suggest to the DM).
func TestPlayerGetsNoSuggestionsFromDMCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	for _, tc := range []struct {
		name, cmd string
		opt       discordtest.Opt
	}{
		{"entity show", "memory", entityCmd("show", discordtest.Focused("entity", "gri"))},
		{"entity edit", "memory", entityCmd("edit", discordtest.Focused("entity", "gri"))},
		{"entity merge", "memory", entityCmd("merge", discordtest.Str("entity", "grimjaw"), discordtest.Focused("into", "e"))},
		{"entity retire", "memory", entityCmd("retire", discordtest.Focused("entity", "gri"))},
		{"entity add kind", "memory", entityCmd("add", discordtest.Str("name", "x"), discordtest.Focused("kind", "n"))},
		{"fact add subject", "memory", discordtest.Group("fact", discordtest.Sub("add", discordtest.Focused("subject", "e")))},
		{"fact list", "memory", discordtest.Group("fact", discordtest.Sub("list", discordtest.Focused("entity", "e")))},
		{"fact retire", "memory", discordtest.Group("fact", discordtest.Sub("retire", discordtest.Focused("fact", "")))},
		{"forget fact", "memory", discordtest.Group("forget", discordtest.Sub("fact", discordtest.Focused("fact", "")))},
		{"reject", "memory", discordtest.Sub("reject", discordtest.Focused("fact", ""))},
		{"pending session", "memory", discordtest.Sub("pending", discordtest.Focused("session", ""))},
		{"npc say", "npc", discordtest.Sub("say", discordtest.Focused("npc", "g"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dm := h.send(h.fake.Autocomplete(guildID, channelID, theDM, tc.cmd, tc.opt))
			if len(dm.Data.Choices) == 0 {
				t.Fatalf("the DM gets no suggestions either (else this case proves nothing)")
			}
			r := h.send(h.fake.Autocomplete(guildID, channelID, player, tc.cmd, tc.opt))
			if r.Type != discordgo.InteractionApplicationCommandAutocompleteResult || len(r.Data.Choices) != 0 {
				t.Errorf("a player is suggested %v", choiceValues(r.Data.Choices))
			}
		})
	}
}
