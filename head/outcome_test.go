package head_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// Outcomes the engine must report honestly: a permanent refusal of the
// store ends a commit at once with its cause; a caller that gives up
// after the head write was sent learns what happened; a head that went
// back in sequence is refused.

// headSequence reads the head straight from the bucket, as a second
// replica would.
func headSequence(t *testing.T, b bucket.Bucket, id shards.ShardID) uint64 {
	t.Helper()
	s, err := head.Open(context.Background(), b, id, head.SchemaForTest, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn, err := s.Pin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sn.Sequence()
}

// TestPermanentErrorEndsCommit: a write the store refuses for good (no
// permission, no space) while staging or on the head write ends the
// commit at once with that error: one try, not the attempt budget; not
// ErrRetryable (which the Workbench reports as contention) and not
// ErrUnknownOutcome (a refused write did not happen); nothing applied.
func TestPermanentErrorEndsCommit(t *testing.T) {
	for _, where := range []string{"deltas/", "roots/", "head"} {
		for _, cause := range []error{bucket.ErrDenied, bucket.ErrNoSpace} {
			t.Run(fmt.Sprintf("%s %v", where, cause), func(t *testing.T) {
				ctx := context.Background()
				inner := mem.NewBucket()
				fb := fault.New(inner)
				id := shards.NewShardID()
				s := faultOpen(t, fb, id, head.Options{})
				before := headSequence(t, inner, id)
				h := fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: s.Layout().Prefix() + where,
					Fault: fault.FailBefore(fmt.Errorf("refused: %w", cause))})

				start := time.Now()
				_, err := s.Do(ctx, faultPut(1, "v"))
				took := time.Since(start)
				if !errors.Is(err, cause) || !bucket.Permanent(err) {
					t.Fatalf("Do = %v, want %v", err, cause)
				}
				if errors.Is(err, head.ErrRetryable) || errors.Is(err, head.ErrUnknownOutcome) {
					t.Fatalf("Do = %v: a permanent refusal is neither retryable nor of unknown outcome", err)
				}
				if got, want := h.Fired(), int64(1); got != want {
					t.Fatalf("the refused write was tried %d times, want %d", got, want)
				}
				if took > time.Second {
					t.Fatalf("Do took %v to report a permanent refusal", took)
				}
				fb.Clear()
				if got := headSequence(t, inner, id); got != before {
					t.Fatalf("head sequence %d after a refused commit, want %d", got, before)
				}
				if v, ok := faultGet(t, s, 1); ok {
					t.Fatalf("a refused commit is visible: %q", v)
				}
			})
		}
	}
}

// TestCancelAfterHeadWriteSentLearnsOutcome: a caller whose context ends
// right after its head write was sent (the store applied it; the answer
// is lost to the cancellation, as an adapter reports a write cancelled in
// flight) must learn that the command landed: success, never
// context.Canceled, which a client takes for "not applied" and retries.
func TestCancelAfterHeadWriteSentLearnsOutcome(t *testing.T) {
	for _, group := range []bool{true, false} {
		t.Run(fmt.Sprintf("group commit %v", group), func(t *testing.T) {
			inner := mem.NewBucket()
			fb := fault.New(inner)
			id := shards.NewShardID()
			s := faultOpen(t, fb, id, head.Options{NoGroupCommit: !group, Check: true})
			before := headSequence(t, inner, id)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			h := fb.Inject(fault.Rule{Op: fault.OpPut, Key: s.Layout().Head(), Conditional: true, Count: 1,
				Fault: fault.HookAfter(func(ctx context.Context, _ fault.Op, _ string) error {
					cancel() // SIGINT arrives while the answer is on its way
					return fmt.Errorf("put cancelled in flight: %w: %w", context.Cause(ctx), bucket.ErrAmbiguous)
				})})

			_, err := s.Do(ctx, faultPut(1, "landed"))
			if h.Fired() != 1 {
				t.Fatalf("the head write was not intercepted (fired %d)", h.Fired())
			}
			if got := headSequence(t, inner, id); got != before+1 {
				t.Fatalf("head sequence %d, want %d: the write should have landed", got, before+1)
			}
			if errors.Is(err, context.Canceled) && !errors.Is(err, head.ErrUnknownOutcome) {
				t.Fatalf("Do = %v for a command that landed: never Cancelled", err)
			}
			if err != nil {
				t.Fatalf("Do = %v, want success: the engine learns the outcome before it answers", err)
			}
			if v, ok := faultGet(t, s, 1); !ok || v != "landed" {
				t.Fatalf("value %q, %v after a landed commit", v, ok)
			}
		})
	}
}

