package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// A bucket whose clock the test sets: clocked://NAME opens the bucket
// newClocked registered under NAME (a mem bucket, or any URL) and stamps
// every object written through it with the time of NAME's clock, which it
// reports as the object's ModTime. The sweep reads the store's clock from
// such a time (it writes a probe), so moving the clock ages every object
// at once, as if hours had passed. The times live in this process.

func init() {
	bucket.Register("clocked", openClocked)
}

// storeClock is one clocked bucket's clock, the bucket it wraps, and the
// times of its objects.
type storeClock struct {
	inner string // URL
	mu    sync.Mutex
	now   time.Time
	times sync.Map // key → time.Time
}

func (c *storeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *storeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

var (
	storeClocksMu sync.Mutex
	storeClocks   = map[string]*storeClock{}
)

// newClockMem returns the URL of a fresh clocked mem bucket and its
// clock, set to this machine's time.
func newClockMem(t testing.TB, name string) (string, *storeClock) {
	t.Helper()
	name = fmt.Sprintf("%s-%d", name, time.Now().UnixNano())
	return newClocked(t, name, "mem://"+name)
}

// newClocked returns the URL of a clocked bucket over the bucket inner
// names, and its clock, set to this machine's time.
func newClocked(t testing.TB, name, inner string) (string, *storeClock) {
	t.Helper()
	c := &storeClock{inner: inner, now: time.Now()}
	storeClocksMu.Lock()
	defer storeClocksMu.Unlock()
	if storeClocks[name] != nil {
		t.Fatalf("clocked bucket %q exists", name)
	}
	storeClocks[name] = c
	return "clocked://" + name, c
}

func openClocked(ctx context.Context, u *url.URL) (bucket.Bucket, error) {
	storeClocksMu.Lock()
	c := storeClocks[u.Host]
	storeClocksMu.Unlock()
	if c == nil {
		return nil, fmt.Errorf("clocked: no clock for %q (newClocked)", u.Host)
	}
	inner, err := bucket.Open(ctx, c.inner)
	if err != nil {
		return nil, err
	}
	return &clockedBucket{Bucket: inner, c: c}, nil
}

type clockedBucket struct {
	bucket.Bucket
	c *storeClock
}

func (b *clockedBucket) stamp(a bucket.Attrs) bucket.Attrs {
	a.ModTime = time.Time{}
	if t, ok := b.c.times.Load(a.Key); ok {
		a.ModTime = t.(time.Time)
	}
	return a
}

func (b *clockedBucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	body, a, err := b.Bucket.Get(ctx, key)
	if err != nil {
		return nil, a, err
	}
	return body, b.stamp(a), nil
}

func (b *clockedBucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	a, err := b.Bucket.Stat(ctx, key)
	if err != nil {
		return a, err
	}
	return b.stamp(a), nil
}

func (b *clockedBucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := b.Bucket.Put(ctx, key, body, cond)
	if err != nil {
		return a, err
	}
	b.c.times.Store(key, b.c.Now())
	return b.stamp(a), nil
}

func (b *clockedBucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	page, err := b.Bucket.List(ctx, opts)
	if err != nil {
		return page, err
	}
	for i := range page.Objects {
		page.Objects[i] = b.stamp(page.Objects[i])
	}
	return page, nil
}
