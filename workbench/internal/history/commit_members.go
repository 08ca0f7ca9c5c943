package history

import (
	"bytes"
	"slices"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// What a commit freezes: every path of the workbench, or the changes
// since its parent (commit_changes.go), as CommitMember rows or a member
// tree, and the member seal.

// collectMembers gathers what the commit freezes: the changes since its
// parent (commit_changes.go), or every path of the workbench in
// canonical path order; either way with the new run manifest in place
// of the old one, or at its position.
func (c *commitCommand) collectMembers() error {
	c.treeDigests = c.s.UsesTreeDigests(c.tx.Snapshot())
	if c.oldHead != nil {
		p, ok, err := readCommit(c.s, core.TxReader(c.tx), c.oldHead.Commit)
		if err != nil {
			return err
		}
		if ok {
			c.parent = &p
		}
	}
	c.entry = nokv.PathEntry{
		Generation:        1,
		Revision:          c.st.Rev,
		LogicalSize:       uint64(len(c.env)),
		BodyDigestURI:     core.DigestURI(c.env),
		ManifestDigestURI: c.rowsDigest,
		ContentType:       runManifestContentType,
		CreatedVersion:    c.seq,
		ModifiedVersion:   c.seq,
	}
	if c.cur != nil {
		c.entry.Generation = c.cur.Generation + 1
		c.entry.CreatedVersion = c.cur.CreatedVersion
	}
	runKey, err := nokv.PathCurrentKey{Root: c.root, Incarnation: c.ws.Incarnation, Path: core.RunManifestComps}.Encode()
	if err != nil {
		return err
	}
	if fromChanges(c.treeDigests, c.parent, c.ws.Incarnation) {
		scan := func(prefix, after []byte, limit int) ([]shards.Record, error) {
			return c.tx.Scan(nokv.FamilyChangeEvent, prefix, after, limit)
		}
		keys, ok, err := changedPaths(scan, c.root, c.req.id, c.ws.Incarnation, c.parent.CreatedVersion, c.seq)
		if err != nil {
			return err
		}
		if ok {
			return c.collectChanges(runKey, keys)
		}
	}
	prefix, err := nokv.PathCurrentPrefix(c.root, c.ws.Incarnation, nil)
	if err != nil {
		return err
	}
	recs, err := c.tx.Scan(nokv.FamilyPathCurrent, prefix, nil, 0)
	if err != nil {
		return err
	}
	c.members = make([]member, 0, len(recs)+1)
	for _, r := range recs {
		if bytes.Equal(r.Key, runKey) {
			continue
		}
		k, err := nokv.ParsePathCurrentKey(r.Key)
		if err != nil {
			return err
		}
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			return err
		}
		c.members = append(c.members, member{key: r.Key, path: k.Path, m: nokv.MemberOf(e)})
	}
	at, _ := slices.BinarySearchFunc(c.members, runKey, func(m member, k []byte) int { return bytes.Compare(m.key, k) })
	c.members = slices.Insert(c.members, at, member{key: runKey, path: core.RunManifestComps, m: nokv.MemberOf(c.entry)})
	if len(c.members) > CommitMembersLimit {
		return core.Reject(tooManyMembers(len(c.members)))
	}
	return nil
}

// collectChanges turns keys, the PathCurrent keys the change feed names
// since the parent (ascending), into the edit of the parent's tree: each
// path's current member, or its removal, and the new run manifest.
func (c *commitCommand) collectChanges(runKey []byte, keys [][]byte) error {
	run, err := nokv.MemberOf(c.entry).Encode()
	if err != nil {
		return err
	}
	at, found := slices.BinarySearchFunc(keys, runKey, bytes.Compare)
	if !found {
		keys = slices.Insert(slices.Clone(keys), at, runKey)
	}
	c.changes = make([]tree.Change, 0, len(keys))
	for _, k := range keys {
		ch := tree.Change{Key: k[core.PathKeyPrefixLen:]}
		switch v, ok, err := c.tx.Get(nokv.FamilyPathCurrent, k); {
		case err != nil:
			return err
		case bytes.Equal(k, runKey):
			ch.Value = run
		case !ok:
			ch.Delete = true
		default:
			e, err := nokv.DecodePathEntry(v)
			if err != nil {
				return err
			}
			if ch.Value, err = nokv.MemberOf(e).Encode(); err != nil {
				return err
			}
		}
		c.changes = append(c.changes, ch)
	}
	CommitsFromChanges.Add(1)
	return nil
}

