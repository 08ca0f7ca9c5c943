package head

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/cairnstore/cairn/manifests"
	"slices"
	"sort"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Bringing a kept root back: as the current state of its own shard
// (RestoreRoot, an ordinary commit) and as the head of a copy of it in
// another bucket (WriteHeadAt).

// ErrHeadExists: WriteHeadAt found a head that names another root. A
// head is never overwritten by a copy: the shard there has a history of
// its own.
var ErrHeadExists = errors.New("head: a head naming another root exists")

// RestoreOptions qualify RestoreRoot.
type RestoreOptions struct {
	// Guard, if set, runs after each attempt is staged and before its
	// head write, with the attempt's floor (Tx.Floor); an error ends the
	// restore with nothing committed. The kept root's objects are neither
	// reachable from the parent nor written by the attempt, so something
	// else must keep them from every sweep up to the head write: the pin
	// command passes gcsweep.RestoreGuard.Check, which keeps the root with
	// a keep stamped at or after the floor and checks that the pin naming
	// it still exists.
	Guard func(ctx context.Context, floor time.Time) error
	// Verified says the caller has checked that every object the kept
	// root reaches is there and intact (the pin command verifies them, in
	// parallel, blocks included); otherwise RestoreRoot runs a strict
	// Check of the kept root first.
	Verified bool
	// KeepCurrent names families whose records stay as the current root
	// has them; every other family comes from the kept root. A product
	// names here the families that record its holds, its clocks and its
	// logs (the Workbench: its snapshot rows, lease clock and change
	// feed, workbench.RestoreKeepCurrent), and then the holds
	// stay the current root's too, so that the records and the holds
	// they describe stay in step. Without it, the holds are the union of
	// both roots'. The engine's own families cannot be named.
	KeepCurrent []shards.Family
}

// ErrKeptDamaged: the root to restore does not reach a whole state (an
// object is missing or damaged, as after a sweep that nothing kept it
// from). Nothing was committed.
var ErrKeptDamaged = errors.New("head: the root to restore is not whole")

// RestoreRoot commits, on top of the current head, a root whose records
// are those of root kept: the same tables and delta segments, by
// reference, so nothing but the new root is written (and, with
// opts.KeepCurrent, one delta segment). History is not
// rewritten: the new root's parent is the current root, its sequence the
// head's plus one, and the head moves by the usual conditional write
// (a lost race pins the new head and builds again). It returns a frozen
// snapshot of the restored root (as At does) and committed. If the
// current root already has kept's state (it is kept, or an earlier
// restore of it with no commit since), nothing is written: the pinned
// head comes back, and committed is false.
//
// With opts.KeepCurrent the holds are the current root's, as are the
// records of the families it names. Without it, the holds are the union
// of the current root's and kept's (on one owner the current root's
// wins): a hold taken since kept keeps its root, and one kept held
// comes back with the records that describe it. The engine's own
// families come back as kept has them, so command_dedupe forgets the
// requests committed after kept: an exact retry of one of them applies
// again, as a new request.
//
// The writer rule does not hold here, by design: kept's objects are
// neither the parent's nor written by this attempt. Rewriting them under
// new keys would copy the whole state; what keeps them instead is that
// kept is pinned (gcsweep marks every root a pin names, and everything it
// reaches) from before this call until the head write, which
// Options.Guard checks. Once the head names the new root they are
// reachable from it. Kept must belong to this shard, with a sequence
// below the head's, and reach a whole state: unless opts.Verified, a
// strict Check of it runs first, and any finding is ErrKeptDamaged.
func (s *Store) RestoreRoot(ctx context.Context, kept digest.Hash, opts RestoreOptions) (sn *Snapshot, committed bool, err error) {
	for _, f := range opts.KeepCurrent {
		if f == shards.System || f == shards.CommandDedupe || !s.fams.Known(f) {
			return nil, false, fmt.Errorf("head: restore: cannot keep family %#x current", uint8(f))
		}
	}
	old, err := s.loadRoot(ctx, kept)
	if err != nil {
		return nil, false, err
	}
	if !opts.Verified {
		// Committing a root whose objects are gone would serve a broken
		// state; Check reads every object the kept root reaches.
		if err := Check(ctx, s.b, s.layout, kept, CheckOptions{Strict: true}); err != nil {
			if ctx.Err() != nil || errors.Is(err, bucket.ErrUnavailable) || errors.Is(err, bucket.ErrThrottled) {
				return nil, false, fmt.Errorf("head: restore: check root %s: %w", kept, err)
			}
			return nil, false, fmt.Errorf("%w: root %s: %w", ErrKeptDamaged, kept, err)
		}
	}
	for try := 0; ; try++ {
		if try >= 8*s.opts.MaxAttempts {
			return nil, false, fmt.Errorf("%w: restore of root %s lost %d races", ErrRetryable, kept, try)
		}
		if try > 0 {
			if err := s.retry.Wait(ctx, min(try-1, 4), nil); err != nil {
				return nil, false, err
			}
		}
		sn, err := s.Pin(ctx)
		if err != nil {
			return nil, false, err
		}
		if err := sn.gate(ctx); err != nil {
			return nil, false, err
		}
		same, err := s.sameState(ctx, sn.root, old, opts.KeepCurrent)
		if err != nil {
			return nil, false, err
		}
		if sn.rootHash == kept || same {
			return sn, false, nil // already the current state
		}
		keep, err := s.keptChanges(ctx, sn, kept, old, opts.KeepCurrent)
		if err != nil {
			return nil, false, err
		}
		if old.Sequence >= sn.root.Sequence {
			return nil, false, fmt.Errorf("head: restore root %s of sequence %d: the head is at sequence %d", kept, old.Sequence, sn.root.Sequence)
		}
		landed, err := s.restoreAttempt(ctx, sn, old, keep, opts)
		if err != nil {
			return nil, false, err
		}
		if landed != nil {
			return landed, true, nil
		}
	}
}

