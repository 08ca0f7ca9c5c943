package head

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Snapshot is one validated, immutable state of the shard: the root a head
// named when it was read (or a held root, for a frozen read). Every read
// of one request goes through one Snapshot.
type Snapshot struct {
	s        *Store
	head     *Head          // nil for a frozen snapshot of a held root
	version  bucket.Version // the head object's version
	rootHash digest.Hash
	root     *roots.Root
	// empty: the shard holds no record: it was never written (no head,
	// nothing under its prefix: PinOrEmpty) or its head is a genesis head.
	empty bool
	// storeTime is when the store wrote the head object (its ModTime,
	// by the store's clock); zero for a frozen or never-written snapshot.
	storeTime time.Time

	dmu    sync.Mutex
	deltas []*shards.Delta // the root's deltas once loaded, newest first
}

// Sequence is the commit sequence of the snapshot's root.
func (sn *Snapshot) Sequence() uint64 { return sn.root.Sequence }

// RootHash names the snapshot's root; a hold on it freezes this state.
func (sn *Snapshot) RootHash() digest.Hash { return sn.rootHash }

// Root returns the decoded root. It must not be modified.
func (sn *Snapshot) Root() *roots.Root { return sn.root }

// Head returns the head the snapshot was pinned from, or nil for a frozen
// snapshot and for a shard never written.
func (sn *Snapshot) Head() *Head { return sn.head }

// StoreTime is when the store wrote the head this snapshot was pinned
// from, by the store's own clock (bucket.Attrs.ModTime): zero for a
// frozen snapshot (At), for a shard never written, and where the store
// gives no time.
func (sn *Snapshot) StoreTime() time.Time { return sn.storeTime }

// Marker returns the shard's schema marker, which names the formats it
// is written in: the Store's, or the one before it (Marker.reads). A
// frozen snapshot (Store.At) has no head, and returns the Store's.
func (sn *Snapshot) Marker() Marker {
	if sn.head == nil {
		return sn.s.schema.Marker
	}
	return sn.head.Marker
}

// PinOrEmpty is Pin for a reader that may meet a shard never written. When
// the head is missing it lists the shard's prefix: if nothing is there,
// the shard was never written (or was wholly removed) and PinOrEmpty
// returns an empty snapshot, in which every read finds nothing; it writes
// nothing. If anything is there, the head was lost and the error wraps
// ErrNoHead: a lost head is never taken for an empty shard. The listing
// costs one request, only when the head is missing.
func (s *Store) PinOrEmpty(ctx context.Context) (*Snapshot, error) {
	sn, err := s.Pin(ctx)
	if !errors.Is(err, ErrNoHead) {
		return sn, err
	}
	written, lerr := HasObjects(ctx, s.b, s.layout)
	if lerr != nil {
		return nil, fmt.Errorf("head: shard %s has no head: %w", s.id, lerr)
	}
	if written {
		return nil, fmt.Errorf("head: shard %s has objects but no head: %w", s.id, err)
	}
	return &Snapshot{s: s, root: &roots.Root{}, empty: true}, nil
}

// Empty reports whether the snapshot holds no record: the shard was
// never written (Head is nil) or its head is a genesis head (Head is
// sequence 0 and names no root). Every read of it finds nothing.
func (sn *Snapshot) Empty() bool { return sn.empty }

// headFlight is one head read that several Pins may share.
type headFlight struct {
	done chan struct{}
	sn   *Snapshot
	err  error
}

