package head_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// failFirstSync makes the sync a head write runs first (bucket.
// WithSyncFirst) fail once, as a disk that lost the staged objects'
// pages would.
type failFirstSync struct {
	bucket.Bucket
	armed  atomic.Bool
	failed atomic.Int32
	synced atomic.Int32 // head writes that carried a group to sync first
	mu     sync.Mutex
	roots  []string // the roots staged, in order
	heads  []string // the heads placed, in order
}

func (f *failFirstSync) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if bucket.SyncGroupOf(ctx) != nil && strings.Contains(key, "/roots/") && f.armed.Load() {
		f.mu.Lock()
		f.roots = append(f.roots, key)
		f.mu.Unlock()
	}
	if g := bucket.SyncFirstOf(ctx); g != nil && f.armed.Load() {
		f.synced.Add(1)
		if f.failed.Add(1) == 1 {
			g.Defer("injected", func(context.Context) error { return errors.New("injected: the disk lost the pages") })
		}
	}
	a, err := f.Bucket.Put(ctx, key, body, cond)
	if err == nil && strings.HasSuffix(key, "/head") && f.armed.Load() {
		f.mu.Lock()
		f.heads = append(f.heads, string(body))
		f.mu.Unlock()
	}
	return a, err
}

// TestHeadWriteSyncsTheStagedObjects: on a bucket that SyncsGroupFirst
// (the local-file bucket) the head write syncs the staged objects, so a
// commit takes one sync of the file system for its objects and head;
// when that sync fails, the head is not written and the attempt is built
// again with new objects, and lands.
func TestHeadWriteSyncsTheStagedObjects(t *testing.T) {
	ctx := context.Background()
	fb, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !fb.Capabilities().SyncsGroupFirst {
		t.Fatal("the file bucket has no syncfs here, and cannot sync a group first")
	}
	b := &failFirstSync{Bucket: fb}
	s := open(t, b, shards.NewShardID(), head.Options{Check: true, NoGroupCommit: true})
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	b.armed.Store(true)
	if _, err := s.Do(ctx, put(1, "a")); err != nil {
		t.Fatalf("a commit whose first head write found its staged objects unsynced: %v", err)
	}
	if b.synced.Load() < 2 {
		t.Fatalf("%d head writes synced a group first; want the failed one and the one that landed", b.synced.Load())
	}
	// The first head placed names a root staged again, not the one whose
	// sync failed.
	if len(b.roots) < 2 || len(b.heads) < 1 || strings.Contains(b.heads[0], b.roots[0][strings.LastIndex(b.roots[0], "/")+1:]) {
		t.Fatalf("roots staged %v; the first head placed %s names the one whose sync failed", b.roots, b.heads)
	}
	fs0 := fb.FileSystemSyncs()
	f0, d0 := fb.Syncs()
	if _, err := s.Do(ctx, put(2, "b")); err != nil {
		t.Fatal(err)
	}
	f, d := fb.Syncs()
	if fs := fb.FileSystemSyncs() - fs0; fs != 1 || f != f0 || d-d0 != 1 {
		t.Fatalf("a commit took %d file-system syncs, %d file and %d directory fsyncs; want 1, 0 and 1", fs, f-f0, d-d0)
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"a", "b"} {
		if v, ok, err := sn.Get(ctx, fam, key(i+1)); err != nil || !ok || string(v) != want {
			t.Fatalf("record %d: %q %v %v", i+1, v, ok, err)
		}
	}
}
