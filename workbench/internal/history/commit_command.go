package history

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// The commit command (workbench_commit, commit.go): one engine command
// that checks the request's preconditions against the snapshot it runs
// on and writes the whole commit, and the prefetch that loads what it
// reads beforehand.

// commitFamilies are the families the commit command reads.
var commitFamilies = []shards.Family{
	nokv.FamilyWorkspaceCurrent, nokv.FamilyPathCurrent, nokv.FamilyPathDirectory, nokv.FamilyArtifactRevision,
	nokv.FamilyRevisionRef, nokv.FamilyCommit, nokv.FamilyCommitMember, nokv.FamilyCommitConsumer,
	nokv.FamilyWorkbenchCommitHead, nokv.FamilyOperation, nokv.FamilySecondaryIndex, nokv.FamilyChangeEvent,
}

// prefetchCommit loads, in a few parallel rounds, what the commit command
// will read of the snapshot it first runs on, instead of a round per
// shard as the command discovers them: the families' tables, then the
// workbench's path shards (one scan) and the shards of the revisions its
// files name, of the old head's commit and of the run manifest's path
// reference. A command that runs on a newer snapshot reads what changed
// itself.
func prefetchCommit(ctx context.Context, s *core.Service, sn *head.Snapshot, id string, ws nokv.WorkspaceCurrent, visible bool, observed *nokv.WorkbenchCommitHead) *core.Error {
	if err := sn.Prefetch(ctx, commitFamilies, nil); err != nil {
		return core.FromError(err)
	}
	if !visible {
		return nil
	}
	var parent *nokv.Commit
	if s.UsesMemberTrees(sn) && observed != nil {
		p, ok, err := readCommit(s, core.SnapshotReader(ctx, sn), observed.Commit)
		if err != nil {
			return core.FromError(err)
		}
		if ok {
			parent = &p
		}
	}
	recs, werr := prefetchPaths(ctx, s, sn, id, ws, parent)
	if werr != nil {
		return werr
	}
	var refs []head.ShardRef
	add := func(f shards.Family, key []byte, err error) error {
		if err != nil {
			return err
		}
		ref, err := sn.ShardOf(f, key)
		ref.Prefix = key
		refs = append(refs, ref)
		return err
	}
	seen := map[nokv.RevisionID]bool{}
	// Over a parent with a tree, the commit references only what the
	// parent's members lack, and releases the run manifest the parent
	// wrote: it reads the revisions of the files written since the
	// parent, not all of them.
	var since uint64
	if parent != nil && parent.MemberTree != nil {
		since = parent.CreatedVersion
	}
	for _, r := range recs {
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			return core.FromError(err)
		}
		if seen[e.Revision] || e.ModifiedVersion < since {
			continue
		}
		seen[e.Revision] = true
		k, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: e.Revision}.Encode()
		if err := add(nokv.FamilyArtifactRevision, k, err); err != nil {
			return core.FromError(err)
		}
	}
	if observed != nil {
		k, err := nokv.CommitKey{Root: s.Root(), Commit: observed.Commit}.Encode()
		if err := add(nokv.FamilyCommit, k, err); err != nil {
			return core.FromError(err)
		}
		k, err = nokv.CommitConsumerKey{Root: s.Root(), Commit: observed.Commit, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: ws.Incarnation}.Encode()
		if err := add(nokv.FamilyCommitConsumer, k, err); err != nil {
			return core.FromError(err)
		}
	}
	return core.FromError(sn.Prefetch(ctx, nil, refs))
}

