package mls

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// seedCases is how many of messages.json's cases seed the fuzz targets.
const seedCases = 8

// messageSeeds returns field of the first seedCases cases of messages.json.
// It decodes those cases alone: the file holds 300 (2.7 MB of hex), and
// decoding all of it under the race detector took about a second per
// call, for seeds that use 8.
func messageSeeds(f *testing.F, field string) [][]byte {
	file, err := os.Open(filepath.Join("testdata", "messages.json"))
	if err != nil {
		f.Fatal(err)
	}
	defer file.Close()
	dec := json.NewDecoder(file)
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		f.Fatalf("messages.json: want an array, got %v (%v)", tok, err)
	}
	var out [][]byte
	for len(out) < seedCases && dec.More() {
		var c map[string]hexBytes
		if err := dec.Decode(&c); err != nil {
			f.Fatalf("messages.json: case %d: %v", len(out), err)
		}
		out = append(out, c[field])
	}
	if len(out) < seedCases {
		f.Fatalf("messages.json: %d cases, want at least %d", len(out), seedCases)
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
