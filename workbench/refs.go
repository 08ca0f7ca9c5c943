package workbench

import (
	"fmt"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// refs accounts for strong reference changes within one command: every
// addition and removal changes the revision's count and bumps its epoch.
type refs struct {
	s     *Service
	tx    *head.Tx
	revs  map[nokv.RevisionID]*nokv.ArtifactRevision
	order []nokv.RevisionID
}

func (r *refs) load(rev nokv.RevisionID) (*nokv.ArtifactRevision, error) {
	if a, ok := r.revs[rev]; ok {
		return a, nil
	}
	key, err := nokv.ArtifactRevisionKey{Root: r.s.root, Revision: rev}.Encode()
	if err != nil {
		return nil, err
	}
	b, ok, err := r.tx.Get(nokv.FamilyArtifactRevision, key)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, reject(InvalidState("artifact revision " + rev.String() + " does not exist"))
	}
	a, err := nokv.DecodeArtifactRevision(b)
	if err != nil {
		return nil, err
	}
	r.revs[rev] = &a
	r.order = append(r.order, rev)
	return &a, nil
}

// add takes a strong reference on rev and returns its epoch after.
func (r *refs) add(rev nokv.RevisionID) (uint64, error) {
	a, err := r.load(rev)
	if err != nil {
		return 0, err
	}
	if a.State != nokv.RevisionStateAvailable {
		return 0, reject(InvalidState(fmt.Sprintf("artifact revision %s is %v and cannot be referenced", rev, a.State)))
	}
	a.StrongReferenceCount++
	a.ReferenceEpoch++
	return a.ReferenceEpoch, nil
}

// remove drops a strong reference on rev.
func (r *refs) remove(rev nokv.RevisionID) error {
	a, err := r.load(rev)
	if err != nil {
		return err
	}
	if a.StrongReferenceCount == 0 {
		return reject(InvalidState("artifact revision " + rev.String() + " has no reference to release"))
	}
	a.StrongReferenceCount--
	a.ReferenceEpoch++
	return nil
}

// flush writes every changed revision; one left without references gets
// its last-zero version and a GcCandidate keyed by its new epoch.
func (r *refs) flush() error {
	seq := r.tx.Sequence()
	for _, rev := range r.order {
		a := r.revs[rev]
		if a.StrongReferenceCount == 0 {
			a.LastZeroRefVersion = seq
			ck, err := nokv.GcCandidateKey{Root: r.s.root, Revision: rev, ReferenceEpoch: a.ReferenceEpoch}.Encode()
			if err != nil {
				return err
			}
			cv := nokv.GcCandidate{LastZeroRefVersion: seq, Claim: nokv.GcClaimStateCandidate}
			if err := putRecord(r.tx, nokv.FamilyGcCandidate, ck, cv.Encode); err != nil {
				return err
			}
		}
		key, err := nokv.ArtifactRevisionKey{Root: r.s.root, Revision: rev}.Encode()
		if err != nil {
			return err
		}
		if err := putRecord(r.tx, nokv.FamilyArtifactRevision, key, a.Encode); err != nil {
			return err
		}
	}
	return nil
}
