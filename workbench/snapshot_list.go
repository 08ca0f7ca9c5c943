package workbench

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/workbench/nokv"
)

// snapshotListInput is workbench_snapshot_list's input.
type snapshotListInput struct {
	ID string `json:"id"`

	id string
}

func (in *snapshotListInput) resolve(*Service) *Error {
	var werr *Error
	in.id, werr = ParseWorkbenchID(in.ID)
	return werr
}

// workbench_snapshot_list: every snapshot of the workbench, whatever its
// state, in mint order (the commit version of the mint, then the
// sequence of its SnapshotMinted event in that commit).
// Each reports the name it was minted with, even when a newer mint has
// taken the name since. The list first gives the reaper its turn
// (Service.Reap), so that snapshots past their lease and grace show as
// reaped rather than expired once a reap could end them.
func (s *Service) snapshotListTool(ctx context.Context, in *snapshotListInput) (map[string]any, *Error) {
	sn, werr := s.pin(ctx)
	if werr != nil {
		return nil, werr
	}
	sn = s.reapQuietly(ctx, sn)
	ws, ok, werr := s.visibleWorkspace(ctx, snapshotReader(ctx, sn), in.id)
	if werr != nil {
		return nil, werr
	}
	if !ok {
		return nil, SnapshotNotFound(fmt.Sprintf("workbench %s does not exist", in.id))
	}
	clock, err := s.leaseClock(snapshotReader(ctx, sn))
	if err != nil {
		return nil, FromError(err)
	}
	leaseNow := max(s.wallMillis(), clock.HighWater)
	recs, err := sn.Scan(ctx, nokv.FamilySnapshotRef, nokv.SnapshotRefPrefix(s.root, ws.Incarnation), nil, 0)
	if err != nil {
		return nil, FromError(err)
	}
	type row struct {
		id  nokv.SnapshotID
		ref nokv.SnapshotRef
	}
	rows := make([]row, len(recs))
	for i, r := range recs {
		k, err := nokv.ParseSnapshotRefKey(r.Key)
		if err != nil {
			return nil, FromError(err)
		}
		ref, err := nokv.DecodeSnapshotRef(r.Value)
		if err != nil {
			return nil, FromError(err)
		}
		rows[i] = row{k.Snapshot, ref}
	}
	slices.SortFunc(rows, func(a, b row) int {
		if c := cmp.Compare(a.ref.CreatedVersion, b.ref.CreatedVersion); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ref.MintSequence, b.ref.MintSequence); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	out := make([]any, len(rows))
	for i, r := range rows {
		out[i] = map[string]any{
			"snapshot_id":           uint64(r.id),
			"name":                  aliasValue(r.ref.Alias),
			"read_version":          r.ref.ReadVersion,
			"lease_expires_at":      r.ref.LeaseDeadline,
			"lease_expires_unix_ms": r.ref.LeaseDeadline,
			"annotation":            annotationValue(r.ref.Annotation),
			"state":                 snapshotState(r.ref, leaseNow),
			"retire_annotation":     annotationValue(r.ref.RetireAnnotation),
		}
	}
	return map[string]any{
		"workbench_id":   in.id,
		"path":           WorkbenchPath(s.logical, in.id),
		"snapshot_count": len(out),
		"snapshots":      out,
	}, nil
}
