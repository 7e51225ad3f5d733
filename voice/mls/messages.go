package mls

import "slices"

// Wire structures of RFC 9420 with strict encoders and decoders. Decoded
// byte slices alias the input.

// Wire formats (RFC 9420 §6).
const (
	WireFormatPublicMessage  uint16 = 1
	WireFormatPrivateMessage uint16 = 2
	WireFormatWelcome        uint16 = 3
	WireFormatGroupInfo      uint16 = 4
	WireFormatKeyPackage     uint16 = 5
)

// Extension types.
const (
	ExtensionApplicationID        uint16 = 1
	ExtensionRatchetTree          uint16 = 2
	ExtensionRequiredCapabilities uint16 = 3
	ExtensionExternalPub          uint16 = 4
	ExtensionExternalSenders      uint16 = 5
)

// Credential types.
const (
	CredentialBasic uint16 = 1
	CredentialX509  uint16 = 2
)

// Leaf node sources.
const (
	LeafSourceKeyPackage uint8 = 1
	LeafSourceUpdate     uint8 = 2
	LeafSourceCommit     uint8 = 3
)

// Proposal types.
const (
	ProposalAdd                    uint16 = 1
	ProposalUpdate                 uint16 = 2
	ProposalRemove                 uint16 = 3
	ProposalPSK                    uint16 = 4
	ProposalReInit                 uint16 = 5
	ProposalExternalInit           uint16 = 6
	ProposalGroupContextExtensions uint16 = 7
)

// Content types.
const (
	ContentApplication uint8 = 1
	ContentProposal    uint8 = 2
	ContentCommit      uint8 = 3
)

// Sender types.
const (
	SenderMember            uint8 = 1
	SenderExternal          uint8 = 2
	SenderNewMemberProposal uint8 = 3
	SenderNewMemberCommit   uint8 = 4
)

// Extension is a typed opaque extension.
type Extension struct {
	Type uint16
	Data []byte
}

func encodeExtensions(w *Writer, exts []Extension) {
	w.VecFunc(func(w *Writer) {
		for _, e := range exts {
			w.U16(e.Type)
			w.Vec(e.Data)
		}
	})
}

func decodeExtensions(r *Reader) []Extension {
	s := r.Sub()
	var out []Extension
	seen := map[uint16]bool{}
	for s.Len() > 0 && s.Err() == nil {
		e := Extension{Type: s.U16(), Data: s.Vec()}
		if seen[e.Type] {
			s.Fail("duplicate extension type %d", e.Type)
		}
		seen[e.Type] = true
		out = append(out, e)
	}
	r.Join(s)
	return out
}

func findExtension(exts []Extension, typ uint16) ([]byte, bool) {
	for _, e := range exts {
		if e.Type == typ {
			return e.Data, true
		}
	}
	return nil, false
}

func encodeU16s(w *Writer, v []uint16) {
	w.VecFunc(func(w *Writer) {
		for _, x := range v {
			w.U16(x)
		}
	})
}

func decodeU16s(r *Reader) []uint16 {
	s := r.Sub()
	if s.Len()%2 != 0 {
		s.Fail("uint16 vector of odd length %d", s.Len())
	}
	var out []uint16
	for s.Len() > 0 && s.Err() == nil {
		out = append(out, s.U16())
	}
	r.Join(s)
	return out
}

// Credential is a basic or X.509 credential.
type Credential struct {
	Type         uint16
	Identity     []byte   // basic
	Certificates [][]byte // x509
}

func (c *Credential) encode(w *Writer) {
	w.U16(c.Type)
	switch c.Type {
	case CredentialBasic:
		w.Vec(c.Identity)
	case CredentialX509:
		w.VecFunc(func(w *Writer) {
			for _, cert := range c.Certificates {
				w.Vec(cert)
			}
		})
	}
}

func (c *Credential) decode(r *Reader) {
	c.Type = r.U16()
	switch c.Type {
	case CredentialBasic:
		c.Identity = r.Vec()
	case CredentialX509:
		s := r.Sub()
		for s.Len() > 0 && s.Err() == nil {
			c.Certificates = append(c.Certificates, s.Vec())
		}
		r.Join(s)
	default:
		r.Fail("unsupported credential type %d", c.Type)
	}
}

