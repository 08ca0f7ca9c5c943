package core

import (
	"context"
	"fmt"
	"path"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// A commit's members live in CommitMember rows (Commit version 2) or in
// a member tree (version 3): a tree whose keys are the members' paths in
// the key encoding of the rows (after root and commit) and whose values
// are the rows' values. Readers go through CommitMembers and never ask
// which.

// DefaultTreeCacheBytes is the default budget of the cache of decoded
// member tree nodes (Options.TreeCacheBytes): the whole tree of a commit
// of 100,000 small files fits, so a warm replica commits one changed
// file of them without reading a leaf (at 32 MiB it read one a commit:
// 4 rounds, not 3).
const DefaultTreeCacheBytes = 48 << 20

// TreeCache is a cache of decoded member tree nodes. Nodes are named by
// the hash of their bytes, so Services of different agents may share
// one: a node cached for one is the node any other names by that hash.
type TreeCache struct{ c *shards.Cache[*tree.Cached] }

// NewTreeCache returns a cache of at most budget bytes of decoded nodes
// (0: DefaultTreeCacheBytes; negative: none kept).
func NewTreeCache(budget int64) *TreeCache {
	switch {
	case budget == 0:
		budget = DefaultTreeCacheBytes
	case budget < 0:
		budget = 0
	}
	return &TreeCache{c: tree.NewCache(budget)}
}

// parseMemberTreeKey parses a tree key, a path in the key encoding of
// the rows (shards.Key.Path), back into a path.
func parseMemberTreeKey(b []byte) ([]string, error) {
	r := shards.NewKeyReader(b)
	p := r.Path()
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("workbench: member tree key: %w", err)
	}
	return p, nil
}

// TreeRef returns the tree reference a commit names, and whether it
// names one.
func TreeRef(c nokv.Commit) (tree.Ref, bool, error) {
	t := c.MemberTree
	if t == nil {
		return tree.Ref{}, false, nil
	}
	h, err := digest.Parse(path.Base(t.Key))
	if err != nil {
		return tree.Ref{}, false, fmt.Errorf("workbench: member tree key %q: %w: %w", t.Key, err, bucket.ErrIntegrity)
	}
	return tree.Ref{Hash: h, Digest: t.Digest, Count: c.MemberCount, Size: t.Size}, true, nil
}

// CommitMembers calls fn with each member of commit c (id) in path
// order, from its rows (read at sn) or its tree.
func (s *Service) CommitMembers(ctx context.Context, sn *head.Snapshot, id nokv.CommitID, c nokv.Commit, fn func(path []string, m nokv.CommitMember) error) error {
	ref, ok, err := TreeRef(c)
	if err != nil {
		return err
	}
	if !ok {
		recs, err := sn.Scan(ctx, nokv.FamilyCommitMember, nokv.CommitMemberPrefix(s.Root(), id), nil, 0)
		if err != nil {
			return err
		}
		for _, r := range recs {
			k, err := nokv.ParseCommitMemberKey(r.Key)
			if err != nil {
				return err
			}
			m, err := nokv.DecodeCommitMember(r.Value)
			if err != nil {
				return err
			}
			if err := fn(k.Path, m); err != nil {
				return err
			}
		}
		return nil
	}
	if s.Trees.Key(ref.Hash) != c.MemberTree.Key {
		return fmt.Errorf("workbench: commit %s names member tree %s, outside this root's trees: %w", id, c.MemberTree.Key, bucket.ErrIntegrity)
	}
	return tree.Walk(ctx, s.Trees, ref, func(k, v []byte) error {
		p, err := parseMemberTreeKey(k)
		if err != nil {
			return err
		}
		m, err := nokv.DecodeCommitMember(v)
		if err != nil {
			return err
		}
		return fn(p, m)
	})
}

// UsesMemberTrees reports whether a commit on sn keeps its members in a
// member tree: in shards of value format 3 (a new shard's), or where an
// operator asked for it (Options.MemberTrees) in a shard of format 2,
// which a cairn of value format 2 would then fail to read.
func (s *Service) UsesMemberTrees(sn *head.Snapshot) bool {
	return s.Opts.MemberTrees || sn.Marker().ValueFormatVersion >= 3
}

// treeWriter says how tx's attempt writes member-tree nodes: under its
// salt, compressed in shards of a value format that compresses
// (nokv.CompressFrom).
func treeWriter(tx *head.Tx) tree.Writer {
	return tree.Writer{Salt: tx.Salt(), Compress: tx.Snapshot().Marker().ValueFormatVersion >= nokv.CompressFrom}
}

// PathKeyPrefixLen is the length of a PathCurrent key before its path,
// root and incarnation: what follows is the path in the key encoding a
// member tree's keys use.
const PathKeyPrefixLen = 16 + 16

