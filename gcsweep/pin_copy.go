package gcsweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
)

// Copying what a pin keeps to another bucket.

// CopyReport is what CopyPin did.
type CopyReport struct {
	Objects      int64 // objects the pinned root reaches
	Bytes        int64 // their bytes, of those done
	Copied       int64 // objects written to the destination
	CopiedBytes  int64
	Present      int64 // objects already at the destination, intact
	HeadSequence uint64
	Elapsed      time.Duration
}

// CopyPin copies the state pin p keeps from store's bucket to dst, under
// the same keys: every object the pinned root reaches (the blocks refs
// finds included), then a head naming the pinned root
// (head.WriteHeadAt), then the pin, so that a Store opened on dst serves
// exactly the pinned state. Objects are copied opts.Concurrency at a
// time; each is checked after it is read from the source (its hash, a
// block's slice against its digest), and a damaged source object fails
// the copy rather than travel.
//
// A copy that will be refused writes nothing: before its first write it
// reads dst's head and dst's pin of p's name (checkCopy), and a head
// naming another root (head.ErrHeadExists), a head that is not one of
// this schema's, or another pin of that name (ErrPinExists) end it with
// dst as it was. The head comes before the pin so that a head refused at
// the last moment (another writer created one after the check) leaves no
// pin behind that a restore could take for the destination's own.
//
// It resumes: an object already at dst whose bytes check is not written
// again, so a copy run again after an interruption writes only the rest
// (it still reads each object at dst once); a head it wrote earlier is
// its own and the pin follows. Nothing of dst's is ever replaced but
// objects of the pinned state that were missing or damaged.
func CopyPin(ctx context.Context, store *head.Store, dst bucket.Bucket, p Pin, refs walk.Refs, opts VerifyOptions) (CopyReport, error) {
	opts.fill()
	start := time.Now()
	var rep CopyReport
	src, layout := store.Bucket(), store.Layout()
	if err := checkCopy(ctx, store, dst, p); err != nil {
		return rep, fmt.Errorf("gcsweep: copy pin %s: %w", p.Name, err)
	}
	objs, blocks, err := collect(ctx, src, layout, p.RootHash, refs, opts.Concurrency)
	if err != nil {
		return rep, fmt.Errorf("gcsweep: copy pin %s: %w", p.Name, err)
	}
	rep.Objects = int64(len(objs))
	opts.Total(rep.Objects)
	var total, copied, copiedBytes, present atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(opts.Concurrency)
	for _, o := range objs {
		g.Go(func() error {
			n, wrote, err := copyObject(gctx, src, dst, o, blocks[o.Key])
			if err != nil {
				return err
			}
			total.Add(n)
			if wrote {
				copied.Add(1)
				copiedBytes.Add(n)
			} else {
				present.Add(1)
			}
			opts.Progress(n)
			return nil
		})
	}
	err = g.Wait()
	rep.Bytes, rep.Copied, rep.CopiedBytes, rep.Present = total.Load(), copied.Load(), copiedBytes.Load(), present.Load()
	if err != nil {
		return rep, fmt.Errorf("gcsweep: copy pin %s: %w", p.Name, err)
	}
	h, err := head.WriteHeadAt(ctx, dst, layout.ID(), store.Schema(), p.RootHash, p.Created())
	if err != nil {
		return rep, fmt.Errorf("gcsweep: copy pin %s: %w", p.Name, err)
	}
	if err := CreatePin(ctx, dst, layout, p); err != nil {
		return rep, fmt.Errorf("gcsweep: copy pin %s: %w", p.Name, err)
	}
	rep.HeadSequence = h.Sequence
	rep.Elapsed = time.Since(start)
	return rep, nil
}

