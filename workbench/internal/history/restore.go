package history

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// workbench_restore creates a new workbench from a snapshot or a commit of
// another one (docs/workbench.md, "Restore").
//
// The restore is a durable Restore operation driven by several engine
// commands, so that a large workbench is copied in bounded batches:
//
//  1. prepare: the Operation row (phase Copying), the destination's
//     WorkspaceCurrent in state Staging with a fresh incarnation derived
//     from the restore's identity, its incarnation claim, and the source's
//     attachment (a snapshot's consumer count and epoch raised and a
//     HistoryHold of kind Restore, or a CommitConsumer of kind Lease on
//     the commit with the commit's count and epoch raised);
//  2. copy batches of RestoreBatch members each (in value format 7, the
//     same shares of each family's own key order: restore_ordered.go): the destination's
//     PathCurrent, PathDirectory and index rows, its Path reference and
//     the destination commit's Commit reference on the same revision (no
//     body is copied), the destination commit's CommitMember rows, one
//     RestoreMember row per member, and the operation's cursor and member
//     chain;
//  3. final: the member chain rechecked against the RestoreMember rows,
//     metadata/restore_manifest.json and a rebuilt
//     metadata/run_manifest.json published, the destination's sealed
//     Commit and WorkbenchCommitHead (so the restored workbench is
//     committed and can be snapshotted and restored in turn), the marker
//     made Visible, the source released, the operation Complete with its
//     result, and one WorkspaceRestored event.
//
// Nothing of the destination is visible before the final command: every
// read, list, query and the change feed skip a Staging marker. A call that
// stops between commands (a crash, an error) leaves the destination
// Staging; an exact retry derives the same operation id, finds the
// operation and resumes at its cursor. A retry after completion replays
// the stored result with idempotent_replay true.
func init() { core.RegisterTool("workbench_restore", restoreTool) }

// RestoreBatch is how many members one copy command places. Each command
// is a commit that folds (its delta is too large to list), and a fold
// rewrites every page it touches: the families keyed by revision or by
// body digest (artifact_revision, revision_ref, the body digest index)
// take a batch's members all over their key space, so each command
// rewrites most of their pages and the bytes grow with the square of the
// workbench over the batch. Restoring 100,000 files wrote 4,445 MiB in
// 784 head writes in batches of 256, 1,229 MiB in 28 in batches of
// 4,096, and 540 MiB in 10 in batches of 16,384 (BenchmarkRestore, file
// bucket); a batch's transient memory grows with it, so it is not
// larger (docs/performance.md, "Restore in fewer, larger commands"). In
// shards of value format 7 a command places a slice of each family's own
// key order instead (restore_ordered.go), and each page is written about
// once whatever the batch.
var RestoreBatch = 16384

// restoreInput is workbench_restore's input.
type restoreInput struct {
	ID            string         `json:"id"`
	DestinationID string         `json:"destination_id"`
	AtSnapshot    core.JSONValue `json:"at_snapshot"`
	AtCommit      string         `json:"at_commit"`

	src, dst string
	sel      *core.SnapshotSelector
	commit   *nokv.CommitID
}

func (in *restoreInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if in.src, werr = core.ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	if in.dst, werr = core.ParseWorkbenchID(in.DestinationID); werr != nil {
		return werr
	}
	if in.src == in.dst {
		return core.InvalidArguments("destination_id must differ from id")
	}
	hasSnapshot, hasCommit := in.AtSnapshot.V != nil, in.AtCommit != ""
	switch {
	case hasSnapshot && hasCommit:
		return core.InvalidArguments("at_snapshot and at_commit are mutually exclusive")
	case !hasSnapshot && !hasCommit:
		return core.InvalidArguments("exactly one of at_snapshot or at_commit is required")
	case hasSnapshot:
		if werr := core.CheckAtSnapshot(in.AtSnapshot.V); werr != nil {
			return werr
		}
		sel, werr := core.ParseAtSnapshot(in.AtSnapshot.V)
		if werr != nil {
			return werr
		}
		in.sel = &sel
	default:
		// A commit id as the tools print it: lowercase only.
		c, err := nokv.ParseCommitID(in.AtCommit)
		if err != nil {
			return core.InvalidArguments("at_commit must be 64 lowercase hexadecimal digits")
		}
		in.commit = &c
	}
	return nil
}