// Capabilities lists what a client supports.
type Capabilities struct {
	Versions     []uint16
	CipherSuites []uint16
	Extensions   []uint16
	Proposals    []uint16
	Credentials  []uint16
}

func (c *Capabilities) encode(w *Writer) {
	encodeU16s(w, c.Versions)
	encodeU16s(w, c.CipherSuites)
	encodeU16s(w, c.Extensions)
	encodeU16s(w, c.Proposals)
	encodeU16s(w, c.Credentials)
}

func (c *Capabilities) decode(r *Reader) {
	c.Versions = decodeU16s(r)
	c.CipherSuites = decodeU16s(r)
	c.Extensions = decodeU16s(r)
	c.Proposals = decodeU16s(r)
	c.Credentials = decodeU16s(r)
}

// LeafNode is a member's leaf (RFC 9420 §7.2).
type LeafNode struct {
	EncryptionKey []byte
	SignatureKey  []byte
	Credential    Credential
	Capabilities  Capabilities
	Source        uint8
	NotBefore     uint64 // key_package source
	NotAfter      uint64 // key_package source
	ParentHash    []byte // commit source
	Extensions    []Extension
	Signature     []byte
}

func (l *LeafNode) encodeTBSBody(w *Writer) {
	w.Vec(l.EncryptionKey)
	w.Vec(l.SignatureKey)
	l.Credential.encode(w)
	l.Capabilities.encode(w)
	w.U8(l.Source)
	switch l.Source {
	case LeafSourceKeyPackage:
		w.U64(l.NotBefore)
		w.U64(l.NotAfter)
	case LeafSourceCommit:
		w.Vec(l.ParentHash)
	}
	encodeExtensions(w, l.Extensions)
}

func (l *LeafNode) encode(w *Writer) {
	l.encodeTBSBody(w)
	w.Vec(l.Signature)
}

func (l *LeafNode) decode(r *Reader) {
	l.EncryptionKey = r.Vec()
	l.SignatureKey = r.Vec()
	l.Credential.decode(r)
	l.Capabilities.decode(r)
	l.Source = r.U8()
	switch l.Source {
	case LeafSourceKeyPackage:
		l.NotBefore = r.U64()
		l.NotAfter = r.U64()
	case LeafSourceUpdate:
	case LeafSourceCommit:
		l.ParentHash = r.Vec()
	default:
		r.Fail("leaf node source %d", l.Source)
	}
	l.Extensions = decodeExtensions(r)
	l.Signature = r.Vec()
}

// tbs returns LeafNodeTBS; groupID and leafIndex are used for the update
// and commit sources.
func (l *LeafNode) tbs(groupID []byte, leafIndex uint32) []byte {
	var w Writer
	l.encodeTBSBody(&w)
	if l.Source == LeafSourceUpdate || l.Source == LeafSourceCommit {
		w.Vec(groupID)
		w.U32(leafIndex)
	}
	return w.Bytes()
}

func (l *LeafNode) sign(k *SignatureKey, groupID []byte, leafIndex uint32) error {
	sig, err := k.SignWithLabel("LeafNodeTBS", l.tbs(groupID, leafIndex))
	if err != nil {
		return err
	}
	l.Signature = sig
	return nil
}

func (l *LeafNode) verify(groupID []byte, leafIndex uint32) error {
	return VerifyWithLabel(l.SignatureKey, "LeafNodeTBS", l.tbs(groupID, leafIndex), l.Signature)
}

// Marshal encodes the leaf node.
func (l *LeafNode) Marshal() []byte { var w Writer; l.encode(&w); return w.Bytes() }

// KeyPackage is a member's pre-published join material (RFC 9420 §10).
type KeyPackage struct {
	Version     uint16
	CipherSuite uint16
	InitKey     []byte
	LeafNode    LeafNode
	Extensions  []Extension
	Signature   []byte
}

func (k *KeyPackage) encodeTBS(w *Writer) {
	w.U16(k.Version)
	w.U16(k.CipherSuite)
	w.Vec(k.InitKey)
	k.LeafNode.encode(w)
	encodeExtensions(w, k.Extensions)
}

func (k *KeyPackage) encode(w *Writer) { k.encodeTBS(w); w.Vec(k.Signature) }

