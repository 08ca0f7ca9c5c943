package head_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// holdHeadWrite arms a rule that stops the n-th conditional head write
// (from 1) of s before it reaches the store: held is closed when it
// arrives, and it goes on, and lands, once release is closed.
func holdHeadWrite(fb *fault.Bucket, s *head.Store, n int64) (held, release chan struct{}) {
	held, release = make(chan struct{}), make(chan struct{})
	var seen int64
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: s.Layout().Head(), Conditional: true,
		Fault: fault.Hook(func(context.Context, fault.Op, string) error {
			seen++ // head writes of one Store are sequential
			if seen == n {
				close(held)
				<-release
			}
			return nil
		})})
	return held, release
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestCloseSettlesTheBatchInProgress: Close fails the commands still
// queued with ErrClosed at once, but waits for the batch whose head write
// is under way, whose command is then told its true outcome (it landed),
// and returns only after it.
func TestCloseSettlesTheBatchInProgress(t *testing.T) {
	inner := mem.NewBucket()
	fb := fault.New(inner)
	id := shards.NewShardID()
	s := faultOpen(t, fb, id, head.Options{})
	before := headSequence(t, inner, id)
	held, release := holdHeadWrite(fb, s, 1)
	defer func() {
		if !closed(release) {
			close(release)
		}
	}()

	ctx := context.Background()
	first := make(chan error, 1)
	go func() { _, err := s.Do(ctx, faultPut(1, "in flight")); first <- err }()
	<-held
	queued := make(chan error, 1)
	go func() { _, err := s.Do(ctx, faultPut(2, "queued")); queued <- err }() // behind the held batch
	closeDone := make(chan struct{})
	go func() { s.Close(); close(closeDone) }()

	// The queued command ends at once (it is failed when Close begins, or
	// refused if it arrives after).
	if err := <-queued; !errors.Is(err, head.ErrClosed) {
		t.Fatalf("queued command: %v, want ErrClosed", err)
	}
	if closed(closeDone) {
		t.Fatal("Close returned while a head write was under way")
	}
	select {
	case err := <-first:
		t.Fatalf("the held command answered %v before its head write went on", err)
	default:
	}
	close(release)
	if err := <-first; err != nil {
		t.Fatalf("the command whose head write was under way at Close: %v, want success", err)
	}
	<-closeDone
	if got := headSequence(t, inner, id); got != before+1 {
		t.Fatalf("head sequence %d, want %d", got, before+1)
	}
	if _, err := s.Pin(ctx); !errors.Is(err, head.ErrClosed) {
		t.Fatalf("Pin after Close: %v, want ErrClosed", err)
	}
}

// TestCloseNowDoesNotWait: CloseNow (a crash, in tests) returns while a
// head write is held; the held command is still never told it was not
// applied.
func TestCloseNowDoesNotWait(t *testing.T) {
	inner := mem.NewBucket()
	fb := fault.New(inner)
	s := faultOpen(t, fb, shards.NewShardID(), head.Options{})
	held, release := holdHeadWrite(fb, s, 1)
	first := make(chan error, 1)
	go func() { _, err := s.Do(context.Background(), faultPut(1, "v")); first <- err }()
	<-held
	s.CloseNow()
	close(release)
	if err := <-first; err != nil && !errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("held command after CloseNow: %v, want success or ErrUnknownOutcome", err)
	}
}

