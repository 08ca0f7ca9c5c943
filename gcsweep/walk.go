package gcsweep

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Kind is the kind of an object a root reaches.
type Kind uint8

// Kinds of reachable objects.
const (
	KindRoot Kind = iota + 1
	KindTable
	KindDelta
	KindShard // a whole shard object a table entry names
	KindIndex // a page index a table entry names
	KindPage  // a shard object a page index names
	KindBlock // an object outside the engine that a record names (Refs)
)

func (k Kind) String() string {
	switch k {
	case KindRoot:
		return "root"
	case KindTable:
		return "table"
	case KindDelta:
		return "delta"
	case KindShard:
		return "shard"
	case KindIndex:
		return "index"
	case KindPage:
		return "page"
	case KindBlock:
		return "block"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Object is one object a root reaches.
type Object struct {
	Key string
	// Hash is the SHA-256 the engine named the object by; zero for
	// blocks, which are checked against Digest.
	Hash digest.Hash
	// Digest is the sha256: URI a record gives for a block (of its slice
	// Offset..Offset+Size), "" for engine objects.
	Digest string
	// Size is the object's size in bytes: as fetched when the walk
	// fetched it, else as the reference that led to it says. For a block
	// not fetched it is the end of the slice the record names.
	Size int64
	Kind Kind
}

// BlockRef is one object outside the engine a record references: its
// bucket key, and the sha256: URI of bytes Offset..Offset+Size of it.
type BlockRef struct {
	Key    string
	Digest string
	Offset int64
	Size   int64
}

// Refs returns the objects outside the engine that one record
// references: for the Workbench, the blocks its ArtifactManifest rows
// name (workbench.BlockRefs). The engine knows no product family, so the
// product supplies it. It must not keep key or value.
type Refs func(f shards.Family, key, value []byte) ([]BlockRef, error)

// WalkOptions tune Walk.
type WalkOptions struct {
	// Verify fetches every object and checks it: an engine object against
	// its hash (and decodes it), a block's slice against its digest.
	// Without it, Walk fetches only what it must decode to find more
	// references: roots, tables, page indexes, and, when refs is set,
	// delta segments and the shards and pages of RefFamilies.
	Verify bool
	// RefFamilies are the families whose records refs reads; nil means
	// every family. Walk fetches the base shards of no other family
	// unless it verifies. Delta segments mix families and are always
	// read when refs is set.
	RefFamilies []shards.Family
	// Concurrency bounds the fetches in flight. Default 16.
	Concurrency int
	// OnError, if set, is told of each object that is missing, corrupt
	// or whose records refs refused, and the walk goes on without what
	// that object would have led to, unless OnError returns an error,
	// which ends the walk. Without it the first such error ends the walk.
	OnError func(Object, error) error
}

// DefaultConcurrency is WalkOptions.Concurrency's default.
const DefaultConcurrency = 16

// Walk calls fn once per distinct object reachable from root: the root,
// each root its holds name (one level: roots.Root.KeptHolds; the holds of
// a held root are not followed), their tables, delta segments,
// shard objects, page indexes and pages (a table entry carried inline is
// not an object and yields none, though its records are read for refs),
// and the blocks refs finds in the records of all of them. It does not
// follow a root's parent: which older roots a sweep keeps is the
// sweep's decision (Sweep).
//
// Objects are deduplicated by key, so fn sees a block that several
// records name once. Records are read as stored, not as the root's merged
// view: a record that a newer delta of the same root replaces or deletes
// still yields its blocks. A sweep therefore keeps a little more than it
// must until a fold drops the old delta from the roots it marks, and a
// verifying walk may report a missing block named only by such a shadowed
// record (the rows of a revision collected since, for one). fn is called from one goroutine at a time, in no
// particular order; an error from it ends the walk and is returned.
// Every fetched engine object is checked against its hash before it is
// decoded, as every read of the engine checks it.
func Walk(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, refs Refs, opts WalkOptions, fn func(Object) error) error {
	w := newWalker(b, layout, refs, opts, fn)
	return w.walk(ctx, []digest.Hash{root})
}

// walker is one walk's state. A Sweep keeps one across the walks of
// several roots, so that what one marked is not fetched again.
type walker struct {
	b      bucket.Bucket
	layout shards.Layout
	refs   Refs
	opts   WalkOptions
	fn     func(Object) error

	// onRoot, if set, is told of every root the walk decoded (a sweep
	// learns parents and holds from it). It must be safe for concurrent
	// use.
	onRoot func(digest.Hash, *roots.Root)

	mu    sync.Mutex
	seen  map[string]bool
	roots map[digest.Hash]*rootVisit // under mu
	emit  sync.Mutex                 // serializes fn
}

// rootVisit is what a walker knows of a root it reached: whether it was
// reached as a kept root (so that its holds are followed), and its holds
// once decoded. A root first reached through a hold and later as a kept
// root (a pinned root a snapshot also holds) has its holds followed then.
type rootVisit struct {
	kept    bool
	decoded bool
	holds   []roots.Hold
}

func newWalker(b bucket.Bucket, layout shards.Layout, refs Refs, opts WalkOptions, fn func(Object) error) *walker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	return &walker{b: b, layout: layout, refs: refs, opts: opts, fn: fn, seen: map[string]bool{}, roots: map[digest.Hash]*rootVisit{}}
}

// walk visits every root of rs, each a kept root, and what it reaches,
// skipping objects an earlier walk of w visited.
func (w *walker) walk(ctx context.Context, rs []digest.Hash) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(w.opts.Concurrency)
	t := &task{w: w, g: g}
	for _, h := range rs {
		if err := t.spawn(func() error { return t.root(ctx, h, roots.ReachKept) }); err != nil {
			_ = g.Wait()
			return err
		}
	}
	return g.Wait()
}

