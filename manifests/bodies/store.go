package bodies

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
)

// Defaults of a Store's Options.
const (
	// DefaultBlockSize is the size of the blocks a body is cut into.
	DefaultBlockSize = 4 << 20
	// DefaultParallel bounds the block requests one call has in flight.
	DefaultParallel = 8
	// DefaultCacheBytes is the budget of the cache of small blocks.
	DefaultCacheBytes = 32 << 20
	// CacheMaxBlock is the largest block the cache holds: small files,
	// which a grep reads again and again, and not the blocks of large
	// bodies, which would evict them.
	CacheMaxBlock = 64 << 10
)

// DefaultRetry is the retry policy of a Store's create-only writes.
var DefaultRetry = bucket.RetryPolicy{Attempts: 4, Base: 4 * time.Millisecond, Max: 64 * time.Millisecond}

// Options configure a Store. Zero values take the defaults.
type Options struct {
	// BlockSize is the size of the blocks Plan and Upload cut a body into.
	BlockSize int
	// Parallel bounds the block uploads, reads and deletes one call has
	// in flight, and how far a read prefetches.
	Parallel int
	// Retry bounds the tries of one create-only write (see the package
	// documentation). A zero Attempts takes DefaultRetry.
	Retry bucket.RetryPolicy
	// CacheBytes is the budget of the cache of blocks of at most
	// CacheMaxBlock bytes that reads fill (see Reading in the package
	// documentation). Zero takes DefaultCacheBytes; negative caches
	// nothing.
	CacheBytes int64
	// Cache, when set, is the cache of small blocks this Store reads
	// through, shared with the other Stores given it; CacheBytes is then
	// ignored.
	Cache *BlockCache
}

// BlockCache is a cache of verified small blocks (at most CacheMaxBlock
// bytes each) that Stores given it (Options.Cache) share, so that a
// process serving many shards bounds it once. A block is named by its
// whole key, its shard's included, so the Stores never see each other's.
type BlockCache struct {
	c *shards.Cache[cachedBlock]
}

// NewBlockCache returns a block cache of bytes (DefaultCacheBytes when
// not positive).
func NewBlockCache(bytes int64) *BlockCache {
	if bytes <= 0 {
		bytes = DefaultCacheBytes
	}
	return &BlockCache{c: shards.NewCache(bytes, cachedBlock.size)}
}

// Stats reports the cache's counters.
func (c *BlockCache) Stats() shards.CacheStats { return c.c.Stats() }

// Store stages, reads and discards the artifact bodies of one shard in
// one bucket. It is safe for concurrent use.
type Store struct {
	b      bucket.Bucket
	layout shards.Layout
	opts   Options
	cache  *shards.Cache[cachedBlock] // verified small blocks; nil: none
}

// New returns the Store of the bodies of layout's shard in b.
func New(b bucket.Bucket, layout shards.Layout, opts Options) *Store {
	if opts.BlockSize <= 0 {
		opts.BlockSize = DefaultBlockSize
	}
	if opts.Parallel <= 0 {
		opts.Parallel = DefaultParallel
	}
	if opts.Retry.Attempts <= 0 {
		opts.Retry = DefaultRetry
	}
	if opts.CacheBytes == 0 {
		opts.CacheBytes = DefaultCacheBytes
	}
	s := &Store{b: b, layout: layout, opts: opts}
	switch {
	case opts.Cache != nil:
		s.cache = opts.Cache.c
	case opts.CacheBytes > 0:
		s.cache = shards.NewCache(opts.CacheBytes, cachedBlock.size)
	}
	return s
}

// WriteLedger writes st's ledger create-only. Writing the same ledger
// again is harmless; a different object under its key is an error
// wrapping bucket.ErrPrecondition.
func (s *Store) WriteLedger(ctx context.Context, st *Staging) error {
	b, err := manifests.Encode(st.Ledger())
	if err != nil {
		return err
	}
	_, err = s.put(ctx, StagingKey(s.layout, st.Operation), b)
	return err
}

// Stage writes st's ledger and uploads its blocks, cut from data, in the
// same round: the ledger is sent beside the blocks, not before them (see
// the package documentation for why that is safe). A failed block does not
// cancel the ledger's write, so short of a crash whatever was uploaded is
// named by a ledger when Stage returns. It returns the oldest store time
// of the blocks (Stamped).
func (s *Store) Stage(ctx context.Context, st *Staging, data []byte) (time.Time, error) {
	return s.StageStream(ctx, st, func(write func([]byte) error) error { return write(data) })
}

// StageStream is Stage for a body that produce writes, as Upload takes it.
// The ledger is sent with the first block, once that block is checked
// against its plan, so that the two share a round however long the check
// takes.
func (s *Store) StageStream(ctx context.Context, st *Staging, produce func(write func([]byte) error) error) (time.Time, error) {
	ledger := make(chan error, 1)
	var once sync.Once
	send := func() { once.Do(func() { go func() { ledger <- s.WriteLedger(ctx, st) }() }) }
	oldest, uerr := s.upload(ctx, st, produce, send)
	send() // a stream that emitted nothing, or failed before its first block
	lerr := <-ledger
	if lerr != nil {
		return time.Time{}, lerr
	}
	return oldest, uerr
}

