package snapshots

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"

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
func graceMillis(s *core.Service) uint64 { return uint64(s.Opts.LeaseGrace.Milliseconds()) }

// observeLeaseClock records, in tx, an observation of wall time wall (ms)
// and returns the clock after it. It writes only when the clock changes.
func observeLeaseClock(s *core.Service, tx *head.Tx, wall uint64) (nokv.LeaseClock, error) {
	c, err := s.LeaseClock(tx.Get)
	if err != nil {
		return nokv.LeaseClock{}, err
	}
	next := c
	if wall >= c.HighWater {
		next.HighWater = wall
	} else {
		next.ReapNotBefore = max(c.ReapNotBefore, c.HighWater+graceMillis(s))
	}
	if next == c {
		return c, nil
	}
	key, err := nokv.LeaseClockKey{Root: s.Root()}.Encode()
	if err != nil {
		return nokv.LeaseClock{}, err
	}
	return next, core.PutRecord(tx, nokv.FamilyLeaseClock, key, next.Encode)
}

// reapable reports whether a lease ending at deadline may be reaped at
// wall time wall, with the clock c already holding that observation.
func reapable(s *core.Service, c nokv.LeaseClock, wall, deadline uint64) bool {
	return wall >= c.HighWater && wall >= c.ReapNotBefore && deadline+graceMillis(s) <= wall
}

// Reap ends, in one bounded batch (Options.ReapBatch), the snapshots of
// the Service's root whose lease and grace are over, and finishes the
// reaps an earlier call claimed. It returns how many snapshots it marked
// Reaped. It reads the snapshot records of the whole root once and
// commits only when there is something to end.
func Reap(ctx context.Context, s *core.Service) (int, error) {
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return 0, werr
	}
	n, _, err := reapAt(ctx, s, sn)
	return n, err
}

// reapAt is Reap deciding from the records of sn, a snapshot the caller
// pinned anyway. committed reports whether a reap command committed.
func reapAt(ctx context.Context, s *core.Service, sn *head.Snapshot) (reaped int, committed bool, err error) {
	if sn.Empty() {
		return 0, false, nil
	}
	clock, err := s.LeaseClock(core.SnapshotReader(ctx, sn))
	if err != nil {
		return 0, false, err
	}
	wall := s.WallMillis()
	recs, err := sn.Scan(ctx, nokv.FamilySnapshotRef, nokv.RootPrefix(s.Root()), nil, 0)
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
		case ref.State == nokv.SnapshotStateActive && ref.LeaseDeadline+graceMillis(s) <= max(wall, clock.HighWater):
			// Due by the lease clock; the claim command decides with the
			// wall clock whether it may reap now, and records a
			// regression if there is one.
			due++
		}
	}
	if due > 0 {
		n, err := reapCommand(ctx, s, wall, false)
		if err != nil {
			return 0, false, err
		}
		claimed += n
		committed = true
	}
	if claimed == 0 {
		return 0, committed, nil
	}
	n, err := reapCommand(ctx, s, wall, true)
	return n, true, err
}

// reapQuietly gives the reaper its turn inside a tool call, deciding
// from sn, and returns the snapshot the call goes on with: sn, or a fresh
// pin when the reaper committed. The call's result does not depend on
// the reap (an Active snapshot past its deadline already reports
// expired), so a failed reap is left for a later call.
func reapQuietly(ctx context.Context, s *core.Service, sn *head.Snapshot) *head.Snapshot {
	if _, committed, err := reapAt(ctx, s, sn); err != nil || !committed {
		return sn
	}
	if fresh, werr := s.Pin(ctx); werr == nil {
		return fresh
	}
	return sn
}

// reapCommand runs one reap command over the root's snapshot records at
// the command's own state: with finish false it claims up to ReapBatch
// reapable Active snapshots, releasing their holds; with finish true it
// marks up to ReapBatch claimed ones Reaped. It returns how many it
// changed.
func reapCommand(ctx context.Context, s *core.Service, wall uint64, finish bool) (int, error) {
	tag := "cairn.workbench.snapshot-reap-claim.v1"
	if finish {
		tag = "cairn.workbench.snapshot-reap-finish.v1"
	}
	res, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest([]byte(tag), []byte(fmt.Sprint(wall))),
		Apply: func(tx *head.Tx) ([]byte, error) {
			n, err := reapBatch(s, tx, wall, finish)
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
func reapBatch(s *core.Service, tx *head.Tx, wall uint64, finish bool) (int, error) {
	var clock nokv.LeaseClock
	if !finish {
		var err error
		if clock, err = observeLeaseClock(s, tx, wall); err != nil {
			return 0, err
		}
	}
	recs, err := tx.Scan(nokv.FamilySnapshotRef, nokv.RootPrefix(s.Root()), nil, 0)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range recs {
		if n >= s.Opts.ReapBatch {
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
		case !finish && ref.State == nokv.SnapshotStateActive && ref.ConsumerCount == 0 && reapable(s, clock, wall, ref.LeaseDeadline):
			ref.State = nokv.SnapshotStateReapClaimed
			if err := PutSnapshotRef(s, tx, k.Incarnation, k.Snapshot, ref); err != nil {
				return 0, err
			}
			if err := endSnapshot(s, tx, k.Incarnation, k.Snapshot, ref, nokv.SnapshotStateReapClaimed); err != nil {
				return 0, err
			}
		case finish && ref.State == nokv.SnapshotStateReapClaimed:
			ref.State = nokv.SnapshotStateReaped
			if err := PutSnapshotRef(s, tx, k.Incarnation, k.Snapshot, ref); err != nil {
				return 0, err
			}
			if err := projectAlias(s, tx, k.Incarnation, k.Snapshot, ref, nokv.SnapshotStateReaped); err != nil {
				return 0, err
			}
			wb, err := incarnationWorkbench(s, tx, k.Incarnation)
			if err != nil {
				return 0, err
			}
			if err := snapshotEvent(s, tx, wb, k.Incarnation, nokv.ChangeEventKindSnapshotReaped, k.Snapshot); err != nil {
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
func incarnationWorkbench(s *core.Service, tx *head.Tx, inc nokv.IncarnationID) (string, error) {
	key, err := nokv.WorkspaceIncarnationClaimKey{Root: s.Root(), Incarnation: inc}.Encode()
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
