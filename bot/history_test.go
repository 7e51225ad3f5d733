package bot_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
)

// The DM's /memory fact add goes through the fact timeline: moving Grimjaw
// retires his old location (kept for "as of"), with the DM's reason, and
// /memory entity show, /memory fact list and /memory changes show it.
func TestMemoryFactAddSupersedesAndAsOf(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	g := h.camp.Graph()
	reply := func(i discordtest.Interaction) string {
		t.Helper()
		h.send(i)
		raw, _ := json.Marshal(h.original(i))
		m := decodeMessage(t, raw)
		checkLimits(t, m)
		return m.text()
	}

	out := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("add",
		discordtest.Str("subject", "grimjaw"), discordtest.Str("relation", "located at"), discordtest.Str("object", "duskwood"),
		discordtest.Str("reason", "he fled after the fire")))))
	if !strings.Contains(out, "Added as canon") || !strings.Contains(out, "supersedes") || !strings.Contains(out, "Ironhold") {
		t.Fatalf("fact add: %s", out)
	}
	now := must[[]memory.Relationship](t)(g.Relationships(ctx, "grimjaw", memory.TraversalOpts{RelTypes: []string{"LOCATED_AT"}}))
	if len(now) != 1 || now[0].TargetID != "duskwood" || now[0].Attributes["dm_reason"] != "he fled after the fire" {
		t.Fatalf("Grimjaw is now at %+v, want only Duskwood with the reason", now)
	}
	// No open conflict for the DM's own decision; the old fact is retired.
	if cs := must[[]memory.Conflict](t)(g.Conflicts(ctx)); len(cs) != 0 {
		t.Errorf("open conflicts after the DM's own write: %+v", cs)
	}

	show := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("entity", discordtest.Sub("show",
		discordtest.Str("entity", "grimjaw"), discordtest.Str("as_of", "s1")))))
	if !strings.Contains(show, "as of session s1") || !strings.Contains(show, "Ironhold") || strings.Contains(show, "Duskwood") {
		t.Errorf("entity show as of s1: %s", show)
	}
	list := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("list",
		discordtest.Str("entity", "grimjaw")))))
	if !strings.Contains(list, "Duskwood") || strings.Contains(list, "—LOCATED_AT→ Ironhold") {
		t.Errorf("fact list now: %s", list)
	}
	changes := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("changes")))
	if !strings.Contains(changes, "Since the end of session s2") || !strings.Contains(changes, "Grimjaw —LOCATED_AT→ Duskwood") ||
		!strings.Contains(changes, "no longer holds") {
		t.Errorf("memory changes: %s", changes)
	}
	bad := reply(h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("list",
		discordtest.Str("entity", "grimjaw"), discordtest.Str("as_of", "s99")))))
	if !strings.Contains(bad, "s99") {
		t.Errorf("fact list as of an unknown session: %s", bad)
	}
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
