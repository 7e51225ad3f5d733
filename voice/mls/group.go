package mls

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"slices"
)

// Group is one member's view of an MLS group at one epoch. Methods that
// change the epoch return a new Group and leave the receiver untouched, so
// a caller can keep a pending state aside and discard it.
type Group struct {
	ctx       GroupContext
	tree      *RatchetTree
	own       uint32
	keys      privateKeys
	sig       *SignatureKey
	secrets   *epochSecrets
	interim   []byte
	proposals map[string]*cachedProposal
	order     []string
	psks      map[string][]byte
	// resumption holds the resumption PSKs of the epochs this member saw.
	resumption map[uint64][]byte
}

type cachedProposal struct {
	ref      []byte
	proposal *Proposal
	sender   Sender
}

// JoinConfig is what a new member needs to join from a Welcome.
type JoinConfig struct {
	KeyPackage    *KeyPackage
	InitKey       *HPKEKey
	EncryptionKey *HPKEKey
	SignatureKey  *SignatureKey
	// Tree is the ratchet tree when the Welcome's GroupInfo carries no
	// ratchet_tree extension.
	Tree *RatchetTree
	// ExternalPSKs maps PSK ids to secrets.
	ExternalPSKs map[string][]byte
}

// NewGroup creates a one-member group at epoch 0 (RFC 9420 §11).
func NewGroup(groupID []byte, leaf LeafNode, encKey *HPKEKey, sig *SignatureKey, extensions []Extension) (*Group, error) {
	if !equalBytes(leaf.EncryptionKey, encKey.Public()) || !equalBytes(leaf.SignatureKey, sig.Public()) {
		return nil, errorf("leaf keys do not match the given private keys")
	}
	tree := &RatchetTree{}
	tree.addLeaf(&leaf)
	g := &Group{
		ctx: GroupContext{Version: ProtocolVersionMLS10, CipherSuite: CipherSuite2, GroupID: groupID,
			TreeHash: tree.TreeHash(), ConfirmedTranscriptHash: nil, Extensions: extensions},
		tree: tree,
		keys: privateKeys{0: encKey},
		sig:  sig,
	}
	initial := make([]byte, hashLen)
	if _, err := rand.Read(initial); err != nil {
		return nil, fmt.Errorf("sampling the initial secret: %w", err)
	}
	g.secrets = scheduleFromJoiner(initial, nil, &g.ctx)
	g.interim = interimTranscriptHash(nil, mac(g.secrets.confirmation, nil))
	g.remember(nil)
	return g, nil
}

// Epoch returns the current epoch.
func (g *Group) Epoch() uint64 { return g.ctx.Epoch }

// GroupID returns the group id.
func (g *Group) GroupID() []byte { return g.ctx.GroupID }

// Context returns the current group context (do not modify).
func (g *Group) Context() *GroupContext { return &g.ctx }

// OwnLeaf returns this member's leaf index.
func (g *Group) OwnLeaf() uint32 { return g.own }

// Tree returns the ratchet tree (do not modify).
func (g *Group) Tree() *RatchetTree { return g.tree }

// Members returns the occupied leaves by index.
func (g *Group) Members() map[uint32]*LeafNode {
	out := map[uint32]*LeafNode{}
	for i := uint32(0); i < g.tree.numLeaves(); i++ {
		if l := g.tree.Leaf(i); l != nil {
			out[i] = l
		}
	}
	return out
}

// EpochAuthenticator returns the epoch authenticator.
func (g *Group) EpochAuthenticator() []byte { return g.secrets.authentication }

// Export implements MLS-Exporter.
func (g *Group) Export(label string, context []byte, length int) []byte {
	return exportSecret(g.secrets.exporter, label, context, length)
}

// ExternalSenders returns the external_senders extension entries.
func (g *Group) ExternalSenders() ([]ExternalSender, error) {
	d, ok := findExtension(g.ctx.Extensions, ExtensionExternalSenders)
	if !ok {
		return nil, nil
	}
	return decodeExternalSenders(d)
}

