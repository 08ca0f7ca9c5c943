package fault_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		arm  func(*fault.Bucket)
	}{
		{"no-rules", func(*fault.Bucket) {}},
		// Rules armed but matching no call of the suite: the matching path
		// is transparent too.
		{"rules-elsewhere", func(b *fault.Bucket) {
			b.Inject(fault.Rule{Key: "never/used", Fault: fault.FailBefore(bucket.ErrUnavailable)})
			b.Inject(fault.Rule{Op: fault.OpGet, Prefix: "never/", Fault: fault.CorruptRead()})
			b.Inject(fault.Rule{Op: fault.OpPut | fault.OpDelete, Prefix: "never/", Fault: fault.LoseResponse()})
		}},
	} {
		for _, prefix := range []string{"", "some/prefix/"} {
			t.Run(tc.name+"/prefix="+prefix, func(t *testing.T) {
				conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
					m, err := mem.New(mem.NewStore(), prefix)
					if err != nil {
						return nil, err
					}
					b := fault.New(m)
					tc.arm(b)
					return b, nil
				}, conformance.BucketOptions{})
			})
		}
	}
}

func put(t *testing.T, b bucket.Bucket, key, body string) bucket.Attrs {
	t.Helper()
	a, err := b.Put(t.Context(), key, []byte(body), bucket.Unconditional)
	if err != nil {
		t.Fatalf("put %q: %v", key, err)
	}
	return a
}

// stored returns key's body in m, or "<missing>".
func stored(t *testing.T, m bucket.Bucket, key string) string {
	t.Helper()
	body, _, err := m.Get(t.Context(), key)
	if errors.Is(err, bucket.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatalf("get %q: %v", key, err)
	}
	return string(body)
}

