package head

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/semaphore"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/roots"
)

// Landing a candidate: staging its objects, the conditional head write
// and the reconciliation of an ambiguous one.

// A landing is one candidate head on its way to the bucket: its objects
// staged (stage), then the head written once, conditional on the pinned
// version (put), an ambiguous or refused write reconciled against the
// head read again (cas), and a caller that gives up still told whether it
// landed (settle). It is the one conditional head write of a commit:
// group commit (attempt), restoring a kept root and the shard's first
// commit (initialize) compose it. Only the genesis head, which is
// create-only and has no candidate, is written apart (createGenesis).
type landing struct {
	s      *Store
	sn     *Snapshot  // the pinned head: the write is conditional on its version
	c      *candidate // the objects and the head to write
	nonce  roots.Nonce
	staged time.Time // when staging began: a write never sent stops being retried MaxAttemptAge after it
	// background staging (a prepared fold) yields to the commits'
	// staging and head writes (yield.go).
	background bool
	// durable makes the staged objects durable; with a bucket that
	// SyncsGroupFirst, the head write syncs it (nil: synced by stage).
	durable *bucket.SyncGroup
	// oldest is the oldest store stamp stage saw on what it wrote (zero
	// where the store reports none).
	oldest time.Time
}

// newLanding returns the landing of candidate c on the pinned head sn.
func (s *Store) newLanding(sn *Snapshot, c *candidate, nonce roots.Nonce) *landing {
	return &landing{s: s, sn: sn, c: c, nonce: nonce}
}