// RestoreInput is workbench_restore's input: exactly one of AtSnapshot
// and AtCommit names the source.
type RestoreInput struct {
	ID            string `json:"id"`             // the source workbench
	DestinationID string `json:"destination_id"` // the workbench to create
	// AtSnapshot is a snapshot of the source: its id (an unsigned
	// integer) or its name (a string).
	AtSnapshot any `json:"at_snapshot,omitempty"`
	// AtCommit is a commit of the source: its id, 64 lowercase
	// hexadecimal digits.
	AtCommit string `json:"at_commit,omitempty"`
}

// RestoreResult is workbench_restore's result. An exact retry answers the
// same members, idempotent_replay aside.
type RestoreResult struct {
	core.Success
	State                  string  `json:"state"` // "complete"
	OperationID            string  `json:"operation_id"`
	SourceWorkbenchID      string  `json:"source_workbench_id"`
	DestinationWorkbenchID string  `json:"destination_workbench_id"`
	SnapshotID             *uint64 `json:"snapshot_id"`  // the source snapshot; nil for a commit
	ReadVersion            *uint64 `json:"read_version"` // the source snapshot's; nil for a commit
	CommitID               *string `json:"commit_id"`    // the source commit; nil for a snapshot
	DestinationGeneration  uint64  `json:"destination_generation"`
	IdempotentReplay       bool    `json:"idempotent_replay"`
	CleanupPending         bool    `json:"cleanup_pending"`
	RestoreManifest        string  `json:"restore_manifest"` // the destination's restore manifest's presentation path
}

// RestorePlan is one restore: its identity, and, once planned, everything
// its commands write, all derived from the immutable source.
type RestorePlan struct {
	SrcID, DstID   string
	SrcInc, DstInc nokv.IncarnationID
	Src            RestoreSource
	readVersion    uint64 // the snapshot's read version; 0 for a commit
	Identity       [32]byte
	OpID           nokv.OperationID
	leaseNow       uint64 // the lease clock's now the tool observed

	members        []restoreMember // the copied members, in path order
	chain          [32]byte        // the member chain over all of them
	canonical      []byte          // the source's caller manifest
	contentDigest  string
	manifestDigest string
	commitID       nokv.CommitID // the destination's commit

	// keyOrdered: the copy commands place each family's rows in its own
	// key order (restore_ordered.go), in shards of value format 7.
	keyOrdered bool
	byRevision []uint32   // member indexes in revision order
	index      []indexRow // every member's index rows, in key order
	srcTree    tree.Ref   // the source commit's member tree, if it has one

	RmBody  []byte
	RmEntry nokv.PathEntry
	rmRows  []nokv.ArtifactManifestEntry
	Init    [32]byte
}

// restoreMember is one copied path: its entry as a descriptor (created and
// modified versions zero) and its row digest.
type restoreMember struct {
	path  []string
	entry nokv.PathEntry
	row   [32]byte
}

