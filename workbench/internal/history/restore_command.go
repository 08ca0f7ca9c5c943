package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"
	"github.com/cairnstore/cairn/workbench/internal/snapshots"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The commands of workbench_restore (restore.go runs them): prepare, the
// copy batches and the final command, with the record steps they share
// with an abort (restore_abort.go).
//
// The commands. Each reads the operation first and predicates its phase
// and cursor (a copy batch: a cursor not behind its first member; it
// places the members from the cursor on), so a command that lands twice
// (an exact rerun after an unknown outcome) or after another call moved
// the restore on writes nothing wrong.

func (p *RestorePlan) opKey(root nokv.RootID) ([]byte, error) {
	return nokv.OperationKey{Root: root, Kind: nokv.OperationKindRestore, ID: p.OpID}.Encode()
}

// loadOp reads the restore's operation in tx.
func loadRestoreOp(tx *head.Tx, key []byte) (nokv.RestoreOperation, bool, error) {
	b, ok, err := tx.Get(nokv.FamilyOperation, key)
	if err != nil || !ok {
		return nokv.RestoreOperation{}, ok, err
	}
	op, err := nokv.DecodeRestoreOperation(b)
	return op, err == nil, err
}

// stagingMarker checks that the destination's marker is the Staging one
// this restore owns.
func (p *RestorePlan) stagingMarker(s *core.Service, tx *head.Tx) (nokv.WorkspaceCurrent, error) {
	ws, ok, werr := s.Workspace(tx.Context(), core.TxReader(tx), p.DstID)
	if werr != nil {
		return ws, werr
	}
	if !ok || ws.State != nokv.WorkspaceStateStaging || ws.Incarnation != p.DstInc ||
		ws.Owner == nil || *ws.Owner != (nokv.OperationRef{Kind: nokv.OperationKindRestore, ID: p.OpID}) {
		return ws, core.Reject(core.InvalidState(fmt.Sprintf("restore %s no longer owns the staging workbench %s", p.OpID, p.DstID)))
	}
	return ws, nil
}

// prepare is step 1 (see the file comment).
func (p *RestorePlan) prepare(s *core.Service, tx *head.Tx) error {
	seq := tx.Sequence()
	opKey, err := p.opKey(s.Root())
	if err != nil {
		return err
	}
	if _, exists, err := loadRestoreOp(tx, opKey); err != nil || exists {
		return err // another call prepared it: nothing to do
	}
	if ws, ok, werr := s.Workspace(tx.Context(), core.TxReader(tx), p.DstID); werr != nil {
		return werr
	} else if ok && ws.State != nokv.WorkspaceStateRetired {
		return core.Reject(core.LifecycleConflict("restore destination already exists without metadata/restore_manifest.json"))
	}
	claimKey, err := nokv.WorkspaceIncarnationClaimKey{Root: s.Root(), Incarnation: p.DstInc}.Encode()
	if err != nil {
		return err
	}
	if err := core.TxAbsent(tx, nokv.FamilyWorkspaceIncarnationClaim, claimKey, "workspace incarnation "+p.DstInc.String()+" is already claimed"); err != nil {
		return err
	}
	ck, err := nokv.CommitKey{Root: s.Root(), Commit: p.commitID}.Encode()
	if err != nil {
		return err
	}
	if err := core.TxAbsent(tx, nokv.FamilyCommit, ck, "commit "+p.commitID.String()+" already exists"); err != nil {
		return err
	}
	if err := p.attachSource(s, tx, true); err != nil {
		return err
	}
	if err := core.PutRecord(tx, nokv.FamilyWorkspaceIncarnationClaim, claimKey, nokv.WorkspaceIncarnationClaim{WorkbenchID: p.DstID}.Encode); err != nil {
		return err
	}
	owner := nokv.OperationRef{Kind: nokv.OperationKindRestore, ID: p.OpID}
	ws := nokv.WorkspaceCurrent{Incarnation: p.DstInc, WorkspaceRevision: 1, State: nokv.WorkspaceStateStaging,
		Owner: &owner, CreatedVersion: seq, ModifiedVersion: seq}
	if err := s.PutWorkspace(tx, p.DstID, ws); err != nil {
		return err
	}
	op := nokv.RestoreOperation{
		Phase: nokv.RestorePhaseCopying, IdentityDigest: p.Identity, InitializationDigest: p.Init,
		SourceWorkbenchID: p.SrcID, SourceIncarnation: p.SrcInc, SourceKind: p.Src.Kind,
		SourceReadVersion: p.readVersion, DestinationWorkbenchID: p.DstID, DestinationIncarnation: p.DstInc,
		DestinationCommit: p.commitID, MemberCount: uint64(len(p.members)), CreatedVersion: seq,
	}
	if p.Src.Kind == nokv.RestoreSourceKindSnapshot {
		id := p.Src.Snapshot
		op.SourceSnapshot = &id
	} else {
		c := p.Src.Commit
		op.SourceCommit = &c
	}
	return core.PutRecord(tx, nokv.FamilyOperation, opKey, op.Encode)
}

