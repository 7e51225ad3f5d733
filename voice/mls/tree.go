package mls

import (
	"bytes"
	"fmt"
	"slices"
)

// ParentNode is an interior node of the ratchet tree (RFC 9420 §7.1).
type ParentNode struct {
	EncryptionKey  []byte
	ParentHash     []byte
	UnmergedLeaves []uint32
}

func (p *ParentNode) encode(w *Writer) {
	w.Vec(p.EncryptionKey)
	w.Vec(p.ParentHash)
	w.VecFunc(func(w *Writer) {
		for _, u := range p.UnmergedLeaves {
			w.U32(u)
		}
	})
}

func (p *ParentNode) decode(r *Reader) {
	p.EncryptionKey = r.Vec()
	p.ParentHash = r.Vec()
	s := r.Sub()
	if s.Len()%4 != 0 {
		s.Fail("unmerged leaves vector of %d bytes", s.Len())
	}
	for s.Len() > 0 && s.Err() == nil {
		p.UnmergedLeaves = append(p.UnmergedLeaves, s.U32())
	}
	r.Join(s)
}

func (p *ParentNode) clone() *ParentNode {
	c := *p
	c.UnmergedLeaves = slices.Clone(p.UnmergedLeaves)
	return &c
}

// node is one slot of the array tree; both fields nil means blank.
type node struct {
	leaf   *LeafNode
	parent *ParentNode
}

func (n node) blank() bool { return n.leaf == nil && n.parent == nil }

func (n node) encryptionKey() []byte {
	if n.leaf != nil {
		return n.leaf.EncryptionKey
	}
	if n.parent != nil {
		return n.parent.EncryptionKey
	}
	return nil
}

// RatchetTree is the public state of the group's tree. It always has a
// power-of-two number of leaves.
type RatchetTree struct {
	nodes []node
}

// numLeaves returns the leaf count.
func (t *RatchetTree) numLeaves() uint32 { return uint32(len(t.nodes)+1) / 2 }

// Leaf returns the leaf node at index i, or nil if blank or out of range.
func (t *RatchetTree) Leaf(i uint32) *LeafNode {
	if x := leafNode(i); x < uint32(len(t.nodes)) {
		return t.nodes[x].leaf
	}
	return nil
}

func (t *RatchetTree) clone() *RatchetTree {
	c := &RatchetTree{nodes: make([]node, len(t.nodes))}
	for i, n := range t.nodes {
		if n.leaf != nil {
			l := *n.leaf
			c.nodes[i].leaf = &l
		}
		if n.parent != nil {
			c.nodes[i].parent = n.parent.clone()
		}
	}
	return c
}

// Marshal encodes the tree as the ratchet_tree extension body, trailing
// blank nodes removed.
func (t *RatchetTree) Marshal() []byte {
	end := len(t.nodes)
	for end > 0 && t.nodes[end-1].blank() {
		end--
	}
	var w Writer
	w.VecFunc(func(w *Writer) {
		for _, n := range t.nodes[:end] {
			switch {
			case n.leaf != nil:
				w.U8(1)
				w.U8(1)
				n.leaf.encode(w)
			case n.parent != nil:
				w.U8(1)
				w.U8(2)
				n.parent.encode(w)
			default:
				w.U8(0)
			}
		}
	})
	return w.Bytes()
}

// UnmarshalRatchetTree decodes a ratchet_tree extension body. Node types
// must match their positions (leaves at even indices) and the last node
// must not be blank.
func UnmarshalRatchetTree(b []byte) (*RatchetTree, error) {
	r := NewReader(b)
	s := r.Sub()
	var nodes []node
	for s.Len() > 0 && s.Err() == nil {
		var n node
		if s.Optional() {
			switch typ := s.U8(); typ {
			case 1:
				if len(nodes)%2 != 0 {
					s.Fail("leaf node at parent position %d", len(nodes))
				}
				n.leaf = new(LeafNode)
				n.leaf.decode(s)
			case 2:
				if len(nodes)%2 != 1 {
					s.Fail("parent node at leaf position %d", len(nodes))
				}
				n.parent = new(ParentNode)
				n.parent.decode(s)
			default:
				s.Fail("node type %d", typ)
			}
		}
		nodes = append(nodes, n)
	}
	r.Join(s)
	if err := r.Done(); err != nil {
		return nil, err
	}
	if len(nodes) == 0 || nodes[len(nodes)-1].blank() {
		return nil, fmt.Errorf("%w: ratchet tree empty or ends in a blank node", ErrMalformed)
	}
	leaves := uint32(1)
	for nodeWidth(leaves) < uint32(len(nodes)) {
		leaves *= 2
	}
	full := make([]node, nodeWidth(leaves))
	copy(full, nodes)
	return &RatchetTree{nodes: full}, nil
}

