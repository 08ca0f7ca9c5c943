package walk

import (
	"context"
	"errors"
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

// Walking the object graph. One walker serves every reader of a whole
// graph: the sweep's mark, pin verify and pin copy, fsck and Check. What
// a sweep keeps and what a check reads are therefore the same objects.

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
	// Refs, if set, makes the block a node of the product's own graph:
	// the walk fetches it (verifying or not), checks it against Digest,
	// and walks the blocks Refs finds in its bytes. Blocks are visited
	// once by key, so a graph whose nodes many records share costs one
	// fetch per node.
	Refs func(body []byte) ([]BlockRef, error)
}

// Verify checks body, the whole object br.Key names, against br: the
// slice br names must lie in it and hash to br's digest
// (bodies.VerifySlice, the check every reader of a block makes). A
// mismatch, or a reference that cannot name bytes, is bucket.ErrIntegrity.
func (br BlockRef) Verify(body []byte) error {
	want, err := digest.ParseURI(br.Digest)
	if err != nil {
		return fmt.Errorf("%w: %w", bucket.ErrIntegrity, err)
	}
	if br.Offset < 0 || br.Size < 0 {
		return fmt.Errorf("%w: a record names bytes %d..%d", bucket.ErrIntegrity, br.Offset, br.Offset+br.Size)
	}
	return bodies.VerifySlice(body, uint64(br.Offset), uint64(br.Size), want)
}

// Refs returns the objects outside the engine that one record
// references: for the Workbench, the blocks its ArtifactManifest rows
// name (workbench.BlockRefs). The engine knows no product family, so the
// product supplies it. It must not keep key or value.
type Refs func(f shards.Family, key, value []byte) ([]BlockRef, error)

// Options tune a walk.
type Options struct {
	// Verify fetches every object and checks it: an engine object against
	// its hash (and decodes it), a block's slice against its digest. It
	// also checks every object against the reference that named it, as
	// Check does: a table's size, family, shard count and record count
	// against its root's FamilyRef; a shard object's size and record
	// count against every table entry that names it, a page index's
	// against its table entry; each page's size, record count and key
	// range against every index that names it (shards.Index.CheckPage:
	// fetched once, each later reference is checked against its
	// shards.PageSummary); a delta segment's size, record count and
	// sequence against its root's DeltaRef. Such a disagreement is
	// ErrInconsistent (a page's is also bucket.ErrIntegrity), told to
	// OnError like a damaged object; the walk still follows what the
	// object references, and passes it to fn.
	//
	// Without Verify, a walk fetches only what it must decode to find
	// more references: roots, tables, page indexes, and, when refs is
	// set, delta segments and the shards and pages of RefFamilies.
	Verify bool
	// RefFamilies are the families whose records refs reads; nil means
	// every family. A walk fetches the base shards of no other family
	// unless it verifies. Delta segments mix families and are always
	// read when refs is set.
	RefFamilies []shards.Family
	// Concurrency bounds the fetches in flight. Default
	// DefaultConcurrency.
	Concurrency int
	// OnError, if set, is told of each object that is missing, corrupt,
	// disagrees with its reference (Verify) or whose records refs
	// refused, and the walk goes on without what that object would have
	// led to (an object that only disagrees with its reference still
	// leads on), unless OnError returns an error, which ends the walk.
	// Without it the first such error ends the walk. It is called from
	// one goroutine at a time.
	OnError func(Object, error) error
	// OnRoot, if set, is told of every root the walk decoded (a sweep
	// learns parents and holds from it). It must be safe for concurrent
	// use.
	OnRoot func(digest.Hash, *roots.Root)
	// StatHeld checks only that each root a kept root's holds name
	// exists (a Stat), instead of walking it: such a root is neither
	// passed to fn nor followed. Check without Strict uses it; a walk
	// that decides what to keep must not.
	StatHeld bool
}