// attachSource (attach true) makes the restore a consumer of its source,
// or (attach false) releases it: a snapshot's consumer count and epoch
// and a HistoryHold of kind Restore, or a Lease CommitConsumer and the
// commit's count and epoch. Attaching predicates an alive snapshot or a
// Sealed commit.
func (p *RestorePlan) attachSource(s *core.Service, tx *head.Tx, attach bool) error {
	seq := tx.Sequence()
	if p.Src.Kind == nokv.RestoreSourceKindSnapshot {
		id := p.Src.Snapshot
		ref, ok, err := s.SnapshotRef(core.TxReader(tx), p.SrcInc, id)
		if err != nil {
			return err
		}
		if !ok {
			return core.Reject(core.SnapshotNotFound(fmt.Sprintf("snapshot %s of workbench %s not found", id, p.SrcID)))
		}
		holdKey, err := nokv.HistoryHoldKey{Root: s.Root(), Kind: nokv.HistoryHoldKindRestore, Op: p.OpID}.Encode()
		if err != nil {
			return err
		}
		if attach {
			clock, err := s.LeaseClock(core.TxReader(tx))
			if err != nil {
				return err
			}
			if st := core.SnapshotState(ref, max(p.leaseNow, clock.HighWater)); st != "alive" {
				return core.Reject(core.SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is not alive: %s", id, p.SrcID, st)))
			}
			ref.ConsumerCount++
			hold := nokv.HistoryHold{ReadVersion: ref.ReadVersion, SourceSnapshot: &id, State: nokv.HistoryHoldStateActive, CreatedVersion: seq}
			if err := core.PutRecord(tx, nokv.FamilyHistoryHold, holdKey, hold.Encode); err != nil {
				return err
			}
		} else {
			if ref.ConsumerCount == 0 {
				return core.Reject(core.InvalidState(fmt.Sprintf("snapshot %s has no consumer to release", id)))
			}
			ref.ConsumerCount--
			if err := tx.Delete(nokv.FamilyHistoryHold, holdKey); err != nil {
				return err
			}
		}
		ref.ConsumerEpoch++
		return snapshots.PutSnapshotRef(s, tx, p.SrcInc, id, ref)
	}
	ck, err := nokv.CommitKey{Root: s.Root(), Commit: p.Src.Commit}.Encode()
	if err != nil {
		return err
	}
	c, ok, err := readCommit(s, core.TxReader(tx), p.Src.Commit)
	if err != nil {
		return err
	}
	if !ok {
		return core.Reject(core.Missing(fmt.Sprintf("commit %s of workbench %s does not exist", p.Src.Commit, p.SrcID)))
	}
	leaseKey, err := nokv.CommitConsumerKey{Root: s.Root(), Commit: p.Src.Commit, Kind: nokv.CommitConsumerKindLease, Operation: p.OpID}.Encode()
	if err != nil {
		return err
	}
	c.ConsumerEpoch++
	if attach {
		if c.State != nokv.CommitStateSealed {
			return core.Reject(core.InvalidState(fmt.Sprintf("commit %s is %v", p.Src.Commit, c.State)))
		}
		c.ConsumerCount++
		if err := core.PutRecord(tx, nokv.FamilyCommitConsumer, leaseKey, nokv.CommitConsumer{ConsumerEpochAtAdd: c.ConsumerEpoch, CreatedVersion: seq}.Encode); err != nil {
			return err
		}
	} else {
		if c.ConsumerCount == 0 {
			return core.Reject(core.InvalidState(fmt.Sprintf("commit %s has no consumer to release", p.Src.Commit)))
		}
		c.ConsumerCount--
		if c.ConsumerCount == 0 {
			c.LastZeroConsumerVersion = seq
		}
		if err := tx.Delete(nokv.FamilyCommitConsumer, leaseKey); err != nil {
			return err
		}
	}
	return core.PutRecord(tx, nokv.FamilyCommit, ck, c.Encode)
}

// restoreCopy is step 2 for members [start, end).
type restoreCopy struct {
	s          *core.Service
	p          *RestorePlan
	start, end uint64
}

func (c *restoreCopy) apply(tx *head.Tx) ([]byte, error) {
	s, p := c.s, c.p
	seq := tx.Sequence()
	opKey, err := p.opKey(s.Root())
	if err != nil {
		return nil, err
	}
	op, ok, err := loadRestoreOp(tx, opKey)
	if err != nil {
		return nil, err
	}
	switch {
	case !ok:
		return nil, core.Reject(core.Internal("restore operation " + p.OpID.String() + " vanished"))
	case op.Phase != nokv.RestorePhaseCopying || op.MemberCursor >= c.end:
		return nil, nil // already placed by an earlier run
	case op.MemberCursor < c.start:
		return nil, core.Reject(core.Conflict(fmt.Sprintf("restore %s is at member %d, not %d", p.OpID, op.MemberCursor, c.start), "Restore", nil))
	}
	if _, err := p.stagingMarker(s, tx); err != nil {
		return nil, err
	}
	rc := &publish.Refs{S: s, Tx: tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	// Another call of the same restore (a replica whose batches are of
	// another size) may have placed the first members of this batch: go
	// on from its cursor, whose chain the operation holds.
	chain := op.MemberDigest
	if p.keyOrdered {
		if chain, err = p.copyOrdered(s, tx, op.MemberCursor, c.end, chain); err != nil {
			return nil, err
		}
		op.MemberCursor, op.MemberDigest = c.end, chain
		return nil, core.PutRecord(tx, nokv.FamilyOperation, opKey, op.Encode)
	}
	for i := op.MemberCursor; i < c.end; i++ {
		m := p.members[i]
		e := m.entry
		e.CreatedVersion, e.ModifiedVersion = seq, seq
		if err := placeEntry(s, tx, p.DstInc, m.path, e, rc); err != nil {
			return nil, err
		}
		if err := p.commitMember(s, tx, m.path, e, rc); err != nil {
			return nil, err
		}
		if err := p.putRestoreMember(s, tx, i, m); err != nil {
			return nil, err
		}
		chain = MemberChain(chain, i, m.row)
	}
	if err := rc.Flush(); err != nil {
		return nil, err
	}
	op.MemberCursor, op.MemberDigest = c.end, chain
	return nil, core.PutRecord(tx, nokv.FamilyOperation, opKey, op.Encode)
}

// putRestoreMember writes the RestoreMember row of member i, m.
func (p *RestorePlan) putRestoreMember(s *core.Service, tx *head.Tx, i uint64, m restoreMember) error {
	k, err := nokv.RestoreMemberKey{Root: s.Root(), Operation: p.OpID, Sequence: i}.Encode()
	if err != nil {
		return err
	}
	rm := nokv.RestoreMember{Path: m.path, Revision: m.entry.Revision, PathGeneration: m.entry.Generation, RowDigest: m.row}
	return core.PutRecord(tx, nokv.FamilyRestoreMember, k, rm.Encode)
}

// placeEntry writes a destination path's PathCurrent, index and directory
// rows and its Path reference.
func placeEntry(s *core.Service, tx *head.Tx, inc nokv.IncarnationID, path []string, e nokv.PathEntry, rc *publish.Refs) error {
	pk, err := nokv.PathCurrentKey{Root: s.Root(), Incarnation: inc, Path: path}.Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(tx, nokv.FamilyPathCurrent, pk, e.Encode); err != nil {
		return err
	}
	if err := core.WritePathIndex(tx, s.Root(), inc, path, nil, &e); err != nil {
		return err
	}
	if err := core.PlaceDirectories(tx, s.Root(), inc, path, tx.Sequence()); err != nil {
		return err
	}
	epoch, err := rc.Add(e.Revision)
	if err != nil {
		return err
	}
	rk, err := nokv.PathRefKey(s.Root(), inc, path, e.Revision).Encode()
	if err != nil {
		return err
	}
	return core.PutRecord(tx, nokv.FamilyRevisionRef, rk, nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: tx.Sequence()}.Encode)
}

// commitMember writes the destination commit's member row for path and,
// the first time the commit meets the revision, its Commit reference.
func (p *RestorePlan) commitMember(s *core.Service, tx *head.Tx, path []string, e nokv.PathEntry, rc *publish.Refs) error {
	mk, err := nokv.CommitMemberKey{Root: s.Root(), Commit: p.commitID, Path: path}.Encode()
	if err != nil {
		return err
	}
	if err := core.PutRecord(tx, nokv.FamilyCommitMember, mk, nokv.MemberOf(e).Encode); err != nil {
		return err
	}
	return p.commitRef(s, tx, e, rc)
}

// commitRef writes the destination commit's reference on e's revision,
// the first time the commit meets it.
func (p *RestorePlan) commitRef(s *core.Service, tx *head.Tx, e nokv.PathEntry, rc *publish.Refs) error {
	rk, err := nokv.CommitRefKey(s.Root(), p.commitID, e.Revision).Encode()
	if err != nil {
		return err
	}
	if _, ok, err := tx.Get(nokv.FamilyRevisionRef, rk); err != nil || ok {
		return err
	}
	epoch, err := rc.Add(e.Revision)
	if err != nil {
		return err
	}
	return core.PutRecord(tx, nokv.FamilyRevisionRef, rk, nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: tx.Sequence()}.Encode)
}

