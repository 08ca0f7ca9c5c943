package gcsweep_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// The life of a pin through sweeps: a pin keeps its state whole while the
// shard moves on and sweeps reclaim the history in between; a restore
// makes that state current, and once it has, the pin can go and the next
// sweep still keeps every object the restored head reaches.
func TestPinKeepsItsStateThroughSweepsAndRestore(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	svc := openPinned(t, b)
	layout := svc.Store().Layout()
	paths := fillPinned(t, svc)
	want := answers(t, svc, paths)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "keep", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range paths {
		replaceText(t, svc, p, "after the pin\n")
		if i%4 == 0 {
			putText(t, svc, "docs/later"+p[len("docs/"):], "later\n")
		}
	}
	sweep := func() *gcsweep.Report {
		t.Helper()
		clk.Advance(3 * time.Hour)
		rep, err := gcsweep.Sweep(ctx, b, layout, workbench.SweepOptions())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	verify := func(p gcsweep.Pin) []gcsweep.Problem {
		t.Helper()
		rep, err := gcsweep.VerifyPin(ctx, b, layout, p, workbench.BlockRefs, gcsweep.VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return rep.Problems
	}

	rep := sweep()
	first := rep.Deleted.Objects
	if rep.Pins != 1 || rep.Deleted.Objects == 0 {
		t.Fatalf("first sweep: %d pins, %d objects deleted; want 1 and some", rep.Pins, rep.Deleted.Objects)
	}
	if probs := verify(pin); len(probs) != 0 {
		t.Fatalf("pinned state after a sweep: %v", probs)
	}

	if _, committed, err := svc.Store().RestoreRoot(ctx, pin.RootHash, head.RestoreOptions{}); err != nil || !committed {
		t.Fatalf("restore: %v %v", committed, err)
	}
	if err := gcsweep.DeletePin(ctx, b, layout, pin.Name); err != nil {
		t.Fatal(err)
	}
	rep = sweep()
	if rep.Pins != 0 {
		t.Fatalf("second sweep saw %d pins", rep.Pins)
	}
	cur, err := svc.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if probs := verify(gcsweep.Pin{Name: "head", RootHash: cur.RootHash()}); len(probs) != 0 {
		t.Fatalf("restored head after the pin went and a sweep: %v", probs)
	}
	fresh := openPinned(t, b)
	got := answers(t, fresh, paths)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answer %d after restore and sweeps\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	t.Logf("first sweep deleted %d objects; the second %d", first, rep.Deleted.Objects)
}

// Without the pin, the same sweep reclaims objects of the state it kept:
// the pin, not luck, kept them above.
func TestUnpinnedStateIsReclaimed(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	svc := openPinned(t, b)
	layout := svc.Store().Layout()
	paths := fillPinned(t, svc)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "gone", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range paths {
		replaceText(t, svc, p, "after the pin\n")
	}
	if err := gcsweep.DeletePin(ctx, b, layout, pin.Name); err != nil {
		t.Fatal(err)
	}
	clk.Advance(3 * time.Hour)
	if _, err := gcsweep.Sweep(ctx, b, layout, workbench.SweepOptions()); err != nil {
		t.Fatal(err)
	}
	rep, err := gcsweep.VerifyPin(ctx, b, layout, pin, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) == 0 || !rep.Problems[0].Missing {
		t.Fatalf("unpinned state after a sweep: problems %v, want missing objects", rep.Problems)
	}
	// A restore of a root the sweep took is refused, and commits nothing
	// that references what is gone: the head's state stays whole.
	if _, _, err := svc.Store().RestoreRoot(ctx, pin.RootHash, head.RestoreOptions{}); !errors.Is(err, head.ErrKeptDamaged) && !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("restore of a reclaimed root: %v, want ErrKeptDamaged or ErrNotExist", err)
	}
	cur, err := svc.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err = gcsweep.VerifyPin(ctx, b, layout, gcsweep.Pin{Name: "head", RootHash: cur.RootHash()}, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("head after the refused restore: %v %v", rep.Problems, err)
	}
}

// A copy's history starts at the pinned root, whose parent is not there:
// a sweep at the copy (pinned or not, young or old) keeps the whole state
// and deletes no more than the roots of earlier sweeps' touches (and,
// once unpinned, the pinned root object), and the copy answers as before.
func TestSweepAtACopyKeepsThePinnedState(t *testing.T) {
	ctx := context.Background()
	svc := openPinned(t, mem.NewBucket())
	paths := fillPinned(t, svc)
	want := answers(t, svc, paths)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "p", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	clk := newFakeClock()
	dst := newClockBucket(mem.NewBucket(), clk, nil)
	if _, err := gcsweep.CopyPin(ctx, svc.Store(), dst, pin, workbench.BlockRefs, gcsweep.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
	layout := svc.Store().Layout()
	for i, step := range []string{"young", "old", "unpinned"} {
		if step == "unpinned" {
			if err := gcsweep.DeletePin(ctx, dst, layout, pin.Name); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(time.Duration(i) * 3 * time.Hour)
		rep, err := gcsweep.Sweep(ctx, dst, layout, workbench.SweepOptions())
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if rep.Reachable.Objects == 0 {
			t.Fatalf("%s: kept reachable %d", step, rep.Reachable.Objects)
		}
		for _, row := range rep.ByClass {
			if row.Class != gcsweep.ClassRoot && row.Deleted.Objects != 0 {
				t.Fatalf("%s: deleted %d objects of class %s", step, row.Deleted.Objects, row.Class)
			}
		}
	}
	got := answers(t, openPinned(t, dst), paths)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answer %d after sweeps at the copy\n got %s\nwant %s", i, got[i], want[i])
		}
	}
}
