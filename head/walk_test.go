package head_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
)

// walked is what one walk told: the objects fn saw, by key, and the
// errors OnError saw, by key.
type walked struct {
	mu     sync.Mutex
	objs   map[string]walk.Kind
	errs   map[string][]error
	twice  []string
	rootsN int
}

func newWalked() *walked {
	return &walked{objs: map[string]walk.Kind{}, errs: map[string][]error{}}
}

func (w *walked) fn(o walk.Object) error {
	if _, ok := w.objs[o.Key]; ok {
		w.twice = append(w.twice, o.Key)
	}
	w.objs[o.Key] = o.Kind
	return nil
}

func (w *walked) onError(o walk.Object, err error) error {
	w.errs[o.Key] = append(w.errs[o.Key], err)
	return nil
}

func (w *walked) onRoot(digest.Hash, *roots.Root) {
	w.mu.Lock()
	w.rootsN++
	w.mu.Unlock()
}

func (w *walked) options(verify bool) walk.Options {
	return walk.Options{Verify: verify, OnError: w.onError, OnRoot: w.onRoot}
}

// pagedIndex writes the pages of keys (in groups, one page each) as
// shard idx of fam and an index naming them with the first keys given
// (nil: each page's own; page 0 has none), and returns the index's table
// entry.
func (c *craft) pagedIndex(idx uint8, groups [][][]byte, firsts [][]byte) roots.Entry {
	c.t.Helper()
	var pages []shards.PageRef
	for i, g := range groups {
		body := c.records(idx, g)
		ref := shards.Ref{Hash: digest.Sum(body), Size: int64(len(body)), Count: uint32(len(g))}
		c.put(c.layout.Shard(fam, idx, ref.Hash), body)
		var first []byte // page 0 begins the shard
		switch {
		case i == 0:
		case firsts != nil:
			first = firsts[i]
		default:
			first = g[0]
		}
		pages = append(pages, shards.PageRef{First: first, Ref: ref})
	}
	x, err := shards.NewIndex(head.SchemaForTest.Families, fam, idx, shards.Salt{}, pages)
	if err != nil {
		c.t.Fatal(err)
	}
	body, ref, err := x.Encode()
	if err != nil {
		c.t.Fatal(err)
	}
	c.put(c.layout.Index(fam, idx, ref.Hash), body)
	return roots.Entry{Shard: idx, Index: true, Ref: ref}
}

// TestWalkChecksAPageAgainstEveryIndex: two roots whose indexes share a
// page, the second placing it where its keys do not belong. A verifying
// walk checks the page against each index that names it, whichever it
// meets first and whether both walks run at once or one after the other,
// and fetches the page once.
func TestWalkChecksAPageAgainstEveryIndex(t *testing.T) {
	ctx := context.Background()
	keys, idx := sameShardKeys(t, 6)
	sortKeys(keys)
	cr := newCraft(t)
	groups := [][][]byte{keys[0:2], keys[2:4], keys[4:6]}
	good := cr.root([]roots.Entry{cr.pagedIndex(idx, groups, nil)}, nil)
	// The same first and third pages; the index says the third begins at
	// keys[3], which it does not hold.
	bad := cr.root([]roots.Entry{cr.pagedIndex(idx, [][][]byte{keys[0:2], keys[4:6]}, [][]byte{nil, keys[3]})}, nil)
	shared := cr.layout.Shard(fam, idx, digest.Sum(cr.records(idx, keys[4:6])))

	if err := head.Check(ctx, cr.b, cr.layout, good, head.CheckOptions{Strict: true}); err != nil {
		t.Fatalf("Check of the sound root: %v", err)
	}
	if err := head.Check(ctx, cr.b, cr.layout, bad, head.CheckOptions{Strict: true}); !errors.Is(err, head.ErrInconsistent) || !strings.Contains(err.Error(), "begins at") {
		t.Fatalf("Check of the root whose index misplaces a page: %v", err)
	}
	for _, order := range [][]digest.Hash{{good, bad}, {bad, good}} {
		for _, together := range []bool{false, true} {
			t.Run(fmt.Sprintf("together=%v/bad-first=%v", together, order[0] == bad), func(t *testing.T) {
				rec := &getCounter{Bucket: cr.b, gets: map[string]int{}}
				w := newWalked()
				walker := walk.NewWalker(rec, cr.layout, nil, w.options(true), w.fn)
				if together {
					if err := walker.Walk(ctx, order...); err != nil {
						t.Fatal(err)
					}
				} else {
					for _, r := range order {
						if err := walker.Walk(ctx, r); err != nil {
							t.Fatal(err)
						}
					}
				}
				if len(w.errs) != 1 || len(w.errs[shared]) != 1 {
					t.Fatalf("OnError told of %v, want the shared page %s once", w.errs, shared)
				}
				if err := w.errs[shared][0]; !errors.Is(err, head.ErrInconsistent) || !errors.Is(err, bucket.ErrIntegrity) {
					t.Fatalf("the misplaced page: %v, want ErrInconsistent and ErrIntegrity", err)
				}
				if n := rec.gets[shared]; n != 1 || len(w.twice) != 0 || w.objs[shared] != walk.KindPage {
					t.Fatalf("the shared page fetched %d times, reported as %v; reported twice: %v", n, w.objs[shared], w.twice)
				}
			})
		}
	}
}

