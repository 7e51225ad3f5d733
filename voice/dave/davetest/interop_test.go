package davetest

import (
	"bytes"
	"encoding/hex"
	"strconv"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/dave/internal/daveypeer"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// davey is the independent DAVE implementation the gateway is tested
// with.
type davey = daveypeer.Peer

func startDavey(t *testing.T) *davey { return daveypeer.Start(t) }

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// joinDavey connects a davey session as user id. davey leaves transition
// bookkeeping to its caller, so this adapter answers ops 29 and 30 with
// op 23 itself, as discord.js does.
func (c *call) joinDavey(p *davey, id string) {
	c.t.Helper()
	c.broadcast(gateway.OpClientsConnect, gateway.ClientsConnect{UserIDs: []string{id}}, "")
	s := "u" + id
	p.Must(map[string]any{"cmd": "init", "s": s, "userId": id, "channelId": strconv.FormatUint(channel, 10)})
	c.others[id] = func(d voicetest.Delivery) []conn.Outbound {
		ready := func(body []byte) []conn.Outbound {
			return []conn.Outbound{{Op: gateway.OpDAVETransitionReady, JSON: gateway.Transition{TransitionID: int(body[0])<<8 | int(body[1])}}}
		}
		switch d.Op {
		case gateway.OpDAVEExternalSender:
			p.Must(map[string]any{"cmd": "externalSender", "s": s, "hex": hex.EncodeToString(d.Binary)})
		case gateway.OpDAVEProposals:
			r := p.Must(map[string]any{"cmd": "proposals", "s": s, "op": int(d.Binary[0]), "hex": hex.EncodeToString(d.Binary[1:]), "recognized": c.ids()})
			if r.Commit != "" {
				return []conn.Outbound{{Op: gateway.OpDAVECommitWelcome, Binary: append(unhex(c.t, r.Commit), unhex(c.t, r.Welcome)...)}}
			}
		case gateway.OpDAVEAnnounceCommit:
			p.Must(map[string]any{"cmd": "commit", "s": s, "hex": hex.EncodeToString(d.Binary[2:])})
			return ready(d.Binary)
		case gateway.OpDAVEWelcome:
			p.Must(map[string]any{"cmd": "welcome", "s": s, "hex": hex.EncodeToString(d.Binary[2:])})
			return ready(d.Binary)
		}
		return nil
	}
	kp := unhex(c.t, p.Must(map[string]any{"cmd": "keyPackage", "s": s}).Hex)
	c.deliver(c.gw.Joined(id))
	c.deliver(c.gw.FromClient(id, gateway.OpDAVEKeyPackage, kp))
}

// agreeWithDavey checks that the Go sessions and the davey session id
// share epoch and privacy code, and that frames pass both ways.
func (c *call) agreeWithDavey(p *davey, id string, epoch uint64) {
	c.t.Helper()
	c.agree(epoch)
	st := p.Must(map[string]any{"cmd": "state", "s": "u" + id})
	for goID, s := range c.sessions {
		if uint64(st.Epoch) != epoch || st.PrivacyCode != s.PrivacyCode() {
			c.t.Fatalf("davey %s at epoch %d code %s; %s at epoch %d code %s", id, st.Epoch, st.PrivacyCode, goID, s.Epoch(), s.PrivacyCode())
		}
		frame := []byte("opus from davey " + id)
		enc := unhex(c.t, p.Must(map[string]any{"cmd": "encrypt", "s": "u" + id, "hex": hex.EncodeToString(frame)}).Hex)
		uid, _ := strconv.ParseUint(id, 10, 64)
		if dec, err := s.Decrypt(uid, enc); err != nil || !bytes.Equal(dec, frame) {
			c.t.Fatalf("davey %s → %s: %v", id, goID, err)
		}
		frame = []byte("opus from " + goID)
		enc, err := s.Encrypt(frame)
		if err != nil {
			c.t.Fatal(err)
		}
		dec := unhex(c.t, p.Must(map[string]any{"cmd": "decrypt", "s": "u" + id, "userId": goID, "hex": hex.EncodeToString(enc)}).Hex)
		if !bytes.Equal(dec, frame) {
			c.t.Fatalf("%s → davey %s: got %q", goID, id, dec)
		}
	}
	c.t.Logf("epoch %d: davey %s and %d Go sessions agree on privacy code %s", epoch, id, len(c.sessions), st.PrivacyCode)
}

// TestGatewayWithDavey runs the gateway with an independent DAVE
// implementation as a member: group creation, a joiner welcomed with a
// trimmed Welcome, a removal with an update path, commits from both
// implementations.
func TestGatewayWithDavey(t *testing.T) {
	p := startDavey(t)
	c := newCall(t)
	c.joinDavey(p, "10")
	c.join("20")
	c.agreeWithDavey(p, "10", 1)
	c.join("30")
	c.agreeWithDavey(p, "10", 2)
	c.leave("20")
	c.agreeWithDavey(p, "10", 3)
	c.join("40")
	c.agreeWithDavey(p, "10", 4)
	if st := c.gw.Stats(); st.Commits != 4 || st.Executed != 4 {
		t.Fatalf("stats %+v", st)
	}

	// Proposals go out in user id order, so the first commit is from the
	// lowest id: here Go commits win and davey follows and is welcomed.
	c = newCall(t)
	c.join("5")
	c.joinDavey(p, "60")
	c.agreeWithDavey(p, "60", 1)
	c.join("7")
	c.agreeWithDavey(p, "60", 2)
	c.leave("7") // a Go commit with an update path that davey decrypts
	c.agreeWithDavey(p, "60", 3)
}
