package history

import (
	"encoding/json"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// The commit command (workbench_commit, commit.go): one engine command
// that checks the request's preconditions against the snapshot it runs
// on and writes the whole commit. What it freezes is in
// commit_members.go, the prefetch that loads what it reads beforehand
// in commit_prefetch.go.

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
