package head_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// TestPreviousValueFormat: a Store opens a shard of its value format or
// the four before, and keeps writing the shard's own marker and head
// format (its head and its schema record); a shard five value formats
// older, or newer, is refused.
func TestPreviousValueFormat(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	with := func(v uint64) head.Schema {
		sc := head.SchemaForTest
		sc.Marker.ValueFormatVersion = v
		sc.CarrierFrom = 3 // heads of HeadFormat from value format 3
		return sc
	}
	openAs := func(v uint64) *head.Store {
		s, err := head.Open(ctx, b, id, with(v), head.Options{Check: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	// The shard is created, and first committed, in value format 2.
	old := openAs(2)
	if err := old.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Do(ctx, put(1, "a")); err != nil {
		t.Fatal(err)
	}
	newer := openAs(3)
	if _, err := newer.Do(ctx, put(2, "b")); err != nil {
		t.Fatalf("a Store of value format 3 on a shard of 2: %v", err)
	}
	sn, err := newer.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := sn.Marker(); m.ValueFormatVersion != 2 {
		t.Fatalf("the shard's marker after a commit by the newer Store: %+v", m)
	}
	if f := sn.Head().Format; f != head.HeadFormatV2 {
		t.Fatalf("the shard's head after a commit by the newer Store: %s, want %s", f, head.HeadFormatV2)
	}
	if v, ok, err := sn.Get(ctx, fam, key(1)); err != nil || !ok || string(v) != "a" {
		t.Fatalf("the older Store's record: %q %v %v", v, ok, err)
	}
	// The older Store still opens it: nothing newer was written.
	if _, err := old.Do(ctx, put(3, "c")); err != nil {
		t.Fatalf("the older Store after the newer one committed: %v", err)
	}
	for _, v := range []uint64{4, 5, 6, 7} {
		if _, err := openAs(v).Pin(ctx); err != nil {
			t.Fatalf("a Store of value format %d on a shard of 2: %v", v, err)
		}
	}
	for _, v := range []uint64{1, 8} {
		if _, err := openAs(v).Pin(ctx); !errors.Is(err, head.ErrSchemaMismatch) {
			t.Fatalf("a Store of value format %d on a shard of 2: %v, want ErrSchemaMismatch", v, err)
		}
	}
	// A head written again for a root of the shard (recovery, a pin's
	// copy) carries the marker of the root's schema record, not the
	// writer's.
	root := sn.RootHash()
	if err := b.Delete(ctx, newer.Layout().Head(), bucket.Condition{}); err != nil {
		t.Fatal(err)
	}
	h, err := head.WriteHeadAt(ctx, b, id, with(3), root, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if h.Marker.ValueFormatVersion != 2 || h.Format != head.HeadFormatV2 {
		t.Fatalf("a head written for a root of value format 2 has marker %+v, format %s", h.Marker, h.Format)
	}
	if _, err := openAs(3).Do(ctx, put(4, "d")); err != nil {
		t.Fatalf("a commit after the head was written again: %v", err)
	}
	// A new shard takes the Store's own marker.
	fresh, err := head.Open(ctx, b, shards.NewShardID(), with(3), head.Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, err := fresh.Do(ctx, put(1, "x")); err != nil {
		t.Fatal(err)
	}
	if sn, err := fresh.Pin(ctx); err != nil || sn.Marker().ValueFormatVersion != 3 || sn.Head().Format != head.HeadFormat {
		t.Fatalf("a new shard's marker and head format: %v", err)
	}
}
