package bucket_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket"
)

// TestSyncGroup: work deferred under one key runs once, Sync runs
// everything deferred and forgets it, and a failure is Sync's error.
func TestSyncGroup(t *testing.T) {
	ctx := context.Background()
	if bucket.SyncGroupOf(ctx) != nil {
		t.Fatal("a bare context carries a group")
	}
	g := bucket.NewSyncGroup()
	if got := bucket.SyncGroupOf(bucket.WithSyncGroup(ctx, g)); got != g {
		t.Fatal("the context does not carry the group it was given")
	}
	var fs, a, b atomic.Int64
	for range 5 {
		g.Defer("file system", func(context.Context) error { fs.Add(1); return nil })
	}
	g.Defer("a", func(context.Context) error { a.Add(1); return nil })
	g.Defer("b", func(context.Context) error { b.Add(1); return nil })
	if n := g.Pending(); n != 3 {
		t.Fatalf("pending %d, want 3 (one per key)", n)
	}
	if err := g.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if fs.Load() != 1 || a.Load() != 1 || b.Load() != 1 {
		t.Fatalf("ran file system %d, a %d, b %d times; want once each", fs.Load(), a.Load(), b.Load())
	}
	if err := g.Sync(ctx); err != nil || fs.Load() != 1 || g.Pending() != 0 {
		t.Fatalf("a second Sync ran again (%d) or failed (%v)", fs.Load(), err)
	}

	// A key deferred again after a Sync runs again at the next.
	failed := errors.New("injected")
	g.Defer("file system", func(context.Context) error { return failed })
	g.Defer("a", func(context.Context) error { a.Add(1); return nil })
	if err := g.Sync(ctx); !errors.Is(err, failed) {
		t.Fatalf("Sync with a failing sync: %v, want it", err)
	}
}
