package workbench

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The lease clock and the reaper.
//
// Snapshot leases are judged against the root's persisted lease clock
// (nokv.LeaseClock): the high-water mark of the wall time (Options.Now)
// that snapshot commands observed. Every mint and renewal, and every reap
// claim, observes the wall clock in the same command that uses it: at
// or past the high-water mark, the mark moves up to it; behind it (the
// clock went back), the mark stays and the clock records ReapNotBefore,
// the mark plus the clock-skew grace (Options.LeaseGrace). The lease
// clock's "now" is the later of wall time and the mark, so a lease that
// expired never comes back to life because a clock went back, and a
// deadline computed after a regression is not earlier than one computed
// before.
//
// The reaper (Service.Reap) ends the leases that are over for certain: an
// Active snapshot whose deadline plus the grace is at or before wall
// time, while wall time is not behind the mark and has reached
// ReapNotBefore. A reap is two commands. The first claims a bounded batch
// (Active -> ReapClaimed) and releases each one's hold (the engine hold
// and its HistoryHold row) in the same command; renewal and retirement
// of a claimed snapshot then fail. The second marks the claimed ones
// Reaped, sets their alias's terminal projection and writes a
// SnapshotReaped event. A crash between the two leaves ReapClaimed rows,
// which the next reap finishes. The reaper runs opportunistically before
// every mint and every workbench_snapshot_list, in one bounded batch;
// nothing runs in the background.

// graceMillis is the clock-skew grace in milliseconds.
func (s *Service) graceMillis() uint64 { return uint64(s.opts.LeaseGrace.Milliseconds()) }

// observeLeaseClock records, in tx, an observation of wall time wall (ms)
// and returns the clock after it. It writes only when the clock changes.
func (s *Service) observeLeaseClock(tx *head.Tx, wall uint64) (nokv.LeaseClock, error) {
	c, err := s.leaseClock(tx.Get)
	if err != nil {
		return nokv.LeaseClock{}, err
	}
	next := c
	if wall >= c.HighWater {
		next.HighWater = wall
	} else {
		next.ReapNotBefore = max(c.ReapNotBefore, c.HighWater+s.graceMillis())
	}
	if next == c {
		return c, nil
	}
	key, err := nokv.LeaseClockKey{Root: s.root}.Encode()
	if err != nil {
		return nokv.LeaseClock{}, err
	}
	return next, putRecord(tx, nokv.FamilyLeaseClock, key, next.Encode)
}

// reapable reports whether a lease ending at deadline may be reaped at
// wall time wall, with the clock c already holding that observation.
func (s *Service) reapable(c nokv.LeaseClock, wall, deadline uint64) bool {
	return wall >= c.HighWater && wall >= c.ReapNotBefore && deadline+s.graceMillis() <= wall
}

// Reap ends, in one bounded batch (Options.ReapBatch), the snapshots of
// the Service's root whose lease and grace are over, and finishes the
// reaps an earlier call claimed. It returns how many snapshots it marked
// Reaped. It reads the snapshot records of the whole root once and
// commits only when there is something to end.
func (s *Service) Reap(ctx context.Context) (int, error) {
	sn, werr := s.pin(ctx)
	if werr != nil {
		return 0, werr
	}
	n, _, err := s.reapAt(ctx, sn)
	return n, err
}

// reapAt is Reap deciding from the records of sn, a snapshot the caller
// pinned anyway. committed reports whether a reap command committed.
func (s *Service) reapAt(ctx context.Context, sn *head.Snapshot) (reaped int, committed bool, err error) {
	if sn.Empty() {
		return 0, false, nil
	}
	clock, err := s.leaseClock(snapshotReader(ctx, sn))
	if err != nil {
		return 0, false, err
	}
	wall := s.wallMillis()
	recs, err := sn.Scan(ctx, nokv.FamilySnapshotRef, nokv.RootPrefix(s.root), nil, 0)
	if err != nil {
		return 0, false, err
	}
	var due, claimed int
	for _, r := range recs {
		ref, err := nokv.DecodeSnapshotRef(r.Value)
		if err != nil {
			return 0, false, err
		}
		switch {
		case ref.State == nokv.SnapshotStateReapClaimed:
			claimed++
		case ref.State == nokv.SnapshotStateActive && ref.LeaseDeadline+s.graceMillis() <= max(wall, clock.HighWater):
			// Due by the lease clock; the claim command decides with the
			// wall clock whether it may reap now, and records a
			// regression if there is one.
			due++
		}
	}
	if due > 0 {
		n, err := s.reapCommand(ctx, wall, false)
		if err != nil {
			return 0, false, err
		}
		claimed += n
		committed = true
	}
	if claimed == 0 {
		return 0, committed, nil
	}
	n, err := s.reapCommand(ctx, wall, true)
	return n, true, err
}