// resolution returns the resolution of node x (RFC 9420 §4.1.1).
func (t *RatchetTree) resolution(x uint32, exclude map[uint32]bool) []uint32 {
	n := t.nodes[x]
	if n.leaf != nil {
		if exclude[x/2] {
			return nil
		}
		return []uint32{x}
	}
	if n.parent != nil {
		out := []uint32{x}
		for _, u := range n.parent.UnmergedLeaves {
			if !exclude[u] {
				out = append(out, leafNode(u))
			}
		}
		return out
	}
	if level(x) == 0 {
		return nil
	}
	return append(t.resolution(leftChild(x), exclude), t.resolution(rightChild(x), exclude)...)
}

// treeHash computes the tree hash of the subtree at x, treating leaves in
// removed as blank and dropping them from unmerged-leaf lists.
func (t *RatchetTree) treeHash(x uint32, removed map[uint32]bool) []byte {
	var w Writer
	n := t.nodes[x]
	if level(x) == 0 {
		w.U8(1)
		w.U32(x / 2)
		present := n.leaf != nil && !removed[x/2]
		w.Optional(present)
		if present {
			n.leaf.encode(&w)
		}
		return hash(w.Bytes())
	}
	left := t.treeHash(leftChild(x), removed)
	right := t.treeHash(rightChild(x), removed)
	w.U8(2)
	w.Optional(n.parent != nil)
	if n.parent != nil {
		p := *n.parent
		if len(removed) > 0 {
			p.UnmergedLeaves = slices.DeleteFunc(slices.Clone(p.UnmergedLeaves), func(u uint32) bool { return removed[u] })
		}
		p.encode(&w)
	}
	w.Vec(left)
	w.Vec(right)
	return hash(w.Bytes())
}

// TreeHash returns the hash of the whole tree.
func (t *RatchetTree) TreeHash() []byte { return t.treeHash(rootOf(t.numLeaves()), nil) }

// parentHashOf computes the parent hash that a child of p carries, where s
// is p's other child (RFC 9420 §7.9).
func (t *RatchetTree) parentHashOf(p, s uint32) []byte {
	pn := t.nodes[p].parent
	var removed map[uint32]bool
	if len(pn.UnmergedLeaves) > 0 {
		removed = map[uint32]bool{}
		for _, u := range pn.UnmergedLeaves {
			removed[u] = true
		}
	}
	var w Writer
	w.Vec(pn.EncryptionKey)
	w.Vec(pn.ParentHash)
	w.Vec(t.treeHash(s, removed))
	return hash(w.Bytes())
}

func (t *RatchetTree) nodeParentHash(x uint32) []byte {
	n := t.nodes[x]
	if n.leaf != nil {
		if n.leaf.Source == LeafSourceCommit {
			return n.leaf.ParentHash
		}
		return nil
	}
	if n.parent != nil {
		return n.parent.ParentHash
	}
	return nil
}

// verifyParentHashes checks that every non-blank parent node is
// parent-hash valid (RFC 9420 §7.9.2).
func (t *RatchetTree) verifyParentHashes() error {
	for x := uint32(1); x < uint32(len(t.nodes)); x += 2 {
		pn := t.nodes[x].parent
		if pn == nil {
			continue
		}
		valid := false
		for _, pair := range [][2]uint32{{leftChild(x), rightChild(x)}, {rightChild(x), leftChild(x)}} {
			c, s := pair[0], pair[1]
			ph := t.parentHashOf(x, s)
			for _, d := range t.resolution(c, nil) {
				if t.nodes[d].blank() || !bytes.Equal(t.nodeParentHash(d), ph) {
					continue
				}
				// The unmerged leaves of x under c must be exactly the
				// resolution of c without d.
				var want []uint32
				for _, u := range pn.UnmergedLeaves {
					if isAncestor(c, leafNode(u)) {
						want = append(want, leafNode(u))
					}
				}
				got := slices.DeleteFunc(t.resolution(c, nil), func(y uint32) bool { return y == d })
				slices.Sort(want)
				slices.Sort(got)
				if slices.Equal(want, got) {
					valid = true
				}
			}
		}
		if !valid {
			return errorf("parent node %d is not parent-hash valid", x)
		}
	}
	return nil
}

