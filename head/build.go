package head

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Building a commit's candidate: its delta segment or fold, the new
// root, and the writer rule that vets it. Nothing here writes.

// candidate is an attempt's staged state: the objects to write, then the
// head that commits them.
type candidate struct {
	writes    []write
	root      *roots.Root
	rootRef   shards.Ref
	head      *Head
	headBytes []byte
	nonce     roots.Nonce // the attempt's; named in the head
	objects   map[digest.Hash]*shards.Object
	indexes   map[digest.Hash]*shards.Index
	tables    map[digest.Hash]*roots.Table
	deltas    map[digest.Hash]*shards.Delta
	// superseded are the parent's objects (shards, pages, indexes,
	// tables, deltas) this candidate replaces: once it lands, the caches
	// drop them (see forget).
	superseded []digest.Hash
	// installed is the prepared fold this candidate makes current, whose
	// objects it names without writing them (adopt).
	installed *preparedFold
	// folded and merged say what the candidate did with the parent's
	// deltas: folded them into the base, or merged the newer of them
	// into one delta (neither: it listed the batch's delta first).
	folded, merged bool
	// compress: the shard keeps its shard objects and delta segments
	// compressed (Schema.CompressFrom).
	compress bool
	// tableFormat is the format of the tables it writes
	// (Schema.LastKeysFrom).
	tableFormat uint8
}

type write struct {
	key  string
	body []byte
}

// A foldMode says what a commit does with the parent's deltas.
type foldMode uint8

const (
	// keepDeltas lists the batch's delta before the parent's, unless the
	// bounds force a fold (buildDelta).
	keepDeltas foldMode = iota
	// foldDue folds the parent's deltas and the batch: the newer ones
	// into one delta when their count, not their bytes, is past the
	// bounds (mergeDeltas), else into the base.
	foldDue
	// foldBase folds them into the base (Fold).
	foldBase
)

// build computes the candidate root of state applied to sn (nil for the
// first root). With keepDeltas, the batch's record changes become one
// new delta segment that the root lists first, before the parent's, and
// the parent's tables are kept; if the bounds say so (buildDelta), build
// folds instead, as with foldDue. When the parent lists MaxDeltas deltas
// or more, a fold merges its newer deltas and the batch into one delta if
// it can (mergeDeltas), keeping the parent's tables. Otherwise, and
// always with foldBase, it applies the union of the parent's deltas and
// the batch (the newest change of a key wins) to the base: new shard
// objects for the shards it changes, new tables for the families it
// changes, and a root with no deltas; it leaves out of every object it
// rewrites the records that have expired at its sequence and at now, the
// commit's time (see expiry). Nothing is written.
func (s *Store) build(ctx context.Context, sn *Snapshot, state *batchState, nonce roots.Nonce, mode foldMode, now time.Time, install *preparedFold) (*candidate, error) {
	if sn != nil {
		if err := sn.gate(ctx); err != nil { // nothing is committed past a failed gate
			return nil, err
		}
	}
	c := &candidate{objects: map[digest.Hash]*shards.Object{}, indexes: map[digest.Hash]*shards.Index{}, tables: map[digest.Hash]*roots.Table{}, deltas: map[digest.Hash]*shards.Delta{}}
	marker := s.schema.Marker // a new shard's
	if sn != nil {
		marker = sn.Marker()
	}
	c.compress = s.schema.compresses(marker)
	c.tableFormat = s.schema.tableFormat(marker)
	root := &roots.Root{Nonce: nonce, Sequence: 1}
	if sn != nil {
		root.Parent = sn.rootHash
		root.Sequence = sn.root.Sequence + 1
		root.Families = append(root.Families, sn.root.Families...)
		root.Holds = append(root.Holds, sn.root.Holds...)
		root.Deltas = append(root.Deltas, sn.root.Deltas...)
	}
	canMerge := true
	installed := false
	if mode == keepDeltas && install != nil && sn != nil {
		// The prepared fold's base in place of the parent's, and the
		// deltas it folded gone from the end of the list; the batch's
		// delta is listed first as usual. If the batch's delta would
		// still pass the bounds, the commit goes on without it.
		r := *root
		r.Families = slices.Clone(install.c.root.Families)
		r.Deltas = slices.Clone(sn.root.Deltas[:len(sn.root.Deltas)-len(install.folded)])
		ok, _, err := s.buildDelta(state, nonce, &r, c)
		if err != nil {
			return nil, err
		}
		if ok {
			*root = r
			c.adopt(install)
			installed = true
		}
	}
	if mode == keepDeltas && !installed {
		ok, size, err := s.buildDelta(state, nonce, root, c)
		if err != nil {
			return nil, err
		}
		if !ok {
			mode = foldDue
			// A merge holds the batch's records: a batch over MergeBytes
			// alone would be encoded again only to be refused.
			canMerge = size <= s.opts.MergeBytes
		}
	}
	if mode != keepDeltas {
		merged := false
		if mode == foldDue && canMerge && sn != nil && len(sn.root.Deltas) >= s.opts.MaxDeltas {
			var err error
			if merged, err = s.mergeDeltas(ctx, sn, state, nonce, root, c); err != nil {
				return nil, err
			}
		}
		c.merged = merged
		if !merged {
			c.folded = true
			muts, err := s.foldDeltas(ctx, sn, state)
			if err != nil {
				return nil, err
			}
			if sn != nil {
				for _, d := range sn.root.Deltas {
					c.superseded = append(c.superseded, d.Ref.Hash)
				}
			}
			root.Deltas = nil
			at := shards.ExpiryClock{Sequence: root.Sequence, Time: now, DedupeWindow: s.opts.DedupeWindow}
			if err := s.buildBase(ctx, sn, muts, nonce, root, c, at); err != nil {
				return nil, err
			}
		}
	}
	if len(state.holds) > 0 {
		held := map[string]digest.Hash{}
		for _, h := range root.Holds {
			held[h.Owner] = h.Root
		}
		for owner, h := range state.holds {
			if h == nil {
				delete(held, owner)
			} else {
				held[owner] = *h
			}
		}
		root.Holds = root.Holds[:0:0]
		for owner, h := range held {
			root.Holds = append(root.Holds, roots.Hold{Owner: owner, Root: h})
		}
		sort.Slice(root.Holds, func(i, j int) bool { return root.Holds[i].Owner < root.Holds[j].Owner })
	}
	b, ref, err := root.Encode(s.fams)
	if err != nil {
		return nil, err
	}
	c.root, c.rootRef = root, ref
	c.writes = append(c.writes, write{s.layout.Root(ref.Hash), b})
	c.writes = append(c.writes, state.stage...)
	if err := s.checkWriterRule(ctx, sn, c); err != nil {
		return nil, err
	}
	return c, nil
}