// seenKey reports whether key was visited, and marks it visited.
func (w *walker) seenKey(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen[key] {
		return true
	}
	w.seen[key] = true
	return false
}

// reachRoot notes that the walk reached root h as reach. first reports
// whether this is the first visit of h (the caller fetches it); holds,
// on a later visit, are the holds to follow now: those of a root decoded
// earlier as a held root and reached as a kept one only now.
func (w *walker) reachRoot(h digest.Hash, reach roots.Reach) (first bool, holds []roots.Hold) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.roots[h]
	if v == nil {
		w.roots[h] = &rootVisit{kept: reach == roots.ReachKept}
		w.seen[w.layout.Root(h)] = true
		return true, nil
	}
	if reach != roots.ReachKept || v.kept {
		return false, nil
	}
	v.kept = true
	if v.decoded {
		return false, v.holds
	}
	return false, nil // the first visit follows them once it has decoded the root
}

// decodedRoot records root h's holds and returns those to follow: all of
// them if h was reached as a kept root by now.
func (w *walker) decodedRoot(h digest.Hash, r *roots.Root) []roots.Hold {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.roots[h]
	v.decoded, v.holds = true, r.Holds
	reach := roots.ReachHeld
	if v.kept {
		reach = roots.ReachKept
	}
	return r.KeptHolds(reach)
}

// marked reports whether key was visited.
func (w *walker) marked(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[key]
}

func (w *walker) call(o Object) error {
	w.emit.Lock()
	defer w.emit.Unlock()
	return w.fn(o)
}

// fail reports a problem with o: to OnError, which may let the walk go
// on, or as the walk's error.
func (w *walker) fail(o Object, err error) error {
	if w.opts.OnError != nil {
		w.emit.Lock()
		defer w.emit.Unlock()
		return w.opts.OnError(o, err)
	}
	return err
}

// wantsRecords reports whether the records of family f go to refs.
func (w *walker) wantsRecords(f shards.Family) bool {
	return w.refs != nil && (w.opts.RefFamilies == nil || slices.Contains(w.opts.RefFamilies, f))
}

func (w *walker) get(ctx context.Context, o Object) ([]byte, error) {
	body, _, err := w.b.Get(ctx, o.Key)
	if err != nil {
		return nil, fmt.Errorf("gcsweep: get %s %s: %w", o.Kind, o.Key, err)
	}
	return body, nil
}

// task is one walk's group of goroutines.
type task struct {
	w *walker
	g *errgroup.Group
}