func restoreTool(ctx context.Context, s *core.Service, in *restoreInput) (*RestoreResult, *core.Error) {
	sn, werr := s.PinForWrite(ctx)
	if werr != nil {
		return nil, werr
	}
	read := core.SnapshotReader(ctx, sn)
	p := &RestorePlan{SrcID: in.src, DstID: in.dst}
	from, werr := restoreSourceOf(ctx, s, read, in, p)
	if werr != nil {
		return nil, werr
	}
	p.DstInc = RestoreIncarnation(s.Root(), p.SrcID, p.SrcInc, p.Src, p.DstID)
	p.Identity = RestoreIdentityDigest(s.Root(), p.SrcID, p.SrcInc, p.Src, p.DstID, p.DstInc)
	p.OpID = RestoreOperationID(p.Identity)
	if werr := PlanRestoreManifest(s, p); werr != nil {
		return nil, werr
	}

	// The operation, before anything live: an exact retry is answered
	// from it, even after the source is gone.
	op, found, err := restoreOperation(s, read, p.OpID)
	if err != nil {
		return nil, core.FromError(err)
	}
	if found {
		if res, werr := resumedRestore(s, op, p); werr != nil || res != nil {
			return res, werr
		}
	} else if res, werr := checkRestoreDestination(ctx, s, sn, p); werr != nil || res != nil {
		return res, werr
	}
	srcSnap, werr := restoreSourceState(ctx, s, read, sn, p, from, found)
	if werr != nil {
		return nil, werr
	}
	p.keyOrdered = sn.Marker().ValueFormatVersion >= nokv.KeyOrderedRestoreFrom
	if werr := planMembers(ctx, s, srcSnap, p, from.commit); werr != nil {
		return nil, werr
	}

	if !found {
		prepare := func(tx *head.Tx) ([]byte, error) { return nil, p.prepare(s, tx) }
		if werr := restoreStep(ctx, s, sn, p, "prepare", p.reads(s, sn, nil), prepare); werr != nil {
			return nil, werr
		}
		op.MemberCursor = 0
	}
	for start := op.MemberCursor; start < uint64(len(p.members)); start += uint64(RestoreBatch) {
		end := min(start+uint64(RestoreBatch), uint64(len(p.members)))
		cp := &restoreCopy{p: p, s: s, start: start, end: end}
		var reads []head.ShardRef
		if p.keyOrdered {
			reads = p.orderedReads(s, sn, start, end)
		} else {
			reads = p.reads(s, sn, p.members[start:end])
		}
		if werr := restoreStep(ctx, s, nil, p, "copy", reads, cp.apply); werr != nil {
			return nil, werr
		}
	}
	return finishRestore(ctx, s, sn, p)
}

// restoreFrom is the record of a restore's source as the pinned state
// holds it: the snapshot's ref, or the commit.
type restoreFrom struct {
	ref    nokv.SnapshotRef
	commit nokv.Commit
}

// restoreSourceOf resolves the source the input names (a snapshot of a
// visible workbench, or one of its commits) into p's source identity.
func restoreSourceOf(ctx context.Context, s *core.Service, read core.Reader, in *restoreInput, p *RestorePlan) (restoreFrom, *core.Error) {
	var from restoreFrom
	if in.sel == nil {
		if *in.commit == (nokv.CommitID{}) {
			return from, core.LifecycleConflict("restore commit id must be non-zero")
		}
		c, ok, err := readCommit(s, read, *in.commit)
		if err != nil {
			return from, core.FromError(err)
		}
		if !ok || c.WorkbenchID != in.src {
			return from, core.Missing(fmt.Sprintf("commit %s of workbench %s does not exist", in.commit, in.src))
		}
		from.commit = c
		p.SrcInc = c.SourceIncarnation
		p.Src = RestoreSource{Kind: nokv.RestoreSourceKindCommit, Commit: *in.commit}
		return from, nil
	}
	ws, ok, werr := s.VisibleWorkspace(ctx, read, in.src)
	if werr != nil {
		return from, werr
	}
	if !ok {
		return from, core.Missing(fmt.Sprintf("workbench %s does not exist", in.src))
	}
	id, r, ok, err := s.ResolveSnapshot(read, ws.Incarnation, *in.sel)
	if err != nil {
		return from, core.FromError(err)
	}
	if !ok {
		return from, core.SnapshotNotFound(fmt.Sprintf("snapshot %s of workbench %s not found", in.sel, in.src))
	}
	from.ref = r
	p.SrcInc, p.readVersion = ws.Incarnation, r.ReadVersion
	p.Src = RestoreSource{Kind: nokv.RestoreSourceKindSnapshot, Snapshot: id}
	return from, nil
}