// StageMemberTree builds the tree of entries (in path order), lending
// base's unchanged nodes, stages the nodes it writes with tx's attempt,
// and returns the reference a commit stores. base must be a tree tx's
// snapshot reaches (its parent commit's).
//
// It also returns the revisions the commit must reference itself: with
// a base, those held by the leaves base does not share less those held
// by the leaves it replaced (a superset of the revisions the new members
// hold and base's do not); without one, nil, and the commit references
// every revision of its members.
func (s *Service) StageMemberTree(tx *head.Tx, base tree.Ref, entries []tree.Entry) (*nokv.MemberTree, tree.Ref, []nokv.RevisionID, error) {
	root, objs, err := treeWriter(tx).Rebuild(tx.Context(), s.Trees, base, entries)
	if err != nil {
		return nil, tree.Ref{}, nil, err
	}
	return s.stageTree(tx, base, root, objs)
}

// EditMemberTree is StageMemberTree for a commit that knows what changed
// since base: it applies changes (ascending by key) to base, reading and
// writing only the nodes they fall in.
func (s *Service) EditMemberTree(tx *head.Tx, base tree.Ref, changes []tree.Change) (*nokv.MemberTree, tree.Ref, []nokv.RevisionID, error) {
	root, objs, err := treeWriter(tx).Edit(tx.Context(), s.Trees, base, changes)
	if err != nil {
		return nil, tree.Ref{}, nil, err
	}
	return s.stageTree(tx, base, root, objs)
}

// stageTree stages objs, the nodes of root that base lacks, and returns
// what StageMemberTree does.
func (s *Service) stageTree(tx *head.Tx, base, root tree.Ref, objs []tree.Object) (*nokv.MemberTree, tree.Ref, []nokv.RevisionID, error) {
	ctx := tx.Context()
	if root.IsEmpty() {
		return nil, root, nil, fmt.Errorf("workbench: a commit without members")
	}
	for _, o := range objs {
		tx.Stage(s.Trees.Key(o.Hash), o.Body)
		// The next commit reads this tree's inner nodes, and the leaves
		// it replaces: keep them.
		s.Trees.Cache.Add(o.Hash, &tree.Cached{Node: o.Node, Digest: o.Digest, Size: len(o.Body)})
	}
	mt := &nokv.MemberTree{Key: s.Trees.Key(root.Hash), Size: root.Size, Digest: root.Digest}
	if base.IsEmpty() {
		return mt, root, nil, nil
	}
	src := tree.Overlay(s.Trees, objs)
	gone, added, err := tree.Changed(ctx, src, base, root)
	if err != nil {
		return nil, root, nil, err
	}
	had, err := leafRevisions(ctx, src, gone)
	if err != nil {
		return nil, root, nil, err
	}
	has, err := leafRevisions(ctx, src, added)
	if err != nil {
		return nil, root, nil, err
	}
	var refs []nokv.RevisionID
	for r := range has {
		if !had[r] {
			refs = append(refs, r)
		}
	}
	return mt, root, SortRevisions(refs), nil
}

// UsesTreeDigests reports whether a commit on sn defines its digests by
// its member tree (Commit value 4), and so computes them from what
// changed since its parent: in shards of value format 4.
func (s *Service) UsesTreeDigests(sn *head.Snapshot) bool {
	return sn.Marker().ValueFormatVersion >= 4
}

// MemberTreeEntry returns the entry of the member at path in a member
// tree: the path in PathCurrent's key encoding, and the member's value.
func MemberTreeEntry(path []string, m nokv.CommitMember) (tree.Entry, error) {
	k, err := nokv.PathCurrentKey{Path: path}.Encode()
	if err != nil {
		return tree.Entry{}, err
	}
	v, err := m.Encode()
	if err != nil {
		return tree.Entry{}, err
	}
	return tree.Entry{Key: k[PathKeyPrefixLen:], Value: v}, nil
}

// MemberTreeDigest returns the content digest of the member tree of
// entries (ascending by key), the member digest a commit of tree digests
// (Commit value 4) of those members seals, without storing a node.
func MemberTreeDigest(entries []tree.Entry) ([32]byte, error) {
	root, _, err := tree.Build(entries, [16]byte{})
	if err != nil {
		return [32]byte{}, err
	}
	return root.TreeDigest(), nil
}

// leafRevisions returns the revisions the members in leaves hold.
func leafRevisions(ctx context.Context, src tree.Source, leaves []tree.Entry) (map[nokv.RevisionID]bool, error) {
	nodes, err := tree.LoadLeaves(ctx, src, leaves)
	if err != nil {
		return nil, err
	}
	out := map[nokv.RevisionID]bool{}
	for _, n := range nodes {
		for _, e := range n.Entries {
			m, err := nokv.DecodeCommitMember(e.Value)
			if err != nil {
				return nil, err
			}
			out[m.Revision] = true
		}
	}
	return out, nil
}