// TestCloseWaitsForARunningFold: a fold running on its own (NoGroupCommit)
// when Close is called lands before Close returns: a closed Store writes
// no head behind its caller's back.
func TestCloseWaitsForARunningFold(t *testing.T) {
	inner := mem.NewBucket()
	fb := fault.New(inner)
	id := shards.NewShardID()
	s := faultOpen(t, fb, id, head.Options{NoGroupCommit: true, MaxDeltas: 1})
	ctx := context.Background()
	before := headSequence(t, inner, id)
	// The genesis root lists one delta: the next commit lists two, and
	// the fold it starts writes the second head write from here.
	held, release := holdHeadWrite(fb, s, 2)
	defer func() {
		if !closed(release) {
			close(release)
		}
	}()
	if _, err := s.Do(ctx, faultPut(1, "a")); err != nil {
		t.Fatal(err)
	}
	<-held
	closeDone := make(chan struct{})
	go func() { s.Close(); close(closeDone) }()
	// Close has begun once a command is refused.
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for {
		_, err := s.Do(cancelled, faultPut(3, "never"))
		if errors.Is(err, head.ErrClosed) {
			break
		}
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do with a cancelled context: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	if closed(closeDone) {
		t.Fatal("Close returned while a fold's head write was under way")
	}
	close(release)
	<-closeDone
	if got := headSequence(t, inner, id); got != before+2 {
		t.Fatalf("head sequence %d, want %d (the commit and the fold)", got, before+2)
	}
}

// TestRetryAfterUnknownOutcomeNeverNotApplied: once a request was
// answered ErrUnknownOutcome, a later try of it that ends undecided (its
// caller gave up) is answered ErrUnknownOutcome too, never the context's
// error: the first try may have landed. A try that decides (here, the
// replay of the first) makes the request's answers ordinary again.
func TestRetryAfterUnknownOutcomeNeverNotApplied(t *testing.T) {
	inner := mem.NewBucket()
	fb := fault.New(inner)
	s := faultOpen(t, fb, shards.NewShardID(), head.Options{NoGroupCommit: true, MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	cmd := faultPut(1, "landed")
	cmd.RequestID, cmd.Digest = "r1", head.Digest([]byte("r1"))
	// The head write lands and its answer is lost; the head cannot be read
	// back to settle it.
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: s.Layout().Head(), Conditional: true, Count: 1,
		Fault: fault.HookAfter(func(context.Context, fault.Op, string) error {
			fb.Inject(fault.Rule{Op: fault.OpGet, Key: s.Layout().Head(), Fault: fault.FailBefore(bucket.ErrUnavailable)})
			return bucket.ErrAmbiguous
		})})
	ctx := context.Background()
	if _, err := s.Do(ctx, cmd); !errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("first try: %v, want ErrUnknownOutcome", err)
	}
	fb.Clear()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := s.Do(cancelled, cmd)
	if !errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("a cancelled retry after an unknown outcome: %v, want ErrUnknownOutcome", err)
	}
	res, err := s.Do(ctx, cmd)
	if err != nil || !res.Replayed {
		t.Fatalf("retry: %+v %v, want the first try's replay", res, err)
	}
	if _, err := s.Do(cancelled, cmd); !errors.Is(err, context.Canceled) || errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("a cancelled try of a decided request: %v, want context.Canceled", err)
	}
}

// TestIntentWrittenWithoutAnswerIsOut: an intent whose create landed but
// whose answer was lost (here: the caller gave up while it was in flight)
// may be applied by another replica, so its commands are never told they
// were not applied. Another replica carries it, and the caller was told
// the outcome is unknown.
func TestIntentWrittenWithoutAnswerIsOut(t *testing.T) {
	for _, lost := range []struct {
		name string
		err  func(ctx context.Context) error
	}{
		{"cancelled in flight", func(ctx context.Context) error { return fmt.Errorf("put cancelled: %w", context.Canceled) }},
		{"answer lost", func(context.Context) error { return fmt.Errorf("connection reset: %w", bucket.ErrAmbiguous) }},
	} {
		t.Run(lost.name, func(t *testing.T) {
			const interval = 50 * time.Millisecond
			stores, buckets := intentReplicasFault(t, 2, interval)
			a, b := stores[0], stores[1]
			ctx := context.Background()
			aheadOf(t, a, b)
			if _, err := b.Pin(ctx); err != nil { // b has seen another writer: it publishes intents
				t.Fatal(err)
			}
			bctx, cancel := context.WithCancel(ctx)
			defer cancel()
			written := buckets[1].Inject(fault.Rule{Op: fault.OpPut, Prefix: b.Layout().IntentsPrefix(), Count: 1,
				Fault: fault.HookAfter(func(context.Context, fault.Op, string) error {
					cancel() // the caller gives up while the intent is on its way
					return lost.err(bctx)
				})})
			_, err := b.Do(bctx, head.Command{Kind: appendKind, Payload: appendPayload(1, "b0")})
			if written.Fired() != 1 {
				t.Fatalf("b wrote no intent (Do: %v)", err)
			}
			if !errors.Is(err, head.ErrUnknownOutcome) {
				t.Fatalf("b's caller, whose intent is in the bucket: %v, want ErrUnknownOutcome", err)
			}
			// a carries what it finds: b's command lands.
			if _, err := a.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(0, "a1")}); err != nil {
				t.Fatal(err)
			}
			sn, err := a.Pin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			v, _, err := sn.Get(ctx, rqFamilies[0], rqKey(rqFamilies[0], 1))
			if err != nil || string(v) != "b0;" {
				t.Fatalf("b's command after a's commit: %q %v, want it applied (its caller was told the outcome is unknown)", v, err)
			}
		})
	}
}