// Join processes a Welcome for the key package in cfg (RFC 9420
// §12.4.3.1).
func Join(w *Welcome, cfg JoinConfig) (*Group, error) {
	if w.CipherSuite != CipherSuite2 {
		return nil, errorf("welcome cipher suite %d", w.CipherSuite)
	}
	gi, joiner, psk, err := openWelcomePSK(w, cfg.KeyPackage, cfg.InitKey, cfg.ExternalPSKs)
	if err != nil {
		return nil, err
	}
	gs := gi.secrets
	if gi.GroupContext.Version != ProtocolVersionMLS10 || gi.GroupContext.CipherSuite != CipherSuite2 {
		return nil, errorf("group info version %d suite %d", gi.GroupContext.Version, gi.GroupContext.CipherSuite)
	}
	tree := cfg.Tree
	if d, ok := findExtension(gi.Extensions, ExtensionRatchetTree); ok {
		if tree, err = UnmarshalRatchetTree(d); err != nil {
			return nil, fmt.Errorf("ratchet_tree extension: %w", err)
		}
	}
	if tree == nil {
		return nil, errorf("welcome carries no ratchet tree and none was given")
	}
	signer := tree.Leaf(gi.Signer)
	if signer == nil {
		return nil, errorf("group info signer %d is not a member", gi.Signer)
	}
	var tbs Writer
	gi.encodeTBS(&tbs)
	if err := VerifyWithLabel(signer.SignatureKey, "GroupInfoTBS", tbs.Bytes(), gi.Signature); err != nil {
		return nil, err
	}
	if err := tree.verify(gi.GroupContext.GroupID, gi.GroupContext.TreeHash); err != nil {
		return nil, fmt.Errorf("ratchet tree: %w", err)
	}
	own, ok := tree.findLeaf(&cfg.KeyPackage.LeafNode)
	if !ok {
		return nil, errorf("own leaf not in the ratchet tree")
	}
	keys := privateKeys{leafNode(own): cfg.EncryptionKey}
	if gs.PathSecret != nil {
		lca := commonAncestor(leafNode(own), leafNode(gi.Signer))
		secret := gs.PathSecret
		for _, x := range directPath(leafNode(own), tree.numLeaves()) {
			if x != lca && !isAncestor(x, lca) || tree.nodes[x].blank() {
				continue
			}
			nk, next, err := pathStep(secret)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(nk.Public(), tree.nodes[x].encryptionKey()) {
				return nil, errorf("path secret does not match the key of node %d", x)
			}
			keys[x] = nk
			secret = next
		}
	}
	g := &Group{ctx: gi.GroupContext, tree: tree, own: own, keys: keys, sig: cfg.SignatureKey, psks: cfg.ExternalPSKs}
	g.secrets = scheduleFromJoiner(joiner, psk, &g.ctx)
	if !equalBytes(mac(g.secrets.confirmation, g.ctx.ConfirmedTranscriptHash), gi.ConfirmationTag) {
		return nil, fmt.Errorf("%w: welcome confirmation tag", ErrCrypto)
	}
	g.interim = interimTranscriptHash(g.ctx.ConfirmedTranscriptHash, gi.ConfirmationTag)
	g.remember(nil)
	return g, nil
}

// openedGroupInfo is a decrypted GroupInfo with the group secrets that
// opened it.
type openedGroupInfo struct {
	GroupInfo
	secrets GroupSecrets
}