// getCounter counts the Gets of each key.
type getCounter struct {
	bucket.Bucket
	mu   sync.Mutex
	gets map[string]int
}

func (g *getCounter) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	g.mu.Lock()
	g.gets[key]++
	g.mu.Unlock()
	return g.Bucket.Get(ctx, key)
}

// TestWalkVerifyChecksReferences: a table whose record count disagrees
// with its root entry, and a shard object whose size disagrees with its
// table entry, are told to OnError as ErrInconsistent by a verifying
// walk, which still reaches everything behind them; a walk that does not
// verify says nothing, and a verifying walk without OnError ends with
// the error.
func TestWalkVerifyChecksReferences(t *testing.T) {
	ctx := context.Background()
	keys, idx := sameShardKeys(t, 2)
	cr := newCraft(t)
	e := cr.object(idx, cr.records(idx, keys), 2)
	e.Ref.Size++
	root := cr.root([]roots.Entry{e}, func(fr *roots.FamilyRef) { fr.Records++ })
	fr := readRoot(t, cr.b, cr.layout, root).Families[0]
	tableKey, shardKey := cr.layout.Table(fr.Table.Hash), cr.layout.Shard(fam, idx, e.Ref.Hash)

	w := newWalked()
	if err := walk.Walk(ctx, cr.b, cr.layout, root, nil, w.options(true), w.fn); err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(w.errs)); !slices.Equal(got, sortedStrings(tableKey, shardKey)) {
		t.Fatalf("OnError told of %v, want the table and the shard object", got)
	}
	for k, errs := range w.errs {
		if len(errs) != 1 || !errors.Is(errs[0], head.ErrInconsistent) || errors.Is(errs[0], bucket.ErrIntegrity) {
			t.Fatalf("%s: %v, want one ErrInconsistent", k, errs)
		}
	}
	if w.objs[tableKey] != walk.KindTable || w.objs[shardKey] != walk.KindShard {
		t.Fatalf("the walk stopped at an inconsistent object: reached %v", w.objs)
	}

	quiet := newWalked()
	if err := walk.Walk(ctx, cr.b, cr.layout, root, nil, quiet.options(false), quiet.fn); err != nil || len(quiet.errs) != 0 {
		t.Fatalf("a walk that does not verify: %v, told %v", err, quiet.errs)
	}
	if !maps.Equal(quiet.objs, w.objs) {
		t.Fatalf("the walks reached %v and %v", quiet.objs, w.objs)
	}
	err := walk.Walk(ctx, cr.b, cr.layout, root, nil, walk.Options{Verify: true}, func(walk.Object) error { return nil })
	if !errors.Is(err, head.ErrInconsistent) {
		t.Fatalf("a verifying walk without OnError: %v", err)
	}
}

func sortedStrings(s ...string) []string {
	slices.Sort(s)
	return s
}