// stage writes the candidate's objects, all at once: they are immutable
// and nothing references them until the head does. The writes in flight
// are bounded by bytes (Options.StageBytes) and by count (maxStageWrites),
// not by a small count: a fold of a large batch writes a thousand pages or
// more, and at 32 in flight they took a second of round trips.
//
// Every object must be stamped by the store at or after floor (the
// attempt's floor, horizon.go). Written after the head was read, they
// are, unless the store's clock went back by more than the floor's
// margin: then a sweep may take them for old, and the attempt fails with
// an error wrapping ErrStale (and bucket.ErrUnavailable, so that it is
// retried, on a fresh pin, with fresh objects).
func (l *landing) stage(ctx context.Context, floor time.Time) error {
	s, c := l.s, l.c
	l.staged = time.Now()
	// The staged objects become durable together, before the head write
	// that makes them reachable (bucket.SyncGroup): on a local disk, one
	// sync for all of them instead of one or two each, and, where the
	// bucket SyncsGroupFirst, the same sync as the new head's bytes, run
	// by the head write before it places the head.
	durable := bucket.NewSyncGroup()
	g, gctx := errgroup.WithContext(bucket.WithSyncGroup(ctx, durable))
	if l.background {
		g.SetLimit(backgroundStageWrites)
	} else {
		g.SetLimit(maxStageWrites)
		defer s.urgent.hold()()
	}
	sem := semaphore.NewWeighted(s.opts.StageBytes)
	var mu sync.Mutex
	var oldest time.Time
	var oldestKey string
	for _, w := range c.writes {
		n := min(int64(len(w.body)), s.opts.StageBytes)
		if err := sem.Acquire(gctx, n); err != nil {
			break // the group's error, or ctx's, is Wait's
		}
		g.Go(func() error {
			defer sem.Release(n)
			if l.background {
				s.urgent.wait(gctx, maxYield)
			}
			attrs, err := s.putImmutable(gctx, w.key, w.body)
			if err == nil && !attrs.ModTime.IsZero() {
				mu.Lock()
				if oldest.IsZero() || attrs.ModTime.Before(oldest) {
					oldest, oldestKey = attrs.ModTime, w.key
				}
				mu.Unlock()
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.b.Capabilities().SyncsGroupFirst {
		l.durable = durable
	} else if err := durable.Sync(ctx); err != nil {
		// Nothing is known of the objects' durability: a retry stages
		// them again, on a fresh pin.
		return fmt.Errorf("%w: sync the staged objects: %w", bucket.ErrUnavailable, err)
	}
	l.oldest = oldest
	if !oldest.IsZero() && oldest.Before(floor) {
		return fmt.Errorf("%w: %w: the store stamped %s at %s, before the attempt's floor %s: its clock went back",
			bucket.ErrUnavailable, ErrStale, oldestKey, oldest.Format(time.RFC3339Nano), floor.Format(time.RFC3339Nano))
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

// maxStageWrites bounds the staging writes of one commit in flight.
const maxStageWrites = 256

// endCommit ends the calls with a staging error that another attempt
// cannot change, and reports whether it did. Only a Transient error (the
// store unavailable, throttling, an ambiguous or damaged write) is worth
// another attempt; any other refusal (bucket.Permanent: denied, no space,
// no bucket) would meet every attempt alike, and is reported at once, as
// itself: nothing of the commit is visible, for the head was not written.
// An error after the calls' context ended is left to the retry loop,
// which reports each caller's own reason.
func endCommit(ctx context.Context, calls []*call, err error) bool {
	if bucket.Transient(err) || ctx.Err() != nil {
		return false
	}
	failAll(calls, fmt.Errorf("head: stage: %w", err))
	return true
}

// putImmutable writes a new immutable object, retrying what a retry cannot
// make worse: the key is new and its bytes are fixed.
func (s *Store) putImmutable(ctx context.Context, key string, body []byte) (bucket.Attrs, error) {
	p := s.retry
	p.Attempts = putAttempts
	var attrs bucket.Attrs
	err := bucket.Retry(ctx, p, func(ctx context.Context) error {
		var err error
		attrs, err = s.b.Put(ctx, key, body, bucket.Unconditional)
		return err
	})
	return attrs, err
}

// settleTimeout bounds how long a commit whose callers have all given up
// goes on learning the outcome of its head write (see settle).
const settleTimeout = 10 * time.Second

// settle is cas for an attempt whose callers may give up. Until the head
// write is sent, their context decides: if it has ended, nothing is sent
// and the attempt did not land. Once it is sent, the write may land
// whatever the callers do, so the write and its reconciliation run under
// a context detached from theirs, for at most settleTimeout: a caller
// that gives up then still learns whether its command landed, and is
// never told "cancelled" for a command that was applied. An outcome still
// unknown when the bound passes is ErrUnknownOutcome.
func (l *landing) settle(ctx context.Context) (landed bool, err error) {
	if ctx.Err() != nil {
		return false, nil // nothing sent: the retry loop reports the callers' reasons
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	return l.cas(ctx)
}

// abandon is Do's answer to a caller whose context ended before its
// command's outcome was known. A command still queued has not been
// applied and never will be: it leaves the queue with the context's
// error. A command a group commit has taken may be in the head write
// already, so the caller waits for the batch to settle it, which takes at
// most the current attempt (its head write bounded by settleTimeout):
// the attempt either lands, and the command's result stands, or it does
// not, and the next pass ends the command with the context's error
// (finishEnded).
func (s *Store) abandon(c *call) (Result, error) {
	s.mu.Lock()
	if i := slices.Index(s.queue, c); i >= 0 {
		s.queue = slices.Delete(s.queue, i, i+1)
		s.mu.Unlock()
		return Result{}, c.ctx.Err()
	}
	s.mu.Unlock()
	<-c.done
	return c.res, c.err
}

// finishEnded ends the calls whose context has ended with the context's
// error. The batch runs it before retrying: the attempt before did not
// land, so nothing of those calls was applied, and their callers are
// waiting (abandon).
//
// A call whose intent is out is the exception: another replica may still
// apply it, so its caller learns that the outcome is unknown
// (call.unsettled), never that it was cancelled.
func finishEnded(calls []*call) {
	for _, c := range calls {
		if err := c.ctx.Err(); err != nil {
			c.finish(Result{}, c.unsettled(err))
		}
	}
}

// sending marks the landing's head writes as this Store's own while
// they may be in flight, and returns the call that unmarks them: a head
// read meanwhile that carries its nonce is not another writer's.
func (l *landing) sending() func() {
	s, want := l.s, nonceString(l.nonce)
	s.mu.Lock()
	if s.sending == nil {
		s.sending = map[string]int{}
	}
	s.sending[want]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.sending[want]--; s.sending[want] <= 0 {
			delete(s.sending, want)
		}
		s.mu.Unlock()
	}
}

// put writes the head once, conditional on the pinned version, and on
// success takes the new head as this Store's own and remembers it.
func (l *landing) put(ctx context.Context) error {
	s, c := l.s, l.c
	if l.durable != nil {
		ctx = bucket.WithSyncFirst(ctx, l.durable)
	}
	attrs, err := s.b.Put(ctx, s.layout.Head(), c.headBytes, bucket.IfVersion(l.sn.version))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ownVersion = attrs.Version
	s.mu.Unlock()
	s.remember(&Snapshot{s: s, head: c.head, version: attrs.Version, storeTime: attrs.ModTime, rootHash: c.rootRef.Hash, root: c.root})
	return nil
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
// error when the outcome stays unknown, and when the store refused the
// first write for good (bucket.Permanent): that write did not happen,
// and no other can.
func (l *landing) cas(ctx context.Context) (landed bool, err error) {
	s, sn, nonce := l.s, l.sn, l.nonce
	want := nonceString(nonce)
	defer l.sending()()
	var lastErr error
	sent := false        // a write of this attempt may have taken effect
	var before time.Time // headWritten before this attempt's last write was sent
	paced := false       // the wait before the next try is already done
	for try := 0; try < s.opts.MaxAttempts; try++ {
		if try > 0 {
			if !sent && time.Since(l.staged) > s.opts.MaxAttemptAge {
				return false, nil // nothing of this attempt can land; rebuild
			}
			if !paced {
				if berr := s.retry.Wait(ctx, try-1, lastErr); berr != nil {
					break
				}
			}
			paced = false
		}
		s.mu.Lock()
		before = s.headWritten
		s.headWritten = time.Now()
		s.mu.Unlock()
		err := l.put(ctx)
		if err == nil {
			// The write arrived before its answer, however long it took
			// to arrive: the next is paced from the answer, so that a
			// slow write cannot bring the next one within the store's
			// interval of it (throttled, the next would wait a backoff).
			s.mu.Lock()
			s.headWritten = time.Now()
			s.mu.Unlock()
			s.counters.landed.Add(1)
			if l.c.folded {
				s.counters.folds.Add(1)
			}
			if l.c.installed != nil {
				s.counters.installed.Add(1)
			}
			if l.c.merged {
				s.counters.merges.Add(1)
			}
			return true, nil
		}
		lastErr = err
		if l.durable != nil && l.durable.Failed() && !sent {
			// The staged objects may never be durable, and no write of
			// this attempt was placed: rebuild, with new objects.
			return false, nil
		}
		if errors.Is(err, bucket.ErrPrecondition) {
			s.counters.casConflicts.Add(1)
		}
		if bucket.Permanent(err) && !sent {
			// Refused for good before it took effect: no write of this
			// attempt was sent, so nothing of it can land.
			return false, fmt.Errorf("head: write head of sequence %d: %w", sn.head.Sequence+1, err)
		}
		if errors.Is(err, bucket.ErrThrottled) && !sent {
			if s.opts.MinCommitInterval > 0 {
				// Another replica may have written the head a moment
				// ago, past our version: look before waiting out the
				// throttle, and give up the race if it moved. A replica
				// that has not yet seen another writer looks too: when
				// several start at once, each learns from its first
				// throttle that the head is shared (the lost race), not
				// after a backoff and a second throttle.
				if cur, rerr := s.Pin(ctx); rerr == nil && cur.head.Sequence > sn.head.Sequence {
					return false, nil
				}
			}
			paced = s.waitThrottled(ctx, sn, before, try)
			continue // refused before it took effect; the head may still be ours to write
		}
		sent = sent || !errors.Is(err, bucket.ErrThrottled)
		cur, rerr := s.Pin(ctx)
		if rerr != nil {
			lastErr = rerr
			continue
		}
		if _, ok := cur.head.landedIn(want); ok {
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

// waitThrottled waits after a head write the store throttled, before the
// same write is sent again, and reports whether it did. A pacing store
// (MinCommitInterval) that knows when its last head write was sent
// (before) was throttled for sending a little early, so it waits for the
// turn after that write, with twice the margin, instead of the whole
// throttle backoff; a second throttle of one attempt takes the backoff.
// Only a Store that writes alone waits so, over its own last head write:
// when other replicas write the head too, the throttle most likely marks
// a write of theirs, and the backoff leaves them the turn.
func (s *Store) waitThrottled(ctx context.Context, sn *Snapshot, before time.Time, try int) bool {
	if s.opts.MinCommitInterval <= 0 || before.IsZero() || try > 0 {
		return false
	}
	s.mu.Lock()
	own := s.ownVersion == sn.version
	if own {
		s.headWritten = before // the refused write took no effect
	}
	s.mu.Unlock()
	if !own || s.othersActive() {
		return false
	}
	wait := s.turnAfter() + s.opts.MinCommitInterval/paceMarginDivisor - time.Since(before)
	return bucket.Sleep(ctx, max(wait, s.opts.MinCommitInterval/paceMarginDivisor)) == nil
}
