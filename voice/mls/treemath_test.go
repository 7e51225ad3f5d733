package mls

import "testing"

type treeMathCase struct {
	NLeaves uint32    `json:"n_leaves"`
	NNodes  uint32    `json:"n_nodes"`
	Root    uint32    `json:"root"`
	Left    []*uint32 `json:"left"`
	Right   []*uint32 `json:"right"`
	Parent  []*uint32 `json:"parent"`
	Sibling []*uint32 `json:"sibling"`
}

func conformanceTreeMath(t *testing.T) {
	var cases []treeMathCase
	loadVectors(t, "tree-math.json", &cases)
	var st tally
	for i, c := range cases {
		ok := true
		fail := func(f string, a ...any) { ok = false; t.Errorf("case %d: "+f, append([]any{i}, a...)...) }
		if w := nodeWidth(c.NLeaves); w != c.NNodes {
			fail("width %d, want %d", w, c.NNodes)
		}
		if r := rootOf(c.NLeaves); r != c.Root {
			fail("root %d, want %d", r, c.Root)
		}
		root := rootOf(c.NLeaves)
		for x := uint32(0); x < c.NNodes; x++ {
			var l, r, p, s *uint32
			if level(x) > 0 {
				lv, rv := leftChild(x), rightChild(x)
				l, r = &lv, &rv
			}
			if x != root {
				pv, sv := parentOf(x), siblingOf(x)
				p, s = &pv, &sv
			}
			for _, cmp := range []struct {
				name      string
				got, want *uint32
			}{{"left", l, c.Left[x]}, {"right", r, c.Right[x]}, {"parent", p, c.Parent[x]}, {"sibling", s, c.Sibling[x]}} {
				if (cmp.got == nil) != (cmp.want == nil) || (cmp.got != nil && *cmp.got != *cmp.want) {
					fail("node %d %s = %v, want %v", x, cmp.name, deref(cmp.got), deref(cmp.want))
				}
			}
		}
		st.record(ok)
	}
	st.report(t, "tree-math.json")
}

func deref(p *uint32) any {
	if p == nil {
		return nil
	}
	return *p
}