// familyConcurrency bounds the families one fold builds at once.
const familyConcurrency = 4

// scratch returns an empty candidate with c's formats, for one family's
// share of a fold (buildBase).
func (c *candidate) scratch() *candidate {
	return &candidate{objects: map[digest.Hash]*shards.Object{}, indexes: map[digest.Hash]*shards.Index{}, tables: map[digest.Hash]*roots.Table{},
		compress: c.compress, tableFormat: c.tableFormat}
}

// join adds to c the writes, objects and superseded hashes of fc, a
// scratch candidate.
func (c *candidate) join(fc *candidate) {
	c.writes = append(c.writes, fc.writes...)
	c.superseded = append(c.superseded, fc.superseded...)
	maps.Copy(c.objects, fc.objects)
	maps.Copy(c.indexes, fc.indexes)
	maps.Copy(c.tables, fc.tables)
}

// adopt makes prepared fold f part of c: its tables, shard objects and
// page indexes count as c's own for the writer rule (f staged them, and
// installable checked their store stamps against c's floor), and what
// it superseded leaves the caches when c lands.
func (c *candidate) adopt(f *preparedFold) {
	c.installed = f
	c.folded = true
	c.superseded = append(c.superseded, f.c.superseded...)
	maps.Copy(c.objects, f.c.objects)
	maps.Copy(c.indexes, f.c.indexes)
	maps.Copy(c.tables, f.c.tables)
}