// resumedRestore answers a restore whose operation exists: its result if
// it completed, nothing (go on copying) if it is copying, and an error if
// it is another restore's or in another phase.
func resumedRestore(s *core.Service, op nokv.RestoreOperation, p *RestorePlan) (*RestoreResult, *core.Error) {
	// The reference's backend answers both as BackendProtocolMismatch,
	// which the restore tool remaps to RestoreProtocolMismatch.
	if op.IdentityDigest != p.Identity {
		return nil, core.RestoreProtocolMismatch(core.BackendProtocolMismatch(
			fmt.Sprintf("restore operation id %s collides with another restore's identity", p.OpID),
			map[string]any{"operation_id": p.OpID.String(), "expected_identity_digest": hex.EncodeToString(op.IdentityDigest[:]), "actual_identity_digest": hex.EncodeToString(p.Identity[:])}))
	}
	if op.InitializationDigest != p.Init {
		return nil, core.RestoreProtocolMismatch(core.BackendProtocolMismatch(
			fmt.Sprintf("restore operation %s was initialized with a different restore manifest", p.OpID),
			map[string]any{"operation_id": p.OpID.String(), "expected_initialization_digest": hex.EncodeToString(op.InitializationDigest[:]), "actual_initialization_digest": hex.EncodeToString(p.Init[:])}))
	}
	switch op.Phase {
	case nokv.RestorePhaseComplete:
		return restoreResult(s, op, true), nil
	case nokv.RestorePhaseCopying:
		return nil, nil
	}
	return nil, core.InvalidState(fmt.Sprintf("restore operation %s is %v", p.OpID, op.Phase))
}

// restoreSourceState returns the state the restore copies from: the
// snapshot's held root, or, for a commit, the pinned state sn. A fresh
// restore needs a live source. A resumed one (found) holds its source
// already (a consumed snapshot is neither retired nor reaped, a consumed
// commit not retired), so a lease that ran out since does not strand its
// Staging destination.
func restoreSourceState(ctx context.Context, s *core.Service, read core.Reader, sn *head.Snapshot, p *RestorePlan, from restoreFrom, found bool) (*head.Snapshot, *core.Error) {
	if p.Src.Kind != nokv.RestoreSourceKindSnapshot {
		if from.commit.State != nokv.CommitStateSealed && !found {
			return nil, core.InvalidState(fmt.Sprintf("commit %s is %v", p.Src.Commit, from.commit.State))
		}
		return sn, nil
	}
	clock, err := s.LeaseClock(read)
	if err != nil {
		return nil, core.FromError(err)
	}
	p.leaseNow = max(s.WallMillis(), clock.HighWater)
	if st := core.SnapshotState(from.ref, p.leaseNow); st != "alive" && !found {
		return nil, core.SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is not alive: %s", p.Src.Snapshot, p.SrcID, st))
	}
	frozen, err := s.Store().At(ctx, digest.Hash(from.ref.HeldRoot))
	if err != nil {
		if errors.Is(err, bucket.ErrNotExist) {
			return nil, core.SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is no longer held", p.Src.Snapshot, p.SrcID))
		}
		return nil, core.FromError(err)
	}
	return frozen, nil
}

// reads names what a restore command reads, so that the engine loads it
// in one round before the command runs instead of one round per record:
// the operation, both markers' shards, the source's records and, for
// members, their revisions, the destination commit's references on them
// and their directories' rows.
func (p *RestorePlan) reads(s *core.Service, sn *head.Snapshot, members []restoreMember) []head.ShardRef {
	return p.readsOf(s, sn, members, true)
}

// readsOf is reads, naming the members' revisions and commit references
// only if revisions is set.
func (p *RestorePlan) readsOf(s *core.Service, sn *head.Snapshot, members []restoreMember, revisions bool) []head.ShardRef {
	var refs []head.ShardRef
	add := func(k interface {
		Family() shards.Family
		Encode() ([]byte, error)
	}) {
		key, err := k.Encode()
		if err != nil {
			return // the command meets the same error itself
		}
		ref, err := sn.ShardOf(k.Family(), key)
		if err != nil {
			return
		}
		ref.Prefix = key
		refs = append(refs, ref)
	}
	add(nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindRestore, ID: p.OpID})
	add(nokv.WorkspaceCurrentKey{Root: s.Root(), WorkbenchID: p.DstID})
	add(nokv.WorkspaceIncarnationClaimKey{Root: s.Root(), Incarnation: p.DstInc})
	add(nokv.CommitKey{Root: s.Root(), Commit: p.commitID})
	if p.Src.Kind == nokv.RestoreSourceKindSnapshot {
		add(nokv.SnapshotRefKey{Root: s.Root(), Incarnation: p.SrcInc, Snapshot: p.Src.Snapshot})
		add(nokv.LeaseClockKey{Root: s.Root()})
	} else {
		add(nokv.CommitKey{Root: s.Root(), Commit: p.Src.Commit})
	}
	dirs := map[string]bool{}
	for _, m := range members {
		if revisions {
			add(nokv.ArtifactRevisionKey{Root: s.Root(), Revision: m.entry.Revision})
			add(nokv.CommitRefKey(s.Root(), p.commitID, m.entry.Revision))
		}
		for n := len(m.path) - 1; n > 0; n-- {
			k := nokv.PathDirectoryKey{Root: s.Root(), Incarnation: p.DstInc, Path: m.path[:n]}
			id := core.LogicalPath(k.Path)
			if dirs[id] {
				break
			}
			dirs[id] = true
			add(k)
		}
	}
	return refs
}

