package mls

import (
	"bytes"
	"fmt"
	"testing"
)

type welcomeCase struct {
	CipherSuite uint16   `json:"cipher_suite"`
	InitPriv    hexBytes `json:"init_priv"`
	SignerPub   hexBytes `json:"signer_pub"`
	KeyPackage  hexBytes `json:"key_package"`
	Welcome     hexBytes `json:"welcome"`
}

func conformanceWelcome(t *testing.T) {
	var cases []welcomeCase
	loadVectors(t, "welcome.json", &cases)
	var st tally
	for i, c := range cases {
		if c.CipherSuite != CipherSuite2 {
			continue
		}
		err := func() error {
			kpm, err := UnmarshalMLSMessage(c.KeyPackage)
			if err != nil || kpm.KeyPackage == nil {
				return fmt.Errorf("key package: %v", err)
			}
			wm, err := UnmarshalMLSMessage(c.Welcome)
			if err != nil || wm.Welcome == nil {
				return fmt.Errorf("welcome: %v", err)
			}
			initKey, err := ParseHPKEKey(c.InitPriv)
			if err != nil {
				return err
			}
			gi, joiner, err := openWelcome(wm.Welcome, kpm.KeyPackage, initKey, nil)
			if err != nil {
				return err
			}
			var tbs Writer
			gi.encodeTBS(&tbs)
			if err := VerifyWithLabel(c.SignerPub, "GroupInfoTBS", tbs.Bytes(), gi.Signature); err != nil {
				return err
			}
			s := scheduleFromJoiner(joiner, nil, &gi.GroupContext)
			if !equalBytes(mac(s.confirmation, gi.GroupContext.ConfirmedTranscriptHash), gi.ConfirmationTag) {
				return fmt.Errorf("confirmation tag mismatch")
			}
			return nil
		}()
		if err != nil {
			t.Errorf("case %d: %v", i, err)
		}
		st.record(err == nil)
	}
	st.report(t, "welcome.json")
}

type passiveCase struct {
	CipherSuite  uint16 `json:"cipher_suite"`
	ExternalPSKs []struct {
		PSKID hexBytes `json:"psk_id"`
		PSK   hexBytes `json:"psk"`
	} `json:"external_psks"`
	KeyPackage                hexBytes `json:"key_package"`
	SignaturePriv             hexBytes `json:"signature_priv"`
	EncryptionPriv            hexBytes `json:"encryption_priv"`
	InitPriv                  hexBytes `json:"init_priv"`
	Welcome                   hexBytes `json:"welcome"`
	RatchetTree               hexBytes `json:"ratchet_tree"`
	InitialEpochAuthenticator hexBytes `json:"initial_epoch_authenticator"`
	Epochs                    []struct {
		Proposals          []hexBytes `json:"proposals"`
		Commit             hexBytes   `json:"commit"`
		EpochAuthenticator hexBytes   `json:"epoch_authenticator"`
	} `json:"epochs"`
}

func runPassive(c *passiveCase) error {
	kpm, err := UnmarshalMLSMessage(c.KeyPackage)
	if err != nil || kpm.KeyPackage == nil {
		return fmt.Errorf("key package: %v", err)
	}
	wm, err := UnmarshalMLSMessage(c.Welcome)
	if err != nil || wm.Welcome == nil {
		return fmt.Errorf("welcome: %v", err)
	}
	cfg := JoinConfig{KeyPackage: kpm.KeyPackage, ExternalPSKs: map[string][]byte{}}
	if cfg.InitKey, err = ParseHPKEKey(c.InitPriv); err != nil {
		return err
	}
	if cfg.EncryptionKey, err = ParseHPKEKey(c.EncryptionPriv); err != nil {
		return err
	}
	if cfg.SignatureKey, err = ParseSignatureKey(c.SignaturePriv); err != nil {
		return err
	}
	if c.RatchetTree != nil {
		if cfg.Tree, err = UnmarshalRatchetTree(c.RatchetTree); err != nil {
			return err
		}
	}
	for _, p := range c.ExternalPSKs {
		cfg.ExternalPSKs[string(p.PSKID)] = p.PSK
	}
	g, err := Join(wm.Welcome, cfg)
	if err != nil {
		return fmt.Errorf("join: %w", err)
	}
	if !bytes.Equal(g.EpochAuthenticator(), c.InitialEpochAuthenticator) {
		return fmt.Errorf("initial epoch authenticator differs")
	}
	for n, e := range c.Epochs {
		for _, pb := range e.Proposals {
			m, err := UnmarshalMLSMessage(pb)
			if err != nil || m.PublicMessage == nil {
				return fmt.Errorf("epoch %d proposal: %v", n, err)
			}
			if _, err := g.ProcessProposal(m.PublicMessage); err != nil {
				return fmt.Errorf("epoch %d proposal: %w", n, err)
			}
		}
		m, err := UnmarshalMLSMessage(e.Commit)
		if err != nil || m.PublicMessage == nil {
			return fmt.Errorf("epoch %d commit: %v", n, err)
		}
		next, err := g.ProcessCommit(m.PublicMessage)
		if err != nil {
			return fmt.Errorf("epoch %d commit: %w", n, err)
		}
		if !bytes.Equal(next.EpochAuthenticator(), e.EpochAuthenticator) {
			return fmt.Errorf("epoch %d: epoch authenticator differs", n)
		}
		g = next
	}
	return nil
}

func testPassive(t *testing.T, file string) {
	var cases []passiveCase
	loadVectors(t, file, &cases)
	var st tally
	for i := range cases {
		if cases[i].CipherSuite != CipherSuite2 {
			continue
		}
		err := runPassive(&cases[i])
		if err != nil {
			t.Errorf("case %d: %v", i, err)
		}
		st.record(err == nil)
	}
	st.report(t, file)
}

func conformancePassiveClientWelcome(t *testing.T) { testPassive(t, "passive-client-welcome.json") }

func conformancePassiveClientHandlingCommit(t *testing.T) {
	testPassive(t, "passive-client-handling-commit.json")
}

func openWelcome(w *Welcome, kp *KeyPackage, initKey *HPKEKey, psks map[string][]byte) (*openedGroupInfo, []byte, error) {
	gi, joiner, _, err := openWelcomePSK(w, kp, initKey, psks)
	return gi, joiner, err
}
