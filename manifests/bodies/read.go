package bodies

import (
	"context"
	"fmt"
	"sync"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
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

// fetch reads one block and checks it.
func (s *Store) fetch(ctx context.Context, blk Block) ([]byte, error) {
	obj, _, err := s.b.Get(ctx, blk.Key)
	if err != nil {
		return nil, err
	}
	if blk.Offset > uint64(len(obj)) || blk.Size > uint64(len(obj))-blk.Offset {
		return nil, fmt.Errorf("bodies: block %s: %d bytes, want [%d, %d): %w", blk.Key, len(obj), blk.Offset, blk.Offset+blk.Size, bucket.ErrIntegrity)
	}
	b := obj[blk.Offset : blk.Offset+blk.Size]
	if err := digest.Verify(b, blk.Digest); err != nil {
		return nil, fmt.Errorf("bodies: block %s: %w", blk.Key, err)
	}
	return b, nil
}
