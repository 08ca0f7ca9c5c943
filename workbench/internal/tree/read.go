package tree

import (
	"bytes"
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// Source reads nodes by name.
type Source interface {
	// Node returns the node named hash, decoded and checked against its
	// hash, and its content digest.
	Node(ctx context.Context, hash digest.Hash) (*Node, [32]byte, int, error)
}

// loadConcurrency bounds the nodes one reader fetches at once.
const loadConcurrency = 16

// load reads the node ref names and checks it against ref, and its level
// against level (-1: any).
func load(ctx context.Context, src Source, ref Ref, level int) (*Node, error) {
	n, d, size, err := src.Node(ctx, ref.Hash)
	if err != nil {
		return nil, err
	}
	if err := check(n, d, size, ref, level); err != nil {
		return nil, err
	}
	return n, nil
}

// loadIn reads the child entry e names, at level, and checks it against
// e: its first key is e's key, and its last key is below hi (nil: no
// bound), the next entry's key.
func loadIn(ctx context.Context, src Source, e Entry, hi []byte, level int) (*Node, error) {
	n, err := load(ctx, src, e.Child, level)
	if err != nil {
		return nil, err
	}
	first, last := n.Entries[0].Key, n.Entries[len(n.Entries)-1].Key
	if !bytes.Equal(first, e.Key) || hi != nil && bytes.Compare(last, hi) >= 0 {
		return nil, fmt.Errorf("tree: node %s holds keys outside the range its parent gives it: %w", e.Child.Hash, bucket.ErrIntegrity)
	}
	return n, nil
}

// loadAll reads the children entries name, all at level, in parallel,
// with loadIn's checks; hi bounds the last one's keys.
func loadAll(ctx context.Context, src Source, entries []Entry, hi []byte, level int) ([]*Node, error) {
	nodes := make([]*Node, len(entries))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(loadConcurrency)
	for i, e := range entries {
		next := hi
		if i+1 < len(entries) {
			next = entries[i+1].Key
		}
		g.Go(func() error {
			n, err := loadIn(gctx, src, e, next, level)
			nodes[i] = n
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return nodes, nil
}

// Leaves returns the leaves of the tree root as entries (each leaf's
// first key and reference), in key order, reading every inner node.
func Leaves(ctx context.Context, src Source, root Ref) ([]Entry, error) {
	if root.IsEmpty() {
		return nil, nil
	}
	return spine(ctx, src, root, map[int]map[[32]byte]Ref{}, nil)
}

// Walk calls fn with every entry of the tree root in key order, reading
// the leaves loadConcurrency at a time. fn must not keep the slices.
func Walk(ctx context.Context, src Source, root Ref, fn func(key, value []byte) error) error {
	leaves, err := Leaves(ctx, src, root)
	if err != nil {
		return err
	}
	for start := 0; start < len(leaves); start += loadConcurrency {
		end := min(start+loadConcurrency, len(leaves))
		var hi []byte
		if end < len(leaves) {
			hi = leaves[end].Key
		}
		nodes, err := loadAll(ctx, src, leaves[start:end], hi, 0)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			for _, e := range n.Entries {
				if err := fn(e.Key, e.Value); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Get returns the value of key in the tree root, reading one node per
// level.
func Get(ctx context.Context, src Source, root Ref, key []byte) ([]byte, bool, error) {
	if root.IsEmpty() {
		return nil, false, nil
	}
	n, err := load(ctx, src, root, -1)
	if err != nil {
		return nil, false, err
	}
	var hi []byte
	for n.Level > 0 {
		i := len(n.Entries) - 1
		for i > 0 && bytes.Compare(n.Entries[i].Key, key) > 0 {
			i--
		}
		if i+1 < len(n.Entries) {
			hi = n.Entries[i+1].Key
		}
		if n, err = loadIn(ctx, src, n.Entries[i], hi, int(n.Level)-1); err != nil {
			return nil, false, err
		}
	}
	for _, e := range n.Entries {
		if bytes.Equal(e.Key, key) {
			return e.Value, true, nil
		}
	}
	return nil, false, nil
}

// Objects is a Source over a bucket: node hash h is the object prefix+h,
// and decoded nodes are cached by hash.
type Objects struct {
	Bucket bucket.Bucket
	Prefix string
	Cache  *shards.Cache[*Cached]
}

// Cached is a decoded node as Objects caches it.
type Cached struct {
	Node   *Node
	Digest [32]byte
	Size   int
}

// NewCache returns a cache of decoded nodes of at most budget bytes.
func NewCache(budget int64) *shards.Cache[*Cached] {
	return shards.NewCache(budget, (*Cached).memSize)
}

// memSize estimates the memory a cached node holds: its stored bytes, the
// entries' keys and values (the stored bytes themselves when the node is
// plain, the bytes within when compressed) and their headers.
func (c *Cached) memSize() int64 {
	n := int64(c.Size)
	for _, e := range c.Node.Entries {
		n += int64(len(e.Key)+len(e.Value)) + 96
	}
	return n
}

// Key returns the object key of node h.
func (o *Objects) Key(h digest.Hash) string { return o.Prefix + h.String() }

// Node implements Source.
func (o *Objects) Node(ctx context.Context, h digest.Hash) (*Node, [32]byte, int, error) {
	decode := func(b []byte) (*Cached, error) {
		n, d, err := Decode(b, h)
		if err != nil {
			return nil, err
		}
		return &Cached{Node: n, Digest: d, Size: len(b)}, nil
	}
	fetch := func(ctx context.Context) ([]byte, error) {
		b, _, err := o.Bucket.Get(ctx, o.Key(h))
		if err != nil {
			return nil, fmt.Errorf("tree: get node %s: %w", h, err)
		}
		return b, nil
	}
	var c *Cached
	var err error
	if o.Cache != nil {
		c, err = o.Cache.Load(ctx, h, fetch, decode)
	} else {
		var b []byte
		if b, err = fetch(ctx); err == nil {
			c, err = decode(b)
		}
	}
	if err != nil {
		return nil, [32]byte{}, 0, err
	}
	return c.Node, c.Digest, c.Size, nil
}

// Changed returns the leaves of tree a that tree b does not share (by
// content digest) and the leaves of b that a does not, each in key
// order. It descends both trees a level at a time into the subtrees the
// other does not share: a subtree both hold has the same digest at the
// same level in both, and no tree holds a subtree twice (its keys are
// ascending), so it reads the inner nodes on the paths to the changes,
// not every inner node.
func Changed(ctx context.Context, src Source, a, b Ref) (onlyA, onlyB []Entry, err error) {
	la, err := rootSpan(ctx, src, a)
	if err != nil {
		return nil, nil, err
	}
	lb, err := rootSpan(ctx, src, b)
	if err != nil {
		return nil, nil, err
	}
	for {
		// Bring both to one level, the higher one first.
		switch {
		case la.level > lb.level:
			if la, err = la.children(ctx, src); err != nil {
				return nil, nil, err
			}
			continue
		case lb.level > la.level:
			if lb, err = lb.children(ctx, src); err != nil {
				return nil, nil, err
			}
			continue
		}
		la, lb = la.without(lb), lb.without(la)
		if la.level <= 0 {
			return la.entries(), lb.entries(), nil
		}
		if la, err = la.children(ctx, src); err != nil {
			return nil, nil, err
		}
		if lb, err = lb.children(ctx, src); err != nil {
			return nil, nil, err
		}
	}
}

// spans are entries of one level of a tree, in key order, each with the
// bound its parent gives its keys (the next sibling's key; nil: none).
type spans struct {
	level int // of the nodes the entries name; -1: no entries
	items []span
}

type span struct {
	e  Entry
	hi []byte
}

// rootSpan returns the spans of tree r's root.
func rootSpan(ctx context.Context, src Source, r Ref) (spans, error) {
	if r.IsEmpty() {
		return spans{level: -1}, nil
	}
	n, err := load(ctx, src, r, -1)
	if err != nil {
		return spans{}, err
	}
	return spans{level: int(n.Level), items: []span{{e: Entry{Key: n.Entries[0].Key, Child: r}}}}, nil
}

// children reads the nodes s names and returns their entries, a level
// down.
func (s spans) children(ctx context.Context, src Source) (spans, error) {
	nodes := make([]*Node, len(s.items))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(loadConcurrency)
	for i, it := range s.items {
		g.Go(func() error {
			n, err := loadIn(gctx, src, it.e, it.hi, s.level)
			nodes[i] = n
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return spans{}, err
	}
	out := spans{level: s.level - 1}
	for i, n := range nodes {
		for j, e := range n.Entries {
			hi := s.items[i].hi
			if j+1 < len(n.Entries) {
				hi = n.Entries[j+1].Key
			}
			out.items = append(out.items, span{e: e, hi: hi})
		}
	}
	return out, nil
}

// without returns the spans of s whose content digest other's do not
// hold.
func (s spans) without(other spans) spans {
	in := make(map[[32]byte]bool, len(other.items))
	for _, it := range other.items {
		in[it.e.Child.Digest] = true
	}
	out := spans{level: s.level}
	for _, it := range s.items {
		if !in[it.e.Child.Digest] {
			out.items = append(out.items, it)
		}
	}
	return out
}

// entries returns the entries of s.
func (s spans) entries() []Entry {
	var out []Entry
	for _, it := range s.items {
		out = append(out, it.e)
	}
	return out
}

// LoadLeaves reads the leaves entries name (as Leaves or Changed give
// them), in parallel, each checked against its entry.
func LoadLeaves(ctx context.Context, src Source, entries []Entry) ([]*Node, error) {
	return loadAll(ctx, src, entries, nil, 0)
}

// Overlay is a Source that finds the nodes of objs, an edit's output not
// yet stored, before it asks src.
func Overlay(src Source, objs []Object) Source {
	m := make(map[digest.Hash]Object, len(objs))
	for _, o := range objs {
		m[o.Hash] = o
	}
	return overlay{src, m}
}

type overlay struct {
	src   Source
	nodes map[digest.Hash]Object
}

func (o overlay) Node(ctx context.Context, h digest.Hash) (*Node, [32]byte, int, error) {
	if obj, ok := o.nodes[h]; ok {
		return obj.Node, obj.Digest, len(obj.Body), nil
	}
	return o.src.Node(ctx, h)
}
