package history

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Commit retirement (the seed's CommitRetire). No tool exposes it; it is
// the Go API a retention policy calls.
//
// A commit can be retired only when nothing consumes it: no workbench
// head, tag, restore lease or child commit. One command claims it:
// it predicates Sealed, consumer_count 0 and the consumer epoch the
// caller observed, changes Sealed -> Retiring and writes the
// CommitRetire operation (phase Releasing). A consumer added since
// changed the epoch, so the claim fails; after it, no consumer can
// attach, because every attach predicates Sealed. Then bounded batches,
// one command each, release the commit's closure in a fixed order: its
// CommitMember rows, its Commit RevisionRefs (each revision's count and
// epoch, with a GcCandidate at zero), and its ChildCommit consumers on
// its parents (each parent's count and epoch). The operation row holds
// the typed cursor: how many of each were released. A crash between
// batches leaves the commit Retiring with its operation; calling
// RetireCommit again resumes from the cursor. When a stage runs dry its
// released count must equal the commit's seal (member_count,
// unique_revision_count, parent_count), otherwise the retirement stops
// with InvalidState and nothing more is released. A last command
// publishes Retired and completes the operation. Retiring a Retired
// commit again is a no-op.

// DefaultRetireBatch is how many rows one retirement command releases.
const DefaultRetireBatch = 256

// RetireCommit retires commit, which must have no consumer at consumer
// epoch expectedEpoch (nokv.Commit.ConsumerEpoch as the caller read it).
// A live consumer is InvalidState; an epoch that moved is a retryable
// Conflict.
func RetireCommit(ctx context.Context, s *core.Service, commit nokv.CommitID, expectedEpoch uint64) *core.Error {
	return RetireCommitBatches(ctx, s, commit, expectedEpoch, DefaultRetireBatch, -1)
}

// retireCommit is RetireCommit with batch rows per release command, that
// stops after maxBatches release commands when maxBatches >= 0.
func RetireCommitBatches(ctx context.Context, s *core.Service, commit nokv.CommitID, expectedEpoch uint64, batch, maxBatches int) *core.Error {
	opID := core.CommitRetireOperationID(s.Root(), commit)
	opKey, err := nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindCommitRetire, ID: opID}.Encode()
	if err != nil {
		return core.FromError(err)
	}
	commitKey, err := nokv.CommitKey{Root: s.Root(), Commit: commit}.Encode()
	if err != nil {
		return core.FromError(err)
	}
	r := &retirer{s: s, commit: commit, opKey: opKey, commitKey: commitKey, batch: batch}
	if _, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest([]byte("cairn.workbench.commit_retire.claim.v1"), commit[:], wireU64(expectedEpoch)),
		Apply:     func(tx *head.Tx) ([]byte, error) { return nil, r.claim(tx, expectedEpoch) },
	}); err != nil {
		return core.FromError(err)
	}
	for n := 0; maxBatches < 0 || n < maxBatches; n++ {
		res, err := s.Store().Do(ctx, head.Command{
			Namespace: s.Root(),
			RequestID: s.RequestID(),
			Digest:    head.Digest([]byte("cairn.workbench.commit_retire.release.v1"), commit[:], wireU64(uint64(n))),
			Apply:     r.release,
		})
		if err != nil {
			return core.FromError(err)
		}
		var done bool
		if err := json.Unmarshal(res.Value, &done); err != nil {
			return core.FromError(err)
		}
		if done {
			return nil
		}
	}
	return nil
}

