package head_test

import (
	"context"
	"errors"
	"fmt"
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