// buildDelta makes the batch's record changes one delta segment, listed
// first in root. It reports false, changing nothing, when the commit must
// fold instead: the parent's deltas are past the bounds already (their
// fold is due) and the root would then exceed the hard bounds (twice
// MaxDeltas, or twice MaxDeltaBytes, pendingDeltaFactor times while a
// fold is prepared), or the batch's delta alone is larger than
// loneDeltaFactor × MaxDeltaBytes. On a parent within the bounds, a
// batch's delta is listed up to that size: a batch of a few hundred
// commands, as a carrier of other replicas' intents commits, would
// otherwise fold at every commit, each rewriting most base shards for a
// few hundred records. A batch without record changes writes no delta.
// size is the batch's delta's encoded size (0 without one).
func (s *Store) buildDelta(state *batchState, nonce roots.Nonce, root *roots.Root, c *candidate) (ok bool, size int64, err error) {
	// A batch too large to list folds whatever the parent: a restore's or
	// an import's command of thousands of rows is not encoded for nothing.
	raw := int64(loneDeltaFactor)
	if c.compress {
		raw = loneRawFactor
	}
	if size := state.deltaSize(); size > raw*s.opts.MaxDeltaBytes {
		return false, size, nil
	}
	d, body, ref, err := s.encodeDelta(state, nonce, root.Sequence, c.compress)
	if err != nil || d == nil {
		return err == nil, 0, err
	}
	size = int64(len(body))
	if size > loneDeltaFactor*s.opts.MaxDeltaBytes {
		return false, size, nil
	}
	deltas := append([]roots.DeltaRef{{Ref: ref, Sequence: root.Sequence}}, root.Deltas...)
	hard := int64(2)
	if s.foldPending() {
		hard = pendingDeltaFactor // the fold being prepared takes them soon
	}
	listed := &roots.Root{Deltas: deltas}
	if (len(deltas) > 2*s.opts.MaxDeltas || listed.DeltaBytes() > hard*s.opts.MaxDeltaBytes) && s.overDeltas(root, 1) {
		return false, size, nil
	}
	root.Deltas = deltas
	c.deltas[ref.Hash] = d
	c.writes = append(c.writes, write{s.layout.Delta(ref.Hash), body})
	return true, size, nil
}

// encodeDelta returns state's record changes as one delta segment of
// sequence seq, and its encoding; d is nil when there are none.
func (s *Store) encodeDelta(state *batchState, nonce roots.Nonce, seq uint64, compress bool) (d *shards.Delta, body []byte, ref shards.Ref, err error) {
	var recs []shards.DeltaRecord
	for f, m := range state.muts {
		for _, mut := range m {
			recs = append(recs, shards.DeltaRecord{Family: f, Mutation: mut})
		}
	}
	if len(recs) == 0 {
		return nil, nil, shards.Ref{}, nil
	}
	if d, err = shards.NewDelta(s.fams, shards.Salt(nonce), seq, recs); err != nil {
		return nil, nil, shards.Ref{}, err
	}
	if compress {
		body, ref, err = d.EncodeCompressed()
	} else {
		body, ref, err = d.Encode()
	}
	return d, body, ref, err
}

// mergeDeltas merges the newer of sn's deltas and the batch into one
// delta segment, listed first, before the older deltas it keeps: those
// from the newest one at least as large as all the deltas newer than it,
// so that a byte is merged again only once as many bytes came after it
// (size tiers), not at every merge. It reports false, changing nothing,
// when the merge is not worth it or not allowed: fewer than two deltas
// to merge, more than MaxDeltas/2 kept, or deltas that would still take
// more than MergeBytes (MaxDeltaBytes by default, at most that); the fold
// then goes to the base.
// A merge is a fold that leaves the base alone: when many small commits,
// not many bytes, reach the bounds (an unpaced replica commits a few
// puts at a time), it writes what they changed instead of rewriting most
// base shards, and the base is folded into once MaxDeltaBytes of changes
// wait. Deletes stay in it as deletes, shadowing the base.
func (s *Store) mergeDeltas(ctx context.Context, sn *Snapshot, state *batchState, nonce roots.Nonce, root *roots.Root, c *candidate) (bool, error) {
	refs := sn.root.Deltas // newest first
	// n is how many of the newest are merged: the deltas from the newest
	// one (past the first two) as large as everything newer together are
	// kept, with the older ones.
	n := len(refs)
	var newer int64
	for i, r := range refs {
		if i >= 2 && r.Ref.Size >= newer {
			n = i
			break
		}
		newer += r.Ref.Size
	}
	if n < 2 || len(refs)-n > s.opts.MaxDeltas/2 {
		return false, nil
	}
	ds, err := sn.loadDeltas(ctx)
	if err != nil {
		return false, err
	}
	muts := newBatchState(s.fams)
	for i := n - 1; i >= 0; i-- { // oldest first, so newer changes overwrite
		for j := range ds[i].Len() {
			r := ds[i].At(j)
			muts.set(r.Family, r.Mutation)
		}
	}
	muts.merge(&batchState{muts: state.muts})
	d, body, ref, err := s.encodeDelta(muts, nonce, root.Sequence, c.compress)
	if err != nil || d == nil {
		return false, err
	}
	merged := &roots.Root{Deltas: append([]roots.DeltaRef{{Ref: ref, Sequence: root.Sequence}}, refs[n:]...)}
	if merged.DeltaBytes() > s.opts.MergeBytes {
		return false, nil // the root would still be past the bytes bound
	}
	root.Deltas = merged.Deltas
	for _, r := range refs[:n] {
		c.superseded = append(c.superseded, r.Ref.Hash)
	}
	c.deltas[ref.Hash] = d
	c.writes = append(c.writes, write{s.layout.Delta(ref.Hash), body})
	return true, nil
}

