package snapshots

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// snapshotRenewInput is workbench_snapshot_renew's input.
type snapshotRenewInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id"`
	Name       *string `json:"name"`
	TTLDays    *uint64 `json:"ttl_days"`

	id  string
	sel core.SnapshotSelector
	ttl uint64
}

func (in *snapshotRenewInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if in.id, werr = core.ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	if in.sel, werr = selectorOf(in.SnapshotID, in.Name); werr != nil {
		return werr
	}
	in.ttl, werr = ttlDays(in.TTLDays)
	return werr
}

// SnapshotRenewInput is workbench_snapshot_renew's input: exactly one of
// SnapshotID and Name selects the snapshot.
type SnapshotRenewInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id,omitempty"`
	Name       *string `json:"name,omitempty"`
	// TTLDays is the new lease from now, 1 to 90 days; nil: 7.
	TTLDays *uint64 `json:"ttl_days,omitempty"`
}

// SnapshotRenewResult is workbench_snapshot_renew's result.
type SnapshotRenewResult struct {
	core.Success
	SnapshotLease
	// Renewed is always true, also when the lease already ran later
	// than the renewal asked and nothing changed.
	Renewed bool `json:"renewed"`
}

// lookupForCommand finds the workbench and the snapshot a renew or retire
// names, at the command's own state: an unknown workbench or snapshot is
// SnapshotNotFound, as the reference maps its snapshot lookups' misses.
func lookupForCommand(s *core.Service, tx *head.Tx, wb string, sel core.SnapshotSelector) (nokv.IncarnationID, nokv.SnapshotID, nokv.SnapshotRef, error) {
	ws, ok, werr := s.VisibleWorkspace(tx.Context(), tx.Get, wb)
	if werr != nil {
		return nokv.IncarnationID{}, 0, nokv.SnapshotRef{}, werr
	}
	if !ok {
		return nokv.IncarnationID{}, 0, nokv.SnapshotRef{}, core.Reject(core.SnapshotNotFound(fmt.Sprintf("workbench %s does not exist", wb)))
	}
	id, ref, ok, err := s.ResolveSnapshot(tx.Get, ws.Incarnation, sel)
	if err != nil {
		return nokv.IncarnationID{}, 0, nokv.SnapshotRef{}, err
	}
	if !ok {
		return nokv.IncarnationID{}, 0, nokv.SnapshotRef{}, core.Reject(core.SnapshotNotFound(fmt.Sprintf("snapshot %s of workbench %s not found", sel, wb)))
	}
	return ws.Incarnation, id, ref, nil
}

// pinNamed pins the shard for a renewal or retirement of a snapshot of
// workbench wb. A deployment never written holds no snapshot: that is
// SnapshotNotFound, and nothing is written.
func pinNamed(ctx context.Context, s *core.Service, wb string) (*head.Snapshot, *core.Error) {
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	if sn.Empty() {
		return nil, core.SnapshotNotFound(fmt.Sprintf("workbench %s does not exist", wb))
	}
	return sn, nil
}

// workbench_snapshot_renew: extend only. A renewal whose deadline is not
// later than the current one changes nothing and still reports
// renewed:true; an Active snapshot past its deadline that no reap has
// claimed comes back to life. A retired snapshot is InvalidState, one a
// reap claimed or finished SnapshotExpired.
func snapshotRenewTool(ctx context.Context, s *core.Service, in *snapshotRenewInput) (*SnapshotRenewResult, *core.Error) {
	sn, werr := pinNamed(ctx, s, in.id)
	if werr != nil {
		return nil, werr
	}
	wall := s.WallMillis()
	o, werr := runSnapshotCommand(ctx, s, sn, "cairn.workbench.snapshot-renew.v1", [][]byte{
		[]byte(in.id), []byte(in.sel.String()), wire.NewWriter(nil).U64(in.ttl).U64(wall).Bytes(),
	}, func(tx *head.Tx) (snapshotOutcome, error) {
		inc, id, ref, err := lookupForCommand(s, tx, in.id, in.sel)
		if err != nil {
			return snapshotOutcome{}, err
		}
		switch ref.State {
		case nokv.SnapshotStateRetired:
			return snapshotOutcome{}, core.Reject(snapshotRetired(id))
		case nokv.SnapshotStateReapClaimed, nokv.SnapshotStateReaped:
			return snapshotOutcome{}, core.Reject(core.SnapshotExpired(fmt.Sprintf("snapshot %s was reaped", id)))
		}
		clock, err := observeLeaseClock(s, tx, wall)
		if err != nil {
			return snapshotOutcome{}, err
		}
		if deadline := clock.HighWater + in.ttl*dayMillis; deadline > ref.LeaseDeadline {
			ref.LeaseDeadline = deadline
			if err := PutSnapshotRef(s, tx, inc, id, ref); err != nil {
				return snapshotOutcome{}, err
			}
			if err := snapshotEvent(s, tx, in.id, inc, nokv.ChangeEventKindSnapshotRenewed, id); err != nil {
				return snapshotOutcome{}, err
			}
		}
		return snapshotOutcome{id: id, ref: ref, leaseNow: clock.HighWater}, nil
	})
	if werr != nil {
		return nil, werr
	}
	return &SnapshotRenewResult{SnapshotLease: leaseResult(s, in.id, o, in.ttl), Renewed: true}, nil
}

// snapshotRetired refuses to renew a retired snapshot: the reference's
// server refuses it as PreconditionFailed, which the tools report as
// InvalidState.
func snapshotRetired(id nokv.SnapshotID) *core.Error {
	return core.NewError(core.CodeInvalidState, fmt.Sprintf("snapshot %s is retired and cannot be renewed", id), false,
		core.ServerDetails("PreconditionFailed", "SnapshotLifecycle", nil))
}