// spawn runs f on a goroutine of the group if one is free, else on the
// caller's: a visit never waits for a slot while holding one, so the
// bounded group cannot deadlock however deep the graph.
func (t *task) spawn(f func() error) error {
	if t.g.TryGo(f) {
		return nil
	}
	return f()
}

// root visits root h, reached as reach, and what it reaches: its
// tables, deltas and, if it is a kept root, the roots its holds name
// (roots.Root.KeptHolds).
func (t *task) root(ctx context.Context, h digest.Hash, reach roots.Reach) error {
	w := t.w
	o := Object{Key: w.layout.Root(h), Hash: h, Kind: KindRoot}
	first, holds := w.reachRoot(h, reach)
	if !first {
		return t.held(ctx, holds)
	}
	body, err := w.get(ctx, o)
	if err != nil {
		return w.fail(o, err)
	}
	o.Size = int64(len(body))
	r, err := roots.DecodeRoot(w.layout.Schema(), body, h)
	if err != nil {
		return w.fail(o, fmt.Errorf("gcsweep: root %s: %w", h, err))
	}
	if w.onRoot != nil {
		w.onRoot(h, r)
	}
	holds = w.decodedRoot(h, r)
	if err := w.call(o); err != nil {
		return err
	}
	for _, fr := range r.Families {
		if err := t.spawn(func() error { return t.table(ctx, fr) }); err != nil {
			return err
		}
	}
	for _, dr := range r.Deltas {
		if err := t.spawn(func() error { return t.delta(ctx, dr) }); err != nil {
			return err
		}
	}
	return t.held(ctx, holds)
}

// held visits the roots holds name, as held roots.
func (t *task) held(ctx context.Context, holds []roots.Hold) error {
	for _, hold := range holds {
		if err := t.spawn(func() error { return t.root(ctx, hold.Root, roots.ReachHeld) }); err != nil {
			return err
		}
	}
	return nil
}

func (t *task) table(ctx context.Context, fr roots.FamilyRef) error {
	w := t.w
	o := Object{Key: w.layout.Table(fr.Table.Hash), Hash: fr.Table.Hash, Size: fr.Table.Size, Kind: KindTable}
	if w.seenKey(o.Key) {
		return nil
	}
	body, err := w.get(ctx, o)
	if err != nil {
		return w.fail(o, err)
	}
	o.Size = int64(len(body))
	tbl, err := roots.DecodeTable(w.layout.Schema(), body, fr.Table.Hash)
	if err != nil {
		return w.fail(o, fmt.Errorf("gcsweep: table %s: %w", fr.Table.Hash, err))
	}
	if err := w.call(o); err != nil {
		return err
	}
	for _, e := range tbl.Entries {
		var inline []byte
		if e.Inline != "" {
			inline = []byte(e.Inline)
		}
		f := func() error { return t.shard(ctx, tbl.Family, e.Shard, e.Ref, KindShard, inline) }
		if e.Index {
			f = func() error { return t.index(ctx, tbl.Family, e) }
		}
		if err := t.spawn(f); err != nil {
			return err
		}
	}
	return nil
}

// index visits a page index (or decodes one carried inline) and its
// pages.
func (t *task) index(ctx context.Context, f shards.Family, e roots.Entry) error {
	w := t.w
	o := Object{Key: w.layout.Index(f, e.Shard, e.Ref.Hash), Hash: e.Ref.Hash, Size: e.Ref.Size, Kind: KindIndex}
	body := []byte(e.Inline)
	if e.Inline == "" {
		if w.seenKey(o.Key) {
			return nil
		}
		var err error
		if body, err = w.get(ctx, o); err != nil {
			return w.fail(o, err)
		}
		o.Size = int64(len(body))
	}
	x, err := shards.DecodeIndex(w.layout.Schema(), body, e.Ref.Hash, f, e.Shard)
	if err != nil {
		return w.fail(o, fmt.Errorf("gcsweep: index %s/%02x %s: %w", f, e.Shard, e.Ref.Hash, err))
	}
	if e.Inline == "" {
		if err := w.call(o); err != nil {
			return err
		}
	}
	for i := range x.Len() {
		p := x.Page(i)
		if err := t.spawn(func() error { return t.shard(ctx, f, e.Shard, p.Ref, KindPage, nil) }); err != nil {
			return err
		}
	}
	return nil
}

