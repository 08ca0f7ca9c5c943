package shards

import (
	"bytes"
	"fmt"
)

// Pages of a shard. A shard object whose encoding exceeds a page bound is
// stored as pages: shard objects in the same format, each holding the
// records of one key range of the shard, named by an Index. The helpers
// here cut and join objects without checking keys again: every record
// they move was checked when its object was built or decoded.

// Slice returns the shard object holding o's records i..j-1, sharing
// them.
func (o *Object) Slice(i, j int) *Object {
	out := &Object{schema: o.schema, family: o.family, shard: o.shard, salt: o.salt, size: headerLen, recs: o.recs[i:j:j]}
	for _, r := range out.recs {
		out.size += recordFrame + int64(len(r.Key)+len(r.Value))
	}
	return out
}

// Join returns the shard object holding a's records and then b's. Both
// must be of one family and shard, and every key of a must sort before
// every key of b (ErrUnsorted otherwise). It shares their records.
func Join(a, b *Object) (*Object, error) {
	if a.family != b.family || a.shard != b.shard || a.schema != b.schema {
		return nil, fmt.Errorf("shards: join %s/%02x with %s/%02x: %w", a.name(), a.shard, b.name(), b.shard, ErrMixedObjects)
	}
	if len(a.recs) > 0 && len(b.recs) > 0 && bytes.Compare(a.recs[len(a.recs)-1].Key, b.recs[0].Key) >= 0 {
		return nil, fmt.Errorf("shards: join %s/%02x: %w", a.name(), a.shard, ErrUnsorted)
	}
	out := &Object{schema: a.schema, family: a.family, shard: a.shard, salt: a.salt, size: a.size + b.size - headerLen}
	out.recs = make([]Record, 0, len(a.recs)+len(b.recs))
	out.recs = append(append(out.recs, a.recs...), b.recs...)
	return out, nil
}

// Drop returns the shard object holding o's records for which drop
// reports false, sharing them; o itself if it drops none. The result may
// be empty. A fold uses it to leave expired records out of an object it
// rewrites.
func (o *Object) Drop(drop func(key, value []byte) bool) *Object {
	var out *Object
	for i, r := range o.recs {
		if !drop(r.Key, r.Value) {
			if out != nil {
				out.recs = append(out.recs, r)
				out.size += recordFrame + int64(len(r.Key)+len(r.Value))
			}
			continue
		}
		if out == nil {
			out = o.Slice(0, i)
			out.recs = append(make([]Record, 0, len(o.recs)-1), out.recs...)
		}
	}
	if out == nil {
		return o
	}
	return out
}

// Split cuts o into the fewest pieces of about equal size, in key order,
// whose encodings are at most bound bytes each; a record too large for
// any page gets a page of its own. An object within the bound, or of one
// record, is returned whole. Every piece of a split is more than a
// quarter of the bound, unless a record alone exceeds it.
func (o *Object) Split(bound int64) []*Object {
	if o.size <= bound || len(o.recs) <= 1 {
		return []*Object{o}
	}
	payload := o.size - headerLen
	room := max(bound-headerLen, 1)
	for n := (payload + room - 1) / room; ; n++ {
		pieces := o.cut(n)
		ok := true
		for _, p := range pieces {
			if p.size > bound && len(p.recs) > 1 {
				ok = false
				break
			}
		}
		if ok || n >= int64(len(o.recs)) {
			return pieces
		}
	}
}

// SplitFull cuts o into pieces in key order as a shard that grows at its
// end wants them: each piece but the last as full as its records allow
// within bound, the last holding the rest, however little. Split's even
// pieces would leave every older page about half full, to be rewritten
// only if an older key changes. An object within the bound, or of one
// record, is returned whole.
func (o *Object) SplitFull(bound int64) []*Object {
	if o.size <= bound || len(o.recs) <= 1 {
		return []*Object{o}
	}
	var starts []int
	start, size := 0, int64(headerLen)
	for i, r := range o.recs {
		n := recordFrame + int64(len(r.Key)+len(r.Value))
		if i > start && size+n > bound {
			starts = append(starts, start)
			start, size = i, headerLen
		}
		size += n
	}
	starts = append(starts, start)
	var out []*Object
	for k, i := range starts {
		j := len(o.recs)
		if k+1 < len(starts) {
			j = starts[k+1]
		}
		out = append(out, o.Slice(i, j))
	}
	return out
}

// cut divides o's records into at most n runs of about equal payload.
func (o *Object) cut(n int64) []*Object {
	payload := o.size - headerLen
	var out []*Object
	start := 0
	var acc int64
	for i, r := range o.recs {
		acc += recordFrame + int64(len(r.Key)+len(r.Value))
		// Cut after record i once the runs so far hold their share.
		if int64(len(out)+1) < n && acc*n >= payload*int64(len(out)+1) && i+1 < len(o.recs) {
			out = append(out, o.Slice(start, i+1))
			start = i + 1
		}
	}
	return append(out, o.Slice(start, len(o.recs)))
}

// First returns the object's smallest key, or nil if it is empty.
func (o *Object) First() []byte {
	if len(o.recs) == 0 {
		return nil
	}
	return o.recs[0].Key
}

// Last returns the object's largest key, or nil if it is empty.
func (o *Object) Last() []byte {
	if len(o.recs) == 0 {
		return nil
	}
	return o.recs[len(o.recs)-1].Key
}