// restoreStep runs one command of a restore with its own request id (an
// unknown outcome is settled by rerunning it exactly), then the test hook.
func restoreStep(ctx context.Context, s *core.Service, at *head.Snapshot, p *RestorePlan, step string, reads []head.ShardRef, apply func(*head.Tx) ([]byte, error)) *core.Error {
	_, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest([]byte("cairn.workbench.restore."+step+".v1"), p.Identity[:], p.Init[:], p.chain[:]),
		Apply:     apply,
		At:        at,
		Reads:     reads,
	})
	if err != nil {
		return core.FromError(err)
	}
	if s.RestoreHook != nil {
		if err := s.RestoreHook(step); err != nil {
			return core.FromError(err)
		}
	}
	return nil
}

// readCommit reads commit id's record.
func readCommit(s *core.Service, read core.Reader, id nokv.CommitID) (nokv.Commit, bool, error) {
	key, err := nokv.CommitKey{Root: s.Root(), Commit: id}.Encode()
	if err != nil {
		return nokv.Commit{}, false, err
	}
	b, ok, err := read(nokv.FamilyCommit, key)
	if err != nil || !ok {
		return nokv.Commit{}, false, err
	}
	c, err := nokv.DecodeCommit(b)
	return c, err == nil, err
}

// restoreOperation reads the Restore operation id, if any.
func restoreOperation(s *core.Service, read core.Reader, id nokv.OperationID) (nokv.RestoreOperation, bool, error) {
	key, err := nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindRestore, ID: id}.Encode()
	if err != nil {
		return nokv.RestoreOperation{}, false, err
	}
	b, ok, err := read(nokv.FamilyOperation, key)
	if err != nil || !ok {
		return nokv.RestoreOperation{}, false, err
	}
	op, err := nokv.DecodeRestoreOperation(b)
	return op, err == nil, err
}

// checkRestoreDestination refuses a destination that exists, unless it is
// the product of this very restore (its restore manifest names the same
// source and destination), which is replayed from its operation.
func checkRestoreDestination(ctx context.Context, s *core.Service, sn *head.Snapshot, p *RestorePlan) (*RestoreResult, *core.Error) {
	read := core.SnapshotReader(ctx, sn)
	ws, ok, werr := s.Workspace(ctx, read, p.DstID)
	if werr != nil || !ok || ws.State == nokv.WorkspaceStateRetired {
		return nil, werr
	}
	if ws.State == nokv.WorkspaceStateStaging {
		return nil, core.WorkspaceBusy(p.DstID)
	}
	v := &core.View{S: s, Sn: sn, ID: p.DstID, Ws: ws}
	e, ok, werr := v.Entry(ctx, restoreManifestComps)
	if werr != nil {
		return nil, werr
	}
	if !ok {
		return nil, core.LifecycleConflict("restore destination already exists without metadata/restore_manifest.json")
	}
	body, werr := v.Body(ctx, e)
	if werr != nil {
		return nil, werr
	}
	prov, err := ParseRestoreManifest(body)
	if err != nil || prov.SrcID != p.SrcID || prov.DstID != p.DstID || prov.Src != p.Src {
		return nil, core.LifecycleConflict("existing destination restore manifest belongs to different provenance")
	}
	var opID nokv.OperationID
	if b, err := hex.DecodeString(prov.OperationID); err == nil && len(b) == len(opID) {
		copy(opID[:], b)
		if op, found, err := restoreOperation(s, read, opID); err != nil {
			return nil, core.FromError(err)
		} else if found && op.Phase == nokv.RestorePhaseComplete {
			return restoreResult(s, op, true), nil
		}
	}
	return nil, core.LifecycleConflict("existing destination restore manifest belongs to different provenance")
}

