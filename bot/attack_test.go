package bot_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
	"github.com/glyphoxa/glyphoxa/bot/discordtest"
	"github.com/glyphoxa/glyphoxa/lifecycle/continuity"
	"github.com/glyphoxa/glyphoxa/memory"
)

// forgetCardVoice is a cardVoice with no session running, so forget-me
// erases the store directly.
type forgetCardVoice struct{ *cardVoice }

func (v forgetCardVoice) Forget(context.Context, string, string, func(context.Context) error) (memory.ForgetReport, bool, error) {
	return memory.ForgetReport{}, false, nil
}

// TestForgetMeDropsTheContinuityCardsQuotingThePlayer: a player who asks
// to be forgotten does not survive on the continuity board (the console's
// Live page) as the quoted line of a card; another speaker's card stays.
func TestForgetMeDropsTheContinuityCardsQuotingThePlayer(t *testing.T) {
	t.Parallel()
	board := continuity.NewBoard()
	v := forgetCardVoice{&cardVoice{board: board}}
	h := newHarnessFor(t, bot.Deps{Voice: v}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole}})
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	mine := board.Add(continuity.Card{Campaign: campaign, GuildID: guildID,
		Line: continuity.Line{SessionID: "s1", SpeakerID: player.UserID, Speaker: "Thorin", Text: "Grimjaw is in Duskwood.", At: at}})
	other := board.Add(continuity.Card{Campaign: campaign, GuildID: guildID,
		Line: continuity.Line{SessionID: "s1", SpeakerID: "u2", Speaker: "Lyra", Text: "Grimjaw is in Duskwood.", At: at}})
	elsewhere := board.Add(continuity.Card{Campaign: "another", GuildID: "g2",
		Line: continuity.Line{SessionID: "s9", SpeakerID: player.UserID, Speaker: "Thorin", Text: "Vexa is in Duskwood.", At: at}})

	r := h.send(h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID))
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Deleted ") {
		t.Fatalf("forget-me result: %+v", r)
	}
	if c, ok := board.Get(mine.ID); ok {
		t.Errorf("the card quoting the forgotten player's line survives: %+v", c)
	}
	if _, ok := board.Get(other.ID); !ok {
		t.Error("another speaker's card went too")
	}
	if _, ok := board.Get(elsewhere.ID); !ok {
		t.Error("a card of another campaign went too")
	}
}

// TestForgetMeTakesDownThePostedCards: the continuity cards quoting a
// player who asks to be forgotten are deleted from the DM's direct
// messages (ATTACK2: they went on quoting the player's words there after
// forget-me): the one this process raised, and one an earlier process
// raised (known only to the store); another speaker's card stays.
func TestForgetMeTakesDownThePostedCards(t *testing.T) {
	ctx := context.Background()
	board := continuity.NewBoard()
	v := forgetCardVoice{&cardVoice{board: board}}
	h := newHarnessFor(t, bot.Deps{Voice: v}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole},
		DMUserIDs: []string{theDM.UserID}})
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	card := func(speaker, name string) continuity.Card {
		return continuity.Card{Campaign: campaign, GuildID: guildID,
			Finding: continuity.Finding{Kind: continuity.KindPlace, Claim: "Grimjaw is in Duskwood"},
			Line:    continuity.Line{SessionID: "s1", SpeakerID: speaker, Speaker: name, Text: name + ": Grimjaw is in Duskwood.", At: at}}
	}
	// An earlier process raised, stored and posted this one.
	earlier := continuity.NewBoard()
	old := earlier.Add(card(player.UserID, "Thorin"))
	if err := earlier.Save(ctx, h.camp); err != nil {
		t.Fatal(err)
	}
	mine := board.Add(card(player.UserID, "Thorin"))
	other := board.Add(card("u2", "Lyra"))
	if err := board.Save(ctx, h.camp); err != nil {
		t.Fatal(err)
	}
	v.mu.Lock()
	post := v.contradicted
	v.mu.Unlock()
	for _, c := range []continuity.Card{old, mine, other} {
		if !post(c) {
			t.Fatalf("card %s reached no DM", c.ID)
		}
	}
	dms := discordtest.DMChannel(theDM.UserID)
	if n := len(h.fake.Messages(dms)); n != 3 {
		t.Fatalf("%d cards in the DM's direct messages, want 3", n)
	}

	r := h.send(h.fake.Button(guildID, channelID, player, "forgetme:yes:"+player.UserID))
	if r.Type != discordgo.InteractionResponseDeferredMessageUpdate || !strings.Contains(r.Data.Content, "Deleted ") {
		t.Fatalf("forget-me result: %+v", r)
	}
	// The cards are taken down after the answer: wait for it (a hang
	// guard, not a budget).
	deadline := time.Now().Add(time.Minute)
	left := h.fake.Messages(dms)
	for len(left) > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		left = h.fake.Messages(dms)
	}
	for _, m := range left {
		for _, e := range m.Embeds {
			if strings.Contains(e.Footer.Text, old.ID) || strings.Contains(e.Footer.Text, mine.ID) ||
				strings.Contains(fmt.Sprint(e.Fields[1].Value), "Thorin") {
				t.Errorf("a card quoting the forgotten player is still in the DM's direct messages: %s", e.Footer.Text)
			}
		}
	}
	if len(left) != 1 || !strings.Contains(left[0].Embeds[0].Footer.Text, other.ID) {
		t.Fatalf("the DM's direct messages hold %d messages after forget-me; want only the other speaker's card %s", len(left), other.ID)
	}
}

