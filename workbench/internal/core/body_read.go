package core

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// RowBlocks returns the blocks manifest rows name, in order. The rows
// must hold the body contiguously from logical offset zero.
func RowBlocks(rows []nokv.ArtifactManifestEntry) ([]bodies.Block, error) {
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
		out[i] = bodies.Block{Index: r.PhysicalObjectIndex, Key: r.ObjectKey, Offset: r.ObjectOffset, Size: r.Length, Digest: d, Data: r.Inline}
		off += r.Length
	}
	return out, nil
}

// StreamBody calls fn with the body rows describe, slice by slice in
// order, each checked against its row's digest (bodies.Store.Stream).
// Inline rows cost no request; a first block fetched ahead (pre, may be
// nil) is used if the first row names it.
func (s *Service) StreamBody(ctx context.Context, rows []nokv.ArtifactManifestEntry, pre *bodies.Fetch, fn func([]byte) error) error {
	blocks, err := RowBlocks(rows)
	if err != nil {
		return err
	}
	if len(blocks) > 0 {
		blocks[0] = pre.Use(blocks[0])
	}
	return s.Bodies.Stream(ctx, blocks, fn)
}

// prefetchFirstBlock starts reading the first block of e's body in the
// same round as its manifest rows, when its key can be derived: a
// revision without dependencies owns every block it names, so its first
// block is bodies.BlockKey(root, revision, 0). A body small enough to
// be inline has no block and is not fetched. It returns nil when there is
// nothing to fetch ahead. The read ends with ctx.
func (s *Service) prefetchFirstBlock(ctx context.Context, e nokv.PathEntry) *bodies.Fetch {
	return s.prefetchBlockAt(ctx, e, 0)
}

// prefetchBlockAt is prefetchFirstBlock for the block that holds byte off
// of e's body, its index guessed from this Service's BlockSize: the one
// the writer used unless a Service with another BlockSize wrote the body.
// A wrong guess costs one GET that nothing uses (Fetch.Use matches keys).
func (s *Service) prefetchBlockAt(ctx context.Context, e nokv.PathEntry, off uint64) *bodies.Fetch {
	if e.DependencyCount != 0 || e.LogicalSize <= uint64(max(s.Opts.InlineMax, 0)) || off >= e.LogicalSize {
		return nil
	}
	return s.Bodies.Prefetch(ctx, s.Bodies.BlockKey(s.root, e.Revision, off/uint64(s.Opts.BlockSize)))
}

// PutRecord encodes a value and puts it.
func PutRecord(tx *head.Tx, f shards.Family, key []byte, encode func() ([]byte, error)) error {
	v, err := encode()
	if err != nil {
		return err
	}
	return tx.Put(f, key, v)
}
