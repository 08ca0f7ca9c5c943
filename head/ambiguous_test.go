package head_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// lateWrite answers the first conditional write of the head as ambiguous
// without applying it, then applies it just before the next conditional
// write of the head: a write that was in flight when its caller gave up on
// it, landing late.
type lateWrite struct {
	bucket.Bucket
	mu      sync.Mutex
	puts    int
	pending func()
}

func (l *lateWrite) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if _, ok := cond.Version(); ok && strings.HasSuffix(key, "/head") {
		l.mu.Lock()
		l.puts++
		n, late := l.puts, l.pending
		l.pending = nil
		if n == 1 {
			l.pending = func() { l.Bucket.Put(context.Background(), key, body, cond) }
			l.mu.Unlock()
			return bucket.Attrs{}, fmt.Errorf("lost answer: %w", bucket.ErrAmbiguous)
		}
		l.mu.Unlock()
		if late != nil {
			late()
		}
	}
	return l.Bucket.Put(ctx, key, body, cond)
}

// TestLateLandingWriteAppliesOnce: after an ambiguous head write with the
// head unchanged, the engine must write the same candidate again, never a
// rebuilt one, or a late landing of the first write would apply the
// command twice. The command has no request id, so nothing else would
// catch a double application.
func TestLateLandingWriteAppliesOnce(t *testing.T) {
	ctx := context.Background()
	lw := &lateWrite{Bucket: mem.NewBucket()}
	s := open(t, lw, shards.NewShardID(), head.Options{})
	incr := head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(fam, key(0))
		if err != nil {
			return nil, err
		}
		n := uint64(0)
		if v != nil {
			n = binary.BigEndian.Uint64(v)
		}
		return nil, tx.Put(fam, key(0), binary.BigEndian.AppendUint64(nil, n+1))
	}}
	if _, err := s.Do(ctx, incr); err != nil {
		t.Fatal(err)
	}
	v, _ := get(t, s, 0)
	if got := binary.BigEndian.Uint64([]byte(v)); got != 1 {
		t.Fatalf("counter = %d after one increment, want 1", got)
	}
	if lw.puts < 2 {
		t.Fatalf("%d conditional head writes; the late write was never exercised", lw.puts)
	}
}

// TestPinsShareHeadReads: concurrent Pins share head reads, but only reads
// sent after they arrived.
func TestPinsShareHeadReads(t *testing.T) {
	ctx := context.Background()
	// Each request takes 200 ms, so the pins below arrive while the first
	// head read is in flight, even on a loaded machine.
	cb := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 200 * time.Millisecond}))
	s := open(t, cb, shards.NewShardID(), head.Options{})
	cb.Reset()
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := s.Pin(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	got := cb.Snapshot().Total().Requests
	if got < 1 || got >= 50 {
		t.Fatalf("50 concurrent pins made %d head reads, want fewer than 50", got)
	}
	t.Logf("50 concurrent pins made %d head reads", got)

	// A Pin after a commit (by another replica) sees it.
	other := open(t, cb, s.ID(), head.Options{})
	if _, err := other.Do(ctx, put(7, "seven")); err != nil {
		t.Fatal(err)
	}
	if v, ok := get(t, s, 7); !ok || v != "seven" {
		t.Fatalf("pin after another replica's commit reads %q, %v", v, ok)
	}
}