// openWelcomePSK finds the key package's entry in a Welcome, decrypts the
// group secrets and the GroupInfo, and returns them with the joiner and
// PSK secrets.
func openWelcomePSK(w *Welcome, kp *KeyPackage, initKey *HPKEKey, psks map[string][]byte) (*openedGroupInfo, []byte, []byte, error) {
	if w.CipherSuite != CipherSuite2 {
		return nil, nil, nil, errorf("welcome cipher suite %d", w.CipherSuite)
	}
	ref := kp.Ref()
	var entry *EncryptedGroupSecrets
	for i := range w.Secrets {
		if bytes.Equal(w.Secrets[i].NewMember, ref) {
			entry = &w.Secrets[i]
		}
	}
	if entry == nil {
		return nil, nil, nil, errorf("welcome has no entry for key package %x", ref)
	}
	pt, err := initKey.DecryptWithLabel("Welcome", w.EncryptedGroupInfo, entry.Secrets)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decrypting group secrets: %w", err)
	}
	gi := &openedGroupInfo{}
	r := NewReader(pt)
	gi.secrets.decode(r)
	if err := r.Done(); err != nil {
		return nil, nil, nil, fmt.Errorf("group secrets: %w", err)
	}
	psk, err := resolvePSKs(gi.secrets.PSKs, psks)
	if err != nil {
		return nil, nil, nil, err
	}
	member := extract(gi.secrets.JoinerSecret, psk)
	key, nonce := welcomeKeyNonce(DeriveSecret(member, "welcome"))
	giBytes, err := aeadOpen(key, nonce, nil, w.EncryptedGroupInfo)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("decrypting group info: %w", err)
	}
	r = NewReader(giBytes)
	gi.GroupInfo.decode(r)
	if err := r.Done(); err != nil {
		return nil, nil, nil, fmt.Errorf("group info: %w", err)
	}
	return gi, gi.secrets.JoinerSecret, psk, nil
}

func resolvePSKs(ids []PreSharedKeyID, external map[string][]byte) ([]byte, error) {
	return resolvePSKsWith(ids, external, nil)
}

// resolvePSKsWith computes psk_secret; resumption PSKs are looked up in
// the group's own earlier epochs.
func resolvePSKsWith(ids []PreSharedKeyID, external map[string][]byte, g *Group) ([]byte, error) {
	if len(ids) == 0 {
		return zeroSecret(), nil
	}
	secrets := make([][]byte, len(ids))
	for i, id := range ids {
		if id.Type == 2 {
			if g == nil || id.Usage != 1 || !bytes.Equal(id.GroupID, g.ctx.GroupID) || g.resumption[id.Epoch] == nil {
				return nil, errorf("resumption PSK for group %x epoch %d unavailable", id.GroupID, id.Epoch)
			}
			secrets[i] = g.resumption[id.Epoch]
			continue
		}
		s, ok := external[string(id.ID)]
		if !ok {
			return nil, errorf("unknown external PSK %x", id.ID)
		}
		secrets[i] = s
	}
	return pskSecret(ids, secrets), nil
}

// verifyMessage checks a public message's epoch, group, membership tag and
// signature and returns the sender's signature key.
func (g *Group) verifyMessage(p *PublicMessage) error {
	c := &p.Content
	if !bytes.Equal(c.GroupID, g.ctx.GroupID) {
		return errorf("message for group %x, this group is %x", c.GroupID, g.ctx.GroupID)
	}
	if c.Epoch != g.ctx.Epoch {
		return errorf("message for epoch %d, group is at epoch %d", c.Epoch, g.ctx.Epoch)
	}
	var pub []byte
	switch c.Sender.Type {
	case SenderMember:
		leaf := g.tree.Leaf(c.Sender.Index)
		if leaf == nil {
			return errorf("message from unoccupied leaf %d", c.Sender.Index)
		}
		if !equalBytes(membershipTag(g.secrets.membership, p, &g.ctx), p.MembershipTag) {
			return fmt.Errorf("%w: membership tag from leaf %d", ErrCrypto, c.Sender.Index)
		}
		pub = leaf.SignatureKey
	case SenderExternal:
		ext, err := g.ExternalSenders()
		if err != nil {
			return err
		}
		if int(c.Sender.Index) >= len(ext) {
			return errorf("external sender index %d of %d", c.Sender.Index, len(ext))
		}
		if c.ContentType != ContentProposal {
			return errorf("external sender sent content type %d", c.ContentType)
		}
		pub = ext[c.Sender.Index].SignatureKey
	default:
		return errorf("sender type %d not supported", c.Sender.Type)
	}
	return verifyPublicMessageSignature(p, pub, &g.ctx)
}

