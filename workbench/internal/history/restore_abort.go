package history

import (
	"context"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Aborting a restore (docs/workbench.md, "Restore").
//
// AbortRestore abandons a restore that has not completed, as the seed's
// cleanup path does: one command moves the operation from Copying to
// Aborting (the same record the final command CASes, so exactly one of
// them wins); cleaning batches then remove, member by member from the
// last placed down, what the copy batches wrote (the destination's
// PathCurrent and index rows, its Path references, the destination
// commit's member rows and Commit references, the RestoreMember rows),
// lowering the operation's member cursor to 0; a last command deletes the
// destination's directory rows, turns its Staging marker Retired (the name
// can then be restored or created again, under another incarnation),
// releases the source's hold or lease and makes the operation Cleaned.
// Each command predicates the operation's exact phase and cursor, so an
// abort that stops between them resumes where it stopped. Cleanup is
// driven by the RestoreMember rows, never by a listing, and never touches
// a Visible workbench.

// AbortBatch is how many members one cleaning command removes.
var AbortBatch = 256

// AbortRestore abandons the unfinished restore whose destination is dst.
// Errors are *Error: NotFound when dst does not exist, InvalidState when
// it is not a restore in progress (a Visible workbench, or a restore that
// completed).
func AbortRestore(ctx context.Context, s *core.Service, dst string) error {
	if werr := abortRestore(ctx, s, dst); werr != nil {
		return werr
	}
	return nil
}

func abortRestore(ctx context.Context, s *core.Service, dst string) *core.Error {
	if _, werr := core.ParseWorkbenchID(dst); werr != nil {
		return werr
	}
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return werr
	}
	ws, ok, werr := s.Workspace(ctx, core.SnapshotReader(ctx, sn), dst)
	if werr != nil {
		return werr
	}
	if !ok {
		return core.Missing(fmt.Sprintf("workbench %s does not exist", dst))
	}
	if ws.State != nokv.WorkspaceStateStaging || ws.Owner == nil || ws.Owner.Kind != nokv.OperationKindRestore {
		return core.InvalidState(fmt.Sprintf("workbench %s is not a restore in progress", dst))
	}
	opID := ws.Owner.ID
	op, found, err := restoreOperation(s, core.SnapshotReader(ctx, sn), opID)
	if err != nil {
		return core.FromError(err)
	}
	if !found || op.DestinationIncarnation != ws.Incarnation {
		return core.InvalidState(fmt.Sprintf("workbench %s is owned by restore %s, which does not name it", dst, opID))
	}
	a := &restoreAbort{s: s, opID: opID, op: op}
	if sn.Marker().ValueFormatVersion >= nokv.KeyOrderedRestoreFrom && op.MemberCursor > 0 {
		// The copy commands placed shares of each family's key order:
		// what to remove is known from the plan, derived again from the
		// source the restore still holds.
		if a.ordered, werr = replanRestore(ctx, s, sn, a.plan(), op); werr != nil {
			return werr
		}
	}
	if op.Phase == nokv.RestorePhaseCopying {
		if werr := a.step(ctx, "abort", a.begin); werr != nil {
			return werr
		}
	}
	// The cursor as the begin command left it (cleaning never raises it).
	for c := op.MemberCursor; c > 0; {
		lo := c - min(c, uint64(AbortBatch))
		hi := c
		if werr := a.step(ctx, "clean", func(tx *head.Tx) ([]byte, error) { return nil, a.clean(tx, lo, hi) }); werr != nil {
			return werr
		}
		c = lo
	}
	return a.step(ctx, "cleaned", a.finish)
}

// restoreAbort is one abort of restore opID.
type restoreAbort struct {
	s    *core.Service
	opID nokv.OperationID
	op   nokv.RestoreOperation // as first read: the identities never change
	// ordered is the plan of a key-ordered restore (value format 7),
	// whose cleaning removes the shares its copy commands placed; nil for
	// a member-ordered one, cleaned member by member.
	ordered *RestorePlan
}

