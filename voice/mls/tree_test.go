package mls

import (
	"bytes"
	"slices"
	"testing"
)

type treeValidationCase struct {
	CipherSuite uint16     `json:"cipher_suite"`
	Tree        hexBytes   `json:"tree"`
	GroupID     hexBytes   `json:"group_id"`
	TreeHashes  []hexBytes `json:"tree_hashes"`
	Resolutions [][]uint32 `json:"resolutions"`
}

func conformanceTreeValidation(t *testing.T) {
	var cases []treeValidationCase
	loadVectors(t, "tree-validation.json", &cases)
	var st tally
	for i, c := range cases {
		if c.CipherSuite != CipherSuite2 {
			continue
		}
		ok := true
		tree, err := UnmarshalRatchetTree(c.Tree)
		if err != nil {
			t.Errorf("case %d: %v", i, err)
			st.record(false)
			continue
		}
		if !bytes.Equal(tree.Marshal(), c.Tree) {
			ok = false
			t.Errorf("case %d: tree does not round-trip", i)
		}
		if len(tree.nodes) != len(c.TreeHashes) {
			ok = false
			t.Errorf("case %d: %d nodes, vector has %d", i, len(tree.nodes), len(c.TreeHashes))
		}
		for x := 0; x < len(c.TreeHashes) && x < len(tree.nodes); x++ {
			if h := tree.treeHash(uint32(x), nil); !bytes.Equal(h, c.TreeHashes[x]) {
				ok = false
				t.Errorf("case %d node %d: tree hash %x, want %x", i, x, h, c.TreeHashes[x])
			}
			res := tree.resolution(uint32(x), nil)
			if !slices.Equal(res, c.Resolutions[x]) && !(len(res) == 0 && len(c.Resolutions[x]) == 0) {
				ok = false
				t.Errorf("case %d node %d: resolution %v, want %v", i, x, res, c.Resolutions[x])
			}
		}
		if err := tree.verify(c.GroupID, nil); err != nil {
			ok = false
			t.Errorf("case %d: verify: %v", i, err)
		}
		st.record(ok)
	}
	st.report(t, "tree-validation.json")
}