func TestFailBefore(t *testing.T) {
	ctx := t.Context()
	m := mem.NewBucket()
	b := fault.New(m)
	put(t, b, "kept", "1")
	h := b.Inject(fault.Rule{Op: fault.OpPut | fault.OpDelete, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	for range 2 { // Count 0: every time
		if a, err := b.Put(ctx, "new", []byte("x"), bucket.IfAbsent()); !errors.Is(err, bucket.ErrUnavailable) || a != (bucket.Attrs{}) {
			t.Fatalf("put: %+v, %v; want zero attrs and ErrUnavailable", a, err)
		}
	}
	if err := b.Delete(ctx, "kept", bucket.Unconditional); !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("delete: %v, want ErrUnavailable", err)
	}
	if got := stored(t, m, "new"); got != "<missing>" {
		t.Fatalf("failed put wrote %q", got)
	}
	if got := stored(t, m, "kept"); got != "1" {
		t.Fatalf("failed delete left %q, want %q", got, "1")
	}
	// Reads are not matched.
	if got := stored(t, b, "kept"); got != "1" {
		t.Fatalf("get through the wrapper: %q", got)
	}
	if h.Fired() != 3 || b.Fired() != 3 || !h.Armed() {
		t.Fatalf("fired %d (bucket %d), armed %v; want 3, 3, true", h.Fired(), b.Fired(), h.Armed())
	}
}

func TestLoseResponse(t *testing.T) {
	ctx := t.Context()
	m := mem.NewBucket()
	b := fault.New(m)
	old := put(t, b, "k", "old")
	b.Inject(fault.Rule{Op: fault.OpPut | fault.OpDelete, Count: 2, Fault: fault.LoseResponse()})

	a, err := b.Put(ctx, "k", []byte("new"), bucket.IfVersion(old.Version))
	if !errors.Is(err, bucket.ErrAmbiguous) || errors.Is(err, bucket.ErrPrecondition) || a != (bucket.Attrs{}) {
		t.Fatalf("put: %+v, %v; want zero attrs and only ErrAmbiguous", a, err)
	}
	if got := stored(t, m, "k"); got != "new" {
		t.Fatalf("stored %q, want the write to have landed", got)
	}
	if err := b.Delete(ctx, "k", bucket.Unconditional); !errors.Is(err, bucket.ErrAmbiguous) {
		t.Fatalf("delete: %v, want ErrAmbiguous", err)
	}
	if got := stored(t, m, "k"); got != "<missing>" {
		t.Fatalf("stored %q, want the delete to have landed", got)
	}
	// Count 2 reached: the rule is disarmed.
	if _, err := b.Put(ctx, "k", []byte("again"), bucket.Unconditional); err != nil {
		t.Fatalf("put after the rule disarmed: %v", err)
	}
}

func TestPreconditionAfterApply(t *testing.T) {
	ctx := t.Context()
	m := mem.NewBucket()
	b := fault.New(m)
	h := b.Inject(fault.Rule{Op: fault.OpPut, Key: "head", Conditional: true, Count: 1, Fault: fault.PreconditionAfterApply()})

	// An unconditional write does not match a conditional-only rule.
	old := put(t, b, "head", "v1")
	if h.Fired() != 0 {
		t.Fatal("conditional rule fired on an unconditional put")
	}

	a, err := b.Put(ctx, "head", []byte("v2"), bucket.IfVersion(old.Version))
	if !errors.Is(err, bucket.ErrPrecondition) || a != (bucket.Attrs{}) {
		t.Fatalf("put: %+v, %v; want zero attrs and ErrPrecondition", a, err)
	}
	got, attrs, err := m.Get(ctx, "head")
	if err != nil || string(got) != "v2" || attrs.Version == old.Version {
		t.Fatalf("stored %q version %s (%v); want the new object, not version %s", got, attrs.Version, err, old.Version)
	}
	if h.Fired() != 1 || h.Armed() {
		t.Fatalf("fired %d, armed %v; want 1, false", h.Fired(), h.Armed())
	}
}

func TestCorruptRead(t *testing.T) {
	ctx := t.Context()
	m := mem.NewBucket()
	b := fault.New(m)
	want := put(t, b, "k", "the stored bytes")
	put(t, b, "empty", "")
	b.Inject(fault.Rule{Op: fault.OpGet, Key: "k", Count: 1, Fault: fault.CorruptRead()})
	b.Inject(fault.Rule{Op: fault.OpGet, Key: "empty", Count: 1, Fault: fault.CorruptRead()})

	body, a, err := b.Get(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if a != want {
		t.Fatalf("attrs %+v, want %+v", a, want)
	}
	diff := 0
	for i := range body {
		if body[i] != "the stored bytes"[i] {
			diff++
		}
	}
	if len(body) != len("the stored bytes") || diff != 1 {
		t.Fatalf("corrupt body %q: want the same length and one byte changed", body)
	}
	if got := stored(t, m, "k"); got != "the stored bytes" {
		t.Fatalf("stored object changed to %q", got)
	}
	if got := stored(t, b, "k"); got != "the stored bytes" {
		t.Fatalf("second get %q: the count-1 rule should be disarmed", got)
	}
	if body, _, err := b.Get(ctx, "empty"); err != nil || len(body) == 0 {
		t.Fatalf("corrupt empty body: %q, %v; want a non-empty body", body, err)
	}
	if got := stored(t, m, "empty"); got != "" {
		t.Fatalf("stored empty object changed to %q", got)
	}
}

func TestCountLimitedRulesDisarm(t *testing.T) {
	ctx := t.Context()
	b := fault.New(mem.NewBucket())
	h := b.Inject(fault.Rule{Op: fault.OpStat, Count: 3, Fault: fault.FailBefore(bucket.ErrThrottled)})
	var got []bool
	for range 5 {
		_, err := b.Stat(ctx, "k")
		got = append(got, errors.Is(err, bucket.ErrThrottled))
	}
	if want := []bool{true, true, true, false, false}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("throttled calls %v, want %v", got, want)
	}
	if h.Fired() != 3 || h.Armed() {
		t.Fatalf("fired %d, armed %v; want 3, false", h.Fired(), h.Armed())
	}

	// Disarm takes an always-on rule out.
	d := b.Inject(fault.Rule{Op: fault.OpStat, Fault: fault.FailBefore(bucket.ErrThrottled)})
	if _, err := b.Stat(ctx, "k"); !errors.Is(err, bucket.ErrThrottled) {
		t.Fatalf("stat with the rule armed: %v", err)
	}
	b.Disarm(d)
	if _, err := b.Stat(ctx, "k"); !errors.Is(err, bucket.ErrNotExist) || d.Armed() {
		t.Fatalf("stat after Disarm: %v (armed %v), want ErrNotExist from the store", err, d.Armed())
	}
}

func TestConcurrentCountIsExact(t *testing.T) {
	b := fault.New(mem.NewBucket())
	h := b.Inject(fault.Rule{Op: fault.OpPut, Count: 5, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	const n = 40
	failed := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := b.Put(t.Context(), fmt.Sprintf("k%d", i), nil, bucket.Unconditional)
			switch {
			case errors.Is(err, bucket.ErrUnavailable):
				failed <- struct{}{}
			case err != nil:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(failed) != 5 || h.Fired() != 5 {
		t.Fatalf("%d puts failed, rule fired %d; want 5", len(failed), h.Fired())
	}
}

func TestKeyPredicates(t *testing.T) {
	ctx := t.Context()
	b := fault.New(mem.NewBucket())
	b.Inject(fault.Rule{Key: "a", Fault: fault.FailBefore(bucket.ErrUnavailable)})
	b.Inject(fault.Rule{Prefix: "p/", Fault: fault.FailBefore(bucket.ErrThrottled)})
	for _, tc := range []struct {
		key  string
		want error
	}{
		{"a", bucket.ErrUnavailable},
		{"ab", nil},
		{"p/x", bucket.ErrThrottled},
		{"p", nil},
		{"q/p/x", nil},
	} {
		_, err := b.Put(ctx, tc.key, nil, bucket.Unconditional)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("put %q: %v, want %v", tc.key, err, tc.want)
		}
	}
	// List is matched on its prefix.
	if _, err := b.List(ctx, bucket.ListOptions{Prefix: "p/"}); !errors.Is(err, bucket.ErrThrottled) {
		t.Errorf("list p/: %v, want ErrThrottled", err)
	}
	if _, err := b.List(ctx, bucket.ListOptions{}); err != nil {
		t.Errorf("list: %v", err)
	}
}

func TestFirstMatchingRuleApplies(t *testing.T) {
	b := fault.New(mem.NewBucket())
	first := b.Inject(fault.Rule{Op: fault.OpGet, Count: 1, Fault: fault.FailBefore(bucket.ErrThrottled)})
	second := b.Inject(fault.Rule{Op: fault.OpGet, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	for _, want := range []error{bucket.ErrThrottled, bucket.ErrUnavailable, bucket.ErrUnavailable} {
		if _, _, err := b.Get(t.Context(), "k"); !errors.Is(err, want) {
			t.Fatalf("get: %v, want %v", err, want)
		}
	}
	if first.Fired() != 1 || second.Fired() != 2 || b.Fired() != 3 {
		t.Fatalf("fired %d, %d (bucket %d); want 1, 2 (3)", first.Fired(), second.Fired(), b.Fired())
	}
	b.Clear()
	if _, _, err := b.Get(t.Context(), "k"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("get after Clear: %v, want ErrNotExist from the store", err)
	}
	if second.Armed() || second.Fired() != 2 {
		t.Fatalf("after Clear: armed %v, fired %d; want false, 2", second.Armed(), second.Fired())
	}
}

func TestBypassForInvalidKeyAndEndedContext(t *testing.T) {
	b := fault.New(mem.NewBucket())
	h := b.Inject(fault.Rule{Fault: fault.FailBefore(bucket.ErrUnavailable)})
	if _, err := b.Put(t.Context(), "", nil, bucket.Unconditional); !errors.Is(err, bucket.ErrInvalidKey) || errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("put of an invalid key: %v, want only ErrInvalidKey", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := b.Put(ctx, "k", nil, bucket.Unconditional); !errors.Is(err, context.Canceled) || errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("put with an ended context: %v, want only context.Canceled", err)
	}
	if h.Fired() != 0 {
		t.Fatalf("rule fired %d times", h.Fired())
	}
}

// TestHookInterleaving forces a race: writer A is paused before its
// create-only put reaches the store, writer B creates the object, then A
// resumes and loses.
func TestHookInterleaving(t *testing.T) {
	ctx := t.Context()
	m := mem.NewBucket()
	b := fault.New(m)
	reached, release := make(chan struct{}), make(chan struct{})
	h := b.Inject(fault.Rule{Op: fault.OpPut, Key: "head", Count: 1, Fault: fault.Hook(func(ctx context.Context, op fault.Op, key string) error {
		if op != fault.OpPut || key != "head" {
			t.Errorf("hook got %v %q", op, key)
		}
		close(reached)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})})
	done := make(chan error, 1)
	go func() {
		_, err := b.Put(ctx, "head", []byte("A"), bucket.IfAbsent())
		done <- err
	}()
	<-reached
	if _, err := b.Put(ctx, "head", []byte("B"), bucket.IfAbsent()); err != nil {
		t.Fatalf("B: %v", err)
	}
	close(release)
	if err := <-done; !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("A: %v, want ErrPrecondition", err)
	}
	if got := stored(t, m, "head"); got != "B" {
		t.Fatalf("head = %q, want B", got)
	}
	if h.Fired() != 1 {
		t.Fatalf("hook fired %d times, want 1", h.Fired())
	}
}

func TestHookErrorStopsCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	m := mem.NewBucket()
	b := fault.New(m)
	reached := make(chan struct{})
	b.Inject(fault.Rule{Op: fault.OpPut, Fault: fault.Hook(func(ctx context.Context, _ fault.Op, _ string) error {
		close(reached)
		<-ctx.Done()
		return ctx.Err()
	})})
	done := make(chan error, 1)
	go func() {
		_, err := b.Put(ctx, "k", []byte("x"), bucket.Unconditional)
		done <- err
	}()
	<-reached
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("put cancelled in its hook: %v, want context.Canceled", err)
	}
	if got := stored(t, m, "k"); got != "<missing>" {
		t.Fatalf("put stopped by its hook wrote %q", got)
	}
}

// TestHookAfter pauses a put after it landed: a reader sees the new object
// before the writer has its answer.
func TestHookAfter(t *testing.T) {
	ctx := t.Context()
	b := fault.New(mem.NewBucket())
	reached, release := make(chan struct{}), make(chan struct{})
	b.Inject(fault.Rule{Op: fault.OpPut, Count: 1, Fault: fault.HookAfter(func(context.Context, fault.Op, string) error {
		close(reached)
		<-release
		return nil
	})})
	type result struct {
		a   bucket.Attrs
		err error
	}
	done := make(chan result, 1)
	go func() {
		a, err := b.Put(ctx, "k", []byte("landed"), bucket.IfAbsent())
		done <- result{a, err}
	}()
	<-reached
	body, seen, err := b.Get(ctx, "k")
	if err != nil || string(body) != "landed" {
		t.Fatalf("read while the writer waits: %q, %v", body, err)
	}
	close(release)
	r := <-done
	if r.err != nil || r.a.Version != seen.Version {
		t.Fatalf("writer got %+v, %v; want success with version %s", r.a, r.err, seen.Version)
	}

	// A failing after-hook replaces the answer; the write stands.
	boom := errors.New("boom")
	b.Inject(fault.Rule{Op: fault.OpDelete, Fault: fault.HookAfter(func(context.Context, fault.Op, string) error { return boom })})
	if err := b.Delete(ctx, "k", bucket.Unconditional); !errors.Is(err, boom) {
		t.Fatalf("delete: %v, want the hook's error", err)
	}
	if got := stored(t, b, "k"); got != "<missing>" {
		t.Fatalf("delete did not land: %q", got)
	}
}

func TestProbabilityIsReproducible(t *testing.T) {
	run := func(seed uint64) (string, int64) {
		b := fault.New(mem.NewBucket())
		b.Seed(seed)
		h := b.Inject(fault.Rule{Op: fault.OpGet, Probability: 0.3, Fault: fault.FailBefore(bucket.ErrUnavailable)})
		var s strings.Builder
		for range 300 {
			_, _, err := b.Get(t.Context(), "k")
			if errors.Is(err, bucket.ErrUnavailable) {
				s.WriteByte('x')
			} else {
				s.WriteByte('.')
			}
		}
		return s.String(), h.Fired()
	}
	a, n := run(42)
	again, _ := run(42)
	other, _ := run(43)
	if a != again {
		t.Fatalf("same seed, different faults:\n%s\n%s", a, again)
	}
	if a == other {
		t.Fatal("seeds 42 and 43 gave the same faults")
	}
	if n < 45 || n > 135 || int64(strings.Count(a, "x")) != n {
		t.Fatalf("%d of 300 calls failed at probability 0.3 (pattern %s)", n, a)
	}
}

func TestProbabilisticMissFallsThrough(t *testing.T) {
	b := fault.New(mem.NewBucket())
	b.Inject(fault.Rule{Op: fault.OpGet, Probability: 0.5, Fault: fault.FailBefore(bucket.ErrThrottled)})
	b.Inject(fault.Rule{Op: fault.OpGet, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	seen := map[error]int{}
	for range 100 {
		_, _, err := b.Get(t.Context(), "k")
		switch {
		case errors.Is(err, bucket.ErrThrottled):
			seen[bucket.ErrThrottled]++
		case errors.Is(err, bucket.ErrUnavailable):
			seen[bucket.ErrUnavailable]++
		default:
			t.Fatalf("get: %v", err)
		}
	}
	if seen[bucket.ErrThrottled] == 0 || seen[bucket.ErrUnavailable] == 0 {
		t.Fatalf("outcomes %v: a miss of the first rule should fall through to the second", seen)
	}
}

func TestInjectRejectsMalformedRules(t *testing.T) {
	noop := func(context.Context, fault.Op, string) error { return nil }
	for _, r := range []fault.Rule{
		{Op: fault.OpGet},
		{Op: fault.OpGet, Fault: fault.FailBefore(nil)},
		{Op: fault.OpGet, Fault: fault.LoseResponse()},
		{Fault: fault.LoseResponse()},
		{Op: fault.OpPut | fault.OpStat, Fault: fault.PreconditionAfterApply()},
		{Op: fault.OpPut, Fault: fault.CorruptRead()},
		{Fault: fault.CorruptRead()},
		{Op: fault.OpGet, Fault: fault.Hook(nil)},
		{Op: fault.OpGet, Fault: fault.HookAfter(nil)},
		{Op: fault.OpGet, Conditional: true, Fault: fault.Hook(noop)},
		{Op: fault.OpGet, Probability: 1.5, Fault: fault.Hook(noop)},
		{Op: fault.OpGet, Count: -1, Fault: fault.Hook(noop)},
		{Op: 1 << 7, Fault: fault.Hook(noop)},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Inject(%+v) did not panic", r)
				}
			}()
			fault.New(mem.NewBucket()).Inject(r)
		}()
	}
}

func TestOpString(t *testing.T) {
	for _, tc := range []struct {
		op   fault.Op
		want string
	}{
		{0, "any"},
		{fault.OpGet, "get"},
		{fault.OpPut | fault.OpDelete, "put|delete"},
	} {
		if got := tc.op.String(); got != tc.want {
			t.Errorf("%d.String() = %q, want %q", tc.op, got, tc.want)
		}
	}
}

type closer struct {
	bucket.Bucket
	closed int
}

func (c *closer) Close() error { c.closed++; return nil }

func TestForwardsCapabilitiesAndClose(t *testing.T) {
	c := &closer{Bucket: mem.NewBucket()}
	b := fault.New(c)
	b.Inject(fault.Rule{Fault: fault.FailBefore(bucket.ErrUnavailable)})
	if !b.Capabilities().ConditionalDelete {
		t.Fatal("capabilities not forwarded")
	}
	if err := b.Close(); err != nil || c.closed != 1 {
		t.Fatalf("close: %v, inner closed %d times", err, c.closed)
	}
}
