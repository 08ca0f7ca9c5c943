package maintenance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Collecting artifact revisions: the logical side of garbage collection.
//
// When a command releases the last strong reference of a revision it
// writes a GcCandidate (Candidate, keyed by the revision's reference
// epoch; refs.go) whose LastZeroRefVersion V is that command's sequence.
// CollectRevisions drives the due candidates through the seed's states,
// many at a time:
//
//  1. Claim, one engine command per batch: each revision still Available
//     at its candidate's epoch with no reference, and kept by no root
//     (below), becomes Deleting and its candidate Claimed. A candidate
//     whose revision was referenced again (another epoch, or a count
//     above zero) is stale and its row is removed.
//  2. Delete, outside the engine, in parallel: the block objects each
//     claimed revision owns (its ArtifactManifest rows whose physical
//     owner is the revision; blocks an append reused belong to their
//     owner). A missing block is already deleted.
//  3. Finish, one engine command per batch: each revision whose blocks
//     are gone becomes Deleted and its candidate Complete; its
//     ArtifactManifest rows go, and its RevisionDependency references on
//     the owners of the blocks it reused are released, which may make
//     those owners candidates in turn (the child first, then its bases).
//     A revision one of whose deletes had an unknown outcome (the store
//     may or may not have deleted the block) becomes Quarantined instead,
//     with its candidate: nothing adds a reference to it (refs.add), and
//     a later reconciliation decides.
//
// Any other failure of a delete leaves the revision Deleting and the
// candidate Claimed; the next run resumes at step 2. Batches repeat until
// no due candidate is left, so one run collects them all; a batch is
// bounded by CollectOptions.Batch candidates and BatchBytes of records.
// A run that committed anything ends with a fold (head.Store.Fold), so
// that the head's objects no longer hold the collected rows (a delta
// that wrote them, under the newer one that deleted them). The package's
// CollectRevisions opens its Store with room for a run's deltas
// (collectEngine), so that its batches are folded once, at the end,
// rather than after every command: each fold rewrites the pages its
// changes touch, and the rows of a replaced revision are spread over all
// of them.
//
// # What keeps a revision
//
// A zero count is not enough to delete. Snapshots, restores and pins
// hold roots, not references, and a request may still read a root that
// was the head within the sweep's grace period. The sweep run just
// before says which roots it kept and why (gcsweep.Report.Kept); a
// candidate for revision R, created at sequence C (CreatedVersion) with
// no reference since V, is due only when
//
//   - V is at most the sequence of the newest head the sweep kept: the
//     roots committed after it, some within the grace period now, were
//     not seen;
//   - no pinned or held root (a snapshot's, a restore's; any kind of
//     kept root but the head and the grace period) references R: R is
//     Available with a count above zero in that root's own records. Such
//     a root holds R's rows from C on, referenced or not; only a root
//     that references R can read it (a frozen read, a restore, a copy of
//     a pin), so only such a root keeps it. The rows of a revision the
//     root does not reference are bookkeeping: pin verify, pin copy, pin
//     restore and fsck do not demand their blocks (PinBlockRefs,
//     revisionLive). Reading the root's records (not comparing
//     sequences) keeps this right across a pin restore, after which a
//     held root may reference R at a sequence past V;
//   - no root kept within the grace period has a sequence S with
//     C ≤ S < V. Such a root is kept only for requests already reading
//     it, which read through references, and R was referenced there
//     (for S ≥ V it was not: its count has been zero since V).
//
// The head never keeps a candidate: R has no reference there. A base
// whose last dependency a finish releases becomes a candidate at the
// finish's sequence, past the sweep's head, so it waits for a later run
// (and for the roots that read it through its child to leave the grace
// period).

// DefaultCollectBatch is CollectOptions.Batch's default: the candidates
// one claim or finish command handles.
const DefaultCollectBatch = 1000

// DefaultCollectBatchBytes is CollectOptions.BatchBytes's default.
const DefaultCollectBatchBytes = 4 << 20