func (k *KeyPackage) decode(r *Reader) {
	k.Version = r.U16()
	k.CipherSuite = r.U16()
	k.InitKey = r.Vec()
	k.LeafNode.decode(r)
	k.Extensions = decodeExtensions(r)
	k.Signature = r.Vec()
}

// Marshal encodes the bare KeyPackage.
func (k *KeyPackage) Marshal() []byte { var w Writer; k.encode(&w); return w.Bytes() }

// UnmarshalKeyPackage decodes a bare KeyPackage.
func UnmarshalKeyPackage(b []byte) (*KeyPackage, error) {
	var k KeyPackage
	r := NewReader(b)
	k.decode(r)
	return &k, r.Done()
}

// Ref returns the KeyPackageRef.
func (k *KeyPackage) Ref() []byte { return RefHash("MLS 1.0 KeyPackage Reference", k.Marshal()) }

// Verify checks the key package as a joiner would (RFC 9420 §10.1): suite,
// version, signatures, leaf source and distinct keys.
func (k *KeyPackage) Verify() error {
	if k.Version != ProtocolVersionMLS10 || k.CipherSuite != CipherSuite2 {
		return errorf("key package version %d suite %d unsupported", k.Version, k.CipherSuite)
	}
	if k.LeafNode.Source != LeafSourceKeyPackage {
		return errorf("key package leaf source %d", k.LeafNode.Source)
	}
	if equalBytes(k.InitKey, k.LeafNode.EncryptionKey) {
		return errorf("key package init key equals leaf encryption key")
	}
	// Leaf node validation (§7.3): the leaf supports the group's version
	// and cipher suite, and its own credential type. A member that adds
	// a leaf its peers refuse splits the group.
	caps := &k.LeafNode.Capabilities
	if !slices.Contains(caps.Versions, k.Version) || !slices.Contains(caps.CipherSuites, k.CipherSuite) {
		return errorf("key package leaf capabilities (versions %v, suites %v) lack version %d or suite %d", caps.Versions, caps.CipherSuites, k.Version, k.CipherSuite)
	}
	if !slices.Contains(caps.Credentials, k.LeafNode.Credential.Type) {
		return errorf("key package leaf capabilities (credentials %v) lack its own credential type %d", caps.Credentials, k.LeafNode.Credential.Type)
	}
	if err := k.LeafNode.verify(nil, 0); err != nil {
		return err
	}
	var w Writer
	k.encodeTBS(&w)
	return VerifyWithLabel(k.LeafNode.SignatureKey, "KeyPackageTBS", w.Bytes(), k.Signature)
}

// PreSharedKeyID identifies a PSK (RFC 9420 §8.4).
type PreSharedKeyID struct {
	Type    uint8 // 1 external, 2 resumption
	ID      []byte
	Usage   uint8
	GroupID []byte
	Epoch   uint64
	Nonce   []byte
}

func (p *PreSharedKeyID) encode(w *Writer) {
	w.U8(p.Type)
	switch p.Type {
	case 1:
		w.Vec(p.ID)
	case 2:
		w.U8(p.Usage)
		w.Vec(p.GroupID)
		w.U64(p.Epoch)
	}
	w.Vec(p.Nonce)
}

func (p *PreSharedKeyID) decode(r *Reader) {
	p.Type = r.U8()
	switch p.Type {
	case 1:
		p.ID = r.Vec()
	case 2:
		p.Usage = r.U8()
		p.GroupID = r.Vec()
		p.Epoch = r.U64()
	default:
		r.Fail("psk type %d", p.Type)
	}
	p.Nonce = r.Vec()
}

// Proposal is one group change (RFC 9420 §12.1).
type Proposal struct {
	Type       uint16
	KeyPackage *KeyPackage     // add
	LeafNode   *LeafNode       // update
	Removed    uint32          // remove
	PSK        *PreSharedKeyID // psk
	ReInit     *ReInit         // reinit
	KEMOutput  []byte          // external_init
	Extensions []Extension     // group_context_extensions
}

// ReInit is the body of a ReInit proposal.
type ReInit struct {
	GroupID     []byte
	Version     uint16
	CipherSuite uint16
	Extensions  []Extension
}