// PlanRestoreManifest fixes the restore manifest, its entry descriptor
// and the initialization digest: all derived from the identity.
func PlanRestoreManifest(s *core.Service, p *RestorePlan) *core.Error {
	body, err := restoreManifestBody(s.LogicalRoot(), p.SrcID, p.DstID, p.OpID, p.Src)
	if err != nil {
		return core.FromError(err)
	}
	rev := restoreManifestRevision(p.OpID)
	// Always inline: the manifest is a few hundred bytes, and an inline
	// body needs no staging round of its own.
	p.rmRows = []nokv.ArtifactManifestEntry{{PhysicalOwner: rev, Length: uint64(len(body)), DigestURI: core.DigestURI(body), Inline: body}}
	rowsDigest, err := publish.ManifestDigestURI(p.rmRows)
	if err != nil {
		return core.FromError(err)
	}
	p.RmBody = body
	p.RmEntry = nokv.PathEntry{
		Generation: 1, Revision: rev, LogicalSize: uint64(len(body)),
		BodyDigestURI: core.DigestURI(body), ManifestDigestURI: rowsDigest, ContentType: runManifestContentType,
	}
	enc, err := p.RmEntry.Encode()
	if err != nil {
		return core.FromError(err)
	}
	p.Init = RestoreInitializationDigest(p.Identity, enc)
	return nil
}

