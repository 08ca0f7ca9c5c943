package head

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Command is one request against the shard: a pure function of (pinned
// snapshot, request) to (mutations, result). It may run several times.
type Command struct {
	// Namespace is the RootId the request belongs to; with RequestID it
	// forms the command_dedupe key.
	Namespace [16]byte
	// RequestID, if set, makes the command exactly-once: an exact retry
	// (same Digest) replays the stored result, a reuse with another Digest
	// fails with ErrRequestReused.
	RequestID string
	// Digest identifies the command's exact inputs.
	Digest [32]byte
	// Apply runs the command. A non-nil error applies none of its
	// mutations and is returned to the caller as is; the result bytes are
	// stored for replay when RequestID is set.
	Apply func(tx *Tx) ([]byte, error)
	// At, if set, is a snapshot of this Store the caller pinned after its
	// request began (typically the one it read to check its predicates).
	// The first attempt builds on it, or on a newer snapshot the Store
	// holds, instead of reading the head: the conditional head write
	// proves the snapshot was still current, and a lost race rebuilds from
	// a fresh pin. A frozen snapshot (Store.At) is ignored.
	At *Snapshot
}

// Result is a committed (or replayed) command's outcome.
type Result struct {
	Value    []byte
	Sequence uint64 // the commit that applied it (or the pinned one, for a command that wrote nothing)
	Replayed bool   // an exact retry answered from the dedupe family
}

// Do runs cmd and commits its mutations with one CAS of the head, shared
// with concurrent commands of this Store unless NoGroupCommit is set. It
// returns cmd's own error if its predicates failed, ErrRetryable if it did
// not commit within the attempt budget, or ErrUnknownOutcome if its commit
// could not be confirmed either way.
func (s *Store) Do(ctx context.Context, cmd Command) (Result, error) {
	c := &call{ctx: ctx, cmd: cmd, done: make(chan struct{})}
	if s.opts.NoGroupCommit {
		s.commitBatch([]*call{c}, nil)
		return c.res, c.err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return Result{}, ErrClosed
	}
	s.queue = append(s.queue, c)
	if !s.leader {
		s.leader = true
		go s.lead()
	}
	s.mu.Unlock()
	select {
	case <-c.done:
		return c.res, c.err
	case <-ctx.Done():
		// The command may still commit; a retry with its request id
		// finds out.
		return Result{}, ctx.Err()
	}
}

type call struct {
	ctx  context.Context
	cmd  Command
	fold bool // the Store's own fold: no command, see runFold
	done chan struct{}
	once sync.Once
	res  Result
	err  error
}

func (c *call) finish(r Result, err error) {
	c.once.Do(func() {
		c.res, c.err = r, err
		close(c.done)
	})
}

func (c *call) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// lead runs group commits until the queue is empty.
func (s *Store) lead() {
	for {
		s.pace()
		if s.takeFold() {
			s.runFold()
			continue
		}
		batch := s.take(s.opts.MaxBatch)
		if batch == nil {
			return
		}
		s.commitBatch(batch, s.take)
	}
}

// take removes up to n calls from the queue. When the queue is empty (or
// the store closed) it returns nil and ends the leader's turn.
func (s *Store) take(n int) []*call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 || s.closed || n <= 0 {
		if n > 0 {
			s.leader = false
		}
		return nil
	}
	n = min(len(s.queue), n)
	batch := append([]*call(nil), s.queue[:n]...)
	s.queue = s.queue[n:]
	return batch
}

// pace waits until MinCommitInterval has passed since this Store's last
// landed commit, letting commands gather into the next group meanwhile.
func (s *Store) pace() {
	s.mu.Lock()
	wait := s.opts.MinCommitInterval - time.Since(s.lastCommit)
	s.mu.Unlock()
	if s.opts.MinCommitInterval > 0 && wait > 0 {
		time.Sleep(wait)
	}
}

