package mls

import (
	"bytes"
	"testing"
)

type cryptoBasicsCase struct {
	CipherSuite uint16 `json:"cipher_suite"`
	RefHash     struct {
		Label      string
		Value, Out hexBytes
	} `json:"ref_hash"`
	ExpandWithLabel struct {
		Secret  hexBytes
		Label   string
		Context hexBytes
		Length  int
		Out     hexBytes
	} `json:"expand_with_label"`
	DeriveSecret struct {
		Secret hexBytes
		Label  string
		Out    hexBytes
	} `json:"derive_secret"`
	DeriveTreeSecret struct {
		Secret     hexBytes
		Label      string
		Generation uint32
		Length     int
		Out        hexBytes
	} `json:"derive_tree_secret"`
	SignWithLabel struct {
		Priv, Pub, Content hexBytes
		Label              string
		Signature          hexBytes
	} `json:"sign_with_label"`
	EncryptWithLabel struct {
		Priv, Pub          hexBytes
		Label              string
		Context, Plaintext hexBytes
		KEMOutput          hexBytes `json:"kem_output"`
		Ciphertext         hexBytes
	} `json:"encrypt_with_label"`
}

func conformanceCryptoBasics(t *testing.T) {
	var cases []cryptoBasicsCase
	loadVectors(t, "crypto-basics.json", &cases)
	var st tally
	for i, c := range cases {
		if c.CipherSuite != CipherSuite2 {
			continue
		}
		ok := true
		check := func(name string, got, want []byte) {
			if !bytes.Equal(got, want) {
				ok = false
				t.Errorf("case %d %s: got %x, want %x", i, name, got, want)
			}
		}
		check("RefHash", RefHash(c.RefHash.Label, c.RefHash.Value), c.RefHash.Out)
		e := c.ExpandWithLabel
		check("ExpandWithLabel", ExpandWithLabel(e.Secret, e.Label, e.Context, e.Length), e.Out)
		check("DeriveSecret", DeriveSecret(c.DeriveSecret.Secret, c.DeriveSecret.Label), c.DeriveSecret.Out)
		d := c.DeriveTreeSecret
		check("DeriveTreeSecret", DeriveTreeSecret(d.Secret, d.Label, d.Generation, d.Length), d.Out)

		s := c.SignWithLabel
		if err := VerifyWithLabel(s.Pub, s.Label, s.Content, s.Signature); err != nil {
			ok = false
			t.Errorf("case %d: VerifyWithLabel: %v", i, err)
		}
		sk, err := ParseSignatureKey(s.Priv)
		if err != nil {
			t.Fatal(err)
		}
		check("signature public key", sk.Public(), s.Pub)
		sig, err := sk.SignWithLabel(s.Label, s.Content)
		if err != nil {
			t.Fatal(err)
		}
		if err := VerifyWithLabel(s.Pub, s.Label, s.Content, sig); err != nil {
			ok = false
			t.Errorf("case %d: own signature: %v", i, err)
		}
		if VerifyWithLabel(s.Pub, s.Label+"x", s.Content, sig) == nil {
			ok = false
			t.Errorf("case %d: signature verified under another label", i)
		}

		x := c.EncryptWithLabel
		hk, err := ParseHPKEKey(x.Priv)
		if err != nil {
			t.Fatal(err)
		}
		check("HPKE public key", hk.Public(), x.Pub)
		pt, err := hk.DecryptWithLabel(x.Label, x.Context, HPKECiphertext{x.KEMOutput, x.Ciphertext})
		if err != nil {
			ok = false
			t.Errorf("case %d: DecryptWithLabel: %v", i, err)
		}
		check("DecryptWithLabel", pt, x.Plaintext)
		ct, err := EncryptWithLabel(x.Pub, x.Label, x.Context, x.Plaintext)
		if err != nil {
			t.Fatal(err)
		}
		pt2, err := hk.DecryptWithLabel(x.Label, x.Context, ct)
		if err != nil {
			ok = false
			t.Errorf("case %d: round trip: %v", i, err)
		}
		check("EncryptWithLabel round trip", pt2, x.Plaintext)
		st.record(ok)
	}
	st.report(t, "crypto-basics.json")
}

type deserializationCase struct {
	Header hexBytes `json:"vlbytes_header"`
	Length int      `json:"length"`
}

func conformanceDeserialization(t *testing.T) {
	var cases []deserializationCase
	loadVectors(t, "deserialization.json", &cases)
	var st tally
	for i, c := range cases {
		r := NewReader(c.Header)
		n := r.VarLen()
		ok := r.Done() == nil && n == c.Length
		var w Writer
		w.VarLen(c.Length)
		ok = ok && bytes.Equal(w.Bytes(), c.Header)
		if !ok {
			t.Errorf("case %d: header %x: decoded %d (%v), encoded %x; want %d", i, c.Header, n, r.Err(), w.Bytes(), c.Length)
		}
		st.record(ok)
	}
	st.report(t, "deserialization.json")
}

func TestVarLenRejects(t *testing.T) {
	for _, in := range [][]byte{{0x40, 0x3f}, {0x80, 0x00, 0x3f, 0xff}, {0xc0}, {0x41}, {}, {0x05, 1, 2}} {
		r := NewReader(in)
		r.Vec()
		if r.Done() == nil {
			t.Errorf("%x: accepted", in)
		}
	}
}
