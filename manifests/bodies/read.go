package bodies

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// Stream calls fn with the bytes of blocks, block by block in order, each
// checked against its size and digest before fn sees it. It fetches up to
// Options.Parallel blocks ahead of the one fn is given, one GET each, so a
// body of at most that many blocks costs one round of requests. It stops
// at the first error, a failed fetch or fn's, and returns it after the
// fetches in flight have ended. Reads are not retried.
func (s *Store) Stream(ctx context.Context, blocks []Block, fn func([]byte) error) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()

	type fetched struct {
		b   []byte
		err error
	}
	slots := make([]chan fetched, len(blocks))
	next := 0 // the next block to fetch
	for i := range blocks {
		for ; next < len(blocks) && next < i+s.opts.Parallel; next++ {
			slots[next] = make(chan fetched, 1)
			wg.Add(1)
			go func(blk Block, out chan<- fetched) {
				defer wg.Done()
				b, err := s.fetch(ctx, blk)
				out <- fetched{b, err}
			}(blocks[next], slots[next])
		}
		r := <-slots[i]
		if r.err != nil {
			return r.err
		}
		if err := fn(r.b); err != nil {
			return err
		}
	}
	return nil
}

// VerifySlice checks bytes offset..offset+size of a block object against
// want: the one check every reader of a block makes (reads, and the
// walks of sweeps, pins and fsck). A slice outside the object, or bytes
// of another digest, is bucket.ErrIntegrity.
func VerifySlice(obj []byte, offset, size uint64, want digest.Hash) error {
	if offset > uint64(len(obj)) || size > uint64(len(obj))-offset {
		return fmt.Errorf("%d bytes, want [%d, %d): %w", len(obj), offset, offset+size, bucket.ErrIntegrity)
	}
	return digest.Verify(obj[offset:offset+size], want)
}

// fetch reads one block, or takes the bytes it holds, and checks it.
func (s *Store) fetch(ctx context.Context, blk Block) ([]byte, error) {
	if blk.Data != nil {
		if uint64(len(blk.Data)) != blk.Size {
			return nil, fmt.Errorf("bodies: inline block %d: %d bytes, want %d: %w", blk.Index, len(blk.Data), blk.Size, bucket.ErrIntegrity)
		}
		if err := digest.Verify(blk.Data, blk.Digest); err != nil {
			return nil, fmt.Errorf("bodies: inline block %d: %w", blk.Index, err)
		}
		return blk.Data, nil
	}
	ck, cacheable := s.cacheKey(blk)
	if cacheable {
		if c, ok := s.cache.Get(ck); ok && c.digest == blk.Digest && uint64(len(c.b)) == blk.Size {
			return c.b, nil
		}
	}
	var obj []byte
	var err error
	if f := blk.pre; f != nil {
		select {
		case <-f.done:
			obj, err = f.obj, f.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if obj == nil || err != nil {
		// Not fetched ahead, or the read ahead failed: read it now.
		if obj, _, err = s.b.Get(ctx, blk.Key); err != nil {
			return nil, err
		}
	}
	if err := VerifySlice(obj, blk.Offset, blk.Size, blk.Digest); err != nil {
		return nil, fmt.Errorf("bodies: block %s: %w", blk.Key, err)
	}
	b := obj[blk.Offset : blk.Offset+blk.Size]
	if cacheable && blk.Size == uint64(len(obj)) {
		s.cache.Add(ck, cachedBlock{digest: blk.Digest, b: b})
	}
	return b, nil
}

// cachedBlock is a block in the cache: the whole object read from a key,
// and the digest it was verified against.
type cachedBlock struct {
	digest digest.Hash
	b      []byte
}

func (c cachedBlock) size() int64 { return int64(len(c.b)) + 64 }

// cacheKey names a block in the cache by the object key it was read
// from. Only blocks that are a whole object of at most CacheMaxBlock
// bytes are cached, after their digest was checked, and a hit counts only
// when the digest the caller expects is the one they were checked
// against: the cache is content-addressed by key and digest. Callers must
// not modify what Stream hands them.
func (s *Store) cacheKey(blk Block) (digest.Hash, bool) {
	if s.cache == nil || blk.Offset != 0 || blk.Size > CacheMaxBlock {
		return digest.Hash{}, false
	}
	return objectCacheKey(blk.Key), true
}

func objectCacheKey(key string) digest.Hash {
	return digest.Sum(append([]byte("cairn.bodies.block.v1\x00"), key...))
}

// CacheStats reports the counters of the cache of small blocks (all zero
// when it is off).
func (s *Store) CacheStats() shards.CacheStats {
	if s.cache == nil {
		return shards.CacheStats{}
	}
	return s.cache.Stats()
}

// Fetch is the read of one block object started before its Block is
// known: a caller that can derive a block's key (BlockKey of
// the revision and index 0) fetches it in the same round as the metadata
// that describes it, then checks it against that metadata (Use).
type Fetch struct {
	key  string
	done chan struct{}
	obj  []byte
	err  error
}

// Prefetch starts reading the object at key. The read ends with ctx. It
// returns nil, and reads nothing, when the cache holds a block read from
// key: Stream will find it there.
func (s *Store) Prefetch(ctx context.Context, key string) *Fetch {
	if s.cache != nil {
		if _, ok := s.cache.Get(objectCacheKey(key)); ok {
			return nil
		}
	}
	f := &Fetch{key: key, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		f.obj, _, f.err = s.b.Get(ctx, key)
	}()
	return f
}

// BlockKey returns the key of block index of revision rev of root.
func (s *Store) BlockKey(root, rev [16]byte, index uint64) string {
	return BlockKey(s.layout, root, rev, index)
}

// Use returns blk to be read by f when blk names the object f reads (and
// holds no bytes); otherwise blk unchanged. It does not wait: Stream takes
// the bytes when f's read ends, reads the object again if it failed, and
// checks them against blk's size and digest like any other.
func (f *Fetch) Use(blk Block) Block {
	if f == nil || blk.Data != nil || blk.Key != f.key {
		return blk
	}
	blk.pre = f
	return blk
}