// takeMore is refill that never ends the leader's turn: the leader is
// still busy with the batch.
func (s *Store) takeMore(refill func(int) []*call, n int) []*call {
	s.mu.Lock()
	empty := len(s.queue) == 0
	s.mu.Unlock()
	if empty || n <= 0 {
		return nil
	}
	return refill(n)
}

// batchContext is cancelled once every call's own context has ended.
func batchContext(batch []*call) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	live := len(batch)
	stops := make([]func() bool, len(batch))
	for i, c := range batch {
		stops[i] = context.AfterFunc(c.ctx, func() {
			mu.Lock()
			live--
			if live == 0 {
				cancel()
			}
			mu.Unlock()
		})
	}
	return ctx, func() {
		for _, stop := range stops {
			stop()
		}
		cancel()
	}
}

// outcome is a command's result in one attempt, delivered only once the
// attempt's outcome is known.
type outcome struct {
	res Result
	err error
}

// commitBatch runs the calls as one group commit until each is finished.
// refill, if not nil, adds commands queued meanwhile to a batch that must
// retry, so that a group commit carries everything waiting.
func (s *Store) commitBatch(calls []*call, refill func(n int) []*call) {
	ctx, cancel := batchContext(calls)
	defer func() { cancel() }()
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 && attempt < s.opts.MaxAttempts && refill != nil {
			calls = slices.DeleteFunc(calls, (*call).finished)
			if more := s.takeMore(refill, s.opts.MaxBatch-len(calls)); len(more) > 0 {
				calls = append(calls, more...)
				cancel()
				ctx, cancel = batchContext(calls)
			}
		}
		if attempt >= s.opts.MaxAttempts {
			for _, c := range calls {
				c.finish(Result{}, fmt.Errorf("%w after %d attempts: %w", ErrRetryable, attempt, lastErr))
			}
			return
		}
		if ctx.Err() != nil {
			for _, c := range calls {
				err := c.ctx.Err() // the caller's own reason, when it has one
				if err == nil {
					err = ctx.Err()
				}
				c.finish(Result{}, err)
			}
			return
		}
		done, err := s.attempt(ctx, calls, attempt == 0)
		if done {
			return
		}
		lastErr = err
		if err := s.retry.Wait(ctx, attempt, err); err != nil {
			continue // the next pass finishes the calls with ctx.Err()
		}
	}
}

// attempt pins, applies every call, and commits. It reports done when
// every call is finished; otherwise the batch is retried after a wait that
// err (throttled or not) decides. A first attempt may build on a snapshot
// a call brought instead of pinning (observed).
func (s *Store) attempt(ctx context.Context, calls []*call, first bool) (done bool, err error) {
	var sn *Snapshot
	reused := false
	if first {
		sn = s.observed(calls)
		reused = sn != nil
	}
	if sn == nil {
		sn, err = s.pinOrInitialize(ctx)
	}
	if err != nil {
		if bucket.Transient(err) {
			return false, err
		}
		for _, c := range calls {
			c.finish(Result{}, err)
		}
		return true, nil
	}
	state := newBatchState(s.fams)
	outs := make([]outcome, len(calls))
	now := s.opts.Now()
	seq := sn.head.Sequence + 1
	fold := false
	for i, c := range calls {
		if err := c.ctx.Err(); err != nil {
			outs[i] = outcome{err: err}
			continue
		}
		if c.fold {
			fold = s.overDeltas(sn.root, 1)
			continue
		}
		outs[i] = s.apply(ctx, sn, state, c.cmd, seq, now)
	}
	if state.empty() && !fold {
		if reused {
			// Nothing to commit, so no head write validates a snapshot
			// that may predate a call: decide again at a fresh pin.
			return s.attempt(ctx, calls, false)
		}
		// Nothing to commit: every outcome holds at the pinned head, which
		// was read after each call arrived.
		for i, c := range calls {
			if outs[i].err == nil && !outs[i].res.Replayed {
				outs[i].res.Sequence = sn.head.Sequence
			}
			c.finish(outs[i].res, outs[i].err)
		}
		return true, nil
	}
	nonce := newNonce()
	cand, err := s.build(ctx, sn, state, nonce, fold, now)
	if err != nil {
		for _, c := range calls {
			c.finish(Result{}, err)
		}
		return true, nil
	}
	cand.head = &Head{
		Marker:    s.schema.Marker,
		ShardID:   s.id.String(),
		Sequence:  seq,
		Root:      cand.rootRef.Hash.String(),
		RootSize:  cand.rootRef.Size,
		Nonce:     nonceString(nonce),
		Committed: now.UnixMilli(),
		Recent:    recentNonces(sn.head),
	}
	if cand.headBytes, err = encodeHead(cand.head); err != nil {
		for _, c := range calls {
			c.finish(Result{}, err)
		}
		return true, nil
	}
	staged := time.Now()
	if err := s.stage(ctx, cand); err != nil {
		return false, err
	}
	if time.Since(staged) > s.opts.MaxAttemptAge {
		return false, fmt.Errorf("head: staging took %v, more than %v", time.Since(staged), s.opts.MaxAttemptAge)
	}
	landed, err := s.cas(ctx, sn, cand, nonce, staged)
	if err != nil {
		for _, c := range calls {
			c.finish(Result{}, err)
		}
		return true, nil
	}
	if !landed {
		return false, fmt.Errorf("head: lost the race for sequence %d", seq)
	}
	s.noticeDeltas(cand.root)
	if s.opts.Check {
		if err := s.checkLanded(ctx, cand.rootRef.Hash); err != nil {
			for _, c := range calls {
				c.finish(Result{}, fmt.Errorf("head: check after commit %d: %w", seq, err))
			}
			return true, nil
		}
	}
	for i, c := range calls {
		c.finish(outs[i].res, outs[i].err)
	}
	return true, nil
}

