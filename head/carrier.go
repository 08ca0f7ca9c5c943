package head

import (
	"context"
	mrand "math/rand/v2"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// The carrier: which replica builds the commit that carries everyone's
// intents, how long the others leave their commands to it, and when
// they take over (see "Intents" in intent.go).

// gather delays a leader that last wrote the head while replicas contend,
// so that its next batch is taken, and the intents listed, late in the
// head's interval: the commit then carries the intents published during
// most of it. It leaves the last 40% of the interval to build and stage.
func (s *Store) gather() {
	if !s.contended() || s.opts.MinCommitInterval <= 0 {
		// Unpaced, the interval is the head's own cycle: waiting a part
		// of it would only lengthen the cycle it is measured from.
		return
	}
	s.mu.Lock()
	carrier := !s.headWritten.Equal(s.othersSeen)
	wait := s.opts.MinCommitInterval*6/10 - time.Since(s.headWritten)
	s.mu.Unlock()
	if carrier && wait > 0 {
		_ = bucket.Sleep(s.stop, wait) // Close ends the wait
	}
}

// shareLocked is the interval the replicas sharing a head count in (the
// carrier's turn, a deferral, a silence): MinCommitInterval when the Store
// paces its head writes; else the time the head has lately taken to
// advance, one commit's cycle (a moving average of the advances this
// Store saw, see noteAdvance), within [minShare, maxShare], and
// defaultShare before any was seen. s.mu is held.
func (s *Store) shareLocked() time.Duration {
	if s.opts.MinCommitInterval > 0 {
		return s.opts.MinCommitInterval
	}
	if s.cycle == 0 {
		return defaultShare
	}
	return min(max(s.cycle, minShare), maxShare)
}

// The bounds of shareLocked for a Store that does not pace.
const (
	minShare     = 20 * time.Millisecond
	maxShare     = 500 * time.Millisecond
	defaultShare = 100 * time.Millisecond
)

// noteAdvance records that the head was seen to advance now, for
// shareLocked's moving average. A long quiet gap counts as maxShare. s.mu
// is held.
func (s *Store) noteAdvance(now time.Time) {
	if !s.lastAdvance.IsZero() {
		d := min(now.Sub(s.lastAdvance), maxShare)
		if s.cycle == 0 {
			s.cycle = d
		} else {
			s.cycle = (7*s.cycle + 3*d) / 10
		}
	}
	s.lastAdvance = now
}

// maxDefers bounds the attempts in a row a call leaves to the replica
// that carries the head while the head does not advance, before its Store
// competes for the head itself. With a defer lasting about 1.25
// intervals, it is about ten intervals. Defers during which the carrier
// landed commits count only towards maxDefersAdvancing: a carrier that
// fell behind (its commits carry the oldest intents first, within
// intentBudget) is waited for, since every replica competing then would
// build the same long commit beside it; but one that keeps writing the
// head without ever applying the call (it cannot handle its kind, say)
// must not starve it.
const (
	maxDefers          = 8
	maxDefersAdvancing = 3 * maxDefers
)

// carrying reports whether this Store carries the others' intents at sn:
// it wrote the head last, or the replica that did has been silent since
// (silence). A replica that does not carry and cannot defer commits its
// own commands only, so that the work of applying everyone's is done
// once, by the carrier.
func (s *Store) carrying(sn *Snapshot) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.othersLast() || time.Since(s.othersSeen) >= s.silenceLocked(sn)
}

// foldShares is how many intervals (shareLocked) a carrier that landed a
// root past the delta bounds is given before the others take over.
const foldShares = 8

// silenceLocked is how long the replica that wrote sn's head may stay
// silent before the others take over from it: two intervals, or
// foldShares when sn's root is past the delta bounds. That replica then
// folds (noticeDeltas), a commit that rewrites base shards and so takes
// longer than a delta's; a replica taking over would build the same
// fold beside it, and all but one such fold are thrown away. Every
// replica reads the same root, so they agree on the silence they allow;
// a carrier paused for longer is still taken over from. s.mu is held.
func (s *Store) silenceLocked(sn *Snapshot) time.Duration {
	share := s.shareLocked()
	if sn != nil && s.overDeltas(sn.root, 1) {
		return foldShares * share
	}
	return 2 * share
}

// othersLast reports whether the last head write this Store knows of is
// another replica's. s.mu is held.
func (s *Store) othersLast() bool {
	return !s.othersSeen.IsZero() && s.othersSeen.Equal(s.headWritten)
}

// takeOver is run by a Store about to carry the head because the replica
// that wrote it last has been silent for two intervals: every other
// replica waiting on it comes to the same conclusion at about the same
// time, and each building a commit of its own at once would spend their
// CPU on commits of which one lands. It waits a random part of an
// interval and reads the head again, and reports whether it moved past
// sn meanwhile, when another replica took over first and carries now.
func (s *Store) takeOver(ctx context.Context, sn *Snapshot) bool {
	s.mu.Lock()
	silent := s.othersLast()
	share := s.shareLocked()
	s.mu.Unlock()
	if !silent {
		return false
	}
	if bucket.Sleep(ctx, mrand.N(share/2)) != nil {
		return false
	}
	if _, err := s.Pin(ctx); err != nil {
		return false
	}
	if s.outpaced(sn) {
		return true
	}
	if s.carrying(sn) {
		s.counters.takenOver.Add(1)
	}
	return false
}

