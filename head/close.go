package head

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// Closing a Store, and the outcomes it answers: a command whose write may
// have landed is never told that it was not applied.

// closeWait bounds how long Close waits for the batch in progress and a
// running fold: the attempt stops before its head write, or, if that was
// sent, learns its outcome within settleTimeout.
const closeWait = settleTimeout + 5*time.Second

// close stops the store. From now on no command is taken and no attempt
// starts: the commands still queued fail with ErrClosed, a batch between
// two attempts ends with ErrClosed (an unknown outcome for a command whose
// intent is out, see call.unsettled), and an attempt in progress stops
// before its head write (its context is cancelled) or, if its head write
// was sent, settles it. close waits up to wait for the leaders,
// synchronous commits and folds under way to end; then reads fail with
// ErrClosed too.
func (s *Store) close(wait time.Duration) {
	s.mu.Lock()
	s.closed = true
	q := s.queue
	s.queue = nil
	var quiet chan struct{}
	if s.running > 0 && wait > 0 {
		if s.quiet == nil {
			s.quiet = make(chan struct{})
		}
		quiet = s.quiet
	}
	s.mu.Unlock()
	s.stopNow()
	failAll(q, ErrClosed)
	if quiet != nil {
		t := time.NewTimer(wait)
		select {
		case <-quiet:
		case <-t.C:
		}
		t.Stop()
	}
	s.mu.Lock()
	s.shut = true
	s.mu.Unlock()
}

// CloseNow is Close without the wait, for a process that ends at once: a
// test that simulates a crash closes a replica with it from inside one of
// the replica's own requests, which Close would wait for. A head write
// already sent may land after CloseNow returns, and its command is then
// told ErrUnknownOutcome (the head can no longer be read to settle it).
func (s *Store) CloseNow() error {
	s.close(0)
	return nil
}

// enter registers work that Close waits for, and reports false once the
// store is closed. leave ends it.
func (s *Store) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.running++
	return true
}

// spawn runs fn on a goroutine of its own, as work Close waits for (a
// leader, a fold). s.mu is held.
func (s *Store) spawn(fn func()) {
	s.running++
	go func() {
		defer s.leave()
		fn()
	}()
}

// startLeader runs a group-commit leader if none runs. s.mu is held.
func (s *Store) startLeader() {
	if !s.leader {
		s.leader = true
		s.spawn(s.lead)
	}
}

func (s *Store) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.running--
	if s.running == 0 && s.quiet != nil {
		close(s.quiet)
		s.quiet = nil
	}
}

func (s *Store) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// failAll ends the calls with err: each one whose intent is out with the
// unknown outcome it has (call.unsettled), since another replica may
// still apply it. Finished calls keep their outcome.
func failAll(calls []*call, err error) {
	for _, c := range calls {
		c.finish(Result{}, c.unsettled(err))
	}
}

// unknownOutcomes remembers the request ids this Store answered
// ErrUnknownOutcome, so that a later try of the same request (a caller
// retrying with its request id, as it is told to) is never told that it
// was not applied while the first try may still have landed: a try that
// ends without deciding (cancelled, closed, out of attempts, the store
// unavailable) answers ErrUnknownOutcome again. A try that decides (a
// result, or a replay of the first try's) forgets the id. At most
// maxUnknownOutcomes ids are kept, the oldest forgotten first.
type unknownOutcomes struct {
	mu    sync.Mutex
	ids   map[string]uint64 // id → when it was added, its place in order
	order []string
	added uint64 // ids added so far; order[0] was added at added-len(order)
}

const maxUnknownOutcomes = 4096

// answer returns the error Do answers for cmd, whose commit ended with
// err, and records what it learns.
func (u *unknownOutcomes) answer(cmd Command, err error) error {
	if cmd.RequestID == "" {
		return err
	}
	key := string(dedupeKey(cmd))
	u.mu.Lock()
	defer u.mu.Unlock()
	_, known := u.ids[key]
	switch {
	case errors.Is(err, ErrUnknownOutcome):
		if known {
			return err
		}
		if u.ids == nil {
			u.ids = map[string]uint64{}
		}
		if len(u.order) >= maxUnknownOutcomes {
			first := u.added - uint64(len(u.order))
			if u.ids[u.order[0]] == first {
				delete(u.ids, u.order[0])
			}
			u.order = u.order[1:]
		}
		u.ids[key] = u.added
		u.order = append(u.order, key)
		u.added++
	case known && undecided(err):
		return fmt.Errorf("%w: an earlier try of request %q may have landed, and this one ended undecided: %w", ErrUnknownOutcome, cmd.RequestID, err)
	case known:
		// Decided: applied, replayed, or refused by the command itself.
		// Its place in order is dropped with the oldest.
		delete(u.ids, key)
	}
	return err
}

// undecided reports whether err ends a command without deciding it: the
// errors that say "not applied" only of this try (the caller gave up, the
// store closed, the attempts ran out, the store failed or refused).
func undecided(err error) bool {
	return err != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrClosed) || errors.Is(err, ErrRetryable) || errors.Is(err, ErrNoHead) ||
		bucket.Transient(err) || bucket.Permanent(err))
}
