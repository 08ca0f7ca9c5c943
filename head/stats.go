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
	// CASConflicts is the conditional head writes refused because the
	// head was no longer the version the attempt built on.
	CASConflicts int64
	// HeadReads is the head reads made (Pin).
	HeadReads int64
	// PinsCoalesced is the Pins answered by a head read that another Pin
	// had started: the head reads coalescing saved.
	PinsCoalesced int64
}

// commitCounters are the atomics behind CommitStats.
type commitCounters struct {
	batches, commands, retries, landed, casConflicts, headReads, pinsCoalesced atomic.Int64
}

// CommitStats returns the Store's counters.
func (s *Store) CommitStats() CommitStats {
	c := &s.counters
	return CommitStats{
		Batches:       c.batches.Load(),
		Commands:      c.commands.Load(),
		Retries:       c.retries.Load(),
		Landed:        c.landed.Load(),
		CASConflicts:  c.casConflicts.Load(),
		HeadReads:     c.headReads.Load(),
		PinsCoalesced: c.pinsCoalesced.Load(),
	}
}
