package shards

import (
	"bytes"
	"container/heap"
	"errors"
	"fmt"
	"iter"
)

// ErrMixedObjects is returned by Merge for objects that are not disjoint
// parts of one family: distinct shards, or pages of one shard in key
// order.
var ErrMixedObjects = errors.New("objects are not distinct shards of one family")

// Merge yields, in key order, the records of several shards of one family
// whose keys begin with prefix and come strictly after after (an empty
// after starts at the prefix), stopping after limit records (limit <= 0
// means no limit). It is the scan of a prefix that does not determine one
// shard; the caller passes every non-empty shard the prefix may reach, or,
// for a paged shard, its pages in range, in key order. Shards of one
// family hold disjoint keys, and pages of one shard disjoint ranges (each
// page of a shard must begin after the previous one ends), so the merge
// never meets a key twice. Nil objects (absent shards) are skipped.
func Merge(objs []*Object, prefix, after []byte, limit int) (iter.Seq2[[]byte, []byte], error) {
	var last [Shards][]byte // the largest key seen of each shard
	var seen [Shards]bool
	var fam Family
	var cs cursors
	for _, o := range objs {
		if o == nil {
			continue
		}
		if len(cs) == 0 {
			fam = o.family
		}
		if o.family != fam || seen[o.shard] && (len(o.recs) == 0 || bytes.Compare(last[o.shard], o.First()) >= 0) {
			return nil, fmt.Errorf("shards: merge %s/%02x with %s: %w", o.name(), o.shard, o.schema.Name(fam), ErrMixedObjects)
		}
		seen[o.shard] = true
		if len(o.recs) > 0 {
			last[o.shard] = o.Last()
		}
		cs = append(cs, &cursor{o: o, i: o.seek(prefix, after)})
	}
	return func(yield func([]byte, []byte) bool) {
		h := make(cursors, 0, len(cs))
		for _, c := range cs {
			// Each iteration starts from the cursors' initial positions.
			c := &cursor{o: c.o, i: c.i}
			if c.valid(prefix) {
				h = append(h, c)
			}
		}
		heap.Init(&h)
		n := 0
		for len(h) > 0 && (limit <= 0 || n < limit) {
			c := h[0]
			r := c.o.recs[c.i]
			if !yield(r.Key, r.Value) {
				return
			}
			n++
			c.i++
			if c.valid(prefix) {
				heap.Fix(&h, 0)
			} else {
				heap.Pop(&h)
			}
		}
	}, nil
}

type cursor struct {
	o *Object
	i int
}

func (c *cursor) valid(prefix []byte) bool {
	return c.i < len(c.o.recs) && bytes.HasPrefix(c.o.recs[c.i].Key, prefix)
}

func (c *cursor) key() []byte { return c.o.recs[c.i].Key }

// cursors is a min-heap of cursors by current key.
type cursors []*cursor

func (h cursors) Len() int           { return len(h) }
func (h cursors) Less(i, j int) bool { return bytes.Compare(h[i].key(), h[j].key()) < 0 }
func (h cursors) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}
