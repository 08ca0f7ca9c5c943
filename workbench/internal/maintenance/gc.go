package maintenance

import (
	"fmt"
	"path"

	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// What garbage collection needs from the Workbench: the engine's sweep
// (package gcsweep) knows no product family, so the Workbench tells it
// which objects outside the engine its records keep (BlockRefs, read
// only from BlockRefFamilies) and under which shard an agent's objects
// live (Layout).

// SweepOptions returns the options of a sweep of a Workbench shard
// (gcsweep.Sweep) that only the Workbench knows: the blocks its records
// keep, and its schema marker, so that a sweep never reads a shard of
// another schema with the Workbench's families (and may write its head:
// it touches the head first, so that its horizon reaches a grace period
// before now). The caller sets the rest.
func SweepOptions() gcsweep.Options {
	m := nokv.Schema().Marker
	return gcsweep.Options{Refs: BlockRefs, RefFamilies: BlockRefFamilies, Marker: &m, Touch: true}
}

// BlockRefFamilies are the families whose records BlockRefs reads:
// ArtifactManifest rows name block objects, and Commit records their
// member trees.
var BlockRefFamilies = []shards.Family{nokv.FamilyArtifactManifest, nokv.FamilyCommit}

// BlockRefs is the Workbench's walk.Refs (what the graph walker asks of
// a record): the block an ArtifactManifest row names, with the digest of
// the slice of it the row reads. An inline row keeps its bytes in the row
// and names no object; every other family names none. A row that does
// not decode is an error: a sweep cannot tell which block it keeps.
func BlockRefs(f shards.Family, key, value []byte) ([]walk.BlockRef, error) {
	if f == nokv.FamilyCommit {
		return treeRefs(value)
	}
	if f != nokv.FamilyArtifactManifest {
		return nil, nil
	}
	row, err := nokv.DecodeArtifactManifestEntry(value)
	if err != nil {
		return nil, fmt.Errorf("workbench: block refs: %w", err)
	}
	if row.Inline != nil || row.ObjectKey == "" {
		return nil, nil
	}
	return []walk.BlockRef{{
		Key:    row.ObjectKey,
		Digest: row.DigestURI,
		Offset: int64(row.ObjectOffset),
		Size:   int64(row.Length),
	}}, nil
}

// Layout returns the bucket layout of the logical shard that serves
// agent's deployment root, as Open derives it, without any I/O. An agent
// id that forms no root is InvalidArguments.
func Layout(agent string) (shards.Layout, error) {
	if agent == "" {
		agent = core.DefaultAgentID
	}
	if _, werr := core.AgentRoot(agent); werr != nil {
		return shards.Layout{}, werr
	}
	return ShardLayout(shards.ShardID(core.Derive16("shard", agent))), nil
}

// ShardLayout returns the layout of logical shard id under the
// Workbench's schema: for a tool that walks every shard of a bucket
// without knowing the agents they serve.
func ShardLayout(id shards.ShardID) shards.Layout {
	return shards.NewLayout(nokv.Schema().Families, id)
}

// treeRefs returns the root node of the member tree a Commit record
// names, if any, as a block whose nodes the walk follows (nodeRefs).
func treeRefs(value []byte) ([]walk.BlockRef, error) {
	c, err := nokv.DecodeCommit(value)
	if err != nil {
		return nil, fmt.Errorf("workbench: block refs: %w", err)
	}
	if c.State == nokv.CommitStateRetired {
		return nil, nil // its members are released: no read reaches them
	}
	ref, ok, err := core.TreeRef(c)
	if err != nil || !ok {
		return nil, err
	}
	return []walk.BlockRef{nodeRef(path.Dir(c.MemberTree.Key)+"/", ref)}, nil
}

// nodeRef is the block of tree node ref under prefix: inner nodes lead
// on to their children.
func nodeRef(prefix string, ref tree.Ref) walk.BlockRef {
	return walk.BlockRef{
		Key: prefix + ref.Hash.String(), Digest: ref.Hash.URI(), Size: int64(ref.Size),
		Refs: func(body []byte) ([]walk.BlockRef, error) {
			n, _, err := tree.Decode(body, ref.Hash)
			if err != nil || n.Level == 0 {
				return nil, err
			}
			out := make([]walk.BlockRef, len(n.Entries))
			for i, e := range n.Entries {
				out[i] = nodeRef(prefix, e.Child)
			}
			return out, nil
		},
	}
}
