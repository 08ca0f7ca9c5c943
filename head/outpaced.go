package head

import (
	"errors"
	"fmt"
)

// Races lost to other writers' progress.
//
// A commit's attempt that loses the head to another writer's commit has
// not failed: the shard made progress, and the next attempt builds on it.
// With N writers racing for one head, each round lands exactly one of
// them, so the last may lose N-1 races although nothing is wrong and none
// of its predicates failed; counting those against MaxAttempts, with a
// backoff that doubles each time, made 1 or 2 of 16 concurrent writes to
// distinct paths fail with ErrRetryable. So a race lost to a head that
// moved on is counted apart (attemptBudget), its wait does not grow, and
// only failures (a store error, a race lost without the head moving) use
// up MaxAttempts. The lost races are still bounded, by outpacedFactor ×
// MaxAttempts, so that a writer that never wins still gets an answer.

// errOutpaced marks an attempt that did not land because the head moved
// past the snapshot it built on: another writer committed first.
var errOutpaced = errors.New("another writer committed first")

// outpacedFactor bounds the races one commit may lose to other writers'
// progress, as a multiple of MaxAttempts (96 by default).
const outpacedFactor = 8

// outpaced reports whether this Store has seen a head newer than sn's:
// a head write built on sn can only fail its condition, so it is not
// sent, and an attempt that lost on sn lost to another writer's commit.
func (s *Store) outpaced(sn *Snapshot) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.latest != nil && sn.head != nil && s.latest.head.Sequence > sn.head.Sequence
}

// lostRace is the error of an attempt on sn that did not land: errOutpaced
// when the head has moved past sn, else a plain lost race.
func (s *Store) lostRace(sn *Snapshot) error {
	if s.outpaced(sn) {
		return fmt.Errorf("head: lost the race for sequence %d: %w", sn.head.Sequence+1, errOutpaced)
	}
	return fmt.Errorf("head: lost the race for sequence %d", sn.head.Sequence+1)
}

// attemptBudget counts a commit's attempts that did not land: failures,
// which use up MaxAttempts and lengthen the backoff, and races lost to
// other writers' progress, which do neither (see errOutpaced).
type attemptBudget struct {
	failed   int
	outpaced int
}

// spend counts an attempt that did not land with err.
func (b *attemptBudget) spend(err error) {
	if errors.Is(err, errOutpaced) {
		b.outpaced++
	} else {
		b.failed++
	}
}

// exhausted reports whether the commit is out of attempts.
func (b *attemptBudget) exhausted(maxAttempts int) bool {
	return b.failed >= maxAttempts || b.outpaced >= outpacedFactor*maxAttempts
}

// backoff is the index of the next wait (RetryPolicy.Backoff): the
// failures so far, less the one the wait follows. A lost race waits as
// the first failure does, never longer.
func (b *attemptBudget) backoff() int {
	return max(b.failed-1, 0)
}