// observed returns the snapshot a first attempt may build on instead of
// reading the head: the newest of those the calls brought (Command.At) and
// the newest this Store holds, or nil when no call brought one. Building
// on it is safe for the same reason a rebuilt attempt is: the head write
// is conditional on its version, so the commit lands only if it is still
// current, and the outcomes then hold at the commit. A commit that has
// nothing to write validates nothing, so attempt pins again then.
func (s *Store) observed(calls []*call) *Snapshot {
	var sn *Snapshot
	for _, c := range calls {
		if at := c.cmd.At; at != nil && at.s == s && at.head != nil && (sn == nil || at.head.Sequence > sn.head.Sequence) {
			sn = at
		}
	}
	if sn == nil {
		return nil
	}
	s.mu.Lock()
	latest := s.latest
	s.mu.Unlock()
	if latest != nil && latest.head.Sequence > sn.head.Sequence {
		sn = latest
	}
	return sn
}

// checkLanded runs the strict Check of Options.Check on a root that has
// landed. Check only reads, so a run that fails transiently (or meets
// damaged bytes, which a flaky network can return) is repeated a few
// times, and only a finding that persists fails the commands.
func (s *Store) checkLanded(ctx context.Context, root digest.Hash) error {
	p := s.retry
	p.Attempts = checkAttempts
	return bucket.Retry(ctx, p, func(ctx context.Context) error {
		return Check(ctx, s.b, s.layout, root, CheckOptions{Strict: true})
	})
}

// Tries of the requests a commit repeats on a transient failure.
const (
	checkAttempts = 5 // runs of Check after a commit
	putAttempts   = 4 // writes of one new immutable object
)

// apply runs one command on top of the batch so far.
func (s *Store) apply(ctx context.Context, sn *Snapshot, state *batchState, cmd Command, seq uint64, now time.Time) outcome {
	var dkey []byte
	if cmd.RequestID != "" {
		dkey = append(append([]byte(nil), cmd.Namespace[:]...), cmd.RequestID...)
		v, ok, err := (&Tx{ctx: ctx, sn: sn, base: state, own: newBatchState(s.fams)}).Get(shards.CommandDedupe, dkey)
		if err != nil {
			return outcome{err: err}
		}
		if ok {
			return replay(v, cmd)
		}
	}
	tx := &Tx{ctx: ctx, sn: sn, base: state, own: newBatchState(s.fams), seq: seq, now: now}
	val, err := cmd.Apply(tx)
	if err != nil {
		return outcome{err: err}
	}
	if dkey != nil {
		if err := tx.own.put(shards.CommandDedupe, dkey, encodeDedupe(cmd.Digest, seq, val)); err != nil {
			return outcome{err: err}
		}
	}
	state.merge(tx.own)
	return outcome{res: Result{Value: val, Sequence: seq}}
}

