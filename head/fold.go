package head

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// A fold applies record changes to the base shards. A shard whose
// encoding stays within Options.PageBytes is one shard object (a leaf);
// a larger one is a page index naming pages, each a shard object of one
// key range. A fold rewrites only the pages its changes touch, splitting
// a page over the bound and merging a page under a quarter of it with a
// neighbour, then the index, the table and the root: its bytes grow with
// the pages it touches, not with the family. A shard that only grows at
// its end (its last page gains only keys after its own) is split into
// full pages and a last one that may be small (splitParts).
//
// Expiry. A fold leaves out of every object it writes (a leaf, a new
// page, a page merged with a neighbour) the records its family's rule
// says have expired, and so drops a delta's record it applies that has
// already expired. It never rewrites an object only to expire records: an
// untouched shard or page keeps its expired records until a later fold
// changes it. It does drop whole pages, though: in a shard it changes,
// the first pages that no change touches are read too (the first only,
// unless it goes), and each one whose every record has expired leaves
// the index, up to maxFrontDrops a shard and fold. A family keyed by
// time-ordered ids (the Workbench's request ids in command_dedupe) gains
// records at its end and loses them at its front, where no change would
// ever rewrite a page again. The rule sees each key's newest value,
// after the fold's changes, so a record a later delta overwrote is
// judged by the new value.

// expiry is one family's expiry rule at one fold; the zero value expires
// nothing.
type expiry struct {
	rule shards.ExpireFunc
	at   shards.ExpiryClock
}

// expiry returns family f's rule at the fold at: the engine's own for
// command_dedupe, else the schema's.
func (s *Store) expiry(f shards.Family, at shards.ExpiryClock) expiry {
	if f == shards.CommandDedupe {
		return expiry{rule: dedupeExpired, at: at}
	}
	return expiry{rule: s.fams.Expiry(f), at: at}
}

// drop returns o without its expired records (o itself when none is).
func (e expiry) drop(o *shards.Object) *shards.Object {
	if e.rule == nil {
		return o
	}
	return o.Drop(func(k, v []byte) bool { return e.rule(k, v, e.at) })
}

// groupByShard splits family f's sorted mutations by the shard each
// falls in, keeping their order, in one backing array.
func (s *Store) groupByShard(f shards.Family, muts []shards.Mutation) (map[uint8][]shards.Mutation, error) {
	idxs := make([]uint8, len(muts))
	var counts [256]int
	for i, m := range muts {
		idx, err := s.fams.ShardOf(f, m.Key)
		if err != nil {
			return nil, err
		}
		idxs[i] = idx
		counts[idx]++
	}
	var at [256]int
	n := 0
	for idx, c := range counts {
		at[idx] = n
		n += c
	}
	all := make([]shards.Mutation, len(muts))
	for i, m := range muts {
		all[at[idxs[i]]] = m
		at[idxs[i]]++
	}
	byShard := map[uint8][]shards.Mutation{}
	for idx, c := range counts {
		if c > 0 {
			end := at[idx]
			byShard[uint8(idx)] = all[end-c : end : end]
		}
	}
	return byShard, nil
}

