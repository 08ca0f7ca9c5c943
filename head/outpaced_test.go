package head_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// outpacedPair opens a Store over a fault bucket and another replica of
// the same shard beside it, and arms a rule that makes the replica commit
// just before each of the first n head writes of the Store (every one if
// n is 0), so that the write loses to the replica's progress.
func outpacedPair(t *testing.T, opts head.Options, n int) (a, other *head.Store, h *fault.Handle) {
	t.Helper()
	ctx := context.Background()
	shared := mem.NewBucket()
	id := shards.NewShardID()
	fb := fault.New(shared)
	a = faultOpen(t, fb, id, opts)
	other = faultOpen(t, shared, id, head.Options{})
	var i byte
	h = fb.Inject(fault.Rule{Op: fault.OpPut, Key: a.Layout().Head(), Conditional: true, Count: n,
		Fault: fault.Hook(func(context.Context, fault.Op, string) error {
			i++
			_, err := other.Do(ctx, faultPut(100+i, "other"))
			return err
		})})
	return a, other, h
}

// TestOutpacedCostsNoAttempt: a race lost to another writer's commit is
// not a failure. With a budget of one attempt, a command whose first three
// head writes each lose to another replica's commit still commits.
func TestOutpacedCostsNoAttempt(t *testing.T) {
	a, _, h := outpacedPair(t, head.Options{MaxAttempts: 1, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}, 3)
	if _, err := a.Do(context.Background(), faultPut(1, "mine")); err != nil {
		t.Fatalf("Do after three races lost to progress: %v", err)
	}
	if got, want := h.Fired(), int64(3); got != want {
		t.Fatalf("the rule fired %d times, want %d", got, want)
	}
	if v, ok := faultGet(t, a, 1); !ok || v != "mine" {
		t.Fatalf("reads %q, %v after the commit", v, ok)
	}
}

// TestOutpacedIsBounded: a writer that loses every race still gets an
// answer: ErrRetryable after 8 × MaxAttempts races lost to progress,
// nothing of it applied.
func TestOutpacedIsBounded(t *testing.T) {
	a, _, h := outpacedPair(t, head.Options{MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond}, 0)
	if _, err := a.Do(context.Background(), faultPut(1, "mine")); !errors.Is(err, head.ErrRetryable) {
		t.Fatalf("Do while every race is lost: %v, want ErrRetryable", err)
	}
	if got, want := h.Fired(), int64(16); got != want {
		t.Fatalf("%d head writes were sent, want %d (8 × MaxAttempts)", got, want)
	}
	if v, ok := faultGet(t, a, 1); ok {
		t.Fatalf("reads %q: a command that was not committed is visible", v)
	}
}

// TestNoStaleHeadWrite: a Store that has seen the head move past the
// snapshot an attempt built on does not send that attempt's head write,
// which could only fail (and, on GCS, would spend the head's one write a
// second): it builds again on the new head.
func TestNoStaleHeadWrite(t *testing.T) {
	ctx := context.Background()
	shared := mem.NewBucket()
	id := shards.NewShardID()
	fb := fault.New(shared)
	a := faultOpen(t, fb, id, head.Options{})
	other := faultOpen(t, shared, id, head.Options{})
	if _, err := a.Pin(ctx); err != nil {
		t.Fatal(err)
	}
	// While the first attempt stages its root, another replica commits
	// and this Store reads the new head.
	fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: a.Layout().Prefix() + "roots/", Count: 1,
		Fault: fault.Hook(func(context.Context, fault.Op, string) error {
			if _, err := other.Do(ctx, faultPut(2, "other")); err != nil {
				return err
			}
			_, err := a.Pin(ctx)
			return err
		})})
	writes := fb.Inject(fault.Rule{Op: fault.OpPut, Key: a.Layout().Head(), Conditional: true,
		Fault: fault.Hook(func(context.Context, fault.Op, string) error { return nil })})
	if _, err := a.Do(ctx, faultPut(1, "mine")); err != nil {
		t.Fatal(err)
	}
	if got, want := writes.Fired(), int64(1); got != want {
		t.Fatalf("%d head writes were sent, want %d: the stale one must not be", got, want)
	}
	for i, want := range map[byte]string{1: "mine", 2: "other"} {
		if v, ok := faultGet(t, a, i); !ok || v != want {
			t.Fatalf("key %d reads %q, %v, want %q", i, v, ok, want)
		}
	}
}