// The dedupe record: version 1 | command digest [32] | sequence u64 | result.
const dedupeFormat = 1

func encodeDedupe(cmdDigest [32]byte, seq uint64, result []byte) []byte {
	return wire.NewWriter(make([]byte, 0, 1+32+8+len(result))).
		U8(dedupeFormat).Raw(cmdDigest[:]).U64(seq).Raw(result).Bytes()
}

// dedupeExpired is the engine's expiry rule for command_dedupe (see
// Options.DedupeWindow): a record written more than at.DedupeWindow
// commits before the fold that asks. Its age comes from the commit
// sequence the record carries, so every attempt of a fold agrees. A
// record that does not decode never expires: replay and Check report it.
func dedupeExpired(_, v []byte, at shards.ExpiryClock) bool {
	r := wire.NewReader(v)
	format := r.U8()
	r.Take(32) // the command digest
	seq := r.U64()
	if r.Err() != nil || format != dedupeFormat {
		return false
	}
	return seq < at.Sequence && at.Sequence-seq > at.DedupeWindow
}

func replay(v []byte, cmd Command) outcome {
	r := wire.NewReader(v)
	format := r.U8()
	var cmdDigest [32]byte
	r.Copy(cmdDigest[:])
	seq := r.U64()
	result := r.Take(r.Len())
	if r.Err() != nil || format != dedupeFormat {
		return outcome{err: fmt.Errorf("head: dedupe record of %q: %w", cmd.RequestID, bucket.ErrIntegrity)}
	}
	if cmdDigest != cmd.Digest {
		return outcome{err: fmt.Errorf("%w: %q", ErrRequestReused, cmd.RequestID)}
	}
	return outcome{res: Result{Value: bytes.Clone(result), Sequence: seq, Replayed: true}}
}

// candidate is an attempt's staged state: the objects to write, then the
// head that commits them.
type candidate struct {
	writes    []write
	root      *roots.Root
	rootRef   shards.Ref
	head      *Head
	headBytes []byte
	objects   map[digest.Hash]*shards.Object
	indexes   map[digest.Hash]*shards.Index
	tables    map[digest.Hash]*roots.Table
	deltas    map[digest.Hash]*shards.Delta
}

type write struct {
	key  string
	body []byte
}