// reapQuietly gives the reaper its turn inside a tool call, deciding
// from sn, and returns the snapshot the call goes on with: sn, or a fresh
// pin when the reaper committed. The call's result does not depend on
// the reap (an Active snapshot past its deadline already reports
// expired), so a failed reap is left for a later call.
func (s *Service) reapQuietly(ctx context.Context, sn *head.Snapshot) *head.Snapshot {
	if _, committed, err := s.reapAt(ctx, sn); err != nil || !committed {
		return sn
	}
	if fresh, werr := s.pin(ctx); werr == nil {
		return fresh
	}
	return sn
}

// reapCommand runs one reap command over the root's snapshot records at
// the command's own state: with finish false it claims up to ReapBatch
// reapable Active snapshots, releasing their holds; with finish true it
// marks up to ReapBatch claimed ones Reaped. It returns how many it
// changed.
func (s *Service) reapCommand(ctx context.Context, wall uint64, finish bool) (int, error) {
	tag := "cairn.workbench.snapshot-reap-claim.v1"
	if finish {
		tag = "cairn.workbench.snapshot-reap-finish.v1"
	}
	res, err := s.store.Do(ctx, head.Command{
		Namespace: s.root,
		RequestID: s.requestID(),
		Digest:    head.Digest([]byte(tag), []byte(fmt.Sprint(wall))),
		Apply: func(tx *head.Tx) ([]byte, error) {
			n, err := s.reapBatch(tx, wall, finish)
			if err != nil {
				return nil, err
			}
			return []byte(fmt.Sprint(n)), nil
		},
	})
	if err != nil {
		return 0, err
	}
	var n int
	_, err = fmt.Sscan(string(res.Value), &n)
	return n, err
}

// reapBatch is the body of a reap command.
func (s *Service) reapBatch(tx *head.Tx, wall uint64, finish bool) (int, error) {
	var clock nokv.LeaseClock
	if !finish {
		var err error
		if clock, err = s.observeLeaseClock(tx, wall); err != nil {
			return 0, err
		}
	}
	recs, err := tx.Scan(nokv.FamilySnapshotRef, nokv.RootPrefix(s.root), nil, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if n >= s.opts.ReapBatch {
			break
		}
		k, err := nokv.ParseSnapshotRefKey(r.Key)
		if err != nil {
			return 0, err
		}
		ref, err := nokv.DecodeSnapshotRef(r.Value)
		if err != nil {
			return 0, err
		}
		switch {
		case !finish && ref.State == nokv.SnapshotStateActive && ref.ConsumerCount == 0 && s.reapable(clock, wall, ref.LeaseDeadline):
			ref.State = nokv.SnapshotStateReapClaimed
			if err := s.putSnapshotRef(tx, k.Incarnation, k.Snapshot, ref); err != nil {
				return 0, err
			}
			if err := s.endSnapshot(tx, k.Incarnation, k.Snapshot, ref, nokv.SnapshotStateReapClaimed); err != nil {
				return 0, err
			}
		case finish && ref.State == nokv.SnapshotStateReapClaimed:
			ref.State = nokv.SnapshotStateReaped
			if err := s.putSnapshotRef(tx, k.Incarnation, k.Snapshot, ref); err != nil {
				return 0, err
			}
			if err := s.projectAlias(tx, k.Incarnation, k.Snapshot, ref, nokv.SnapshotStateReaped); err != nil {
				return 0, err
			}
			wb, err := s.incarnationWorkbench(tx, k.Incarnation)
			if err != nil {
				return 0, err
			}
			if err := s.snapshotEvent(tx, wb, k.Incarnation, nokv.ChangeEventKindSnapshotReaped, k.Snapshot); err != nil {
				return 0, err
			}
		default:
			continue
		}
		n++
	}
	return n, nil
}

// incarnationWorkbench returns the workbench id that claimed incarnation
// inc.
func (s *Service) incarnationWorkbench(tx *head.Tx, inc nokv.IncarnationID) (string, error) {
	key, err := nokv.WorkspaceIncarnationClaimKey{Root: s.root, Incarnation: inc}.Encode()
	if err != nil {
		return "", err
	}
	b, ok, err := tx.Get(nokv.FamilyWorkspaceIncarnationClaim, key)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("workbench: snapshot of incarnation %s, which no workbench claimed", inc)
	}
	c, err := nokv.DecodeWorkspaceIncarnationClaim(b)
	return c.WorkbenchID, err
}
