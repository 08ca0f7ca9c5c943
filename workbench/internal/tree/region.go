package tree

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/bucket/digest"
)

// How an edit finds what it rewrites. A level's nodes are cut where the
// chunker closes them, and the chunker's state is empty after every
// close, so an edit that re-cuts a level from the start of a node that
// holds a change, through the changed nodes, and stops where it closes at
// the end of an old node, cuts everything after that point as the old
// tree did. Each such run of old nodes (a region) becomes new nodes, and
// the level above changes by their entries: the old nodes' entries go,
// the new ones come. Levels are edited from the leaves up, each reading
// only the nodes its regions cover and their ancestors, so an edit of k
// keys reads and writes O(k log n) nodes, not every inner node.

// op is a change to the entries of one level: an entry of a leaf (a key
// and value) or of an inner node (a key and a child), put or deleted.
type op struct {
	e   Entry
	del bool
}

// editRegions applies ops (strictly ascending by key) to the nodes of
// level, below the root node root of the given level, and returns the
// ops the level above takes: a delete of the entry of every old node it
// rewrote and a put of the entry of every new node.
func (ed *editor) editRegions(ctx context.Context, root *Node, rootRef Ref, level int, ops []op) ([]op, error) {
	var up []op
	for i := 0; i < len(ops); {
		cur := &cursor{src: ed.src, level: level}
		if err := cur.seek(ctx, root, rootRef, ops[i].e.Key); err != nil {
			return nil, err
		}
		c := &chunker{level: uint8(level), w: ed.w, reuse: map[[32]byte]Ref{}, objs: ed.objs}
		for {
			n, entry, hi := cur.node, cur.entry(), cur.hi()
			c.reuse[entry.Child.Digest] = entry.Child // the same node cut again is named the same
			j := len(ops)
			if hi != nil {
				j = i + opsBelow(ops[i:], hi)
			}
			mergeOps(n.Entries, ops[i:j], c.add)
			i = j
			up = append(up, op{e: Entry{Key: entry.Key}, del: true})
			if !c.open() {
				break // closed at this old node's end: the rest is cut as before
			}
			more, err := cur.next(ctx)
			if err != nil {
				return nil, err
			}
			if !more {
				c.close()
				break
			}
		}
		for _, e := range c.out {
			up = append(up, op{e: e})
		}
	}
	return normalize(up), nil
}

// normalize sorts ops by key and keeps one op a key: a put over a delete
// (a node rewritten under the key of one it replaced).
func normalize(ops []op) []op {
	slices.SortStableFunc(ops, func(a, b op) int { return bytes.Compare(a.e.Key, b.e.Key) })
	out := ops[:0]
	for _, o := range ops {
		if n := len(out); n > 0 && bytes.Equal(out[n-1].e.Key, o.e.Key) {
			if !o.del {
				out[n-1] = o
			}
			continue
		}
		out = append(out, o)
	}
	return out
}

// opsBelow returns the number of ops with keys below key.
func opsBelow(ops []op, key []byte) int {
	i, _ := slices.BinarySearchFunc(ops, key, func(o op, k []byte) int { return bytes.Compare(o.e.Key, k) })
	return i
}

// mergeOps feeds emit the entries of old (ascending) with ops applied.
func mergeOps(old []Entry, ops []op, emit func(Entry)) {
	i, j := 0, 0
	for i < len(old) || j < len(ops) {
		switch {
		case j == len(ops) || i < len(old) && bytes.Compare(old[i].Key, ops[j].e.Key) < 0:
			emit(old[i])
			i++
		default:
			if i < len(old) && bytes.Equal(old[i].Key, ops[j].e.Key) {
				i++
			}
			if !ops[j].del {
				emit(ops[j].e)
			}
			j++
		}
	}
}

// editor is one Edit: where it reads nodes and what it writes.
type editor struct {
	src  Source
	w    Writer
	objs *[]Object
}

// cursor walks the nodes of one level of a tree in key order, keeping
// the path from the root to the current node.
type cursor struct {
	src   Source
	level int
	path  []frame // the root first; the last frame's chosen entry names node
	node  *Node
}

// frame is an inner node on a cursor's path, the entry chosen in it and
// the bound its parent gives its keys (nil: none).
type frame struct {
	n  *Node
	i  int
	hi []byte
}

// seek positions the cursor on the node of its level whose range holds
// key: the last node whose first key is at most key, or the first.
func (c *cursor) seek(ctx context.Context, root *Node, rootRef Ref, key []byte) error {
	c.path = c.path[:0]
	n := root
	for int(n.Level) > c.level {
		i, found := slices.BinarySearchFunc(n.Entries, key, func(e Entry, k []byte) int { return bytes.Compare(e.Key, k) })
		if !found {
			i = max(i-1, 0)
		}
		var hi []byte
		if len(c.path) > 0 {
			hi = c.path[len(c.path)-1].nextKey()
		}
		c.path = append(c.path, frame{n: n, i: i, hi: hi})
		child, err := c.load(ctx)
		if err != nil {
			return err
		}
		n = child
	}
	c.node = n
	return nil
}

