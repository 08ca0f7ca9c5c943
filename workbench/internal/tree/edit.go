package tree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// Where nodes end. A node closes after an entry whose key is a boundary
// at the node's level (about one key in fanout, decided by a hash of
// the level and the key alone), or once it holds maxNodeBytes. The
// boundaries are therefore a function of the entries, not of how the
// tree was edited: a tree holding the same entries has the same nodes
// and the same root digest, and an edit rewrites only the nodes whose
// entries changed, the nodes that end where a changed key decided, and
// their ancestors.
const fanout = 32

// boundary reports whether a node of level closes after key.
func boundary(level uint8, key []byte) bool {
	h := fnv.New64a()
	h.Write([]byte{level})
	h.Write(key)
	x := h.Sum64()
	// Mix the bits: FNV's low bits follow the last bytes too closely.
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	return x%fanout == 0
}

// Change is one change of an edit: a put of Value at Key, or a delete.
type Change struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// Object is a node an edit wrote: its name (the SHA-256 of Body), its
// bytes, and the node they encode with its content digest, so that a
// caller caches it without decoding it again. The caller stores it
// before anything names the new root.
type Object struct {
	Hash   digest.Hash
	Body   []byte
	Node   *Node
	Digest [32]byte
}

// ErrChanges: an edit's changes are not strictly ascending, or a key or
// value is out of bounds.
var ErrChanges = errors.New("tree: invalid changes")

// chunker cuts one level's entries into nodes.
type chunker struct {
	level uint8
	w     Writer
	cur   []Entry
	bytes int
	out   []Entry // one entry per closed node, for the level above
	reuse map[[32]byte]Ref
	first map[digest.Hash]baseNode // the old inner nodes of this level, by first child
	objs  *[]Object
}

// baseNode is an inner node of the tree an edit starts from: its
// reference and its entries.
type baseNode struct {
	ref     Ref
	entries []Entry
}

// sameChildren reports whether a and b name the same children under the
// same keys: an inner node of b's entries is the node of a's, found
// without encoding it.
func sameChildren(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool { return x.Child == y.Child && bytes.Equal(x.Key, y.Key) })
}

func (c *chunker) add(e Entry) {
	c.cur = append(c.cur, e)
	c.bytes += len(e.Key) + len(e.Value) + 80
	if boundary(c.level, e.Key) || c.bytes >= maxNodeBytes {
		c.close()
	}
}

// open reports whether the chunker holds a node not yet closed.
func (c *chunker) open() bool { return len(c.cur) > 0 }

// close ends the current node: one reused when a node of the old tree
// had the same entries, else a new object.
func (c *chunker) close() {
	if len(c.cur) == 0 {
		return
	}
	if b, ok := c.first[c.cur[0].Child.Hash]; ok && c.level > 0 && sameChildren(b.entries, c.cur) {
		// An inner node of the old tree, untouched: no need to encode it
		// to find it by digest.
		c.out = append(c.out, Entry{Key: c.cur[0].Key, Child: b.ref})
		c.cur, c.bytes = c.cur[:0], 0
		return
	}
	n := &Node{Level: c.level, Entries: c.cur}
	body, d := n.encode(c.w.Salt)
	ref, ok := c.reuse[d]
	if !ok {
		// Only a node written is compressed: most of the nodes an edit or
		// a rebuild closes are the old tree's, found by digest.
		if c.w.Compress {
			body = shards.Compress(body)
		}
		ref = Ref{Hash: digest.Sum(body), Digest: d, Count: n.count(), Size: uint64(len(body))}
		*c.objs = append(*c.objs, Object{Hash: ref.Hash, Body: body, Node: n, Digest: d})
		if c.reuse != nil {
			c.reuse[d] = ref // an edit that makes the same node twice writes it once
		}
	}
	c.out = append(c.out, Entry{Key: c.cur[0].Key, Child: ref})
	c.cur, c.bytes = nil, 0
}

// Build returns the tree of entries (strictly ascending keys) and the
// nodes to store, salted with salt.
func Build(entries []Entry, salt [16]byte) (Ref, []Object, error) {
	changes := make([]Change, len(entries))
	for i, e := range entries {
		changes[i] = Change{Key: e.Key, Value: e.Value}
	}
	return Edit(context.Background(), nil, Ref{}, changes, salt)
}

// Edit applies changes (strictly ascending by key) to the tree base,
// read through src, and returns the new tree and the nodes it wrote,
// salted with salt. It reads the nodes the changes fall in (and any a
// moved boundary spills into) and their ancestors (region.go). A delete
// of a key base lacks changes nothing. The new tree may name any
// node of base: a caller reuses a base only if it may reference base's
// nodes.
func Edit(ctx context.Context, src Source, base Ref, changes []Change, salt [16]byte) (Ref, []Object, error) {
	return Writer{Salt: salt}.Edit(ctx, src, base, changes)
}

// Writer says how an edit writes its nodes: salted with Salt, and kept as
// compressed objects (shards.Compress) when Compress is set and that
// makes them smaller. A node's name, its parent's size for it and its
// reference are those of the bytes stored; its content digest is the
// same either way.
type Writer struct {
	Salt     [16]byte
	Compress bool
}

// Edit is the package's Edit, writing nodes as w says.
func (w Writer) Edit(ctx context.Context, src Source, base Ref, changes []Change) (Ref, []Object, error) {
	if err := checkChanges(changes); err != nil {
		return Ref{}, nil, err
	}
	return editPath(ctx, src, base, changes, w)
}

