package mls

import (
	"bytes"
	"crypto/rand"
	"fmt"
)

// TreeKEM (RFC 9420 §7.4–7.6 and §12.4.2).

// privateKeys holds the HPKE private keys a member knows for tree nodes.
// A key only counts while its public key matches the node's current key,
// so blanked or replaced nodes drop out without bookkeeping.
type privateKeys map[uint32]*HPKEKey

func (p privateKeys) keyFor(t *RatchetTree, x uint32) *HPKEKey {
	k := p[x]
	if k == nil || x >= uint32(len(t.nodes)) || !bytes.Equal(t.nodes[x].encryptionKey(), k.Public()) {
		return nil
	}
	return k
}

func (p privateKeys) clone() privateKeys {
	c := make(privateKeys, len(p))
	for k, v := range p {
		c[k] = v
	}
	return c
}

// pathStep derives the node key and the next path secret.
func pathStep(pathSecret []byte) (*HPKEKey, []byte, error) {
	k, err := deriveHPKEKey(DeriveSecret(pathSecret, "node"))
	if err != nil {
		return nil, nil, err
	}
	return k, DeriveSecret(pathSecret, "path"), nil
}

// mergePath replaces the sender's direct path with the path's public keys
// and computes parent hashes, returning the parent hash the sender's leaf
// must carry. The leaf itself is not written.
func (t *RatchetTree) mergePath(sender uint32, keys [][]byte) ([]byte, error) {
	fdp, cop := t.filteredDirectPath(sender, nil)
	if len(keys) != len(fdp) {
		return nil, errorf("update path has %d nodes, filtered direct path of leaf %d has %d", len(keys), sender, len(fdp))
	}
	t.blankPath(sender)
	for k, x := range fdp {
		t.nodes[x] = node{parent: &ParentNode{EncryptionKey: keys[k]}}
	}
	var ph []byte
	for k := len(fdp) - 1; k >= 0; k-- {
		t.nodes[fdp[k]].parent.ParentHash = ph
		ph = t.parentHashOf(fdp[k], cop[k])
	}
	return ph, nil
}

// createPath generates a new leaf key and path for leaf sender, merges it
// into t, signs the new leaf, and encrypts the path secrets to the copath
// resolutions (excluding the leaves in exclude). ctx is called after the
// merge to build the provisional group context from the new tree. It
// returns the path, the new private keys, the path secret of each node of
// the filtered direct path and the commit secret.
func (t *RatchetTree) createPath(sender uint32, leaf LeafNode, sig *SignatureKey, groupID []byte,
	exclude map[uint32]bool, ctx func(treeHash []byte) *GroupContext) (*UpdatePath, privateKeys, map[uint32][]byte, []byte, error) {
	fdp, cop := t.filteredDirectPath(sender, nil)
	leafKey, err := GenerateHPKEKey()
	if err != nil {
		return nil, nil, nil, nil, err
	}
	secret := make([]byte, hashLen)
	if _, err := rand.Read(secret); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("sampling path secret: %w", err)
	}
	priv := privateKeys{leafNode(sender): leafKey}
	secrets := make([][]byte, len(fdp))
	byNode := map[uint32][]byte{}
	pubs := make([][]byte, len(fdp))
	for k, x := range fdp {
		secrets[k] = secret
		byNode[x] = secret
		nk, next, err := pathStep(secret)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		priv[x] = nk
		pubs[k] = nk.Public()
		secret = next
	}
	commitSecret := secret
	// Resolutions are taken before the merge, as receivers see them.
	targets := make([][]uint32, len(fdp))
	for k := range fdp {
		targets[k] = t.resolution(cop[k], exclude)
	}
	ph, err := t.mergePath(sender, pubs)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	leaf.EncryptionKey = leafKey.Public()
	leaf.Source = LeafSourceCommit
	leaf.ParentHash = ph
	leaf.NotBefore, leaf.NotAfter = 0, 0
	if err := leaf.sign(sig, groupID, sender); err != nil {
		return nil, nil, nil, nil, err
	}
	t.nodes[leafNode(sender)] = node{leaf: &leaf}
	gc := ctx(t.TreeHash()).Marshal()
	path := &UpdatePath{LeafNode: leaf, Nodes: make([]UpdatePathNode, len(fdp))}
	for k := range fdp {
		path.Nodes[k].EncryptionKey = pubs[k]
		for _, y := range targets[k] {
			ct, err := EncryptWithLabel(t.nodes[y].encryptionKey(), "UpdatePathNode", gc, secrets[k])
			if err != nil {
				return nil, nil, nil, nil, err
			}
			path.Nodes[k].Secrets = append(path.Nodes[k].Secrets, ct)
		}
	}
	return path, priv, byNode, commitSecret, nil
}