func (a *restoreAbort) step(ctx context.Context, step string, apply func(*head.Tx) ([]byte, error)) *core.Error {
	_, err := a.s.Store().Do(ctx, head.Command{
		Namespace: a.s.Root(),
		RequestID: a.s.RequestID(),
		Digest:    head.Digest([]byte("cairn.workbench.restore."+step+".v1"), a.opID[:]),
		Apply:     apply,
	})
	if err != nil {
		return core.FromError(err)
	}
	if a.s.RestoreHook != nil {
		if err := a.s.RestoreHook(step); err != nil {
			return core.FromError(err)
		}
	}
	return nil
}

// load reads the operation and checks the destination's marker is still
// the Staging one it owns.
func (a *restoreAbort) load(tx *head.Tx) (nokv.RestoreOperation, []byte, error) {
	key, err := nokv.OperationKey{Root: a.s.Root(), Kind: nokv.OperationKindRestore, ID: a.opID}.Encode()
	if err != nil {
		return nokv.RestoreOperation{}, nil, err
	}
	op, ok, err := loadRestoreOp(tx, key)
	if err != nil {
		return op, nil, err
	}
	if !ok {
		return op, nil, core.Reject(core.Internal("restore operation " + a.opID.String() + " vanished"))
	}
	return op, key, nil
}

// begin CASes Copying to Aborting.
func (a *restoreAbort) begin(tx *head.Tx) ([]byte, error) {
	op, key, err := a.load(tx)
	if err != nil {
		return nil, err
	}
	switch op.Phase {
	case nokv.RestorePhaseAborting, nokv.RestorePhaseCleaning:
		return nil, nil // another call began it
	case nokv.RestorePhaseCopying:
	default:
		return nil, core.Reject(core.InvalidState(fmt.Sprintf("restore %s is %v and cannot be aborted", a.opID, op.Phase)))
	}
	if _, err := a.plan().stagingMarker(a.s, tx); err != nil {
		return nil, err
	}
	op.Phase = nokv.RestorePhaseAborting
	return nil, core.PutRecord(tx, nokv.FamilyOperation, key, op.Encode)
}

// plan is what the shared command steps need of the restore: its
// identities, from the operation.
func (a *restoreAbort) plan() *RestorePlan {
	op := a.op
	p := &RestorePlan{SrcID: op.SourceWorkbenchID, DstID: op.DestinationWorkbenchID,
		SrcInc: op.SourceIncarnation, DstInc: op.DestinationIncarnation, OpID: a.opID,
		readVersion: op.SourceReadVersion, commitID: op.DestinationCommit}
	p.Src.Kind = op.SourceKind
	if op.SourceSnapshot != nil {
		p.Src.Snapshot = *op.SourceSnapshot
	}
	if op.SourceCommit != nil {
		p.Src.Commit = *op.SourceCommit
	}
	return p
}