// nextKey is the key that bounds the chosen entry's subtree: the next
// entry's, or the frame's own bound.
func (f frame) nextKey() []byte {
	if f.i+1 < len(f.n.Entries) {
		return f.n.Entries[f.i+1].Key
	}
	return f.hi
}

// load reads the node the last frame's chosen entry names.
func (c *cursor) load(ctx context.Context) (*Node, error) {
	f := c.path[len(c.path)-1]
	return loadIn(ctx, c.src, f.n.Entries[f.i], f.nextKey(), int(f.n.Level)-1)
}

// entry returns the current node's entry in its parent.
func (c *cursor) entry() Entry {
	f := c.path[len(c.path)-1]
	return f.n.Entries[f.i]
}

// hi returns the bound of the current node's keys: the next node's first
// key, or nil for the level's last node.
func (c *cursor) hi() []byte { return c.path[len(c.path)-1].nextKey() }

// next moves the cursor to the next node of its level and reports
// whether there is one.
func (c *cursor) next(ctx context.Context) (bool, error) {
	// Up to the lowest frame with an entry to the right, then down its
	// leftmost path.
	d := len(c.path) - 1
	for d >= 0 && c.path[d].i+1 >= len(c.path[d].n.Entries) {
		d--
	}
	if d < 0 {
		return false, nil
	}
	c.path[d].i++
	c.path = c.path[:d+1]
	for {
		n, err := c.load(ctx)
		if err != nil {
			return false, err
		}
		if int(n.Level) == c.level {
			c.node = n
			return true, nil
		}
		c.path = append(c.path, frame{n: n, i: 0, hi: c.path[len(c.path)-1].nextKey()})
	}
}

// editPath is Edit: it edits the levels below base's root region by
// region, then cuts the root's entries with the changes to the level
// below it applied, and builds up from there.
func editPath(ctx context.Context, src Source, base Ref, changes []Change, w Writer) (Ref, []Object, error) {
	var objs []Object
	ed := &editor{src: src, w: w, objs: &objs}
	ops := make([]op, len(changes))
	for i, ch := range changes {
		ops[i] = op{e: Entry{Key: ch.Key, Value: ch.Value}, del: ch.Delete}
	}
	var top []Entry
	level := 0
	if !base.IsEmpty() {
		root, err := load(ctx, src, base, -1)
		if err != nil {
			return Ref{}, nil, err
		}
		for level = 0; level < int(root.Level) && len(ops) > 0; level++ {
			if ops, err = ed.editRegions(ctx, root, base, level, ops); err != nil {
				return Ref{}, nil, err
			}
		}
		if len(ops) == 0 {
			return base, objs, nil // nothing changed
		}
		level = int(root.Level)
		mergeOps(root.Entries, ops, func(e Entry) { top = append(top, e) })
	} else {
		mergeOps(nil, ops, func(e Entry) { top = append(top, e) })
	}
	if len(top) == 0 {
		return Ref{}, objs, nil
	}
	var ref Ref
	if level > 0 && len(top) == 1 {
		ref = top[0].Child // the level below holds one node: it is the root
	} else {
		c := &chunker{level: uint8(level), w: w, reuse: map[[32]byte]Ref{base.Digest: base}, objs: &objs}
		for _, e := range top {
			c.add(e)
		}
		c.close()
		var err error
		if ref, _, err = upperFrom(level+1, c.out, w, &objs); err != nil {
			return Ref{}, nil, err
		}
	}
	// The root is the lowest level's only node: an inner root of one
	// entry gives way to its child, and the nodes given up are not
	// written.
	var dropped []digest.Hash
	over := Overlay(src, objs)
	for {
		n, err := load(ctx, over, ref, -1)
		if err != nil {
			return Ref{}, nil, err
		}
		if n.Level == 0 || len(n.Entries) > 1 {
			break
		}
		dropped = append(dropped, ref.Hash)
		ref = n.Entries[0].Child
	}
	objs = slices.DeleteFunc(objs, func(o Object) bool { return slices.Contains(dropped, o.Hash) })
	return ref, objs, nil
}

// errTooHigh: a tree would have more than MaxLevel levels.
var errTooHigh = fmt.Errorf("tree: more than %d levels", MaxLevel)

// upperFrom builds the inner levels from level l up over entries, the
// entries of level l, and returns the root.
func upperFrom(l int, level []Entry, w Writer, objs *[]Object) (Ref, []Object, error) {
	for ; len(level) > 1; l++ {
		if l > MaxLevel {
			return Ref{}, nil, errTooHigh
		}
		up := &chunker{level: uint8(l), w: w, reuse: map[[32]byte]Ref{}, objs: objs}
		for _, e := range level {
			up.add(e)
		}
		up.close()
		level = up.out
	}
	return level[0].Child, *objs, nil
}