// Pin reads the head (a strong read), validates it and returns the
// snapshot it names. Concurrent Pins in one Store share a head read only if
// that read was sent after each of them arrived: a Pin that arrives while a
// read is in flight waits for the next read, which starts when the current
// one ends and serves every Pin that arrived meanwhile. So a Pin never
// returns a state older than the moment it was called. An unchanged head
// reuses the decoded snapshot; a changed one loads the new root, and
// tables and shards load lazily as reads need them.
func (s *Store) Pin(ctx context.Context) (*Snapshot, error) {
	s.mu.Lock()
	if s.shut {
		s.mu.Unlock()
		return nil, ErrClosed
	}
	var f *headFlight
	switch {
	case s.flight == nil:
		f = &headFlight{done: make(chan struct{})}
		s.flight = f
		go s.runFlights(f)
	case s.next != nil:
		f = s.next
		s.counters.pinsCoalesced.Add(1)
	default:
		f = &headFlight{done: make(chan struct{})}
		s.next = f
	}
	s.mu.Unlock()
	select {
	case <-f.done:
		return f.sn, f.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// runFlights performs head reads one after another: f, then the read the
// Pins that arrived during f wait for, until none is waiting.
func (s *Store) runFlights(f *headFlight) {
	for f != nil {
		// The read serves several requests, so no one caller's
		// cancellation may fail it.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		s.counters.headReads.Add(1)
		f.sn, f.err = s.readHead(ctx)
		cancel()
		close(f.done)
		s.mu.Lock()
		f = s.next
		s.next = nil
		s.flight = f
		s.mu.Unlock()
	}
}

// readHead performs one head read and returns its snapshot. A genesis
// head gives an empty snapshot: no root, no records, nothing for the
// schema gate to check.
func (s *Store) readHead(ctx context.Context) (*Snapshot, error) {
	seen := s.seenSequence() // before the read: every head it names was written before
	body, attrs, err := getHead(ctx, s.b, s.layout)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	latest := s.latest
	s.mu.Unlock()
	if latest != nil && latest.version == attrs.Version {
		// The head this Store decoded last, unchanged: a replica alone
		// on its head reads it before every write, and decoding it again
		// took 4% of a small put's CPU on the file bucket.
		return latest, nil
	}
	h, err := decodeRead(body, s.layout, s.schema.Marker)
	if err != nil {
		return nil, err
	}
	if h.Sequence < seen {
		return nil, fmt.Errorf("%w: shard %s: the head read has sequence %d, but this replica has seen sequence %d; it is not served",
			ErrHeadRolledBack, s.id, h.Sequence, seen)
	}
	if h.Genesis() {
		sn := &Snapshot{s: s, head: h, version: attrs.Version, storeTime: attrs.ModTime, root: &roots.Root{}, empty: true}
		s.remember(sn)
		return sn, nil
	}
	rootHash := h.RootHash()
	root, err := s.loadRoot(ctx, rootHash)
	if errors.Is(err, bucket.ErrNotExist) {
		// Everything a head names must exist: a missing root is damage.
		return nil, fmt.Errorf("%w: head %d names root %s, which is missing: %w", bucket.ErrIntegrity, h.Sequence, rootHash, err)
	}
	if err != nil {
		return nil, err
	}
	if root.Sequence != h.Sequence {
		return nil, fmt.Errorf("%w: head sequence %d names root of sequence %d", ErrBadHead, h.Sequence, root.Sequence)
	}
	sn := &Snapshot{s: s, head: h, version: attrs.Version, storeTime: attrs.ModTime, rootHash: rootHash, root: root}
	s.remember(sn)
	s.startGate(sn) // beside the caller's first reads, not before them
	return sn, nil
}

// seenSequence is the highest head sequence this Store has seen (read or
// written), 0 before the first. Heads are read strongly, so a head read
// sent after this Store saw sequence n has a sequence of at least n,
// unless the head went back (ErrHeadRolledBack).
func (s *Store) seenSequence() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.latest == nil || s.latest.head == nil {
		return 0
	}
	return s.latest.head.Sequence
}

// remember makes sn the latest snapshot if it is newer.
func (s *Store) remember(sn *Snapshot) {
	s.mu.Lock()
	if s.latest == nil || sn.head.Sequence >= s.latest.head.Sequence {
		if s.latest != nil && sn.head.Sequence > s.latest.head.Sequence {
			s.noteAdvance(time.Now())
		}
		if s.latest != nil && sn.head.Sequence > s.latest.head.Sequence && sn.version != s.ownVersion {
			if s.sending[sn.head.Nonce] > 0 {
				// This Store's own write, read before its Put returned.
				s.ownVersion = sn.version
			} else {
				// Another writer's head write happened before now.
				s.headWritten = time.Now()
				s.othersSeen = s.headWritten
				if s.othersWrote != nil {
					close(s.othersWrote)
					s.othersWrote = nil
				}
			}
		}
		s.latest = sn
	}
	s.mu.Unlock()
}

// At returns a frozen snapshot of a root that a hold (or a pin) keeps. It
// reads no head.
func (s *Store) At(ctx context.Context, root digest.Hash) (*Snapshot, error) {
	r, err := s.loadRoot(ctx, root)
	if err != nil {
		return nil, err
	}
	return &Snapshot{s: s, rootHash: root, root: r}, nil
}

// fetch returns a Get of the object key names. The key is made only when
// the object is fetched: a load the caches answer never formats it.
func (s *Store) fetch(key func() string) func(context.Context) ([]byte, error) {
	return func(ctx context.Context) ([]byte, error) {
		b, _, err := s.b.Get(ctx, key())
		return b, err
	}
}

// entryFetch returns the bytes of the object table entry e names: the
// entry's inline bytes, or a Get of key.
func (s *Store) entryFetch(e roots.Entry, key func() string) func(context.Context) ([]byte, error) {
	if e.Inline != "" {
		return func(context.Context) ([]byte, error) { return []byte(e.Inline), nil }
	}
	return s.fetch(key)
}

func (s *Store) loadRoot(ctx context.Context, h digest.Hash) (*roots.Root, error) {
	r, err := roots.LoadRoot(ctx, s.roots, s.fams, h, s.fetch(func() string { return s.layout.Root(h) }))
	if err != nil {
		return nil, fmt.Errorf("head: load root %s: %w", h, err)
	}
	return r, nil
}

// table returns family f's table, or nil if f has no records.
func (sn *Snapshot) table(ctx context.Context, f shards.Family) (*roots.Table, error) {
	fr, ok := sn.root.Family(f)
	if !ok {
		return nil, nil
	}
	h := fr.Table.Hash
	t, err := roots.LoadTable(ctx, sn.s.tables, sn.s.fams, h, sn.s.fetch(func() string { return sn.s.layout.Table(h) }))
	if err != nil {
		return nil, fmt.Errorf("head: load table %s of %s: %w", h, f, err)
	}
	if t.Family != f || len(t.Entries) != int(fr.Shards) || t.Records() != fr.Records {
		return nil, fmt.Errorf("head: table %s does not match its root entry for %s: %w", h, f, bucket.ErrIntegrity)
	}
	return t, nil
}

// loadShard loads the shard object a table entry names (not an index),
// from the entry's inline bytes or the bucket, and checks it against the
// entry: family, shard, size and record count.
func (s *Store) loadShard(ctx context.Context, f shards.Family, e roots.Entry) (*shards.Object, error) {
	idx, ref := e.Shard, e.Ref
	o, err := shards.LoadObject(ctx, s.objects, s.fams, ref.Hash, f, idx, s.entryFetch(e, func() string { return s.layout.Shard(f, idx, ref.Hash) }))
	if err != nil {
		return nil, fmt.Errorf("head: load shard %s/%02x: %w", f, idx, err)
	}
	if o.Len() != int(ref.Count) || o.StoredSize() != ref.Size {
		return nil, fmt.Errorf("head: shard %s/%02x %s: %d records of %d bytes, table says %d of %d: %w",
			f, idx, ref.Hash, o.Len(), o.StoredSize(), ref.Count, ref.Size, bucket.ErrIntegrity)
	}
	if !e.Ends(o.Last()) {
		return nil, fmt.Errorf("head: shard %s/%02x %s: last key %x, table says %x: %w", f, idx, ref.Hash, o.Last(), e.Last, bucket.ErrIntegrity)
	}
	return o, nil
}

func (s *Store) loadDelta(ctx context.Context, dr roots.DeltaRef) (*shards.Delta, error) {
	h := dr.Ref.Hash
	d, err := shards.LoadDelta(ctx, s.deltas, s.fams, h, s.fetch(func() string { return s.layout.Delta(h) }))
	if err != nil {
		return nil, fmt.Errorf("head: load delta %s: %w", h, err)
	}
	return d, checkDeltaRef(d, dr)
}

// checkDeltaRef checks a loaded delta against the root's reference to it.
func checkDeltaRef(d *shards.Delta, dr roots.DeltaRef) error {
	h := dr.Ref.Hash
	if d.Len() != int(dr.Ref.Count) || d.StoredSize() != dr.Ref.Size || d.Sequence() != dr.Sequence {
		return fmt.Errorf("head: delta %s: %d records of %d bytes at sequence %d, root says %d of %d at %d: %w",
			h, d.Len(), d.StoredSize(), d.Sequence(), dr.Ref.Count, dr.Ref.Size, dr.Sequence, bucket.ErrIntegrity)
	}
	return nil
}

// overlay returns the root's delta segments, newest first, and family
// f's table (nil if f has no base records), all fetched in one parallel
// round when they are not cached.
func (sn *Snapshot) overlay(ctx context.Context, f shards.Family) ([]*shards.Delta, *roots.Table, error) {
	if ds, ok := sn.loadedDeltas(); ok {
		t, err := sn.table(ctx, f)
		return ds, t, err
	}
	var ds []*shards.Delta
	var t *roots.Table
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() (err error) {
		t, err = sn.table(gctx, f)
		return err
	})
	g.Go(func() (err error) {
		ds, err = sn.loadDeltas(gctx)
		return err
	})
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return ds, t, nil
}

