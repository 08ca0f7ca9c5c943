package publish

import (
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Refs accounts for strong reference changes within one command: every
// addition and removal changes the revision's count and bumps its epoch.
type Refs struct {
	S     *core.Service
	Tx    *head.Tx
	Revs  map[nokv.RevisionID]*nokv.ArtifactRevision
	order []nokv.RevisionID

	// holds is the newest read version of a HistoryHold in the root, read
	// once by the first release (holdsRead).
	holds     uint64
	holdsRead bool
}

func (r *Refs) load(rev nokv.RevisionID) (*nokv.ArtifactRevision, error) {
	if a, ok := r.Revs[rev]; ok {
		return a, nil
	}
	a, ok, err := r.read(rev)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, core.Reject(core.InvalidState("artifact revision " + rev.String() + " does not exist"))
	}
	r.Revs[rev] = &a
	r.order = append(r.order, rev)
	return &a, nil
}

// read reads and decodes rev's row as the transaction sees it.
func (r *Refs) read(rev nokv.RevisionID) (nokv.ArtifactRevision, bool, error) {
	key, err := nokv.ArtifactRevisionKey{Root: r.S.Root(), Revision: rev}.Encode()
	if err != nil {
		return nokv.ArtifactRevision{}, false, err
	}
	b, ok, err := r.Tx.Get(nokv.FamilyArtifactRevision, key)
	if err != nil || !ok {
		return nokv.ArtifactRevision{}, false, err
	}
	a, err := nokv.DecodeArtifactRevision(b)
	return a, err == nil, err
}

// PreloadRange is the fewest revisions Preload reads in one range (a
// variable for tests).
var PreloadRange = 1024

// Preload reads the revisions of revs not loaded yet, as Add and Remove
// would one at a time, but over one range per processor, and keeps them
// in the order of revs. A revision that is missing is left for Add or
// Remove to refuse. Reads of a transaction may run side by side while
// nothing writes to it, so Preload must not overlap the command's puts.
func (r *Refs) Preload(revs []nokv.RevisionID) {
	type loaded struct {
		a  nokv.ArtifactRevision
		ok bool
	}
	out := make([]loaded, len(revs))
	// A revision that cannot be read is left for load, which reads it
	// again and says why.
	core.InParallel(len(revs), PreloadRange, func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			if _, ok := r.Revs[revs[i]]; !ok {
				out[i].a, out[i].ok, _ = r.read(revs[i])
			}
		}
		return nil
	})
	for i, rev := range revs {
		if _, ok := r.Revs[rev]; ok || !out[i].ok {
			continue
		}
		a := out[i].a
		r.Revs[rev] = &a
		r.order = append(r.order, rev)
	}
}

// Add takes a strong reference on rev and returns its epoch after.
func (r *Refs) Add(rev nokv.RevisionID) (uint64, error) {
	a, err := r.load(rev)
	if err != nil {
		return 0, err
	}
	if a.State != nokv.RevisionStateAvailable {
		return 0, core.Reject(core.InvalidState(fmt.Sprintf("artifact revision %s is %v and cannot be referenced", rev, a.State)))
	}
	a.StrongReferenceCount++
	a.ReferenceEpoch++
	return a.ReferenceEpoch, nil
}

// Remove drops a strong reference on rev.
func (r *Refs) Remove(rev nokv.RevisionID) error {
	a, err := r.load(rev)
	if err != nil {
		return err
	}
	if a.StrongReferenceCount == 0 {
		return core.Reject(core.InvalidState("artifact revision " + rev.String() + " has no reference to release"))
	}
	a.StrongReferenceCount--
	a.ReferenceEpoch++
	return nil
}

