package davetest

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/glyphoxa/glyphoxa/voice/conn"
	"github.com/glyphoxa/glyphoxa/voice/gateway"
	"github.com/glyphoxa/glyphoxa/voice/voicetest"
)

// davey drives @snazzah/davey (Rust/OpenMLS, the DAVE implementation
// discord.js uses) through voice/dave/testdata/davey-peer.js.
type davey struct {
	t   *testing.T
	in  *json.Encoder
	out *bufio.Scanner
}

func startDavey(t *testing.T) *davey {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("node not found: %v", err)
		}
		t.Skipf("node not found: %v", err)
	}
	modules, err := filepath.Abs(filepath.Join("..", "..", "..", ".cache", "node-peers", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "@snazzah", "davey")); err != nil {
		t.Fatalf("@snazzah/davey is not installed in %s (scripts/testdeps.sh installs it): %v", modules, err)
	}
	cmd := exec.Command(node, filepath.Join("..", "testdata", "davey-peer.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("davey peer exited: %v", err)
		}
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	return &davey{t: t, in: json.NewEncoder(stdin), out: sc}
}

type daveyReply struct {
	Error       string `json:"error"`
	Hex         string `json:"hex"`
	Commit      string `json:"commit"`
	Welcome     string `json:"welcome"`
	Epoch       int64  `json:"epoch"`
	PrivacyCode string `json:"privacyCode"`
}

func (p *davey) must(cmd map[string]any) daveyReply {
	p.t.Helper()
	if err := p.in.Encode(cmd); err != nil {
		p.t.Fatalf("writing to davey: %v", err)
	}
	if !p.out.Scan() {
		p.t.Fatalf("davey peer closed: %v", p.out.Err())
	}
	var r daveyReply
	if err := json.Unmarshal(p.out.Bytes(), &r); err != nil {
		p.t.Fatalf("davey reply %q: %v", p.out.Text(), err)
	}
	if r.Error != "" {
		p.t.Fatalf("davey %v: %s", cmd["cmd"], r.Error)
	}
	return r
}

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
	p.must(map[string]any{"cmd": "init", "s": s, "userId": id, "channelId": strconv.FormatUint(channel, 10)})
	c.others[id] = func(d voicetest.Delivery) []conn.Outbound {
		ready := func(body []byte) []conn.Outbound {
			return []conn.Outbound{{Op: gateway.OpDAVETransitionReady, JSON: gateway.Transition{TransitionID: int(body[0])<<8 | int(body[1])}}}
		}
		switch d.Op {
		case gateway.OpDAVEExternalSender:
			p.must(map[string]any{"cmd": "externalSender", "s": s, "hex": hex.EncodeToString(d.Binary)})
		case gateway.OpDAVEProposals:
			r := p.must(map[string]any{"cmd": "proposals", "s": s, "op": int(d.Binary[0]), "hex": hex.EncodeToString(d.Binary[1:]), "recognized": c.ids()})
			if r.Commit != "" {
				return []conn.Outbound{{Op: gateway.OpDAVECommitWelcome, Binary: append(unhex(c.t, r.Commit), unhex(c.t, r.Welcome)...)}}
			}
		case gateway.OpDAVEAnnounceCommit:
			p.must(map[string]any{"cmd": "commit", "s": s, "hex": hex.EncodeToString(d.Binary[2:])})
			return ready(d.Binary)
		case gateway.OpDAVEWelcome:
			p.must(map[string]any{"cmd": "welcome", "s": s, "hex": hex.EncodeToString(d.Binary[2:])})
			return ready(d.Binary)
		}
		return nil
	}
	kp := unhex(c.t, p.must(map[string]any{"cmd": "keyPackage", "s": s}).Hex)
	c.deliver(c.gw.Joined(id))
	c.deliver(c.gw.FromClient(id, gateway.OpDAVEKeyPackage, kp))
}

// agreeWithDavey checks that the Go sessions and the davey session id
// share epoch and privacy code, and that frames pass both ways.
func (c *call) agreeWithDavey(p *davey, id string, epoch uint64) {
	c.t.Helper()
	c.agree(epoch)
	st := p.must(map[string]any{"cmd": "state", "s": "u" + id})
	for goID, s := range c.sessions {
		if uint64(st.Epoch) != epoch || st.PrivacyCode != s.PrivacyCode() {
			c.t.Fatalf("davey %s at epoch %d code %s; %s at epoch %d code %s", id, st.Epoch, st.PrivacyCode, goID, s.Epoch(), s.PrivacyCode())
		}
		frame := []byte("opus from davey " + id)
		enc := unhex(c.t, p.must(map[string]any{"cmd": "encrypt", "s": "u" + id, "hex": hex.EncodeToString(frame)}).Hex)
		uid, _ := strconv.ParseUint(id, 10, 64)
		if dec, err := s.Decrypt(uid, enc); err != nil || !bytes.Equal(dec, frame) {
			c.t.Fatalf("davey %s → %s: %v", id, goID, err)
		}
		frame = []byte("opus from " + goID)
		enc, err := s.Encrypt(frame)
		if err != nil {
			c.t.Fatal(err)
		}
		dec := unhex(c.t, p.must(map[string]any{"cmd": "decrypt", "s": "u" + id, "userId": goID, "hex": hex.EncodeToString(enc)}).Hex)
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