// applyPath merges a received UpdatePath from sender into t, checking the
// leaf's parent hash and signature. It returns the filtered direct path
// and copath as they were before the merge.
func (t *RatchetTree) applyPath(sender uint32, path *UpdatePath, groupID []byte) (fdp, cop []uint32, err error) {
	fdp, cop = t.filteredDirectPath(sender, nil)
	keys := make([][]byte, len(path.Nodes))
	for k, n := range path.Nodes {
		keys[k] = n.EncryptionKey
	}
	pre := t.clone()
	ph, err := t.mergePath(sender, keys)
	if err != nil {
		return nil, nil, err
	}
	if path.LeafNode.Source != LeafSourceCommit || !bytes.Equal(path.LeafNode.ParentHash, ph) {
		*t = *pre
		return nil, nil, errorf("update path leaf has wrong source or parent hash")
	}
	if err := path.LeafNode.verify(groupID, sender); err != nil {
		*t = *pre
		return nil, nil, err
	}
	leaf := path.LeafNode
	t.nodes[leafNode(sender)] = node{leaf: &leaf}
	return fdp, cop, nil
}

// decryptPath recovers the path secret for own's common ancestor with the
// sender and derives the keys above it. pre is the tree before the path
// was merged (with the commit's proposals applied).
//
// It returns the updated keys, the path secret of the common ancestor and
// the commit secret.
func decryptPath(pre *RatchetTree, keys privateKeys, own, sender uint32, path *UpdatePath,
	fdp, cop []uint32, exclude map[uint32]bool, gc []byte) (privateKeys, []byte, []byte, error) {
	k := -1
	for i, c := range cop {
		if isAncestor(c, leafNode(own)) {
			k = i
			break
		}
	}
	if k < 0 {
		return nil, nil, nil, errorf("leaf %d is not below the path of leaf %d", own, sender)
	}
	res := pre.resolution(cop[k], exclude)
	if len(path.Nodes[k].Secrets) != len(res) {
		return nil, nil, nil, errorf("path node %d has %d ciphertexts, resolution has %d", fdp[k], len(path.Nodes[k].Secrets), len(res))
	}
	var secret []byte
	for j, y := range res {
		if key := keys.keyFor(pre, y); key != nil {
			s, err := key.DecryptWithLabel("UpdatePathNode", gc, path.Nodes[k].Secrets[j])
			if err != nil {
				return nil, nil, nil, err
			}
			secret = s
			break
		}
	}
	if secret == nil {
		return nil, nil, nil, errorf("no private key for the resolution of node %d", cop[k])
	}
	ancestor := secret
	out := keys.clone()
	for m := k; m < len(fdp); m++ {
		nk, next, err := pathStep(secret)
		if err != nil {
			return nil, nil, nil, err
		}
		if !bytes.Equal(nk.Public(), path.Nodes[m].EncryptionKey) {
			return nil, nil, nil, errorf("derived key of node %d does not match the update path", fdp[m])
		}
		out[fdp[m]] = nk
		secret = next
	}
	return out, ancestor, secret, nil
}
