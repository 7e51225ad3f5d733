package mls

// Array-tree arithmetic (RFC 9420 Appendix C). Nodes are numbered left to
// right; leaves have even indices, parents odd ones. The tree always has a
// power-of-two number of leaves.

// nodeWidth returns the number of nodes of a tree with n leaves.
func nodeWidth(n uint32) uint32 {
	if n == 0 {
		return 0
	}
	return 2*(n-1) + 1
}

// level returns the height of node x above the leaves.
func level(x uint32) uint32 {
	if x&1 == 0 {
		return 0
	}
	k := uint32(0)
	for (x>>k)&1 == 1 {
		k++
	}
	return k
}

// rootOf returns the root of a tree with n leaves (n ≥ 1).
func rootOf(n uint32) uint32 {
	w := nodeWidth(n)
	return (uint32(1) << log2(w)) - 1
}

func log2(x uint32) uint32 {
	if x == 0 {
		return 0
	}
	k := uint32(0)
	for (x >> k) > 0 {
		k++
	}
	return k - 1
}

// leftChild returns the left child of parent x.
func leftChild(x uint32) uint32 {
	k := level(x)
	return x ^ (1 << (k - 1))
}

// rightChild returns the right child of parent x.
func rightChild(x uint32) uint32 {
	k := level(x)
	return x ^ (3 << (k - 1))
}

// parentOf returns the parent of non-root node x.
func parentOf(x uint32) uint32 {
	k := level(x)
	b := (x >> (k + 1)) & 1
	return (x | (1 << k)) ^ (b << (k + 1))
}

// siblingOf returns the other child of x's parent.
func siblingOf(x uint32) uint32 {
	p := parentOf(x)
	if x < p {
		return rightChild(p)
	}
	return leftChild(p)
}

// directPath returns the parents of x from its parent up to the root of a
// tree with n leaves.
func directPath(x, n uint32) []uint32 {
	r := rootOf(n)
	var d []uint32
	for x != r {
		x = parentOf(x)
		d = append(d, x)
	}
	return d
}

// copath returns the siblings of x and of each node of its direct path
// except the root.
func copath(x, n uint32) []uint32 {
	r := rootOf(n)
	var c []uint32
	for x != r {
		c = append(c, siblingOf(x))
		x = parentOf(x)
	}
	return c
}

// isAncestor reports whether a is an ancestor of (or equal to) x.
func isAncestor(a, x uint32) bool {
	la := level(a)
	return x>>(la+1) == a>>(la+1)
}

// commonAncestor returns the lowest common ancestor of nodes x and y.
func commonAncestor(x, y uint32) uint32 {
	lx, ly := level(x)+1, level(y)+1
	if lx <= ly && x>>ly == y>>ly {
		return y
	}
	if ly <= lx && x>>lx == y>>lx {
		return x
	}
	xn, yn := x, y
	k := uint32(0)
	for xn != yn {
		xn >>= 1
		yn >>= 1
		k++
	}
	return (xn << k) + (1 << (k - 1)) - 1
}

func leafNode(leaf uint32) uint32 { return 2 * leaf }
