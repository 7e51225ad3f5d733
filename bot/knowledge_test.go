package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
)

// userOpt is a user option (Discord sends the user id).
func userOpt(name, id string) discordtest.Opt {
	return discordtest.Opt{"name": name, "type": 6, "value": id}
}

// TestPlayerKnowledgeCommands: the DM sets who plays whom and grants a
// whisper; a player's /recap for:me holds their own grant and no line said
// while their character was away, and no other player's grant; a player
// is refused another player's known-by and the DM's grant.
func TestPlayerKnowledgeCommands(t *testing.T) {
	t.Parallel()
	h := newHarness(t, bot.Deps{})
	ctx := context.Background()
	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	// s2: everyone at first; Thorin (u1) leaves before Kael asks about the dragon.
	for _, p := range []struct {
		at      string
		players []string
	}{{"2026-03-08T19:00:00Z", []string{"u1", "u2", "u3"}}, {"2026-03-08T19:07:00Z", []string{"u2", "u3"}}} {
		if err := h.camp.Sessions().RecordPresence(ctx, "s2", at(p.at), p.players, false); err != nil {
			t.Fatal(err)
		}
	}
	run := func(who discordtest.Member, name string, opts ...discordtest.Opt) (string, bool) {
		t.Helper()
		i := h.fake.Command(guildID, channelID, who, name, opts...)
		r := h.send(i)
		if strings.HasPrefix(r.Data.Content, "⛔") {
			return r.Data.Content, false
		}
		content, _ := h.original(i)["content"].(string)
		return content, true
	}
	if out, ok := run(theDM, "session", discordtest.Sub("player", userOpt("member", "u1"), discordtest.Str("character", "Thorin"))); !ok ||
		!strings.Contains(out, "plays **Thorin**") {
		t.Fatalf("/session player: %s", out)
	}
	for _, g := range []struct{ who, text string }{{"u1", "WHISPER-U1 the seal is in the well"}, {"u2", "WHISPER-U2 Vexa lies"}} {
		if out, ok := run(theDM, "memory", discordtest.Sub("grant", userOpt("player", g.who), discordtest.Str("text", g.text))); !ok ||
			!strings.Contains(out, "now knows") {
			t.Fatalf("/memory grant: %s", out)
		}
	}

	mine, ok := run(player, "recap", discordtest.Str("for", "me"))
	if !ok {
		t.Fatalf("/recap for:me refused: %s", mine)
	}
	if !strings.Contains(mine, "WHISPER-U1") || !strings.Contains(mine, "Session s2") || !strings.Contains(mine, "Thorin") {
		t.Errorf("/recap for:me lacks the player's own knowledge: %s", mine)
	}
	for _, leak := range []string{"WHISPER-U2", "dragon in the vault", "sleeps beneath the water", "Vexa"} {
		if strings.Contains(mine, leak) {
			t.Errorf("/recap for:me of u1 holds %q: %s", leak, mine)
		}
	}

	// Adversaries: a player asking for another's knowledge, or granting.
	if out, ok := run(player, "memory", discordtest.Sub("known-by", userOpt("player", "u2"))); ok || strings.Contains(out, "WHISPER-U2") {
		t.Errorf("a player read another player's known-by: %s", out)
	}
	if out, ok := run(player, "memory", discordtest.Sub("grant", userOpt("player", "u1"), discordtest.Str("text", "a crown"))); ok {
		t.Errorf("a player granted themself: %s", out)
	}
	// Another player's for:me is their own.
	lyra, ok := run(discordtest.Member{UserID: "u2", Name: "Lyra"}, "recap", discordtest.Str("for", "me"))
	if !ok || !strings.Contains(lyra, "WHISPER-U2") || strings.Contains(lyra, "WHISPER-U1") {
		t.Errorf("u2's /recap for:me: %s", lyra)
	}

	// The DM reads any character's knowledge, with what it did not witness.
	known, ok := run(theDM, "memory", discordtest.Sub("known-by", userOpt("player", "u1")))
	if !ok || !strings.Contains(known, "What Thorin knows") || !strings.Contains(known, "WHISPER-U1") ||
		!strings.Contains(known, "were said where the character was not") || strings.Contains(known, "WHISPER-U2") {
		t.Errorf("/memory known-by u1: %s", known)
	}
	// A bad mention in /npc scene players is refused, naming it.
	if out, _ := run(theDM, "npc", discordtest.Sub("scene", discordtest.Str("players", "@nobody"))); !strings.Contains(out, "nobody") {
		t.Errorf("/npc scene players:@nobody: %s", out)
	}
}