// restoreAttempt builds the restoring root over sn, stages it and writes
// the head. It returns nil, nil when the head moved first.
func (s *Store) restoreAttempt(ctx context.Context, sn *Snapshot, old *roots.Root, keep []shards.DeltaRecord, opts RestoreOptions) (*Snapshot, error) {
	nonce, now := newNonce(), s.opts.Now()
	root := &roots.Root{
		Nonce:    nonce,
		Parent:   sn.rootHash,
		Sequence: sn.root.Sequence + 1,
		Families: append([]roots.FamilyRef(nil), old.Families...),
		Holds:    unionHolds(sn.root.Holds, old.Holds),
		Deltas:   append([]roots.DeltaRef(nil), old.Deltas...),
	}
	if opts.KeepCurrent != nil {
		root.Holds = append([]roots.Hold(nil), sn.root.Holds...)
	}
	c := &candidate{
		objects: map[digest.Hash]*shards.Object{}, indexes: map[digest.Hash]*shards.Index{},
		tables: map[digest.Hash]*roots.Table{}, deltas: map[digest.Hash]*shards.Delta{},
	}
	if len(keep) > 0 {
		// The kept families' changes back to their current records: one
		// delta of this attempt, listed first. It may take the root one
		// delta past the bound that forces a fold; the next commit folds.
		d, err := shards.NewDelta(s.fams, shards.Salt(nonce), root.Sequence, keep)
		if err != nil {
			return nil, err
		}
		encode := d.Encode
		if s.schema.compresses(sn.Marker()) {
			encode = d.EncodeCompressed
		}
		dbody, dref, err := encode()
		if err != nil {
			return nil, err
		}
		root.Deltas = append([]roots.DeltaRef{{Ref: dref, Sequence: root.Sequence}}, root.Deltas...)
		if len(root.Deltas) > roots.MaxDeltas {
			return nil, fmt.Errorf("head: restore: %d delta segments, more than a root lists", len(root.Deltas))
		}
		c.deltas[dref.Hash] = d
		c.writes = append(c.writes, write{s.layout.Delta(dref.Hash), dbody})
	}
	body, ref, err := root.Encode(s.fams)
	if err != nil {
		return nil, err
	}
	c.writes = append(c.writes, write{s.layout.Root(ref.Hash), body})
	c.root, c.rootRef = root, ref
	c.head = &Head{
		Marker:    sn.head.Marker,
		ShardID:   s.id.String(),
		Sequence:  root.Sequence,
		Root:      ref.Hash.String(),
		RootSize:  ref.Size,
		Nonce:     nonceString(nonce),
		Committed: now.UnixMilli(),
		Recent:    recentNonces(sn.head),
	}
	if c.headBytes, err = s.encodeOwnHead(c.head); err != nil {
		return nil, err
	}
	floor, err := sn.Floor(ctx)
	if err != nil {
		return nil, fmt.Errorf("head: restore: %w", err)
	}
	l := s.newLanding(sn, c, nonce)
	if err := l.stage(ctx, floor); err != nil {
		return nil, fmt.Errorf("head: restore: stage: %w", err)
	}
	if opts.Guard != nil {
		if err := opts.Guard(ctx, floor); err != nil {
			return nil, fmt.Errorf("head: restore: %w", err)
		}
	}
	landed, err := l.settle(ctx)
	if err != nil || !landed {
		return nil, err
	}
	if s.opts.Check {
		if err := s.checkLanded(ctx, ref.Hash); err != nil {
			return nil, fmt.Errorf("head: check after restore %d: %w", root.Sequence, err)
		}
	}
	// Frozen (no head, no version): a later command must pin the head
	// rather than build on this one.
	return &Snapshot{s: s, rootHash: ref.Hash, root: root}, nil
}

