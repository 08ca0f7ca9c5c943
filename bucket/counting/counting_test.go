package counting_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

func TestConformance(t *testing.T) {
	for _, prefix := range []string{"", "some/prefix/"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
				m, err := mem.New(mem.NewStore(), prefix)
				if err != nil {
					return nil, err
				}
				return counting.New(m), nil
			}, conformance.BucketOptions{})
		})
	}
}

func TestCountsOpsAndBytes(t *testing.T) {
	ctx := t.Context()
	b := counting.New(mem.NewBucket())
	if _, err := b.Put(ctx, "a", []byte("abc"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "b", []byte("hello"), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "a", []byte("xy"), bucket.IfAbsent()); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("put existing if-absent: %v, want ErrPrecondition", err)
	}
	if _, _, err := b.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := b.Get(ctx, "missing"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("get missing: %v", err)
	}
	if _, _, err := b.Get(ctx, ""); !errors.Is(err, bucket.ErrInvalidKey) {
		t.Fatalf("get invalid: %v", err)
	}
	if _, err := b.Stat(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "b", bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "a", bucket.IfAbsent()); !errors.Is(err, bucket.ErrUnsupported) {
		t.Fatalf("delete if-absent: %v", err)
	}
	for range 2 {
		if _, err := b.List(ctx, bucket.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	got := b.Snapshot()
	want := counting.Stats{
		Get:         counting.OpStats{Requests: 3, Errors: 2, BytesRead: 3},
		Stat:        counting.OpStats{Requests: 1},
		Put:         counting.OpStats{Requests: 3, Errors: 1, BytesWritten: 10},
		Delete:      counting.OpStats{Requests: 2, Errors: 1},
		List:        counting.OpStats{Requests: 2},
		Rounds:      11,
		MaxInFlight: 1,
	}
	if got != want {
		t.Fatalf("snapshot\n got %+v\nwant %+v", got, want)
	}
	if got, want := got.Total(), (counting.OpStats{Requests: 11, Errors: 4, BytesRead: 3, BytesWritten: 10}); got != want {
		t.Fatalf("total %+v, want %+v", got, want)
	}

	b.Reset()
	if got := b.Snapshot(); got != (counting.Stats{}) {
		t.Fatalf("after reset: %+v, want zero", got)
	}
	if _, _, err := b.Get(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, want := b.Snapshot(), (counting.Stats{Get: counting.OpStats{Requests: 1, BytesRead: 3}, Rounds: 1, MaxInFlight: 1}); got != want {
		t.Fatalf("after reset and one get: %+v, want %+v", got, want)
	}
}

// gated is an inner bucket whose Gets block: each announces itself on
// entered and waits for its key's release channel (or ctx).
type gated struct {
	bucket.Bucket
	entered chan string
	mu      sync.Mutex
	release map[string]chan struct{}
}

func newGated() *gated {
	return &gated{Bucket: mem.NewBucket(), entered: make(chan string, 100), release: map[string]chan struct{}{}}
}

func (g *gated) gate(key string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.release[key]
	if c == nil {
		c = make(chan struct{})
		g.release[key] = c
	}
	return c
}

func (g *gated) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	c := g.gate(key)
	g.entered <- key
	select {
	case <-c:
	case <-ctx.Done():
		return nil, bucket.Attrs{}, ctx.Err()
	}
	return g.Bucket.Get(ctx, key)
}

// startGet starts a Get of key and waits until it reached the inner
// bucket. The returned channel yields its error.
func startGet(t *testing.T, b *counting.Bucket, g *gated, key string) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, _, err := b.Get(t.Context(), key)
		done <- err
	}()
	if got := <-g.entered; got != key {
		t.Fatalf("entered %q, want %q", got, key)
	}
	return done
}

func finish(t *testing.T, g *gated, key string, done <-chan error) {
	t.Helper()
	close(g.gate(key))
	if err := <-done; !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("get %q: %v, want ErrNotExist", key, err)
	}
}

func TestRoundsConcurrentAndSequential(t *testing.T) {
	g := newGated()
	b := counting.New(g)

	// A group of 4 concurrent requests, all in flight at once: one round.
	var dones []<-chan error
	for _, k := range []string{"c0", "c1", "c2", "c3"} {
		dones = append(dones, startGet(t, b, g, k))
	}
	if got := b.Snapshot(); got.Rounds != 1 || got.MaxInFlight != 4 || got.Get.Requests != 0 {
		t.Fatalf("while 4 in flight: %+v, want 1 round, max in flight 4, no request returned", got)
	}
	for i, k := range []string{"c0", "c1", "c2", "c3"} {
		finish(t, g, k, dones[i])
	}
	if got := b.Snapshot(); got.Rounds != 1 || got.Get.Requests != 4 {
		t.Fatalf("after concurrent group: %+v, want 1 round of 4 requests", got)
	}

	// Three requests one after the other: three more rounds.
	for _, k := range []string{"s0", "s1", "s2"} {
		finish(t, g, k, startGet(t, b, g, k))
	}
	if got := b.Snapshot(); got.Rounds != 4 || got.Get.Requests != 7 || got.MaxInFlight != 4 {
		t.Fatalf("after 3 sequential: %+v, want 4 rounds, 7 requests", got)
	}

	// A chain: x starts, y starts while x is in flight, x ends, z starts
	// while y is in flight. x and z never overlap but are linked by y: one
	// round.
	dx := startGet(t, b, g, "x")
	dy := startGet(t, b, g, "y")
	finish(t, g, "x", dx)
	dz := startGet(t, b, g, "z")
	finish(t, g, "y", dy)
	finish(t, g, "z", dz)
	if got := b.Snapshot(); got.Rounds != 5 || got.Get.Requests != 10 {
		t.Fatalf("after chained group: %+v, want 5 rounds, 10 requests", got)
	}
}

