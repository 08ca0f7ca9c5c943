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
// # Kinds
//
// Kinds counts the requests by what they ask of the store (Kind):
// a Put as unconditional, create-only or replace-if-version, and also as
// empty or large by its body; a Delete as unconditional or conditional; a
// Get or Stat, and also whether it found nothing; a List, and also
// whether it used a delimiter, a start key or a page token; and any
// request whose context had ended before it was made, whose key was
// refused, or whose key is long. The conformance suite's table of what
// cairn relies on is checked against the kinds cairn's commands make.
//
// All methods are safe for concurrent use.
package counting

import (
	"context"
	"errors"
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

// Kind is one kind of request (see the package documentation).
type Kind string

// The kinds of request. A request counts as one of the first group for
// its operation and condition, and also as each of the others that
// applies.
const (
	KindGet             Kind = "get"
	KindStat            Kind = "stat"
	KindPut             Kind = "put"               // unconditional
	KindPutIfAbsent     Kind = "put-if-absent"     // create-only
	KindPutIfVersion    Kind = "put-if-version"    // replace-if-version
	KindDelete          Kind = "delete"            // unconditional
	KindDeleteIfVersion Kind = "delete-if-version" // conditional
	KindList            Kind = "list"

	KindGetMissing     Kind = "get-missing"      // a Get that found no object
	KindStatMissing    Kind = "stat-missing"     // a Stat that found no object
	KindPutEmpty       Kind = "put-empty"        // a Put of an empty body
	KindPutLarge       Kind = "put-large"        // a Put of LargeBody bytes or more
	KindListDelimiter  Kind = "list-delimiter"   // a List with a Delimiter
	KindListStartAfter Kind = "list-start-after" // a List with a StartAfter
	KindListNextPage   Kind = "list-next-page"   // a List that follows a NextPageToken
	KindContextEnded   Kind = "context-ended"    // a request made with a context that had ended
	KindInvalidKey     Kind = "invalid-key"      // a request refused with bucket.ErrInvalidKey
	KindLongKey        Kind = "long-key"         // a request whose key is longer than LongKey bytes
)

// Kinds lists every Kind.
var Kinds = []Kind{
	KindGet, KindStat, KindPut, KindPutIfAbsent, KindPutIfVersion, KindDelete, KindDeleteIfVersion, KindList,
	KindGetMissing, KindStatMissing, KindPutEmpty, KindPutLarge, KindListDelimiter, KindListStartAfter,
	KindListNextPage, KindContextEnded, KindInvalidKey, KindLongKey,
}

// Thresholds of KindPutLarge and KindLongKey.
const (
	LargeBody = 1 << 20
	LongKey   = 256
)

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
	kinds    map[Kind]int64
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

// Kinds returns the requests of each kind since the last Reset (or New);
// a kind never made is absent.
func (b *Bucket) Kinds() map[Kind]int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := make(map[Kind]int64, len(b.kinds))
	for k, n := range b.kinds {
		m[k] = n
	}
	return m
}

// Reset sets every count to zero. Requests in flight when Reset is called
// are counted, when they return, towards the new period.
func (b *Bucket) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats = Stats{}
	b.kinds = nil
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

// end records the end of a request with its counts and kinds.
func (b *Bucket) end(op *OpStats, err error, read, written int, kinds ...Kind) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.kinds == nil {
		b.kinds = map[Kind]int64{}
	}
	for _, k := range kinds {
		b.kinds[k]++
	}
	if errors.Is(err, bucket.ErrInvalidKey) {
		b.kinds[KindInvalidKey]++
	}
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

// common returns the kinds every request of key with ctx has.
func common(ctx context.Context, key string, kinds ...Kind) []Kind {
	if ctx.Err() != nil {
		kinds = append(kinds, KindContextEnded)
	}
	if len(key) > LongKey {
		kinds = append(kinds, KindLongKey)
	}
	return kinds
}

// Get implements bucket.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	kinds := common(ctx, key, KindGet)
	b.start()
	body, a, err := b.inner.Get(ctx, key)
	n := 0
	if err == nil {
		n = len(body)
	}
	if errors.Is(err, bucket.ErrNotExist) {
		kinds = append(kinds, KindGetMissing)
	}
	b.end(&b.stats.Get, err, n, 0, kinds...)
	return body, a, err
}

// Stat implements bucket.Bucket.
func (b *Bucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	kinds := common(ctx, key, KindStat)
	b.start()
	a, err := b.inner.Stat(ctx, key)
	if errors.Is(err, bucket.ErrNotExist) {
		kinds = append(kinds, KindStatMissing)
	}
	b.end(&b.stats.Stat, err, 0, 0, kinds...)
	return a, err
}

// Put implements bucket.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	kind := KindPut
	if cond.IsAbsent() {
		kind = KindPutIfAbsent
	} else if _, ok := cond.Version(); ok {
		kind = KindPutIfVersion
	}
	kinds := common(ctx, key, kind)
	switch {
	case len(body) == 0:
		kinds = append(kinds, KindPutEmpty)
	case len(body) >= LargeBody:
		kinds = append(kinds, KindPutLarge)
	}
	b.start()
	a, err := b.inner.Put(ctx, key, body, cond)
	b.end(&b.stats.Put, err, 0, len(body), kinds...)
	return a, err
}

// Delete implements bucket.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	kind := KindDelete
	if _, ok := cond.Version(); ok {
		kind = KindDeleteIfVersion
	}
	kinds := common(ctx, key, kind)
	b.start()
	err := b.inner.Delete(ctx, key, cond)
	b.end(&b.stats.Delete, err, 0, 0, kinds...)
	return err
}

// List implements bucket.Bucket.
func (b *Bucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	kinds := common(ctx, opts.Prefix, KindList)
	if opts.Delimiter != "" {
		kinds = append(kinds, KindListDelimiter)
	}
	if opts.StartAfter != "" {
		kinds = append(kinds, KindListStartAfter)
	}
	if opts.PageToken != "" {
		kinds = append(kinds, KindListNextPage)
	}
	b.start()
	p, err := b.inner.List(ctx, opts)
	b.end(&b.stats.List, err, 0, 0, kinds...)
	return p, err
}

// Capabilities returns the inner bucket's capabilities.
func (b *Bucket) Capabilities() bucket.Capabilities { return b.inner.Capabilities() }

// Close closes the inner bucket.
func (b *Bucket) Close() error { return b.inner.Close() }