func (p *Proposal) encode(w *Writer) {
	w.U16(p.Type)
	switch p.Type {
	case ProposalAdd:
		p.KeyPackage.encode(w)
	case ProposalUpdate:
		p.LeafNode.encode(w)
	case ProposalRemove:
		w.U32(p.Removed)
	case ProposalPSK:
		p.PSK.encode(w)
	case ProposalReInit:
		w.Vec(p.ReInit.GroupID)
		w.U16(p.ReInit.Version)
		w.U16(p.ReInit.CipherSuite)
		encodeExtensions(w, p.ReInit.Extensions)
	case ProposalExternalInit:
		w.Vec(p.KEMOutput)
	case ProposalGroupContextExtensions:
		encodeExtensions(w, p.Extensions)
	}
}

func (p *Proposal) decode(r *Reader) {
	p.Type = r.U16()
	p.decodeBody(r)
}

func (p *Proposal) decodeBody(r *Reader) {
	switch p.Type {
	case ProposalAdd:
		p.KeyPackage = new(KeyPackage)
		p.KeyPackage.decode(r)
	case ProposalUpdate:
		p.LeafNode = new(LeafNode)
		p.LeafNode.decode(r)
	case ProposalRemove:
		p.Removed = r.U32()
	case ProposalPSK:
		p.PSK = new(PreSharedKeyID)
		p.PSK.decode(r)
	case ProposalReInit:
		p.ReInit = &ReInit{GroupID: r.Vec(), Version: r.U16(), CipherSuite: r.U16()}
		p.ReInit.Extensions = decodeExtensions(r)
	case ProposalExternalInit:
		p.KEMOutput = r.Vec()
	case ProposalGroupContextExtensions:
		p.Extensions = decodeExtensions(r)
	default:
		r.Fail("proposal type %d", p.Type)
	}
}

// ProposalOrRef is a proposal inside a Commit, by value or by reference.
type ProposalOrRef struct {
	Proposal *Proposal
	Ref      []byte
}

// UpdatePathNode is one encrypted path step.
type UpdatePathNode struct {
	EncryptionKey []byte
	Secrets       []HPKECiphertext
}

// UpdatePath carries the committer's new leaf and path (RFC 9420 §7.6).
type UpdatePath struct {
	LeafNode LeafNode
	Nodes    []UpdatePathNode
}

func (u *UpdatePath) encode(w *Writer) {
	u.LeafNode.encode(w)
	w.VecFunc(func(w *Writer) {
		for _, n := range u.Nodes {
			w.Vec(n.EncryptionKey)
			w.VecFunc(func(w *Writer) {
				for _, c := range n.Secrets {
					c.encode(w)
				}
			})
		}
	})
}

func (u *UpdatePath) decode(r *Reader) {
	u.LeafNode.decode(r)
	s := r.Sub()
	for s.Len() > 0 && s.Err() == nil {
		n := UpdatePathNode{EncryptionKey: s.Vec()}
		cs := s.Sub()
		for cs.Len() > 0 && cs.Err() == nil {
			var c HPKECiphertext
			c.decode(cs)
			n.Secrets = append(n.Secrets, c)
		}
		s.Join(cs)
		u.Nodes = append(u.Nodes, n)
	}
	r.Join(s)
}

// Commit applies proposals and optionally a new path (RFC 9420 §12.4).
type Commit struct {
	Proposals []ProposalOrRef
	Path      *UpdatePath
}

func (c *Commit) encode(w *Writer) {
	w.VecFunc(func(w *Writer) {
		for _, p := range c.Proposals {
			if p.Proposal != nil {
				w.U8(1)
				p.Proposal.encode(w)
			} else {
				w.U8(2)
				w.Vec(p.Ref)
			}
		}
	})
	w.Optional(c.Path != nil)
	if c.Path != nil {
		c.Path.encode(w)
	}
}

func (c *Commit) decode(r *Reader) {
	s := r.Sub()
	for s.Len() > 0 && s.Err() == nil {
		switch t := s.U8(); t {
		case 1:
			p := new(Proposal)
			p.decode(s)
			c.Proposals = append(c.Proposals, ProposalOrRef{Proposal: p})
		case 2:
			c.Proposals = append(c.Proposals, ProposalOrRef{Ref: s.Vec()})
		default:
			s.Fail("proposal-or-ref type %d", t)
		}
	}
	r.Join(s)
	if r.Optional() {
		c.Path = new(UpdatePath)
		c.Path.decode(r)
	}
}

