package mls

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// messageSeeds returns some encoded messages from messages.json.
func messageSeeds(f *testing.F, field string) [][]byte {
	b, err := os.ReadFile(filepath.Join("testdata", "messages.json"))
	if err != nil {
		f.Fatal(err)
	}
	var cases []map[string]hexBytes
	if err := json.Unmarshal(b, &cases); err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for i := 0; i < len(cases) && i < 8; i++ {
		out = append(out, cases[i][field])
	}
	return out
}

func FuzzMLSMessage(f *testing.F) {
	for _, field := range []string{"mls_welcome", "mls_group_info", "mls_key_package", "public_message_commit", "public_message_proposal", "private_message"} {
		for _, s := range messageSeeds(f, field) {
			f.Add(s)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := UnmarshalMLSMessage(b)
		if err != nil {
			return
		}
		if out := m.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs:\n in %x\nout %x", b, out)
		}
	})
}

func FuzzKeyPackage(f *testing.F) {
	for _, s := range messageSeeds(f, "add_proposal") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		kp, err := UnmarshalKeyPackage(b)
		if err != nil {
			return
		}
		if out := kp.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs")
		}
		_ = kp.Verify()
	})
}

func FuzzWelcome(f *testing.F) {
	for _, s := range messageSeeds(f, "mls_welcome") {
		if len(s) > 4 {
			f.Add(s[4:])
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		w, err := UnmarshalWelcome(b)
		if err != nil {
			return
		}
		if out := w.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs")
		}
	})
}

func FuzzRatchetTree(f *testing.F) {
	for _, s := range messageSeeds(f, "ratchet_tree") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		tree, err := UnmarshalRatchetTree(b)
		if err != nil {
			return
		}
		if out := tree.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs")
		}
		tree.TreeHash()
		_ = tree.verify(nil, nil)
	})
}

func FuzzExternalSender(f *testing.F) {
	f.Add(append([]byte{0x41, 0x04}, make([]byte, 65)...))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := UnmarshalExternalSender(b)
		if err != nil {
			return
		}
		if out := e.Marshal(); !bytes.Equal(out, b) {
			t.Fatalf("round trip differs")
		}
	})
}