// finalMember is one member of the destination's commit.
type finalMember struct {
	key   []byte
	path  []string
	entry nokv.PathEntry
}

// finishRestore stages the rebuilt run manifest and runs step 3.
func finishRestore(ctx context.Context, s *core.Service, sn *head.Snapshot, p *RestorePlan) (*RestoreResult, *core.Error) {
	committedAt := uint64(max(s.Opts.Now().Unix(), 0))
	env, err := core.RunManifestEnvelope(p.DstID, core.WorkbenchPath(s.LogicalRoot(), p.DstID), p.contentDigest, p.canonical, p.manifestDigest, p.commitID, committedAt)
	if err != nil {
		return nil, core.FromError(err)
	}
	var st *publish.Staging
	var f *restoreFinal
	for try := 0; ; try++ {
		var rows []nokv.ArtifactManifestEntry
		var rowsDigest string
		var werr *core.Error
		st, rows, rowsDigest, werr = stageRunManifest(ctx, s, "workbench_restore", p.DstID, env)
		if werr != nil {
			return nil, werr
		}
		f = &restoreFinal{s: s, p: p, st: st, rows: rows, env: env}
		f.runEntry = nokv.PathEntry{
			Generation: 1, Revision: st.Rev, LogicalSize: uint64(len(env)),
			BodyDigestURI: core.DigestURI(env), ManifestDigestURI: rowsDigest, ContentType: runManifestContentType,
		}
		if werr := f.planCommit(); werr != nil {
			return nil, werr
		}
		_, err = s.Store().Do(ctx, head.Command{
			Namespace: s.Root(),
			RequestID: s.RequestID(),
			Digest: head.Digest([]byte("cairn.workbench.restore.final.v1"), p.Identity[:], p.Init[:], p.chain[:],
				st.Op[:], st.Rev[:], []byte(rowsDigest)),
			Apply: f.apply,
			Reads: append(p.reads(s, sn, []restoreMember{{path: restoreManifestComps, entry: p.RmEntry}, {path: core.RunManifestComps, entry: f.runEntry}}),
				head.ShardRef{Family: nokv.FamilyRestoreMember, Index: restoreMemberShard(sn, s.Root(), p.OpID), Prefix: nokv.RestoreMemberPrefix(s.Root(), p.OpID)}),
		})
		if !publish.IsStale(err) || try == publish.MaxRestages {
			break
		}
		// The run manifest's blocks aged past the attempt's floor (a
		// pause): stage it again, under fresh ids, and send again.
		publish.DiscardStaging(ctx, s, st)
	}
	if err != nil {
		if _, rejected := errors.AsType[*core.PubReject](err); rejected {
			publish.DiscardStaging(ctx, s, st)
		}
		return nil, core.FromError(err)
	}
	if f.landed && st.HasLedger() {
		s.Cleanup.Add(st.Op)
	} else if !f.landed {
		publish.DiscardStaging(ctx, s, st) // another call finished it first
	}
	if s.RestoreHook != nil {
		if err := s.RestoreHook("final"); err != nil {
			return nil, core.FromError(err)
		}
	}
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	op, found, err := restoreOperation(s, core.SnapshotReader(ctx, sn), p.OpID)
	if err != nil {
		return nil, core.FromError(err)
	}
	if !found || op.Phase != nokv.RestorePhaseComplete || op.Result == nil {
		return nil, core.Internal("restore operation " + p.OpID.String() + " did not complete")
	}
	return restoreResult(s, op, !f.landed), nil
}

