package workbench

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// Collecting artifact revisions: the logical side of garbage collection.
//
// When a command releases the last strong reference of a revision it
// writes a GcCandidate (Candidate, keyed by the revision's reference
// epoch; refs.go). CollectRevisions drives each candidate through the
// seed's states, one engine command per step:
//
//  1. Claim: the revision is still Available at the candidate's epoch with
//     no reference: it becomes Deleting and the candidate Claimed. A
//     candidate whose revision was referenced again (another epoch, or a
//     count above zero) is stale and its row is removed.
//  2. Delete, outside the engine: the block objects the revision owns
//     (its ArtifactManifest rows whose physical owner is the revision;
//     blocks an append reused belong to their owner). A missing block is
//     already deleted.
//  3. Finish: the revision becomes Deleted and the candidate Complete;
//     the revision's ArtifactManifest rows go (so that no reachable record
//     names the deleted blocks), and its RevisionDependency references on
//     the owners of the blocks it reused are released, which may make
//     those owners candidates in turn (the child first, then its bases).
//
// An ambiguous delete (the store may or may not have deleted a block)
// makes the revision and the candidate Quarantined instead of step 3:
// nothing adds a reference to a Quarantined revision (refs.add), and a
// later reconciliation decides. Any other failure leaves the revision
// Deleting and the candidate Claimed; the next run resumes at step 2.
//
// A zero count is not enough to delete. Snapshots hold roots, not
// references, and a request may read a root that was the head within
// the sweep's grace period: a revision whose count reached zero at
// version V is still read through any root older than V. So a candidate
// waits until every root a reader may read is at least V: Floor, the
// oldest sequence a sweep marked (gcsweep.Report.OldestSequence: the
// heads of the grace period, the held and the pinned roots). Every root
// committed at V or later names the revision nowhere: its count has been
// zero since V at the same epoch.

// CollectOptions tune CollectRevisions.
type CollectOptions struct {
	// Floor is the oldest sequence of a root any reader may still read:
	// gcsweep.Report.OldestSequence of a sweep (a dry run will do) run
	// just before. A candidate whose count reached zero after Floor
	// waits. Zero collects nothing.
	Floor uint64
	// Max bounds the candidates one run handles. Default 1,000.
	Max int
	// DryRun reports what would be collected and changes nothing.
	DryRun bool
}

// CollectReport is what CollectRevisions did.
type CollectReport struct {
	Candidates    int   `json:"candidates"`  // Candidate or Claimed rows found
	Waiting       int   `json:"waiting"`     // zero only since after the floor
	Stale         int   `json:"stale"`       // referenced again: row removed
	Collected     int   `json:"collected"`   // now Deleted (in a dry run: would be)
	Quarantined   int   `json:"quarantined"` // an ambiguous delete, now or before
	Failed        int   `json:"failed"`      // left Deleting for a later run
	BlocksDeleted int   `json:"blocks_deleted"`
	BytesDeleted  int64 `json:"bytes_deleted"` // as the manifest rows say
}

// Outcomes of a claim.
const (
	claimTaken = "claimed"
	claimStale = "stale"
	claimGone  = "gone"
)