// Upload uploads st's blocks create-only and in parallel, cut from the
// stream produce writes, which must be the bytes st.Blocks were planned
// from: a block whose size or digest differs from its plan, or a stream
// of more or fewer blocks, fails with an error wrapping
// bucket.ErrIntegrity. Upload writes no ledger (StageStream writes both).
// write may keep the slices it is given until Upload returns.
//
// Upload returns the oldest of the store times of the blocks (the
// Attrs.ModTime of each write, or of the object a retried write found
// there): a command that names the blocks must be built on a head whose
// floor is no later (head.Tx.Floor), or a sweep may take them. A store
// that answers a write without a time is asked for it (Stat).
func (s *Store) Upload(ctx context.Context, st *Staging, produce func(write func([]byte) error) error) (time.Time, error) {
	return s.upload(ctx, st, produce, func() {})
}

// upload is Upload, calling sent as each block's write is started.
func (s *Store) upload(ctx context.Context, st *Staging, produce func(write func([]byte) error) error, sent func()) (time.Time, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.Parallel)
	var mu sync.Mutex
	var oldest time.Time
	n := 0
	cut := &cutter{size: s.opts.BlockSize, emit: func(b []byte) error {
		if err := gctx.Err(); err != nil {
			return err
		}
		i := n
		n++
		if i >= len(st.Blocks) || uint64(len(b)) != st.Blocks[i].Size || digest.Sum(b) != st.Blocks[i].Digest {
			return fmt.Errorf("bodies: upload block %d: bytes differ from the staging plan: %w", i, bucket.ErrIntegrity)
		}
		key := st.Blocks[i].Key
		g.Go(func() error {
			t, err := s.put(gctx, key, b)
			if err == nil {
				mu.Lock()
				if oldest.IsZero() || t.Before(oldest) {
					oldest = t
				}
				mu.Unlock()
			}
			return err
		})
		sent()
		return nil
	}}
	perr := produce(cut.write)
	if perr == nil {
		perr = cut.flush()
	}
	if perr == nil && n != len(st.Blocks) {
		perr = fmt.Errorf("bodies: upload: %d blocks, the staging plan has %d: %w", n, len(st.Blocks), bucket.ErrIntegrity)
	}
	werr := g.Wait()
	if perr != nil && !(errors.Is(perr, context.Canceled) && werr != nil) {
		return time.Time{}, perr
	}
	if werr != nil {
		return time.Time{}, werr
	}
	return oldest, nil
}

// put writes a new immutable object create-only, retrying transient
// failures under the Store's policy, and returns the store time of the
// object. A precondition failure means the key is taken, most often by
// an earlier try whose answer was lost: the object's bytes then match and
// the write succeeded. Different bytes are an error wrapping
// bucket.ErrPrecondition, which is not retried.
func (s *Store) put(ctx context.Context, key string, body []byte) (time.Time, error) {
	var stamp time.Time
	err := bucket.Retry(ctx, s.opts.Retry, func(ctx context.Context) error {
		attrs, err := s.b.Put(ctx, key, body, bucket.IfAbsent())
		if err == nil {
			stamp = attrs.ModTime
			return nil
		}
		if !errors.Is(err, bucket.ErrPrecondition) {
			return err
		}
		got, gattrs, err := s.b.Get(ctx, key)
		if err != nil {
			return err
		}
		if !bytes.Equal(got, body) {
			return fmt.Errorf("bodies: put %q: a different object exists: %w", key, bucket.ErrPrecondition)
		}
		stamp = gattrs.ModTime
		return nil
	})
	if err == nil && stamp.IsZero() {
		attrs, serr := s.b.Stat(ctx, key)
		if serr != nil {
			return time.Time{}, serr
		}
		stamp = attrs.ModTime
	}
	return stamp, err
}

// Discard deletes the objects of a staging whose publication did not
// land: its blocks first, then, only when every block is gone, its ledger,
// so that whatever a failure leaves behind is still named by the ledger.
func (s *Store) Discard(ctx context.Context, st *Staging) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.Parallel)
	for _, b := range st.Blocks {
		g.Go(func() error { return s.b.Delete(gctx, b.Key, bucket.Unconditional) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return s.DropLedger(ctx, st.Operation)
}

// DeleteBlock deletes the block object under key, which a collection
// found no state left to read, and drops it from the cache. A block
// already gone is no error; a delete whose outcome is unknown returns
// bucket.ErrAmbiguous, which the caller must settle before it records the
// block as gone.
func (s *Store) DeleteBlock(ctx context.Context, key string) error {
	if s.cache != nil {
		s.cache.Remove(objectCacheKey(key))
	}
	return s.b.Delete(ctx, key, bucket.Unconditional)
}

// DropLedger deletes the ledger of operation, whose publication landed:
// the metadata it committed owns the blocks now.
func (s *Store) DropLedger(ctx context.Context, operation [16]byte) error {
	return s.b.Delete(ctx, StagingKey(s.layout, operation), bucket.Unconditional)
}
