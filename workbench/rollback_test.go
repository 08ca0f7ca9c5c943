package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/workbench"
)

// bucketKeys returns every key of b with its bytes.
func bucketKeys(t *testing.T, b bucket.Bucket) map[string]string {
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

// TestRolledBackHead: an older head object put back (a bucket restored
// from an old backup, a mistake) hides every later commit. fsck reports
// it, a sweep (with the most aggressive grace, long after) deletes
// nothing and writes nothing, a replica that served a newer head refuses
// it, and putting the newest head back loses nothing. The same holds once
// a fresh replica, which cannot know, has committed on the old head.
func TestRolledBackHead(t *testing.T) {
	ctx := context.Background()
	clock := newStoreClock()
	b := mem.NewBucketAt(clock.Now)
	opts := workbench.Options{AgentID: "test", BlockSize: 64, InlineMax: 16}
	s := newServiceOn(t, b, opts)
	layout := s.Store().Layout()
	var old []byte
	bodies := map[string]string{}
	for i := range 8 {
		path := fmt.Sprintf("f%d.txt", i%4)
		_, replace := bodies[path]
		bodies[path] = strings.Repeat(fmt.Sprintf("v%d ", i), 40)
		in := putInput("wb", "outputs", path, `"text":"`+bodies[path]+`"`)
		if replace {
			in = putInput("wb", "outputs", path, `"text":"`+bodies[path]+`"`, `"replace":true`)
		}
		mustCall(t, s, "workbench_put_file", in)
		if i == 2 {
			h, _, err := b.Get(ctx, layout.Head())
			if err != nil {
				t.Fatal(err)
			}
			old = h
		}
	}
	newest, _, err := b.Get(ctx, layout.Head())
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Hour)
	if _, err := b.Put(ctx, layout.Head(), old, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}

	check := func(stage string) {
		t.Helper()
		rep := runFsck(t, b)
		wantFinding(t, rep, "", "engine", "an older head was put back")
		before := bucketKeys(t, b)
		opts := workbench.SweepOptions()
		opts.Grace, opts.SetGrace = 2*time.Second, true
		if _, err := gcsweep.Sweep(ctx, b, layout, opts); !errors.Is(err, gcsweep.ErrRollback) {
			t.Fatalf("%s: sweep: %v, want ErrRollback", stage, err)
		}
		if after := bucketKeys(t, b); !maps.Equal(before, after) {
			t.Fatalf("%s: a sweep of a rolled-back head changed the bucket", stage)
		}
	}
	check("put back")

	// The replica that served the newest head refuses the old one, and
	// writes nothing over it.
	got, ok := call(t, s, "workbench_put_file", putInput("wb", "outputs", "new.txt", `"text":"new"`))
	if ok || got["code"] != workbench.CodeInvalidState {
		t.Fatalf("a put through the replica that saw a newer head: %v", got)
	}
	if h, _, _ := b.Get(ctx, layout.Head()); string(h) != string(old) {
		t.Fatal("the replica wrote over the old head")
	}

	// A fresh replica cannot tell, and commits on the old head: still
	// found, still nothing swept.
	fresh := newServiceOn(t, b, opts)
	mustCall(t, fresh, "workbench_put_file", putInput("wb", "outputs", "fork.txt", `"text":"fork"`))
	check("forked")

	// The newest head put back: every file reads as last written.
	if _, err := b.Put(ctx, layout.Head(), newest, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	cold := newServiceOn(t, b, opts)
	for p, want := range bodies {
		if got := readText(t, cold, "wb", "outputs/"+p); got != want {
			t.Fatalf("%s after the newest head came back: %q", p, got)
		}
	}
	if rep := runFsck(t, b); len(rep.Findings) != 0 {
		t.Fatalf("fsck after the newest head came back: %v", rep.Findings)
	}
}