func wireU64(v uint64) []byte {
	return []byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

// retirer runs the commands of one retirement.
type retirer struct {
	s         *core.Service
	commit    nokv.CommitID
	opKey     []byte
	commitKey []byte
	batch     int
}

func (r *retirer) load(tx *head.Tx) (nokv.Commit, *nokv.CommitRetireOperation, error) {
	v, ok, err := tx.Get(nokv.FamilyCommit, r.commitKey)
	if err != nil {
		return nokv.Commit{}, nil, err
	}
	if !ok {
		return nokv.Commit{}, nil, core.Reject(core.Missing("commit " + r.commit.String() + " does not exist"))
	}
	c, err := nokv.DecodeCommit(v)
	if err != nil {
		return nokv.Commit{}, nil, err
	}
	ov, ok, err := tx.Get(nokv.FamilyOperation, r.opKey)
	if err != nil || !ok {
		return c, nil, err
	}
	op, err := nokv.DecodeCommitRetireOperation(ov)
	if err != nil {
		return c, nil, err
	}
	return c, &op, nil
}

// claim changes Sealed -> Retiring at the expected epoch with no
// consumer, unless the retirement is already under way.
func (r *retirer) claim(tx *head.Tx, expectedEpoch uint64) error {
	c, op, err := r.load(tx)
	if err != nil || op != nil {
		return err // an operation exists: resume it
	}
	switch {
	case c.State != nokv.CommitStateSealed:
		return core.Reject(core.InvalidState(fmt.Sprintf("commit %s is %v without a retirement", r.commit, c.State)))
	case c.ConsumerEpoch != expectedEpoch:
		cur := c.ConsumerEpoch
		return core.Reject(core.Conflict(fmt.Sprintf("commit %s consumer epoch is %d, not %d", r.commit, cur, expectedEpoch), "CommitConsumer", nil))
	case c.ConsumerCount != 0:
		return core.Reject(core.InvalidState(fmt.Sprintf("commit %s still has %d consumers", r.commit, c.ConsumerCount)))
	}
	c.State = nokv.CommitStateRetiring
	if err := core.PutRecord(tx, nokv.FamilyCommit, r.commitKey, c.Encode); err != nil {
		return err
	}
	claimed := nokv.CommitRetireOperation{Phase: nokv.CommitRetirePhaseReleasing, Commit: r.commit, ClaimedEpoch: expectedEpoch}
	return core.PutRecord(tx, nokv.FamilyOperation, r.opKey, claimed.Encode)
}

// release runs one bounded batch of the stage the cursor is in, or, when
// every stage is done, publishes Retired. Its result is true when the
// retirement is complete.
func (r *retirer) release(tx *head.Tx) ([]byte, error) {
	c, op, err := r.load(tx)
	if err != nil {
		return nil, err
	}
	if op == nil {
		return nil, core.Reject(core.InvalidState("commit " + r.commit.String() + " has no retirement under way"))
	}
	if op.Phase == nokv.CommitRetirePhaseComplete {
		return json.Marshal(true)
	}
	if op.Phase != nokv.CommitRetirePhaseReleasing || c.State != nokv.CommitStateRetiring {
		return nil, core.Reject(core.InvalidState(fmt.Sprintf("commit %s retirement is %v with the commit %v", r.commit, op.Phase, c.State)))
	}
	seq := tx.Sequence()
	for _, stage := range []func(*head.Tx, *nokv.Commit, *nokv.CommitRetireOperation) (int, error){r.releaseMembers, r.releaseRevisions, r.releaseParents} {
		n, err := stage(tx, &c, op)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			if err := core.PutRecord(tx, nokv.FamilyOperation, r.opKey, op.Encode); err != nil {
				return nil, err
			}
			return json.Marshal(false)
		}
	}
	c.State = nokv.CommitStateRetired
	op.Phase = nokv.CommitRetirePhaseComplete
	op.CompletedVersion = seq
	if err := core.PutRecord(tx, nokv.FamilyCommit, r.commitKey, c.Encode); err != nil {
		return nil, err
	}
	if err := core.PutRecord(tx, nokv.FamilyOperation, r.opKey, op.Encode); err != nil {
		return nil, err
	}
	return json.Marshal(true)
}

// sealMismatch stops a retirement whose released rows disagree with the
// commit's seal.
func (r *retirer) sealMismatch(what string, released, sealed uint64) error {
	return core.Reject(core.InvalidState(fmt.Sprintf("commit %s: %d %s released, the seal says %d", r.commit, released, what, sealed)))
}

// releaseMembers deletes up to a batch of the commit's CommitMember rows.
// It returns how many it released; 0 once none is left, after checking
// the count against the seal.
func (r *retirer) releaseMembers(tx *head.Tx, c *nokv.Commit, op *nokv.CommitRetireOperation) (int, error) {
	recs, err := tx.Scan(nokv.FamilyCommitMember, nokv.CommitMemberPrefix(r.s.Root(), r.commit), nil, r.batch)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		if c.MemberTree != nil {
			// The members are a tree no row names: a sweep collects its
			// nodes once no kept root's commit reaches them.
			return 0, nil
		}
		if op.MembersReleased != c.MemberCount {
			return 0, r.sealMismatch("members", op.MembersReleased, c.MemberCount)
		}
		return 0, nil
	}
	if c.MemberTree != nil {
		return 0, core.Reject(core.InvalidState(fmt.Sprintf("commit %s has a member tree and member rows", r.commit)))
	}
	for _, rec := range recs {
		if err := tx.Delete(nokv.FamilyCommitMember, rec.Key); err != nil {
			return 0, err
		}
	}
	op.MembersReleased += uint64(len(recs))
	return len(recs), nil
}

