package head_test

import (
	"context"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// TestCommitStats: the counters follow the commits, a lost CAS and a
// retry, and the head reads.
func TestCommitStats(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	b1, _ := mem.New(store, "")
	b2, _ := mem.New(store, "")
	id := shards.NewShardID()
	a := open(t, b1, id, head.Options{})
	b := open(t, b2, id, head.Options{})

	if _, err := a.Do(ctx, put(1, "one")); err != nil {
		t.Fatal(err)
	}
	st := a.CommitStats()
	if st.Batches != 1 || st.Commands != 1 || st.Landed != 1 || st.Retries != 0 || st.CASConflicts != 0 {
		t.Fatalf("after one commit: %+v", st)
	}
	if st.HeadReads == 0 {
		t.Fatalf("no head read counted: %+v", st)
	}

	// b builds on the snapshot it pinned before a committed again: its
	// head write loses the CAS and its batch retries.
	stale, err := b.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Do(ctx, put(2, "two")); err != nil {
		t.Fatal(err)
	}
	cmd := put(3, "three")
	cmd.At = stale
	if _, err := b.Do(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	st = b.CommitStats()
	if st.CASConflicts != 1 || st.Retries != 1 || st.Landed != 1 || st.Batches != 1 {
		t.Fatalf("after a lost race: %+v", st)
	}
}
