package shards

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"golang.org/x/sync/singleflight"

	"github.com/cairnstore/cairn/bucket/digest"
)

// Cache holds decoded immutable objects keyed by the hash of their bytes,
// bounded by a budget in bytes that a size function measures. It evicts the
// least recently used entries to stay within the budget. A value larger than
// the whole budget is never cached. Because an entry is immutable and named
// by its content, a cached value never goes stale; adding a hash that is
// already present keeps the present value. Cache is safe for concurrent use.
type Cache[V any] struct {
	size   func(V) int64
	budget int64
	group  singleflight.Group

	mu        sync.Mutex
	lru       *simplelru.LRU[digest.Hash, cacheEntry[V]]
	used      int64
	hits      int64
	misses    int64
	evictions int64
	rejected  int64
}

type cacheEntry[V any] struct {
	v    V
	size int64
}

// CacheStats is a snapshot of a cache's counters.
type CacheStats struct {
	Hits      int64 // Get or Load found the value
	Misses    int64 // Get or Load did not
	Evictions int64 // entries removed to keep within the budget
	Rejected  int64 // values not cached because they exceed the budget
	Entries   int   // entries held
	Bytes     int64 // bytes held, by the size function
	Budget    int64
}

// NewCache returns a cache holding at most budget bytes as measured by size.
func NewCache[V any](budget int64, size func(V) int64) *Cache[V] {
	if budget < 0 {
		budget = 0
	}
	// The entry count is unbounded; the byte budget bounds the cache.
	l, err := simplelru.NewLRU[digest.Hash, cacheEntry[V]](math.MaxInt, nil)
	if err != nil {
		panic(err) // only for a non-positive size
	}
	return &Cache[V]{size: size, budget: budget, lru: l}
}

// NewObjectCache returns a cache of shard objects measured by MemSize.
func NewObjectCache(budget int64) *Cache[*Object] {
	return NewCache(budget, (*Object).MemSize)
}

// Get returns the value cached under h and marks it recently used.
func (c *Cache[V]) Get(h digest.Hash) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(h)
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	return e.v, ok
}

// Add caches v under h, evicting least recently used entries to stay within
// the budget, and reports whether v is held. The caller vouches that v was
// decoded from bytes that hash to h. A value larger than the budget is not
// cached. If h is already cached, the cached value stays and is marked
// recently used.
func (c *Cache[V]) Add(h digest.Hash, v V) bool {
	n := c.size(v)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lru.Get(h); ok {
		return true
	}
	if n > c.budget {
		c.rejected++
		return false
	}
	for c.used+n > c.budget {
		_, old, ok := c.lru.RemoveOldest()
		if !ok {
			break
		}
		c.used -= old.size
		c.evictions++
	}
	c.lru.Add(h, cacheEntry[V]{v: v, size: n})
	c.used += n
	return true
}

// Remove drops the value cached under h, if any. A writer calls it for
// objects its commit superseded, so that the budget goes to the live ones;
// a reader that still needs one loads it again.
func (c *Cache[V]) Remove(h digest.Hash) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.lru.Peek(h); ok {
		c.lru.Remove(h)
		c.used -= e.size
	}
}

// Stats returns the cache's counters.
func (c *Cache[V]) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return CacheStats{
		Hits: c.hits, Misses: c.misses, Evictions: c.evictions, Rejected: c.rejected,
		Entries: c.lru.Len(), Bytes: c.used, Budget: c.budget,
	}
}

// Load returns the value under h, from the cache or else by fetching its
// bytes, verifying that they hash to h (ErrIntegrity otherwise, and nothing
// is cached), decoding them and caching the result. This is the only
// verification: decode must not hash the bytes again. Concurrent Loads of
// one hash share one fetch. Each caller waits only as long as its own ctx
// allows; if the shared fetch failed because another caller's ctx ended, a
// caller whose ctx is still live fetches again.
func (c *Cache[V]) Load(ctx context.Context, h digest.Hash, fetch func(context.Context) ([]byte, error), decode func([]byte) (V, error)) (V, error) {
	var zero V
	if v, ok := c.Get(h); ok {
		return v, nil
	}
	key := h.String()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return zero, err
		}
		ch := c.group.DoChan(key, func() (any, error) {
			if v, ok := c.peek(h); ok {
				return v, nil
			}
			b, err := fetch(ctx)
			if err != nil {
				return nil, err
			}
			if err := digest.Verify(b, h); err != nil {
				return nil, fmt.Errorf("shards: load %s: %w", h, err)
			}
			v, err := decode(b)
			if err != nil {
				return nil, err
			}
			c.Add(h, v)
			return v, nil
		})
		select {
		case <-ctx.Done():
			return zero, ctx.Err()
		case r := <-ch:
			if r.Err != nil {
				if isContextErr(r.Err) && ctx.Err() == nil && attempt < maxLoadAttempts-1 {
					continue // another caller's context ended the shared fetch
				}
				return zero, r.Err
			}
			return r.Val.(V), nil
		}
	}
}

// peek looks h up without counting a hit or miss, for a load that raced
// with an earlier one.
// Cached says whether h is cached, without counting a hit or a miss or
// marking it used: for a caller deciding whether a load would cost a
// request.
func (c *Cache[V]) Cached(h digest.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Contains(h)
}

func (c *Cache[V]) peek(h digest.Hash) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(h)
	return e.v, ok
}

// maxLoadAttempts bounds how often a Load retries a shared fetch that
// another caller's context ended.
const maxLoadAttempts = 4

func isContextErr(err error) bool {
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// LoadObject loads the shard object h through c, decoding it with schema
// s, and checks that it is shard idx of family f. Every object in c must
// have been loaded with s.
func LoadObject(ctx context.Context, c *Cache[*Object], s *Schema, h digest.Hash, f Family, idx uint8, fetch func(context.Context) ([]byte, error)) (*Object, error) {
	o, err := c.Load(ctx, h, fetch, func(b []byte) (*Object, error) { return parseStored(s, b) })
	if err != nil {
		return nil, err
	}
	if o.schema != s {
		return nil, fmt.Errorf("shards: load object %s: cached under another schema", h)
	}
	if err := o.is(f, idx); err != nil {
		return nil, fmt.Errorf("shards: load object %s: %w", h, err)
	}
	return o, nil
}