// Flush writes every changed revision; one left without references gets
// its last-zero version and a GcCandidate keyed by its new epoch, or is
// retired at once (retireInline).
func (r *Refs) Flush() error {
	seq := r.Tx.Sequence()
	for _, rev := range r.order {
		a := r.Revs[rev]
		if a.StrongReferenceCount == 0 {
			a.LastZeroRefVersion = seq
			claim := nokv.GcClaimStateCandidate
			retired, err := r.retireInline(rev, a)
			if err != nil {
				return err
			}
			if retired {
				claim = nokv.GcClaimStateComplete
			}
			ck, err := nokv.GcCandidateKey{Root: r.S.Root(), Revision: rev, ReferenceEpoch: a.ReferenceEpoch}.Encode()
			if err != nil {
				return err
			}
			cv := nokv.GcCandidate{LastZeroRefVersion: seq, Claim: claim}
			if err := core.PutRecord(r.Tx, nokv.FamilyGcCandidate, ck, cv.Encode); err != nil {
				return err
			}
		}
		key, err := nokv.ArtifactRevisionKey{Root: r.S.Root(), Revision: rev}.Encode()
		if err != nil {
			return err
		}
		if err := core.PutRecord(r.Tx, nokv.FamilyArtifactRevision, key, a.Encode); err != nil {
			return err
		}
	}
	return nil
}

// maxHolds bounds the engine holds (each a live snapshot's) under which a
// release still reads the HistoryHold rows to learn whether one may reach
// a revision: the rows are sharded by their whole key, so a scan reads up
// to one shard per row. Past it, or past maxHoldScan rows (a restore in
// flight adds one beside its snapshot's), every revision is taken as
// reachable and left to the collection, with nothing read.
const (
	maxHolds    = 16
	maxHoldScan = 2 * maxHolds
)

// retireInline takes revision rev, just left without references, straight
// to Deleted when nothing outside this state can need its rows here: its
// body is inline in its manifest rows (it owns no block and reuses none,
// so nothing is left to delete outside the engine), and no HistoryHold (a
// snapshot's, a restore's, a commit build's) has a read version at or
// after its creation, so no frozen state that may still add a reference
// to it can name it. Its manifest rows go in the releasing command, as
// the collection's finish would delete them (collect.go). Older roots
// (pins, held roots, the grace period's) keep their own copies of the
// rows, so their reads, copies and restores are unaffected; the live
// state just stops carrying the bodies of replaced versions until a
// collection, which would otherwise keep the whole replaced history in
// every root for a grace period past it.
func (r *Refs) retireInline(rev nokv.RevisionID, a *nokv.ArtifactRevision) (bool, error) {
	if a.State != nokv.RevisionStateAvailable {
		return false, nil
	}
	held, err := r.newestHold()
	if err != nil || held >= a.CreatedVersion {
		return false, err
	}
	rows, err := r.Tx.Scan(nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(r.S.Root(), rev), nil, 0)
	if err != nil {
		return false, err
	}
	for _, rec := range rows {
		e, err := nokv.DecodeArtifactManifestEntry(rec.Value)
		if err != nil {
			return false, err
		}
		if e.Inline == nil || e.ObjectKey != "" {
			return false, nil
		}
	}
	for _, rec := range rows {
		if err := r.Tx.Delete(nokv.FamilyArtifactManifest, rec.Key); err != nil {
			return false, err
		}
	}
	a.State = nokv.RevisionStateDeleted
	return true, nil
}

// newestHold returns the newest read version among the root's
// HistoryHolds (0 if none), or the maximum when there may be more than
// maxHoldScan of them.
func (r *Refs) newestHold() (uint64, error) {
	if r.holdsRead {
		return r.holds, nil
	}
	// A HistoryHold lives only beside a live snapshot's engine hold (a
	// snapshot's own, or a restore's of a snapshot it keeps alive): with
	// no engine hold there is none to read.
	switch n := r.Tx.HoldsAtMost(); {
	case n == 0:
		r.holdsRead = true
		return 0, nil
	case n > maxHolds:
		r.holds, r.holdsRead = ^uint64(0), true
		return r.holds, nil
	}
	recs, err := r.Tx.Scan(nokv.FamilyHistoryHold, nokv.RootPrefix(r.S.Root()), nil, maxHoldScan+1)
	if err != nil {
		return 0, err
	}
	var newest uint64
	if len(recs) > maxHoldScan {
		newest = ^uint64(0)
	}
	for _, rec := range recs {
		h, err := nokv.DecodeHistoryHold(rec.Value)
		if err != nil {
			return 0, err
		}
		newest = max(newest, h.ReadVersion)
	}
	r.holds, r.holdsRead = newest, true
	return newest, nil
}
