package workbench

// The workbench's side of artifact bodies. Package bodies owns the block
// objects and the staging ledgers (cutting, create-only uploads, reads,
// discards); this file keeps what the workbench knows about them: which
// revision and operation a staging belongs to, whether it is in the
// bucket yet, and how its blocks become ArtifactManifest rows and back.

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// staging is one publication's objects: the ledger and the blocks it
// names, with the ids they are keyed by.
type staging struct {
	op     nokv.OperationID
	rev    nokv.RevisionID
	origin bodies.Origin
	blocks []bodies.Block
	staged bool // the ledger and every block are in the bucket
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

// planStaging returns a new staging whose blocks hold data.
func (s *Service) planStaging(tool, id string, path []string, data []byte) *staging {
	st := newStaging(tool, id, path)
	st.blocks = s.bodies.Plan(s.root, st.rev, data)
	return st
}

// objects returns st as package bodies stages it.
func (s *Service) objects(st *staging) *bodies.Staging {
	return &bodies.Staging{Operation: st.op, Root: s.root, Revision: st.rev, Origin: st.origin, Blocks: st.blocks}
}

// stageBytes writes st's ledger and uploads its blocks, cut from data,
// once.
func (s *Service) stageBytes(ctx context.Context, st *staging, data []byte) *Error {
	if st.staged {
		return nil
	}
	if err := s.bodies.Stage(ctx, s.objects(st), data); err != nil {
		return FromError(err)
	}
	st.staged = true
	return nil
}

// discardStaging deletes what a publication that did not land staged:
// the blocks, then the ledger. Best effort: whatever a failure leaves
// behind is still named by the ledger.
func (s *Service) discardStaging(ctx context.Context, st *staging) {
	if st == nil {
		return
	}
	_ = s.bodies.Discard(ctx, s.objects(st))
	st.staged = false
}

// ownRows returns the manifest rows of st's blocks, which hold the body's
// bytes from logical offset off on.
func ownRows(st *staging, off uint64, seg *nokv.AppendSegment) []nokv.ArtifactManifestEntry {
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

// rowBlocks returns the blocks manifest rows name, in order. The rows
// must hold the body contiguously from logical offset zero.
func rowBlocks(rows []nokv.ArtifactManifestEntry) ([]bodies.Block, error) {
	out := make([]bodies.Block, len(rows))
	var off uint64
	for i, r := range rows {
		if r.LogicalOffset != off {
			return nil, fmt.Errorf("workbench: manifest row at logical offset %d, want %d: %w", r.LogicalOffset, off, bucket.ErrIntegrity)
		}
		d, err := digest.ParseURI(r.DigestURI)
		if err != nil {
			return nil, fmt.Errorf("workbench: manifest row %d: %w: %w", i, err, bucket.ErrIntegrity)
		}
		out[i] = bodies.Block{Index: r.PhysicalObjectIndex, Key: r.ObjectKey, Offset: r.ObjectOffset, Size: r.Length, Digest: d}
		off += r.Length
	}
	return out, nil
}

// streamBody calls fn with the body rows describe, slice by slice in
// order, each checked against its row's digest (bodies.Store.Stream).
func (s *Service) streamBody(ctx context.Context, rows []nokv.ArtifactManifestEntry, fn func([]byte) error) error {
	blocks, err := rowBlocks(rows)
	if err != nil {
		return err
	}
	return s.bodies.Stream(ctx, blocks, fn)
}