// buildFamily applies one family's sorted mutations and returns its new
// root entry (ok false when the family becomes empty), leaving out the
// records ex says have expired from every object it writes.
func (s *Store) buildFamily(ctx context.Context, sn *Snapshot, f shards.Family, muts []shards.Mutation, nonce roots.Nonce, c *candidate, ex expiry) (roots.FamilyRef, bool, error) {
	byShard, err := s.groupByShard(f, muts)
	if err != nil {
		return roots.FamilyRef{}, false, err
	}
	entries := map[uint8]roots.Entry{}
	if sn != nil {
		old, err := sn.table(ctx, f)
		if err != nil {
			return roots.FamilyRef{}, false, err
		}
		if pf, ok := sn.root.Family(f); ok {
			c.superseded = append(c.superseded, pf.Table.Hash) // a fold of f always writes a new table or none
		}
		if old != nil {
			for _, e := range old.Entries {
				entries[e.Shard] = e
			}
		}
	}
	idxs := make([]uint8, 0, len(byShard))
	for idx := range byShard {
		idxs = append(idxs, idx)
	}
	sort.Slice(idxs, func(i, j int) bool { return idxs[i] < idxs[j] })
	results := make([]shardBuild, len(idxs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.StageConcurrency)
	for i, idx := range idxs {
		g.Go(func() (err error) {
			old, present := entries[idx]
			results[i], err = s.buildShard(gctx, f, idx, old, present, byShard[idx], shards.Salt(nonce), ex, c.compress)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return roots.FamilyRef{}, false, err
	}
	for i, idx := range idxs {
		r := results[i]
		if c.tableFormat != roots.TableFormat {
			// A table of format 3 keeps no last key: the entry held in
			// memory (the candidate's table, cached) must be the entry its
			// bytes decode to, or the writer rule, which compares a new
			// table's entries with its parent's, would tell the same
			// shard apart by where its table was read from.
			r.entry.Last = ""
		}
		if old, present := entries[idx]; present {
			c.superseded = append(c.superseded, s.replaced(old, r)...)
		}
		if !r.ok {
			delete(entries, idx)
			continue
		}
		entries[idx] = r.entry
		// An object the table carries inline is cached but not written.
		inline := r.entry.Inline != ""
		for _, o := range r.objects {
			c.objects[o.ref.Hash] = o.obj
			if !inline || r.entry.Index || o.ref != r.entry.Ref {
				c.writes = append(c.writes, write{s.layout.Shard(f, idx, o.ref.Hash), o.body})
			}
		}
		if r.index != nil {
			c.indexes[r.entry.Ref.Hash] = r.index
			if !inline {
				c.writes = append(c.writes, write{s.layout.Index(f, idx, r.entry.Ref.Hash), r.indexBody})
			}
		}
	}
	if len(entries) == 0 {
		return roots.FamilyRef{}, false, nil
	}
	t := &roots.Table{Format: c.tableFormat, Nonce: nonce, Family: f}
	for _, e := range entries {
		t.Entries = append(t.Entries, e)
	}
	sort.Slice(t.Entries, func(i, j int) bool { return t.Entries[i].Shard < t.Entries[j].Shard })
	b, ref, err := t.Encode(s.fams)
	if err != nil {
		return roots.FamilyRef{}, false, err
	}
	c.tables[ref.Hash] = t
	c.writes = append(c.writes, write{s.layout.Table(ref.Hash), b})
	return roots.FamilyRef{Family: f, Table: ref, Shards: uint16(len(t.Entries)), Records: t.Records()}, true, nil
}

// replaced returns the hashes of the objects of the old entry of a shard
// that its rebuild r no longer names: the old leaf, or the old index and
// those of its pages the new index does not keep. An old index that is
// not cached any more is left to the LRU.
func (s *Store) replaced(old roots.Entry, r shardBuild) []digest.Hash {
	if r.ok && r.entry == old {
		return nil
	}
	if !old.Index {
		return []digest.Hash{old.Ref.Hash}
	}
	out := []digest.Hash{old.Ref.Hash}
	x, ok := s.indexes.Get(old.Ref.Hash)
	if !ok {
		return out
	}
	kept := map[digest.Hash]bool{}
	if r.index != nil {
		for i := range r.index.Len() {
			kept[r.index.Page(i).Ref.Hash] = true
		}
	}
	for i := range x.Len() {
		if h := x.Page(i).Ref.Hash; !kept[h] {
			out = append(out, h)
		}
	}
	return out
}

// forget drops from the caches the objects a landed candidate superseded.
func (s *Store) forget(hs []digest.Hash) {
	for _, h := range hs {
		s.objects.Remove(h)
		s.indexes.Remove(h)
		s.tables.Remove(h)
		s.deltas.Remove(h)
	}
}

// shardBuild is one shard's share of a fold: its new table entry (ok
// false: the shard is now empty), the shard objects (the leaf, or the new
// pages) and the index to write.
type shardBuild struct {
	entry     roots.Entry
	ok        bool
	objects   []builtObject
	index     *shards.Index
	indexBody []byte
}

type builtObject struct {
	obj  *shards.Object
	body []byte
	ref  shards.Ref
}

// lastOfParts is the Last of a paged shard rebuilt as parts: the last
// key of its last page, when that page is new or is the old index's
// last page kept as it was (its Last is the old entry's); "" (not known)
// otherwise, which only costs readers the shortcut until a fold rewrites
// that page.
func lastOfParts(parts []part, x *shards.Index, old roots.Entry) string {
	p := parts[len(parts)-1]
	switch {
	case p.obj != nil:
		return roots.LastKey(p.obj.Last())
	case x != nil && p.at == x.Len()-1:
		return old.Last
	}
	return ""
}

// part is one page of a shard being rebuilt: a new object (obj), or a
// page of the old index kept as it is (at, its position there).
type part struct {
	obj     *shards.Object
	at      int
	settled bool // produced by a merge that did not shrink the page count, or the small last page of a growing shard (splitParts)
}

// buildShard applies muts to shard idx of family f, whose table entry is
// old (if present), leaving expired records out of what it rewrites.
func (s *Store) buildShard(ctx context.Context, f shards.Family, idx uint8, old roots.Entry, present bool, muts []shards.Mutation, salt shards.Salt, ex expiry, compress bool) (shardBuild, error) {
	bound := s.opts.PageBytes
	if b := s.fams.PageBytes(f); b > 0 {
		bound = min(bound, max(b, minPageBytes))
	}
	var parts []part
	var x *shards.Index
	if !present || !old.Index {
		base, err := shards.Empty(s.fams, f, idx)
		if err != nil {
			return shardBuild{}, err
		}
		if present {
			if base, err = s.loadShard(ctx, f, old); err != nil {
				return shardBuild{}, err
			}
		}
		nu, err := base.Apply(muts)
		if err != nil {
			return shardBuild{}, err
		}
		parts = splitParts(ex.drop(nu), bound, appends(base.Last(), muts))
	} else {
		var err error
		if x, err = s.loadIndex(ctx, f, old); err != nil {
			return shardBuild{}, err
		}
		if parts, err = s.applyPages(ctx, x, muts, bound, ex); err != nil {
			return shardBuild{}, err
		}
		if parts, err = s.mergeSmall(ctx, x, parts, bound, ex); err != nil {
			return shardBuild{}, err
		}
	}
	var out shardBuild
	if len(parts) == 0 {
		return out, nil
	}
	add := func(o *shards.Object) (shards.Ref, error) {
		o = o.Salted(salt)
		encode := o.Encode
		if compress {
			encode = o.EncodeCompressed
		}
		body, ref, err := encode()
		if err != nil {
			return shards.Ref{}, err
		}
		out.objects = append(out.objects, builtObject{obj: o, body: body, ref: ref})
		return ref, nil
	}
	if len(parts) == 1 {
		o := parts[0].obj
		if o == nil { // the one page left of an index becomes a leaf, written anew
			var err error
			if o, err = s.loadPage(ctx, x, parts[0].at); err != nil {
				return shardBuild{}, err
			}
			if o = ex.drop(o); o.Len() == 0 {
				return out, nil
			}
		}
		ref, err := add(o)
		if err != nil {
			return shardBuild{}, err
		}
		out.entry, out.ok = roots.Entry{Shard: idx, Ref: ref, Inline: s.inline(out.objects[len(out.objects)-1].body), Last: roots.LastKey(o.Last())}, true
		return out, nil
	}
	pages := make([]shards.PageRef, len(parts))
	for i, p := range parts {
		if p.obj == nil {
			pages[i] = x.Page(p.at)
		} else {
			ref, err := add(p.obj)
			if err != nil {
				return shardBuild{}, err
			}
			pages[i] = shards.PageRef{First: p.obj.First(), Ref: ref}
		}
		if i == 0 {
			pages[i].First = nil
		}
	}
	nx, err := shards.NewIndex(s.fams, f, idx, salt, pages)
	if err != nil {
		return shardBuild{}, err
	}
	body, ref, err := nx.Encode()
	if err != nil {
		return shardBuild{}, err
	}
	out.entry, out.ok = roots.Entry{Shard: idx, Index: true, Ref: ref, Inline: s.inline(body), Last: lastOfParts(parts, x, old)}, true
	out.index, out.indexBody = nx, body
	return out, nil
}

// inline returns body as a table entry's inline bytes if it is within
// Options.InlineBytes, else "".
func (s *Store) inline(body []byte) string {
	if int64(len(body)) > s.opts.InlineBytes {
		return ""
	}
	return string(body)
}

// splitParts returns o split into pages of at most bound bytes (one part
// if it fits, none if o is empty): of about equal size, or, for a shard
// growing at its end (grows), full pages and a last one that may be small
// (shards.Object.SplitFull), since an even split would leave every page
// behind half full for good. That last page, which the next records will
// fill, is settled, so that mergeSmall does not join it to the full one
// before it and split them evenly again.
func splitParts(o *shards.Object, bound int64, grows bool) []part {
	if o.Len() == 0 {
		return nil
	}
	pieces := o.Split(bound)
	if grows {
		pieces = o.SplitFull(bound)
	}
	var parts []part
	for _, p := range pieces {
		parts = append(parts, part{obj: p})
	}
	if grows && len(parts) > 1 {
		parts[len(parts)-1].settled = true
	}
	return parts
}

// applyPages applies muts to the pages of x they fall in, loading those
// pages in parallel, and returns the shard's pages in key order: the
// untouched ones as they are, each touched one as its new records, split
// if over bound, dropped if empty, without its expired records.
func (s *Store) applyPages(ctx context.Context, x *shards.Index, muts []shards.Mutation, bound int64, ex expiry) ([]part, error) {
	// muts are in key order and so are the pages: each page's are a run.
	byPage := map[int][]shards.Mutation{}
	for lo := 0; lo < len(muts); {
		i := x.Find(muts[lo].Key)
		hi := lo + 1
		for hi < len(muts) && x.Find(muts[hi].Key) == i {
			hi++
		}
		byPage[i] = muts[lo:hi:hi]
		lo = hi
	}
	changed := make([]*shards.Object, x.Len())
	grows := false // the last page only gains records after its own
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.StageConcurrency)
	for i, pm := range byPage {
		g.Go(func() error {
			o, err := s.loadPage(gctx, x, i)
			if err != nil {
				return err
			}
			if i == x.Len()-1 {
				grows = appends(o.Last(), pm)
			}
			if changed[i], err = o.Apply(pm); err != nil {
				return err
			}
			changed[i] = ex.drop(changed[i])
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := s.dropFront(ctx, x, byPage, changed, ex); err != nil {
		return nil, err
	}
	var parts []part
	for i := range x.Len() {
		if changed[i] == nil {
			parts = append(parts, part{at: i})
			continue
		}
		parts = append(parts, splitParts(changed[i], bound, i == x.Len()-1 && grows)...)
	}
	return parts, nil
}

// maxFrontDrops bounds the whole expired pages a fold drops from the
// front of one shard (see Expiry above): each costs a read, one after
// another, in the fold's round.
const maxFrontDrops = 2

// dropFront marks as empty (changed[i], an object without records) the
// leading pages of x that no mutation touched and whose records have
// all expired, stopping at the first that keeps one, at a page a
// mutation touched, before the last page and after maxFrontDrops. It
// reads nothing for a family without an expiry rule.
func (s *Store) dropFront(ctx context.Context, x *shards.Index, byPage map[int][]shards.Mutation, changed []*shards.Object, ex expiry) error {
	if ex.rule == nil {
		return nil
	}
	for i := range min(x.Len()-1, maxFrontDrops) {
		if _, touched := byPage[i]; touched {
			return nil
		}
		o, err := s.loadPage(ctx, x, i)
		if err != nil {
			return err
		}
		if o = ex.drop(o); o.Len() > 0 {
			return nil
		}
		changed[i] = o
	}
	return nil
}

// appends reports whether muts, sorted by key, only add records after
// last, a page's largest key: a shard growing at its end, as shards
// keyed by time-ordered ids do.
func appends(last []byte, muts []shards.Mutation) bool {
	for _, m := range muts {
		if m.Delete || bytes.Compare(m.Key, last) <= 0 {
			return false
		}
	}
	return len(muts) > 0
}

// mergeSmall joins each new page under a quarter of bound with a
// neighbour (the next, or the previous for the last page), splitting the
// result again if it is over bound. Untouched pages are loaded only when
// a new neighbour merges into them, so a fold reads and writes at most
// one page more per page it changed. A neighbour rewritten by a merge
// loses its expired records too.
func (s *Store) mergeSmall(ctx context.Context, x *shards.Index, parts []part, bound int64, ex expiry) ([]part, error) {
	obj := func(p part) (*shards.Object, error) {
		if p.obj != nil {
			return p.obj, nil
		}
		return s.loadPage(ctx, x, p.at)
	}
	for i := 0; i < len(parts); i++ {
		p := parts[i]
		if len(parts) == 1 || p.obj == nil || p.settled || p.obj.EncodedSize() >= bound/4 {
			continue
		}
		a := i
		if i+1 == len(parts) {
			a = i - 1
		}
		left, err := obj(parts[a])
		if err != nil {
			return nil, err
		}
		right, err := obj(parts[a+1])
		if err != nil {
			return nil, err
		}
		joined, err := shards.Join(left, right)
		if err != nil {
			return nil, err
		}
		pieces := splitParts(ex.drop(joined), bound, false)
		for j := range pieces {
			pieces[j].settled = len(pieces) > 1
		}
		parts = append(parts[:a], append(pieces, parts[a+2:]...)...)
		i = a - 1 // look at the merged pages again
	}
	return parts, nil
}

// loadIndex loads the page index a table entry names, from the entry's
// inline bytes or the bucket, and checks it against the entry: its family
// and shard, size and record count.
func (s *Store) loadIndex(ctx context.Context, f shards.Family, e roots.Entry) (*shards.Index, error) {
	idx, ref := e.Shard, e.Ref
	x, err := shards.LoadIndex(ctx, s.indexes, s.fams, ref.Hash, f, idx, s.entryFetch(e, func() string { return s.layout.Index(f, idx, ref.Hash) }))
	if err != nil {
		return nil, fmt.Errorf("head: load index %s/%02x: %w", f, idx, err)
	}
	if x.Records() != ref.Count || x.EncodedSize() != ref.Size {
		return nil, fmt.Errorf("head: index %s/%02x %s: %d records in %d bytes, table says %d in %d: %w",
			f, idx, ref.Hash, x.Records(), x.EncodedSize(), ref.Count, ref.Size, bucket.ErrIntegrity)
	}
	return x, nil
}

// loadPage loads page i of index x and checks it against its reference
// there: family, shard, size, record count and key range.
func (s *Store) loadPage(ctx context.Context, x *shards.Index, i int) (*shards.Object, error) {
	f, idx, h := x.Family(), x.Shard(), x.Page(i).Ref.Hash
	o, err := shards.LoadObject(ctx, s.objects, s.fams, h, f, idx, s.fetch(func() string { return s.layout.Shard(f, idx, h) }))
	if err != nil {
		return nil, fmt.Errorf("head: load page %d of %s/%02x: %w", i, f, idx, err)
	}
	if err := x.CheckPage(i, o); err != nil {
		return nil, err
	}
	return o, nil
}

// entryGet returns the value of key in the shard a table entry names: a
// leaf answers directly; an index names the one page to read.
func (s *Store) entryGet(ctx context.Context, f shards.Family, e roots.Entry, key []byte) ([]byte, bool, error) {
	if !e.Index {
		o, err := s.loadShard(ctx, f, e)
		if err != nil {
			return nil, false, err
		}
		v, ok := o.Get(key)
		return v, ok, nil
	}
	x, err := s.loadIndex(ctx, f, e)
	if err != nil {
		return nil, false, err
	}
	o, err := s.loadPage(ctx, x, x.Find(key))
	if err != nil {
		return nil, false, err
	}
	v, ok := o.Get(key)
	return v, ok, nil
}

// entryScan returns the objects a scan of prefix after after must read in
// the shard a table entry names: the leaf, or the pages in range, loaded
// in parallel, in key order.
func (s *Store) entryScan(ctx context.Context, f shards.Family, e roots.Entry, prefix, after []byte) ([]*shards.Object, error) {
	if !e.Index {
		o, err := s.loadShard(ctx, f, e)
		if err != nil {
			return nil, err
		}
		return []*shards.Object{o}, nil
	}
	x, err := s.loadIndex(ctx, f, e)
	if err != nil {
		return nil, err
	}
	lo, hi := x.Range(prefix, after)
	objs := make([]*shards.Object, hi-lo)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.StageConcurrency)
	for i := lo; i < hi; i++ {
		g.Go(func() (err error) {
			objs[i-lo], err = s.loadPage(gctx, x, i)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return objs, nil
}

// pageRefs returns the references of x's pages, for the writer rule.
func pageRefs(x *shards.Index) map[digest.Hash]shards.Ref {
	m := make(map[digest.Hash]shards.Ref, x.Len())
	for i := range x.Len() {
		r := x.Page(i).Ref
		m[r.Hash] = r
	}
	return m
}

// noticeDeltas schedules a fold when r, a root this Store just committed,
// lists more deltas than Options.MaxDeltas or more bytes of them than
// Options.MaxDeltaBytes. At most one fold of a Store is pending at a time.
// With group commit, a fold into the base (the bytes past the bound,
// fewer than MaxDeltas deltas: a few large batches) is prepared beside
// the commits (prepareFold) and installed by the next one, while a root
// of MaxDeltas deltas or more (many small commits, whose deltas often
// overwrite each other) is merged by the leader between batches if it can
// be (mergeDeltas: one delta written, no base shard), else folded there;
// without group commit, the fold runs on a goroutine of its own, as a
// commit.
func (s *Store) noticeDeltas(r *roots.Root) {
	if !s.overDeltas(r, 1) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if !s.opts.NoGroupCommit {
		if r.DeltaBytes() <= s.opts.MaxDeltaBytes || len(r.Deltas) >= s.opts.MaxDeltas {
			if (s.preparing || s.prepared != nil) && len(r.Deltas) < 2*s.opts.MaxDeltas {
				// A fold being prepared takes these deltas soon; a merge
				// or a fold now would change what it folded and drop it,
				// and fold inline, for seconds, with the commands that
				// ride along. The count waits for it up to the hard
				// bound (buildDelta).
				return
			}
			if !s.folding {
				s.folding, s.foldDue = true, true
			}
			return
		}
		if s.preparing || s.prepared != nil {
			return
		}
		s.preparing = true
		s.spawn(s.prepareFold)
		return
	}
	if s.folding {
		return
	}
	s.folding = true
	s.spawn(func() { s.runFold() })
}

// takeFold reports whether the leader should run a fold now.
func (s *Store) takeFold() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := s.foldDue
	s.foldDue = false
	if due && s.closed {
		s.folding = false
		return false
	}
	return due
}

// Fold folds every delta segment the current root lists into the base, in
// a commit of its own, and returns when it has landed (or there was
// nothing to fold). A bulk writer that raised MaxDeltas and MaxDeltaBytes
// to fold less often calls it at the end, so that readers with the
// default bounds do not read its long delta list.
func (s *Store) Fold(ctx context.Context) error {
	if !s.enter() {
		return ErrClosed
	}
	defer s.leave()
	c := &call{ctx: ctx, fold: true, all: true, done: make(chan struct{})}
	s.commitBatch([]*call{c}, nil) // finishes c, whatever the outcome
	<-c.done
	return c.err
}

// runFold folds the deltas of the current root into the base in a commit
// of its own, with no command: it pins, builds in fold mode, stages and
// writes the head like any commit, and retries on a lost race, so it is
// linearizable and a race it loses is harmless. If by the time it pins the
// root is back within the bounds (another replica folded), it writes
// nothing. A failed fold leaves the deltas for the next commit to notice.
//
// A group commit's leader passes the commands waiting, so that the fold
// and they share one head write; calls that arrive meanwhile are left for
// the next batch.
func (s *Store) runFold(with ...*call) {
	defer func() {
		s.mu.Lock()
		s.folding = false
		s.mu.Unlock()
	}()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		failAll(with, ErrClosed)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.MaxAttemptAge)
	defer cancel()
	c := &call{ctx: ctx, fold: true, done: make(chan struct{})}
	s.commitBatch(append(with, c), nil)
}
