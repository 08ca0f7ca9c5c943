package shards_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

func strSize(s string) int64 { return int64(len(s)) }

func h(s string) digest.Hash { return digest.Sum([]byte(s)) }

func TestCacheByteBudgetEvictsLRU(t *testing.T) {
	c := shards.NewCache(100, strSize)
	val := func(i int) string { return fmt.Sprintf("%030d", i) } // 30 bytes
	for i := 0; i < 3; i++ {
		if !c.Add(h(val(i)), val(i)) {
			t.Fatalf("Add(%d) refused", i)
		}
	}
	// Touch 0 so that 1 is the least recently used.
	if _, ok := c.Get(h(val(0))); !ok {
		t.Fatal("0 missing")
	}
	c.Add(h(val(3)), val(3)) // 120 bytes > 100: evicts 1
	if _, ok := c.Get(h(val(1))); ok {
		t.Fatal("least recently used entry survived")
	}
	for _, i := range []int{0, 2, 3} {
		if v, ok := c.Get(h(val(i))); !ok || v != val(i) {
			t.Fatalf("entry %d lost", i)
		}
	}
	st := c.Stats()
	if st.Bytes != 90 || st.Entries != 3 || st.Evictions != 1 || st.Budget != 100 {
		t.Fatalf("stats = %+v", st)
	}
	if st.Hits != 4 || st.Misses != 1 {
		t.Fatalf("hits %d misses %d, want 4 and 1", st.Hits, st.Misses)
	}
	// An entry of exactly the budget evicts everything else.
	big := fmt.Sprintf("%0100d", 7)
	if !c.Add(h(big), big) {
		t.Fatal("entry of exactly the budget refused")
	}
	if st := c.Stats(); st.Entries != 1 || st.Bytes != 100 || st.Evictions != 4 {
		t.Fatalf("after budget-sized add: %+v", st)
	}
}

// TestCacheRemove: a removed entry is gone and its bytes are free; removing
// a missing one changes nothing.
func TestCacheRemove(t *testing.T) {
	c := shards.NewCache(100, strSize)
	a, b := fmt.Sprintf("%030d", 1), fmt.Sprintf("%030d", 2)
	c.Add(h(a), a)
	c.Add(h(b), b)
	c.Remove(h(a))
	c.Remove(h("absent"))
	if _, ok := c.Get(h(a)); ok {
		t.Fatal("removed entry still cached")
	}
	if v, ok := c.Get(h(b)); !ok || v != b {
		t.Fatal("the other entry went too")
	}
	if st := c.Stats(); st.Entries != 1 || st.Bytes != 30 || st.Evictions != 0 {
		t.Fatalf("stats after Remove = %+v", st)
	}
}

func TestCacheRefusesValueLargerThanBudget(t *testing.T) {
	c := shards.NewCache(100, strSize)
	c.Add(h("small"), "small")
	huge := fmt.Sprintf("%0101d", 1)
	if c.Add(h(huge), huge) {
		t.Fatal("value larger than the budget was cached")
	}
	if _, ok := c.Get(h(huge)); ok {
		t.Fatal("value larger than the budget is present")
	}
	if _, ok := c.Get(h("small")); !ok {
		t.Fatal("refusing a huge value evicted others")
	}
	if st := c.Stats(); st.Rejected != 1 || st.Evictions != 0 || st.Bytes != 5 {
		t.Fatalf("stats = %+v", st)
	}
	// Load still returns the value, without caching it.
	fetches := 0
	for i := 0; i < 2; i++ {
		v, err := c.Load(context.Background(), h(huge), func(context.Context) ([]byte, error) {
			fetches++
			return []byte(huge), nil
		}, func(b []byte) (string, error) { return string(b), nil })
		if err != nil || v != huge {
			t.Fatalf("Load = %.10q, %v", v, err)
		}
	}
	if fetches != 2 {
		t.Fatalf("fetches = %d, want 2 (never cached)", fetches)
	}
}