// restoreMemberShard is the shard that holds restore op's members.
func restoreMemberShard(sn *head.Snapshot, root nokv.RootID, op nokv.OperationID) uint8 {
	k, _ := nokv.RestoreMemberKey{Root: root, Operation: op}.Encode()
	ref, _ := sn.ShardOf(nokv.FamilyRestoreMember, k)
	return ref.Index
}

// restoreFinal is step 3.
type restoreFinal struct {
	s        *core.Service
	p        *RestorePlan
	st       *publish.Staging
	rows     []nokv.ArtifactManifestEntry
	env      []byte
	runEntry nokv.PathEntry

	members      []finalMember // every member of the destination's commit, in path order
	memberDigest [32]byte      // flat, or the tree's (sealTree)
	tree         *nokv.MemberTree
	revs         []nokv.RevisionID // unique, ascending
	landed       bool
}

// planCommit orders the destination commit's members (the copied ones and
// the two manifests) and seals their digests.
func (f *restoreFinal) planCommit() *core.Error {
	s, p := f.s, f.p
	member := func(path []string, e nokv.PathEntry) (finalMember, error) {
		k, err := nokv.PathCurrentKey{Root: s.Root(), Incarnation: p.DstInc, Path: path}.Encode()
		return finalMember{key: k, path: path, entry: e}, err
	}
	// The members' keys, on every core; the members come in key order
	// from the source's tree, so the two manifests are put in their
	// places, and only members in another order are sorted.
	n := len(p.members)
	f.members = make([]finalMember, n, n+2)
	if err := inParallel(n, func(lo, hi int) (err error) {
		for i := lo; i < hi; i++ {
			if f.members[i], err = member(p.members[i].path, p.members[i].entry); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return core.FromError(err)
	}
	byKey := func(a, b finalMember) int { return bytes.Compare(a.key, b.key) }
	sorted := slices.IsSortedFunc(f.members, byKey)
	for _, m := range []struct {
		path []string
		e    nokv.PathEntry
	}{{restoreManifestComps, p.RmEntry}, {core.RunManifestComps, f.runEntry}} {
		fm, err := member(m.path, m.e)
		if err != nil {
			return core.FromError(err)
		}
		i := len(f.members)
		if sorted {
			i, _ = slices.BinarySearchFunc(f.members, fm, byKey)
		}
		f.members = slices.Insert(f.members, i, fm)
	}
	if !sorted {
		slices.SortFunc(f.members, byKey)
	}
	d := core.NewMemberDigesterOf(uint64(len(f.members)))
	seen := make(map[nokv.RevisionID]bool, len(f.members))
	for _, m := range f.members {
		// A key-ordered restore's commit takes its tree's digest
		// (sealTree).
		if !p.keyOrdered {
			if err := d.Add(m.path, nokv.MemberOf(m.entry)); err != nil {
				return core.FromError(err)
			}
		}
		if !seen[m.entry.Revision] {
			seen[m.entry.Revision] = true
			f.revs = append(f.revs, m.entry.Revision)
		}
	}
	slices.SortFunc(f.revs, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) })
	if !p.keyOrdered {
		f.memberDigest = d.Sum()
	}
	return nil
}

