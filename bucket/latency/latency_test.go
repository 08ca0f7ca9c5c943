package latency_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts latency.Options
	}{
		{"zero", latency.Options{}},
		// A real, tiny delay: the delaying path is transparent too.
		{"delay", latency.Options{PerRequest: time.Microsecond, Jitter: time.Microsecond}},
	} {
		for _, prefix := range []string{"", "some/prefix/"} {
			t.Run(tc.name+"/prefix="+prefix, func(t *testing.T) {
				conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
					m, err := mem.New(mem.NewStore(), prefix)
					if err != nil {
						return nil, err
					}
					return latency.New(m, tc.opts), nil
				}, conformance.BucketOptions{})
			})
		}
	}
}

// clock is a fake time source whose Sleep advances the time at once.
type clock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newClock() *clock { return &clock{now: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	c.slept = append(c.slept, d)
	return nil
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.slept)
}

func (c *clock) opts(o latency.Options) latency.Options {
	o.Now, o.Sleep = c.Now, c.Sleep
	return o
}

func TestDelaysEveryRequest(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	start := c.Now()
	b := latency.New(mem.NewBucket(), c.opts(latency.Options{PerRequest: 10 * time.Millisecond}))
	if _, err := b.Put(ctx, "k", []byte("v"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Stat(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.List(ctx, bucket.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "k", bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	b.Capabilities()
	want := slices.Repeat([]time.Duration{10 * time.Millisecond}, 5)
	if got := c.Slept(); !slices.Equal(got, want) {
		t.Fatalf("slept %v, want %v", got, want)
	}
	if got, want := c.Now().Sub(start), 50*time.Millisecond; got != want {
		t.Fatalf("clock advanced %v, want %v", got, want)
	}
}

func TestInvalidKeyIsNotDelayed(t *testing.T) {
	c := newClock()
	b := latency.New(mem.NewBucket(), c.opts(latency.Options{PerRequest: time.Hour, WritesPerSecondPerObject: 1}))
	for range 2 {
		if _, err := b.Put(t.Context(), "", []byte("v"), bucket.Unconditional); !errors.Is(err, bucket.ErrInvalidKey) {
			t.Fatalf("put invalid key: %v, want ErrInvalidKey", err)
		}
	}
	if got := c.Slept(); len(got) != 0 {
		t.Fatalf("slept %v for an invalid key", got)
	}
}

func TestJitterIsSeeded(t *testing.T) {
	const per, jitter = 10 * time.Millisecond, 5 * time.Millisecond
	run := func(seed uint64) []time.Duration {
		c := newClock()
		b := latency.New(mem.NewBucket(), c.opts(latency.Options{PerRequest: per, Jitter: jitter, Seed: seed}))
		for range 20 {
			b.Stat(t.Context(), "k")
		}
		return c.Slept()
	}
	a, again, other := run(7), run(7), run(8)
	if !slices.Equal(a, again) {
		t.Fatalf("same seed, different delays:\n%v\n%v", a, again)
	}
	if slices.Equal(a, other) {
		t.Fatalf("seeds 7 and 8 gave the same delays %v", a)
	}
	for _, d := range a {
		if d < per || d >= per+jitter {
			t.Fatalf("delay %v outside [%v, %v)", d, per, per+jitter)
		}
	}
	if slices.Min(a) == slices.Max(a) {
		t.Fatalf("jitter added nothing: %v", a)
	}
}

func TestSleepHonoursContext(t *testing.T) {
	m := mem.NewBucket()
	b := latency.New(m, latency.Options{PerRequest: time.Hour}) // the real timer

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Put(cancelled, "k", []byte("v"), bucket.Unconditional); !errors.Is(err, context.Canceled) {
		t.Fatalf("put with a cancelled context: %v, want context.Canceled", err)
	}

	// Cancelled while waiting.
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := b.Put(ctx, "k", []byte("v"), bucket.Unconditional)
		done <- err
	}()
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("put cancelled while waiting: %v, want context.Canceled", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("put still waiting a minute after its context was cancelled")
	}

	// A deadline.
	dctx, dcancel := context.WithTimeout(t.Context(), time.Millisecond)
	defer dcancel()
	if _, _, err := b.Get(dctx, "k"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("get past its deadline: %v, want context.DeadlineExceeded", err)
	}

	if _, err := m.Stat(t.Context(), "k"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("a cancelled put reached the store: stat %v", err)
	}
}

func TestSleepErrorStopsRequest(t *testing.T) {
	m := mem.NewBucket()
	boom := errors.New("boom")
	b := latency.New(m, latency.Options{
		PerRequest: time.Second,
		Sleep:      func(context.Context, time.Duration) error { return boom },
	})
	if _, err := b.Put(t.Context(), "k", []byte("v"), bucket.Unconditional); !errors.Is(err, boom) {
		t.Fatalf("put: %v, want the sleep's error", err)
	}
	if _, err := m.Stat(t.Context(), "k"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("put reached the store after a failed sleep: stat %v", err)
	}
}

func body(t *testing.T, b bucket.Bucket, key string) string {
	t.Helper()
	got, _, err := b.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return string(got)
}

func TestThrottlesWritesToOneObject(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	m := mem.NewBucket()
	b := latency.New(m, c.opts(latency.Options{PerRequest: 10 * time.Millisecond, WritesPerSecondPerObject: 1}))

	if _, err := b.Put(ctx, "a", []byte("1"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	// A second write to a within the second: refused, store untouched.
	if _, err := b.Put(ctx, "a", []byte("2"), bucket.Unconditional); !errors.Is(err, bucket.ErrThrottled) {
		t.Fatalf("second put within the window: %v, want ErrThrottled", err)
	}
	if err := b.Delete(ctx, "a", bucket.Unconditional); !errors.Is(err, bucket.ErrThrottled) {
		t.Fatalf("delete within the window: %v, want ErrThrottled", err)
	}
	if got := body(t, m, "a"); got != "1" {
		t.Fatalf("a = %q after throttled writes, want %q", got, "1")
	}
	// Another key is not limited; reads are never limited.
	if _, err := b.Put(ctx, "b", []byte("1"), bucket.Unconditional); err != nil {
		t.Fatalf("put of another key: %v", err)
	}
	for range 3 {
		if got := body(t, b, "a"); got != "1" {
			t.Fatalf("a = %q", got)
		}
	}
	if _, err := b.List(ctx, bucket.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	// After the window, writes to a are accepted again.
	c.Advance(time.Second)
	if _, err := b.Put(ctx, "a", []byte("3"), bucket.Unconditional); err != nil {
		t.Fatalf("put after the window: %v", err)
	}
	if got := body(t, m, "a"); got != "3" {
		t.Fatalf("a = %q, want %q", got, "3")
	}
	if got, want := b.Throttled(), int64(2); got != want {
		t.Fatalf("throttled %d, want %d", got, want)
	}
}

func TestWindowBoundary(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	b := latency.New(mem.NewBucket(), c.opts(latency.Options{WritesPerSecondPerObject: 4})) // 250 ms
	if _, err := b.Put(ctx, "k", []byte("1"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	c.Advance(250*time.Millisecond - time.Nanosecond)
	if _, err := b.Put(ctx, "k", []byte("2"), bucket.Unconditional); !errors.Is(err, bucket.ErrThrottled) {
		t.Fatalf("put 1ns before the window ends: %v, want ErrThrottled", err)
	}
	c.Advance(time.Nanosecond)
	if _, err := b.Put(ctx, "k", []byte("3"), bucket.Unconditional); err != nil {
		t.Fatalf("put as the window ends: %v", err)
	}
	// The throttled write did not take the slot; the accepted one did.
	c.Advance(249 * time.Millisecond)
	if err := b.Delete(ctx, "k", bucket.Unconditional); !errors.Is(err, bucket.ErrThrottled) {
		t.Fatalf("delete 249ms after the last accepted write: %v, want ErrThrottled", err)
	}
}

func TestFailedWriteTakesSlot(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	b := latency.New(mem.NewBucket(), c.opts(latency.Options{WritesPerSecondPerObject: 1}))
	if _, err := b.Put(ctx, "k", []byte("1"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	if _, err := b.Put(ctx, "k", []byte("2"), bucket.IfAbsent()); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("create-only put of an existing key: %v, want ErrPrecondition", err)
	}
	if _, err := b.Put(ctx, "k", []byte("3"), bucket.Unconditional); !errors.Is(err, bucket.ErrThrottled) {
		t.Fatalf("put right after a refused write: %v, want ErrThrottled", err)
	}
}

func TestConcurrentWritesOneAdmitted(t *testing.T) {
	c := newClock()
	b := latency.New(mem.NewBucket(), c.opts(latency.Options{WritesPerSecondPerObject: 1}))
	const n = 16
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = b.Put(t.Context(), "k", fmt.Appendf(nil, "%d", i), bucket.Unconditional)
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, bucket.ErrThrottled):
			t.Fatalf("put: %v", err)
		}
	}
	if ok != 1 || b.Throttled() != n-1 {
		t.Fatalf("%d writes accepted, %d throttled; want 1 and %d", ok, b.Throttled(), n-1)
	}
}

func TestRateTableIsPruned(t *testing.T) {
	ctx := t.Context()
	c := newClock()
	b := latency.New(mem.NewBucket(), c.opts(latency.Options{WritesPerSecondPerObject: 1}))
	const perWindow = 500
	for round := range 10 {
		for i := range perWindow {
			if _, err := b.Put(ctx, fmt.Sprintf("r%d/%d", round, i), nil, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
		}
		if got := b.Tracked(); got > 2*perWindow+64 {
			t.Fatalf("round %d: %d keys tracked, more than twice the %d written in the window", round, got, perWindow)
		}
		c.Advance(2 * time.Second)
	}
	// Without a rate limit nothing is tracked.
	free := latency.New(mem.NewBucket(), c.opts(latency.Options{}))
	if _, err := free.Put(ctx, "k", nil, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if got := free.Tracked(); got != 0 {
		t.Fatalf("%d keys tracked without a rate limit", got)
	}
}

type closer struct {
	bucket.Bucket
	closed int
}

func (c *closer) Close() error { c.closed++; return nil }

func TestForwardsCapabilitiesAndClose(t *testing.T) {
	c := &closer{Bucket: mem.NewBucket()}
	b := latency.New(c, latency.Options{PerRequest: time.Hour})
	if !b.Capabilities().ConditionalDelete {
		t.Fatal("capabilities not forwarded")
	}
	if err := b.Close(); err != nil || c.closed != 1 {
		t.Fatalf("close: %v, inner closed %d times", err, c.closed)
	}
}