// checkCopy reads what at dst would make copying p there refused, before
// anything is written: dst's head of the shard, which must be absent or
// name p's root (head.CheckHeadAt), and dst's pin of p's name, which
// must be absent or hold p's exact bytes (CreatePin's test). Both are
// checked again by the writes themselves, which are create-only.
func checkCopy(ctx context.Context, store *head.Store, dst bucket.Bucket, p Pin) error {
	layout := store.Layout()
	if p.Shard != layout.ID().String() {
		return fmt.Errorf("%w: %s names shard %s, want %s", ErrBadPin, p.Name, p.Shard, layout.ID())
	}
	if _, err := head.CheckHeadAt(ctx, dst, layout.ID(), store.Schema(), p.RootHash); err != nil {
		return err
	}
	key, err := layout.Pin(p.Name)
	if err != nil {
		return err
	}
	want, err := EncodePin(p)
	if err != nil {
		return err
	}
	have, _, err := dst.Get(ctx, key)
	switch {
	case errors.Is(err, bucket.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("read pin %s at the destination: %w", p.Name, err)
	case !bytes.Equal(have, want):
		return fmt.Errorf("%w at the destination: %s", ErrPinExists, p.Name)
	}
	return nil
}

// collect walks from root (without Verify: it fetches what it must
// decode) and returns every object it reaches, and for each block the
// reference that led to it, whose slice and digest check the block's
// bytes (for a block a block led to, its whole bytes against the digest
// the walk carried).
func collect(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, refs walk.Refs, concurrency int) ([]walk.Object, map[string]walk.BlockRef, error) {
	var mu sync.Mutex
	blocks := map[string]walk.BlockRef{}
	seen := func(f shards.Family, key, value []byte) ([]walk.BlockRef, error) {
		brs, err := refs(f, key, value)
		mu.Lock()
		for _, br := range brs {
			if _, ok := blocks[br.Key]; !ok {
				blocks[br.Key] = br
			}
		}
		mu.Unlock()
		return brs, err
	}
	var objs []walk.Object
	err := walk.Walk(ctx, b, layout, root, seen, walk.Options{Concurrency: concurrency}, func(o walk.Object) error {
		objs = append(objs, o)
		if o.Kind == walk.KindBlock {
			// A block another block leads to (an inner node's child in
			// a member tree) is whole: its digest is the walk's.
			mu.Lock()
			if _, ok := blocks[o.Key]; !ok {
				blocks[o.Key] = walk.BlockRef{Key: o.Key, Digest: o.Digest, Size: o.Size}
			}
			mu.Unlock()
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return objs, blocks, nil
}

// intact checks body as the object o: its hash for an engine object
// (the key names it), the slice br names against br's digest for a
// block.
func intact(o walk.Object, br walk.BlockRef, body []byte) error {
	if o.Kind == walk.KindBlock {
		return br.Verify(body)
	}
	return digest.Verify(body, o.Hash)
}

// copyObject makes o present and intact at dst, and reports its size and
// whether it wrote it.
func copyObject(ctx context.Context, src, dst bucket.Bucket, o walk.Object, br walk.BlockRef) (int64, bool, error) {
	have, _, err := dst.Get(ctx, o.Key)
	switch {
	case err == nil && intact(o, br, have) == nil:
		return int64(len(have)), false, nil
	case err != nil && !errors.Is(err, bucket.ErrNotExist) && !errors.Is(err, bucket.ErrIntegrity):
		return 0, false, fmt.Errorf("read %s at the destination: %w", o.Key, err)
	}
	body, _, err := src.Get(ctx, o.Key)
	if err != nil {
		return 0, false, fmt.Errorf("read %s: %w", o.Key, err)
	}
	if err := intact(o, br, body); err != nil {
		return 0, false, fmt.Errorf("source %s %s: %w", o.Kind, o.Key, err)
	}
	// Immutable, and checked: a damaged object at dst is replaced.
	if _, err := dst.Put(ctx, o.Key, body, bucket.Unconditional); err != nil {
		return 0, false, fmt.Errorf("write %s: %w", o.Key, err)
	}
	return int64(len(body)), true, nil
}