// build computes the candidate root of state applied to sn (nil for the
// first root). Unless fold is set, the batch's record changes become one
// new delta segment that the root lists first, before the parent's, and
// the parent's tables are kept; if that root would list more than twice
// Options.MaxDeltas deltas or twice Options.MaxDeltaBytes of them, build
// folds instead. A fold applies the union of the parent's deltas and the
// batch (the newest change of a key wins) to the base: new shard objects
// for the shards it changes, new tables for the families it changes, and
// a root with no deltas; it leaves out of every object it rewrites the
// records that have expired at its sequence and at now, the commit's
// time (see expiry). Nothing is written.
func (s *Store) build(ctx context.Context, sn *Snapshot, state *batchState, nonce roots.Nonce, fold bool, now time.Time) (*candidate, error) {
	if sn != nil {
		if err := sn.gate(ctx); err != nil { // nothing is committed past a failed gate
			return nil, err
		}
	}
	c := &candidate{objects: map[digest.Hash]*shards.Object{}, indexes: map[digest.Hash]*shards.Index{}, tables: map[digest.Hash]*roots.Table{}, deltas: map[digest.Hash]*shards.Delta{}}
	root := &roots.Root{Nonce: nonce, Sequence: 1}
	if sn != nil {
		root.Parent = sn.rootHash
		root.Sequence = sn.root.Sequence + 1
		root.Families = append(root.Families, sn.root.Families...)
		root.Holds = append(root.Holds, sn.root.Holds...)
		root.Deltas = append(root.Deltas, sn.root.Deltas...)
	}
	if !fold {
		ok, err := s.buildDelta(state, nonce, root, c)
		if err != nil {
			return nil, err
		}
		fold = !ok
	}
	if fold {
		muts, err := s.foldDeltas(ctx, sn, state)
		if err != nil {
			return nil, err
		}
		root.Deltas = nil
		at := shards.ExpiryClock{Sequence: root.Sequence, Time: now, DedupeWindow: s.opts.DedupeWindow}
		if err := s.buildBase(ctx, sn, muts, nonce, root, c, at); err != nil {
			return nil, err
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
	if err := s.checkWriterRule(ctx, sn, c); err != nil {
		return nil, err
	}
	return c, nil
}

// buildDelta makes the batch's record changes one delta segment, listed
// first in root. It reports false, changing nothing, when the root would
// then exceed the hard bounds (twice MaxDeltas or MaxDeltaBytes): the
// commit must fold. A batch without record changes writes no delta.
func (s *Store) buildDelta(state *batchState, nonce roots.Nonce, root *roots.Root, c *candidate) (bool, error) {
	var recs []shards.DeltaRecord
	for f, m := range state.muts {
		for _, mut := range m {
			recs = append(recs, shards.DeltaRecord{Family: f, Mutation: mut})
		}
	}
	if len(recs) == 0 {
		return true, nil
	}
	d, err := shards.NewDelta(s.fams, shards.Salt(nonce), root.Sequence, recs)
	if err != nil {
		return false, err
	}
	body, ref, err := d.Encode()
	if err != nil {
		return false, err
	}
	deltas := append([]roots.DeltaRef{{Ref: ref, Sequence: root.Sequence}}, root.Deltas...)
	if s.overDeltas(&roots.Root{Deltas: deltas}, 2) {
		return false, nil
	}
	root.Deltas = deltas
	c.deltas[ref.Hash] = d
	c.writes = append(c.writes, write{s.layout.Delta(ref.Hash), body})
	return true, nil
}

// overDeltas reports whether r lists more than factor × MaxDeltas delta
// segments or more than factor × MaxDeltaBytes of them: factor 1 asks
// for a fold in the background, factor 2 forces one inline.
func (s *Store) overDeltas(r *roots.Root, factor int) bool {
	return len(r.Deltas) > factor*s.opts.MaxDeltas || r.DeltaBytes() > int64(factor)*s.opts.MaxDeltaBytes
}

// foldDeltas returns the union of the record changes of sn's delta
// segments and of state, the newest change of each key winning: what a
// fold applies to the base. The same root and batch always give the same
// union.
func (s *Store) foldDeltas(ctx context.Context, sn *Snapshot, state *batchState) (*batchState, error) {
	if sn == nil || len(sn.root.Deltas) == 0 {
		return state, nil
	}
	ds, err := sn.loadDeltas(ctx)
	if err != nil {
		return nil, err
	}
	merged := newBatchState(s.fams)
	for i := len(ds) - 1; i >= 0; i-- { // oldest first, so newer changes overwrite
		for j := range ds[i].Len() {
			r := ds[i].At(j)
			m := merged.muts[r.Family]
			if m == nil {
				m = map[string]shards.Mutation{}
				merged.muts[r.Family] = m
			}
			m[string(r.Key)] = r.Mutation
		}
	}
	merged.merge(&batchState{muts: state.muts})
	return merged, nil
}

// buildBase applies muts to sn's base: new shard objects for the shards
// they change and new tables for the families they change, entered into
// root. The records expired at at are left out of every object it writes.
func (s *Store) buildBase(ctx context.Context, sn *Snapshot, muts *batchState, nonce roots.Nonce, root *roots.Root, c *candidate, at shards.ExpiryClock) error {
	fams := make([]shards.Family, 0, len(muts.muts))
	for f := range muts.muts {
		fams = append(fams, f)
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i] < fams[j] })
	for _, f := range fams {
		fr, ok, err := s.buildFamily(ctx, sn, f, muts.sorted(f), nonce, c, s.expiry(f, at))
		if err != nil {
			return err
		}
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
		if sn != nil && (h.Root == sn.rootHash || heldBy(sn.root, h.Root)) {
			continue
		}
		return fmt.Errorf("%w: hold %q names root %s, neither the parent nor held by it", ErrWriterRule, h.Owner, h.Root)
	}
	return nil
}

