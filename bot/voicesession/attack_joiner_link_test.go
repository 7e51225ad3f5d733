package voicesession_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/glyphoxa/glyphoxa/bot/voicesession"
	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// TestAttackLinkMovedWhileRejoining (adversarial review of 2c6e9e8, the
// joiner's own rejoin; failed at 2c6e9e8 and at its parent): the bot's voice session is lost (4006) and its
// connection rejoins the hall through the main gateway; Discord answers
// the state half, and before the server half a member drags the bot into
// the cellar, another voice server's. The connection must end up in the
// cellar. The reconnector rejoins with the connection's own context (no
// deadline) and holds its switch lock meanwhile; the joiner's join waits
// for the bot to be in the hall, where it no longer is, and holds the
// move's report back while it waits.
//
// The session handles events in order (SyncEvents) so that the joiner
// sees them as sent; the fake leaves the rejoin's op 4 to the test to
// answer.
func TestAttackLinkMovedWhileRejoining(t *testing.T) {
	t.Parallel()
	const (
		hall    = "100000000000000011"
		cellar  = "100000000000000012"
		cellarP = "444444444444444444"
	)
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	w := newLinkWorld(t, ctx, func(s *discordgo.Session) { s.SyncEvents = true })
	fake, first, second, joiner, botID := w.fake, w.first, w.second, w.joiner, w.botID

	link := voicesession.NewGatewayLink(joiner, conn.Config{Logger: quiet(), HandshakeTimeout: time.Minute,
		Backoff: conn.Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond, Attempts: 3}})
	v, err := link.Join(ctx, guildID, hall)
	if err != nil {
		t.Fatal(err)
	}
	// The connection first: closing it ends a rejoin that waits.
	t.Cleanup(func() { v.Close(); link.Leave(guildID) })
	linkPlayer(t, first, playerID, hall)
	if err := voicetest.Wait(ctx, func() bool { return slices.Contains(v.Users(), playerID) }); err != nil {
		t.Fatal("the bot does not see the player in the hall")
	}
	op4 := func() string {
		t.Helper()
		for {
			select {
			case op := <-fake.GatewayOps():
				if op.Op != 4 {
					continue
				}
				var d struct {
					ChannelID *string `json:"channel_id"`
				}
				json.Unmarshal(op.Data, &d)
				if d.ChannelID == nil {
					return ""
				}
				return *d.ChannelID
			case <-ctx.Done():
				t.Fatal("no voice state update from the bot")
				return ""
			}
		}
	}
	if ch := op4(); ch != hall {
		t.Fatalf("the join asked for %q", ch)
	}

	// The session is lost; Discord is slow to answer the rejoin.
	fake.SetVoiceEndpoint("")
	first.CloseWS(botID, gateway.CloseSessionInvalid)
	if ch := op4(); ch != hall {
		t.Fatalf("the rejoin asked for %q", ch)
	}
	other := linkPlayer(t, second, cellarP, cellar)
	dispatch := func(typ string, d map[string]any) {
		t.Helper()
		if err := fake.Dispatch(typ, d); err != nil {
			t.Fatal(err)
		}
	}
	dispatch("VOICE_STATE_UPDATE", map[string]any{"guild_id": guildID, "channel_id": hall, "user_id": botID, "session_id": "answer-session"})
	dispatch("VOICE_STATE_UPDATE", map[string]any{"guild_id": guildID, "channel_id": cellar, "user_id": botID, "session_id": "moved-session"})
	dispatch("VOICE_SERVER_UPDATE", map[string]any{"token": "answer-token", "guild_id": guildID, "endpoint": first.Endpoint()})
	dispatch("VOICE_SERVER_UPDATE", map[string]any{"token": "moved-token", "guild_id": guildID, "endpoint": second.Endpoint()})
	if err := voicetest.Wait(ctx, func() bool {
		return second.Connected(botID) && slices.Contains(v.Users(), cellarP) && slices.Contains(other.Users(), botID)
	}); err != nil {
		t.Fatalf("a member dragged the bot into the cellar while its connection rejoined the hall after a lost session: "+
			"%s later the connection is not in the cellar (on its server %v; a frame sent now: %v; the joiner says the bot is in %q)",
			hangGuard, second.Connected(botID), v.WriteOpus([]byte("probe")), joiner.Channel(guildID))
	}
}