// Rebuild returns the tree of entries (strictly ascending keys), as
// Build does, but names every node of base whose entries it would
// write again instead of writing it: it reads base's inner nodes, and
// writes only the nodes whose entries changed. Like Edit, it costs the
// caller the right to reference base's nodes.
func Rebuild(ctx context.Context, src Source, base Ref, entries []Entry, salt [16]byte) (Ref, []Object, error) {
	return Writer{Salt: salt}.Rebuild(ctx, src, base, entries)
}

// Rebuild is the package's Rebuild, writing nodes as w says.
func (w Writer) Rebuild(ctx context.Context, src Source, base Ref, entries []Entry) (Ref, []Object, error) {
	changes := make([]Change, len(entries))
	for i, e := range entries {
		changes[i] = Change{Key: e.Key, Value: e.Value}
	}
	if err := checkChanges(changes); err != nil {
		return Ref{}, nil, err
	}
	reuse := map[int]map[[32]byte]Ref{0: {}}
	first := map[int]map[digest.Hash]baseNode{}
	if !base.IsEmpty() {
		leaves, err := spine(ctx, src, base, reuse, first)
		if err != nil {
			return Ref{}, nil, err
		}
		for _, l := range leaves {
			reuse[0][l.Child.Digest] = l.Child
		}
	}
	var objs []Object
	c := &chunker{level: 0, w: w, reuse: reuse[0], objs: &objs}
	for _, e := range entries {
		c.add(Entry{Key: e.Key, Value: e.Value})
	}
	c.close()
	return upper(c.out, w, reuse, first, &objs)
}

// upper builds the inner levels above level, the entries of level 1,
// reusing the nodes in reuse and first by level, and returns the root.
func upper(level []Entry, w Writer, reuse map[int]map[[32]byte]Ref, first map[int]map[digest.Hash]baseNode, objs *[]Object) (Ref, []Object, error) {
	for l := uint8(1); len(level) > 1; l++ {
		if l > MaxLevel {
			return Ref{}, nil, fmt.Errorf("tree: more than %d levels", MaxLevel)
		}
		up := &chunker{level: l, w: w, reuse: reuse[int(l)], first: first[int(l)], objs: objs}
		if up.reuse == nil {
			up.reuse = map[[32]byte]Ref{}
		}
		for _, e := range level {
			up.add(e)
		}
		up.close()
		level = up.out
	}
	if len(level) == 0 {
		return Ref{}, *objs, nil
	}
	return level[0].Child, *objs, nil
}

// sortSearch returns the number of changes with keys below key.
func sortSearch(changes []Change, key []byte) int {
	i, _ := slices.BinarySearchFunc(changes, key, func(c Change, k []byte) int { return bytes.Compare(c.Key, k) })
	return i
}

// merge feeds emit the entries of old (ascending) with changes applied.
func merge(old []Entry, changes []Change, emit func(Entry)) {
	i, j := 0, 0
	for i < len(old) || j < len(changes) {
		switch {
		case j == len(changes) || i < len(old) && bytes.Compare(old[i].Key, changes[j].Key) < 0:
			emit(Entry{Key: old[i].Key, Value: old[i].Value})
			i++
		default:
			ch := changes[j]
			if i < len(old) && bytes.Equal(old[i].Key, ch.Key) {
				i++
			}
			if !ch.Delete {
				emit(Entry{Key: ch.Key, Value: ch.Value})
			}
			j++
		}
	}
}

func checkChanges(changes []Change) error {
	for i, ch := range changes {
		switch {
		case len(ch.Key) == 0 || len(ch.Key) > MaxKeyBytes:
			return fmt.Errorf("%w: change %d: key of %d bytes", ErrChanges, i, len(ch.Key))
		case len(ch.Value) > MaxValueBytes:
			return fmt.Errorf("%w: change %d: value of %d bytes", ErrChanges, i, len(ch.Value))
		case ch.Delete && ch.Value != nil:
			return fmt.Errorf("%w: change %d: a delete with a value", ErrChanges, i)
		case i > 0 && bytes.Compare(changes[i-1].Key, ch.Key) >= 0:
			return fmt.Errorf("%w: change %d: keys not strictly ascending", ErrChanges, i)
		}
	}
	return nil
}

// spine reads every inner node of the tree root and returns its leaves
// as entries of level 1, in key order. It records each inner node it
// read by content digest, per level, in reuse, and by its first child's
// hash in first (when not nil).
func spine(ctx context.Context, src Source, root Ref, reuse map[int]map[[32]byte]Ref, first map[int]map[digest.Hash]baseNode) ([]Entry, error) {
	n, err := load(ctx, src, root, -1)
	if err != nil {
		return nil, err
	}
	if n.Level == 0 {
		return []Entry{{Key: n.Entries[0].Key, Child: root}}, nil
	}
	level := []Entry{{Key: n.Entries[0].Key, Child: root}}
	for l := int(n.Level); l > 0; l-- {
		nodes, err := loadAll(ctx, src, level, nil, l)
		if err != nil {
			return nil, err
		}
		if reuse[l] == nil {
			reuse[l] = map[[32]byte]Ref{}
		}
		if first != nil && first[l] == nil {
			first[l] = map[digest.Hash]baseNode{}
		}
		size := 0
		for _, node := range nodes {
			size += len(node.Entries)
		}
		next := make([]Entry, 0, size)
		for i, node := range nodes {
			reuse[l][level[i].Child.Digest] = level[i].Child
			if first != nil {
				first[l][node.Entries[0].Child.Hash] = baseNode{ref: level[i].Child, entries: node.Entries}
			}
			next = append(next, node.Entries...)
		}
		level = next
	}
	return level, nil
}
