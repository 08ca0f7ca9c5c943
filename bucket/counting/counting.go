// Package counting wraps a bucket.Bucket and counts what goes through it:
// requests, errors and body bytes per operation, and the number of
// sequential round trips. cairn's tests and benchmarks use it to check how
// many requests, and how many waits on the store, an operation costs.
//
// # What is counted
//
// Every call of Get, Stat, Put, Delete and List counts as one request of
// its operation when it returns, including calls the inner bucket refuses
// before any I/O (an invalid key, a cancelled context). A call that
// returns a non-nil error also counts as an error. BytesRead is the length
// of the bodies successful Gets return; BytesWritten is the length of the
// bodies of every Put, successful or not, since a store receives the body
// before it evaluates a precondition. Capabilities and Close are forwarded
// and not counted.
//
// # Rounds
//
// Rounds measures latency in round trips rather than in requests. Each
// request starts and ends on a logical clock: the order of updates of the
// wrapper's in-flight count, which one lock serializes. A round is a
// maximal group of requests whose (start, end) intervals overlap, directly
// or through other requests of the group: it begins when a request starts
// while none is in flight and ends when the in-flight count falls back to
// zero. So N requests issued together and awaited together are one round,
// and N requests issued one after the other are N rounds. A round is
// counted once, when its first request since the last Reset starts: a
// round in progress at Reset is counted again only if a request starts in
// it afterwards. MaxInFlight is the largest number of requests in
// flight at once since Reset.
//
// Rounds are those of this wrapper only: two wrappers over one store
// count independently.
//
// All methods are safe for concurrent use.
package counting

import (
	"context"
	"sync"

	"github.com/cairnstore/cairn/bucket"
)

// OpStats are the counts of one operation.
type OpStats struct {
	Requests     int64 // calls that returned
	Errors       int64 // calls that returned a non-nil error
	BytesRead    int64 // body bytes returned by successful Gets
	BytesWritten int64 // body bytes of every Put
}

func (s *OpStats) add(o OpStats) {
	s.Requests += o.Requests
	s.Errors += o.Errors
	s.BytesRead += o.BytesRead
	s.BytesWritten += o.BytesWritten
}

// Stats is a snapshot of the counts since the last Reset.
type Stats struct {
	Get, Stat, Put, Delete, List OpStats

	// Rounds is the number of sequential round trips (see the package
	// documentation).
	Rounds int64
	// MaxInFlight is the largest number of concurrent requests seen.
	MaxInFlight int64
}

// Total sums the counts of every operation.
func (s Stats) Total() OpStats {
	var t OpStats
	for _, o := range []OpStats{s.Get, s.Stat, s.Put, s.Delete, s.List} {
		t.add(o)
	}
	return t
}

// Bucket counts the requests made to an inner bucket.
type Bucket struct {
	inner bucket.Bucket

	mu       sync.Mutex
	stats    Stats
	inFlight int64
	counted  bool // the round in progress has been counted since Reset
}

var _ bucket.Bucket = (*Bucket)(nil)

// New returns a Bucket that forwards every call to inner and counts it.
func New(inner bucket.Bucket) *Bucket { return &Bucket{inner: inner} }

// Snapshot returns the counts since the last Reset (or New).
func (b *Bucket) Snapshot() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

// Reset sets every count to zero. Requests in flight when Reset is called
// are counted, when they return, towards the new period.
func (b *Bucket) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats = Stats{}
	b.counted = false
}

// start records the start of a request.
func (b *Bucket) start() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight++
	if !b.counted {
		b.stats.Rounds++
		b.counted = true
	}
	b.stats.MaxInFlight = max(b.stats.MaxInFlight, b.inFlight)
}

// end records the end of a request with its counts.
func (b *Bucket) end(op *OpStats, err error, read, written int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inFlight--
	if b.inFlight == 0 {
		b.counted = false
	}
	o := OpStats{Requests: 1, BytesRead: int64(read), BytesWritten: int64(written)}
	if err != nil {
		o.Errors = 1
	}
	op.add(o)
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	b.start()
	body, a, err := b.inner.Get(ctx, key)
	n := 0
	if err == nil {
		n = len(body)
	}
	b.end(&b.stats.Get, err, n, 0)
	return body, a, err
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	b.start()
	a, err := b.inner.Stat(ctx, key)
	b.end(&b.stats.Stat, err, 0, 0)
	return a, err
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	b.start()
	a, err := b.inner.Put(ctx, key, body, cond)
	b.end(&b.stats.Put, err, 0, len(body))
	return a, err
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	b.start()
	err := b.inner.Delete(ctx, key, cond)
	b.end(&b.stats.Delete, err, 0, 0)
	return err
}

// List implements bucket.Bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	b.start()
	p, err := b.inner.List(ctx, opts)
	b.end(&b.stats.List, err, 0, 0)
	return p, err
}

// Capabilities returns the inner bucket's capabilities.
func (b *Bucket) Capabilities() bucket.Capabilities { return b.inner.Capabilities() }

// Close closes the inner bucket.
func (b *Bucket) Close() error { return b.inner.Close() }
