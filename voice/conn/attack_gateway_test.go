package conn_test

import (
	"strings"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// TestAttackOversizedGatewayMessage: a voice gateway that sends one
// message of megabytes (far over any real one) does not get it read into
// memory: the bot drops that connection as lost (conn.MaxGatewayMessage)
// and resumes, and the player's audio goes on arriving.
func TestAttackOversizedGatewayMessage(t *testing.T) {
	t.Parallel()
	srv := server(t, voicetest.Config{})
	bot := dial(t, srv, botID, nil)
	player := dial(t, srv, playerID, nil)
	waitUser(t, player, botID)
	resumed := make(chan struct{}, 1)
	go func() {
		for e := range bot.Events() {
			if e.Kind == conn.EventResumed {
				select {
				case resumed <- struct{}{}:
				default:
				}
			}
		}
	}()
	// A speaking message padded past the limit: valid JSON, so only its
	// size is wrong.
	huge := `{"op":5,"d":{"user_id":"` + playerID + `","ssrc":4242,"speaking":1,"pad":"` +
		strings.Repeat("A", 2*conn.MaxGatewayMessage) + `"}}`
	srv.SendRaw(botID, false, []byte(huge))
	select {
	case <-resumed:
	case <-time.After(hangGuard):
		t.Fatalf("the bot kept the connection that sent a %d-byte message: %+v", len(huge), bot.Stats())
	}
	sent := stream(t, player, 20, nil)
	if got, lost := collect(bot, playerID, sent); len(got) != sent || lost != 0 {
		t.Fatalf("after the resume: sent %d frames, got %d, lost %d", sent, len(got), lost)
	}
}