// checkEntryRule applies the writer rule to entry e of a table this
// attempt wrote: it is exactly the parent table's entry for its shard, or
// a shard object this attempt wrote, or a page index this attempt wrote
// whose every page is one this attempt wrote or one the parent's index of
// that shard names (the same reference).
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
		if written[s.layout.Shard(f, e.Shard, e.Ref.Hash)] {
			return nil
		}
		return fmt.Errorf("%w: %s shard %02x %s is neither written by this attempt nor the parent's", ErrWriterRule, f, e.Shard, e.Ref.Hash)
	}
	x := c.indexes[e.Ref.Hash]
	if x == nil || !written[s.layout.Index(f, e.Shard, e.Ref.Hash)] || x.Family() != f || x.Shard() != e.Shard {
		return fmt.Errorf("%w: %s index %02x %s is neither written by this attempt nor the parent's", ErrWriterRule, f, e.Shard, e.Ref.Hash)
	}
	var kept map[digest.Hash]shards.Ref
	if inParent && pe.Index {
		px, err := s.loadIndex(ctx, f, pe.Shard, pe.Ref)
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

// stage writes the candidate's objects, all at once: they are immutable
// and nothing references them until the head does.
func (s *Store) stage(ctx context.Context, c *candidate) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.opts.StageConcurrency)
	for _, w := range c.writes {
		g.Go(func() error { return s.putImmutable(gctx, w.key, w.body) })
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for h, o := range c.objects {
		s.objects.Add(h, o)
	}
	for h, x := range c.indexes {
		s.indexes.Add(h, x)
	}
	for h, t := range c.tables {
		s.tables.Add(h, t)
	}
	for h, d := range c.deltas {
		s.deltas.Add(h, d)
	}
	s.roots.Add(c.rootRef.Hash, c.root)
	return nil
}

// putImmutable writes a new immutable object, retrying what a retry cannot
// make worse: the key is new and its bytes are fixed.
func (s *Store) putImmutable(ctx context.Context, key string, body []byte) error {
	p := s.retry
	p.Attempts = putAttempts
	return bucket.Retry(ctx, p, func(ctx context.Context) error {
		_, err := s.b.Put(ctx, key, body, bucket.Unconditional)
		return err
	})
}