// CollectRevisions collects the artifact revisions whose GcCandidate is
// due (see the comment above). It returns what it did; an error means it
// stopped early (a failed command, or a failed block delete's errors
// joined).
func (s *Service) CollectRevisions(ctx context.Context, opts CollectOptions) (CollectReport, error) {
	var rep CollectReport
	if opts.Max <= 0 {
		opts.Max = 1000
	}
	sn, werr := s.pin(ctx)
	if werr != nil {
		return rep, werr
	}
	recs, err := sn.Scan(ctx, nokv.FamilyGcCandidate, s.root[:], nil, 0)
	if err != nil {
		return rep, err
	}
	var errs []error
	for _, rec := range recs {
		if rep.Candidates >= opts.Max {
			break
		}
		k, err := nokv.ParseGcCandidateKey(rec.Key)
		if err != nil {
			return rep, err
		}
		c, err := nokv.DecodeGcCandidate(rec.Value)
		if err != nil {
			return rep, err
		}
		switch c.Claim {
		case nokv.GcClaimStateComplete:
			continue
		case nokv.GcClaimStateQuarantined:
			rep.Quarantined++
			continue
		}
		rep.Candidates++
		if c.LastZeroRefVersion > opts.Floor {
			rep.Waiting++
			continue
		}
		if opts.DryRun {
			rep.Collected++
			continue
		}
		if c.Claim == nokv.GcClaimStateCandidate {
			outcome, err := s.runRevisionStep(ctx, func(tx *head.Tx) (string, error) { return s.claimRevision(tx, k) })
			if err != nil {
				return rep, err
			}
			if outcome == claimStale {
				rep.Stale++
			}
			if outcome != claimTaken {
				continue
			}
		}
		blocks, bytes, ambiguous, derr := s.deleteOwnBlocks(ctx, k.Revision)
		rep.BlocksDeleted += blocks
		rep.BytesDeleted += bytes
		switch {
		case ambiguous:
			if _, err := s.runRevisionStep(ctx, func(tx *head.Tx) (string, error) { return "", s.quarantineRevision(tx, k, derr) }); err != nil {
				return rep, err
			}
			rep.Quarantined++
		case derr != nil:
			rep.Failed++
			errs = append(errs, derr)
		default:
			if _, err := s.runRevisionStep(ctx, func(tx *head.Tx) (string, error) { return "", s.finishRevision(tx, k) }); err != nil {
				return rep, err
			}
			rep.Collected++
		}
	}
	return rep, errors.Join(errs...)
}

// runRevisionStep runs one step as an engine command and returns its
// outcome.
func (s *Service) runRevisionStep(ctx context.Context, step func(tx *head.Tx) (string, error)) (string, error) {
	res, err := s.store.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		out, err := step(tx)
		return []byte(out), err
	}})
	if err != nil {
		return "", fmt.Errorf("workbench: collect revisions: %w", err)
	}
	return string(res.Value), nil
}

// candidateAndRevision reads a candidate and its revision in tx.
func (s *Service) candidateAndRevision(tx *head.Tx, k nokv.GcCandidateKey) (ck []byte, c nokv.GcCandidate, found bool, rk []byte, rev nokv.ArtifactRevision, err error) {
	if ck, err = k.Encode(); err != nil {
		return
	}
	b, ok, err := tx.Get(nokv.FamilyGcCandidate, ck)
	if err != nil || !ok {
		return ck, c, false, nil, rev, err
	}
	if c, err = nokv.DecodeGcCandidate(b); err != nil {
		return
	}
	if rk, err = (nokv.ArtifactRevisionKey{Root: s.root, Revision: k.Revision}).Encode(); err != nil {
		return
	}
	b, ok, err = tx.Get(nokv.FamilyArtifactRevision, rk)
	if err != nil {
		return
	}
	if !ok {
		return ck, c, true, rk, rev, fmt.Errorf("workbench: gc candidate %s: no revision: %w", k.Revision, bucket.ErrIntegrity)
	}
	rev, err = nokv.DecodeArtifactRevision(b)
	return ck, c, true, rk, rev, err
}

// claimRevision is step 1.
func (s *Service) claimRevision(tx *head.Tx, k nokv.GcCandidateKey) (string, error) {
	ck, c, found, rk, rev, err := s.candidateAndRevision(tx, k)
	if err != nil || !found || c.Claim != nokv.GcClaimStateCandidate {
		return claimGone, err
	}
	if rev.State != nokv.RevisionStateAvailable || rev.ReferenceEpoch != k.ReferenceEpoch || rev.StrongReferenceCount != 0 {
		return claimStale, tx.Delete(nokv.FamilyGcCandidate, ck)
	}
	rev.State = nokv.RevisionStateDeleting
	c.Claim = nokv.GcClaimStateClaimed
	c.Attempts++
	if err := putRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return "", err
	}
	return claimTaken, putRecord(tx, nokv.FamilyGcCandidate, ck, c.Encode)
}