// sameState reports whether cur already has old's records, but for the
// families of keep, and its holds: whether a restore of old over cur
// would change nothing that is restored. It holds when cur lists old's
// tables and, after old's deltas, only deltas that change families of
// keep (an earlier restore of old, and commits since that touched only
// what a restore keeps), with the union of holds when keep is nil.
func (s *Store) sameState(ctx context.Context, cur, old *roots.Root, keep []shards.Family) (bool, error) {
	extra := len(cur.Deltas) - len(old.Deltas)
	if !slices.Equal(cur.Families, old.Families) || extra < 0 || !slices.Equal(cur.Deltas[extra:], old.Deltas) {
		return false, nil
	}
	if keep == nil {
		return extra == 0 && slices.Equal(cur.Holds, unionHolds(cur.Holds, old.Holds)), nil
	}
	for _, dr := range cur.Deltas[:extra] {
		d, err := s.loadDelta(ctx, dr)
		if err != nil {
			return false, err
		}
		for i := range d.Len() {
			if !slices.Contains(keep, d.At(i).Family) {
				return false, nil
			}
		}
	}
	return true, nil
}

// keptChanges returns the changes that take the families of keep from
// their records in the kept root back to their records in sn: a put of
// each current record the kept root lacks or holds otherwise, a delete
// of each record only the kept root has. Nil means none.
func (s *Store) keptChanges(ctx context.Context, sn *Snapshot, kept digest.Hash, old *roots.Root, keep []shards.Family) ([]shards.DeltaRecord, error) {
	was := &Snapshot{s: s, rootHash: kept, root: old}
	var out []shards.DeltaRecord
	for _, f := range keep {
		cur, err := sn.Scan(ctx, f, nil, nil, 0)
		if err != nil {
			return nil, err
		}
		then, err := was.Scan(ctx, f, nil, nil, 0)
		if err != nil {
			return nil, err
		}
		i, j := 0, 0
		for i < len(cur) || j < len(then) {
			switch {
			case j == len(then) || i < len(cur) && bytes.Compare(cur[i].Key, then[j].Key) < 0:
				out = append(out, shards.DeltaRecord{Family: f, Mutation: shards.Mutation{Key: cur[i].Key, Value: cur[i].Value}})
				i++
			case i == len(cur) || bytes.Compare(cur[i].Key, then[j].Key) > 0:
				out = append(out, shards.DeltaRecord{Family: f, Mutation: shards.Mutation{Key: then[j].Key, Delete: true}})
				j++
			default:
				if !bytes.Equal(cur[i].Value, then[j].Value) {
					out = append(out, shards.DeltaRecord{Family: f, Mutation: shards.Mutation{Key: cur[i].Key, Value: cur[i].Value}})
				}
				i++
				j++
			}
		}
	}
	return out, nil
}