// verify performs the structural checks a joiner or committer applies to a
// tree (RFC 9420 §12.4.3.1): tree hash, parent hashes, leaf signatures,
// unique keys and unmerged-leaf consistency.
func (t *RatchetTree) verify(groupID []byte, treeHash []byte) error {
	if treeHash != nil && !bytes.Equal(t.TreeHash(), treeHash) {
		return errorf("tree hash does not match the group context")
	}
	if err := t.verifyParentHashes(); err != nil {
		return err
	}
	encKeys := map[string]bool{}
	sigKeys := map[string]bool{}
	for x := uint32(0); x < uint32(len(t.nodes)); x++ {
		n := t.nodes[x]
		if k := n.encryptionKey(); k != nil {
			if encKeys[string(k)] {
				return errorf("encryption key repeated at node %d", x)
			}
			encKeys[string(k)] = true
		}
		if n.leaf != nil {
			if sigKeys[string(n.leaf.SignatureKey)] {
				return errorf("signature key repeated at leaf %d", x/2)
			}
			sigKeys[string(n.leaf.SignatureKey)] = true
			if err := n.leaf.verify(groupID, x/2); err != nil {
				return fmt.Errorf("leaf %d: %w", x/2, err)
			}
		}
		if n.parent != nil {
			for _, u := range n.parent.UnmergedLeaves {
				l := leafNode(u)
				if l >= uint32(len(t.nodes)) || !isAncestor(x, l) || t.nodes[l].leaf == nil {
					return errorf("parent node %d lists bad unmerged leaf %d", x, u)
				}
				// Every intermediate non-blank parent must also list it.
				for y := parentOf(l); y != x; y = parentOf(y) {
					if p := t.nodes[y].parent; p != nil && !slices.Contains(p.UnmergedLeaves, u) {
						return errorf("unmerged leaf %d of node %d missing at node %d", u, x, y)
					}
				}
			}
		}
	}
	return nil
}

// findLeaf returns the index of the leaf equal to l.
func (t *RatchetTree) findLeaf(l *LeafNode) (uint32, bool) {
	want := l.Marshal()
	for i := uint32(0); i < t.numLeaves(); i++ {
		if x := t.Leaf(i); x != nil && bytes.Equal(x.Marshal(), want) {
			return i, true
		}
	}
	return 0, false
}

// addLeaf inserts l at the leftmost blank leaf (extending the tree if
// needed) and records it as unmerged in its direct path.
func (t *RatchetTree) addLeaf(l *LeafNode) uint32 {
	i := uint32(0)
	for ; i < t.numLeaves(); i++ {
		if t.nodes[leafNode(i)].blank() {
			break
		}
	}
	if i == t.numLeaves() {
		if len(t.nodes) == 0 {
			t.nodes = make([]node, 1)
		} else {
			t.nodes = append(t.nodes, make([]node, len(t.nodes)+1)...)
		}
	}
	t.nodes[leafNode(i)] = node{leaf: l}
	for _, p := range directPath(leafNode(i), t.numLeaves()) {
		if pn := t.nodes[p].parent; pn != nil {
			pn.UnmergedLeaves = append(pn.UnmergedLeaves, i)
		}
	}
	return i
}

// removeLeaf blanks leaf i and its direct path, then truncates the tree
// while its right half is blank.
func (t *RatchetTree) removeLeaf(i uint32) {
	t.nodes[leafNode(i)] = node{}
	for _, p := range directPath(leafNode(i), t.numLeaves()) {
		t.nodes[p] = node{}
	}
	t.truncate()
}

func (t *RatchetTree) truncate() {
	for len(t.nodes) > 1 {
		half := (len(t.nodes) + 1) / 2
		for _, n := range t.nodes[half-1:] {
			if !n.blank() {
				return
			}
		}
		t.nodes = t.nodes[:half-1]
	}
}

// blankPath blanks the direct path of leaf i.
func (t *RatchetTree) blankPath(i uint32) {
	for _, p := range directPath(leafNode(i), t.numLeaves()) {
		t.nodes[p] = node{}
	}
}

// filteredDirectPath returns the direct-path nodes of leaf i whose copath
// child has a non-empty resolution, paired with those copath children.
func (t *RatchetTree) filteredDirectPath(i uint32, exclude map[uint32]bool) (path, cop []uint32) {
	n := t.numLeaves()
	dp := directPath(leafNode(i), n)
	cp := copath(leafNode(i), n)
	for k := range dp {
		if len(t.resolution(cp[k], exclude)) > 0 {
			path = append(path, dp[k])
			cop = append(cop, cp[k])
		}
	}
	return path, cop
}