// prefetchPaths loads workbench id's path rows the commit command will
// read, and returns them: the rows of the paths the change feed names
// since parent, when the command will read only those (commit_changes.go),
// or else every row.
func prefetchPaths(ctx context.Context, s *core.Service, sn *head.Snapshot, id string, ws nokv.WorkspaceCurrent, parent *nokv.Commit) ([]shards.Record, *core.Error) {
	if fromChanges(s.UsesTreeDigests(sn), parent, ws.Incarnation) {
		since, current := parent.CreatedVersion, sn.Sequence()
		if (current>>8)-(since>>8) < maxChangeGroups {
			if err := (&changeReader{s: s, sn: sn}).prefetch(ctx, since>>8, current>>8); err != nil {
				return nil, core.FromError(err)
			}
		}
		scan := func(prefix, after []byte, limit int) ([]shards.Record, error) {
			return sn.Scan(ctx, nokv.FamilyChangeEvent, prefix, after, limit)
		}
		keys, ok, err := changedPaths(scan, s.Root(), id, ws.Incarnation, since, current)
		if err != nil {
			return nil, core.FromError(err)
		}
		if ok {
			return prefetchKeys(ctx, sn, nokv.FamilyPathCurrent, keys)
		}
	}
	prefix, err := nokv.PathCurrentPrefix(s.Root(), ws.Incarnation, nil)
	if err != nil {
		return nil, core.FromError(err)
	}
	recs, err := sn.Scan(ctx, nokv.FamilyPathCurrent, prefix, nil, 0)
	if err != nil {
		return nil, core.FromError(err)
	}
	if len(recs) > CommitMembersLimit {
		return nil, tooManyMembers(len(recs))
	}
	return recs, nil
}

// prefetchKeys loads the shards of keys of family f in one round and
// returns the records they hold.
func prefetchKeys(ctx context.Context, sn *head.Snapshot, f shards.Family, keys [][]byte) ([]shards.Record, *core.Error) {
	refs := make([]head.ShardRef, 0, len(keys))
	for _, k := range keys {
		ref, err := sn.ShardOf(f, k)
		if err != nil {
			return nil, core.FromError(err)
		}
		ref.Prefix = k
		refs = append(refs, ref)
	}
	if err := sn.Prefetch(ctx, nil, refs); err != nil {
		return nil, core.FromError(err)
	}
	var out []shards.Record
	for _, k := range keys {
		v, ok, err := sn.Get(ctx, f, k)
		if err != nil {
			return nil, core.FromError(err)
		}
		if ok {
			out = append(out, shards.Record{Key: k, Value: v})
		}
	}
	return out, nil
}

// commitOutcome is the commit command's deterministic result.
type commitOutcome struct {
	// Replayed: the operation existed when the command ran, and nothing
	// was written.
	Replayed       bool   `json:"replayed,omitempty"`
	HeadGeneration uint64 `json:"head_generation"`
	TreeDigestURI  string `json:"tree_digest_uri"`
	CommitVersion  uint64 `json:"commit_version"`
}

// commitBuild is one fresh commit: the request, what the tool observed,
// and the staged run manifest. Its command is a pure function of it and
// the snapshot the command runs on.
type commitBuild struct {
	s           *core.Service
	req         *commitRequest
	observed    *nokv.WorkbenchCommitHead // the head seen before the command; nil: none
	newInc      nokv.IncarnationID        // the incarnation if the command creates the workbench
	committedAt uint64
	env         []byte
	st          *publish.Staging
	rows        []nokv.ArtifactManifestEntry
	rowsDigest  string
}

func (b *commitBuild) commandDigest() [32]byte {
	var observed []byte
	if h := b.observed; h != nil {
		observed = wire.NewWriter(nil).Raw(h.Commit[:]).U64(h.HeadGeneration).Bytes()
	}
	return head.Digest(
		[]byte("cairn.workbench.commit.v1"),
		b.req.opID[:],
		b.req.projection[:],
		[]byte{core.BoolByte(b.req.replace)},
		observed,
		b.newInc[:],
		wire.NewWriter(nil).U64(b.committedAt).Bytes(),
		[]byte(b.rowsDigest),
		b.st.Op[:],
		b.st.Rev[:],
	)
}

// member is one file of the committed tree.
type member struct {
	key  []byte // its PathCurrent key, which orders the members
	path []string
	m    nokv.CommitMember
}

// commitCommand is one run of the commit command.
type commitCommand struct {
	*commitBuild
	tx   *head.Tx
	seq  uint64
	root nokv.RootID

	ws          nokv.WorkspaceCurrent
	oldHead     *nokv.WorkbenchCommitHead
	parent      *nokv.Commit    // the old head's commit
	cur         *nokv.PathEntry // the run manifest the commit replaces
	entry       nokv.PathEntry  // the run manifest's new entry
	treeDigests bool            // the commit's digests are its tree's (value format 4)
	members     []member        // every member, when the commit reads the whole workbench
	changes     []tree.Change   // the changes since the parent, when it reads only those
	memberCount uint64
	revs        []nokv.RevisionID // the members' unique revisions, ascending (with members)
	refRevs     []nokv.RevisionID // the revisions it references, when not revs (member trees)
	parents     []nokv.CommitID
	memberD     [32]byte
	tree        *nokv.MemberTree // the members' tree, in shards of value format 3 or later
	headGen     uint64
	commitID    nokv.CommitID
}

