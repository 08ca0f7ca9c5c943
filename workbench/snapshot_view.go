package workbench

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Frozen reads: list, stat and read with at_snapshot.
//
// The selector (a snapshot id or name) is resolved at the live head: the
// workbench's marker, then the alias (for a name) and the SnapshotRef.
// Only an alive snapshot is read: Active with its deadline after the
// lease clock's now. Any other (expired, claimed by a reap, reaped or
// retired) is SnapshotExpired; a snapshot or workbench that resolves to
// nothing is NotFound, as the reference's read paths map the storage
// side's miss generically (SnapshotNotFound belongs to the snapshot
// tools' own lookups). The view then opens the root the snapshot holds
// (head.Store.At) and reads the workbench there, so every read of the
// request runs the live code over the frozen state. A list cursor minted
// in such a view binds the selector and the snapshot's read version
// (cursor.go).

// snapshotView opens a view of workbench id at the snapshot at names,
// fetching what reads names in the held root as a live view does.
func (s *Service) snapshotView(ctx context.Context, id string, at any, reads viewReads) (*view, *Error) {
	sel, werr := parseAtSnapshot(at)
	if werr != nil {
		return nil, werr
	}
	live, werr := s.pin(ctx)
	if werr != nil {
		return nil, werr
	}
	// The tables of what the lookup reads, in one round: small shards
	// travel inline in them.
	if err := live.Prefetch(ctx, []shards.Family{nokv.FamilyWorkspaceCurrent, nokv.FamilySnapshotRef, nokv.FamilySnapshotAlias, nokv.FamilyLeaseClock}, nil); err != nil {
		return nil, FromError(err)
	}
	read := snapshotReader(ctx, live)
	ws, ok, werr := s.visibleWorkspace(ctx, read, id)
	if werr != nil {
		return nil, werr
	}
	if !ok {
		return nil, Missing(fmt.Sprintf("workbench %s does not exist", id)).With("path", "")
	}
	snapID, ref, ok, err := s.resolveSnapshot(read, ws.Incarnation, sel)
	if err != nil {
		return nil, FromError(err)
	}
	if !ok {
		return nil, Missing(fmt.Sprintf("snapshot %s of workbench %s not found", sel, id))
	}
	clock, err := s.leaseClock(read)
	if err != nil {
		return nil, FromError(err)
	}
	if st := snapshotState(ref, max(s.wallMillis(), clock.HighWater)); st != "alive" {
		return nil, SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is not alive: %s", snapID, id, st))
	}
	frozen, err := s.store.At(ctx, digest.Hash(ref.HeldRoot))
	if err != nil {
		if errors.Is(err, bucket.ErrNotExist) {
			// Released and swept between the lookup and the open.
			return nil, SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is no longer held", snapID, id))
		}
		return nil, FromError(err)
	}
	fws, ok, werr := s.prefetch(ctx, frozen, id, reads)
	if werr != nil {
		return nil, werr
	}
	if !ok || fws.Incarnation != ws.Incarnation || fws.State != nokv.WorkspaceStateVisible {
		return nil, InvalidState(fmt.Sprintf("snapshot %s does not hold workbench %s's incarnation", snapID, id))
	}
	return &view{s: s, sn: frozen, id: id, ws: fws, at: at}, nil
}