// ErrInconsistent: an object that exists, hashes to its name and
// decodes, but disagrees with the reference that led to it (a size, a
// record count, a family, a sequence, a key range). A verifying walk
// reports it.
var ErrInconsistent = errors.New("head: object disagrees with its reference")

// DefaultConcurrency is Options.Concurrency's default.
const DefaultConcurrency = 16

// Walk calls fn once per distinct object reachable from root: the root,
// each root its holds name (one level: roots.Root.KeptHolds; the holds of
// a held root are not followed), their tables, delta segments,
// shard objects, page indexes and pages (a table entry carried inline is
// not an object and yields none, though its records are read for refs
// and, when verifying, checked), and the blocks refs finds in the records
// of all of them. It does not follow a root's parent: which older roots a
// sweep keeps is the sweep's decision.
//
// Objects are deduplicated by key, so fn sees a block that several
// records name once (and a verifying walk checks it against the first
// reference it meets). Records are read as stored, not as the root's
// merged view: a record that a newer delta of the same root replaces or
// deletes still yields its blocks. A sweep therefore keeps a little more
// than it must until a fold drops the old delta from the roots it marks,
// and a verifying walk may report a missing block named only by such a
// shadowed record (the rows of a revision collected since, for one). fn
// is called from one goroutine at a time, in no particular order; an
// error from it ends the walk and is returned. Every fetched engine
// object is checked against its hash before it is decoded, as every read
// of the engine checks it.
func Walk(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, refs Refs, opts Options, fn func(Object) error) error {
	return NewWalker(b, layout, refs, opts, fn).Walk(ctx, root)
}

// Walker is the state of walks that share what they visited: a sweep
// walks the roots it keeps one after another with one Walker, so that
// what one reached is not fetched again, and then asks which keys were
// reached (Reached).
type Walker struct {
	b      bucket.Bucket
	layout shards.Layout
	refs   Refs
	opts   Options
	fn     func(Object) error

	mu     sync.Mutex
	seen   map[string]bool
	roots  map[digest.Hash]*rootVisit // under mu
	visits map[string]*shardVisit     // under mu; verifying walks only
	emit   sync.Mutex                 // serializes fn and OnError
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

// shardVisit is what a verifying walk knows of a shard object or page
// it reached: once it is decoded, its summary, against which every later
// reference to it is checked; until then, the references that reached
// it meanwhile.
type shardVisit struct {
	decoded bool
	failed  bool // missing or damaged: reported once, by its first visit
	sum     shards.PageSummary
	waiting []claim
}

// claim is a reference to a shard object, which a verifying walk checks
// the object against: a table entry's (place nil: its size and record
// count) or a page index's (its place: shards.Index.CheckPage).
type claim struct {
	ref   shards.Ref
	place *pagePlace
	last  string // the table entry's Last, for a shard object or an index's last page ("": none to check)
}

// pagePlace is page i of x, the index named by hash index.
type pagePlace struct {
	x     *shards.Index
	i     int
	index digest.Hash
}

// NewWalker returns a Walker whose walks call fn once per object they
// reach first, as Walk does.
func NewWalker(b bucket.Bucket, layout shards.Layout, refs Refs, opts Options, fn func(Object) error) *Walker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = DefaultConcurrency
	}
	return &Walker{b: b, layout: layout, refs: refs, opts: opts, fn: fn,
		seen: map[string]bool{}, roots: map[digest.Hash]*rootVisit{}, visits: map[string]*shardVisit{}}
}

