package publish

// The workbench's side of artifact bodies. Package bodies owns the block
// objects and the staging ledgers (cutting, create-only uploads, reads,
// discards); this file keeps what the workbench knows about them: which
// revision and operation a staging belongs to, whether it is in the
// bucket yet, and how its blocks become ArtifactManifest rows and back.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Staging is one publication's objects: the ledger and the blocks it
// names, with the ids they are keyed by. A small body has neither: it is
// kept inline, in its one manifest row.
type Staging struct {
	Op     nokv.OperationID
	Rev    nokv.RevisionID
	Origin bodies.Origin
	Blocks []bodies.Block
	Inline []byte // the whole body, when it is kept inline
	Staged bool   // the ledger and every block are in the bucket
	// Stamp is the oldest store time of the blocks (zero: none, or a
	// store that reports no times). The command that names them must be
	// built on a head whose floor is no later (head.Tx.Floor), else a
	// sweep may take them first: it refuses (staleStaging), and the
	// publication uploads the body again under fresh ids (restage).
	Stamp time.Time
	// Produce writes the body again, for restage; nil when it cannot.
	Produce func(write func([]byte) error) error
}

// HasLedger reports whether st has objects and so a ledger to stage and,
// once published, to delete.
func (st *Staging) HasLedger() bool { return len(st.Blocks) > 0 }

// Stale reports whether st's blocks are older than floor, the floor of
// the attempt that would name them.
func (st *Staging) Stale(floor time.Time) bool {
	return st != nil && st.HasLedger() && !st.Stamp.IsZero() && st.Stamp.Before(floor)
}

// staleStaging is the refusal of a command whose blocks are older than
// its attempt's floor: nothing was applied, and it never will be (a
// published command's refusal is recorded for its request id).
func staleStaging() *core.Error {
	return core.NewError(core.CodeTimeout, "the body was staged too long ago to be published; the change was not applied", true, core.SourceDetails())
}

// RejectStale is a command's refusal of stale blocks (staleStaging),
// which its caller answers by staging the body again (isStale).
func RejectStale() error { return &core.PubReject{E: staleStaging(), Stale: true} }

// IsStale reports whether a command refused its blocks as stale.
func IsStale(err error) bool {
	pr, ok := errors.AsType[*core.PubReject](err)
	return ok && pr.Stale
}

// NewStaging draws the ids of a publication of path in workbench id by
// tool, at the time of s's engine; its blocks are planned by the caller.
func NewStaging(s *core.Service, tool, id string, path []string) *Staging {
	now := s.Store().Now()
	return &Staging{
		Op:     nokv.NewOperationID(now),
		Rev:    nokv.NewRevisionID(now),
		Origin: bodies.Origin{Tool: tool, WorkbenchID: id, Path: core.LogicalPath(path)},
	}
}

// PlanStaging returns a new staging of data: inline when it is small
// (Service.inlines), else in blocks.
func PlanStaging(s *core.Service, tool, id string, path []string, data []byte) *Staging {
	st := NewStaging(s, tool, id, path)
	if s.Inlines(len(data)) {
		st.Inline = bytes.Clone(data)
		return st
	}
	st.Blocks = s.Bodies.Plan(s.Root(), st.Rev, data)
	return st
}

// Objects returns st as package bodies stages it.
func Objects(s *core.Service, st *Staging) *bodies.Staging {
	return &bodies.Staging{Operation: st.Op, Root: s.Root(), Revision: st.Rev, Origin: st.Origin, Blocks: st.Blocks}
}

// StageBytes writes st's ledger and uploads its blocks, cut from data,
// once, in one round. A staging without blocks (inline, or an empty
// body) writes nothing.
func StageBytes(ctx context.Context, s *core.Service, st *Staging, data []byte) *core.Error {
	if st.Staged {
		return nil
	}
	if !st.HasLedger() {
		st.Staged = true
		return nil
	}
	st.Produce = func(write func([]byte) error) error { return write(data) }
	stamp, err := s.Bodies.Stage(ctx, Objects(s, st), data)
	if err != nil {
		return core.FromError(err)
	}
	st.Stamp, st.Staged = stamp, true
	return nil
}

