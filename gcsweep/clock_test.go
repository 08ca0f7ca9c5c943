package gcsweep_test

import (
	"context"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// clockBucket stamps every object it writes with a fake store clock and
// reports that time as its ModTime, so that tests decide how old objects
// are. Several clockBuckets over one inner bucket must share one times
// (newClockBuckets). With noTimes it reports no ModTime at all, as an
// adapter that gives none.
type clockBucket struct {
	bucket.Bucket
	clock   *fakeClock
	times   *sync.Map // key → time.Time
	noTimes bool
}

func newClockBucket(inner bucket.Bucket, clock *fakeClock, times *sync.Map) *clockBucket {
	if times == nil {
		times = &sync.Map{}
	}
	return &clockBucket{Bucket: inner, clock: clock, times: times}
}

func (b *clockBucket) stamp(a bucket.Attrs) bucket.Attrs {
	a.ModTime = time.Time{}
	if t, ok := b.times.Load(a.Key); ok && !b.noTimes {
		a.ModTime = t.(time.Time)
	}
	return a
}

func (b *clockBucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	body, a, err := b.Bucket.Get(ctx, key)
	if err != nil {
		return nil, a, err
	}
	return body, b.stamp(a), nil
}

func (b *clockBucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	a, err := b.Bucket.Stat(ctx, key)
	if err != nil {
		return a, err
	}
	return b.stamp(a), nil
}

func (b *clockBucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	a, err := b.Bucket.Put(ctx, key, body, cond)
	if err != nil {
		return a, err
	}
	b.times.Store(key, b.clock.Now())
	return b.stamp(a), nil
}

func (b *clockBucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	page, err := b.Bucket.List(ctx, opts)
	if err != nil {
		return page, err
	}
	for i := range page.Objects {
		page.Objects[i] = b.stamp(page.Objects[i])
	}
	return page, nil
}