// TestIntentFailureIsUnknown: a commit of a command whose intent is out
// that fails for good on this replica (the store refuses its staging) is
// answered ErrUnknownOutcome, not the failure: another replica may still
// apply the intent.
func TestIntentFailureIsUnknown(t *testing.T) {
	const interval = 20 * time.Millisecond
	stores, buckets := intentReplicasFault(t, 2, interval)
	a, b := stores[0], stores[1]
	ctx := context.Background()
	aheadOf(t, a, b)
	if _, err := b.Pin(ctx); err != nil {
		t.Fatal(err)
	}
	buckets[1].Inject(fault.Rule{Op: fault.OpPut, Prefix: b.Layout().Prefix() + "deltas/", Fault: fault.FailBefore(bucket.ErrDenied)})
	_, err := b.Do(ctx, head.Command{Kind: appendKind, Payload: appendPayload(1, "b0")})
	if published, _ := b.IntentStats(); published == 0 {
		t.Fatalf("b published no intent (Do: %v)", err)
	}
	if !errors.Is(err, head.ErrUnknownOutcome) {
		t.Fatalf("a failed commit of a published command: %v, want ErrUnknownOutcome", err)
	}
}

// intentReplicasFault is intentReplicas with a fault injector over each
// replica's bucket, returned beside the Stores.
func intentReplicasFault(t *testing.T, n int, interval time.Duration) ([]*head.Store, []*fault.Bucket) {
	t.Helper()
	store := mem.NewStore()
	id := shards.NewShardID()
	var stores []*head.Store
	var fbs []*fault.Bucket
	for range n {
		mb, _ := mem.New(store, "")
		fb := fault.New(latency.New(mb, latency.Options{PerRequest: time.Millisecond, WritesPerSecondPerObject: float64(time.Second / interval)}))
		s, err := head.Open(context.Background(), fb, id, head.SchemaForTest, head.Options{MinCommitInterval: interval, Intents: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		handleAppend(s)
		stores = append(stores, s)
		fbs = append(fbs, fb)
	}
	return stores, fbs
}

// TestDoSettlesAnUnknownOutcome: a command with a request id whose head
// write landed with its answer lost, and whose first run could not read
// the head back to tell, is run again by Do under the same id: the
// replay of the first run answers it, applied once.
func TestDoSettlesAnUnknownOutcome(t *testing.T) {
	inner := mem.NewBucket()
	fb := fault.New(inner)
	s := faultOpen(t, fb, shards.NewShardID(), head.Options{NoGroupCommit: true, MaxAttempts: 2, BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	cmd := faultPut(1, "landed")
	cmd.RequestID, cmd.Digest = "r1", head.Digest([]byte("r1"))
	// The first run reads the head twice (to settle its write, then to
	// pin again) and gives up: MaxAttempts 2.
	const failedReads = 2
	var reads atomic.Int64
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: s.Layout().Head(), Conditional: true, Count: 1,
		Fault: fault.HookAfter(func(context.Context, fault.Op, string) error {
			// The head cannot be read back for a while: the first run
			// ends undecided.
			fb.Inject(fault.Rule{Op: fault.OpGet, Key: s.Layout().Head(),
				Fault: fault.Hook(func(context.Context, fault.Op, string) error {
					if reads.Add(1) <= 5 {
						return bucket.ErrUnavailable
					}
					return nil
				})})
			return bucket.ErrAmbiguous
		})})
	res, err := s.Do(context.Background(), cmd)
	if err != nil || !res.Replayed {
		t.Fatalf("Do: %+v %v, want the first run's replay (%d head reads)", res, err, reads.Load())
	}
}
