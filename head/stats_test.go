package head_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

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
	if st.BatchSizes[0] != 1 {
		t.Fatalf("a batch of one is not in the first size bucket: %v", st.BatchSizes)
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

	// Commands queued while a group commit runs share the next batch.
	block := make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := a.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
			<-block
			return nil, tx.Put(fam, key(10), []byte("x"))
		}})
		first <- err
	}()
	for a.CommitStats().Batches < 3 {
		runtime.Gosched()
	}
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			if _, err := a.Do(ctx, put(20+i, "y")); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let the five queue behind the first
	close(block)
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	st = a.CommitStats()
	var sized int64
	for _, n := range st.BatchSizes {
		sized += n
	}
	if sized != st.Batches || st.Commands != 8 || st.Batches >= 8 {
		t.Fatalf("batched commands: %+v", st)
	}
}