func TestCacheAddKeepsPresentValue(t *testing.T) {
	c := shards.NewCache(100, strSize)
	c.Add(h("a"), "a")
	c.Add(h("a"), "different")
	if v, _ := c.Get(h("a")); v != "a" {
		t.Fatalf("Get = %q", v)
	}
	if st := c.Stats(); st.Bytes != 1 || st.Entries != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

func decodeString(b []byte) (string, error) { return string(b), nil }

func TestCacheLoadCoalescesConcurrentLoads(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := shards.NewCache(1<<20, strSize)
		const n = 16
		body := "shared body"
		var fetches atomic.Int32
		release := make(chan struct{})
		fetch := func(context.Context) ([]byte, error) {
			fetches.Add(1)
			<-release
			return []byte(body), nil
		}
		var wg sync.WaitGroup
		results := make([]string, n)
		errs := make([]error, n)
		for i := 0; i < n; i++ {
			wg.Go(func() {
				results[i], errs[i] = c.Load(context.Background(), h(body), fetch, decodeString)
			})
		}
		synctest.Wait() // every Load is blocked: one in fetch, the rest waiting on it
		close(release)
		wg.Wait()
		if got := fetches.Load(); got != 1 {
			t.Fatalf("fetch ran %d times for %d concurrent loads", got, n)
		}
		for i := 0; i < n; i++ {
			if errs[i] != nil || results[i] != body {
				t.Fatalf("load %d = %q, %v", i, results[i], errs[i])
			}
		}
		// A later Load is a hit.
		if _, err := c.Load(context.Background(), h(body), fetch, decodeString); err != nil || fetches.Load() != 1 {
			t.Fatalf("later Load fetched again: %v", err)
		}
		if st := c.Stats(); st.Hits < 1 {
			t.Fatalf("stats = %+v", st)
		}
	})
}

func TestCacheLoadVerifiesHash(t *testing.T) {
	c := shards.NewCache(1<<20, strSize)
	want := h("right")
	_, err := c.Load(context.Background(), want, func(context.Context) ([]byte, error) {
		return []byte("wrong"), nil
	}, decodeString)
	if !errors.Is(err, shards.ErrIntegrity) {
		t.Fatalf("error = %v, want ErrIntegrity", err)
	}
	if _, ok := c.Get(want); ok {
		t.Fatal("bytes that failed verification were cached")
	}
	decodeErr := errors.New("bad format")
	_, err = c.Load(context.Background(), want, func(context.Context) ([]byte, error) {
		return []byte("right"), nil
	}, func([]byte) (string, error) { return "", decodeErr })
	if !errors.Is(err, decodeErr) {
		t.Fatalf("error = %v, want the decode error", err)
	}
	if _, ok := c.Get(want); ok {
		t.Fatal("value that failed to decode was cached")
	}
	fetchErr := errors.New("unavailable")
	if _, err := c.Load(context.Background(), want, func(context.Context) ([]byte, error) {
		return nil, fetchErr
	}, decodeString); !errors.Is(err, fetchErr) {
		t.Fatalf("error = %v, want the fetch error", err)
	}
	v, err := c.Load(context.Background(), want, func(context.Context) ([]byte, error) {
		return []byte("right"), nil
	}, decodeString)
	if err != nil || v != "right" {
		t.Fatalf("Load = %q, %v", v, err)
	}
}

func TestCacheLoadHonoursContext(t *testing.T) {
	c := shards.NewCache(1<<20, strSize)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Load(ctx, h("x"), func(context.Context) ([]byte, error) {
		t.Fatal("fetch ran under a cancelled context")
		return nil, nil
	}, decodeString)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}

