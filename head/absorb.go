package head

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// A paced group commit's batch grows while it waits for the head's turn:
// the calls that arrive join its context (batchCtx) and its attempt
// (absorb).

// batchCtx is a group commit's context: cancelled once every call's own
// context has ended, or the store is closing (stop). Calls absorbed into
// a running attempt join it (add).
type batchCtx struct {
	context.Context
	cancel context.CancelFunc
	mu     sync.Mutex
	live   int
	stops  []func() bool
}

func newBatchCtx(stop context.Context, calls []*call) *batchCtx {
	ctx, cancel := context.WithCancel(stop)
	b := &batchCtx{Context: ctx, cancel: cancel}
	b.add(calls)
	return b
}

// add ties calls to the context, and reports false, adding none, if it
// has already ended.
func (b *batchCtx) add(calls []*call) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Err() != nil {
		return false
	}
	for _, c := range calls {
		b.live++
		b.stops = append(b.stops, context.AfterFunc(c.ctx, func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.live--; b.live == 0 {
				b.cancel()
			}
		}))
	}
	return true
}

// release ends the context and its ties to the calls' contexts.
func (b *batchCtx) release() {
	b.mu.Lock()
	stops := b.stops
	b.stops = nil
	b.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
	b.cancel()
}

// absorbPoll is how often absorb looks for commands that arrived.
const absorbPoll = 2 * time.Millisecond

// absorb applies the commands that arrive while the head's next turn is
// further off than the batch needs to be built and staged (finish, with
// room to spare), so that they ride with this head write instead of the
// next, and returns how long it took. A batch is taken ahead of its turn
// by an estimate of the whole preparation (awaitBatch); the commands
// that arrived in that lead would otherwise wait a whole interval more.
// They are applied on the attempt's snapshot, as the batch's first
// commands are (the head write is conditional on it), and at its clock
// reading (Tx.Now), taken before they arrived. grow adds them to the
// group commit, or refuses if its context has ended; they are then put
// back at the head of the queue.
func (b *attemptBatch) absorb(ctx context.Context, grow func([]*call) bool) time.Duration {
	s := b.s
	if s.opts.MinCommitInterval <= 0 || s.opts.NoGroupCommit || b.fold != keepDeltas {
		return 0
	}
	began := time.Now()
	b.calls = slices.Clip(b.calls) // commitBatch appends to its own slice
	for ctx.Err() == nil {
		s.mu.Lock()
		left := s.turnAfter() - (s.finish*3/2 + s.opts.MinCommitInterval/20) - time.Since(s.headWritten)
		s.mu.Unlock()
		// However long the interval, the pin's floor stays near the
		// staging that MaxAttemptAge bounds (the collection horizon).
		if left <= 0 || time.Since(began) > s.opts.MaxAttemptAge/4 {
			break
		}
		n, room := s.opts.MaxBatch-len(b.calls), s.opts.MaxBatchBytes-payloadBytes(b.calls)
		if n <= 0 || room <= 0 {
			break // the batch is full
		}
		more := s.takeMore(s.take, n, room)
		if len(more) == 0 {
			_ = bucket.Sleep(ctx, min(left, absorbPoll))
			continue
		}
		if !grow(more) {
			s.requeue(more)
			break
		}
		_ = s.prefetchReads(ctx, b.sn, more) // a command meets a read's error itself
		for _, c := range more {
			var out outcome
			if err := c.ctx.Err(); err != nil {
				out.err = c.unsettled(err)
			} else {
				out = s.apply(ctx, b.sn, b.state, c.cmd, b.at, false)
			}
			b.calls = append(b.calls, c)
			b.outs = append(b.outs, out)
		}
	}
	return time.Since(began)
}

// requeue puts calls back at the head of the queue, in their order.
func (s *Store) requeue(calls []*call) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = append(slices.Clip(calls), s.queue...)
}