// CollectOptions tune CollectRevisions.
type CollectOptions struct {
	// AgentID picks the deployment root for the package's
	// CollectRevisions (a Service collects its own). Default
	// DefaultAgentID.
	AgentID string
	// Kept is what the sweep run just before kept: gcsweep.Report.Kept
	// (a dry run will do). A candidate is due only when none of these
	// roots may still read its revision (see above). Without a head
	// among them nothing is collected.
	Kept []gcsweep.KeptRoot
	// Batch bounds the candidates one claim or finish command handles.
	// Default DefaultCollectBatch.
	Batch int
	// BatchBytes bounds the bytes of the records one batch changes (each
	// revision's record, its candidate and its manifest rows, as read).
	// Default DefaultCollectBatchBytes. A batch takes at least one
	// candidate.
	BatchBytes int64
	// Concurrency bounds the block deletes in flight. Default
	// gcsweep.DefaultConcurrency.
	Concurrency int
	// Max, if positive, bounds the candidates one run handles.
	Max int
	// DryRun reports what would be collected and changes nothing.
	DryRun bool
}

// CollectReport is what CollectRevisions did.
type CollectReport struct {
	Candidates    int   `json:"candidates"`  // Candidate or Claimed rows found
	Waiting       int   `json:"waiting"`     // a root may still read the revision
	Stale         int   `json:"stale"`       // referenced again: row removed
	Collected     int   `json:"collected"`   // now Deleted (in a dry run: would be)
	Quarantined   int   `json:"quarantined"` // an ambiguous delete, now or before
	Failed        int   `json:"failed"`      // left Deleting for a later run
	BlocksDeleted int   `json:"blocks_deleted"`
	BytesDeleted  int64 `json:"bytes_deleted"` // as the manifest rows say
	// Commands counts the engine commands that committed (a claim and a
	// finish per batch; the fold that ends a run is not counted).
	Commands int           `json:"commands"`
	Elapsed  time.Duration `json:"elapsed_ns"`
}

// collectEngine are the engine options of the Store the package's
// CollectRevisions opens: the most deltas a root may list before a fold
// (head.Options.MaxDeltas is at most roots.MaxDeltas / 2), and room for
// their bytes, so that a run of up to 16 batches (a claim and a finish
// each) folds once, at its end.
var collectEngine = head.Options{MaxDeltas: 32, MaxDeltaBytes: 64 << 20}

// CollectRevisions opens the deployment root of opts.AgentID in b and
// collects its due revisions (Service.CollectRevisions), folding its
// batches' changes once, at the end (collectEngine).
func CollectRevisions(ctx context.Context, b bucket.Bucket, opts CollectOptions) (CollectReport, error) {
	s, err := core.Open(ctx, b, core.Options{AgentID: opts.AgentID, Engine: collectEngine})
	if err != nil {
		return CollectReport{}, err
	}
	defer s.Close()
	return CollectServiceRevisions(ctx, s, opts)
}

// CollectRevisions collects the artifact revisions whose GcCandidate is
// due (see the comment above) in batches until none is left. It returns
// what it did; an error means it stopped early (a failed command, a
// root it could not read, or the joined errors of failed block deletes).
func CollectServiceRevisions(ctx context.Context, s *core.Service, opts CollectOptions) (CollectReport, error) {
	start := time.Now()
	var rep CollectReport
	err := collect(ctx, s, opts, &rep)
	rep.Elapsed = time.Since(start)
	return rep, err
}