func (f *restoreFinal) apply(tx *head.Tx) ([]byte, error) {
	s, p := f.s, f.p
	f.landed = false
	if f.st.Stale(tx.Floor()) {
		return nil, publish.RejectStale()
	}
	opKey, err := p.opKey(s.Root())
	if err != nil {
		return nil, err
	}
	op, ok, err := loadRestoreOp(tx, opKey)
	if err != nil {
		return nil, err
	}
	switch {
	case !ok:
		return nil, core.Reject(core.Internal("restore operation " + p.OpID.String() + " vanished"))
	case op.Phase == nokv.RestorePhaseComplete:
		return nil, nil // another call finished it
	case op.Phase != nokv.RestorePhaseCopying || op.MemberCursor != op.MemberCount || op.MemberCount != uint64(len(p.members)):
		return nil, core.Reject(core.Conflict(fmt.Sprintf("restore %s is %v at member %d of %d", p.OpID, op.Phase, op.MemberCursor, op.MemberCount), "Restore", nil))
	}
	ws, err := p.stagingMarker(s, tx)
	if err != nil {
		return nil, err
	}
	if err := p.checkMembers(s, tx, op); err != nil {
		return nil, err
	}
	if err := f.placeManifests(tx); err != nil {
		return nil, err
	}
	cm, err := f.sealCommit(tx)
	if err != nil {
		return nil, err
	}
	if err := f.complete(tx, opKey, op, ws, cm); err != nil {
		return nil, err
	}
	f.landed = true
	return nil, nil
}

