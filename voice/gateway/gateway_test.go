package gateway

import (
	"bytes"
	"net/netip"
	"testing"
)

func TestTextRoundTrip(t *testing.T) {
	b, err := EncodeText(OpSessionDescription, SessionDescription{Mode: "aead_aes256_gcm_rtpsize", SecretKey: Key{1, 2, 255},
		DAVEProtocolVersion: 1}, 7)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"secret_key":[1,2,255]`)) || !bytes.Contains(b, []byte(`"seq":7`)) {
		t.Fatalf("wire form %s", b)
	}
	m, err := ParseText(b)
	if err != nil || m.Op != OpSessionDescription || m.Seq != 7 {
		t.Fatalf("%+v %v", m, err)
	}
	var sd SessionDescription
	if err := m.Decode(&sd); err != nil || !bytes.Equal(sd.SecretKey, []byte{1, 2, 255}) || sd.DAVEProtocolVersion != 1 {
		t.Fatalf("%+v %v", sd, err)
	}
	c, _ := EncodeText(OpHeartbeat, Heartbeat{T: 5, SeqAck: -1}, NoSeq)
	if bytes.Contains(c, []byte("seq\":")) && !bytes.Contains(c, []byte("seq_ack")) {
		t.Fatalf("client message carries a seq: %s", c)
	}
	for _, bad := range []string{``, `{`, `{"d": {}}`, `[1,2]`} {
		if _, err := ParseText([]byte(bad)); err == nil {
			t.Errorf("parsed %q", bad)
		}
	}
	var k Key
	if err := k.UnmarshalJSON([]byte(`[1, 300]`)); err == nil {
		t.Error("accepted a key byte of 300")
	}
}

func TestBinaryFrames(t *testing.T) {
	s := EncodeServerBinary(0x0102, OpDAVEProposals, []byte{0, 9, 9})
	m, err := ParseServerBinary(s)
	if err != nil || m.Seq != 0x0102 || m.Op != OpDAVEProposals || !bytes.Equal(m.Payload, []byte{0, 9, 9}) {
		t.Fatalf("%+v %v", m, err)
	}
	c := EncodeClientBinary(OpDAVEKeyPackage, []byte{1})
	m, err = ParseClientBinary(c)
	if err != nil || m.Op != OpDAVEKeyPackage || m.Seq != NoSeq || len(m.Payload) != 1 {
		t.Fatalf("%+v %v", m, err)
	}
	if _, err := ParseServerBinary([]byte{0, 1}); err == nil {
		t.Error("parsed a 2-byte server frame")
	}
	if _, err := ParseClientBinary(nil); err == nil {
		t.Error("parsed an empty client frame")
	}
	if !OpDAVEWelcome.Binary() || OpDAVEPrepareEpoch.Binary() || OpDAVEInvalidCommitWelcome.Binary() {
		t.Error("binary opcode set")
	}
}

func TestDiscovery(t *testing.T) {
	req := DiscoveryRequest(0xAABBCCDD)
	if len(req) != 74 || req[1] != 1 || req[3] != 70 {
		t.Fatalf("request %x", req)
	}
	ssrc, err := ParseDiscoveryRequest(req)
	if err != nil || ssrc != 0xAABBCCDD {
		t.Fatal(ssrc, err)
	}
	want := netip.MustParseAddrPort("203.0.113.7:50123")
	got, ok := ParseDiscoveryResponse(DiscoveryResponse(ssrc, want))
	if !ok || got != want {
		t.Fatalf("%v %v", got, ok)
	}
	if _, ok := ParseDiscoveryResponse(req); ok {
		t.Error("a request parsed as a response")
	}
}

func TestClassify(t *testing.T) {
	cases := map[int]CloseAction{
		CloseE2EERequired: ActionFatal, CloseUnknownEncryption: ActionFatal, CloseDisconnected: ActionStop,
		CloseRateLimited: ActionStop, CloseCallTerminated: ActionStop, CloseSessionInvalid: ActionReidentify,
		CloseSessionTimeout: ActionReidentify, CloseServerCrashed: ActionResume, 1006: ActionResume, 1001: ActionResume,
		4999: ActionReidentify,
	}
	for code, want := range cases {
		if got, why := Classify(code); got != want || why == "" {
			t.Errorf("%d: %v (%s), want %v", code, got, why, want)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"op":2,"d":{"ssrc":1,"ip":"127.0.0.1","port":1,"modes":["x"]},"seq":1}`))
	f.Add(EncodeServerBinary(3, OpDAVEWelcome, []byte{0, 1, 2}))
	f.Fuzz(func(t *testing.T, b []byte) {
		if m, err := ParseText(b); err == nil {
			var r Ready
			m.Decode(&r)
		}
		ParseServerBinary(b)
		ParseClientBinary(b)
		ParseDiscoveryResponse(b)
	})
}
