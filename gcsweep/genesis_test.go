package gcsweep_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// genesisOnly makes agent's deployment in b what a first write that died
// after its first writes leaves: a genesis head and, with writes > 1,
// the objects its first commit staged.
func genesisOnly(t *testing.T, b bucket.Bucket, agent string, writes int64) {
	t.Helper()
	fb := fault.New(b)
	var n atomic.Int64
	fb.Inject(fault.Rule{Op: fault.OpPut | fault.OpDelete, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		if n.Add(1) > writes {
			return errors.New("crashed")
		}
		return nil
	})})
	opts := smallOptions(agent)
	opts.Engine.MaxAttempts = 1
	s, err := workbench.Open(context.Background(), fb, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if out, ok := s.Call(context.Background(), "workbench_create", []byte(`{"id":"wb"}`)); ok {
		t.Fatalf("create through a bucket that fails after %d writes: %s", writes, out)
	}
	h, _, err := head.ReadHead(context.Background(), b, s.Store().Layout(), s.Store().Schema().Marker)
	if err != nil || !h.Genesis() {
		t.Fatalf("the first write left head %+v, %v; want a genesis head", h, err)
	}
}

// TestSweepGenesisHead: a genesis head is a head, not a lost one: the
// sweep marks nothing for it, runs, and leaves the shard usable; the
// staged objects of the first commit that never landed are garbage.
// Deleting the head makes it a lost head again, which the sweep refuses.
func TestSweepGenesisHead(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	genesisOnly(t, b, "genesis", 3) // the genesis head, then a delta and a root staged
	layout, _ := workbench.Layout("genesis")
	before := listAll(t, b)
	if len(before) != 3 {
		t.Fatalf("the crashed first write left %d objects, want 3: %v", len(before), before)
	}
	opts := sweepOptions()
	opts.Now = func() time.Time { return time.Now().Add(2 * gcsweep.DefaultGrace) }
	rep, err := gcsweep.Sweep(ctx, b, layout, opts)
	if err != nil {
		t.Fatalf("sweep of a genesis head: %v", err)
	}
	if rep.HeadSequence != 0 || rep.HeadRoot != "" || rep.Live.Objects != 0 || rep.Scanned.Objects != 2 {
		t.Fatalf("sweep of a genesis head: %+v", rep)
	}
	t.Logf("sweep of a genesis head with a staged first commit: scanned %d, deleted %d, kept %d", rep.Scanned.Objects, rep.Deleted.Objects, rep.Scanned.Objects-rep.Deleted.Objects)
	if h, _, err := head.ReadHead(ctx, b, layout, *workbench.SweepOptions().Marker); err != nil || !h.Genesis() {
		t.Fatalf("head after the sweep: %+v, %v", h, err)
	}
	// The deployment is usable: the next write commits on the genesis head.
	s := openService(t, b, smallOptions("genesis"))
	put(t, s, "a.txt", "after the sweep", false)
	readBack(t, s, "a.txt", "after the sweep")
	if _, err := gcsweep.Sweep(ctx, b, layout, opts); err != nil {
		t.Fatal(err)
	}
	checkState(t, b, "genesis", files{"a.txt": "after the sweep"})

	// A genesis head deleted while staged objects remain is a lost head.
	b2 := mem.NewBucket()
	genesisOnly(t, b2, "genesis", 3)
	if err := b2.Delete(ctx, layout.Head(), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := gcsweep.Sweep(ctx, b2, layout, opts); !errors.Is(err, gcsweep.ErrNoHead) {
		t.Fatalf("sweep of a lost head: %v, want ErrNoHead", err)
	}
}

// TestPinGenesisHead: a shard without a commit (never written, or a
// genesis head) has nothing to pin, and pinning it writes nothing.
func TestPinGenesisHead(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	opts := smallOptions("genesis")
	s, err := workbench.Open(ctx, b, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := gcsweep.PinHead(ctx, s.Store(), "", "", time.Now()); !errors.Is(err, gcsweep.ErrNothingToPin) {
		t.Fatalf("pin of a shard never written: %v, want ErrNothingToPin", err)
	}
	genesisOnly(t, b, "genesis", 1)
	before := listAll(t, b)
	if _, err := gcsweep.PinHead(ctx, s.Store(), "", "", time.Now()); !errors.Is(err, gcsweep.ErrNothingToPin) {
		t.Fatalf("pin of a genesis head: %v, want ErrNothingToPin", err)
	}
	if after := listAll(t, b); len(after) != len(before) {
		t.Fatalf("a refused pin wrote: %v", after)
	}
}