// ProcessProposal validates a proposal message and caches it for the
// next commit. It returns the proposal reference.
func (g *Group) ProcessProposal(p *PublicMessage) ([]byte, error) {
	if p.Content.ContentType != ContentProposal {
		return nil, errorf("content type %d is not a proposal", p.Content.ContentType)
	}
	if err := g.verifyMessage(p); err != nil {
		return nil, err
	}
	prop := p.Content.Proposal
	switch prop.Type {
	case ProposalAdd:
		if err := prop.KeyPackage.Verify(); err != nil {
			return nil, fmt.Errorf("add proposal: %w", err)
		}
	case ProposalRemove:
		if g.tree.Leaf(prop.Removed) == nil {
			return nil, errorf("remove proposal for unoccupied leaf %d", prop.Removed)
		}
	case ProposalUpdate, ProposalPSK, ProposalGroupContextExtensions:
	default:
		return nil, errorf("proposal type %d not supported", prop.Type)
	}
	ref := ProposalRef(p)
	if g.proposals == nil {
		g.proposals = map[string]*cachedProposal{}
	}
	if _, dup := g.proposals[string(ref)]; !dup {
		g.order = append(g.order, string(ref))
	}
	g.proposals[string(ref)] = &cachedProposal{ref: ref, proposal: prop, sender: p.Content.Sender}
	return ref, nil
}

// RevokeProposal drops a cached proposal.
func (g *Group) RevokeProposal(ref []byte) error {
	if _, ok := g.proposals[string(ref)]; !ok {
		return errorf("unknown proposal reference %x", ref)
	}
	delete(g.proposals, string(ref))
	g.order = slices.DeleteFunc(g.order, func(s string) bool { return s == string(ref) })
	return nil
}

// PendingProposals returns the number of cached proposals.
func (g *Group) PendingProposals() int { return len(g.order) }

// applied is the outcome of applying a commit's proposals to a tree.
type applied struct {
	tree       *RatchetTree
	extensions []Extension
	added      map[uint32]*KeyPackage
	psks       []PreSharedKeyID
	needPath   bool
}