// loadedDeltas returns the root's deltas without a request, if the
// snapshot has them or the cache holds them all.
func (sn *Snapshot) loadedDeltas() ([]*shards.Delta, bool) {
	sn.dmu.Lock()
	defer sn.dmu.Unlock()
	if sn.deltas != nil || len(sn.root.Deltas) == 0 {
		return sn.deltas, true
	}
	ds := make([]*shards.Delta, len(sn.root.Deltas))
	for i, dr := range sn.root.Deltas {
		d, ok := sn.s.deltas.Get(dr.Ref.Hash)
		if !ok || checkDeltaRef(d, dr) != nil {
			return nil, false
		}
		ds[i] = d
	}
	sn.deltas = ds
	return ds, true
}

// loadDeltas returns the root's delta segments, newest first, loaded in
// parallel through the delta cache, and keeps them on the snapshot.
func (sn *Snapshot) loadDeltas(ctx context.Context) ([]*shards.Delta, error) {
	if ds, ok := sn.loadedDeltas(); ok {
		return ds, nil
	}
	refs := sn.root.Deltas
	ds := make([]*shards.Delta, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	for i, dr := range refs {
		g.Go(func() (err error) {
			ds[i], err = sn.s.loadDelta(gctx, dr)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	sn.dmu.Lock()
	sn.deltas = ds
	sn.dmu.Unlock()
	return ds, nil
}

// Get returns the value of key in family f, and whether it exists: the
// newest delta segment that changes key decides (a tombstone means
// absent); if none does, the base shard.
func (sn *Snapshot) Get(ctx context.Context, f shards.Family, key []byte) ([]byte, bool, error) {
	v, ok, err := sn.get(ctx, f, key)
	if err != nil {
		return nil, false, err
	}
	if err := sn.gate(ctx); err != nil {
		return nil, false, err
	}
	return v, ok, nil
}

func (sn *Snapshot) get(ctx context.Context, f shards.Family, key []byte) ([]byte, bool, error) {
	idx, err := sn.s.fams.ShardOf(f, key)
	if err != nil {
		return nil, false, err
	}
	ds, t, err := sn.overlay(ctx, f)
	if err != nil {
		return nil, false, err
	}
	for _, d := range ds {
		if v, del, ok := d.Get(f, key); ok {
			if del {
				return nil, false, nil
			}
			return v, true, nil
		}
	}
	if t == nil {
		return nil, false, nil
	}
	e, ok := t.Entry(idx)
	if !ok || e.Above(key) {
		return nil, false, nil // past the shard's last key: a new id costs no read
	}
	return sn.s.entryGet(ctx, f, e, key)
}

// Scan returns up to limit records of family f whose keys begin with
// prefix and come after after (exclusive; nil starts at the prefix), in
// key order (limit <= 0: all). A prefix that determines one shard reads
// that shard; any other merges every non-empty shard of the family. The
// delta segments' changes in range overlay the base: the newest change of
// a key wins and a tombstone drops it.
func (sn *Snapshot) Scan(ctx context.Context, f shards.Family, prefix, after []byte, limit int) ([]shards.Record, error) {
	ds, _, err := sn.overlay(ctx, f)
	if err != nil {
		return nil, err
	}
	objs, err := sn.scanShards(ctx, f, prefix, after)
	if err != nil {
		return nil, err
	}
	return sn.scanObjects(ctx, objs, deltaChanges(ds, f, prefix, after), prefix, after, limit)
}

// ScanShard is Scan over one shard only: the records of shard ref whose
// keys begin with prefix, the root's deltas overlaid (only their changes
// to keys of that shard). It serves a family whose frequent read is one
// shard that no key prefix names on its own (the rows whose shard key is
// one directory, among deeper rows that share their prefix but live in
// other shards); the caller filters what else the shard holds under
// prefix.
func (sn *Snapshot) ScanShard(ctx context.Context, ref ShardRef, prefix, after []byte, limit int) ([]shards.Record, error) {
	ds, _, err := sn.overlay(ctx, ref.Family)
	if err != nil {
		return nil, err
	}
	var objs []*shards.Object
	if t, err := sn.table(ctx, ref.Family); err != nil {
		return nil, err
	} else if t != nil {
		if e, ok := t.Entry(ref.Index); ok {
			if objs, err = sn.s.entryScan(ctx, ref.Family, e, prefix, after); err != nil {
				return nil, err
			}
		}
	}
	over := slices.DeleteFunc(deltaChanges(ds, ref.Family, prefix, after), func(m shards.Mutation) bool {
		idx, err := sn.s.fams.ShardOf(ref.Family, m.Key)
		return err != nil || idx != ref.Index
	})
	return sn.scanObjects(ctx, objs, over, prefix, after, limit)
}

// scanObjects merges the records of objs in a scan's range with the
// deltas' changes over (in key order, tombstones included; the newest
// change of a key wins over the base), up to limit records.
func (sn *Snapshot) scanObjects(ctx context.Context, objs []*shards.Object, over []shards.Mutation, prefix, after []byte, limit int) ([]shards.Record, error) {
	baseLimit := limit
	if len(over) > 0 {
		baseLimit = 0 // the overlay may drop or add records; stop by hand
	}
	base, err := shards.Merge(objs, prefix, after, baseLimit)
	if err != nil {
		return nil, err
	}
	if err := sn.gate(ctx); err != nil {
		return nil, err
	}
	var out []shards.Record
	full := func() bool { return limit > 0 && len(out) >= limit }
	emit := func(m shards.Mutation) {
		if !m.Delete {
			out = append(out, shards.Record{Key: m.Key, Value: m.Value})
		}
	}
	j := 0
	for k, v := range base {
		for j < len(over) && bytes.Compare(over[j].Key, k) < 0 && !full() {
			emit(over[j])
			j++
		}
		if full() {
			break
		}
		if j < len(over) && bytes.Equal(over[j].Key, k) {
			emit(over[j])
			j++
		} else {
			out = append(out, shards.Record{Key: k, Value: v})
		}
		if full() {
			break
		}
	}
	for ; j < len(over) && !full(); j++ {
		emit(over[j])
	}
	return out, nil
}

// deltaChanges returns, in key order, the newest change each of the
// deltas ds (newest first) makes to a key of family f in the range of a
// scan, tombstones included.
func deltaChanges(ds []*shards.Delta, f shards.Family, prefix, after []byte) []shards.Mutation {
	var out []shards.Mutation
	seen := map[string]bool{}
	for _, d := range ds {
		for r := range d.Scan(f, prefix, after) {
			if !seen[string(r.Key)] {
				seen[string(r.Key)] = true
				out = append(out, r.Mutation)
			}
		}
	}
	if len(ds) > 1 {
		slices.SortFunc(out, func(a, b shards.Mutation) int { return bytes.Compare(a.Key, b.Key) })
	}
	return out
}

// scanShards loads the shards a scan of prefix after after must read: of
// a paged shard, the pages in range.
func (sn *Snapshot) scanShards(ctx context.Context, f shards.Family, prefix, after []byte) ([]*shards.Object, error) {
	t, err := sn.table(ctx, f)
	if err != nil || t == nil {
		return nil, err
	}
	entries := t.Entries
	if idx, ok := sn.s.fams.PrefixShard(f, prefix); ok {
		e, ok := t.Entry(idx)
		if !ok {
			return nil, nil
		}
		entries = []roots.Entry{e}
	}
	objs := make([][]*shards.Object, len(entries))
	if err := sn.parallel(len(entries), func(i int) (err error) {
		objs[i], err = sn.s.entryScan(ctx, f, entries[i], prefix, after)
		return err
	}); err != nil {
		return nil, err
	}
	return slices.Concat(objs...), nil
}

// ShardRef names one shard of a family and, for Prefetch, optionally the
// keys that will be read there.
type ShardRef struct {
	Family shards.Family
	Index  uint8
	// Prefix, if not nil, names the keys a caller will scan (or, a whole
	// key, the one it will look up): Prefetch then loads the pages of a
	// paged shard that may hold them, not the index alone.
	Prefix []byte
}

// ShardOf returns the reference of the shard that holds key of family f.
func (sn *Snapshot) ShardOf(f shards.Family, key []byte) (ShardRef, error) {
	idx, err := sn.s.fams.ShardOf(f, key)
	return ShardRef{Family: f, Index: idx}, err
}

// Prefetch loads, through the caches, the tables of fams and of the
// families refs name in one parallel round, then the shards refs name
// (those that exist) in a second one, so that later reads of them cost no
// request; of a paged shard it loads the page index (free when its table
// carries it inline) and the pages that may hold the ref's Prefix, if it
// has one. A caller that will read several families names them together
// instead of paying a round per object each read discovers. What is
// cached already costs nothing.
func (sn *Snapshot) Prefetch(ctx context.Context, fams []shards.Family, refs []ShardRef) error {
	want := slices.Clone(fams)
	for _, r := range refs {
		want = append(want, r.Family)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	// What is cached is taken here, without a goroutine; only the rest
	// is loaded in parallel.
	tables := make([]*roots.Table, len(want))
	var missing []int
	for i, f := range want {
		if fr, ok := sn.root.Family(f); ok && !sn.s.tables.Cached(fr.Table.Hash) {
			missing = append(missing, i)
			continue
		}
		t, err := sn.table(ctx, f)
		if err != nil {
			return err
		}
		tables[i] = t
	}
	if err := sn.parallel(len(missing), func(j int) (err error) {
		i := missing[j]
		tables[i], err = sn.table(ctx, want[i])
		return err
	}); err != nil {
		return err
	}
	var load []int
	for i, r := range refs {
		if !sn.cached(ctx, tables[slices.Index(want, r.Family)], r) {
			load = append(load, i)
		}
	}
	return sn.parallel(len(load), func(j int) error {
		r := refs[load[j]]
		e, _ := tables[slices.Index(want, r.Family)].Entry(r.Index)
		if !e.Index {
			_, err := sn.s.loadShard(ctx, r.Family, e)
			return err
		}
		if r.Prefix == nil {
			_, err := sn.s.loadIndex(ctx, r.Family, e)
			return err
		}
		_, err := sn.s.entryScan(ctx, r.Family, e, r.Prefix, nil)
		return err
	})
}

// cached says whether Prefetch has nothing to load for r, whose family's
// table is t: no table or no such shard, or its shard, index and pages in
// the caches already.
func (sn *Snapshot) cached(ctx context.Context, t *roots.Table, r ShardRef) bool {
	if t == nil {
		return true
	}
	e, ok := t.Entry(r.Index)
	switch {
	case !ok:
		return true
	case r.Prefix != nil && e.Above(r.Prefix):
		return true // no key under the prefix: a read of it reads nothing
	case !e.Index:
		return sn.s.objects.Cached(e.Ref.Hash)
	case !sn.s.indexes.Cached(e.Ref.Hash):
		return false
	case r.Prefix == nil:
		return true
	}
	x, err := sn.s.loadIndex(ctx, r.Family, e)
	if err != nil {
		return false
	}
	lo, hi := x.Range(r.Prefix, nil)
	for i := lo; i < hi; i++ {
		if !sn.s.objects.Cached(x.Page(i).Ref.Hash) {
			return false
		}
	}
	return true
}

// parallel runs fn(0..n-1) at most StageConcurrency at a time and joins
// their errors.
func (sn *Snapshot) parallel(n int, fn func(i int) error) error {
	switch n {
	case 0:
		return nil
	case 1:
		return fn(0)
	}
	errs := make([]error, n)
	sem := make(chan struct{}, sn.s.opts.StageConcurrency)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			errs[i] = fn(i)
			<-sem
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