// Sender names who framed a message.
type Sender struct {
	Type  uint8
	Index uint32 // leaf index (member) or external sender index
}

// FramedContent is the signed body of a handshake message (RFC 9420 §6).
type FramedContent struct {
	GroupID           []byte
	Epoch             uint64
	Sender            Sender
	AuthenticatedData []byte
	ContentType       uint8
	ApplicationData   []byte
	Proposal          *Proposal
	Commit            *Commit
}

func (f *FramedContent) encode(w *Writer) {
	w.Vec(f.GroupID)
	w.U64(f.Epoch)
	w.U8(f.Sender.Type)
	if f.Sender.Type == SenderMember || f.Sender.Type == SenderExternal {
		w.U32(f.Sender.Index)
	}
	w.Vec(f.AuthenticatedData)
	w.U8(f.ContentType)
	switch f.ContentType {
	case ContentApplication:
		w.Vec(f.ApplicationData)
	case ContentProposal:
		f.Proposal.encode(w)
	case ContentCommit:
		f.Commit.encode(w)
	}
}

func (f *FramedContent) decode(r *Reader) {
	f.GroupID = r.Vec()
	f.Epoch = r.U64()
	f.Sender.Type = r.U8()
	switch f.Sender.Type {
	case SenderMember, SenderExternal:
		f.Sender.Index = r.U32()
	case SenderNewMemberProposal, SenderNewMemberCommit:
	default:
		r.Fail("sender type %d", f.Sender.Type)
	}
	f.AuthenticatedData = r.Vec()
	f.ContentType = r.U8()
	switch f.ContentType {
	case ContentApplication:
		f.ApplicationData = r.Vec()
	case ContentProposal:
		f.Proposal = new(Proposal)
		f.Proposal.decode(r)
	case ContentCommit:
		f.Commit = new(Commit)
		f.Commit.decode(r)
	default:
		r.Fail("content type %d", f.ContentType)
	}
}

// PublicMessage is a signed, unencrypted handshake message.
type PublicMessage struct {
	Content         FramedContent
	Signature       []byte
	ConfirmationTag []byte // commits only
	MembershipTag   []byte // member senders only
}

func (p *PublicMessage) encodeAuth(w *Writer) {
	w.Vec(p.Signature)
	if p.Content.ContentType == ContentCommit {
		w.Vec(p.ConfirmationTag)
	}
}

func (p *PublicMessage) encode(w *Writer) {
	p.Content.encode(w)
	p.encodeAuth(w)
	if p.Content.Sender.Type == SenderMember {
		w.Vec(p.MembershipTag)
	}
}

func (p *PublicMessage) decode(r *Reader) {
	p.Content.decode(r)
	p.Signature = r.Vec()
	if p.Content.ContentType == ContentCommit {
		p.ConfirmationTag = r.Vec()
	}
	if p.Content.Sender.Type == SenderMember {
		p.MembershipTag = r.Vec()
	}
}

// PrivateMessage is an encrypted handshake or application message. It is
// decoded for completeness; this package does not decrypt it.
type PrivateMessage struct {
	GroupID             []byte
	Epoch               uint64
	ContentType         uint8
	AuthenticatedData   []byte
	EncryptedSenderData []byte
	Ciphertext          []byte
}

// EncryptedGroupSecrets is one Welcome recipient entry.
type EncryptedGroupSecrets struct {
	NewMember []byte
	Secrets   HPKECiphertext
}

// Welcome invites new members (RFC 9420 §12.4.3.1).
type Welcome struct {
	CipherSuite        uint16
	Secrets            []EncryptedGroupSecrets
	EncryptedGroupInfo []byte
}

func (wl *Welcome) encode(w *Writer) {
	w.U16(wl.CipherSuite)
	w.VecFunc(func(w *Writer) {
		for _, s := range wl.Secrets {
			w.Vec(s.NewMember)
			s.Secrets.encode(w)
		}
	})
	w.Vec(wl.EncryptedGroupInfo)
}

