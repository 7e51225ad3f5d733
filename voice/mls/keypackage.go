package mls

import "fmt"

// KeyPackageBundle is a key package with its private keys.
type KeyPackageBundle struct {
	KeyPackage    *KeyPackage
	InitKey       *HPKEKey
	EncryptionKey *HPKEKey
	SignatureKey  *SignatureKey
}

// DefaultLifetime is the lifetime DAVE expects: not_before 0, not_after
// 2^64-1.
const (
	DefaultNotBefore uint64 = 0
	DefaultNotAfter  uint64 = 1<<64 - 1
)

// NewKeyPackage creates and signs a key package with fresh init and
// encryption keys for the signature key sig.
func NewKeyPackage(sig *SignatureKey, cred Credential, caps Capabilities) (*KeyPackageBundle, error) {
	initKey, err := GenerateHPKEKey()
	if err != nil {
		return nil, err
	}
	encKey, err := GenerateHPKEKey()
	if err != nil {
		return nil, err
	}
	kp := &KeyPackage{
		Version:     ProtocolVersionMLS10,
		CipherSuite: CipherSuite2,
		InitKey:     initKey.Public(),
		LeafNode: LeafNode{
			EncryptionKey: encKey.Public(),
			SignatureKey:  sig.Public(),
			Credential:    cred,
			Capabilities:  caps,
			Source:        LeafSourceKeyPackage,
			NotBefore:     DefaultNotBefore,
			NotAfter:      DefaultNotAfter,
		},
	}
	if err := kp.LeafNode.sign(sig, nil, 0); err != nil {
		return nil, err
	}
	var w Writer
	kp.encodeTBS(&w)
	if kp.Signature, err = sig.SignWithLabel("KeyPackageTBS", w.Bytes()); err != nil {
		return nil, fmt.Errorf("signing key package: %w", err)
	}
	return &KeyPackageBundle{KeyPackage: kp, InitKey: initKey, EncryptionKey: encKey, SignatureKey: sig}, nil
}

// JoinConfig returns the configuration to join with this key package.
func (b *KeyPackageBundle) JoinConfig() JoinConfig {
	return JoinConfig{KeyPackage: b.KeyPackage, InitKey: b.InitKey, EncryptionKey: b.EncryptionKey, SignatureKey: b.SignatureKey}
}

// NewGroupFromKeyPackage creates a one-member group at epoch 0 whose leaf
// is the key package's leaf (re-used so the member keeps one set of keys).
func NewGroupFromKeyPackage(groupID []byte, b *KeyPackageBundle, extensions []Extension) (*Group, error) {
	return NewGroup(groupID, b.KeyPackage.LeafNode, b.EncryptionKey, b.SignatureKey, extensions)
}

// ExternalSendersExtension builds the external_senders group context
// extension.
func ExternalSendersExtension(senders ...ExternalSender) Extension {
	return Extension{Type: ExtensionExternalSenders, Data: encodeExternalSenders(senders)}
}

// NewExternalProposal frames and signs a proposal from external sender
// index senderIndex for the given group and epoch.
func NewExternalProposal(groupID []byte, epoch uint64, senderIndex uint32, p *Proposal, sig *SignatureKey) (*MLSMessage, error) {
	pm := &PublicMessage{Content: FramedContent{GroupID: groupID, Epoch: epoch,
		Sender: Sender{Type: SenderExternal, Index: senderIndex}, ContentType: ContentProposal, Proposal: p}}
	if err := SignPublicMessage(pm, sig, nil); err != nil {
		return nil, err
	}
	return &MLSMessage{Version: ProtocolVersionMLS10, WireFormat: WireFormatPublicMessage, PublicMessage: pm}, nil
}
