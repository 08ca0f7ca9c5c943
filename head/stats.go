package head

import "sync/atomic"

// CommitStats count a Store's group commits and head reads since Open,
// for an operator's metrics. Each is a running total.
type CommitStats struct {
	// Batches is the group commits started: one per batch of commands
	// taken from the queue (or one per command with NoGroupCommit).
	Batches int64
	// Commands is the commands those batches held when they started; with
	// Batches it gives the mean batch size.
	Commands int64
	// Retries is the attempts of a batch after its first: after a lost
	// race, a throttled or failed write, a pending intent.
	Retries int64
	// Landed is the head writes of this Store that landed.
	Landed int64
	// Folds is the landed head writes of this Store whose root folded its
	// parent's deltas and the batch into the base (new tables); Merges
	// those that merged the newer deltas into one and left the base
	// alone. They are what a commit's deltas cost besides the deltas.
	Folds, Merges int64
	// Installed is the folds among Folds that were prepared beside the
	// commits and installed by one (prepareFold); Dropped the prepared
	// folds no commit could install (the base changed, or they grew too
	// old), whose objects a sweep collects.
	Installed, Dropped int64
	// CASConflicts is the conditional head writes refused because the
	// head was no longer the version the attempt built on.
	CASConflicts int64
	// HeadReads is the head reads made (Pin).
	HeadReads int64
	// PinsCoalesced is the Pins answered by a head read that another Pin
	// had started: the head reads coalescing saved.
	PinsCoalesced int64
	// Deferred is the attempts that left their calls to the replica
	// carrying the head (leaveToCarrier); Unheld those that competed for
	// the head although one carried it, because a call had deferred too
	// often (maxDefers); TakenOver those that carried the head after its
	// carrier's silence. They tell how replicas sharing a head divide
	// the work.
	Deferred, Unheld, TakenOver int64
	// BatchSizes counts the batches by size: BatchSizes[i] is the batches
	// of at most BatchSizeBounds[i] commands and more than the bound
	// before it (not cumulative). A batch's size is the commands it was
	// taken with; those it absorbed later count in Commands only.
	BatchSizes [len(BatchSizeBounds)]int64
}

// BatchSizeBounds are the upper bounds of CommitStats.BatchSizes: powers
// of two up to the default MaxBatch.
var BatchSizeBounds = [...]int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 1 << 30}

// commitCounters are the atomics behind CommitStats.
type commitCounters struct {
	batches, commands, retries, landed, folds, merges, installed, dropped, casConflicts, headReads, pinsCoalesced, deferred, unheld, takenOver atomic.Int64
	batchSizes                                                                                                                                 [len(BatchSizeBounds)]atomic.Int64
}

// batch counts a batch of n commands starting.
func (c *commitCounters) batch(n int) {
	c.batches.Add(1)
	c.commands.Add(int64(n))
	for i, b := range BatchSizeBounds {
		if n <= b {
			c.batchSizes[i].Add(1)
			return
		}
	}
}

// CommitStats returns the Store's counters.
func (s *Store) CommitStats() CommitStats {
	c := &s.counters
	st := CommitStats{
		Batches:       c.batches.Load(),
		Commands:      c.commands.Load(),
		Retries:       c.retries.Load(),
		Landed:        c.landed.Load(),
		Folds:         c.folds.Load(),
		Merges:        c.merges.Load(),
		Installed:     c.installed.Load(),
		Dropped:       c.dropped.Load(),
		CASConflicts:  c.casConflicts.Load(),
		HeadReads:     c.headReads.Load(),
		PinsCoalesced: c.pinsCoalesced.Load(),
		Deferred:      c.deferred.Load(),
		Unheld:        c.unheld.Load(),
		TakenOver:     c.takenOver.Load(),
	}
	for i := range c.batchSizes {
		st.BatchSizes[i] = c.batchSizes[i].Load()
	}
	return st
}
