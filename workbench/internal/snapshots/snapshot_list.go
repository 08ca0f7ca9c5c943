package snapshots

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// snapshotListInput is workbench_snapshot_list's input.
type snapshotListInput struct {
	ID string `json:"id"`

	id string
}

func (in *snapshotListInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	in.id, werr = core.ParseWorkbenchID(in.ID)
	return werr
}

// SnapshotListInput is workbench_snapshot_list's input.
type SnapshotListInput struct {
	ID string `json:"id"`
}

// SnapshotListResult is workbench_snapshot_list's result.
type SnapshotListResult struct {
	core.Success
	WorkbenchID   string         `json:"workbench_id"`
	Path          string         `json:"path"` // the workbench's presentation path
	SnapshotCount int            `json:"snapshot_count"`
	Snapshots     []SnapshotInfo `json:"snapshots"` // in mint order
}

// SnapshotInfo is one snapshot of a workbench_snapshot_list result.
type SnapshotInfo struct {
	SnapshotID  uint64  `json:"snapshot_id"`
	Name        *string `json:"name"`         // the name it was minted with; nil: none
	ReadVersion uint64  `json:"read_version"` // the commit version it froze
	// The lease's deadline in Unix milliseconds of the lease clock, under
	// both names the contract gives it.
	LeaseExpiresAt     uint64 `json:"lease_expires_at"`
	LeaseExpiresUnixMS uint64 `json:"lease_expires_unix_ms"`
	// Annotation is the canonical {"metadata":…,"reason":…} of the mint.
	Annotation json.RawMessage `json:"annotation"`
	State      string          `json:"state"` // alive, expired, retired or reaped
	// RetireAnnotation is the canonical {"metadata":null,"reason":…} of
	// its retirement; nil when none was recorded.
	RetireAnnotation json.RawMessage `json:"retire_annotation"`
}

// workbench_snapshot_list: every snapshot of the workbench, whatever its
// state, in mint order (the commit version of the mint, then the
// sequence of its SnapshotMinted event in that commit).
// Each reports the name it was minted with, even when a newer mint has
// taken the name since. The list first gives the reaper its turn
// (Service.Reap), so that snapshots past their lease and grace show as
// reaped rather than expired once a reap could end them.
func snapshotListTool(ctx context.Context, s *core.Service, in *snapshotListInput) (*SnapshotListResult, *core.Error) {
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	sn = reapQuietly(ctx, s, sn)
	ws, ok, werr := s.VisibleWorkspace(ctx, core.SnapshotReader(ctx, sn), in.id)
	if werr != nil {
		return nil, werr
	}
	if !ok {
		return nil, core.SnapshotNotFound(fmt.Sprintf("workbench %s does not exist", in.id))
	}
	clock, err := s.LeaseClock(core.SnapshotReader(ctx, sn))
	if err != nil {
		return nil, core.FromError(err)
	}
	leaseNow := max(s.WallMillis(), clock.HighWater)
	recs, err := sn.Scan(ctx, nokv.FamilySnapshotRef, nokv.SnapshotRefPrefix(s.Root(), ws.Incarnation), nil, 0)
	if err != nil {
		return nil, core.FromError(err)
	}
	type row struct {
		id  nokv.SnapshotID
		ref nokv.SnapshotRef
	}
	rows := make([]row, len(recs))
	for i, r := range recs {
		k, err := nokv.ParseSnapshotRefKey(r.Key)
		if err != nil {
			return nil, core.FromError(err)
		}
		ref, err := nokv.DecodeSnapshotRef(r.Value)
		if err != nil {
			return nil, core.FromError(err)
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
	out := make([]SnapshotInfo, len(rows))
	for i, r := range rows {
		out[i] = SnapshotInfo{
			SnapshotID:         uint64(r.id),
			Name:               r.ref.Alias,
			ReadVersion:        r.ref.ReadVersion,
			LeaseExpiresAt:     r.ref.LeaseDeadline,
			LeaseExpiresUnixMS: r.ref.LeaseDeadline,
			Annotation:         json.RawMessage(r.ref.Annotation),
			State:              core.SnapshotState(r.ref, leaseNow),
			RetireAnnotation:   json.RawMessage(r.ref.RetireAnnotation),
		}
	}
	return &SnapshotListResult{
		WorkbenchID:   in.id,
		Path:          core.WorkbenchPath(s.LogicalRoot(), in.id),
		SnapshotCount: len(out),
		Snapshots:     out,
	}, nil
}