// A waiting caller outlives a leader whose context ends: it fetches again
// under its own context.
func TestCacheLoadSurvivesLeaderCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := shards.NewCache(1<<20, strSize)
		body := "body"
		var fetches atomic.Int32
		fetch := func(ctx context.Context) ([]byte, error) {
			if fetches.Add(1) == 1 {
				<-ctx.Done() // the first fetch runs until its caller gives up
				return nil, ctx.Err()
			}
			return []byte(body), nil
		}
		leaderCtx, cancel := context.WithCancel(context.Background())
		var leaderErr, followerErr error
		var followerVal string
		var wg sync.WaitGroup
		wg.Go(func() { _, leaderErr = c.Load(leaderCtx, h(body), fetch, decodeString) })
		synctest.Wait() // the leader is inside fetch
		wg.Go(func() { followerVal, followerErr = c.Load(context.Background(), h(body), fetch, decodeString) })
		synctest.Wait() // the follower waits on the leader's flight
		cancel()
		wg.Wait()
		if !errors.Is(leaderErr, context.Canceled) {
			t.Fatalf("leader error = %v", leaderErr)
		}
		if followerErr != nil || followerVal != body {
			t.Fatalf("follower = %q, %v", followerVal, followerErr)
		}
		if got := fetches.Load(); got != 2 {
			t.Fatalf("fetches = %d, want 2", got)
		}
	})
}

func TestLoadObject(t *testing.T) {
	golden := goldenBytes(t)
	hash := digest.Sum(golden)
	c := shards.NewObjectCache(1 << 20)
	fetch := func(context.Context) ([]byte, error) { return golden, nil }
	o, err := shards.LoadObject(context.Background(), c, schema, hash, shards.System, 0x3a, fetch)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := o.Get([]byte("schema")); !ok || string(v) != "v8" {
		t.Fatalf("Get = %q, %v", v, ok)
	}
	if st := c.Stats(); st.Entries != 1 || st.Bytes != o.MemSize() {
		t.Fatalf("stats = %+v", st)
	}
	if _, err := shards.LoadObject(context.Background(), c, schema, hash, shards.System, 0x3b, fetch); !errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("wrong shard error = %v", err)
	}
	bad := encodeRaw(shards.System, 0x3a, [][2]string{{"schema", "1"}, {"mo", "2"}})
	if _, err := shards.LoadObject(context.Background(), c, schema, digest.Sum(bad), shards.System, 0x3a,
		func(context.Context) ([]byte, error) { return bad, nil }); !errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("malformed object error = %v", err)
	}
}

func TestCacheConcurrentUseStaysInBudget(t *testing.T) {
	const budget = 500
	c := shards.NewCache(budget, strSize)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Go(func() {
			for i := 0; i < 500; i++ {
				v := fmt.Sprintf("%0*d", 10+(i*g)%40, i%60)
				switch i % 3 {
				case 0:
					c.Add(h(v), v)
				case 1:
					if got, ok := c.Get(h(v)); ok && got != v {
						t.Errorf("Get returned %q for %q", got, v)
					}
				case 2:
					got, err := c.Load(context.Background(), h(v), func(context.Context) ([]byte, error) { return []byte(v), nil }, decodeString)
					if err != nil || got != v {
						t.Errorf("Load = %q, %v", got, err)
					}
				}
				if st := c.Stats(); st.Bytes > budget {
					t.Errorf("cache holds %d bytes, budget %d", st.Bytes, budget)
				}
			}
		})
	}
	wg.Wait()
}

// TestCacheCached: Cached tells what is held without counting a hit or a
// miss and without making the entry recently used.
func TestCacheCached(t *testing.T) {
	c := shards.NewCache(60, strSize)
	a, b, d := fmt.Sprintf("%030d", 1), fmt.Sprintf("%030d", 2), fmt.Sprintf("%030d", 3)
	c.Add(h(a), a)
	c.Add(h(b), b)
	if !c.Cached(h(a)) || !c.Cached(h(b)) || c.Cached(h(d)) {
		t.Fatal("Cached does not tell what is held")
	}
	if st := c.Stats(); st.Hits != 0 || st.Misses != 0 {
		t.Fatalf("Cached counted: %+v", st)
	}
	c.Add(h(d), d) // a, the least recently used despite Cached, goes
	if c.Cached(h(a)) || !c.Cached(h(b)) || !c.Cached(h(d)) {
		t.Fatal("Cached marked an entry used")
	}
}