// Walk visits every root of rs, each a kept root, and what it reaches,
// skipping objects an earlier Walk of w reached. Walks of one Walker run
// one after another, never at once.
func (w *Walker) Walk(ctx context.Context, rs ...digest.Hash) error {
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

// Reached reports whether a walk of w reached key: fetched it, or would
// have but for an error OnError was told of.
func (w *Walker) Reached(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.seen[key]
}

// seenKey reports whether key was reached, and marks it reached.
func (w *Walker) seenKey(key string) bool {
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
func (w *Walker) reachRoot(h digest.Hash, reach roots.Reach) (first bool, holds []roots.Hold) {
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
func (w *Walker) decodedRoot(h digest.Hash, r *roots.Root) []roots.Hold {
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

// reachShard notes that a verifying walk reached the shard object or
// page key through c. first reports whether this is its first visit
// (the caller fetches and checks it); on a later visit, check says
// whether to check c against sum now (the object is decoded), else c
// waits for the first visit, or is dropped if that visit failed.
func (w *Walker) reachShard(key string, c claim) (first, check bool, sum shards.PageSummary) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen[key] {
		w.seen[key] = true
		w.visits[key] = &shardVisit{}
		return true, false, sum
	}
	switch v := w.visits[key]; {
	case v.failed:
		return false, false, sum // its first visit reported it
	case v.decoded:
		return false, true, v.sum
	default:
		v.waiting = append(v.waiting, c)
		return false, false, sum
	}
}

// decodedShard records the summary of the shard object or page key and
// returns the references that waited for it. A failed object (sum nil)
// drops them: its first visit reported it.
func (w *Walker) decodedShard(key string, sum *shards.PageSummary) []claim {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.visits[key]
	waiting := v.waiting
	v.waiting = nil
	if sum == nil {
		v.failed = true
		return nil
	}
	v.decoded, v.sum = true, *sum
	return waiting
}

func (w *Walker) call(o Object) error {
	w.emit.Lock()
	defer w.emit.Unlock()
	return w.fn(o)
}

// fail reports a problem with o: to OnError, which may let the walk go
// on, or as the walk's error.
func (w *Walker) fail(o Object, err error) error {
	if w.opts.OnError != nil {
		w.emit.Lock()
		defer w.emit.Unlock()
		return w.opts.OnError(o, err)
	}
	return err
}

// wantsRecords reports whether the records of family f go to refs.
func (w *Walker) wantsRecords(f shards.Family) bool {
	return w.refs != nil && (w.opts.RefFamilies == nil || slices.Contains(w.opts.RefFamilies, f))
}

func (w *Walker) get(ctx context.Context, o Object) ([]byte, error) {
	body, _, err := w.b.Get(ctx, o.Key)
	if err != nil {
		return nil, fmt.Errorf("head: get %s %s: %w", o.Kind, o.Key, err)
	}
	return body, nil
}

// name is family f's name in the walk's schema.
func (w *Walker) name(f shards.Family) string { return w.layout.Schema().Name(f) }

// inconsistent reports that o disagrees with the reference that named
// it (err says how); the walk still follows what o references unless
// OnError ends it.
func (w *Walker) inconsistent(o Object, err error) error {
	return w.fail(o, fmt.Errorf("%w: %w", err, ErrInconsistent))
}

// task is one walk's group of goroutines.
type task struct {
	w *Walker
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
		return t.held(ctx, h, holds)
	}
	body, err := w.get(ctx, o)
	if err != nil {
		return w.fail(o, err)
	}
	o.Size = int64(len(body))
	r, err := roots.DecodeRoot(w.layout.Schema(), body, h)
	if err != nil {
		return w.fail(o, fmt.Errorf("head: root %s: %w", h, err))
	}
	if w.opts.OnRoot != nil {
		w.opts.OnRoot(h, r)
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
		if err := t.spawn(func() error { return t.delta(ctx, h, dr) }); err != nil {
			return err
		}
	}
	return t.held(ctx, h, holds)
}

// held visits the roots that holds of root h name, as held roots, or
// with StatHeld checks that they exist.
func (t *task) held(ctx context.Context, h digest.Hash, holds []roots.Hold) error {
	w := t.w
	for _, hold := range holds {
		f := func() error { return t.root(ctx, hold.Root, roots.ReachHeld) }
		if w.opts.StatHeld {
			f = func() error {
				o := Object{Key: w.layout.Root(hold.Root), Hash: hold.Root, Kind: KindRoot}
				if _, err := w.b.Stat(ctx, o.Key); err != nil {
					return w.fail(o, fmt.Errorf("head: root %s: hold %q: root %s: %w", h, hold.Owner, hold.Root, err))
				}
				return nil
			}
		}
		if err := t.spawn(f); err != nil {
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
		return w.fail(o, fmt.Errorf("head: table %s of %s: %w", fr.Table.Hash, w.name(fr.Family), err))
	}
	if w.opts.Verify {
		if o.Size != fr.Table.Size {
			if err := w.inconsistent(o, fmt.Errorf("head: table %s of %s: %d bytes, root says %d", fr.Table.Hash, w.name(fr.Family), o.Size, fr.Table.Size)); err != nil {
				return err
			}
		}
		if tbl.Family != fr.Family || len(tbl.Entries) != int(fr.Shards) || tbl.Records() != fr.Records {
			if err := w.inconsistent(o, fmt.Errorf("head: table %s: family %s, %d shards, %d records; root says %s, %d, %d",
				fr.Table.Hash, w.name(tbl.Family), len(tbl.Entries), tbl.Records(), w.name(fr.Family), fr.Shards, fr.Records)); err != nil {
				return err
			}
		}
	}
	if err := w.call(o); err != nil {
		return err
	}
	for _, e := range tbl.Entries {
		var inline []byte
		if e.Inline != "" {
			inline = []byte(e.Inline)
		}
		f := func() error { return t.shard(ctx, tbl.Family, e.Shard, e.Ref, KindShard, inline, nil, e.Last) }
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
	// DecodeIndex checks the hash, the canonical form, the family and
	// shard index, the page order, and that every first key belongs to
	// the shard.
	x, err := shards.DecodeIndex(w.layout.Schema(), body, e.Ref.Hash, f, e.Shard)
	if err != nil {
		return w.fail(o, fmt.Errorf("head: index %s/%02x %s: %w", w.name(f), e.Shard, e.Ref.Hash, err))
	}
	if w.opts.Verify && (x.Records() != e.Ref.Count || int64(len(body)) != e.Ref.Size) {
		if err := w.inconsistent(o, fmt.Errorf("head: index %s/%02x %s: %d records in %d bytes, table says %d in %d",
			w.name(f), e.Shard, e.Ref.Hash, x.Records(), len(body), e.Ref.Count, e.Ref.Size)); err != nil {
			return err
		}
	}
	if e.Inline == "" {
		if err := w.call(o); err != nil {
			return err
		}
	}
	for i := range x.Len() {
		place := &pagePlace{x: x, i: i, index: e.Ref.Hash}
		last := ""
		if i == x.Len()-1 {
			last = e.Last
		}
		if err := t.spawn(func() error { return t.shard(ctx, f, e.Shard, x.Page(i).Ref, KindPage, nil, place, last) }); err != nil {
			return err
		}
	}
	return nil
}

// shard visits a shard object or a page (at place in its index), or
// reads the records of one carried inline. It fetches the object only
// when it verifies or refs reads the family's records.
func (t *task) shard(ctx context.Context, f shards.Family, idx uint8, ref shards.Ref, kind Kind, inline []byte, place *pagePlace, last string) error {
	w := t.w
	o := Object{Key: w.layout.Shard(f, idx, ref.Hash), Hash: ref.Hash, Size: ref.Size, Kind: kind}
	c := claim{ref: ref, place: place, last: last}
	// A verifying walk checks a stored object against every reference
	// that reaches it; an inline one has only the one.
	track := w.opts.Verify && inline == nil
	switch {
	case inline != nil:
	case track:
		first, check, sum := w.reachShard(o.Key, c)
		if !first {
			if check {
				o.Size = sum.Size
				return t.checkShard(o, sum, c)
			}
			return nil
		}
	case w.seenKey(o.Key):
		return nil
	}
	records := w.wantsRecords(f)
	body := inline
	if inline == nil && (w.opts.Verify || records) {
		var err error
		if body, err = w.get(ctx, o); err != nil {
			if track {
				w.decodedShard(o.Key, nil)
			}
			return w.fail(o, err)
		}
		o.Size = int64(len(body))
	}
	if body != nil {
		// DecodeShard checks the hash, the canonical form, the family and
		// shard index, and that every key belongs to the shard.
		obj, err := shards.DecodeShard(w.layout.Schema(), body, ref.Hash, f, idx)
		if err != nil {
			if track {
				w.decodedShard(o.Key, nil)
			}
			return w.fail(o, fmt.Errorf("head: %s %s/%02x %s: %w", kind, w.name(f), idx, ref.Hash, err))
		}
		if w.opts.Verify {
			sum := obj.Summary()
			claims := []claim{c}
			if track {
				claims = append(claims, w.decodedShard(o.Key, &sum)...)
			}
			for _, c := range claims {
				if err := t.checkShard(o, sum, c); err != nil {
					return err
				}
			}
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

// checkShard checks shard object or page o, which sum summarizes,
// against reference c: a table entry's size, record count and last key,
// or its place in an index (shards.Index.CheckPage: size, record count
// and key range) and, for the last page, the entry's last key.
func (t *task) checkShard(o Object, sum shards.PageSummary, c claim) error {
	if !(roots.Entry{Last: c.last}).Ends(sum.Last) {
		return t.w.inconsistent(o, fmt.Errorf("head: %s/%02x %s: last key %x, table says %x",
			t.w.name(sum.Family), sum.Shard, o.Hash, sum.Last, c.last))
	}
	if c.place != nil {
		if err := c.place.x.CheckPageSummary(c.place.i, sum); err != nil {
			return t.w.inconsistent(o, fmt.Errorf("head: page %s of index %s: %w", o.Hash, c.place.index, err))
		}
		return nil
	}
	if sum.Count != int(c.ref.Count) || sum.Size != c.ref.Size {
		return t.w.inconsistent(o, fmt.Errorf("head: shard %s/%02x %s: %d records in %d bytes, table says %d in %d",
			t.w.name(sum.Family), sum.Shard, o.Hash, sum.Count, sum.Size, c.ref.Count, c.ref.Size))
	}
	return nil
}

func (t *task) delta(ctx context.Context, root digest.Hash, dr roots.DeltaRef) error {
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
		// DecodeDelta checks the hash, the canonical form, and every
		// record's family and key against the schema.
		d, err := shards.DecodeDelta(w.layout.Schema(), body, dr.Ref.Hash)
		if err != nil {
			return w.fail(o, fmt.Errorf("head: root %s: delta %s: %w", root, dr.Ref.Hash, err))
		}
		if w.opts.Verify && (d.Len() != int(dr.Ref.Count) || o.Size != dr.Ref.Size || d.Sequence() != dr.Sequence) {
			if err := w.inconsistent(o, fmt.Errorf("head: root %s: delta %s: %d records in %d bytes at sequence %d, root says %d in %d at %d",
				root, dr.Ref.Hash, d.Len(), o.Size, d.Sequence(), dr.Ref.Count, dr.Ref.Size, dr.Sequence)); err != nil {
				return err
			}
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
		return w.fail(in, fmt.Errorf("head: a record of %s in %s: %w", w.name(f), in.Key, err))
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
	if !w.opts.Verify && br.Refs == nil {
		return w.call(o)
	}
	body, err := w.get(ctx, o)
	if err != nil {
		return w.fail(o, err)
	}
	o.Size = int64(len(body))
	if err := br.Verify(body); err != nil {
		return w.fail(o, fmt.Errorf("head: block %s: %w", br.Key, err))
	}
	if err := w.call(o); err != nil || br.Refs == nil {
		return err
	}
	brs, err := br.Refs(body)
	if err != nil {
		return w.fail(o, fmt.Errorf("head: block %s: %w", br.Key, err))
	}
	for _, next := range brs {
		if err := t.spawn(func() error { return t.block(ctx, next) }); err != nil {
			return err
		}
	}
	return nil
}