// releaseRevisions releases up to a batch of the commit's Commit
// RevisionRefs: each row goes and its revision's count drops.
func (r *retirer) releaseRevisions(tx *head.Tx, c *nokv.Commit, op *nokv.CommitRetireOperation) (int, error) {
	prefix, err := nokv.RevisionRefKey{Root: r.s.Root(), Kind: nokv.ReferenceKindCommit, Commit: r.commit}.OwnerPrefix()
	if err != nil {
		return 0, err
	}
	recs, err := tx.Scan(nokv.FamilyRevisionRef, prefix, nil, r.batch)
	if err != nil {
		return 0, err
	}
	if len(recs) == 0 {
		want := c.UniqueRevisionCount
		if c.MemberTree != nil {
			want = c.MemberTree.References // its parent keeps the rest
		}
		if op.RevisionsReleased != want {
			return 0, r.sealMismatch("revision references", op.RevisionsReleased, want)
		}
		return 0, nil
	}
	rc := &publish.Refs{S: r.s, Tx: tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, rec := range recs {
		k, err := nokv.ParseRevisionRefKey(rec.Key)
		if err != nil {
			return 0, err
		}
		if err := tx.Delete(nokv.FamilyRevisionRef, rec.Key); err != nil {
			return 0, err
		}
		if err := rc.Remove(k.Revision); err != nil {
			return 0, err
		}
	}
	if err := rc.Flush(); err != nil {
		return 0, err
	}
	op.RevisionsReleased += uint64(len(recs))
	return len(recs), nil
}

// releaseParents releases up to a batch of the commit's ChildCommit
// consumers on its parents, in the sealed parent order from the cursor.
func (r *retirer) releaseParents(tx *head.Tx, c *nokv.Commit, op *nokv.CommitRetireOperation) (int, error) {
	if op.ParentsReleased > uint64(len(c.Parents)) {
		return 0, r.sealMismatch("parents", op.ParentsReleased, uint64(len(c.Parents)))
	}
	todo := c.Parents[op.ParentsReleased:]
	todo = todo[:min(len(todo), r.batch)]
	for _, parent := range todo {
		ck, err := nokv.CommitConsumerKey{Root: r.s.Root(), Commit: parent, Kind: nokv.CommitConsumerKindChildCommit, Child: r.commit}.Encode()
		if err != nil {
			return 0, err
		}
		if _, ok, err := tx.Get(nokv.FamilyCommitConsumer, ck); err != nil {
			return 0, err
		} else if !ok {
			return 0, core.Reject(core.InvalidState(fmt.Sprintf("commit %s: its consumer row on parent %s is missing", r.commit, parent)))
		}
		pk, err := nokv.CommitKey{Root: r.s.Root(), Commit: parent}.Encode()
		if err != nil {
			return 0, err
		}
		v, ok, err := tx.Get(nokv.FamilyCommit, pk)
		if err != nil {
			return 0, err
		}
		if !ok {
			return 0, core.Reject(core.InvalidState("parent commit " + parent.String() + " does not exist"))
		}
		p, err := nokv.DecodeCommit(v)
		if err != nil {
			return 0, err
		}
		if p.ConsumerCount == 0 {
			return 0, core.Reject(core.InvalidState("parent commit " + parent.String() + " has no consumer to release"))
		}
		p.ConsumerCount--
		p.ConsumerEpoch++
		if p.ConsumerCount == 0 {
			p.LastZeroConsumerVersion = tx.Sequence()
		}
		if err := tx.Delete(nokv.FamilyCommitConsumer, ck); err != nil {
			return 0, err
		}
		if err := core.PutRecord(tx, nokv.FamilyCommit, pk, p.Encode); err != nil {
			return 0, err
		}
	}
	op.ParentsReleased += uint64(len(todo))
	return len(todo), nil
}
