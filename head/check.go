package head

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// CheckOptions tune Check.
type CheckOptions struct {
	// Strict also decodes every record key against its family's shape and
	// checks each root the holds of root name the same way (not only that
	// it exists). Holds keep one level (roots.Root.KeptHolds): the holds
	// of a held root are not followed.
	Strict bool
	// MaxFindings stops after this many findings. Default 100.
	MaxFindings int
}

// Check verifies the snapshot a root names, reading straight from the
// bucket (no cache): every reachable object exists and hashes to its name,
// each decodes canonically, every record sits in the shard its key
// selects (and, in a page, in the page's key range of its index) (or, in a delta segment, passes its family's key check), every
// table agrees with its root entry (shard count, record count, sizes) and
// every delta segment with its root's reference (size, records,
// sequence). It returns nil or an error joining every finding. The zero
// hash names the state of a genesis head (Head.RootHash): no root and no
// record, so nothing to check.
func Check(ctx context.Context, b bucket.Bucket, layout shards.Layout, root digest.Hash, opts CheckOptions) error {
	if root.IsZero() {
		return nil
	}
	if opts.MaxFindings <= 0 {
		opts.MaxFindings = 100
	}
	c := &checker{b: b, layout: layout, opts: opts, seen: map[digest.Hash]bool{}}
	c.root(ctx, root, roots.ReachKept)
	return errors.Join(c.findings...)
}

type checker struct {
	b        bucket.Bucket
	layout   shards.Layout
	opts     CheckOptions
	seen     map[digest.Hash]bool
	findings []error
}

func (c *checker) add(format string, args ...any) bool {
	if len(c.findings) < c.opts.MaxFindings {
		c.findings = append(c.findings, fmt.Errorf(format, args...))
	}
	return len(c.findings) < c.opts.MaxFindings
}

// entryBody returns the bytes of the object table entry e names: its
// inline bytes, or the object under key.
func (c *checker) entryBody(ctx context.Context, e roots.Entry, key string) ([]byte, bool) {
	if e.Inline != "" {
		return []byte(e.Inline), true
	}
	return c.get(ctx, key)
}

func (c *checker) get(ctx context.Context, key string) ([]byte, bool) {
	body, _, err := c.b.Get(ctx, key)
	if err != nil {
		c.add("get %s: %w", key, err)
		return nil, false
	}
	return body, true
}

func (c *checker) root(ctx context.Context, h digest.Hash, reach roots.Reach) {
	if c.seen[h] {
		return
	}
	c.seen[h] = true
	body, ok := c.get(ctx, c.layout.Root(h))
	if !ok {
		return
	}
	r, err := roots.DecodeRoot(c.layout.Schema(), body, h)
	if err != nil {
		c.add("root %s: %w", h, err)
		return
	}
	for _, fr := range r.Families {
		c.table(ctx, fr)
	}
	for _, dr := range r.Deltas {
		c.delta(ctx, h, dr)
	}
	for _, hold := range r.KeptHolds(reach) {
		if c.opts.Strict {
			c.root(ctx, hold.Root, roots.ReachHeld)
		} else if _, err := c.b.Stat(ctx, c.layout.Root(hold.Root)); err != nil {
			c.add("root %s: hold %q: root %s: %w", h, hold.Owner, hold.Root, err)
		}
	}
}

func (c *checker) table(ctx context.Context, fr roots.FamilyRef) {
	if c.seen[fr.Table.Hash] {
		return
	}
	c.seen[fr.Table.Hash] = true
	body, ok := c.get(ctx, c.layout.Table(fr.Table.Hash))
	if !ok {
		return
	}
	if int64(len(body)) != fr.Table.Size {
		c.add("table %s of %s: %d bytes, root says %d", fr.Table.Hash, fr.Family, len(body), fr.Table.Size)
	}
	t, err := roots.DecodeTable(c.layout.Schema(), body, fr.Table.Hash)
	if err != nil {
		c.add("table %s of %s: %w", fr.Table.Hash, fr.Family, err)
		return
	}
	if t.Family != fr.Family || len(t.Entries) != int(fr.Shards) || t.Records() != fr.Records {
		c.add("table %s: family %s, %d shards, %d records; root says %s, %d, %d",
			fr.Table.Hash, t.Family, len(t.Entries), t.Records(), fr.Family, fr.Shards, fr.Records)
	}
	for _, e := range t.Entries {
		if e.Index {
			c.index(ctx, t.Family, e)
		} else {
			c.shard(ctx, t.Family, e)
		}
	}
}