// apply is the commit command: predicates first, then every write. A
// predicate failure is a pubReject and nothing is applied.
func (b *commitBuild) apply(tx *head.Tx) ([]byte, error) {
	c := &commitCommand{commitBuild: b, tx: tx, seq: tx.Sequence(), root: b.s.Root(), commitID: b.req.identity}
	opKey, err := nokv.OperationKey{Root: c.root, Kind: nokv.OperationKindBuildCommit, ID: b.req.opID}.Encode()
	if err != nil {
		return nil, err
	}
	if _, exists, err := tx.Get(nokv.FamilyOperation, opKey); err != nil {
		return nil, err
	} else if exists {
		return json.Marshal(commitOutcome{Replayed: true})
	}
	if b.st.Stale(tx.Floor()) {
		return nil, publish.RejectStale()
	}
	for _, step := range []func() error{
		c.openWorkspace,
		c.checkHead,
		c.readRunManifest,
		c.checkFreshIDs,
		c.collectMembers,
		c.placeRunManifest,
		c.writeMembers,
		c.referenceRevisions,
		c.moveConsumers,
		c.sealCommit,
		c.moveHead,
		c.bumpWorkspace,
		func() error { return c.writeOperation(opKey) },
		c.recordEvent,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	return json.Marshal(commitOutcome{
		HeadGeneration: c.headGen,
		TreeDigestURI:  nokv.Commit{MemberDigest: c.memberD}.TreeDigestURI(),
		CommitVersion:  c.seq,
	})
}

// openWorkspace finds the Visible workbench or creates it.
func (c *commitCommand) openWorkspace() error {
	ws, ok, werr := c.s.Workspace(c.tx.Context(), core.TxReader(c.tx), c.req.id)
	if werr != nil {
		return werr
	}
	switch {
	case ok && ws.State == nokv.WorkspaceStateStaging:
		return core.Reject(core.WorkspaceBusy(c.req.id))
	case !ok || ws.State != nokv.WorkspaceStateVisible:
		if c.observed != nil {
			return core.Reject(headConflict())
		}
		var err error
		if ws, err = c.s.CreateWorkspace(c.tx, c.req.id, c.newInc); err != nil {
			return err
		}
	}
	c.ws = ws
	return nil
}

// checkHead checks the head against the request: none, or, with replace,
// exactly the one the tool observed.
func (c *commitCommand) checkHead() error {
	key, err := nokv.WorkbenchCommitHeadKey{Root: c.root, Incarnation: c.ws.Incarnation}.Encode()
	if err != nil {
		return err
	}
	v, ok, err := c.tx.Get(nokv.FamilyWorkbenchCommitHead, key)
	if err != nil {
		return err
	}
	var h nokv.WorkbenchCommitHead
	if ok {
		if h, err = nokv.DecodeWorkbenchCommitHead(v); err != nil {
			return err
		}
	}
	switch {
	case ok && !c.req.replace:
		return core.Reject(headConflict())
	case ok != (c.observed != nil) || (ok && h != *c.observed):
		// The head moved since the tool looked: a concurrent commit.
		return core.Reject(core.LifecycleConflict("workbench commit head moved concurrently; retry the commit"))
	}
	if ok {
		c.oldHead = &h
	}
	return nil
}

// readRunManifest reads the run manifest the commit replaces. Only a
// commit publishes that path, so a workbench without a head normally has
// none; one that does without a head is a different envelope.
func (c *commitCommand) readRunManifest() error {
	key, err := nokv.PathCurrentKey{Root: c.root, Incarnation: c.ws.Incarnation, Path: core.RunManifestComps}.Encode()
	if err != nil {
		return err
	}
	v, ok, err := c.tx.Get(nokv.FamilyPathCurrent, key)
	if err != nil || !ok {
		return err
	}
	e, err := nokv.DecodePathEntry(v)
	if err != nil {
		return err
	}
	if c.oldHead == nil && !c.req.replace {
		return core.Reject(core.LifecycleConflict("metadata/run_manifest.json already contains a different v1 envelope"))
	}
	c.cur = &e
	return nil
}

// checkFreshIDs checks that the commit, its run manifest revision and its
// staging operation are new.
func (c *commitCommand) checkFreshIDs() error {
	ck, err := nokv.CommitKey{Root: c.root, Commit: c.commitID}.Encode()
	if err != nil {
		return err
	}
	if err := core.TxAbsent(c.tx, nokv.FamilyCommit, ck, "commit "+c.commitID.String()+" already exists without its operation"); err != nil {
		return err
	}
	rk, err := nokv.ArtifactRevisionKey{Root: c.root, Revision: c.st.Rev}.Encode()
	if err != nil {
		return err
	}
	return core.TxAbsent(c.tx, nokv.FamilyArtifactRevision, rk, "artifact revision "+c.st.Rev.String()+" already exists")
}

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

// runManifestContentType is the run manifest's content type.
const runManifestContentType = "application/json"

// placeRunManifest publishes the run manifest: its revision (a Path and a
// Commit reference), manifest rows, staged objects, path entry, index
// rows and directory rows, and releases the replaced revision's Path
// reference.
func (c *commitCommand) placeRunManifest() error {
	rev := nokv.ArtifactRevision{
		LogicalSize:          c.entry.LogicalSize,
		BodyDigestURI:        c.entry.BodyDigestURI,
		ManifestDigestURI:    c.rowsDigest,
		BlockCount:           uint64(len(c.rows)),
		DependencyDigest:     publish.DependencyDigest(nil),
		ContentType:          runManifestContentType,
		State:                nokv.RevisionStateAvailable,
		ReferenceEpoch:       2, // the Path reference (epoch 1), then the Commit reference (2)
		StrongReferenceCount: 2,
		CreatedVersion:       c.seq,
	}
	rk, err := nokv.ArtifactRevisionKey{Root: c.root, Revision: c.st.Rev}.Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(c.tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	for i, r := range c.rows {
		k, err := nokv.ArtifactManifestKey{Root: c.root, Revision: c.st.Rev, ObjectIndex: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		if err := core.PutRecord(c.tx, nokv.FamilyArtifactManifest, k, r.Encode); err != nil {
			return err
		}
	}
	for i, blk := range c.st.Blocks {
		k, err := nokv.StagedObjectKey{Root: c.root, Operation: c.st.Op, Sequence: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		so := nokv.StagedObject{
			Revision: c.st.Rev, ObjectKey: blk.Key, ExpectedLength: blk.Size, ExpectedDigestURI: blk.Digest.URI(),
			Provider: nokv.StagedProviderStateUploaded, Cleanup: nokv.StagedCleanupStateOwned,
		}
		if err := core.PutRecord(c.tx, nokv.FamilyStagedObject, k, so.Encode); err != nil {
			return err
		}
	}
	pathRef, err := nokv.PathRefKey(c.root, c.ws.Incarnation, core.RunManifestComps, c.st.Rev).Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(c.tx, nokv.FamilyRevisionRef, pathRef, nokv.RevisionRef{ReferenceEpochAtAdd: 1, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	commitRef, err := nokv.CommitRefKey(c.root, c.commitID, c.st.Rev).Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(c.tx, nokv.FamilyRevisionRef, commitRef, nokv.RevisionRef{ReferenceEpochAtAdd: 2, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	pk, err := nokv.PathCurrentKey{Root: c.root, Incarnation: c.ws.Incarnation, Path: core.RunManifestComps}.Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(c.tx, nokv.FamilyPathCurrent, pk, c.entry.Encode); err != nil {
		return err
	}
	if err := core.WritePathIndex(c.tx, c.root, c.ws.Incarnation, core.RunManifestComps, c.cur, &c.entry); err != nil {
		return err
	}
	if c.cur == nil {
		return core.PlaceDirectories(c.tx, c.root, c.ws.Incarnation, core.RunManifestComps, c.seq)
	}
	old, err := nokv.PathRefKey(c.root, c.ws.Incarnation, core.RunManifestComps, c.cur.Revision).Encode()
	if err != nil {
		return err
	}
	if err := c.tx.Delete(nokv.FamilyRevisionRef, old); err != nil {
		return err
	}
	rc := &publish.Refs{S: c.s, Tx: c.tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	if err := rc.Remove(c.cur.Revision); err != nil {
		return err
	}
	return rc.Flush()
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

// referenceRevisions adds one Commit reference per unique revision of the
// tree, so that GC keeps every committed body. The run manifest's
// reference is already in place.
func (c *commitCommand) referenceRevisions() error {
	rc := &publish.Refs{S: c.s, Tx: c.tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	refs := c.references()
	if c.tree != nil {
		c.tree.References = uint64(len(refs))
	}
	for _, rev := range refs {
		if rev == c.st.Rev {
			continue
		}
		epoch, err := rc.Add(rev)
		if err != nil {
			return err
		}
		k, err := nokv.CommitRefKey(c.root, c.commitID, rev).Encode()
		if err != nil {
			return err
		}
		if err := core.PutRecord(c.tx, nokv.FamilyRevisionRef, k, nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: c.seq}.Encode); err != nil {
			return err
		}
	}
	return rc.Flush()
}

// moveConsumers moves the workbench-head consumer from the old head's
// commit to the new one and makes the new commit a ChildCommit consumer
// of its parent, the old head. Both changes to the parent predicate its
// Sealed state and bump its consumer epoch.
func (c *commitCommand) moveConsumers() error {
	if c.oldHead == nil {
		return nil
	}
	parent := c.oldHead.Commit
	pk, err := nokv.CommitKey{Root: c.root, Commit: parent}.Encode()
	if err != nil {
		return err
	}
	v, ok, err := c.tx.Get(nokv.FamilyCommit, pk)
	if err != nil {
		return err
	}
	if !ok {
		return core.Reject(core.InvalidState("head commit " + parent.String() + " does not exist"))
	}
	p, err := nokv.DecodeCommit(v)
	if err != nil {
		return err
	}
	if p.State != nokv.CommitStateSealed {
		return core.Reject(core.InvalidState(fmt.Sprintf("head commit %s is %v", parent, p.State)))
	}
	headKey, err := nokv.CommitConsumerKey{Root: c.root, Commit: parent, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: c.ws.Incarnation}.Encode()
	if err != nil {
		return err
	}
	if _, ok, err := c.tx.Get(nokv.FamilyCommitConsumer, headKey); err != nil {
		return err
	} else if !ok || p.ConsumerCount == 0 {
		return core.Reject(core.InvalidState("head commit " + parent.String() + " has no workbench-head consumer"))
	}
	if err := c.tx.Delete(nokv.FamilyCommitConsumer, headKey); err != nil {
		return err
	}
	p.ConsumerCount--
	p.ConsumerEpoch++
	childKey, err := nokv.CommitConsumerKey{Root: c.root, Commit: parent, Kind: nokv.CommitConsumerKindChildCommit, Child: c.commitID}.Encode()
	if err != nil {
		return err
	}
	p.ConsumerCount++
	p.ConsumerEpoch++
	if err := core.PutRecord(c.tx, nokv.FamilyCommitConsumer, childKey, nokv.CommitConsumer{ConsumerEpochAtAdd: p.ConsumerEpoch, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	c.parents = []nokv.CommitID{parent}
	return core.PutRecord(c.tx, nokv.FamilyCommit, pk, p.Encode)
}

// sealCommit writes the sealed Commit, with the workbench head as its one
// consumer.
func (c *commitCommand) sealCommit() error {
	hk, err := nokv.CommitConsumerKey{Root: c.root, Commit: c.commitID, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: c.ws.Incarnation}.Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(c.tx, nokv.FamilyCommitConsumer, hk, nokv.CommitConsumer{ConsumerEpochAtAdd: 1, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	// Flat digests cover every unique revision of the members; tree
	// digests the commit's own references.
	revs := c.revs
	if c.treeDigests {
		revs = c.references()
	}
	cm := nokv.Commit{
		SourceIncarnation:    c.ws.Incarnation,
		WorkbenchID:          c.req.id,
		ContentDigestURI:     c.req.contentDigest,
		ManifestDigestURI:    c.req.manifestDigest,
		TreeManifestRevision: c.st.Rev,
		MemberCount:          c.memberCount,
		MemberDigest:         c.memberD,
		UniqueRevisionCount:  uint64(len(revs)),
		RevisionDigest:       core.RevisionDigest(revs),
		Parents:              c.parents,
		ParentDigest:         core.ParentDigest(c.parents),
		ConsumerCount:        1,
		ConsumerEpoch:        1,
		State:                nokv.CommitStateSealed,
		CreatedVersion:       c.seq,
		MemberTree:           c.tree,
		TreeDigests:          c.treeDigests,
	}
	ck, err := nokv.CommitKey{Root: c.root, Commit: c.commitID}.Encode()
	if err != nil {
		return err
	}
	return core.PutRecord(c.tx, nokv.FamilyCommit, ck, cm.Encode)
}

// moveHead points the workbench's head at the new commit, one generation
// on.
func (c *commitCommand) moveHead() error {
	c.headGen = 1
	if c.oldHead != nil {
		c.headGen = c.oldHead.HeadGeneration + 1
	}
	k, err := nokv.WorkbenchCommitHeadKey{Root: c.root, Incarnation: c.ws.Incarnation}.Encode()
	if err != nil {
		return err
	}
	return core.PutRecord(c.tx, nokv.FamilyWorkbenchCommitHead, k, nokv.WorkbenchCommitHead{Commit: c.commitID, HeadGeneration: c.headGen}.Encode)
}

// bumpWorkspace moves the workspace revision on: the run manifest changed.
func (c *commitCommand) bumpWorkspace() error {
	c.ws.WorkspaceRevision++
	c.ws.ModifiedVersion = c.seq
	return c.s.PutWorkspace(c.tx, c.req.id, c.ws)
}

// writeOperation writes the BuildCommit operation, Complete with its
// result and everything an exact retry checks.
func (c *commitCommand) writeOperation(key []byte) error {
	op := nokv.BuildCommitOperation{
		Phase:                 nokv.BuildCommitPhaseComplete,
		ProjectionInputDigest: c.req.projection,
		Commit:                c.commitID,
		WorkbenchID:           c.req.id,
		ContentDigestURI:      c.req.contentDigest,
		ManifestDigestURI:     c.req.manifestDigest,
		Replace:               c.req.replace,
		Incarnation:           c.ws.Incarnation,
		SourceReadVersion:     c.tx.Snapshot().Sequence(),
		CommittedAtUnix:       c.committedAt,
		Binding: nokv.ManifestBinding{
			Revision: c.st.Rev, LogicalSize: c.entry.LogicalSize, BodyDigestURI: c.entry.BodyDigestURI,
			ManifestDigestURI: c.rowsDigest, ContentType: runManifestContentType,
		},
		Parents:      c.parents,
		MemberCount:  c.memberCount,
		MemberDigest: c.memberD,
		Result: &nokv.BuildCommitResult{
			HeadGeneration: c.headGen, PathGeneration: c.entry.Generation,
			WorkspaceRevision: c.ws.WorkspaceRevision, CommitVersion: c.seq,
		},
	}
	if h := c.oldHead; h != nil {
		op.ExpectedHead = &nokv.CommitHeadRef{Commit: h.Commit, Generation: h.HeadGeneration}
	}
	if c.cur != nil {
		g := c.cur.Generation
		op.RunManifestGeneration = &g
	}
	op.InitializationDigest = core.BuildCommitInit{
		ProjectionInput: op.ProjectionInputDigest,
		Incarnation:     op.Incarnation,
		ReadVersion:     op.SourceReadVersion,
		Head:            op.ExpectedHead,
		ContentDigest:   op.ContentDigestURI,
		ManifestDigest:  op.ManifestDigestURI,
		TreeRevision:    c.st.Rev,
		Replace:         op.Replace,
		RunManifestGen:  op.RunManifestGeneration,
		CommittedAt:     op.CommittedAtUnix,
		Parents:         op.Parents,
	}.Digest()
	return core.PutRecord(c.tx, nokv.FamilyOperation, key, op.Encode)
}

// recordEvent appends the WorkbenchCommitted event: the head generation
// before (when there was a head) and after, with the tree digest.
func (c *commitCommand) recordEvent() error {
	id := c.commitID
	ev := nokv.ChangeEvent{
		WorkbenchID: c.req.id,
		Incarnation: c.ws.Incarnation,
		Kind:        nokv.ChangeEventKindWorkbenchCommitted,
		Commit:      &id,
		After:       &nokv.EventProjection{Generation: c.headGen, DigestURI: nokv.Commit{MemberDigest: c.memberD}.TreeDigestURI()},
	}
	if h := c.oldHead; h != nil {
		ev.Before = &nokv.EventProjection{Generation: h.HeadGeneration}
	}
	return core.WriteChangeEvent(c.tx, c.root, ev)
}