// leaveToCarrier reports whether this attempt should leave the calls to
// the replica that carries the head: every call is a data command with
// its intent out, the last head write this Store saw was another
// replica's and recent (see carrying), that replica's head says it lists
// intents (Head.Carrier), and no call has deferred too often already
// (maxDefers). It then waits for that replica's next turn, so
// that the next attempt finds the calls applied. Only one replica, the
// one that last won, builds each commit, however long its commits take; a
// carrier that goes away (or has nothing of its own to commit, so runs no
// commit) stops writing the head, and after its silence (silenceLocked)
// the others take over (takeOver).
func (s *Store) leaveToCarrier(ctx context.Context, sn *Snapshot, calls []*call) bool {
	seq := sn.head.Sequence
	unheld := false
	for _, c := range calls {
		if c.defers > 0 && seq > c.deferredAt {
			c.stalls = 0 // the head advanced since its last defer
		}
		if c.intent == "" {
			return false
		}
		unheld = unheld || c.stalls >= maxDefers || c.defers >= maxDefersAdvancing
	}
	if s.carrying(sn) || !sn.head.Carrier {
		// Its writer does not list intents (a lone writer until it learns
		// of this replica, by a head write of this replica's or by the
		// listing it makes every loneProbeEvery): commit them here.
		return false
	}
	if unheld {
		s.counters.unheld.Add(1)
		return false
	}
	s.counters.deferred.Add(1)
	s.mu.Lock()
	share := s.shareLocked()
	wait := max(share+share/4-time.Since(s.headWritten), share/10)
	publish := s.othersSeen.Add(share * publishShare / 100)
	if s.latest != nil && s.latest.head.Sequence > seq {
		wait = 0 // the head moved since sn was read: look again now
	}
	if s.othersWrote == nil {
		s.othersWrote = make(chan struct{})
	}
	wrote := s.othersWrote
	s.mu.Unlock()
	for _, c := range calls {
		c.defers++
		c.stalls++
		c.deferredAt = seq
	}
	// A caller that gives up meanwhile is answered by the batch's retry
	// loop (finishEnded).
	s.awaitCarrier(ctx, wait, publish, wrote)
	return true
}

// publishShare is the point of the carrier's interval, in hundredths
// after its head write, at which a deferring replica publishes the
// commands that came while it waited: before the carrier lists the
// intents for its next head write (gather, at six tenths), with room for
// the intent's write and the replicas' differing views of when the head
// was written.
const publishShare = 45

// awaitCarrier waits, for a deferring attempt, until the carrier's next
// head write is due (wait), and ends the wait early when this Store sees
// another writer's head write (wrote is closed: the head may now hold
// the calls applied, and another attempt finds them at once), or at
// publish if commands wait in the queue: the next attempt takes them and
// publishes their intents in time for the carrier's next head write,
// where they would otherwise wait for the one after it.
func (s *Store) awaitCarrier(ctx context.Context, wait time.Duration, publish time.Time, wrote <-chan struct{}) {
	if wait <= 0 {
		return
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var early <-chan time.Time
	if d := time.Until(publish); d > 0 && d < wait {
		t := time.NewTimer(d)
		defer t.Stop()
		early = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-deadline.C:
			return
		case <-wrote:
			return
		case <-early:
			s.mu.Lock()
			queued := len(s.queue) > 0
			s.mu.Unlock()
			if queued {
				return
			}
			early = nil
		}
	}
}

// carryOn keeps the leader running, after a commit that carried other
// replicas' intents, for as long as those replicas leave their commands
// to this one, the carrier: until the silence after which they take the
// head over (silenceLocked, two intervals) has passed since it last
// carried any. The replicas whose intents come in meanwhile wait for it;
// without a command of its own it would write the head no more, so they
// would wait for the silence and a take-over (takeOver), two to three
// intervals, before one of them carried them. Called by whoever landed
// the commit; the leader checks it before it ends its turn.
func (s *Store) carryOn() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.carriedAt = time.Now()
	s.carryDue = true
}

// takeCarry reports whether the leader should run carry now: one is due,
// within the silence since this Store last carried, and no command of its
// own waits (a batch of them carries the intents anyway).
func (s *Store) takeCarry() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	due := s.carryDue && len(s.queue) == 0 && !s.closed && time.Since(s.carriedAt) < 2*s.shareLocked()
	s.carryDue = false
	return due
}

// carry runs one attempt with no command of this Store's own: it lists
// the other replicas' intents as any attempt that shares the head does,
// applies them and writes the head at its turn, or writes nothing if
// there are none; then, still within the silence, it looks again a
// quarter of an interval later. An attempt is not retried: a race lost
// means another replica carries.
func (s *Store) carry() {
	ctx, cancel := context.WithTimeout(s.stop, s.opts.MaxAttemptAge)
	defer cancel()
	c := &call{ctx: ctx, carry: true, done: make(chan struct{})}
	before := s.counters.landed.Load()
	if done, err := s.attempt(ctx, []*call{c}, false, nil); !done {
		c.finish(Result{}, err)
	}
	s.mu.Lock()
	share := s.shareLocked()
	again := time.Since(s.carriedAt) < 2*share
	s.carryDue = s.carryDue || again
	s.mu.Unlock()
	if again && s.counters.landed.Load() == before {
		_ = bucket.Sleep(s.stop, share/4)
	}
}