func (c *checker) index(ctx context.Context, f shards.Family, e roots.Entry) {
	if c.seen[e.Ref.Hash] {
		return // shared with a held root already checked
	}
	c.seen[e.Ref.Hash] = true
	body, ok := c.entryBody(ctx, e, c.layout.Index(f, e.Shard, e.Ref.Hash))
	if !ok {
		return
	}
	// DecodeIndex checks the hash, the canonical form, the family and
	// shard index, the page order, and that every first key belongs to
	// the shard.
	x, err := shards.DecodeIndex(c.layout.Schema(), body, e.Ref.Hash, f, e.Shard)
	if err != nil {
		c.add("index %s/%02x %s: %w", f, e.Shard, e.Ref.Hash, err)
		return
	}
	if x.Records() != e.Ref.Count || int64(len(body)) != e.Ref.Size {
		c.add("index %s/%02x %s: %d records in %d bytes, table says %d in %d", f, e.Shard, e.Ref.Hash, x.Records(), len(body), e.Ref.Count, e.Ref.Size)
	}
	for i := range x.Len() {
		h := x.Page(i).Ref.Hash
		body, ok := c.get(ctx, c.layout.Shard(f, e.Shard, h))
		if !ok {
			continue
		}
		o, err := shards.DecodeShard(c.layout.Schema(), body, h, f, e.Shard)
		if err != nil {
			c.add("index %s/%02x %s: page %d %s: %w", f, e.Shard, e.Ref.Hash, i, h, err)
			continue
		}
		// The page's size, count and key range against the index.
		if err := x.CheckPage(i, o); err != nil {
			c.add("index %s/%02x %s: %w", f, e.Shard, e.Ref.Hash, err)
		}
	}
}

func (c *checker) shard(ctx context.Context, f shards.Family, e roots.Entry) {
	if c.seen[e.Ref.Hash] {
		return // shared with a held root already checked
	}
	c.seen[e.Ref.Hash] = true
	body, ok := c.entryBody(ctx, e, c.layout.Shard(f, e.Shard, e.Ref.Hash))
	if !ok {
		return
	}
	// DecodeShard checks the hash, the canonical form, the family and
	// shard index, and that every key belongs to the shard.
	o, err := shards.DecodeShard(c.layout.Schema(), body, e.Ref.Hash, f, e.Shard)
	if err != nil {
		c.add("shard %s/%02x %s: %w", f, e.Shard, e.Ref.Hash, err)
		return
	}
	if o.Len() != int(e.Ref.Count) || int64(len(body)) != e.Ref.Size {
		c.add("shard %s/%02x %s: %d records in %d bytes, table says %d in %d", f, e.Shard, e.Ref.Hash, o.Len(), len(body), e.Ref.Count, e.Ref.Size)
	}
}

func (c *checker) delta(ctx context.Context, root digest.Hash, dr roots.DeltaRef) {
	if c.seen[dr.Ref.Hash] {
		return // shared with a held root already checked
	}
	c.seen[dr.Ref.Hash] = true
	body, ok := c.get(ctx, c.layout.Delta(dr.Ref.Hash))
	if !ok {
		return
	}
	// DecodeDelta checks the hash, the canonical form, and every record's
	// family and key against the schema.
	d, err := shards.DecodeDelta(c.layout.Schema(), body, dr.Ref.Hash)
	if err != nil {
		c.add("root %s: delta %s: %w", root, dr.Ref.Hash, err)
		return
	}
	if d.Len() != int(dr.Ref.Count) || int64(len(body)) != dr.Ref.Size || d.Sequence() != dr.Sequence {
		c.add("root %s: delta %s: %d records in %d bytes at sequence %d, root says %d in %d at %d",
			root, dr.Ref.Hash, d.Len(), len(body), d.Sequence(), dr.Ref.Count, dr.Ref.Size, dr.Sequence)
	}
}
