package head_test

import (
	"context"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// TestFoldForgetsWhatItReplaced: a Store that folds drops from its caches
// the shard objects and tables its folds replace, so that after many
// commits to one record its caches hold the live state, not every
// version of it.
func TestFoldForgetsWhatItReplaced(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{NoGroupCommit: true, MaxDeltaBytes: 1})
	f := rqFamilies[0]
	put := func(i, gen int) {
		t.Helper()
		if _, err := s.Do(ctx, rqPut(f, i, gen)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 50 {
		put(i, 0)
	}
	put(7, 1)
	objects, tables, _ := s.CacheStats()
	for gen := 2; gen < 100; gen++ {
		put(7, gen)
	}
	objects2, tables2, _ := s.CacheStats()
	if objects2.Entries != objects.Entries || tables2.Entries != tables.Entries {
		t.Fatalf("after 98 more folds of one record: %d shard objects and %d tables cached, want %d and %d as before",
			objects2.Entries, tables2.Entries, objects.Entries, tables.Entries)
	}
	rqMustGet(t, rqPin(t, s), f, 7, rqValue(f, 7, 99))
}

// TestFold: Fold folds a root's deltas however few, and is a no-op on a
// root without any.
func TestFold(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{MaxDeltas: 32, MaxDeltaBytes: 1 << 20})
	f := rqFamilies[0]
	for i := range 5 {
		if _, err := s.Do(ctx, rqPut(f, i, 0)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(rqPin(t, s).Root().Deltas); n == 0 {
		t.Fatal("no deltas to fold")
	}
	if err := s.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	sn := rqPin(t, s)
	if n := len(sn.Root().Deltas); n != 0 {
		t.Fatalf("after Fold the root lists %d deltas", n)
	}
	seq := sn.Sequence()
	if err := s.Fold(ctx); err != nil {
		t.Fatal(err)
	}
	if got := rqPin(t, s).Sequence(); got != seq {
		t.Fatalf("Fold with nothing to fold committed: sequence %d -> %d", seq, got)
	}
	for i := range 5 {
		rqMustGet(t, rqPin(t, s), f, i, rqValue(f, i, 0))
	}
}
