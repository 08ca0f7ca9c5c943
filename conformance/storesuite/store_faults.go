package storesuite

// The wrappers the store suite puts between the replicas and the shared
// bucket, beside the fault injectors of bucket/fault.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// storeCASCounter counts the outcomes of conditional puts of the head as
// the shared bucket answers them (below every fault injector).
type storeCASCounter struct {
	bucket.Bucket
	head      string
	landed    *atomic.Int64
	conflicts *atomic.Int64
}

func (c *storeCASCounter) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := c.Bucket.Put(ctx, key, body, cond)
	if _, ok := cond.Version(); ok && key == c.head {
		switch {
		case err == nil:
			c.landed.Add(1)
		case errors.Is(err, bucket.ErrPrecondition):
			c.conflicts.Add(1)
		}
	}
	return a, err
}

// storeFence refuses the replicas' writes once the clients are done, so
// that nothing lands while the auditor reads. A write holds inflight's
// read lock while it is with the store, so that the closer, which takes
// the write lock after closing, waits for the writes already past the
// fence to finish: one of them could otherwise land after the audit's
// pin.
type storeFence struct {
	bucket.Bucket
	closed   *atomic.Bool
	inflight *sync.RWMutex
}

var errStoreFenced = errors.New("conformance: the run is over")

func (f *storeFence) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	f.inflight.RLock()
	defer f.inflight.RUnlock()
	if f.closed.Load() {
		return bucket.Attrs{}, fmt.Errorf("conformance: put %q: %w: %w", key, errStoreFenced, bucket.ErrUnavailable)
	}
	return f.Bucket.Put(ctx, key, body, cond)
}

func (f *storeFence) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	f.inflight.RLock()
	defer f.inflight.RUnlock()
	if f.closed.Load() {
		return fmt.Errorf("conformance: delete %q: %w: %w", key, errStoreFenced, bucket.ErrUnavailable)
	}
	return f.Bucket.Delete(ctx, key, cond)
}

// storeLateWrites answers some conditional puts of the head with
// ErrAmbiguous at once and sends them on a few milliseconds later, as when
// a caller gives up on a request the store is still processing. The late
// write lands if its condition still holds when it arrives.
type storeLateWrites struct {
	bucket.Bucket               // the replica's way to the store
	direct        bucket.Bucket // where late writes go
	head          string
	p             float64
	wg            *sync.WaitGroup
	fired         atomic.Int64

	mu  sync.Mutex
	on  bool
	rng *rand.Rand
}

// enable turns the late writes on or off. Once off, no late write starts.
func (l *storeLateWrites) enable(on bool) {
	l.mu.Lock()
	l.on = on
	l.mu.Unlock()
}

func (l *storeLateWrites) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if _, ok := cond.Version(); !ok || key != l.head || l.p <= 0 || ctx.Err() != nil {
		return l.Bucket.Put(ctx, key, body, cond)
	}
	l.mu.Lock()
	fire := l.on && l.rng.Float64() < l.p
	delay := time.Duration(l.rng.IntN(5000)) * time.Microsecond
	if fire {
		l.wg.Add(1)
	}
	l.mu.Unlock()
	if !fire {
		return l.Bucket.Put(ctx, key, body, cond)
	}
	l.fired.Add(1)
	body = slices.Clone(body)
	go func() {
		defer l.wg.Done()
		time.Sleep(delay)
		l.direct.Put(context.Background(), key, body, cond)
	}()
	return bucket.Attrs{}, fmt.Errorf("conformance: put %q: no answer, the write is still on its way: %w", key, bucket.ErrAmbiguous)
}