// loneDeltaFactor bounds, in MaxDeltaBytes, the delta segment of one
// batch as encoded: a larger batch folds at once, a fold its many records
// amortize. loneRawFactor bounds the batch's records before they are
// encoded, where the shard compresses its deltas (else loneDeltaFactor
// does), so that a batch far too large is not encoded for nothing, while
// one whose records compress well (a thousand served puts: 3.7 MB of
// records, a 240 KB delta) is listed, not folded. At 32 a restore's
// commands (16,384 members each) were encoded only to be refused: 8% of
// its CPU.
const (
	loneDeltaFactor = 3
	loneRawFactor   = 12
)

// overDeltas reports whether r lists more than factor × MaxDeltas delta
// segments or more than factor × MaxDeltaBytes of them: factor 1 asks
// for a fold in the background, factor 2 forces one inline.
func (s *Store) overDeltas(r *roots.Root, factor int) bool {
	return len(r.Deltas) > factor*s.opts.MaxDeltas || r.DeltaBytes() > int64(factor)*s.opts.MaxDeltaBytes
}

// foldDeltas returns the union of the record changes of sn's delta
// segments and of state, the newest change of each key winning: what a
// fold applies to the base. The same root and batch always give the same
// union. The union reads state in place: a batch may hold hundreds of
// thousands of records (a restore, an import), and the deltas are
// bounded small.
func (s *Store) foldDeltas(ctx context.Context, sn *Snapshot, state *batchState) (foldUnion, error) {
	u := foldUnion{state: state}
	if sn == nil || len(sn.root.Deltas) == 0 {
		return u, nil
	}
	ds, err := sn.loadDeltas(ctx)
	if err != nil {
		return foldUnion{}, err
	}
	u.deltas = newBatchState(s.fams)
	for i := len(ds) - 1; i >= 0; i-- { // oldest first, so newer changes overwrite
		for j := range ds[i].Len() {
			r := ds[i].At(j)
			u.deltas.set(r.Family, r.Mutation)
		}
	}
	return u, nil
}

// foldUnion is the record changes a fold applies: a batch's over the
// deltas' (nil: none).
type foldUnion struct {
	state, deltas *batchState
}

// families returns the families with a change, in order.
func (u foldUnion) families() []shards.Family {
	var fams []shards.Family
	for _, b := range []*batchState{u.state, u.deltas} {
		if b == nil {
			continue
		}
		for f := range b.muts {
			if !slices.Contains(fams, f) {
				fams = append(fams, f)
			}
		}
	}
	slices.Sort(fams)
	return fams
}

// sorted returns family f's changes in key order, the batch's winning
// over the deltas' for the same key.
func (u foldUnion) sorted(f shards.Family) []shards.Mutation {
	own := u.state.sorted(f)
	if u.deltas == nil {
		return own
	}
	return mergeMutations(own, u.deltas.sorted(f))
}