// TestForgetMeThatWaitedForTheDatabaseTakesDownTheCards: a forget-me
// asked while the database was down runs from the outage spool later;
// the session hands its report back (StartRequest.Forgotten) and the bot
// takes down the DMs' messages of every card it deleted, including one
// raised by another process (ATTACK3: only the answering process's own
// board cards were taken down).
func TestForgetMeThatWaitedForTheDatabaseTakesDownTheCards(t *testing.T) {
	ctx := context.Background()
	board := continuity.NewBoard()
	v := forgetCardVoice{&cardVoice{board: board}}
	h := newHarnessFor(t, bot.Deps{Voice: v}, bot.Guild{ID: guildID, Campaign: campaign, DMRoleIDs: []string{dmRole},
		DMUserIDs: []string{theDM.UserID}})
	if err := h.bot.Resume(ctx, guildID, bot.ClaimedSession{Campaign: campaign, VoiceChannelID: channelID,
		TextChannelID: channelID, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 19, 30, 0, 0, time.UTC)
	elsewhere := continuity.NewBoard() // another process's
	mine := elsewhere.Add(continuity.Card{Campaign: campaign, GuildID: guildID,
		Finding: continuity.Finding{Kind: continuity.KindPlace, Claim: "Grimjaw is in Duskwood"},
		Line:    continuity.Line{SessionID: "s1", SpeakerID: player.UserID, Speaker: "Thorin", Text: "Grimjaw is in Duskwood.", At: at}})
	other := elsewhere.Add(continuity.Card{Campaign: campaign, GuildID: guildID,
		Finding: continuity.Finding{Kind: continuity.KindPlace, Claim: "Grimjaw is in Duskwood"},
		Line:    continuity.Line{SessionID: "s1", SpeakerID: "u2", Speaker: "Lyra", Text: "Grimjaw is in Duskwood.", At: at}})
	v.mu.Lock()
	post, forgotten := v.contradicted, v.forgotten
	v.mu.Unlock()
	if forgotten == nil {
		t.Fatal("the session was started without a Forgotten hook")
	}
	for _, c := range []continuity.Card{mine, other} {
		if !post(c) {
			t.Fatalf("card %s reached no DM", c.ID)
		}
	}
	dms := discordtest.DMChannel(theDM.UserID)
	forgotten(player.UserID, memory.ForgetReport{Cards: []string{mine.ID}})
	left := h.fake.Messages(dms)
	if len(left) != 1 || !strings.Contains(left[0].Embeds[0].Footer.Text, other.ID) {
		t.Fatalf("the DM's direct messages hold %d messages after the late forget-me; want only the other speaker's card %s",
			len(left), other.ID)
	}
}