// clean removes members [lo, hi) and lowers the cursor to lo.
func (a *restoreAbort) clean(tx *head.Tx, lo, hi uint64) error {
	s, p := a.s, a.plan()
	op, key, err := a.load(tx)
	if err != nil {
		return err
	}
	switch {
	case (op.Phase == nokv.RestorePhaseAborting || op.Phase == nokv.RestorePhaseCleaning) && op.MemberCursor <= lo:
		return nil // an earlier run cleaned them
	case op.Phase != nokv.RestorePhaseAborting && op.Phase != nokv.RestorePhaseCleaning, op.MemberCursor != hi:
		return core.Reject(core.Conflict(fmt.Sprintf("restore %s is %v at member %d, not %d", a.opID, op.Phase, op.MemberCursor, hi), "Restore", nil))
	}
	if _, err := p.stagingMarker(s, tx); err != nil {
		return err
	}
	rc := &publish.Refs{S: s, Tx: tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	if a.ordered != nil {
		if err := a.ordered.cleanOrdered(s, tx, rc, lo, hi); err != nil {
			return err
		}
	}
	for i := hi; i > lo && a.ordered == nil; i-- {
		if err := a.removeMember(tx, p, rc, i-1); err != nil {
			return err
		}
	}
	if err := rc.Flush(); err != nil {
		return err
	}
	op.Phase, op.MemberCursor = nokv.RestorePhaseCleaning, lo
	return core.PutRecord(tx, nokv.FamilyOperation, key, op.Encode)
}

// removeMember removes what the copy batch placed for member i.
func (a *restoreAbort) removeMember(tx *head.Tx, p *RestorePlan, rc *publish.Refs, i uint64) error {
	s := a.s
	mk, err := nokv.RestoreMemberKey{Root: s.Root(), Operation: a.opID, Sequence: i}.Encode()
	if err != nil {
		return err
	}
	b, ok, err := tx.Get(nokv.FamilyRestoreMember, mk)
	if err != nil {
		return err
	}
	if !ok {
		return core.Reject(core.InvalidState(fmt.Sprintf("restore %s has no member %d to clean", a.opID, i)))
	}
	m, err := nokv.DecodeRestoreMember(b)
	if err != nil {
		return err
	}
	pk, err := nokv.PathCurrentKey{Root: s.Root(), Incarnation: p.DstInc, Path: m.Path}.Encode()
	if err != nil {
		return err
	}
	if v, ok, err := tx.Get(nokv.FamilyPathCurrent, pk); err != nil {
		return err
	} else if ok {
		e, err := nokv.DecodePathEntry(v)
		if err != nil {
			return err
		}
		idx, err := core.PathIndexKeys(s.Root(), p.DstInc, m.Path, &e)
		if err != nil {
			return err
		}
		for _, k := range idx {
			if err := tx.Delete(nokv.FamilySecondaryIndex, k); err != nil {
				return err
			}
		}
		if err := tx.Delete(nokv.FamilyPathCurrent, pk); err != nil {
			return err
		}
	}
	for _, ref := range []nokv.RevisionRefKey{
		nokv.PathRefKey(s.Root(), p.DstInc, m.Path, m.Revision),
		nokv.CommitRefKey(s.Root(), p.commitID, m.Revision),
	} {
		k, err := ref.Encode()
		if err != nil {
			return err
		}
		_, ok, err := tx.Get(nokv.FamilyRevisionRef, k)
		if err != nil {
			return err
		}
		if !ok {
			continue // the commit's reference on a revision two paths share
		}
		if err := tx.Delete(nokv.FamilyRevisionRef, k); err != nil {
			return err
		}
		if err := rc.Remove(m.Revision); err != nil {
			return err
		}
	}
	cmk, err := nokv.CommitMemberKey{Root: s.Root(), Commit: p.commitID, Path: m.Path}.Encode()
	if err != nil {
		return err
	}
	if err := tx.Delete(nokv.FamilyCommitMember, cmk); err != nil {
		return err
	}
	return tx.Delete(nokv.FamilyRestoreMember, mk)
}

// finish deletes the destination's directory rows, retires its marker,
// releases the source and makes the operation Cleaned.
func (a *restoreAbort) finish(tx *head.Tx) ([]byte, error) {
	s, p := a.s, a.plan()
	op, key, err := a.load(tx)
	if err != nil {
		return nil, err
	}
	switch {
	case op.Phase == nokv.RestorePhaseCleaned:
		return nil, nil
	case op.Phase != nokv.RestorePhaseAborting && op.Phase != nokv.RestorePhaseCleaning, op.MemberCursor != 0:
		return nil, core.Reject(core.Conflict(fmt.Sprintf("restore %s is %v at member %d, not cleaned", a.opID, op.Phase, op.MemberCursor), "Restore", nil))
	}
	ws, err := p.stagingMarker(s, tx)
	if err != nil {
		return nil, err
	}
	root := s.Root()
	prefix := append(append([]byte(nil), root[:]...), p.DstInc[:]...)
	if left, err := tx.Scan(nokv.FamilyPathCurrent, prefix, nil, 1); err != nil {
		return nil, err
	} else if len(left) > 0 {
		return nil, core.Reject(core.InvalidState(fmt.Sprintf("restore %s left a path its members do not name", a.opID)))
	}
	dirs, err := tx.Scan(nokv.FamilyPathDirectory, prefix, nil, 0)
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := tx.Delete(nokv.FamilyPathDirectory, d.Key); err != nil {
			return nil, err
		}
	}
	ws.State, ws.Owner, ws.ModifiedVersion = nokv.WorkspaceStateRetired, nil, tx.Sequence()
	if err := s.PutWorkspace(tx, p.DstID, ws); err != nil {
		return nil, err
	}
	if err := p.attachSource(s, tx, false); err != nil {
		return nil, err
	}
	op.Phase = nokv.RestorePhaseCleaned
	return nil, core.PutRecord(tx, nokv.FamilyOperation, key, op.Encode)
}
