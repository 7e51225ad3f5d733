package mls

import (
	"bytes"
	"testing"
)

type treeKEMCase struct {
	CipherSuite             uint16   `json:"cipher_suite"`
	GroupID                 hexBytes `json:"group_id"`
	Epoch                   uint64   `json:"epoch"`
	ConfirmedTranscriptHash hexBytes `json:"confirmed_transcript_hash"`
	RatchetTree             hexBytes `json:"ratchet_tree"`
	LeavesPrivate           []struct {
		Index          uint32   `json:"index"`
		EncryptionPriv hexBytes `json:"encryption_priv"`
		SignaturePriv  hexBytes `json:"signature_priv"`
		PathSecrets    []struct {
			Node       uint32   `json:"node"`
			PathSecret hexBytes `json:"path_secret"`
		} `json:"path_secrets"`
	} `json:"leaves_private"`
	UpdatePaths []struct {
		Sender        uint32     `json:"sender"`
		UpdatePath    hexBytes   `json:"update_path"`
		PathSecrets   []hexBytes `json:"path_secrets"`
		CommitSecret  hexBytes   `json:"commit_secret"`
		TreeHashAfter hexBytes   `json:"tree_hash_after"`
	} `json:"update_paths"`
}

func conformanceTreeKEM(t *testing.T) {
	var cases []treeKEMCase
	loadVectors(t, "treekem.json", &cases)
	var st tally
	for i, c := range cases {
		if c.CipherSuite != CipherSuite2 {
			continue
		}
		if !runTreeKEMCase(t, i, &c) {
			st.record(false)
			continue
		}
		st.record(true)
	}
	st.report(t, "treekem.json")
}

func runTreeKEMCase(t *testing.T, i int, c *treeKEMCase) bool {
	ok := true
	fail := func(f string, a ...any) { ok = false; t.Errorf("case %d: "+f, append([]any{i}, a...)...) }
	tree, err := UnmarshalRatchetTree(c.RatchetTree)
	if err != nil {
		fail("tree: %v", err)
		return false
	}
	ctx := func(th []byte) *GroupContext {
		return &GroupContext{Version: 1, CipherSuite: CipherSuite2, GroupID: c.GroupID, Epoch: c.Epoch,
			TreeHash: th, ConfirmedTranscriptHash: c.ConfirmedTranscriptHash}
	}
	keys := map[uint32]privateKeys{}
	sigs := map[uint32]*SignatureKey{}
	for _, lp := range c.LeavesPrivate {
		k, err := ParseHPKEKey(lp.EncryptionPriv)
		if err != nil {
			fail("%v", err)
			return false
		}
		pk := privateKeys{leafNode(lp.Index): k}
		for _, ps := range lp.PathSecrets {
			nk, _, err := pathStep(ps.PathSecret)
			if err != nil {
				fail("%v", err)
				return false
			}
			pk[ps.Node] = nk
		}
		keys[lp.Index] = pk
		if sigs[lp.Index], err = ParseSignatureKey(lp.SignaturePriv); err != nil {
			fail("%v", err)
			return false
		}
	}
	for n, up := range c.UpdatePaths {
		var path UpdatePath
		r := NewReader(up.UpdatePath)
		path.decode(r)
		if err := r.Done(); err != nil {
			fail("path %d: %v", n, err)
			continue
		}
		post := tree.clone()
		fdp, cop, err := post.applyPath(up.Sender, &path, c.GroupID)
		if err != nil {
			fail("path %d apply: %v", n, err)
			continue
		}
		if !bytes.Equal(post.TreeHash(), up.TreeHashAfter) {
			fail("path %d: tree hash after differs", n)
		}
		if err := post.verifyParentHashes(); err != nil {
			fail("path %d: %v", n, err)
		}
		gc := ctx(up.TreeHashAfter).Marshal()
		for _, lp := range c.LeavesPrivate {
			if lp.Index == up.Sender {
				continue
			}
			_, anc, commit, err := decryptPath(tree, keys[lp.Index], lp.Index, up.Sender, &path, fdp, cop, nil, gc)
			if err != nil {
				fail("path %d leaf %d: %v", n, lp.Index, err)
				continue
			}
			if !bytes.Equal(anc, up.PathSecrets[lp.Index]) || !bytes.Equal(commit, up.CommitSecret) {
				fail("path %d leaf %d: path or commit secret differs", n, lp.Index)
			}
		}
	}
	// Fresh paths from every private leaf must be decryptable by the others.
	for _, lp := range c.LeavesPrivate {
		sender := tree.clone()
		leaf := *tree.Leaf(lp.Index)
		path, _, _, commit, err := sender.createPath(lp.Index, leaf, sigs[lp.Index], c.GroupID, nil, ctx)
		if err != nil {
			fail("create from %d: %v", lp.Index, err)
			continue
		}
		if err := sender.verifyParentHashes(); err != nil {
			fail("create from %d: %v", lp.Index, err)
		}
		for _, other := range c.LeavesPrivate {
			if other.Index == lp.Index {
				continue
			}
			post := tree.clone()
			fdp, cop, err := post.applyPath(lp.Index, path, c.GroupID)
			if err != nil {
				fail("apply own path from %d at %d: %v", lp.Index, other.Index, err)
				continue
			}
			if !bytes.Equal(post.TreeHash(), sender.TreeHash()) {
				fail("own path from %d: tree hash differs at %d", lp.Index, other.Index)
			}
			_, _, got, err := decryptPath(tree, keys[other.Index], other.Index, lp.Index, path, fdp, cop, nil, ctx(post.TreeHash()).Marshal())
			if err != nil || !bytes.Equal(got, commit) {
				fail("own path from %d at %d: %v", lp.Index, other.Index, err)
			}
		}
	}
	return ok
}