// writeMembers freezes the members, in one CommitMember row each or in
// a member tree, and seals the member digest.
func (c *commitCommand) writeMembers() error {
	trees := c.s.UsesMemberTrees(c.tx.Snapshot())
	var entries []tree.Entry
	if c.changes == nil {
		var err error
		if entries, err = c.freezeAll(trees); err != nil {
			return err
		}
	}
	if !trees {
		return nil
	}
	// The parent's tree, when it has one, lends every node whose
	// members did not change.
	var base tree.Ref
	if c.parent != nil {
		var err error
		if base, _, err = core.TreeRef(*c.parent); err != nil {
			return err
		}
	}
	var root tree.Ref
	var refs []nokv.RevisionID
	var err error
	if c.changes != nil {
		c.tree, root, refs, err = c.s.EditMemberTree(c.tx, base, c.changes)
	} else {
		c.tree, root, refs, err = c.s.StageMemberTree(c.tx, base, entries)
	}
	if err != nil {
		return err
	}
	c.memberCount = root.Count
	if c.memberCount > uint64(CommitMembersLimit) {
		return core.Reject(tooManyMembers(int(c.memberCount)))
	}
	if c.treeDigests {
		c.memberD = root.Digest
	}
	if base.IsEmpty() {
		return nil
	}
	// The parent, which outlives this commit, keeps the revisions this
	// commit shares with it. The run manifest's revision is new, and
	// always this commit's own.
	if i, found := slices.BinarySearchFunc(refs, c.st.Rev, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) }); !found {
		refs = slices.Insert(refs, i, c.st.Rev)
	}
	c.refRevs = refs
	return nil
}

// freezeAll freezes every member: it writes their CommitMember rows, or
// returns their tree's entries, and collects their unique revisions;
// under flat digests it seals the member digest over them.
func (c *commitCommand) freezeAll(trees bool) ([]tree.Entry, error) {
	d := core.NewMemberDigesterOf(uint64(len(c.members)))
	seen := map[nokv.RevisionID]bool{}
	var entries []tree.Entry
	for _, m := range c.members {
		if trees {
			// A PathCurrent key is root and incarnation, then the path in
			// the tree's key encoding.
			v, err := m.m.Encode()
			if err != nil {
				return nil, err
			}
			entries = append(entries, tree.Entry{Key: m.key[core.PathKeyPrefixLen:], Value: v})
		} else {
			k, err := nokv.CommitMemberKey{Root: c.root, Commit: c.commitID, Path: m.path}.Encode()
			if err != nil {
				return nil, err
			}
			if err := core.PutRecord(c.tx, nokv.FamilyCommitMember, k, m.m.Encode); err != nil {
				return nil, err
			}
		}
		if !c.treeDigests {
			if err := d.Add(m.path, m.m); err != nil {
				return nil, err
			}
		}
		if !seen[m.m.Revision] {
			seen[m.m.Revision] = true
			c.revs = append(c.revs, m.m.Revision)
		}
	}
	slices.SortFunc(c.revs, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) })
	c.memberCount = uint64(len(c.members))
	if !c.treeDigests {
		c.memberD = d.Sum()
	}
	return entries, nil
}

// references returns the revisions the commit references: every unique
// revision of its members, or, over a parent's tree, what the parent's
// members may lack.
func (c *commitCommand) references() []nokv.RevisionID {
	if c.refRevs != nil {
		return c.refRevs
	}
	return c.revs
}
