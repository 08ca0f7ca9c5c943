package gcsweep_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// everything returns every key of b with its bytes.
func everything(t *testing.T, b bucket.Bucket) map[string]string {
	t.Helper()
	ctx := context.Background()
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, o := range objs {
		body, _, err := b.Get(ctx, o.Key)
		if err != nil {
			t.Fatal(err)
		}
		out[o.Key] = string(body)
	}
	return out
}

// sameObjects fails t unless before and after hold the same keys with
// the same bytes.
func sameObjects(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if got, ok := after[k]; !ok {
			t.Errorf("%s gone", k)
		} else if got != v {
			t.Errorf("%s changed", k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("%s written", k)
		}
	}
}

// A copy the destination refuses writes nothing there: every key keeps
// its bytes, no key is added, no PUT or DELETE is sent. Afterwards no
// pin of that name is at the destination, so a restore of it finds none.
func TestPinCopyRefusedWritesNothing(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc := openPinned(t, src)
	fillPinned(t, svc)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "p", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	layout := svc.Store().Layout()

	for _, tc := range []struct {
		name string
		// prepare gives dst what makes the copy refused.
		prepare func(t *testing.T, dst bucket.Bucket)
		want    error
	}{
		{"another head", func(t *testing.T, dst bucket.Bucket) {
			other := openPinned(t, dst)
			call(t, other, "workbench_create", `{"id":"wb"}`)
			putText(t, other, "docs/theirs.txt", "the destination's own file\n")
		}, head.ErrHeadExists},
		{"another pin of that name", func(t *testing.T, dst bucket.Bucket) {
			// An earlier state of dst's own, pinned under the same name:
			// no head (as after an interrupted copy of another pin).
			other := openPinned(t, mem.NewBucket())
			call(t, other, "workbench_create", `{"id":"wb"}`)
			theirs, err := gcsweep.PinHead(ctx, other.Store(), "p", "theirs", time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if err := gcsweep.CreatePin(ctx, dst, layout, theirs); err != nil {
				t.Fatal(err)
			}
		}, gcsweep.ErrPinExists},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := mem.NewBucket()
			tc.prepare(t, dst)
			before := everything(t, dst)
			if len(before) == 0 {
				t.Fatal("the destination holds nothing; the test wants a state there")
			}
			cb := counting.New(dst)
			_, err := gcsweep.CopyPin(ctx, svc.Store(), cb, pin, workbench.BlockRefs, gcsweep.VerifyOptions{})
			if !errors.Is(err, tc.want) {
				t.Fatalf("copy: %v, want %v", err, tc.want)
			}
			s := cb.Snapshot()
			if s.Put.Requests != 0 || s.Delete.Requests != 0 {
				t.Errorf("a refused copy sent %d PUTs and %d DELETEs", s.Put.Requests, s.Delete.Requests)
			}
			after := everything(t, dst)
			sameObjects(t, before, after)
			t.Logf("%s: %d keys at the destination, byte-identical after the refused copy; %d requests, all reads", tc.name, len(after), s.Get.Requests+s.Stat.Requests+s.List.Requests)
			if got, err := gcsweep.ReadPin(ctx, dst, layout, pin.Name); err == nil && got.RootHash == pin.RootHash {
				t.Fatal("the source's pin is at the destination")
			}
		})
	}
}

// A head that appears at the destination after the copy checked it (a
// writer racing the copy) refuses the copy at its head write, and the
// pin, written after the head, is not planted.
func TestPinCopyRefusedAtTheHeadLeavesNoPin(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc := openPinned(t, src)
	fillPinned(t, svc)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "p", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	layout := svc.Store().Layout()
	// The racing writer's head, taken from a state of its own.
	theirs := mem.NewBucket()
	other := openPinned(t, theirs)
	call(t, other, "workbench_create", `{"id":"wb"}`)
	foreign, _, err := theirs.Get(ctx, layout.Head())
	if err != nil {
		t.Fatal(err)
	}
	dst := mem.NewBucket()
	fb := fault.New(dst)
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: layout.Head(), Count: 1, Fault: fault.Hook(func(ctx context.Context, _ fault.Op, key string) error {
		_, err := dst.Put(ctx, key, foreign, bucket.IfAbsent())
		return err
	})})
	if _, err := gcsweep.CopyPin(ctx, svc.Store(), fb, pin, workbench.BlockRefs, gcsweep.VerifyOptions{}); !errors.Is(err, head.ErrHeadExists) {
		t.Fatalf("copy raced by another head: %v, want ErrHeadExists", err)
	}
	if _, err := dst.Stat(ctx, pin.Key); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("pin at the destination after a refused head write: %v", err)
	}
	if got, _, err := dst.Get(ctx, layout.Head()); err != nil || string(got) != string(foreign) {
		t.Fatalf("the racing head was replaced: %v", err)
	}
}

// A copy interrupted after its head write and before its pin resumes:
// the head is its own, and the pin follows.
func TestPinCopyResumesAfterItsHead(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc := openPinned(t, src)
	fillPinned(t, svc)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "p", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dst := mem.NewBucket()
	fb := fault.New(dst)
	fb.Inject(fault.Rule{Op: fault.OpPut, Key: pin.Key, Count: 1, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	if _, err := gcsweep.CopyPin(ctx, svc.Store(), fb, pin, workbench.BlockRefs, gcsweep.VerifyOptions{}); !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("copy interrupted at its pin: %v", err)
	}
	first := everything(t, dst)
	if _, ok := first[svc.Store().Layout().Head()]; !ok {
		t.Fatal("no head after the objects were copied")
	}
	rep, err := gcsweep.CopyPin(ctx, svc.Store(), dst, pin, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 0 || rep.HeadSequence != pin.Sequence {
		t.Fatalf("resumed copy: %+v", rep)
	}
	after := everything(t, dst)
	if got, want := slices.Sorted(maps.Keys(after)), append(slices.Sorted(maps.Keys(first)), pin.Key); !slices.Equal(slices.Sorted(slices.Values(want)), got) {
		t.Fatalf("keys after the resumed copy:\n got %v\nwant %v", got, want)
	}
	if p, err := gcsweep.ReadPin(ctx, dst, svc.Store().Layout(), pin.Name); err != nil || p != pin {
		t.Fatalf("pin at the destination: %+v %v", p, err)
	}
}
