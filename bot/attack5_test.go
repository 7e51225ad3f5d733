package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres/pgtest"
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

// TestPlayerSearchReadsOnlyWhatTheyWitnessed (ATTACK5): while the DM had
// split the party, a player outside the scene typed /memory search and read
// what was said in it (the search read every canon line). A player's
// search reads the lines their character witnessed: the scene's player
// finds the scene's line, the other player does not, the DM does.
func TestPlayerSearchReadsOnlyWhatTheyWitnessed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	lyra := discordtest.Member{UserID: "u2", Name: "Lyra"}
	sl := h.camp.Sessions()
	start := time.Date(2026, 4, 2, 19, 0, 0, 0, time.UTC)
	if err := sl.StartSession(ctx, "split", start); err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		at      time.Duration
		players []string
	}{{0, []string{player.UserID, lyra.UserID}}, {time.Minute, []string{lyra.UserID}}} {
		if err := sl.RecordPresence(ctx, "split", start.Add(p.at), p.players, p.at > 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range []memory.TranscriptEntry{
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "Everyone sees the lanterns of Quillmere harbour.", At: start.Add(30 * time.Second)},
		{SpeakerID: theDM.UserID, SpeakerName: "Dana", Text: "Lyra alone finds the sapphire key under the Quillmere altar.", At: start.Add(2 * time.Minute)},
	} {
		e.SessionID = "split"
		if _, err := sl.WriteEntry(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	search := func(m discordtest.Member) string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, m, "memory", discordtest.Sub("search",
			discordtest.Str("query", "Quillmere"), discordtest.Str("mode", "text")))
		h.send(i)
		raw, _ := json.Marshal(h.original(i))
		return decodeMessage(t, raw).text()
	}
	if out := search(player); strings.Contains(out, "sapphire") || !strings.Contains(out, "lanterns") {
		t.Errorf("Thorin, outside Lyra's scene, searched and read:\n%s", out)
	}
	if out := search(lyra); !strings.Contains(out, "sapphire") || !strings.Contains(out, "lanterns") {
		t.Errorf("Lyra searched her own scene and read:\n%s", out)
	}
	if out := search(theDM); !strings.Contains(out, "sapphire") || !strings.Contains(out, "lanterns") {
		t.Errorf("the DM searched and read:\n%s", out)
	}
}

// TestDMCommandsNamingAnotherCampaignsFacts (ATTACK5): fact ids are
// numbered across every campaign of the database, so a DM of one server
// can type the id of another server's fact (or entity) into /memory fact
// retire, forget fact, confirm, reject, grant and entity show. Each is
// refused as unknown here, and the other campaign's fact is untouched.
func TestDMCommandsNamingAnotherCampaignsFacts(t *testing.T) {
	t.Parallel()
	store, _ := pgtest.NewStore(t, 16)
	ctx := context.Background()
	other := pgtest.Campaign(t, store, "other-saga")
	og := other.Graph()
	for _, e := range []memory.Entity{{ID: "zorvath", Name: "Zorvath", Type: memory.EntityNPC,
		Attributes: map[string]any{"dm_plan": "ZORVATH-PLAN-MARKER"}}, {ID: "tarnmoor", Name: "Tarnmoor", Type: memory.EntityLocation}} {
		if err := og.UpsertEntity(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	w, err := og.WriteFact(ctx, memory.DM("dm-elsewhere"), memory.Relationship{SourceID: "zorvath", TargetID: "tarnmoor", Type: "HIDES_AT",
		Provenance: memory.Provenance{Timestamp: time.Now(), Confidence: 1, Source: memory.SourceStated, DMConfirmed: true}}, "")
	if err != nil {
		t.Fatal(err)
	}
	id := fmt.Sprint(w.Fact.ID)
	h := newHarnessOn(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store)
	for _, tc := range []struct {
		name string
		i    discordtest.Interaction
	}{
		{"fact retire", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("retire", discordtest.Str("fact", id))))},
		{"forget fact", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("forget", discordtest.Sub("fact", discordtest.Str("fact", id))))},
		{"confirm", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("confirm", discordtest.Str("fact", id)))},
		{"reject", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("reject", discordtest.Str("fact", id)))},
		{"grant", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("grant", discordtest.Str("player", "<@"+player.UserID+">"), discordtest.Str("fact", id)))},
		{"entity show", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("entity", discordtest.Sub("show", discordtest.Str("entity", "zorvath"))))},
		{"fact list", h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Group("fact", discordtest.Sub("list", discordtest.Str("entity", "zorvath"))))},
	} {
		r := h.send(tc.i)
		out := string(r.raw)
		if r.Type == discordgo.InteractionResponseDeferredChannelMessageWithSource {
			raw, _ := json.Marshal(h.original(tc.i))
			out = string(raw)
		}
		if !strings.Contains(out, "not found") && !strings.Contains(out, "nothing in this campaign is called") {
			t.Errorf("%s of another campaign's fact #%s was not refused as unknown: %s", tc.name, id, out)
		}
		if strings.Contains(out, "Zorvath") || strings.Contains(out, "ZORVATH-PLAN-MARKER") || strings.Contains(out, "Tarnmoor") {
			t.Errorf("%s of another campaign's fact #%s answered: %s", tc.name, id, out)
		}
	}
	f, err := og.Fact(ctx, w.Fact.ID)
	if err != nil {
		t.Fatal(err)
	}
	if f.Status != memory.StatusActive {
		t.Errorf("another campaign's fact was changed from this one: %+v", f)
	}
	grants, err := h.camp.Grants(ctx, player.UserID, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(grants) != 0 {
		t.Errorf("a fact of another campaign was granted: %+v", grants)
	}
}