func (g *Group) applyProposals(list []cachedProposal, committer uint32) (*applied, error) {
	a := &applied{tree: g.tree.clone(), extensions: g.ctx.Extensions, added: map[uint32]*KeyPackage{}, needPath: len(list) == 0}
	byType := func(typ uint16) []cachedProposal {
		var out []cachedProposal
		for _, p := range list {
			if p.proposal.Type == typ {
				out = append(out, p)
			}
		}
		return out
	}
	for _, p := range list {
		switch p.proposal.Type {
		case ProposalAdd, ProposalRemove, ProposalUpdate, ProposalPSK, ProposalGroupContextExtensions:
		default:
			return nil, errorf("proposal type %d not supported in a commit", p.proposal.Type)
		}
	}
	if gce := byType(ProposalGroupContextExtensions); len(gce) > 0 {
		if len(gce) > 1 {
			return nil, errorf("commit has %d group context extensions proposals", len(gce))
		}
		a.extensions = gce[0].proposal.Extensions
		a.needPath = true
	}
	for _, p := range byType(ProposalUpdate) {
		if p.sender.Type != SenderMember || p.sender.Index == committer {
			return nil, errorf("update proposal from sender %d not allowed", p.sender.Index)
		}
		leaf := *p.proposal.LeafNode
		if leaf.Source != LeafSourceUpdate {
			return nil, errorf("update leaf source %d", leaf.Source)
		}
		if err := leaf.verify(g.ctx.GroupID, p.sender.Index); err != nil {
			return nil, err
		}
		a.tree.nodes[leafNode(p.sender.Index)] = node{leaf: &leaf}
		a.tree.blankPath(p.sender.Index)
		a.needPath = true
	}
	removed := map[uint32]bool{}
	for _, p := range byType(ProposalRemove) {
		i := p.proposal.Removed
		if removed[i] || a.tree.Leaf(i) == nil {
			return nil, errorf("remove of unoccupied or repeated leaf %d", i)
		}
		if i == committer {
			return nil, errorf("committer %d removes itself", i)
		}
		removed[i] = true
		a.tree.removeLeaf(i)
		a.needPath = true
	}
	for _, p := range byType(ProposalAdd) {
		kp := p.proposal.KeyPackage
		if err := kp.Verify(); err != nil {
			return nil, fmt.Errorf("add proposal: %w", err)
		}
		leaf := kp.LeafNode
		for x := range a.tree.nodes {
			n := a.tree.nodes[x]
			if bytes.Equal(n.encryptionKey(), leaf.EncryptionKey) || (n.leaf != nil && bytes.Equal(n.leaf.SignatureKey, leaf.SignatureKey)) {
				return nil, errorf("added key package reuses a key of node %d", x)
			}
		}
		i := a.tree.addLeaf(&leaf)
		a.added[i] = kp
	}
	for _, p := range byType(ProposalPSK) {
		a.psks = append(a.psks, *p.proposal.PSK)
	}
	return a, nil
}

func (g *Group) resolve(c *Commit, sender Sender) ([]cachedProposal, error) {
	var list []cachedProposal
	for _, por := range c.Proposals {
		if por.Proposal != nil {
			list = append(list, cachedProposal{proposal: por.Proposal, sender: sender})
			continue
		}
		cp, ok := g.proposals[string(por.Ref)]
		if !ok {
			return nil, errorf("commit references unknown proposal %x", por.Ref)
		}
		list = append(list, *cp)
	}
	return list, nil
}

// ProcessCommit processes a commit from another member (RFC 9420 §12.4.2)
// and returns the group at the next epoch.
func (g *Group) ProcessCommit(p *PublicMessage) (*Group, error) {
	c := &p.Content
	if c.ContentType != ContentCommit {
		return nil, errorf("content type %d is not a commit", c.ContentType)
	}
	if c.Sender.Type != SenderMember {
		return nil, errorf("commit from sender type %d not supported", c.Sender.Type)
	}
	if c.Sender.Index == g.own {
		return nil, errorf("commit claims to come from this member (leaf %d)", g.own)
	}
	if err := g.verifyMessage(p); err != nil {
		return nil, err
	}
	list, err := g.resolve(c.Commit, c.Sender)
	if err != nil {
		return nil, err
	}
	a, err := g.applyProposals(list, c.Sender.Index)
	if err != nil {
		return nil, err
	}
	if a.needPath && c.Commit.Path == nil {
		return nil, errorf("commit requires an update path")
	}
	next := &Group{tree: a.tree, own: g.own, keys: g.keys, sig: g.sig, psks: g.psks}
	if next.tree.Leaf(g.own) == nil {
		return nil, errorf("this member (leaf %d) was removed", g.own)
	}
	next.ctx = GroupContext{Version: g.ctx.Version, CipherSuite: g.ctx.CipherSuite, GroupID: g.ctx.GroupID,
		Epoch: g.ctx.Epoch + 1, Extensions: a.extensions}
	var commitSecret []byte
	if path := c.Commit.Path; path != nil {
		pre := next.tree.clone()
		fdp, cop, err := next.tree.applyPath(c.Sender.Index, path, g.ctx.GroupID)
		if err != nil {
			return nil, err
		}
		provisional := next.ctx
		provisional.TreeHash = next.tree.TreeHash()
		provisional.ConfirmedTranscriptHash = g.ctx.ConfirmedTranscriptHash
		exclude := map[uint32]bool{}
		for i := range a.added {
			exclude[i] = true
		}
		keys, _, cs, err := decryptPath(pre, g.keys, g.own, c.Sender.Index, path, fdp, cop, exclude, provisional.Marshal())
		if err != nil {
			return nil, fmt.Errorf("decrypting update path: %w", err)
		}
		next.keys, commitSecret = keys, cs
	}
	next.ctx.TreeHash = next.tree.TreeHash()
	next.ctx.ConfirmedTranscriptHash = confirmedTranscriptHash(g.interim, WireFormatPublicMessage, c, p.Signature)
	psk, err := resolvePSKsWith(a.psks, g.psks, g)
	if err != nil {
		return nil, err
	}
	next.secrets = scheduleFromJoiner(joinerSecret(g.secrets.init, commitSecret, &next.ctx), psk, &next.ctx)
	if !equalBytes(mac(next.secrets.confirmation, next.ctx.ConfirmedTranscriptHash), p.ConfirmationTag) {
		return nil, fmt.Errorf("%w: commit confirmation tag", ErrCrypto)
	}
	next.interim = interimTranscriptHash(next.ctx.ConfirmedTranscriptHash, p.ConfirmationTag)
	next.remember(g.resumption)
	return next, nil
}