func (wl *Welcome) decode(r *Reader) {
	wl.CipherSuite = r.U16()
	s := r.Sub()
	for s.Len() > 0 && s.Err() == nil {
		e := EncryptedGroupSecrets{NewMember: s.Vec()}
		e.Secrets.decode(s)
		wl.Secrets = append(wl.Secrets, e)
	}
	r.Join(s)
	wl.EncryptedGroupInfo = r.Vec()
}

// Marshal encodes the bare Welcome.
func (wl *Welcome) Marshal() []byte { var w Writer; wl.encode(&w); return w.Bytes() }

// UnmarshalWelcome decodes a bare Welcome.
func UnmarshalWelcome(b []byte) (*Welcome, error) {
	var wl Welcome
	r := NewReader(b)
	wl.decode(r)
	return &wl, r.Done()
}

// GroupSecrets is the plaintext of an EncryptedGroupSecrets.
type GroupSecrets struct {
	JoinerSecret []byte
	PathSecret   []byte // nil when absent
	PSKs         []PreSharedKeyID
}

func (g *GroupSecrets) encode(w *Writer) {
	w.Vec(g.JoinerSecret)
	w.Optional(g.PathSecret != nil)
	if g.PathSecret != nil {
		w.Vec(g.PathSecret)
	}
	w.VecFunc(func(w *Writer) {
		for i := range g.PSKs {
			g.PSKs[i].encode(w)
		}
	})
}

func (g *GroupSecrets) decode(r *Reader) {
	g.JoinerSecret = r.Vec()
	if r.Optional() {
		g.PathSecret = r.Vec()
		if g.PathSecret == nil && r.Err() == nil {
			g.PathSecret = []byte{}
		}
	}
	s := r.Sub()
	for s.Len() > 0 && s.Err() == nil {
		var p PreSharedKeyID
		p.decode(s)
		g.PSKs = append(g.PSKs, p)
	}
	r.Join(s)
}

// GroupContext summarises the group state of an epoch (RFC 9420 §8.1).
type GroupContext struct {
	Version                 uint16
	CipherSuite             uint16
	GroupID                 []byte
	Epoch                   uint64
	TreeHash                []byte
	ConfirmedTranscriptHash []byte
	Extensions              []Extension
}

func (g *GroupContext) encode(w *Writer) {
	w.U16(g.Version)
	w.U16(g.CipherSuite)
	w.Vec(g.GroupID)
	w.U64(g.Epoch)
	w.Vec(g.TreeHash)
	w.Vec(g.ConfirmedTranscriptHash)
	encodeExtensions(w, g.Extensions)
}

func (g *GroupContext) decode(r *Reader) {
	g.Version = r.U16()
	g.CipherSuite = r.U16()
	g.GroupID = r.Vec()
	g.Epoch = r.U64()
	g.TreeHash = r.Vec()
	g.ConfirmedTranscriptHash = r.Vec()
	g.Extensions = decodeExtensions(r)
}

// Marshal encodes the group context.
func (g *GroupContext) Marshal() []byte { var w Writer; g.encode(&w); return w.Bytes() }

// GroupInfo is the signed group state sent to joiners (RFC 9420 §12.4.3).
type GroupInfo struct {
	GroupContext    GroupContext
	Extensions      []Extension
	ConfirmationTag []byte
	Signer          uint32
	Signature       []byte
}

func (g *GroupInfo) encodeTBS(w *Writer) {
	g.GroupContext.encode(w)
	encodeExtensions(w, g.Extensions)
	w.Vec(g.ConfirmationTag)
	w.U32(g.Signer)
}

func (g *GroupInfo) encode(w *Writer) { g.encodeTBS(w); w.Vec(g.Signature) }

func (g *GroupInfo) decode(r *Reader) {
	g.GroupContext.decode(r)
	g.Extensions = decodeExtensions(r)
	g.ConfirmationTag = r.Vec()
	g.Signer = r.U32()
	g.Signature = r.Vec()
}

// ExternalSender is an entry of the external_senders extension.
type ExternalSender struct {
	SignatureKey []byte
	Credential   Credential
}

func (e *ExternalSender) encode(w *Writer) { w.Vec(e.SignatureKey); e.Credential.encode(w) }

