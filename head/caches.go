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
// (DefaultCacheBytes when budget is not positive): five eighths for shard
// objects and pages, an eighth each for page indexes and delta segments,
// a sixteenth each for tables and roots. A page index missing from the
// cache costs a point read a round of its own before its page's, and the
// page indexes of a large workbench are many: at a million files, with a
// sixteenth for them, most puts of a new file read one again.
func NewCaches(budget int64) *Caches {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	return &Caches{
		objects: shards.NewObjectCache(budget * 10 / 16),
		indexes: shards.NewCache(budget/8, (*shards.Index).MemSize),
		deltas:  shards.NewCache(budget/8, (*shards.Delta).MemSize),
		tables:  shards.NewCache(budget/16, tableSize),
		roots:   shards.NewCache(budget/16, rootSize),
	}
}

// NewCachesWithDeltas is NewCaches for a writer that lets long lists of
// delta segments pile up before it folds them (a bulk import): deltas of
// the budget hold delta segments, and the rest is shared among the
// other caches in NewCaches's proportions. deltas is kept between an
// eighth of the budget (NewCaches's share) and a half.
func NewCachesWithDeltas(budget, deltas int64) *Caches {
	if budget <= 0 {
		budget = DefaultCacheBytes
	}
	deltas = min(max(deltas, budget/8), budget/2)
	rest := budget - deltas
	return &Caches{
		objects: shards.NewObjectCache(rest * 10 / 14),
		indexes: shards.NewCache(rest*2/14, (*shards.Index).MemSize),
		deltas:  shards.NewCache(deltas, (*shards.Delta).MemSize),
		tables:  shards.NewCache(rest/14, tableSize),
		roots:   shards.NewCache(rest/14, rootSize),
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