func collect(ctx context.Context, s *core.Service, opts CollectOptions, rep *CollectReport) error {
	if opts.Batch <= 0 {
		opts.Batch = DefaultCollectBatch
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = DefaultCollectBatchBytes
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = gcsweep.DefaultConcurrency
	}
	keep, err := loadKeptBy(ctx, s, opts.Kept)
	if err != nil {
		return err
	}
	sn, werr := s.Pin(ctx)
	if werr != nil {
		return werr
	}
	root := s.Root()
	recs, err := sn.Scan(ctx, nokv.FamilyGcCandidate, root[:], nil, 0)
	if err != nil {
		return err
	}
	var due []nokv.GcCandidateKey
	for _, rec := range recs {
		k, err := nokv.ParseGcCandidateKey(rec.Key)
		if err != nil {
			return err
		}
		c, err := nokv.DecodeGcCandidate(rec.Value)
		if err != nil {
			return err
		}
		switch c.Claim {
		case nokv.GcClaimStateComplete:
			continue
		case nokv.GcClaimStateQuarantined:
			rep.Quarantined++
			continue
		}
		if opts.Max > 0 && rep.Candidates >= opts.Max {
			break
		}
		rep.Candidates++
		// Kept now: no claim is tried. (The claim decides again, at the
		// state it commits on.)
		if kept, err := keptNow(ctx, s, sn, keep, k, c); err != nil {
			return err
		} else if kept {
			rep.Waiting++
			continue
		}
		due = append(due, k)
	}
	var errs []error
	for len(due) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		b := &collectBatch{s: s, keep: keep, opts: opts}
		var n int
		if opts.DryRun {
			n, err = b.dryClaim(ctx, sn, due)
		} else {
			n, err = b.claim(ctx, due)
		}
		if err != nil {
			return err
		}
		if !opts.DryRun && len(b.claimed)+b.stale > 0 {
			rep.Commands++ // a claim that changes nothing commits nothing
		}
		due = due[n:]
		rep.Stale += b.stale
		rep.Waiting += b.waiting
		if opts.DryRun {
			rep.Collected += len(b.claimed)
			continue
		}
		if err := b.deleteBlocks(ctx); err != nil {
			errs = append(errs, err)
		}
		rep.BlocksDeleted += b.blocks
		rep.BytesDeleted += b.bytes
		rep.Failed += b.failed
		if len(b.done)+len(b.ambiguous) > 0 {
			if err := b.finish(ctx); err != nil {
				return errors.Join(append(errs, err)...)
			}
			rep.Commands++
		}
		rep.Collected += len(b.done)
		rep.Quarantined += len(b.ambiguous)
	}
	if rep.Commands > 0 {
		if err := s.Store().Fold(ctx); err != nil {
			errs = append(errs, fmt.Errorf("workbench: collect revisions: fold: %w", err))
		}
	}
	return errors.Join(errs...)
}

// keptBy is what the roots a sweep kept say about candidates.
type keptBy struct {
	newest uint64               // the newest head kept
	grace  []uint64             // the sequences of the roots kept within the grace, ascending
	live   map[revisionRef]bool // revisions a pinned or held root references
}

// keptBy reads, from each pinned or held root the sweep kept, which
// revisions it references.
func loadKeptBy(ctx context.Context, s *core.Service, kept []gcsweep.KeptRoot) (*keptBy, error) {
	k := &keptBy{live: map[revisionRef]bool{}}
	read := map[string]bool{}
	for _, r := range kept {
		switch r.Why {
		case gcsweep.KeptHead:
			k.newest = max(k.newest, r.Sequence)
		case gcsweep.KeptGrace:
			k.grace = append(k.grace, r.Sequence)
		default: // pinned, held, and any kind a later sweep adds: what it references
			if read[string(r.Root[:])] {
				continue
			}
			read[string(r.Root[:])] = true
			at, err := s.Store().At(ctx, r.Root)
			if err != nil {
				return nil, fmt.Errorf("workbench: collect revisions: a %s root: %w", r.Why, err)
			}
			if err := liveRevisions(ctx, at, k.live); err != nil {
				return nil, fmt.Errorf("workbench: collect revisions: a %s root %s: %w", r.Why, r.Root, err)
			}
		}
	}
	slices.Sort(k.grace)
	return k, nil
}

// keptNow reports whether candidate c of key k waits at sn: for a later
// head, or for a root that may still read its revision.
func keptNow(ctx context.Context, s *core.Service, sn *head.Snapshot, keep *keptBy, k nokv.GcCandidateKey, c nokv.GcCandidate) (bool, error) {
	if c.LastZeroRefVersion > keep.newest {
		return true, nil
	}
	rk, err := (nokv.ArtifactRevisionKey{Root: s.Root(), Revision: k.Revision}).Encode()
	if err != nil {
		return false, err
	}
	rb, ok, err := sn.Get(ctx, nokv.FamilyArtifactRevision, rk)
	if err != nil || !ok {
		return false, err // the claim reports a missing revision
	}
	rev, err := nokv.DecodeArtifactRevision(rb)
	if err != nil {
		return false, err
	}
	return keep.keeps(revisionRef{s.Root(), k.Revision}, rev.CreatedVersion, c.LastZeroRefVersion), nil
}

