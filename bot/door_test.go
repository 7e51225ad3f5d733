package bot_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/internal/pgcluster"
	"github.com/glyphoxa/glyphoxa/memory"
	"github.com/glyphoxa/glyphoxa/memory/postgres"
)

// member is a discordtest member as an interaction carries it.
func member(m discordtest.Member) *discordgo.Member {
	var perms int64
	if m.Admin {
		perms = discordgo.PermissionAdministrator
	}
	return &discordgo.Member{User: &discordgo.User{ID: m.UserID, Username: m.Name}, Roles: m.Roles, Permissions: perms}
}

// A command reads the campaign through a handle bound to the member who
// runs it: a player's handle returns no DM-only attribute (in any
// spelling, nor an object marked secret) and cannot be re-bound to the
// DM's; the DM's returns them.
func TestCommandsReadAsTheInvokingMember(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	hidden := map[string]any{"GM_Notes": "GMNOTE-MARKER", "dm_plan": "DMPLAN-MARKER", "hidden_door": "HIDDEN-MARKER",
		"rumour": map[string]any{"secret": true, "text": "OBJECT-MARKER"}}
	if _, err := h.camp.Graph().UpdateEntity(ctx, "grimjaw", memory.EntityUpdate{SetAttributes: hidden}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		m      discordtest.Member
		viewer memory.Viewer
	}{
		{"player", player, memory.PlayerViewerOf(player.UserID)},
		{"DM by role", theDM, memory.DMViewer()},
		{"administrator", discordtest.Member{UserID: "300", Name: "Admin", Admin: true}, memory.DMViewer()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			camp, err := h.bot.CampaignFor(ctx, guildID, member(tc.m))
			if err != nil {
				t.Fatal(err)
			}
			if camp.Viewer() != tc.viewer {
				t.Fatalf("the handle reads as %s, want %s", camp.Viewer(), tc.viewer)
			}
			e, err := camp.Graph().Entity(ctx, "grimjaw")
			if err != nil {
				t.Fatal(err)
			}
			for k := range hidden {
				_, seen := e.Attributes[k]
				if dm := tc.viewer == memory.DMViewer(); seen != dm {
					t.Errorf("attribute %q seen: %v, want %v", k, seen, dm)
				}
			}
			if _, ok := e.Attributes[memory.AttrSecretKnowledge]; ok != (tc.viewer == memory.DMViewer()) {
				t.Errorf("secret_knowledge seen: %v", ok)
			}
			if tc.viewer != memory.DMViewer() {
				if _, err := camp.As(memory.DMViewer()); !errors.Is(err, memory.ErrForbidden) {
					t.Errorf("a player's handle re-bound to the DM: %v", err)
				}
			}
		})
	}
}

// A player's command never creates a campaign and never learns the names
// of the others; the DM's does create it.
func TestPlayersDoNotCreateCampaigns(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	sess, err := discordgo.New("Bot fake-token")
	if err != nil {
		t.Fatal(err)
	}
	b, err := bot.New(bot.Config{Guilds: []bot.Guild{{ID: guildID, Campaign: "not-yet", DMRoleIDs: []string{dmRole}}},
		Logger: slog.New(slog.DiscardHandler)}, bot.Deps{Door: h.door}, bot.WithSession(sess))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.CampaignFor(ctx, guildID, member(player))
	if err == nil || !strings.Contains(err.Error(), "no memory yet") {
		t.Fatalf("a player opening a new campaign: %v", err)
	}
	if strings.Contains(err.Error(), campaign) {
		t.Errorf("the player's error names another campaign: %v", err)
	}
	if ids, err := h.door.Campaigns(ctx); err != nil || len(ids) != 1 {
		t.Fatalf("campaigns after a player's command: %v %v", ids, err)
	}
	if _, err := b.CampaignFor(ctx, guildID, member(theDM)); err != nil {
		t.Fatalf("the DM opening a new campaign: %v", err)
	}
	if ids, err := h.door.Campaigns(ctx); err != nil || len(ids) != 2 {
		t.Fatalf("campaigns after the DM's command: %v %v", ids, err)
	}
}

// With the database down, a command says that memory is unavailable, in
// plain words and without the driver's message, for the first command
// that meets the outage and for those the degraded door refuses at once;
// once the database is back, commands work again.
func TestOutageGivesAClearReply(t *testing.T) {
	t.Parallel()
	cl := pgcluster.Start(t)
	// The store is opened on the private cluster itself (not through
	// GLYPHOXA_TEST_DSN), so the test runs beside the others.
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	store, err := postgres.NewStore(ctx, cl.DSN(), 16)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	h := newHarnessOn(t, bot.Deps{}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}}, store)

	search := func(m discordtest.Member) string {
		t.Helper()
		i := h.fake.Command(guildID, channelID, m, "memory", discordtest.Sub("search", discordtest.Str("query", "shipment"),
			discordtest.Str("mode", "text")))
		h.send(i)
		content, _ := h.original(i)["content"].(string)
		return content
	}
	if got := search(player); !strings.Contains(got, "Said at the table") {
		t.Fatalf("search before the outage: %s", got)
	}
	if err := cl.StopImmediate(); err != nil {
		t.Fatal(err)
	}
	plain := func(what, got string) {
		t.Helper()
		if !strings.Contains(got, "memory is unavailable right now") {
			t.Errorf("%s in an outage: %q, want the plain unavailable message", what, got)
		}
		for _, raw := range []string{"connect", "dial", "127.0.0.1", "SQLSTATE", "EOF", "conn"} {
			if strings.Contains(got, raw) {
				t.Errorf("%s in an outage shows the driver's words (%q): %q", what, raw, got)
			}
		}
	}
	plain("a player's search", search(player)) // meets the outage
	i := h.fake.Command(guildID, channelID, theDM, "memory", discordtest.Sub("pending"))
	h.send(i) // the door is degraded now: refused at once
	content, _ := h.original(i)["content"].(string)
	plain("the DM's /memory pending", content)
	if !h.door.Health().Degraded {
		t.Error("the door is not degraded after an outage")
	}
	r := h.send(h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID))
	plain("forget-me", r.Data.Content)
	if !strings.Contains(r.Data.Content, "Nothing was deleted") {
		t.Errorf("forget-me in an outage: %q", r.Data.Content)
	}

	if err := cl.Restart(); err != nil {
		t.Fatal(err)
	}
	hang := time.After(2 * time.Minute) // a hang guard, not a budget
	for h.door.Health().Degraded {
		select {
		case <-hang:
			t.Fatal("the door never saw the database back")
		case <-time.After(20 * time.Millisecond):
		}
	}
	if got := search(player); !strings.Contains(got, "Said at the table") {
		t.Fatalf("search after the outage: %s", got)
	}
}