func TestResetWhileInFlight(t *testing.T) {
	g := newGated()
	b := counting.New(g)
	da := startGet(t, b, g, "a")
	b.Reset()
	if got := b.Snapshot(); got != (counting.Stats{}) {
		t.Fatalf("after reset: %+v, want zero", got)
	}
	// b starts in the round a opened before Reset: that round is counted
	// once for the new period.
	db := startGet(t, b, g, "b")
	finish(t, g, "a", da)
	finish(t, g, "b", db)
	want := counting.Stats{Get: counting.OpStats{Requests: 2, Errors: 2}, Rounds: 1, MaxInFlight: 2}
	if got := b.Snapshot(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// The in-flight count went back to zero: the next request is a new round.
	finish(t, g, "c", startGet(t, b, g, "c"))
	if got := b.Snapshot(); got.Rounds != 2 {
		t.Fatalf("rounds %d, want 2", got.Rounds)
	}
}

func TestConcurrentUse(t *testing.T) {
	ctx := t.Context()
	b := counting.New(mem.NewBucket())
	const workers, each = 8, 50
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				key := string(rune('a'+w)) + "/" + string(rune('a'+i%26))
				if _, err := b.Put(ctx, key, []byte("12345678"), bucket.Unconditional); err != nil {
					t.Error(err)
				}
				if _, _, err := b.Get(ctx, key); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	got := b.Snapshot()
	if got.Put.Requests != workers*each || got.Get.Requests != workers*each ||
		got.Put.BytesWritten != 8*workers*each || got.Get.BytesRead != 8*workers*each {
		t.Fatalf("counts %+v", got)
	}
	if got.Rounds < 1 || got.Rounds > 2*workers*each || got.MaxInFlight < 1 || got.MaxInFlight > workers {
		t.Fatalf("rounds %d, max in flight %d out of range", got.Rounds, got.MaxInFlight)
	}
}

type closer struct {
	bucket.Bucket
	closed int
}

func (c *closer) Close() error { c.closed++; return errors.New("close error") }

func TestForwardsCapabilitiesAndClose(t *testing.T) {
	c := &closer{Bucket: mem.NewBucket()}
	b := counting.New(c)
	if !b.Capabilities().ConditionalDelete {
		t.Fatal("capabilities not forwarded")
	}
	if err := b.Close(); err == nil || c.closed != 1 {
		t.Fatalf("close: %v, inner closed %d times", err, c.closed)
	}
	if got := b.Snapshot(); got != (counting.Stats{}) {
		t.Fatalf("capabilities and close were counted: %+v", got)
	}
}

// TestKinds: each request counts as its operation's kind and as each
// other kind that applies to it.
func TestKinds(t *testing.T) {
	ctx := context.Background()
	b := counting.New(mem.NewBucket())
	a, err := b.Put(ctx, "a", []byte("x"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	b.Put(ctx, "e", nil, bucket.IfAbsent())
	b.Put(ctx, "big", make([]byte, counting.LargeBody), bucket.IfAbsent())
	b.Put(ctx, "a", []byte("y"), bucket.IfVersion(a.Version))
	b.Get(ctx, "a")
	b.Get(ctx, "missing")
	b.Stat(ctx, "missing")
	b.Get(ctx, strings.Repeat("k", counting.LongKey+1))
	b.Get(ctx, "")
	b.Delete(ctx, "e", bucket.Unconditional)
	attrs, _ := b.Stat(ctx, "a")
	b.Delete(ctx, "a", bucket.IfVersion(attrs.Version))
	b.Put(ctx, "z", []byte("z"), bucket.Unconditional) // two objects: two pages of one
	p, _ := b.List(ctx, bucket.ListOptions{PageSize: 1})
	b.List(ctx, bucket.ListOptions{PageSize: 1, PageToken: p.NextPageToken})
	b.List(ctx, bucket.ListOptions{Delimiter: "/", StartAfter: "a"})
	ended, cancel := context.WithCancel(ctx)
	cancel()
	b.Get(ended, "a")
	want := map[counting.Kind]int64{
		counting.KindPut: 2, counting.KindPutIfAbsent: 2, counting.KindPutIfVersion: 1, counting.KindPutEmpty: 1, counting.KindPutLarge: 1,
		counting.KindGet: 5, counting.KindGetMissing: 2, counting.KindStat: 2, counting.KindStatMissing: 1, // the long key is missing too
		counting.KindLongKey: 1, counting.KindInvalidKey: 1, counting.KindContextEnded: 1,
		counting.KindDelete: 1, counting.KindDeleteIfVersion: 1,
		counting.KindList: 3, counting.KindListNextPage: 1, counting.KindListDelimiter: 1, counting.KindListStartAfter: 1,
	}
	got := b.Kinds()
	for _, k := range counting.Kinds {
		if got[k] != want[k] {
			t.Errorf("%s: %d, want %d", k, got[k], want[k])
		}
	}
	b.Reset()
	if got := b.Kinds(); len(got) != 0 {
		t.Errorf("after Reset: %v", got)
	}
}
