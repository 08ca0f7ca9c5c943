package head_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// deferringBucket is a bucket whose puts under a bucket.SyncGroup are not
// durable until the group syncs, as the file bucket's are, and which
// checks at each head write that every object put before it is durable.
type deferringBucket struct {
	bucket.Bucket
	t *testing.T

	mu        sync.Mutex
	pending   map[string]bool // put under a group, not yet synced
	grouped   int             // puts made under a group
	failSyncs int             // syncs still to fail
}

func (d *deferringBucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if strings.HasSuffix(key, "/head") {
		d.mu.Lock()
		for k := range d.pending {
			d.t.Errorf("head written while %s, staged for it, was not yet durable", k)
		}
		d.mu.Unlock()
	}
	a, err := d.Bucket.Put(ctx, key, body, cond)
	if g := bucket.SyncGroupOf(ctx); g != nil && err == nil {
		d.mu.Lock()
		d.pending[key] = true
		d.grouped++
		d.mu.Unlock()
		g.Defer("all", func(context.Context) error {
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.failSyncs > 0 {
				d.failSyncs--
				return errors.New("injected sync failure")
			}
			clear(d.pending)
			return nil
		})
	}
	return a, err
}

// TestStagedObjectsDurableBeforeTheHead: a commit stages its objects
// under a sync group and syncs it before the head write that makes them
// reachable; when the sync fails, the head is not written, and the retry
// stages the objects again and lands.
func TestStagedObjectsDurableBeforeTheHead(t *testing.T) {
	ctx := context.Background()
	d := &deferringBucket{Bucket: mem.NewBucket(), t: t, pending: map[string]bool{}}
	s := faultOpen(t, d, shards.NewShardID(), head.Options{BackoffBase: time.Millisecond, BackoffMax: time.Millisecond})
	for i := range byte(5) {
		if _, err := s.Do(ctx, faultPut(i, "v")); err != nil {
			t.Fatal(err)
		}
	}
	d.mu.Lock()
	grouped := d.grouped
	d.failSyncs = 1
	d.mu.Unlock()
	if grouped == 0 {
		t.Fatal("no commit staged an object under a sync group")
	}
	if _, err := s.Do(ctx, faultPut(9, "after a failed sync")); err != nil {
		t.Fatalf("a commit whose first sync failed: %v", err)
	}
	if v, ok := faultGet(t, s, 9); !ok || v != "after a failed sync" {
		t.Fatalf("get after the retried commit: %q, %v", v, ok)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.failSyncs != 0 {
		t.Fatal("the injected sync failure was never met")
	}
}