// TestCancelBeforeHeadWriteAppliesNothing: a caller whose context ends
// before anything of its commit reached the head gets its context's
// error, and nothing is applied; the head is never written.
func TestCancelBeforeHeadWriteAppliesNothing(t *testing.T) {
	for _, group := range []bool{true, false} {
		t.Run(fmt.Sprintf("group commit %v", group), func(t *testing.T) {
			inner := mem.NewBucket()
			fb := fault.New(inner)
			id := shards.NewShardID()
			s := faultOpen(t, fb, id, head.Options{NoGroupCommit: !group})
			before := headSequence(t, inner, id)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: s.Layout().Prefix() + "deltas/", Count: 1,
				Fault: fault.Hook(func(context.Context, fault.Op, string) error {
					cancel() // SIGINT arrives while the commit stages
					return context.Canceled
				})})
			heads := fb.Inject(fault.Rule{Op: fault.OpPut, Key: s.Layout().Head(),
				Fault: fault.HookAfter(func(context.Context, fault.Op, string) error { return nil })})

			_, err := s.Do(ctx, faultPut(1, "never"))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Do = %v, want context.Canceled", err)
			}
			if n := heads.Fired(); n != 0 {
				t.Fatalf("%d head writes after the caller gave up before any was sent", n)
			}
			if got := headSequence(t, inner, id); got != before {
				t.Fatalf("head sequence %d, want %d", got, before)
			}
			if v, ok := faultGet(t, s, 1); ok {
				t.Fatalf("a cancelled command is visible: %q", v)
			}
		})
	}
}

// TestCancelWhileQueuedLeavesTheQueue: a command whose caller gives up
// while it still waits for its group commit returns at once and is never
// applied: it leaves the queue.
func TestCancelWhileQueuedLeavesTheQueue(t *testing.T) {
	s := faultOpen(t, mem.NewBucket(), shards.NewShardID(), head.Options{MinCommitInterval: 500 * time.Millisecond})
	if _, err := s.Do(context.Background(), faultPut(0, "first")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := s.Do(ctx, faultPut(1, "queued")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Do = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > 250*time.Millisecond {
		t.Fatalf("a queued command's caller waited %v after giving up", took)
	}
	// A later command commits after the pacing; the abandoned one is not
	// in it.
	if _, err := s.Do(context.Background(), faultPut(2, "later")); err != nil {
		t.Fatal(err)
	}
	if v, ok := faultGet(t, s, 1); ok {
		t.Fatalf("an abandoned queued command was applied: %q", v)
	}
}

// TestRolledBackHeadIsRefused: a head whose sequence is lower than one
// the replica has already seen (an operator put an older head object
// back) is refused with ErrHeadRolledBack, which is also
// bucket.ErrIntegrity and names both sequences; it is neither served nor
// built on. A replica that never saw the newer head has nothing to
// compare with and serves what it reads.
func TestRolledBackHeadIsRefused(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	s := faultOpen(t, b, id, head.Options{})
	if _, err := s.Do(ctx, faultPut(1, "old")); err != nil {
		t.Fatal(err)
	}
	old, _, err := b.Get(ctx, s.Layout().Head())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, faultPut(1, "new")); err != nil {
		t.Fatal(err)
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	newer := sn.Sequence()

	if _, err := b.Put(ctx, s.Layout().Head(), old, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	_, err = s.Pin(ctx)
	if !errors.Is(err, head.ErrHeadRolledBack) || !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("Pin of a rolled-back head = %v, want ErrHeadRolledBack (and ErrIntegrity)", err)
	}
	for _, seq := range []uint64{newer - 1, newer} {
		if want := fmt.Sprintf("sequence %d", seq); !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %s", err, want)
		}
	}
	start := time.Now()
	if _, err := s.Do(ctx, faultPut(2, "on the old head")); !errors.Is(err, head.ErrHeadRolledBack) {
		t.Fatalf("commit on a rolled-back head = %v, want ErrHeadRolledBack", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("a commit on a rolled-back head took %v to fail: another attempt cannot help", took)
	}
	// A fresh replica has seen nothing newer.
	fresh := faultOpen(t, b, id, head.Options{})
	if v, ok := faultGet(t, fresh, 1); !ok || v != "old" {
		t.Fatalf("a fresh replica reads %q, %v", v, ok)
	}
}
