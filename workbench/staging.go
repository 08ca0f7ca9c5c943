package workbench

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

	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// staging is one publication's objects: the ledger and the blocks it
// names, with the ids they are keyed by. A small body has neither: it is
// kept inline, in its one manifest row.
type staging struct {
	op     nokv.OperationID
	rev    nokv.RevisionID
	origin bodies.Origin
	blocks []bodies.Block
	inline []byte // the whole body, when it is kept inline
	staged bool   // the ledger and every block are in the bucket
	// stamp is the oldest store time of the blocks (zero: none, or a
	// store that reports no times). The command that names them must be
	// built on a head whose floor is no later (head.Tx.Floor), else a
	// sweep may take them first: it refuses (staleStaging), and the
	// publication uploads the body again under fresh ids (restage).
	stamp time.Time
	// produce writes the body again, for restage; nil when it cannot.
	produce func(write func([]byte) error) error
}

// hasLedger reports whether st has objects and so a ledger to stage and,
// once published, to delete.
func (st *staging) hasLedger() bool { return len(st.blocks) > 0 }

// stale reports whether st's blocks are older than floor, the floor of
// the attempt that would name them.
func (st *staging) stale(floor time.Time) bool {
	return st != nil && st.hasLedger() && !st.stamp.IsZero() && st.stamp.Before(floor)
}

// staleStaging is the refusal of a command whose blocks are older than
// its attempt's floor: nothing was applied, and it never will be (a
// published command's refusal is recorded for its request id).
func staleStaging() *Error {
	return newError(CodeTimeout, "the body was staged too long ago to be published; the change was not applied", true, sourceDetails())
}

// rejectStale is a command's refusal of stale blocks (staleStaging),
// which its caller answers by staging the body again (isStale).
func rejectStale() error { return &pubReject{e: staleStaging(), stale: true} }

// isStale reports whether a command refused its blocks as stale.
func isStale(err error) bool {
	pr, ok := errors.AsType[*pubReject](err)
	return ok && pr.stale
}

// newStaging draws the ids of a publication of path in workbench id by
// tool; its blocks are planned by the caller.
func newStaging(tool, id string, path []string) *staging {
	return &staging{
		op:     nokv.NewOperationID(),
		rev:    nokv.NewRevisionID(),
		origin: bodies.Origin{Tool: tool, WorkbenchID: id, Path: LogicalPath(path)},
	}
}

// planStaging returns a new staging of data: inline when it is small
// (Service.inlines), else in blocks.
func (s *Service) planStaging(tool, id string, path []string, data []byte) *staging {
	st := newStaging(tool, id, path)
	if s.inlines(len(data)) {
		st.inline = bytes.Clone(data)
		return st
	}
	st.blocks = s.bodies.Plan(s.root, st.rev, data)
	return st
}

// objects returns st as package bodies stages it.
func (s *Service) objects(st *staging) *bodies.Staging {
	return &bodies.Staging{Operation: st.op, Root: s.root, Revision: st.rev, Origin: st.origin, Blocks: st.blocks}
}

// stageBytes writes st's ledger and uploads its blocks, cut from data,
// once, in one round. A staging without blocks (inline, or an empty
// body) writes nothing.
func (s *Service) stageBytes(ctx context.Context, st *staging, data []byte) *Error {
	if st.staged {
		return nil
	}
	if !st.hasLedger() {
		st.staged = true
		return nil
	}
	st.produce = func(write func([]byte) error) error { return write(data) }
	stamp, err := s.bodies.Stage(ctx, s.objects(st), data)
	if err != nil {
		return FromError(err)
	}
	st.stamp, st.staged = stamp, true
	return nil
}

// restage uploads st's body again under fresh ids (a new operation and
// revision, so new keys that no sweep has listed) and returns the new
// staging, for a command that refused st as stale. The blocks are cut
// alike (the same bytes, the same block size), so only their owner and
// keys change (restagedRows). st itself is discarded.
func (s *Service) restage(ctx context.Context, st *staging) (*staging, *Error) {
	if st.produce == nil {
		return nil, staleStaging()
	}
	fresh := &staging{op: nokv.NewOperationID(), rev: nokv.NewRevisionID(), origin: st.origin, produce: st.produce}
	plan := s.bodies.NewPlanner(s.root, fresh.rev)
	if err := st.produce(func(b []byte) error { plan.Write(b); return nil }); err != nil {
		return nil, FromError(err)
	}
	fresh.blocks = plan.Blocks()
	if len(fresh.blocks) != len(st.blocks) {
		return nil, Internal(fmt.Sprintf("a body staged again was cut into %d blocks, first into %d", len(fresh.blocks), len(st.blocks)))
	}
	stamp, err := s.bodies.StageStream(ctx, s.objects(fresh), fresh.produce)
	if err != nil {
		return nil, FromError(err)
	}
	fresh.stamp, fresh.staged = stamp, true
	s.discardStaging(ctx, st)
	return fresh, nil
}

// restagedRows returns rows with every row of old's blocks naming the
// block of fresh at the same index instead.
func restagedRows(rows []nokv.ArtifactManifestEntry, old, fresh *staging) []nokv.ArtifactManifestEntry {
	out := append([]nokv.ArtifactManifestEntry(nil), rows...)
	for i, r := range out {
		if r.PhysicalOwner != old.rev || r.Inline != nil {
			continue
		}
		for _, b := range fresh.blocks {
			if b.Index == r.PhysicalObjectIndex {
				out[i].PhysicalOwner, out[i].ObjectKey = fresh.rev, b.Key
			}
		}
	}
	return out
}

// discardStaging deletes what a publication that did not land staged:
// the blocks, then the ledger. Best effort: whatever a failure leaves
// behind is still named by the ledger.
func (s *Service) discardStaging(ctx context.Context, st *staging) {
	if st == nil || !st.hasLedger() {
		return
	}
	_ = s.bodies.Discard(ctx, s.objects(st))
	st.staged = false
}

// ownRows returns the manifest rows of st's blocks, which hold the body's
// bytes from logical offset off on: one inline row for an inline body.
func ownRows(st *staging, off uint64, seg *nokv.AppendSegment) []nokv.ArtifactManifestEntry {
	if st.inline != nil {
		row := nokv.ArtifactManifestEntry{
			PhysicalOwner: st.rev,
			LogicalOffset: off,
			Length:        uint64(len(st.inline)),
			DigestURI:     DigestURI(st.inline),
			Inline:        st.inline,
		}
		if seg != nil {
			c := *seg
			row.Append = &c
		}
		return []nokv.ArtifactManifestEntry{row}
	}
	rows := make([]nokv.ArtifactManifestEntry, len(st.blocks))
	for i, b := range st.blocks {
		rows[i] = nokv.ArtifactManifestEntry{
			PhysicalOwner:       st.rev,
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