// unionHolds merges two roots' holds, sorted by owner; on one owner the
// first list's hold wins.
func unionHolds(cur, old []roots.Hold) []roots.Hold {
	out := append([]roots.Hold(nil), cur...)
	taken := map[string]bool{}
	for _, h := range cur {
		taken[h.Owner] = true
	}
	for _, h := range old {
		if !taken[h.Owner] {
			out = append(out, h)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Owner < out[j].Owner })
	return out
}

// WriteHeadAbove is WriteHeadAt for a shard whose bucket holds roots (or
// pins) of sequences up to above, later than kept's: a lost head
// recovered to an older state. It writes a root of sequence above + 1
// that lists kept's tables, deltas and holds by reference, with kept as
// its parent, and creates the head naming it. No root in the bucket is
// then newer than the head, so the abandoned later roots are garbage, not
// the evidence of a head put back (gcsweep.ErrRollback). With above at or
// below kept's sequence it is WriteHeadAt of kept itself.
func WriteHeadAbove(ctx context.Context, b bucket.Bucket, id shards.ShardID, sc Schema, kept digest.Hash, above uint64, committed time.Time) (*Head, error) {
	if err := sc.check(); err != nil {
		return nil, err
	}
	layout := shards.NewLayout(sc.Families, id)
	body, _, err := b.Get(ctx, layout.Root(kept))
	if err != nil {
		return nil, fmt.Errorf("head: write head at %s: read root: %w", id, err)
	}
	old, err := roots.DecodeRoot(sc.Families, body, kept)
	if err != nil {
		return nil, fmt.Errorf("head: write head at %s: %w", id, err)
	}
	if above <= old.Sequence {
		return WriteHeadAt(ctx, b, id, sc, kept, committed)
	}
	r := &roots.Root{
		Nonce:    newNonce(),
		Parent:   kept,
		Sequence: above + 1,
		Families: old.Families,
		Holds:    old.Holds,
		Deltas:   old.Deltas,
	}
	rb, ref, err := r.Encode(sc.Families)
	if err != nil {
		return nil, err
	}
	if _, err := b.Put(ctx, layout.Root(ref.Hash), rb, bucket.Unconditional); err != nil {
		return nil, fmt.Errorf("head: write head at %s: write root: %w", id, err)
	}
	return WriteHeadAt(ctx, b, id, sc, ref.Hash, committed)
}

