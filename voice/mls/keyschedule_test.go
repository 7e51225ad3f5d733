package mls

import (
	"bytes"
	"testing"
)

type keyScheduleCase struct {
	CipherSuite       uint16   `json:"cipher_suite"`
	GroupID           hexBytes `json:"group_id"`
	InitialInitSecret hexBytes `json:"initial_init_secret"`
	Epochs            []struct {
		TreeHash                hexBytes `json:"tree_hash"`
		CommitSecret            hexBytes `json:"commit_secret"`
		PSKSecret               hexBytes `json:"psk_secret"`
		ConfirmedTranscriptHash hexBytes `json:"confirmed_transcript_hash"`
		GroupContext            hexBytes `json:"group_context"`
		JoinerSecret            hexBytes `json:"joiner_secret"`
		WelcomeSecret           hexBytes `json:"welcome_secret"`
		InitSecret              hexBytes `json:"init_secret"`
		SenderDataSecret        hexBytes `json:"sender_data_secret"`
		EncryptionSecret        hexBytes `json:"encryption_secret"`
		ExporterSecret          hexBytes `json:"exporter_secret"`
		EpochAuthenticator      hexBytes `json:"epoch_authenticator"`
		ExternalSecret          hexBytes `json:"external_secret"`
		ConfirmationKey         hexBytes `json:"confirmation_key"`
		MembershipKey           hexBytes `json:"membership_key"`
		ResumptionPSK           hexBytes `json:"resumption_psk"`
		ExternalPub             hexBytes `json:"external_pub"`
		Exporter                struct {
			Label   string // used as text: the vectors treat the hex string itself as the label
			Context hexBytes
			Length  int
			Secret  hexBytes
		}
	}
}

func conformanceKeySchedule(t *testing.T) {
	var cases []keyScheduleCase
	loadVectors(t, "key-schedule.json", &cases)
	var st tally
	for i, c := range cases {
		if c.CipherSuite != CipherSuite2 {
			continue
		}
		ok := true
		check := func(ep int, name string, got, want []byte) {
			if !bytes.Equal(got, want) {
				ok = false
				t.Errorf("case %d epoch %d %s: got %x, want %x", i, ep, name, got, want)
			}
		}
		init := []byte(c.InitialInitSecret)
		for n, e := range c.Epochs {
			gc := &GroupContext{Version: 1, CipherSuite: c.CipherSuite, GroupID: c.GroupID, Epoch: uint64(n),
				TreeHash: e.TreeHash, ConfirmedTranscriptHash: e.ConfirmedTranscriptHash}
			check(n, "group_context", gc.Marshal(), e.GroupContext)
			joiner := joinerSecret(init, e.CommitSecret, gc)
			s := scheduleFromJoiner(joiner, e.PSKSecret, gc)
			check(n, "joiner", s.joiner, e.JoinerSecret)
			check(n, "welcome", s.welcome, e.WelcomeSecret)
			check(n, "init", s.init, e.InitSecret)
			check(n, "sender_data", s.senderData, e.SenderDataSecret)
			check(n, "encryption", s.encryption, e.EncryptionSecret)
			check(n, "exporter", s.exporter, e.ExporterSecret)
			check(n, "authentication", s.authentication, e.EpochAuthenticator)
			check(n, "external", s.external, e.ExternalSecret)
			check(n, "confirmation", s.confirmation, e.ConfirmationKey)
			check(n, "membership", s.membership, e.MembershipKey)
			check(n, "resumption", s.resumption, e.ResumptionPSK)
			pub, err := externalPub(s.external)
			if err != nil {
				t.Fatal(err)
			}
			check(n, "external_pub", pub, e.ExternalPub)
			x := e.Exporter
			check(n, "exporter output", exportSecret(s.exporter, x.Label, x.Context, x.Length), x.Secret)
			init = s.init
		}
		st.record(ok)
	}
	st.report(t, "key-schedule.json")
}

type secretTreeCase struct {
	CipherSuite      uint16   `json:"cipher_suite"`
	EncryptionSecret hexBytes `json:"encryption_secret"`
	SenderData       struct {
		SenderDataSecret hexBytes `json:"sender_data_secret"`
		Ciphertext       hexBytes
		Key              hexBytes
		Nonce            hexBytes
	} `json:"sender_data"`
	Leaves [][]struct {
		Generation       uint32
		ApplicationKey   hexBytes `json:"application_key"`
		ApplicationNonce hexBytes `json:"application_nonce"`
		HandshakeKey     hexBytes `json:"handshake_key"`
		HandshakeNonce   hexBytes `json:"handshake_nonce"`
	}
}

func conformanceSecretTree(t *testing.T) {
	var cases []secretTreeCase
	loadVectors(t, "secret-tree.json", &cases)
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
		k, n := senderDataKeyNonce(c.SenderData.SenderDataSecret, c.SenderData.Ciphertext)
		check("sender data key", k, c.SenderData.Key)
		check("sender data nonce", n, c.SenderData.Nonce)
		nLeaves := uint32(len(c.Leaves))
		for leaf, gens := range c.Leaves {
			ls := secretTreeLeaf(c.EncryptionSecret, uint32(leaf), nLeaves)
			app := NewHashRatchet(ExpandWithLabel(ls, "application", nil, hashLen), keyLen)
			hs := NewHashRatchet(ExpandWithLabel(ls, "handshake", nil, hashLen), keyLen)
			for _, g := range gens {
				for app.Generation() < g.Generation {
					app.Next()
					hs.Next()
				}
				_, ak, an := app.Next()
				_, hk, hn := hs.Next()
				check("application key", ak, g.ApplicationKey)
				check("application nonce", an, g.ApplicationNonce)
				check("handshake key", hk, g.HandshakeKey)
				check("handshake nonce", hn, g.HandshakeNonce)
			}
		}
		st.record(ok)
	}
	st.report(t, "secret-tree.json")
}

type transcriptCase struct {
	CipherSuite                  uint16   `json:"cipher_suite"`
	ConfirmationKey              hexBytes `json:"confirmation_key"`
	AuthenticatedContent         hexBytes `json:"authenticated_content"`
	InterimTranscriptHashBefore  hexBytes `json:"interim_transcript_hash_before"`
	ConfirmedTranscriptHashAfter hexBytes `json:"confirmed_transcript_hash_after"`
	InterimTranscriptHashAfter   hexBytes `json:"interim_transcript_hash_after"`
}

func conformanceTranscriptHash(t *testing.T) {
	var cases []transcriptCase
	loadVectors(t, "transcript-hashes.json", &cases)
	var st tally
	for i, c := range cases {
		if c.CipherSuite != CipherSuite2 {
			continue
		}
		ac, err := unmarshalAuthenticatedContent(c.AuthenticatedContent)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			st.record(false)
			continue
		}
		confirmed := confirmedTranscriptHash(c.InterimTranscriptHashBefore, ac.wireFormat, &ac.msg.Content, ac.msg.Signature)
		ok := bytes.Equal(confirmed, c.ConfirmedTranscriptHashAfter)
		ok = ok && equalBytes(mac(c.ConfirmationKey, confirmed), ac.msg.ConfirmationTag)
		ok = ok && bytes.Equal(interimTranscriptHash(confirmed, ac.msg.ConfirmationTag), c.InterimTranscriptHashAfter)
		if !ok {
			t.Errorf("case %d: transcript hashes or confirmation tag differ", i)
		}
		st.record(ok)
	}
	st.report(t, "transcript-hashes.json")
}
