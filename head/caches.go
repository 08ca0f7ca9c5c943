package head

import (
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Caches are the caches of decoded immutable objects a Store reads
// through: shards and pages, page indexes, delta segments, tables and
// roots, in one byte budget split among them. Stores opened with the same
// Caches (Options.Caches) share that budget, so that a process serving
// many shards bounds its memory once rather than once per shard. Every
// entry is named by the hash of its bytes and never goes stale, so
// sharing is safe between stores of one schema (a store of another
// schema would decode the same bytes alike, but its objects are not
// another's).
type Caches struct {
	objects *shards.Cache[*shards.Object]
	indexes *shards.Cache[*shards.Index]
	deltas  *shards.Cache[*shards.Delta]
	tables  *shards.Cache[*roots.Table]
	roots   *shards.Cache[*roots.Root]
}

// DefaultCacheBytes is Options.CacheBytes's default.
const DefaultCacheBytes = 512 << 20

// NewCaches returns caches holding at most budget bytes in all
// (DefaultCacheBytes when budget is not positive): 22/32 for shard
// objects and pages, 4/32 for page indexes, 3/32 for delta segments, 2/32
// for tables and 1/32 for roots. A page index missing from the cache
// costs a point read a round of its own before its page's, and the page
// indexes of a large workbench are many: at a million files, with a
// sixteenth for them, most puts of a new file read one again. Shard
// objects keep their share: with less, a replica that wrote 100,000
// files no longer holds the pages its next puts read.
func NewCaches(budget int64) *Caches {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return &Caches{
		objects: shards.NewObjectCache(budget * 22 / 32),
		indexes: shards.NewCache(budget*4/32, (*shards.Index).MemSize),
		deltas:  shards.NewCache(budget*3/32, (*shards.Delta).MemSize),
		tables:  shards.NewCache(budget*2/32, tableSize),
		roots:   shards.NewCache(budget/32, rootSize),
	}
}

// NewCachesWithDeltas is NewCaches for a writer that lets long lists of
// delta segments pile up before it folds them (a bulk import): deltas of
// the budget hold delta segments, and the rest is shared among the
// other caches in NewCaches's proportions. deltas is kept between
// NewCaches's share (3/32 of the budget) and a half.
func NewCachesWithDeltas(budget, deltas int64) *Caches {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	deltas = min(max(deltas, budget*3/32), budget/2)
	rest := budget - deltas
	return &Caches{
		objects: shards.NewObjectCache(rest * 22 / 29),
		indexes: shards.NewCache(rest*4/29, (*shards.Index).MemSize),
		deltas:  shards.NewCache(deltas, (*shards.Delta).MemSize),
		tables:  shards.NewCache(rest*2/29, tableSize),
		roots:   shards.NewCache(rest/29, rootSize),
	}
}

// Stats reports the caches' counters: the shard objects and pages, the
// tables and the roots.
func (c *Caches) Stats() (objects, tables, rootsStats shards.CacheStats) {
	return c.objects.Stats(), c.tables.Stats(), c.roots.Stats()
}

// Bytes is what the caches hold now, by their size functions.
func (c *Caches) Bytes() int64 {
	return c.objects.Stats().Bytes + c.indexes.Stats().Bytes + c.deltas.Stats().Bytes + c.tables.Stats().Bytes + c.roots.Stats().Bytes
}

// Budget is the most the caches hold in all: the sum of their shares of
// the budget they were made with.
func (c *Caches) Budget() int64 {
	return c.objects.Stats().Budget + c.indexes.Stats().Budget + c.deltas.Stats().Budget + c.tables.Stats().Budget + c.roots.Stats().Budget
}