// keeps reports whether a kept root may still read revision ref, created
// at sequence created and without a reference since lastZero.
func (k *keptBy) keeps(ref revisionRef, created, lastZero uint64) bool {
	if lastZero > k.newest || k.live[ref] {
		return true
	}
	i, _ := slices.BinarySearch(k.grace, created) // the first root of the grace at or after created
	return i < len(k.grace) && k.grace[i] < lastZero
}

// collectBatch is one batch of candidates: claimed by one command, their
// blocks deleted, finished by another.
type collectBatch struct {
	s    *core.Service
	keep *keptBy
	opts CollectOptions

	// Set by the claim (again at each run of its command).
	claimed []claimedRevision
	stale   int
	waiting int

	// Set by the deletes.
	done      []nokv.GcCandidateKey
	ambiguous []ambiguousDelete
	failed    int
	blocks    int
	bytes     int64
}

// claimedRevision is a revision the batch claimed (or found claimed by
// an earlier run) and the blocks it owns.
type claimedRevision struct {
	k      nokv.GcCandidateKey
	blocks []string
	bytes  int64
}

type ambiguousDelete struct {
	k   nokv.GcCandidateKey
	err error
}

// claim runs step 1 for the first candidates of due, as many as the
// batch's bounds allow, in one command, and returns how many of due it
// took.
func (b *collectBatch) claim(ctx context.Context, due []nokv.GcCandidateKey) (int, error) {
	var n int
	_, err := b.s.Store().Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		b.claimed, b.stale, b.waiting, n = nil, 0, 0, 0
		var bytes int64
		for _, k := range due {
			if len(b.claimed) >= b.opts.Batch || (n > 0 && bytes >= b.opts.BatchBytes) {
				break
			}
			n++
			c, size, err := b.claimOne(tx.Get, func(p []byte) ([]recordKV, error) { return txScan(tx, p) }, k, tx)
			if err != nil {
				return nil, err
			}
			bytes += size
			if c != nil {
				b.claimed = append(b.claimed, *c)
			}
		}
		return nil, nil
	}})
	if err != nil {
		return 0, fmt.Errorf("workbench: collect revisions: claim: %w", err)
	}
	return n, nil
}

// dryClaim is claim without a command: what it would claim at sn.
func (b *collectBatch) dryClaim(ctx context.Context, sn *head.Snapshot, due []nokv.GcCandidateKey) (int, error) {
	get := func(f shards.Family, key []byte) ([]byte, bool, error) { return sn.Get(ctx, f, key) }
	scan := func(prefix []byte) ([]recordKV, error) {
		recs, err := sn.Scan(ctx, nokv.FamilyArtifactManifest, prefix, nil, 0)
		out := make([]recordKV, len(recs))
		for i, r := range recs {
			out[i] = recordKV{r.Key, r.Value}
		}
		return out, err
	}
	n := 0
	var bytes int64
	for _, k := range due {
		if len(b.claimed) >= b.opts.Batch || (n > 0 && bytes >= b.opts.BatchBytes) {
			break
		}
		n++
		c, size, err := b.claimOne(get, scan, k, nil)
		if err != nil {
			return n, err
		}
		bytes += size
		if c != nil {
			b.claimed = append(b.claimed, *c)
		}
	}
	return n, nil
}

// recordKV is one record a scan returned.
type recordKV struct{ key, value []byte }

func txScan(tx *head.Tx, prefix []byte) ([]recordKV, error) {
	recs, err := tx.Scan(nokv.FamilyArtifactManifest, prefix, nil, 0)
	out := make([]recordKV, len(recs))
	for i, r := range recs {
		out[i] = recordKV{r.Key, r.Value}
	}
	return out, err
}

