package head

import (
	"context"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

// The group commit's leader: its loop, its queue, and the pacing of its
// batches against the head's turn.

// lead runs group commits until the queue is empty. It takes a batch as
// soon as the previous one has landed; the batch is built and staged at
// once, and only its head write waits for the head's turn (waitTurn).
func (s *Store) lead() {
	for {
		s.gather()
		s.awaitBatch()
		if s.takeFold() {
			// The fold rides with the commands waiting, in one head write.
			s.runFold(s.takeMore(s.take, s.opts.MaxBatch, s.opts.MaxBatchBytes)...)
			continue
		}
		if s.takeCarry() {
			s.carry()
			continue
		}
		batch := s.take(s.opts.MaxBatch, s.opts.MaxBatchBytes)
		if batch == nil {
			if s.endTurn() {
				return
			}
			continue
		}
		s.commitBatch(batch, s.take)
	}
}

// endTurn ends the leader's turn, unless work came while it looked: a
// call queued, or a fold or carry made due by another goroutine (a
// prepared fold hands itself to the leader from its own), whose
// startLeader saw this leader still running and started none.
func (s *Store) endTurn() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed && (len(s.queue) > 0 || s.foldDue || s.carryDue) {
		return false
	}
	s.leader = false
	return true
}

// take removes up to n calls from the queue, fewer if their payloads
// would pass room bytes; with the whole of MaxBatchBytes for room, it
// takes at least one. When the queue is empty (or the store closed) it
// returns nil.
func (s *Store) take(n int, room int64) []*call {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) == 0 || s.closed || n <= 0 {
		return nil
	}
	n = min(len(s.queue), n)
	var bytes int64
	for i, c := range s.queue[:n] {
		bytes += int64(len(c.cmd.Payload))
		if bytes > room && (i > 0 || room < s.opts.MaxBatchBytes) {
			n = i
			break
		}
	}
	if n == 0 {
		return nil // no room left in the batch; the queue waits for the next
	}
	batch := append([]*call(nil), s.queue[:n]...)
	s.queue = s.queue[n:]
	return batch
}

// waitTurn waits, in a group commit, until MinCommitInterval has passed
// since the last head write this Store knows of (headWritten): its own
// last one, from when it was sent, or another writer's, from when this
// Store first saw it. The batch has been built and staged meanwhile, so
// a commit's own work overlaps the head's interval instead of following
// it, and commands that arrive meanwhile gather for the next batch.
func (s *Store) waitTurn(ctx context.Context) error {
	if s.opts.MinCommitInterval <= 0 || s.opts.NoGroupCommit {
		return nil
	}
	s.mu.Lock()
	wait := s.turnAfter() - time.Since(s.headWritten)
	s.mu.Unlock()
	return bucket.Sleep(ctx, wait)
}

// awaitBatch delays a leader that is paced (MinCommitInterval) and writes
// the head alone until its batch, taken now, would be built and staged
// just in time for the head's next turn: the commands that arrive
// meanwhile ride with it instead of waiting a whole interval for the
// next one. Taken as soon as the last commit landed, a batch would wait
// for its turn with everything it holds while new commands queued
// behind it, so most commands would wait for two head writes, not one.
// The time a batch takes to prepare is estimated from the last ones
// (notePrep), with room to spare. A contended leader gathers instead
// (gather).
func (s *Store) awaitBatch() {
	if s.opts.MinCommitInterval <= 0 || s.opts.NoGroupCommit || s.contended() {
		return
	}
	s.mu.Lock()
	wait := s.turnAfter() - (s.prep*3/2 + s.opts.MinCommitInterval/20) - time.Since(s.headWritten)
	s.mu.Unlock()
	if wait > 0 {
		_ = bucket.Sleep(s.stop, wait) // Close ends the wait
	}
}

// notePrep records how long an attempt took from its start to the end of
// its staging, less the time it absorbed commands (prep), and from then
// to the end of its staging (finish), in moving averages that awaitBatch
// and absorb read.
func (s *Store) notePrep(prep, finish time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	avg := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
			return
		}
		*v = (7**v + 3*d) / 10
	}
	avg(&s.prep, prep)
	avg(&s.finish, finish)
}

// turnAfter is how long after a known head write the next one is sent:
// MinCommitInterval and a margin. The store counts its rate from when
// each write arrives; headWritten is when this Store's last write was
// answered (it arrived before), or when another writer's was first seen,
// so the interval holds however long a write took to arrive, and the
// margin covers the spread of the next one's way there.
func (s *Store) turnAfter() time.Duration {
	return s.opts.MinCommitInterval + s.opts.MinCommitInterval/paceMarginDivisor
}

// paceMarginDivisor sets the margin of turnAfter: 1/40 of the interval,
// 25 ms at GCS's one write a second, which covers the spread of request
// latencies between two writes.
const paceMarginDivisor = 40

// takeMore is refill that never ends the leader's turn: the leader is
// still busy with the batch.
func (s *Store) takeMore(refill func(int, int64) []*call, n int, room int64) []*call {
	s.mu.Lock()
	empty := len(s.queue) == 0
	s.mu.Unlock()
	if empty || n <= 0 || room <= 0 {
		return nil
	}
	return refill(n, room)
}

// payloadBytes is the payload bytes of the calls' data commands.
func payloadBytes(calls []*call) int64 {
	var n int64
	for _, c := range calls {
		n += int64(len(c.cmd.Payload))
	}
	return n
}