// buildBase applies muts to sn's base: new shard objects for the shards
// they change and new tables for the families they change, entered into
// root. The records expired at at are left out of every object it writes.
//
// The families are built side by side, up to familyConcurrency at once,
// each into a candidate of its own that then joins c in family order: a
// large fold (a restore's copy command, an import's) changes many
// families, and one family's sort and table are serial work.
func (s *Store) buildBase(ctx context.Context, sn *Snapshot, muts foldUnion, nonce roots.Nonce, root *roots.Root, c *candidate, at shards.ExpiryClock) error {
	fams := muts.families()
	type built struct {
		fr roots.FamilyRef
		ok bool
		c  *candidate
	}
	out := make([]built, len(fams))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(familyConcurrency)
	for i, f := range fams {
		g.Go(func() error {
			fc := c.scratch()
			fr, ok, err := s.buildFamily(gctx, sn, f, muts.sorted(f), nonce, fc, s.expiry(f, at))
			out[i] = built{fr, ok, fc}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for i, f := range fams {
		fr, ok := out[i].fr, out[i].ok
		c.join(out[i].c)
		i := sort.Search(len(root.Families), func(i int) bool { return root.Families[i].Family >= f })
		present := i < len(root.Families) && root.Families[i].Family == f
		switch {
		case ok && present:
			root.Families[i] = fr
		case ok:
			root.Families = append(root.Families[:i], append([]roots.FamilyRef{fr}, root.Families[i:]...)...)
		case present:
			root.Families = append(root.Families[:i], root.Families[i+1:]...)
		}
	}
	return nil
}

// checkWriterRule enforces the rule that keeps GC safe: the candidate root
// references only objects reachable from its parent root or written by
// this attempt. Everything else could be an orphan a sweep is deleting.
// Each delta segment is one of the parent root's (the same reference) or
// the one this attempt wrote, at the candidate's sequence.
func (s *Store) checkWriterRule(ctx context.Context, sn *Snapshot, c *candidate) error {
	written := map[string]bool{}
	for _, w := range c.writes {
		written[w.key] = true
	}
	if c.installed != nil {
		for _, w := range c.installed.c.writes {
			written[w.key] = true
		}
	}
	for _, fr := range c.root.Families {
		key := s.layout.Table(fr.Table.Hash)
		if written[key] {
			t := c.tables[fr.Table.Hash]
			var parent *roots.Table
			if sn != nil {
				var err error
				if parent, err = sn.table(ctx, fr.Family); err != nil {
					return err
				}
			}
			for _, e := range t.Entries {
				if err := s.checkEntryRule(ctx, fr.Family, e, parent, written, c); err != nil {
					return err
				}
			}
			continue
		}
		if sn == nil {
			return fmt.Errorf("%w: table %s of %s not written and no parent", ErrWriterRule, fr.Table.Hash, fr.Family)
		}
		if pf, ok := sn.root.Family(fr.Family); !ok || pf.Table != fr.Table {
			return fmt.Errorf("%w: table %s of %s is not the parent's", ErrWriterRule, fr.Table.Hash, fr.Family)
		}
	}
	for _, dr := range c.root.Deltas {
		if written[s.layout.Delta(dr.Ref.Hash)] && dr.Sequence == c.root.Sequence && c.deltas[dr.Ref.Hash] != nil {
			continue
		}
		if sn != nil && slices.Contains(sn.root.Deltas, dr) {
			continue
		}
		return fmt.Errorf("%w: delta %s of sequence %d is neither the parent's nor written by this attempt", ErrWriterRule, dr.Ref.Hash, dr.Sequence)
	}
	for _, h := range c.root.Holds {
		if sn != nil && !h.Root.IsZero() && (h.Root == sn.rootHash || heldBy(sn.root, h.Root)) {
			continue
		}
		return fmt.Errorf("%w: hold %q names root %s, neither the parent nor held by it", ErrWriterRule, h.Owner, h.Root)
	}
	return nil
}

// checkEntryRule applies the writer rule to entry e of a table this
// attempt wrote: it is exactly the parent table's entry for its shard, or
// a shard object this attempt wrote or carries inline, or a page index
// this attempt wrote or carries inline whose every page is one this
// attempt wrote or one the parent's index of that shard names (the same
// reference).
func (s *Store) checkEntryRule(ctx context.Context, f shards.Family, e roots.Entry, parent *roots.Table, written map[string]bool, c *candidate) error {
	var pe roots.Entry
	var inParent bool
	if parent != nil {
		pe, inParent = parent.Entry(e.Shard)
		if inParent && pe == e {
			return nil
		}
	}
	if !e.Index {
		if e.Inline != "" || written[s.layout.Shard(f, e.Shard, e.Ref.Hash)] {
			return nil // inline: the object is in the table this attempt wrote
		}
		return fmt.Errorf("%w: %s shard %02x %s is neither written by this attempt nor the parent's", ErrWriterRule, f, e.Shard, e.Ref.Hash)
	}
	x := c.indexes[e.Ref.Hash]
	if x == nil || (e.Inline == "" && !written[s.layout.Index(f, e.Shard, e.Ref.Hash)]) || x.Family() != f || x.Shard() != e.Shard {
		return fmt.Errorf("%w: %s index %02x %s is neither written by this attempt nor the parent's", ErrWriterRule, f, e.Shard, e.Ref.Hash)
	}
	var kept map[digest.Hash]shards.Ref
	if inParent && pe.Index {
		px, err := s.loadIndex(ctx, f, pe)
		if err != nil {
			return err
		}
		kept = pageRefs(px)
	}
	for i := range x.Len() {
		r := x.Page(i).Ref
		if written[s.layout.Shard(f, e.Shard, r.Hash)] {
			continue
		}
		if pr, ok := kept[r.Hash]; !ok || pr != r {
			return fmt.Errorf("%w: %s shard %02x page %d %s is neither written by this attempt nor a page of the parent's index", ErrWriterRule, f, e.Shard, i, r.Hash)
		}
	}
	return nil
}

func heldBy(r *roots.Root, h digest.Hash) bool {
	for _, x := range r.Holds {
		if x.Root == h {
			return true
		}
	}
	return false
}