// deleteOwnBlocks deletes the block objects revision rev owns. ambiguous
// reports a delete whose outcome the store left unknown.
func (s *Service) deleteOwnBlocks(ctx context.Context, rev nokv.RevisionID) (blocks int, bytes int64, ambiguous bool, err error) {
	sn, werr := s.pin(ctx)
	if werr != nil {
		return 0, 0, false, werr
	}
	recs, err := sn.Scan(ctx, nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(s.root, rev), nil, 0)
	if err != nil {
		return 0, 0, false, err
	}
	seen := map[string]bool{}
	for _, rec := range recs {
		row, err := nokv.DecodeArtifactManifestEntry(rec.Value)
		if err != nil {
			return blocks, bytes, false, err
		}
		if row.Inline != nil || row.ObjectKey == "" || row.PhysicalOwner != rev || seen[row.ObjectKey] {
			continue
		}
		seen[row.ObjectKey] = true
		if err := s.store.Bucket().Delete(ctx, row.ObjectKey, bucket.Unconditional); err != nil {
			return blocks, bytes, errors.Is(err, bucket.ErrAmbiguous), fmt.Errorf("workbench: delete block %s of revision %s: %w", row.ObjectKey, rev, err)
		}
		blocks++
		bytes += int64(row.ObjectOffset + row.Length)
	}
	return blocks, bytes, false, nil
}

// finishRevision is step 3.
func (s *Service) finishRevision(tx *head.Tx, k nokv.GcCandidateKey) error {
	ck, c, found, rk, rev, err := s.candidateAndRevision(tx, k)
	if err != nil || !found || c.Claim != nokv.GcClaimStateClaimed || rev.State != nokv.RevisionStateDeleting {
		return err // finished meanwhile
	}
	rows, err := tx.Scan(nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(s.root, k.Revision), nil, 0)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := tx.Delete(nokv.FamilyArtifactManifest, r.Key); err != nil {
			return err
		}
	}
	if err := s.releaseDependencies(tx, k.Revision); err != nil {
		return err
	}
	rev.State = nokv.RevisionStateDeleted
	c.Claim = nokv.GcClaimStateComplete
	if err := putRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	return putRecord(tx, nokv.FamilyGcCandidate, ck, c.Encode)
}

// releaseDependencies releases the RevisionDependency references child
// holds on the owners of the blocks it reused.
func (s *Service) releaseDependencies(tx *head.Tx, child nokv.RevisionID) error {
	prefix, err := nokv.RevisionRefKey{Root: s.root, Kind: nokv.ReferenceKindRevisionDependency, Child: child}.OwnerPrefix()
	if err != nil {
		return err
	}
	recs, err := tx.Scan(nokv.FamilyRevisionRef, prefix, nil, 0)
	if err != nil {
		return err
	}
	rc := &refs{s: s, tx: tx, revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, rec := range recs {
		k, err := nokv.ParseRevisionRefKey(rec.Key)
		if err != nil {
			return err
		}
		if err := tx.Delete(nokv.FamilyRevisionRef, rec.Key); err != nil {
			return err
		}
		if err := rc.remove(k.Revision); err != nil {
			return err
		}
	}
	return rc.flush()
}

// quarantineRevision records an ambiguous delete: the revision and the
// candidate become Quarantined, with the error as evidence.
func (s *Service) quarantineRevision(tx *head.Tx, k nokv.GcCandidateKey, cause error) error {
	ck, c, found, rk, rev, err := s.candidateAndRevision(tx, k)
	if err != nil || !found {
		return err
	}
	rev.State = nokv.RevisionStateQuarantined
	c.Claim = nokv.GcClaimStateQuarantined
	evidence := "ambiguous delete"
	if cause != nil {
		evidence = cause.Error()
	}
	if len(evidence) > 512 {
		evidence = strings.ToValidUTF8(evidence[:512], "")
	}
	c.Evidence = &evidence
	if err := putRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	return putRecord(tx, nokv.FamilyGcCandidate, ck, c.Encode)
}