// planMembers reads the source's tree (the frozen snapshot's PathCurrent
// rows, or the commit's members) and derives what the destination gets:
// every path but the two metadata manifests, which are rebuilt; the
// caller's manifest from the source's run manifest; the content digest;
// the destination's commit id and the member chain.
func planMembers(ctx context.Context, s *core.Service, sn *head.Snapshot, p *RestorePlan, c nokv.Commit) *core.Error {
	type row struct {
		path  []string
		entry nokv.PathEntry
	}
	rows := make([]row, 0, min(c.MemberCount, MaxCommitMembers))
	if p.Src.Kind == nokv.RestoreSourceKindSnapshot {
		if werr := s.ScanPaths(ctx, sn, p.SrcInc, nil, nil, func(path []string, e nokv.PathEntry) bool {
			rows = append(rows, row{path, e})
			return true
		}); werr != nil {
			return werr
		}
	} else {
		err := s.CommitMembers(ctx, sn, p.Src.Commit, c, func(path []string, m nokv.CommitMember) error {
			rows = append(rows, row{path, entryOfMember(m)})
			return nil
		})
		if err != nil {
			return core.FromError(err)
		}
		if uint64(len(rows)) != c.MemberCount {
			return core.InvalidState(fmt.Sprintf("commit %s holds %d members, its seal says %d", p.Src.Commit, len(rows), c.MemberCount))
		}
		if p.srcTree, _, err = core.TreeRef(c); err != nil {
			return core.FromError(err)
		}
	}
	flat := core.NewMemberDigesterOf(uint64(len(rows)))
	var runManifest *nokv.PathEntry
	p.members = slices.Grow(p.members[:0], len(rows))
	for _, r := range rows {
		if err := flat.Add(r.path, nokv.MemberOf(r.entry)); err != nil {
			return core.FromError(err)
		}
		switch {
		case slices.Equal(r.path, core.RunManifestComps):
			e := r.entry
			runManifest = &e
			continue
		case slices.Equal(r.path, restoreManifestComps):
			continue
		}
		e := r.entry
		e.CreatedVersion, e.ModifiedVersion = 0, 0
		p.members = append(p.members, restoreMember{path: r.path, entry: e})
	}
	// The row digests are the plan's largest part, and independent.
	if err := inParallel(len(p.members), func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			m := &p.members[i]
			d, err := rowDigest(m.path, m.entry)
			if err != nil {
				return err
			}
			m.row = d
		}
		return nil
	}); err != nil {
		return core.FromError(err)
	}
	p.chain = [32]byte{}
	for i, m := range p.members {
		p.chain = MemberChain(p.chain, uint64(i), m.row)
	}
	if runManifest == nil {
		return core.InvalidState(fmt.Sprintf("the source of restore %s has no metadata/run_manifest.json", p.OpID))
	}
	env, werr := (&core.View{S: s, Sn: sn, ID: p.SrcID}).Body(ctx, *runManifest)
	if werr != nil {
		return werr
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(env, &fields); err != nil || len(fields["manifest"]) == 0 {
		return core.InvalidState("the source's metadata/run_manifest.json is not a run manifest")
	}
	p.canonical = bytes.Clone(fields["manifest"])
	p.manifestDigest = core.DigestURI(p.canonical)
	switch p.Src.Kind {
	case nokv.RestoreSourceKindCommit:
		p.contentDigest = c.ContentDigestURI
	default:
		// The base commit's content digest when the snapshot froze exactly
		// its tree; otherwise one derived from the frozen tree.
		memberDigest := flat.Sum()
		p.contentDigest = RestoredContentDigestURI(memberDigest)
		if h, ok, err := core.CommitHead(ctx, sn, s.Root(), p.SrcInc); err != nil {
			return core.FromError(err)
		} else if ok {
			base, found, err := readCommit(s, core.SnapshotReader(ctx, sn), h.Commit)
			if err != nil {
				return core.FromError(err)
			}
			if found && base.TreeDigests {
				// The base seals its tree's digest: compare in its terms.
				entries := make([]tree.Entry, 0, len(rows))
				for _, r := range rows {
					e, err := core.MemberTreeEntry(r.path, nokv.MemberOf(r.entry))
					if err != nil {
						return core.FromError(err)
					}
					entries = append(entries, e)
				}
				if memberDigest, err = core.MemberTreeDigest(entries); err != nil {
					return core.FromError(err)
				}
			}
			if found && base.MemberDigest == memberDigest {
				p.contentDigest = base.ContentDigestURI
			}
		}
	}
	p.commitID = core.CommitIdentity(p.DstID, p.contentDigest, p.manifestDigest)
	if p.keyOrdered {
		if err := p.orderRows(s.Root()); err != nil {
			return core.FromError(err)
		}
	}
	return nil
}

// entryOfMember is the path entry a commit member freezes.
func entryOfMember(m nokv.CommitMember) nokv.PathEntry {
	return nokv.PathEntry{
		Generation: m.PathGeneration, Revision: m.Revision, LogicalSize: m.LogicalSize,
		BodyDigestURI: m.BodyDigestURI, ManifestDigestURI: m.ManifestDigestURI,
		DependencyCount: m.DependencyCount, DependencyDepth: m.DependencyDepth,
		ContentType: m.ContentType, Producer: m.Producer, ManifestID: m.ManifestID, Index: m.Index,
	}
}

// restoreResult shapes the tool's result from a Complete operation.
func restoreResult(s *core.Service, op nokv.RestoreOperation, replay bool) *RestoreResult {
	res := &RestoreResult{
		State:                  "complete",
		OperationID:            RestoreOperationID(op.IdentityDigest).String(),
		SourceWorkbenchID:      op.SourceWorkbenchID,
		DestinationWorkbenchID: op.DestinationWorkbenchID,
		DestinationGeneration:  op.Result.DestinationGeneration,
		IdempotentReplay:       replay,
		CleanupPending:         false,
		RestoreManifest:        core.PresentationPath(s.LogicalRoot(), op.DestinationWorkbenchID, restoreManifestComps),
	}
	if op.SourceSnapshot != nil {
		id, rv := uint64(*op.SourceSnapshot), op.SourceReadVersion
		res.SnapshotID, res.ReadVersion = &id, &rv
	}
	if op.SourceCommit != nil {
		c := op.SourceCommit.String()
		res.CommitID = &c
	}
	return res
}
