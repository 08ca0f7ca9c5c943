package workbench

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// snapshotRetireInput is workbench_snapshot_retire's input.
type snapshotRetireInput struct {
	ID         string  `json:"id"`
	SnapshotID *uint64 `json:"snapshot_id"`
	Name       *string `json:"name"`
	Reason     *string `json:"reason"`

	id  string
	sel snapshotSelector
}

func (in *snapshotRetireInput) resolve(*Service) *Error {
	var werr *Error
	if in.id, werr = ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	in.sel, werr = selectorOf(in.SnapshotID, in.Name)
	return werr
}

// workbench_snapshot_retire: the first retirement of a live or expired
// snapshot reports retired:true and records the retire annotation; a
// retirement of a snapshot that already ended (retired, reaped, or
// claimed by a reap) changes nothing and reports retired:false with the
// annotation the first retirement recorded. A snapshot that a restore
// still consumes is ForkRetentionActive.
func (s *Service) snapshotRetireTool(ctx context.Context, in *snapshotRetireInput) (map[string]any, *Error) {
	sn, werr := s.pinNamed(ctx, in.id)
	if werr != nil {
		return nil, werr
	}
	ann := retireAnnotation(in.Reason)
	o, werr := s.runSnapshotCommand(ctx, sn, "cairn.workbench.snapshot-retire.v1", [][]byte{
		[]byte(in.id), []byte(in.sel.String()), ann,
	}, func(tx *head.Tx) (snapshotOutcome, error) {
		inc, id, ref, err := s.lookupForCommand(tx, in.id, in.sel)
		if err != nil {
			return snapshotOutcome{}, err
		}
		if ref.State != nokv.SnapshotStateActive {
			return snapshotOutcome{id: id, ref: ref}, nil
		}
		if ref.ConsumerCount > 0 {
			return snapshotOutcome{}, reject(ForkRetentionActive(fmt.Sprintf("snapshot %s has %d active fork consumers", id, ref.ConsumerCount)))
		}
		ref.State = nokv.SnapshotStateRetired
		ref.RetireAnnotation = ann
		if err := s.putSnapshotRef(tx, inc, id, ref); err != nil {
			return snapshotOutcome{}, err
		}
		if err := s.endSnapshot(tx, inc, id, ref, nokv.SnapshotStateRetired); err != nil {
			return snapshotOutcome{}, err
		}
		if err := s.snapshotEvent(tx, in.id, inc, nokv.ChangeEventKindSnapshotRetired, id); err != nil {
			return snapshotOutcome{}, err
		}
		return snapshotOutcome{id: id, ref: ref, changed: true}, nil
	})
	if werr != nil {
		return nil, werr
	}
	return map[string]any{
		"workbench_id":      in.id,
		"path":              WorkbenchPath(s.logical, in.id),
		"snapshot_id":       uint64(o.id),
		"name":              aliasValue(o.ref.Alias),
		"retired":           o.changed,
		"state":             snapshotState(o.ref, o.leaseNow),
		"retire_annotation": annotationValue(o.ref.RetireAnnotation),
	}, nil
}