// TestWalkerSharesAcrossWalks: one Walker walks several roots, one after
// another, and reports each object once; Reached answers for every key
// reached and no other; OnRoot hears of each root decoded once. What it
// reaches is the union of what separate walks reach.
func TestWalkerSharesAcrossWalks(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	_, layout := busyShard(t, b)
	var chain []digest.Hash
	for h := headRoot(t, b, layout); !h.IsZero(); h = readRoot(t, b, layout, h).Parent {
		chain = append(chain, h)
	}
	union := map[string]walk.Kind{}
	for _, h := range chain {
		w := newWalked()
		if err := walk.Walk(ctx, b, layout, h, nil, w.options(false), w.fn); err != nil {
			t.Fatal(err)
		}
		maps.Copy(union, w.objs)
	}
	w := newWalked()
	walker := walk.NewWalker(b, layout, nil, w.options(false), w.fn)
	for _, h := range chain {
		if err := walker.Walk(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if len(w.twice) != 0 || !maps.Equal(w.objs, union) {
		t.Fatalf("reported twice: %v; %d objects, separate walks %d", w.twice, len(w.objs), len(union))
	}
	if w.rootsN != len(chain) {
		t.Fatalf("OnRoot heard of %d roots, want %d", w.rootsN, len(chain))
	}
	for k := range union {
		if !walker.Reached(k) {
			t.Fatalf("Reached(%s) = false", k)
		}
	}
	if walker.Reached(layout.Root(digest.Sum([]byte("no such root")))) {
		t.Fatal("Reached a key no walk met")
	}
}

// TestWalkerHoldsOneLevel: the holds of a kept root are followed, those
// of a held root are not, until that root is walked as a kept root
// itself.
func TestWalkerHoldsOneLevel(t *testing.T) {
	ctx := context.Background()
	keys, idx := sameShardKeys(t, 3)
	cr := newCraft(t)
	// deep ← mid ← top: top holds mid, mid holds deep; each has its own
	// shard object.
	deep := cr.root([]roots.Entry{cr.object(idx, cr.records(idx, keys[:1]), 1)}, nil)
	mid := cr.root([]roots.Entry{cr.object(idx, cr.records(idx, keys[:2]), 2)}, nil, roots.Hold{Owner: "a", Root: deep})
	top := cr.root([]roots.Entry{cr.object(idx, cr.records(idx, keys[:3]), 3)}, nil, roots.Hold{Owner: "b", Root: mid})
	w := newWalked()
	walker := walk.NewWalker(cr.b, cr.layout, nil, w.options(true), w.fn)
	if err := walker.Walk(ctx, top); err != nil {
		t.Fatal(err)
	}
	if !walker.Reached(cr.layout.Root(mid)) || walker.Reached(cr.layout.Root(deep)) {
		t.Fatalf("from top: mid reached %v, deep reached %v; want true, false",
			walker.Reached(cr.layout.Root(mid)), walker.Reached(cr.layout.Root(deep)))
	}
	if err := walker.Walk(ctx, mid); err != nil {
		t.Fatal(err)
	}
	if !walker.Reached(cr.layout.Root(deep)) || w.objs[cr.layout.Root(deep)] != walk.KindRoot {
		t.Fatal("mid walked as a kept root did not follow its hold")
	}
	if len(w.errs) != 0 || len(w.twice) != 0 {
		t.Fatalf("errors %v, twice %v", w.errs, w.twice)
	}
}

// TestWalkStatHeld: with StatHeld a held root is only Stat'ed: its
// objects are not reached, and a missing one is told to OnError.
func TestWalkStatHeld(t *testing.T) {
	ctx := context.Background()
	keys, idx := sameShardKeys(t, 2)
	cr := newCraft(t)
	heldObj := cr.object(idx, cr.records(idx, keys[:1]), 1)
	held := cr.root([]roots.Entry{heldObj}, nil)
	gone := digest.Sum([]byte("a root never written"))
	top := cr.root([]roots.Entry{cr.object(idx, cr.records(idx, keys), 2)}, nil,
		roots.Hold{Owner: "a", Root: held}, roots.Hold{Owner: "b", Root: gone})
	w := newWalked()
	opts := w.options(true)
	opts.StatHeld = true
	if err := walk.Walk(ctx, cr.b, cr.layout, top, nil, opts, w.fn); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.objs[cr.layout.Root(held)]; ok {
		t.Fatal("a held root was walked")
	}
	if _, ok := w.objs[cr.layout.Shard(fam, idx, heldObj.Ref.Hash)]; ok {
		t.Fatal("a held root's object was reached")
	}
	if errs := w.errs[cr.layout.Root(gone)]; len(w.errs) != 1 || len(errs) != 1 || !errors.Is(errs[0], bucket.ErrNotExist) {
		t.Fatalf("OnError told of %v, want the missing held root", w.errs)
	}
}

// blockRefs is a Refs for tests: a value "blk:blocks/<name>" names the
// object under that key, whose bytes are <name>; any other "blk:" value
// is refused.
func blockRefs(_ shards.Family, _, value []byte) ([]walk.BlockRef, error) {
	key, ok := bytes.CutPrefix(value, []byte("blk:"))
	if !ok {
		return nil, nil
	}
	name, ok := bytes.CutPrefix(key, []byte("blocks/"))
	if !ok {
		return nil, fmt.Errorf("bad block value %q", value)
	}
	return []walk.BlockRef{{Key: string(key), Digest: digest.Sum(name).URI(), Size: int64(len(name))}}, nil
}

// TestWalkBlocks: the blocks Refs finds are reported once however many
// records name them; a walk that does not verify does not fetch them; a
// verifying walk checks each against its digest; a record Refs refuses
// is told to OnError with the object holding it.
func TestWalkBlocks(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := open(t, b, shards.NewShardID(), head.Options{NoGroupCommit: true})
	layout := s.Layout()
	blocks := []string{"blocks/one", "blocks/three"}
	value := func(k string) string { return "blk:" + k }
	for _, k := range blocks {
		if _, err := b.Put(ctx, k, []byte(strings.TrimPrefix(k, "blocks/")), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range []string{value(blocks[0]), value(blocks[1]), value(blocks[0]), "plain"} {
		if _, err := s.Do(ctx, put(i, v)); err != nil {
			t.Fatal(err)
		}
	}
	root := headRoot(t, b, layout)
	rec := &getCounter{Bucket: b, gets: map[string]int{}}
	w := newWalked()
	if err := walk.Walk(ctx, rec, layout, root, blockRefs, w.options(false), w.fn); err != nil {
		t.Fatal(err)
	}
	var got []string
	for k, kind := range w.objs {
		if kind == walk.KindBlock {
			got = append(got, k)
		}
	}
	slices.Sort(got)
	if !slices.Equal(got, blocks) || len(w.twice) != 0 {
		t.Fatalf("blocks %v (twice: %v), want %v once each", got, w.twice, blocks)
	}
	if rec.gets[blocks[0]]+rec.gets[blocks[1]] != 0 {
		t.Fatalf("a walk that does not verify fetched blocks: %v", rec.gets)
	}

	// A block whose bytes are not its digest's.
	if _, err := b.Put(ctx, blocks[1], []byte("THREE"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	w = newWalked()
	if err := walk.Walk(ctx, b, layout, root, blockRefs, w.options(true), w.fn); err != nil {
		t.Fatal(err)
	}
	if errs := w.errs[blocks[1]]; len(w.errs) != 1 || len(errs) != 1 || !errors.Is(errs[0], bucket.ErrIntegrity) {
		t.Fatalf("verifying walk told of %v, want the damaged %s", w.errs, blocks[1])
	}

	// A record Refs refuses.
	if _, err := s.Do(ctx, put(9, "blk:elsewhere")); err != nil {
		t.Fatal(err)
	}
	w = newWalked()
	if err := walk.Walk(ctx, b, layout, headRoot(t, b, layout), blockRefs, w.options(false), w.fn); err != nil {
		t.Fatal(err)
	}
	if len(w.errs) != 1 {
		t.Fatalf("OnError told of %v, want the object holding the refused record", w.errs)
	}
	for k := range w.errs {
		if w.objs[k] != walk.KindDelta && w.objs[k] != walk.KindShard {
			t.Fatalf("OnError told of %s (%v), not an object holding records", k, w.objs[k])
		}
	}
}

// TestBlockRefVerify: the slice a reference names must lie in the block
// and hash to its digest; anything else is bucket.ErrIntegrity.
func TestBlockRefVerify(t *testing.T) {
	body := []byte("0123456789")
	slice := digest.Sum(body[2:6]).URI()
	for _, c := range []struct {
		name string
		br   walk.BlockRef
		ok   bool
	}{
		{"the slice", walk.BlockRef{Digest: slice, Offset: 2, Size: 4}, true},
		{"another slice", walk.BlockRef{Digest: slice, Offset: 3, Size: 4}, false},
		{"past the end", walk.BlockRef{Digest: digest.Sum(body[8:]).URI(), Offset: 8, Size: 4}, false},
		{"negative offset", walk.BlockRef{Digest: slice, Offset: -1, Size: 4}, false},
		{"no digest", walk.BlockRef{Digest: "md5:00", Offset: 2, Size: 4}, false},
	} {
		err := c.br.Verify(body)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, bucket.ErrIntegrity)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
