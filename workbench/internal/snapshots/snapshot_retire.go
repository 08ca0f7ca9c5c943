package snapshots

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// snapshotRetireInput is workbench_snapshot_retire's input.
type snapshotRetireInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id"`
	Name       *string `json:"name"`
	Reason     *string `json:"reason"`

	id  string
	sel core.SnapshotSelector
}

func (in *snapshotRetireInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if in.id, werr = core.ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	in.sel, werr = selectorOf(in.SnapshotID, in.Name)
	return werr
}

// SnapshotRetireInput is workbench_snapshot_retire's input: exactly one
// of SnapshotID and Name selects the snapshot.
type SnapshotRetireInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id,omitempty"`
	Name       *string `json:"name,omitempty"`
	Reason     *string `json:"reason,omitempty"` // recorded in the retire annotation
}

// SnapshotRetireResult is workbench_snapshot_retire's result.
type SnapshotRetireResult struct {
	core.Success
	WorkbenchID string  `json:"workbench_id"`
	Path        string  `json:"path"` // the workbench's presentation path
	SnapshotID  uint64  `json:"snapshot_id"`
	Name        *string `json:"name"` // nil: minted without a name
	// Retired says this call retired the snapshot; false when it had
	// already ended.
	Retired bool   `json:"retired"`
	State   string `json:"state"`
	// RetireAnnotation is the canonical {"metadata":null,"reason":…} the
	// first retirement recorded; nil when it gave no reason, or when a
	// reap ended the snapshot.
	RetireAnnotation json.RawMessage `json:"retire_annotation"`
}

// workbench_snapshot_retire: the first retirement of a live or expired
// snapshot reports retired:true and records the retire annotation; a
// retirement of a snapshot that already ended (retired, reaped, or
// claimed by a reap) changes nothing and reports retired:false with the
// annotation the first retirement recorded. A snapshot that a restore
// still consumes is ForkRetentionActive.
func snapshotRetireTool(ctx context.Context, s *core.Service, in *snapshotRetireInput) (*SnapshotRetireResult, *core.Error) {
	sn, werr := pinNamed(ctx, s, in.id)
	if werr != nil {
		return nil, werr
	}
	ann := retireAnnotation(in.Reason)
	o, werr := runSnapshotCommand(ctx, s, sn, "cairn.workbench.snapshot-retire.v1", [][]byte{
		[]byte(in.id), []byte(in.sel.String()), ann,
	}, func(tx *head.Tx) (snapshotOutcome, error) {
		inc, id, ref, err := lookupForCommand(s, tx, in.id, in.sel)
		if err != nil {
			return snapshotOutcome{}, err
		}
		if ref.State != nokv.SnapshotStateActive {
			return snapshotOutcome{id: id, ref: ref}, nil
		}
		if ref.ConsumerCount > 0 {
			return snapshotOutcome{}, core.Reject(core.ForkRetentionActive(fmt.Sprintf("snapshot %s has %d active fork consumers", id, ref.ConsumerCount)))
		}
		ref.State = nokv.SnapshotStateRetired
		ref.RetireAnnotation = ann
		if err := PutSnapshotRef(s, tx, inc, id, ref); err != nil {
			return snapshotOutcome{}, err
		}
		if err := endSnapshot(s, tx, inc, id, ref, nokv.SnapshotStateRetired); err != nil {
			return snapshotOutcome{}, err
		}
		if err := snapshotEvent(s, tx, in.id, inc, nokv.ChangeEventKindSnapshotRetired, id); err != nil {
			return snapshotOutcome{}, err
		}
		return snapshotOutcome{id: id, ref: ref, changed: true}, nil
	})
	if werr != nil {
		return nil, werr
	}
	return &SnapshotRetireResult{
		WorkbenchID:      in.id,
		Path:             core.WorkbenchPath(s.LogicalRoot(), in.id),
		SnapshotID:       uint64(o.id),
		Name:             o.ref.Alias,
		Retired:          o.changed,
		State:            core.SnapshotState(o.ref, o.leaseNow),
		RetireAnnotation: json.RawMessage(o.ref.RetireAnnotation),
	}, nil
}