// cas writes the candidate head conditional on the pinned one and learns
// whether it landed. A precondition failure, an ambiguous outcome or an
// unreachable store is never taken at face value: the head is read again,
// and the attempt's nonce in it, in its recent nonces or in the chain of
// roots back to the pinned sequence means it landed. While the head has not
// moved, the identical candidate is written again (never a rebuilt one: a
// write of this attempt that is still in flight could land late, and only
// this attempt's head can land on the pinned version). Once the head has
// moved past the pinned version without the nonce, no write of this
// attempt can land any more, and cas reports not landed. It returns an
// error only when the outcome stays unknown.
func (s *Store) cas(ctx context.Context, sn *Snapshot, c *candidate, nonce roots.Nonce, staged time.Time) (landed bool, err error) {
	want := nonceString(nonce)
	var lastErr error
	sent := false // a write of this attempt may have taken effect
	for try := 0; try < s.opts.MaxAttempts; try++ {
		if try > 0 {
			if !sent && time.Since(staged) > s.opts.MaxAttemptAge {
				return false, nil // nothing of this attempt can land; rebuild
			}
			if berr := s.retry.Wait(ctx, try-1, lastErr); berr != nil {
				break
			}
		}
		attrs, err := s.b.Put(ctx, s.layout.Head(), c.headBytes, bucket.IfVersion(sn.version))
		if err == nil {
			s.remember(&Snapshot{s: s, head: c.head, version: attrs.Version, rootHash: c.rootRef.Hash, root: c.root})
			s.mu.Lock()
			s.lastCommit = time.Now()
			s.mu.Unlock()
			return true, nil
		}
		lastErr = err
		if errors.Is(err, bucket.ErrThrottled) && !sent {
			continue // refused before it took effect; the head may still be ours to write
		}
		sent = sent || !errors.Is(err, bucket.ErrThrottled)
		cur, rerr := s.Pin(ctx)
		if rerr != nil {
			lastErr = rerr
			continue
		}
		if _, ok := cur.head.landedIn(want); ok {
			s.mu.Lock()
			s.lastCommit = time.Now()
			s.mu.Unlock()
			return true, nil
		}
		if cur.head.Sequence <= sn.head.Sequence {
			continue // the head has not moved: write the same candidate again
		}
		// The head moved past the pinned version without our nonce in it
		// or its recent nonces. They cover the last len(Recent)+1
		// commits; beyond them the chain of roots tells.
		if cur.head.Sequence-(sn.head.Sequence+1) <= uint64(len(cur.head.Recent)) {
			return false, nil
		}
		ok, werr := s.landedInChain(ctx, cur, sn.head.Sequence+1, nonce)
		if werr == nil {
			return ok, nil
		}
		lastErr = werr
	}
	if !sent {
		return false, nil
	}
	return false, fmt.Errorf("%w: sequence %d (%v)", ErrUnknownOutcome, sn.head.Sequence+1, lastErr)
}

// landedInChain walks back from cur's root to the root of sequence seq and
// reports whether the attempt of nonce wrote it.
func (s *Store) landedInChain(ctx context.Context, cur *Snapshot, seq uint64, nonce roots.Nonce) (bool, error) {
	r := cur.root
	for r.Sequence > seq {
		var err error
		if r, err = s.loadRoot(ctx, r.Parent); err != nil {
			return false, err
		}
	}
	return r.Sequence == seq && r.Nonce == nonce, nil
}

// Digest is a helper for command digests: the SHA-256 of its parts, each
// length-prefixed so that no two part lists collide.
func Digest(parts ...[]byte) [32]byte {
	h := sha256.New()
	var frame [8]byte
	for _, p := range parts {
		h.Write(wire.NewWriter(frame[:0]).U64(uint64(len(p))).Bytes())
		h.Write(p)
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// noticeDeltas schedules a fold when r, a root this Store just committed,
// lists more deltas than Options.MaxDeltas or more bytes of them than
// Options.MaxDeltaBytes. At most one fold of a Store is pending at a time.
// With group commit the leader runs it between batches; without, it runs
// on a goroutine of its own.
func (s *Store) noticeDeltas(r *roots.Root) {
	if !s.overDeltas(r, 1) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.folding || s.closed {
		return
	}
	s.folding = true
	if s.opts.NoGroupCommit {
		go s.runFold()
	} else {
		s.foldDue = true
	}
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

// runFold folds the deltas of the current root into the base in a commit
// of its own, with no command: it pins, builds in fold mode, stages and
// writes the head like any commit, and retries on a lost race, so it is
// linearizable and a race it loses is harmless. If by the time it pins the
// root is back within the bounds (another replica folded), it writes
// nothing. A failed fold leaves the deltas for the next commit to notice.
func (s *Store) runFold() {
	defer func() {
		s.mu.Lock()
		s.folding = false
		s.mu.Unlock()
	}()
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.MaxAttemptAge)
	defer cancel()
	c := &call{ctx: ctx, fold: true, done: make(chan struct{})}
	s.commitBatch([]*call{c}, nil)
}