// placeManifests places the restore's two manifests: a new revision
// each, referenced by its path and by the destination's commit.
func (f *restoreFinal) placeManifests(tx *head.Tx) error {
	s, p, seq := f.s, f.p, tx.Sequence()
	rc := &publish.Refs{S: s, Tx: tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, m := range []struct {
		path  []string
		entry nokv.PathEntry
		rows  []nokv.ArtifactManifestEntry
		st    *publish.Staging
	}{{restoreManifestComps, p.RmEntry, p.rmRows, nil}, {core.RunManifestComps, f.runEntry, f.rows, f.st}} {
		e := m.entry
		e.CreatedVersion, e.ModifiedVersion = seq, seq
		if err := placeRevision(s, tx, e, m.rows, m.st); err != nil {
			return err
		}
		if err := placeEntry(s, tx, p.DstInc, m.path, e, rc); err != nil {
			return err
		}
		add := p.commitMember
		if p.keyOrdered {
			add = func(s *core.Service, tx *head.Tx, _ []string, e nokv.PathEntry, rc *publish.Refs) error {
				return p.commitRef(s, tx, e, rc) // the member goes into the tree
			}
		}
		if err := add(s, tx, m.path, e, rc); err != nil {
			return err
		}
	}
	return rc.Flush()
}

// sealCommit writes the destination's sealed commit, its workbench-head
// consumer and the workbench's commit head.
func (f *restoreFinal) sealCommit(tx *head.Tx) (nokv.Commit, error) {
	s, p, seq := f.s, f.p, tx.Sequence()
	hk, err := nokv.CommitConsumerKey{Root: s.Root(), Commit: p.commitID, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: p.DstInc}.Encode()
	if err != nil {
		return nokv.Commit{}, err
	}
	if err := core.PutRecord(tx, nokv.FamilyCommitConsumer, hk, nokv.CommitConsumer{ConsumerEpochAtAdd: 1, CreatedVersion: seq}.Encode); err != nil {
		return nokv.Commit{}, err
	}
	if p.keyOrdered {
		if err := f.sealTree(tx); err != nil {
			return nokv.Commit{}, err
		}
	}
	cm := nokv.Commit{
		SourceIncarnation: p.DstInc, WorkbenchID: p.DstID,
		ContentDigestURI: p.contentDigest, ManifestDigestURI: p.manifestDigest,
		TreeManifestRevision: f.st.Rev,
		MemberCount:          uint64(len(f.members)), MemberDigest: f.memberDigest,
		UniqueRevisionCount: uint64(len(f.revs)), RevisionDigest: core.RevisionDigest(f.revs),
		ParentDigest:  core.ParentDigest(nil),
		ConsumerCount: 1, ConsumerEpoch: 1,
		State: nokv.CommitStateSealed, CreatedVersion: seq,
		MemberTree: f.tree, TreeDigests: f.tree != nil,
	}
	ck, err := nokv.CommitKey{Root: s.Root(), Commit: p.commitID}.Encode()
	if err != nil {
		return cm, err
	}
	if err := core.TxAbsent(tx, nokv.FamilyCommit, ck, "commit "+p.commitID.String()+" already exists"); err != nil {
		return cm, err
	}
	if err := core.PutRecord(tx, nokv.FamilyCommit, ck, cm.Encode); err != nil {
		return cm, err
	}
	headKey, err := nokv.WorkbenchCommitHeadKey{Root: s.Root(), Incarnation: p.DstInc}.Encode()
	if err != nil {
		return cm, err
	}
	return cm, core.PutRecord(tx, nokv.FamilyWorkbenchCommitHead, headKey, nokv.WorkbenchCommitHead{Commit: p.commitID, HeadGeneration: 1}.Encode)
}

// complete makes the destination visible, releases the source, marks
// the operation Complete with its result and records the change event.
func (f *restoreFinal) complete(tx *head.Tx, opKey []byte, op nokv.RestoreOperation, ws nokv.WorkspaceCurrent, cm nokv.Commit) error {
	s, p, seq := f.s, f.p, tx.Sequence()
	// Visible from this version on (the change feed reads CreatedVersion
	// as the version the incarnation became visible).
	ws.State, ws.Owner = nokv.WorkspaceStateVisible, nil
	ws.CreatedVersion, ws.ModifiedVersion = seq, seq
	if err := s.PutWorkspace(tx, p.DstID, ws); err != nil {
		return err
	}
	if err := p.attachSource(s, tx, false); err != nil {
		return err
	}
	op.Phase = nokv.RestorePhaseComplete
	op.Result = &nokv.RestoreResult{DestinationGeneration: ws.WorkspaceRevision, CommitVersion: seq, Commit: p.commitID}
	if err := core.PutRecord(tx, nokv.FamilyOperation, opKey, op.Encode); err != nil {
		return err
	}
	ev := nokv.ChangeEvent{
		WorkbenchID: p.DstID, Incarnation: p.DstInc, Kind: nokv.ChangeEventKindWorkspaceRestored,
		After: &nokv.EventProjection{Generation: ws.WorkspaceRevision, DigestURI: cm.TreeDigestURI()},
	}
	if p.Src.Kind == nokv.RestoreSourceKindSnapshot {
		id := p.Src.Snapshot
		ev.Snapshot = &id
	} else {
		c := p.Src.Commit
		ev.Commit = &c
	}
	return core.WriteChangeEvent(tx, s.Root(), ev)
}

// checkMembers is the recovery check before Ready: the RestoreMember rows
// are exactly the planned members, in order, and their chain is the one
// the copy batches sealed into the operation.
func (p *RestorePlan) checkMembers(s *core.Service, tx *head.Tx, op nokv.RestoreOperation) error {
	recs, err := tx.Scan(nokv.FamilyRestoreMember, nokv.RestoreMemberPrefix(s.Root(), p.OpID), nil, 0)
	if err != nil {
		return err
	}
	var chain [32]byte
	for i, r := range recs {
		k, err := nokv.ParseRestoreMemberKey(r.Key)
		if err != nil {
			return err
		}
		m, err := nokv.DecodeRestoreMember(r.Value)
		if err != nil {
			return err
		}
		if k.Sequence != uint64(i) || i >= len(p.members) || m.RowDigest != p.members[i].row || !slices.Equal(m.Path, p.members[i].path) {
			return core.Reject(core.InvalidState(fmt.Sprintf("restore %s member %d does not match its source", p.OpID, i)))
		}
		chain = MemberChain(chain, k.Sequence, m.RowDigest)
	}
	if uint64(len(recs)) != op.MemberCount || chain != op.MemberDigest || chain != p.chain {
		return core.Reject(core.InvalidState(fmt.Sprintf("restore %s members do not match their seal", p.OpID)))
	}
	return nil
}

// placeRevision writes a new revision of a restore's manifest: the
// ArtifactRevision with its two references to come (the path's, then the
// commit's), its manifest rows and, for a body in blocks, the staged
// objects the revision now owns.
func placeRevision(s *core.Service, tx *head.Tx, e nokv.PathEntry, rows []nokv.ArtifactManifestEntry, st *publish.Staging) error {
	rk, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: e.Revision}.Encode()
	if err != nil {
		return err
	}
	if err := core.TxAbsent(tx, nokv.FamilyArtifactRevision, rk, "artifact revision "+e.Revision.String()+" already exists"); err != nil {
		return err
	}
	rev := nokv.ArtifactRevision{
		LogicalSize: e.LogicalSize, BodyDigestURI: e.BodyDigestURI, ManifestDigestURI: e.ManifestDigestURI,
		BlockCount: uint64(len(rows)), DependencyDigest: publish.DependencyDigest(nil), ContentType: e.ContentType,
		State: nokv.RevisionStateAvailable, CreatedVersion: tx.Sequence(),
	}
	if err := core.PutRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	for i, r := range rows {
		k, err := nokv.ArtifactManifestKey{Root: s.Root(), Revision: e.Revision, ObjectIndex: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		if err := core.PutRecord(tx, nokv.FamilyArtifactManifest, k, r.Encode); err != nil {
			return err
		}
	}
	if st == nil {
		return nil
	}
	for i, blk := range st.Blocks {
		k, err := nokv.StagedObjectKey{Root: s.Root(), Operation: st.Op, Sequence: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		so := nokv.StagedObject{
			Revision: e.Revision, ObjectKey: blk.Key, ExpectedLength: blk.Size, ExpectedDigestURI: blk.Digest.URI(),
			Provider: nokv.StagedProviderStateUploaded, Cleanup: nokv.StagedCleanupStateOwned,
		}
		if err := core.PutRecord(tx, nokv.FamilyStagedObject, k, so.Encode); err != nil {
			return err
		}
	}
	return nil
}