// claimOne decides candidate k: stale (its row removed), kept by a root
// (left as it is), or claimed (or found claimed) with the blocks its
// revision owns. With tx nil it changes nothing (a dry run). size is the
// bytes of the records read, which bound the batch.
func (b *collectBatch) claimOne(get func(shards.Family, []byte) ([]byte, bool, error), scan func(prefix []byte) ([]recordKV, error), k nokv.GcCandidateKey, tx *head.Tx) (*claimedRevision, int64, error) {
	s := b.s
	ck, err := k.Encode()
	if err != nil {
		return nil, 0, err
	}
	cb, ok, err := get(nokv.FamilyGcCandidate, ck)
	if err != nil || !ok {
		return nil, 0, err // gone meanwhile
	}
	c, err := nokv.DecodeGcCandidate(cb)
	if err != nil {
		return nil, 0, err
	}
	rk, err := (nokv.ArtifactRevisionKey{Root: s.Root(), Revision: k.Revision}).Encode()
	if err != nil {
		return nil, 0, err
	}
	rb, ok, err := get(nokv.FamilyArtifactRevision, rk)
	if err != nil {
		return nil, 0, err
	}
	if !ok {
		return nil, 0, fmt.Errorf("workbench: gc candidate %s: no revision: %w", k.Revision, bucket.ErrIntegrity)
	}
	rev, err := nokv.DecodeArtifactRevision(rb)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(ck) + len(cb) + len(rk) + len(rb))
	switch {
	case c.Claim == nokv.GcClaimStateCandidate && (rev.State != nokv.RevisionStateAvailable || rev.ReferenceEpoch != k.ReferenceEpoch || rev.StrongReferenceCount != 0):
		b.stale++
		if tx != nil {
			return nil, size, tx.Delete(nokv.FamilyGcCandidate, ck)
		}
		return nil, size, nil
	case c.Claim == nokv.GcClaimStateClaimed && rev.State == nokv.RevisionStateDeleting:
		// Claimed by an earlier run whose deletes did not all succeed.
	case c.Claim != nokv.GcClaimStateCandidate:
		return nil, size, nil // finished or quarantined meanwhile
	}
	if b.keep.keeps(revisionRef{s.Root(), k.Revision}, rev.CreatedVersion, c.LastZeroRefVersion) {
		b.waiting++
		return nil, size, nil
	}
	rows, err := scan(nokv.ArtifactManifestPrefix(s.Root(), k.Revision))
	if err != nil {
		return nil, size, err
	}
	out := &claimedRevision{k: k}
	seen := map[string]bool{}
	for _, r := range rows {
		size += int64(len(r.key) + len(r.value))
		row, err := nokv.DecodeArtifactManifestEntry(r.value)
		if err != nil {
			return nil, size, err
		}
		if row.Inline != nil || row.ObjectKey == "" || row.PhysicalOwner != k.Revision || seen[row.ObjectKey] {
			continue
		}
		seen[row.ObjectKey] = true
		out.blocks = append(out.blocks, row.ObjectKey)
		out.bytes += int64(row.ObjectOffset + row.Length)
	}
	if tx == nil || c.Claim == nokv.GcClaimStateClaimed {
		return out, size, nil
	}
	rev.State = nokv.RevisionStateDeleting
	c.Claim = nokv.GcClaimStateClaimed
	c.Attempts++
	if err := core.PutRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return nil, size, err
	}
	return out, size, core.PutRecord(tx, nokv.FamilyGcCandidate, ck, c.Encode)
}