// CommitResult is what Commit produces.
type CommitResult struct {
	// Message is the commit as an MLSMessage (PublicMessage).
	Message *MLSMessage
	// Welcome is set when the commit adds members.
	Welcome *Welcome
	// Next is the group state once the commit is accepted.
	Next *Group
}

// Commit commits every cached proposal by reference. An UpdatePath is
// included when a proposal requires one (Remove) or there are none.
func (g *Group) Commit() (*CommitResult, error) { return g.CommitWith(nil) }

// CommitWith commits every cached proposal by reference and, after them,
// the proposals given by value (RFC 9420 allows both; DAVE members only
// make and accept references, so this serves tests that play a member
// breaking that rule).
func (g *Group) CommitWith(inline []*Proposal) (*CommitResult, error) {
	var list []cachedProposal
	commit := &Commit{}
	for _, ref := range g.order {
		cp := g.proposals[ref]
		list = append(list, *cp)
		commit.Proposals = append(commit.Proposals, ProposalOrRef{Ref: cp.ref})
	}
	for _, p := range inline {
		list = append(list, cachedProposal{proposal: p, sender: Sender{Type: SenderMember, Index: g.own}})
		commit.Proposals = append(commit.Proposals, ProposalOrRef{Proposal: p})
	}
	a, err := g.applyProposals(list, g.own)
	if err != nil {
		return nil, err
	}
	next := &Group{tree: a.tree, own: g.own, keys: g.keys, sig: g.sig, psks: g.psks}
	next.ctx = GroupContext{Version: g.ctx.Version, CipherSuite: g.ctx.CipherSuite, GroupID: g.ctx.GroupID,
		Epoch: g.ctx.Epoch + 1, Extensions: a.extensions}
	exclude := map[uint32]bool{}
	for i := range a.added {
		exclude[i] = true
	}
	var commitSecret []byte
	var pathSecrets map[uint32][]byte
	if a.needPath {
		leaf := *g.tree.Leaf(g.own)
		path, keys, secrets, cs, err := next.tree.createPath(g.own, leaf, g.sig, g.ctx.GroupID, exclude, func(th []byte) *GroupContext {
			p := next.ctx
			p.TreeHash = th
			p.ConfirmedTranscriptHash = g.ctx.ConfirmedTranscriptHash
			return &p
		})
		if err != nil {
			return nil, err
		}
		commit.Path = path
		commitSecret = cs
		next.keys = keys
		pathSecrets = secrets
	}
	pm := &PublicMessage{Content: FramedContent{GroupID: g.ctx.GroupID, Epoch: g.ctx.Epoch,
		Sender: Sender{Type: SenderMember, Index: g.own}, ContentType: ContentCommit, Commit: commit}}
	if err := SignPublicMessage(pm, g.sig, &g.ctx); err != nil {
		return nil, err
	}
	next.ctx.TreeHash = next.tree.TreeHash()
	next.ctx.ConfirmedTranscriptHash = confirmedTranscriptHash(g.interim, WireFormatPublicMessage, &pm.Content, pm.Signature)
	psk, err := resolvePSKsWith(a.psks, g.psks, g)
	if err != nil {
		return nil, err
	}
	joiner := joinerSecret(g.secrets.init, commitSecret, &next.ctx)
	next.secrets = scheduleFromJoiner(joiner, psk, &next.ctx)
	pm.ConfirmationTag = mac(next.secrets.confirmation, next.ctx.ConfirmedTranscriptHash)
	pm.MembershipTag = membershipTag(g.secrets.membership, pm, &g.ctx)
	next.interim = interimTranscriptHash(next.ctx.ConfirmedTranscriptHash, pm.ConfirmationTag)
	next.remember(g.resumption)
	res := &CommitResult{Message: &MLSMessage{Version: ProtocolVersionMLS10, WireFormat: WireFormatPublicMessage, PublicMessage: pm}, Next: next}
	if len(a.added) > 0 {
		res.Welcome, err = next.welcome(pm.ConfirmationTag, a.added, pathSecrets)
		if err != nil {
			return nil, err
		}
	}
	return res, nil
}

