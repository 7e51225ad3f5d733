package bot_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot"
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
	if r.Type != discordgo.InteractionResponseUpdateMessage || !strings.Contains(r.Data.Content, "Deleted ") {
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
