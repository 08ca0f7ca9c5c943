// Package latency wraps a bucket.Bucket to behave like a remote store:
// each request waits a configurable delay first, and writes to one object
// name are rate-limited as GCS limits them. cairn's benchmarks use it to
// measure round trips, and its tests to meet throttling.
//
// # Delay
//
// Every Get, Stat, Put, Delete and List first waits Options.PerRequest
// plus a uniformly random extra in [0, Options.Jitter), drawn from a
// generator seeded with Options.Seed, so a sequence of calls gets the same
// delays on every run. The wait honours ctx: if ctx has ended or ends
// first, the call returns an error satisfying errors.Is(err, ctx.Err())
// without reaching the inner bucket or taking a write slot. A call whose
// key breaks the key rules goes straight to the inner bucket, without
// delay or throttling, so that it fails with ErrInvalidKey as before any
// I/O. Capabilities and Close are forwarded at once.
//
// # Per-object write rate
//
// GCS accepts about one write per second to one object name and answers
// 429 above that. With Options.WritesPerSecondPerObject = r > 0, the
// wrapper remembers, per key, when it last forwarded a Put or a Delete of
// that key. A Put or Delete of the same key less than 1/r after it (as
// Options.Now tells, after the delay) fails with an error wrapping
// bucket.ErrThrottled and never reaches the inner bucket. A write that is
// forwarded takes the key's slot whatever the inner bucket answers (a
// precondition failure included): the model counts requests, not
// successes, which is the cautious reading of the store's limit. Of
// concurrent writes to one key, at most one per window is forwarded.
// Entries older than the window are pruned as the table grows, so its size
// stays within about twice the number of keys written in the last window.
package latency

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// Options configure the wrapper. The zero value adds nothing.
type Options struct {
	// PerRequest is the delay before every request.
	PerRequest time.Duration
	// Jitter, if positive, adds a uniformly random delay in [0, Jitter).
	Jitter time.Duration
	// Seed seeds the jitter's generator.
	Seed uint64

	// WritesPerSecondPerObject, if positive, limits Puts and Deletes of one
	// key to this rate; faster writes fail with bucket.ErrThrottled.
	WritesPerSecondPerObject float64

	// Now tells the time for the rate limit. Nil means time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends, returning ctx.Err() in that case.
	// Nil means bucket.Sleep. Tests give a fake to avoid real waits.
	Sleep func(ctx context.Context, d time.Duration) error
}

// Bucket delays and throttles the requests made to an inner bucket.
type Bucket struct {
	inner  bucket.Bucket
	opts   Options
	window time.Duration // 0: no rate limit

	randMu sync.Mutex
	rand   *rand.Rand

	mu        sync.Mutex
	lastWrite map[string]time.Time
	pruneAt   int // prune when lastWrite has this many entries

	throttled atomic.Int64
}

var _ bucket.Bucket = (*Bucket)(nil)

// minPrune is the table size below which lastWrite is never pruned.
const minPrune = 64

// New returns a Bucket that forwards to inner with the delays and limits
// of opts.
func New(inner bucket.Bucket, opts Options) *Bucket {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Sleep == nil {
		opts.Sleep = bucket.Sleep
	}
	b := &Bucket{
		inner:     inner,
		opts:      opts,
		rand:      rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15)),
		lastWrite: map[string]time.Time{},
		pruneAt:   minPrune,
	}
	if r := opts.WritesPerSecondPerObject; r > 0 {
		b.window = time.Duration(float64(time.Second) / r)
	}
	return b
}

// Throttled returns how many writes failed with ErrThrottled.
func (b *Bucket) Throttled() int64 { return b.throttled.Load() }

// wait waits the request's delay and fails if ctx has ended.
func (b *Bucket) wait(ctx context.Context, op, key string) error {
	d := b.opts.PerRequest
	if b.opts.Jitter > 0 {
		b.randMu.Lock()
		d += time.Duration(b.rand.Int64N(int64(b.opts.Jitter)))
		b.randMu.Unlock()
	}
	err := ctx.Err()
	if err == nil && d > 0 {
		err = b.opts.Sleep(ctx, d)
	}
	if err != nil {
		return fmt.Errorf("latency: %s %q: %w", op, key, err)
	}
	return nil
}

// admit takes key's write slot or fails with ErrThrottled.
func (b *Bucket) admit(op, key string) error {
	if b.window <= 0 {
		return nil
	}
	now := b.opts.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if last, ok := b.lastWrite[key]; ok && now.Sub(last) < b.window {
		b.throttled.Add(1)
		return fmt.Errorf("latency: %s %q: %w: more than %g writes per second to one object",
			op, key, bucket.ErrThrottled, b.opts.WritesPerSecondPerObject)
	}
	b.lastWrite[key] = now
	if len(b.lastWrite) >= b.pruneAt {
		for k, t := range b.lastWrite {
			if now.Sub(t) >= b.window {
				delete(b.lastWrite, k)
			}
		}
		b.pruneAt = max(minPrune, 2*len(b.lastWrite))
	}
	return nil
}

// before runs what precedes a request: the delay and, for writes, the rate
// limit. A call with an invalid key skips both.
func (b *Bucket) before(ctx context.Context, op, key string, write bool) error {
	if bucket.ValidateKey(key) != nil {
		return nil
	}
	if err := b.wait(ctx, op, key); err != nil {
		return err
	}
	if write {
		return b.admit(op, key)
	}
	return nil
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	if err := b.before(ctx, "get", key, false); err != nil {
		return nil, bucket.Attrs{}, err
	}
	return b.inner.Get(ctx, key)
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	if err := b.before(ctx, "stat", key, false); err != nil {
		return bucket.Attrs{}, err
	}
	return b.inner.Stat(ctx, key)
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if err := b.before(ctx, "put", key, true); err != nil {
		return bucket.Attrs{}, err
	}
	return b.inner.Put(ctx, key, body, cond)
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	if err := b.before(ctx, "delete", key, true); err != nil {
		return err
	}
	return b.inner.Delete(ctx, key, cond)
}

// List implements bucket.Bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if err := b.wait(ctx, "list", opts.Prefix); err != nil {
		return bucket.ListPage{}, err
	}
	return b.inner.List(ctx, opts)
}

// Capabilities returns the inner bucket's capabilities.
func (b *Bucket) Capabilities() bucket.Capabilities { return b.inner.Capabilities() }

// Close closes the inner bucket.
func (b *Bucket) Close() error { return b.inner.Close() }