// welcome builds the Welcome for the members added by the commit that led
// to g, with the ratchet tree inline.
func (g *Group) welcome(confirmationTag []byte, added map[uint32]*KeyPackage, pathSecrets map[uint32][]byte) (*Welcome, error) {
	gi := GroupInfo{GroupContext: g.ctx, Extensions: []Extension{{Type: ExtensionRatchetTree, Data: g.tree.Marshal()}},
		ConfirmationTag: confirmationTag, Signer: g.own}
	var tbs Writer
	gi.encodeTBS(&tbs)
	sig, err := g.sig.SignWithLabel("GroupInfoTBS", tbs.Bytes())
	if err != nil {
		return nil, err
	}
	gi.Signature = sig
	var giw Writer
	gi.encode(&giw)
	key, nonce := welcomeKeyNonce(g.secrets.welcome)
	w := &Welcome{CipherSuite: CipherSuite2, EncryptedGroupInfo: aeadSeal(key, nonce, nil, giw.Bytes())}
	idx := make([]uint32, 0, len(added))
	for i := range added {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	for _, i := range idx {
		kp := added[i]
		gs := GroupSecrets{JoinerSecret: g.secrets.joiner}
		if pathSecrets != nil {
			gs.PathSecret = pathSecrets[commonAncestor(leafNode(g.own), leafNode(i))]
		}
		var gsw Writer
		gs.encode(&gsw)
		ct, err := EncryptWithLabel(kp.InitKey, "Welcome", w.EncryptedGroupInfo, gsw.Bytes())
		if err != nil {
			return nil, err
		}
		w.Secrets = append(w.Secrets, EncryptedGroupSecrets{NewMember: kp.Ref(), Secrets: ct})
	}
	return w, nil
}

// maxResumptionEpochs bounds how many past resumption PSKs a group keeps.
const maxResumptionEpochs = 8

// remember records this epoch's resumption PSK on top of prev.
func (g *Group) remember(prev map[uint64][]byte) {
	g.resumption = map[uint64][]byte{g.ctx.Epoch: g.secrets.resumption}
	for e, s := range prev {
		if e+maxResumptionEpochs > g.ctx.Epoch {
			g.resumption[e] = s
		}
	}
}
