package head

import (
	"context"
	"slices"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/roots"
)

// A prepared fold is a fold into the base built and staged beside the
// group commits, so that the commands waiting never wait for one: it
// folds every delta of a root it pins, writes its shard objects, page
// indexes and tables (not its root), and is made current by the next
// commit whose parent still has the same base and still lists those
// deltas, last (installable): that commit lists the fold's tables, the
// parent's newer deltas and its own. A fold whose base changed meanwhile
// (another replica folded, or this one had to, the deltas past
// pendingDeltaFactor times the bounds) is dropped; its objects, named by
// no root, are a sweep's to delete.
//
// Its objects are named by a commit that did not write them, so the
// collection horizon must cover them as it covers an attempt's own: the
// installing commit checks their oldest store stamp against its own floor
// (horizon.go), and a fold older than that, or than MaxAttemptAge on the
// local clock, is dropped instead.
type preparedFold struct {
	seq    uint64            // the sequence of the root it folded
	base   []roots.FamilyRef // that root's families: the base it folded into
	folded []roots.DeltaRef  // that root's deltas, newest first: all folded
	c      *candidate        // its root's families, its objects and what it superseded; its writes were staged
	staged time.Time         // when its staging began, on the local clock
	oldest time.Time         // the oldest store stamp of what it staged
}

// pendingDeltaFactor is the hard bound on a root's delta bytes, in
// Options.MaxDeltaBytes, while a fold is prepared: a commit lists its
// delta up to it instead of folding (buildDelta), since the fold being
// prepared will take the deltas soon. Twice without one; the count's
// bound stays twice MaxDeltas, within what a root may list.
const pendingDeltaFactor = 4

// foldPending reports whether a fold is being prepared or waits to be
// installed.
func (s *Store) foldPending() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.preparing || s.prepared != nil
}

// foldInline reports whether the leader's fold call, finding no prepared
// fold to install, folds the deltas itself: when its fold is due
// (folding: many deltas, see noticeDeltas) or no fold is being prepared
// or waits. A fold call also comes from a prepared fold handing itself
// to the leader, and a commit of the batch before may have installed
// that fold already, with a new one started on the deltas that followed:
// folding those inline would hold the commands riding along for seconds
// and change the base the new fold is built on, dropping it, after
// which its own hand-off found nothing to install and folded inline
// again. The hard bounds still hold: a commit past them folds
// (buildDelta).
func (s *Store) foldInline() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.folding || !s.preparing && s.prepared == nil
}

// prepareFold builds and stages a fold of the current root's deltas and,
// if it succeeds, hands it to the leader (starting one if none runs) to
// install. Any failure drops it: the deltas stay, and the next commit
// notices them again.
func (s *Store) prepareFold() {
	var pf *preparedFold
	defer func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.preparing = false
		if pf == nil || s.closed {
			return
		}
		s.prepared = pf
		s.foldDue = true // the leader installs it even if no command comes
		s.startLeader()
	}()
	ctx, cancel := context.WithTimeout(s.stop, s.opts.MaxAttemptAge)
	defer cancel()
	sn, err := s.Pin(ctx)
	if err != nil || sn.root == nil || !s.overDeltas(sn.root, 1) {
		return
	}
	floor, err := sn.Floor(ctx)
	if err != nil {
		return
	}
	nonce := newNonce()
	c, err := s.build(ctx, sn, newBatchState(s.fams), nonce, foldBase, s.opts.Now(), nil)
	if err != nil {
		return
	}
	rootKey := s.layout.Root(c.rootRef.Hash) // the installing commit writes its own
	c.writes = slices.DeleteFunc(c.writes, func(w write) bool { return w.key == rootKey })
	l := s.newLanding(sn, c, nonce)
	l.background = true
	if err := l.stage(ctx, floor); err != nil {
		return
	}
	if l.durable != nil {
		// The installing commit's head write syncs its own group only.
		if err := l.durable.Sync(ctx); err != nil {
			return
		}
	}
	pf = &preparedFold{
		seq: sn.head.Sequence, base: sn.root.Families, folded: sn.root.Deltas,
		c: c, staged: l.staged, oldest: l.oldest,
	}
}

// installable returns the prepared fold a commit built on sn may install
// (nil if none): one whose base is sn's and whose folded deltas are the
// last sn lists, staged within MaxAttemptAge and stamped by the store at
// or after floor, the commit's. A fold that sn, newer than the root it
// folded, shows can never be installed is dropped.
func (s *Store) installable(sn *Snapshot, floor time.Time) *preparedFold {
	s.mu.Lock()
	defer s.mu.Unlock()
	pf := s.prepared
	if pf == nil || sn.root == nil {
		return nil
	}
	n, k := len(sn.root.Deltas), len(pf.folded)
	fits := slices.Equal(sn.root.Families, pf.base) && n >= k && slices.Equal(sn.root.Deltas[n-k:], pf.folded)
	fresh := time.Since(pf.staged) < s.opts.MaxAttemptAge && (pf.oldest.IsZero() || !pf.oldest.Before(floor))
	switch {
	case fits && fresh:
		return pf
	case !fresh || sn.head.Sequence > pf.seq:
		s.prepared = nil
		s.counters.dropped.Add(1)
	}
	return nil
}

// FoldsSettled waits until no fold of this Store is being prepared or
// waits to be installed, or ctx ends: a benchmark that has just loaded a
// store measures what comes next without the load's last fold.
func (s *Store) FoldsSettled(ctx context.Context) error {
	for {
		s.mu.Lock()
		busy := (s.preparing || s.prepared != nil || s.folding) && !s.closed
		s.mu.Unlock()
		if !busy {
			return nil
		}
		if err := bucket.Sleep(ctx, 5*time.Millisecond); err != nil {
			return err
		}
	}
}

// installedFold forgets the prepared fold f once a commit that installed
// it has landed.
func (s *Store) installedFold(f *preparedFold) {
	if f == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared == f {
		s.prepared = nil
	}
}