// shard visits a shard object or a page, or reads the records of one
// carried inline. It fetches the object only when it verifies or refs
// reads the family's records.
func (t *task) shard(ctx context.Context, f shards.Family, idx uint8, ref shards.Ref, kind Kind, inline []byte) error {
	w := t.w
	o := Object{Key: w.layout.Shard(f, idx, ref.Hash), Hash: ref.Hash, Size: ref.Size, Kind: kind}
	if inline == nil && w.seenKey(o.Key) {
		return nil
	}
	records := w.wantsRecords(f)
	body := inline
	if inline == nil && (w.opts.Verify || records) {
		var err error
		if body, err = w.get(ctx, o); err != nil {
			return w.fail(o, err)
		}
		o.Size = int64(len(body))
	}
	if body != nil {
		obj, err := shards.DecodeShard(w.layout.Schema(), body, ref.Hash, f, idx)
		if err != nil {
			return w.fail(o, fmt.Errorf("gcsweep: %s %s/%02x %s: %w", kind, f, idx, ref.Hash, err))
		}
		if records {
			for i := range obj.Len() {
				r := obj.At(i)
				if err := t.records(ctx, o, f, r.Key, r.Value); err != nil {
					return err
				}
			}
		}
	}
	if inline != nil {
		return nil
	}
	return w.call(o)
}

func (t *task) delta(ctx context.Context, dr roots.DeltaRef) error {
	w := t.w
	o := Object{Key: w.layout.Delta(dr.Ref.Hash), Hash: dr.Ref.Hash, Size: dr.Ref.Size, Kind: KindDelta}
	if w.seenKey(o.Key) {
		return nil
	}
	if w.opts.Verify || w.refs != nil {
		body, err := w.get(ctx, o)
		if err != nil {
			return w.fail(o, err)
		}
		o.Size = int64(len(body))
		d, err := shards.DecodeDelta(w.layout.Schema(), body, dr.Ref.Hash)
		if err != nil {
			return w.fail(o, fmt.Errorf("gcsweep: delta %s: %w", dr.Ref.Hash, err))
		}
		for i := range d.Len() {
			r := d.At(i)
			if r.Delete || !w.wantsRecords(r.Family) {
				continue
			}
			if err := t.records(ctx, o, r.Family, r.Key, r.Value); err != nil {
				return err
			}
		}
	}
	return w.call(o)
}

// records visits the blocks refs finds in one record of the object in.
func (t *task) records(ctx context.Context, in Object, f shards.Family, key, value []byte) error {
	w := t.w
	brs, err := w.refs(f, key, value)
	if err != nil {
		return w.fail(in, fmt.Errorf("gcsweep: a record of %s in %s: %w", f, in.Key, err))
	}
	for _, br := range brs {
		if err := t.spawn(func() error { return t.block(ctx, br) }); err != nil {
			return err
		}
	}
	return nil
}

func (t *task) block(ctx context.Context, br BlockRef) error {
	w := t.w
	o := Object{Key: br.Key, Digest: br.Digest, Size: br.Offset + br.Size, Kind: KindBlock}
	if w.seenKey(o.Key) {
		return nil
	}
	if w.opts.Verify {
		body, err := w.get(ctx, o)
		if err != nil {
			return w.fail(o, err)
		}
		o.Size = int64(len(body))
		if err := checkSlice(body, br); err != nil {
			return w.fail(o, fmt.Errorf("gcsweep: block %s: %w", br.Key, err))
		}
	}
	return w.call(o)
}

// checkSlice checks the slice of a block that br names against its
// digest.
func checkSlice(body []byte, br BlockRef) error {
	want, err := digest.ParseURI(br.Digest)
	if err != nil {
		return fmt.Errorf("%w: %w", bucket.ErrIntegrity, err)
	}
	if br.Offset < 0 || br.Size < 0 {
		return fmt.Errorf("%w: a record names bytes %d..%d", bucket.ErrIntegrity, br.Offset, br.Offset+br.Size)
	}
	return bodies.VerifySlice(body, uint64(br.Offset), uint64(br.Size), want)
}
