package bot_test

import (
	"context"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// TestAnInteractionDeliveredTwiceRunsOnce (ATTACK5): Discord may deliver
// one interaction twice (a gateway resume replaying it, a retry); the
// second delivery of a DM's /memory fact add must not run the command
// again (a second write, a second answer Discord refuses).
func TestAnInteractionDeliveredTwiceRunsOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	add := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
		discordtest.Str("subject", "grimjaw"), discordtest.Str("relation", "fears"), discordtest.Str("object", "duskwood"))))
	h.send(add)
	h.original(add)
	// The same interaction again, then another: once the other is
	// answered, the replay has been read (events are read in order).
	if err := h.fake.Send(add); err != nil {
		t.Fatal(err)
	}
	h.send(h.fake.Command(guildID, channelID, theDM, "session", discordtest.Sub("status")))
	callbacks := 0
	for _, c := range h.fake.Calls() {
		if c.Method == "POST" && c.Path == add.CallbackPath() {
			callbacks++
		}
	}
	if callbacks != 1 {
		t.Errorf("the interaction was answered %d times, want once", callbacks)
	}
	rels := must[[]memory.Relationship](t)(h.camp.Graph().Relationships(ctx, "grimjaw", memory.TraversalOpts{RelTypes: []string{"FEARS"}}))
	if len(rels) != 1 {
		t.Errorf("Grimjaw fears %+v, want one fact", rels)
	}
}