// WriteHeadAt gives shard id in b a head naming root, which must already
// be in b (its key verified against its hash): the last step of copying
// a kept state to another bucket. The head carries the root's own
// sequence and the nonce of the attempt that wrote it, no recent nonces,
// and committed as its time. It is created only if absent, or in place
// of a genesis head (a shard that holds nothing), conditional on that
// head's version; a head that already names root (an earlier run of the
// same copy) is returned as is, and any other head is ErrHeadExists,
// never overwritten.
func WriteHeadAt(ctx context.Context, b bucket.Bucket, id shards.ShardID, sc Schema, root digest.Hash, committed time.Time) (*Head, error) {
	if err := sc.check(); err != nil {
		return nil, err
	}
	layout := shards.NewLayout(sc.Families, id)
	body, _, err := b.Get(ctx, layout.Root(root))
	if err != nil {
		return nil, fmt.Errorf("head: write head at %s: read root: %w", id, err)
	}
	r, err := roots.DecodeRoot(sc.Families, body, root)
	if err != nil {
		return nil, fmt.Errorf("head: write head at %s: %w", id, err)
	}
	m, err := rootMarker(ctx, b, id, sc, root)
	if err != nil {
		return nil, fmt.Errorf("head: write head at %s: %w", id, err)
	}
	h := &Head{
		Format:    sc.headFormat(m),
		Marker:    m,
		ShardID:   id.String(),
		Sequence:  r.Sequence,
		Root:      root.String(),
		RootSize:  int64(len(body)),
		Nonce:     nonceString(r.Nonce),
		Committed: committed.UnixMilli(),
		Recent:    []string{},
		Carrier:   sc.headFormat(m) != HeadFormat,
	}
	hb, err := encodeHead(h)
	if err != nil {
		return nil, err
	}
	_, err = b.Put(ctx, layout.Head(), hb, bucket.IfAbsent())
	if err == nil {
		return h, nil
	}
	if !errors.Is(err, bucket.ErrPrecondition) && !errors.Is(err, bucket.ErrAmbiguous) {
		return nil, fmt.Errorf("head: write head at %s: %w", id, err)
	}
	// A head is there: ours from an earlier run (or a write whose answer
	// was lost), a genesis head (a shard whose first write stopped before
	// its first commit: it holds nothing, and the copy takes its place,
	// conditional on its version, so that a commit racing the copy and
	// the copy cannot both land), or another.
	for range 2 {
		got, attrs, rerr := ReadHead(ctx, b, layout, sc.Marker)
		if rerr != nil {
			return nil, fmt.Errorf("head: write head at %s: %w (read back: %w)", id, err, rerr)
		}
		if got.RootHash() == root && !got.Genesis() {
			return got, nil
		}
		if !got.Genesis() {
			return nil, fmt.Errorf("%w: shard %s names root %s at sequence %d, want %s", ErrHeadExists, id, got.RootHash(), got.Sequence, root)
		}
		if _, err = b.Put(ctx, layout.Head(), hb, bucket.IfVersion(attrs.Version)); err == nil {
			return h, nil
		}
		if !errors.Is(err, bucket.ErrPrecondition) && !errors.Is(err, bucket.ErrAmbiguous) {
			return nil, fmt.Errorf("head: write head at %s: replace the genesis head: %w", id, err)
		}
	}
	return nil, fmt.Errorf("head: write head at %s: the head keeps changing: %w", id, err)
}

// rootMarker returns the marker root's schema record holds, one sc
// reads: the formats of the shard, which a head naming root carries.
func rootMarker(ctx context.Context, b bucket.Bucket, id shards.ShardID, sc Schema, root digest.Hash) (Marker, error) {
	s, err := Open(ctx, b, id, sc, Options{})
	if err != nil {
		return Marker{}, err
	}
	defer s.Close()
	sn, err := s.At(ctx, root)
	if err != nil {
		return Marker{}, err
	}
	v, ok, err := sn.get(ctx, shards.System, SchemaKey)
	var m Marker
	if err == nil && (!ok || manifests.DecodeStrict(v, &m) != nil || !sc.Marker.reads(m)) {
		err = fmt.Errorf("%w: root %s: schema record %q", ErrSchemaMismatch, root, v)
	}
	return m, err
}

// CheckHeadAt says whether WriteHeadAt could give shard id in b a head
// naming root, without writing anything: nil and no error when the shard
// has no head, the head when it names root already, ErrHeadExists when
// it names another root, and the decode error (ErrSchemaMismatch,
// ErrBadHead, ErrOldFormat) for a head that is not one of sc's. A copy
// calls it before it writes anything, so that a copy that will be
// refused leaves the destination as it was.
func CheckHeadAt(ctx context.Context, b bucket.Bucket, id shards.ShardID, sc Schema, root digest.Hash) (*Head, error) {
	if err := sc.check(); err != nil {
		return nil, err
	}
	layout := shards.NewLayout(sc.Families, id)
	got, _, err := ReadHead(ctx, b, layout, sc.Marker)
	if errors.Is(err, ErrNoHead) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("head: check head at %s: %w", id, err)
	}
	if got.Genesis() {
		return nil, nil // holds nothing: a copy takes its place (WriteHeadAt)
	}
	if gotRoot := got.RootHash(); gotRoot != root {
		return nil, fmt.Errorf("%w: shard %s names root %s at sequence %d, want %s", ErrHeadExists, id, gotRoot, got.Sequence, root)
	}
	return got, nil
}
