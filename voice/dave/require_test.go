package dave

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/mls"
)

// requireCall is a call of user 1 (made with RequireE2EE) and user 2 (not),
// both in the group, a minute after the transition that made it.
func requireCall(t *testing.T) (gw *fakeGateway, bot, player *Session) {
	t.Helper()
	gw = newFakeGateway(t)
	gw.opts = map[uint64][]Option{1: {RequireE2EE()}}
	bot = gw.connect(1)
	player = gw.connect(2)
	gw.round([]uint64{1}, 1, []uint64{2}, func(s *Session) []*mls.MLSMessage {
		return []*mls.MLSMessage{gw.proposal(s, &mls.Proposal{Type: mls.ProposalAdd, KeyPackage: gw.kps[2]})}
	})
	gw.execute()
	gw.clock = gw.clock.Add(time.Minute)
	exchange(t, bot, player)
	exchange(t, player, bot)
	return gw, bot, player
}

// A downgrade (op 21 and op 22 to protocol version 0) of a session made
// with RequireE2EE is refused: no op 23, no plaintext out or in, and the
// session ends as a recovery that gave up, so that its owner rejoins or
// tells the DM. The player's session, without the option, follows the
// downgrade as the protocol says.
func TestRequireE2EERefusesADowngrade(t *testing.T) {
	gw, bot, player := requireCall(t)
	downgrade := map[string]int{"transition_id": 9, "protocol_version": 0}
	if out := gw.jsonOp(bot, gateway.OpDAVEPrepareTransition, downgrade); len(out) != 0 {
		t.Fatalf("the bot answered a downgrade it refuses: %v", out)
	}
	if err := bot.Failed(); !errors.Is(err, ErrE2EERequired) {
		t.Fatalf("Failed() = %v after a refused downgrade, want ErrE2EERequired", err)
	}
	if countReady(gw.jsonOp(player, gateway.OpDAVEPrepareTransition, downgrade), 9) != 1 {
		t.Fatal("the player's session did not follow the downgrade")
	}
	gw.jsonOp(bot, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 9})
	gw.jsonOp(player, gateway.OpDAVEExecuteTransition, map[string]int{"transition_id": 9})

	speech := []byte("the npc speaks")
	if out, err := bot.Encrypt(speech); !errors.Is(err, ErrNoSendKey) {
		t.Fatalf("after a refused downgrade the bot's speech went out: %q, %v (want ErrNoSendKey)", out, err)
	}
	if out, err := player.Encrypt(speech); err != nil || !bytes.Equal(out, speech) {
		t.Fatalf("the player's session did not downgrade: %q, %v", out, err)
	}
	if out, err := bot.Decrypt(2, speech); err == nil {
		t.Fatalf("after a refused downgrade the bot heard plaintext: %q", out)
	}
	if bot.Ready() {
		t.Fatal("Ready() after a refused downgrade")
	}
	// A second downgrade keeps the first reason.
	gw.jsonOp(bot, gateway.OpDAVEPrepareTransition, map[string]int{"transition_id": 10, "protocol_version": 0})
	if err := bot.Failed(); !errors.Is(err, ErrE2EERequired) || !bytes.Contains([]byte(err.Error()), []byte("transition 9")) {
		t.Fatalf("Failed() = %v after a second downgrade", err)
	}
}

// A call described without DAVE is refused by a session made with
// RequireE2EE; nothing passes either way.
func TestRequireE2EERefusesAnUnencryptedCall(t *testing.T) {
	s, err := NewSession(1, testChannel, WithClock(fixedNow), RequireE2EE())
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.SessionDescription(0)
	if !errors.Is(err, ErrE2EERequired) || len(out) != 0 {
		t.Fatalf("SessionDescription(0) = %v, %v; want ErrE2EERequired", out, err)
	}
	if f, err := s.Encrypt([]byte("speech")); err == nil {
		t.Fatalf("Encrypt after a refused description: %q", f)
	}
	if f, err := s.Decrypt(2, []byte("speech")); err == nil {
		t.Fatalf("Decrypt after a refused description: %q", f)
	}
	// Without the option the same call is joined as it is.
	plain, err := NewSession(1, testChannel, WithClock(fixedNow))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.SessionDescription(0); err != nil {
		t.Fatal(err)
	}
	if f, err := plain.Encrypt([]byte("speech")); err != nil || string(f) != "speech" {
		t.Fatalf("without RequireE2EE: %q, %v", f, err)
	}
}

// RequireE2EE accepts no plaintext at all: not in the seconds after the
// session description, nor from a member that joins and whose own session
// is not ready yet (frames the protocol otherwise lets through).
func TestRequireE2EEHearsNoPlaintext(t *testing.T) {
	for _, require := range []bool{false, true} {
		gw := newFakeGateway(t)
		if require {
			gw.opts = map[uint64][]Option{1: {RequireE2EE()}}
		}
		bot := gw.connect(1)
		_, afterDescription := bot.Decrypt(7, []byte("plain frame"))
		gw.clock = gw.clock.Add(KeyExpiry + time.Second) // past the window after the description
		raw, _ := json.Marshal(map[string][]string{"user_ids": {"3"}})
		if _, err := bot.HandleJSON(gateway.OpClientsConnect, raw); err != nil {
			t.Fatal(err)
		}
		_, fromJoiner := bot.Decrypt(3, []byte("plain frame"))
		if require != (afterDescription != nil) || require != (fromJoiner != nil) {
			t.Fatalf("RequireE2EE %v: plaintext after the description: %v; from a joining member: %v", require, afterDescription, fromJoiner)
		}
	}
}