func (e *ExternalSender) decode(r *Reader) { e.SignatureKey = r.Vec(); e.Credential.decode(r) }

// Marshal encodes the external sender.
func (e *ExternalSender) Marshal() []byte { var w Writer; e.encode(&w); return w.Bytes() }

// UnmarshalExternalSender decodes a bare ExternalSender.
func UnmarshalExternalSender(b []byte) (*ExternalSender, error) {
	var e ExternalSender
	r := NewReader(b)
	e.decode(r)
	return &e, r.Done()
}

func encodeExternalSenders(list []ExternalSender) []byte {
	var w Writer
	w.VecFunc(func(w *Writer) {
		for i := range list {
			list[i].encode(w)
		}
	})
	return w.Bytes()
}

func decodeExternalSenders(b []byte) ([]ExternalSender, error) {
	r := NewReader(b)
	s := r.Sub()
	var out []ExternalSender
	for s.Len() > 0 && s.Err() == nil {
		var e ExternalSender
		e.decode(s)
		out = append(out, e)
	}
	r.Join(s)
	return out, r.Done()
}

// MLSMessage is the top-level framing (RFC 9420 §6).
type MLSMessage struct {
	Version        uint16
	WireFormat     uint16
	PublicMessage  *PublicMessage
	PrivateMessage *PrivateMessage
	Welcome        *Welcome
	GroupInfo      *GroupInfo
	KeyPackage     *KeyPackage
}

func (m *MLSMessage) encode(w *Writer) {
	w.U16(m.Version)
	w.U16(m.WireFormat)
	switch m.WireFormat {
	case WireFormatPublicMessage:
		m.PublicMessage.encode(w)
	case WireFormatPrivateMessage:
		p := m.PrivateMessage
		w.Vec(p.GroupID)
		w.U64(p.Epoch)
		w.U8(p.ContentType)
		w.Vec(p.AuthenticatedData)
		w.Vec(p.EncryptedSenderData)
		w.Vec(p.Ciphertext)
	case WireFormatWelcome:
		m.Welcome.encode(w)
	case WireFormatGroupInfo:
		m.GroupInfo.encode(w)
	case WireFormatKeyPackage:
		m.KeyPackage.encode(w)
	}
}

func (m *MLSMessage) decode(r *Reader) {
	m.Version = r.U16()
	if m.Version != ProtocolVersionMLS10 && r.Err() == nil {
		r.Fail("protocol version %d", m.Version)
	}
	m.WireFormat = r.U16()
	switch m.WireFormat {
	case WireFormatPublicMessage:
		m.PublicMessage = new(PublicMessage)
		m.PublicMessage.decode(r)
	case WireFormatPrivateMessage:
		m.PrivateMessage = &PrivateMessage{GroupID: r.Vec(), Epoch: r.U64(), ContentType: r.U8(),
			AuthenticatedData: r.Vec(), EncryptedSenderData: r.Vec(), Ciphertext: r.Vec()}
	case WireFormatWelcome:
		m.Welcome = new(Welcome)
		m.Welcome.decode(r)
	case WireFormatGroupInfo:
		m.GroupInfo = new(GroupInfo)
		m.GroupInfo.decode(r)
	case WireFormatKeyPackage:
		m.KeyPackage = new(KeyPackage)
		m.KeyPackage.decode(r)
	default:
		r.Fail("wire format %d", m.WireFormat)
	}
}

// Marshal encodes the message.
func (m *MLSMessage) Marshal() []byte { var w Writer; m.encode(&w); return w.Bytes() }

// UnmarshalMLSMessage decodes exactly one MLSMessage.
func UnmarshalMLSMessage(b []byte) (*MLSMessage, error) {
	r := NewReader(b)
	m := new(MLSMessage)
	m.decode(r)
	return m, r.Done()
}

// ReadMLSMessage decodes one MLSMessage from the front of r, for
// concatenated messages.
func ReadMLSMessage(r *Reader) *MLSMessage {
	m := new(MLSMessage)
	m.decode(r)
	return m
}

// EncodeMLSMessage appends m to w.
func EncodeMLSMessage(w *Writer, m *MLSMessage) { m.encode(w) }