// restage uploads st's body again under fresh ids (a new operation and
// revision, so new keys that no sweep has listed) and returns the new
// staging, for a command that refused st as stale. The blocks are cut
// alike (the same bytes, the same block size), so only their owner and
// keys change (restagedRows). st itself is discarded.
func restage(ctx context.Context, s *core.Service, st *Staging) (*Staging, *core.Error) {
	if st.Produce == nil {
		return nil, staleStaging()
	}
	now := s.Store().Now()
	fresh := &Staging{Op: nokv.NewOperationID(now), Rev: nokv.NewRevisionID(now), Origin: st.Origin, Produce: st.Produce}
	plan := s.Bodies.NewPlanner(s.Root(), fresh.Rev)
	if err := st.Produce(func(b []byte) error { plan.Write(b); return nil }); err != nil {
		return nil, core.FromError(err)
	}
	fresh.Blocks = plan.Blocks()
	if len(fresh.Blocks) != len(st.Blocks) {
		return nil, core.Internal(fmt.Sprintf("a body staged again was cut into %d blocks, first into %d", len(fresh.Blocks), len(st.Blocks)))
	}
	stamp, err := s.Bodies.StageStream(ctx, Objects(s, fresh), fresh.Produce)
	if err != nil {
		return nil, core.FromError(err)
	}
	fresh.Stamp, fresh.Staged = stamp, true
	DiscardStaging(ctx, s, st)
	return fresh, nil
}

// restagedRows returns rows with every row of old's blocks naming the
// block of fresh at the same index instead.
func restagedRows(rows []nokv.ArtifactManifestEntry, old, fresh *Staging) []nokv.ArtifactManifestEntry {
	out := append([]nokv.ArtifactManifestEntry(nil), rows...)
	for i, r := range out {
		if r.PhysicalOwner != old.Rev || r.Inline != nil {
			continue
		}
		for _, b := range fresh.Blocks {
			if b.Index == r.PhysicalObjectIndex {
				out[i].PhysicalOwner, out[i].ObjectKey = fresh.Rev, b.Key
			}
		}
	}
	return out
}

// DiscardStaging deletes what a publication that did not land staged:
// the blocks, then the ledger. Best effort: whatever a failure leaves
// behind is still named by the ledger.
func DiscardStaging(ctx context.Context, s *core.Service, st *Staging) {
	if st == nil || !st.HasLedger() {
		return
	}
	_ = s.Bodies.Discard(ctx, Objects(s, st))
	st.Staged = false
}

// OwnRows returns the manifest rows of st's blocks, which hold the body's
// bytes from logical offset off on: one inline row for an inline body.
func OwnRows(st *Staging, off uint64, seg *nokv.AppendSegment) []nokv.ArtifactManifestEntry {
	if st.Inline != nil {
		row := nokv.ArtifactManifestEntry{
			PhysicalOwner: st.Rev,
			LogicalOffset: off,
			Length:        uint64(len(st.Inline)),
			DigestURI:     core.DigestURI(st.Inline),
			Inline:        st.Inline,
		}
		if seg != nil {
			c := *seg
			row.Append = &c
		}
		return []nokv.ArtifactManifestEntry{row}
	}
	rows := make([]nokv.ArtifactManifestEntry, len(st.Blocks))
	for i, b := range st.Blocks {
		rows[i] = nokv.ArtifactManifestEntry{
			PhysicalOwner:       st.Rev,
			PhysicalObjectIndex: b.Index,
			ObjectKey:           b.Key,
			LogicalOffset:       off,
			Length:              b.Size,
			DigestURI:           b.Digest.URI(),
		}
		if seg != nil && off < seg.DeltaOffset+seg.DeltaLength && off+b.Size > seg.DeltaOffset {
			c := *seg
			rows[i].Append = &c
		}
		off += b.Size
	}
	return rows
}
