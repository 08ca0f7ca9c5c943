package history

import (
	"errors"
	"math"
	"sync/atomic"
	"testing"
)

// TestShareTiles: the shares of consecutive cursors tile [0, total)
// whatever the steps, so commands of any batch size place every unit
// exactly once, and the share does not overflow for large counts.
func TestShareTiles(t *testing.T) {
	for _, c := range []struct{ n, total uint64 }{{0, 0}, {1, 0}, {1, 3}, {10, 31}, {60, 180}, {100000, 300017}, {7, 3}} {
		for _, step := range []uint64{1, 3, 16} {
			var next uint64
			for lo := uint64(0); lo < c.n; lo += step {
				hi := min(lo+step, c.n)
				if got := share(lo, c.total, c.n); got != next {
					t.Fatalf("n %d total %d: share at %d is %d, want %d", c.n, c.total, lo, got, next)
				}
				next = share(hi, c.total, c.n)
				if next < share(lo, c.total, c.n) {
					t.Fatalf("n %d total %d: shares go back at %d", c.n, c.total, hi)
				}
			}
			if next != c.total && c.n > 0 {
				t.Fatalf("n %d total %d step %d: the shares end at %d", c.n, c.total, step, next)
			}
		}
	}
	if got := share(math.MaxUint32, math.MaxUint64/2, math.MaxUint32); got != math.MaxUint64/2 {
		t.Fatalf("share of large counts: %d", got)
	}
}

// TestInParallelCoversOnce: the ranges inParallel hands out cover [0, n)
// exactly once at sizes below, at and above its split, and the first
// error any range meets is returned.
func TestInParallelCoversOnce(t *testing.T) {
	for _, n := range []int{0, 1, 4095, 8192, 10_001, 100_000} {
		seen := make([]int32, n)
		if err := inParallel(n, func(lo, hi int) error {
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&seen[i], 1)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for i, c := range seen {
			if c != 1 {
				t.Fatalf("n %d: item %d visited %d times", n, i, c)
			}
		}
	}
	bad := errors.New("bad item")
	err := inParallel(100_000, func(lo, hi int) error {
		if lo <= 77_777 && 77_777 < hi {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("err = %v, want %v", err, bad)
	}
}