// deleteBlocks runs step 2 for every claimed revision, Concurrency
// deletes at a time, and sorts the revisions into done, ambiguous and
// failed. The error joins the failures.
func (b *collectBatch) deleteBlocks(ctx context.Context) error {
	type outcome struct {
		blocks    int
		bytes     int64
		ambiguous error
		failed    error
	}
	outs := make([]outcome, len(b.claimed))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(b.opts.Concurrency)
	for i, c := range b.claimed {
		for _, key := range c.blocks {
			g.Go(func() error {
				err := b.s.Bodies.DeleteBlock(gctx, key)
				mu.Lock()
				defer mu.Unlock()
				o := &outs[i]
				switch {
				case err == nil:
					o.blocks++
				case errors.Is(err, bucket.ErrAmbiguous):
					o.ambiguous = fmt.Errorf("workbench: delete block %s of revision %s: %w", key, c.k.Revision, err)
				case o.failed == nil:
					o.failed = fmt.Errorf("workbench: delete block %s of revision %s: %w", key, c.k.Revision, err)
				}
				return nil
			})
		}
	}
	_ = g.Wait()
	var errs []error
	for i, c := range b.claimed {
		o := outs[i]
		b.blocks += o.blocks
		switch {
		case o.failed != nil || ctx.Err() != nil:
			b.failed++
			if o.failed != nil && len(errs) < 10 {
				errs = append(errs, o.failed)
			}
		case o.ambiguous != nil:
			b.ambiguous = append(b.ambiguous, ambiguousDelete{c.k, o.ambiguous})
		default:
			b.done = append(b.done, c.k)
			b.bytes += c.bytes
		}
	}
	if err := ctx.Err(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// finish runs step 3 for the batch's revisions whose blocks are gone,
// and quarantines those with an ambiguous delete, in one command.
func (b *collectBatch) finish(ctx context.Context) error {
	_, err := b.s.Store().Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		for _, k := range b.done {
			if err := finishRevision(b.s, tx, k); err != nil {
				return nil, err
			}
		}
		for _, a := range b.ambiguous {
			if err := quarantineRevision(b.s, tx, a.k, a.err); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}})
	if err != nil {
		return fmt.Errorf("workbench: collect revisions: finish: %w", err)
	}
	return nil
}

// candidateAndRevision reads a candidate and its revision in tx.
func candidateAndRevision(s *core.Service, tx *head.Tx, k nokv.GcCandidateKey) (ck []byte, c nokv.GcCandidate, found bool, rk []byte, rev nokv.ArtifactRevision, err error) {
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
	if rk, err = (nokv.ArtifactRevisionKey{Root: s.Root(), Revision: k.Revision}).Encode(); err != nil {
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

// finishRevision is step 3 for one revision.
func finishRevision(s *core.Service, tx *head.Tx, k nokv.GcCandidateKey) error {
	ck, c, found, rk, rev, err := candidateAndRevision(s, tx, k)
	if err != nil || !found || c.Claim != nokv.GcClaimStateClaimed || rev.State != nokv.RevisionStateDeleting {
		return err // finished meanwhile
	}
	rows, err := tx.Scan(nokv.FamilyArtifactManifest, nokv.ArtifactManifestPrefix(s.Root(), k.Revision), nil, 0)
	if err != nil {
		return err
	}
	for _, r := range rows {
		if err := tx.Delete(nokv.FamilyArtifactManifest, r.Key); err != nil {
			return err
		}
	}
	if err := releaseDependencies(s, tx, k.Revision); err != nil {
		return err
	}
	rev.State = nokv.RevisionStateDeleted
	c.Claim = nokv.GcClaimStateComplete
	if err := core.PutRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	return core.PutRecord(tx, nokv.FamilyGcCandidate, ck, c.Encode)
}

// releaseDependencies releases the RevisionDependency references child
// holds on the owners of the blocks it reused.
func releaseDependencies(s *core.Service, tx *head.Tx, child nokv.RevisionID) error {
	prefix, err := nokv.RevisionRefKey{Root: s.Root(), Kind: nokv.ReferenceKindRevisionDependency, Child: child}.OwnerPrefix()
	if err != nil {
		return err
	}
	recs, err := tx.Scan(nokv.FamilyRevisionRef, prefix, nil, 0)
	if err != nil {
		return err
	}
	rc := &publish.Refs{S: s, Tx: tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, rec := range recs {
		k, err := nokv.ParseRevisionRefKey(rec.Key)
		if err != nil {
			return err
		}
		if err := tx.Delete(nokv.FamilyRevisionRef, rec.Key); err != nil {
			return err
		}
		if err := rc.Remove(k.Revision); err != nil {
			return err
		}
	}
	return rc.Flush()
}

// quarantineRevision records an ambiguous delete: the revision and the
// candidate become Quarantined, with the error as evidence.
func quarantineRevision(s *core.Service, tx *head.Tx, k nokv.GcCandidateKey, cause error) error {
	ck, c, found, rk, rev, err := candidateAndRevision(s, tx, k)
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
	if err := core.PutRecord(tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	return core.PutRecord(tx, nokv.FamilyGcCandidate, ck, c.Encode)
}
