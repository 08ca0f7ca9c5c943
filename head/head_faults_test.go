package head_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// Deterministic reproductions of fault paths the store conformance suite
// (conformance/storesuite/store.go) exercises at random.

// faultKey is a key of the Fixed32 test family: a fixed id and i.
func faultKey(i byte) []byte {
	k := make([]byte, 32)
	k[0], k[31] = 0xfa, i
	return k
}

func faultPut(i byte, v string) head.Command {
	return head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Put(shardstest.Fixed32, faultKey(i), []byte(v))
	}}
}

func faultOpen(t *testing.T, b bucket.Bucket, id shards.ShardID, opts head.Options) *head.Store {
	t.Helper()
	s, err := head.Open(context.Background(), b, id, head.SchemaForTest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func faultGet(t *testing.T, s *head.Store, i byte) (string, bool) {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v, ok, err := sn.Get(ctx, shardstest.Fixed32, faultKey(i))
	if err != nil {
		t.Fatal(err)
	}
	return string(v), ok
}

// TestFaultLateJoinerIsTried: a command that joins a group commit while
// the group's last attempt is failing must still be tried. The group's
// only attempt fails (its head write is throttled, and MaxAttempts is 1);
// meanwhile a second command is queued. The group gives up with
// ErrRetryable, which is fair for the first command, but the second must
// not share that fate without its Apply ever running: it has had no
// attempt at all. (A race lost to another replica's commit would not do:
// it costs no attempt, see TestOutpacedCostsNoAttempt.)
func TestFaultLateJoinerIsTried(t *testing.T) {
	ctx := context.Background()
	fb := fault.New(mem.NewBucket())
	a := faultOpen(t, fb, shards.NewShardID(), head.Options{MaxAttempts: 1, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})

	var ran atomic.Int32
	late := make(chan error, 1)
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: a.Layout().Head(), Conditional: true, Count: 1,
		Fault: fault.Hook(func(context.Context, fault.Op, string) error {
			// A command arrives while the group is busy.
			go func() {
				_, err := a.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
					ran.Add(1)
					return nil, tx.Put(shardstest.Fixed32, faultKey(3), []byte("late"))
				}})
				late <- err
			}()
			time.Sleep(50 * time.Millisecond) // let it reach the queue
			return bucket.ErrThrottled
		})})

	if _, err := a.Do(ctx, faultPut(2, "first")); !errors.Is(err, head.ErrRetryable) {
		t.Fatalf("first command: %v, want ErrRetryable (its one attempt failed)", err)
	}
	err := <-late
	if err != nil && ran.Load() == 0 {
		t.Fatalf("a command queued during the group's last attempt failed without running once: %v", err)
	}
	if err == nil {
		if v, ok := faultGet(t, a, 3); !ok || v != "late" {
			t.Fatalf("late command succeeded but reads %q, %v", v, ok)
		}
	}
}

// TestFaultCheckReadErrorAfterCommit: with Options.Check, a transient read
// error while checking a commit that has landed must not be reported as a
// plain failure of the command: the caller of a command without a request
// id would take it as not applied (and may apply it again), while it is
// visible. The command must succeed, or fail with ErrUnknownOutcome.
func TestFaultCheckReadErrorAfterCommit(t *testing.T) {
	ctx := context.Background()
	fb := fault.New(mem.NewBucket())
	s := faultOpen(t, fb, shards.NewShardID(), head.Options{Check: true})
	// The new root is in the store's cache once staged, so the first get of
	// a root after this point is the check's.
	h := fb.Inject(fault.Rule{Op: fault.OpGet, Prefix: s.Layout().Prefix() + "roots/", Count: 1,
		Fault: fault.FailBefore(bucket.ErrUnavailable)})

	_, err := s.Do(ctx, faultPut(1, "v"))
	if h.Fired() != 1 {
		t.Fatalf("the check's root read was not failed (fired %d): the reproduction needs adjusting", h.Fired())
	}
	v, visible := faultGet(t, s, 1)
	if err != nil && visible && !errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("the command committed (reads %q) but Do returned %v", v, err)
	}
	if err == nil && !visible {
		t.Fatal("Do succeeded but the value is not visible")
	}
}
