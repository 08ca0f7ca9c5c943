package publish

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Publication: how put_file, append and edit make a body visible.
//
// # Object first, metadata last
//
// A publication never names an object before it exists, and never leaves an
// object it uploaded without a durable owner:
//
//  1. It draws a fresh RevisionID and OperationID.
//  2. A body of at most Options.InlineMax bytes (and one block) has no
//     object at all: its bytes go into its one ArtifactManifest row, and
//     step 3 is skipped.
//  3. A larger body is uploaded as block objects (bodies.BlockKey of
//     the root, the revision and the block's physical index), create-only
//     and in parallel, in the same round as its staging ledger
//     (bodies.StagingLedger, bodies.StagingKey of the operation id):
//     the exact list of every block object the operation may upload. A
//     crash in that round may leave blocks no ledger names; no root
//     references them, so they are the sweep's garbage, and nothing is
//     committed before both are in the bucket.
//
// Staging, the reading of blocks and the deleting of a staging belong to
// package manifests/bodies (staging.go converts its blocks to and from
// ArtifactManifest rows).
//
//  4. One engine command checks every predicate and writes everything at
//     once (its first attempt builds on the snapshot the tool observed,
//     head.Command.At, which the conditional head write validates): the
//     ArtifactRevision (Available, one strong reference), its
//     ArtifactManifest rows, the
//     PathCurrent entry, its SecondaryIndex rows (path_index.go), the
//     PathDirectory rows of a new path's ancestors that lack one, the Path
//     RevisionRef, the RevisionDependency refs
//     of an append, the release of the replaced revision's Path ref (with a
//     GcCandidate when its count reaches zero), one StagedObject row per
//     uploaded block (Uploaded, Owned), the Publish Operation row in phase
//     Published with its result, the workspace revision, and a ChangeEvent.
//     A workbench that does not exist yet is created in the same command
//     (put_file and append admit a missing workbench).
//
// The seed's Uploading and Finalizing phases are not written as states:
// nothing can observe the operation between the ledger and the final
// command except through the ledger itself, and the final command is the
// only metadata write. When the command's predicates fail, nothing was
// applied and the tool deletes the blocks and then the ledger (best
// effort; a crash in between leaves the ledger naming what remains). When
// it lands, the StagedObject rows own the blocks and the ledger is
// deleted in the background (cleanup.go). When the outcome is unknown,
// everything is left in place: the ledger is the cleanup owner.
//
// # Conditions
//
// A create-only write (put_file replace=false) fails AlreadyExists when the
// path holds an artifact or is a directory (it has descendants). A
// replace (put_file replace=true, edit) names the generation and revision
// it observed; if the path moved meanwhile the command fails Conflict with
// conflict "Generation" and the current generation. An append names the
// generation it extended, or that the path was absent, and retries on that
// Conflict. A file is never created under a path that is a file (an
// ancestor is an artifact): NotDirectory with the ancestor's logical path.
//
// # Append segments and dependencies
//
// An append's revision reuses the rows of the revision it extends, with
// the same physical owners and object keys (blocks are immutable), and
// adds rows for the delta's own blocks, marked with an AppendSegment. It
// holds one RevisionDependency reference on each distinct physical owner of
// a reused row; its dependency count is the number of owners and its depth
// one more than the deepest owner's. When the next revision would depend
// on more than MaxDependencyOwners owners or be deeper than
// MaxDependencyDepth, the append rematerializes: the whole body is written
// again as blocks of the new revision, which then has no dependencies.
//
// The whole body's digest is kept on every revision. An append computes it
// from the SHA-256 state of the base body, which a process remembers for
// the revisions it has written or read (bodyStates), or else by streaming
// the base's blocks, each checked against its row's digest.

// ManifestDigestURI is the digest of a revision's manifest: SHA-256 of
// "cairn.workbench.artifact_manifest.v1\0" and, for each row in index
// order, u64(len) and the row's encoded value.
func ManifestDigestURI(rows []nokv.ArtifactManifestEntry) (string, error) {
	h := sha256.New()
	h.Write([]byte("cairn.workbench.artifact_manifest.v1\x00"))
	for _, r := range rows {
		b, err := r.Encode()
		if err != nil {
			return "", err
		}
		h.Write(wire.NewWriter(nil).U64(uint64(len(b))).Bytes())
		h.Write(b)
	}
	return DigestURIOf(h), nil
}

// DependencyDigest seals a revision's dependency set: SHA-256 of
// "cairn.workbench.revision_dependencies.v1\0", u32(count) and the owner
// ids in ascending order.
func DependencyDigest(deps []nokv.RevisionID) [32]byte {
	h := sha256.New()
	h.Write([]byte("cairn.workbench.revision_dependencies.v1\x00"))
	h.Write(wire.NewWriter(nil).U32(uint32(len(deps))).Bytes())
	for _, d := range deps {
		h.Write(d[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

type pubMode uint8

const (
	// PubCreate is create-only: the path must hold nothing.
	PubCreate pubMode = iota + 1
	// PubReplace is replace-if-generation: the path must hold the
	// observed revision.
	PubReplace
	// PubAppend extends the observed revision, or creates the path when
	// it was observed absent.
	PubAppend
)

func (m pubMode) String() string {
	switch m {
	case PubCreate:
		return "create"
	case PubReplace:
		return "replace"
	case PubAppend:
		return "append"
	}
	return "unknown"
}

// PubPlan is everything one publication command needs; the command is a
// pure function of the plan and the snapshot.
type PubPlan struct {
	Tool string
	// Sn is the snapshot the write observed; the command's first attempt
	// builds on it (head.Command.At).
	Sn   *head.Snapshot
	Mode pubMode
	ID   string
	Path []string
	// NewInc is the incarnation of the workbench if the command has to
	// create it.
	NewInc nokv.IncarnationID
	// Base is the entry the write observed (replace, append); nil when
	// it observed no artifact.
	Base        *nokv.PathEntry
	ContentType string
	Size        uint64
	Digest      string // of the whole body
	Rows        []nokv.ArtifactManifestEntry
	Deps        []nokv.RevisionID // distinct physical owners other than the new revision, ascending
	Depth       uint32
	St          *Staging
}

// pubOutcome is the deterministic result of a publication command.
type pubOutcome struct {
	Generation        uint64 `json:"generation"`
	WorkspaceRevision uint64 `json:"workspace_revision"`
	CommitVersion     uint64 `json:"commit_version"`
	Created           bool   `json:"created"`
	WorkbenchCreated  bool   `json:"workbench_created"`
	// Size is the logical size of the revision published: an append
	// reports it from here, so that a replayed command (WithRequestID)
	// reports the size it published, not the one a retry planned.
	Size uint64 `json:"size"`
}

// commandDigest identifies the plan's exact inputs.
func (p *PubPlan) commandDigest(manifestDigest string) [32]byte {
	var base []byte
	if p.Base != nil {
		base = wire.NewWriter(nil).U64(p.Base.Generation).Raw(p.Base.Revision[:]).Bytes()
	}
	var deps []byte
	for _, d := range p.Deps {
		deps = append(deps, d[:]...)
	}
	return head.Digest(
		[]byte("cairn.workbench.publish.v1"),
		[]byte(p.Tool),
		[]byte{byte(p.Mode)},
		[]byte(p.ID),
		[]byte(strings.Join(p.Path, "\x00")),
		p.NewInc[:],
		base,
		[]byte(p.ContentType),
		wire.NewWriter(nil).U64(p.Size).Bytes(),
		[]byte(p.Digest),
		[]byte(manifestDigest),
		deps,
		wire.NewWriter(nil).U32(p.Depth).Bytes(),
		p.St.Op[:],
		p.St.Rev[:],
	)
}

// Publish runs the plan's one engine command. A predicate failure comes
// back with rejected set: nothing was applied, and the caller decides
// what becomes of the staged objects (p.st, which publish may have
// replaced). On success the ledger is dropped.
//
// A command refused because its blocks are older than its attempt's
// floor (a pause of half the grace period or more between the upload and
// the head write) is sent again, a few times, with the body uploaded
// again under fresh ids (restage) and a new request id: the refusal of
// the old one is final, recorded where another replica could apply it.
func Publish(ctx context.Context, s *core.Service, p *PubPlan) (out pubOutcome, werr *core.Error, rejected bool) {
	for try := 0; ; try++ {
		out, werr, rejected, stale := publishOnce(ctx, s, p)
		if !stale || try == MaxRestages {
			return out, werr, rejected
		}
		fresh, rerr := restage(ctx, s, p.St)
		if rerr != nil {
			return out, werr, rejected
		}
		p.Rows = restagedRows(p.Rows, p.St, fresh)
		p.St = fresh
	}
}

// MaxRestages bounds how often one publication uploads its body again.
const MaxRestages = 3

// publishOnce is one command of publish; stale reports a refusal of
// stale blocks.
func publishOnce(ctx context.Context, s *core.Service, p *PubPlan) (out pubOutcome, werr *core.Error, rejected, stale bool) {
	md, err := ManifestDigestURI(p.Rows)
	if err != nil {
		return out, core.FromError(err), false, false
	}
	digest := p.commandDigest(md)
	reads, err := publishReads(s, p)
	if err != nil {
		return out, core.FromError(err), false, false
	}
	payload, err := encodePubPayload(p, md, digest)
	if err != nil {
		return out, core.FromError(err), false, false
	}
	reqID, digest := s.CommandIdentity(ctx, digest)
	res, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: reqID,
		Digest:    digest,
		Kind:      publishKind,
		Payload:   payload,
		At:        p.Sn,
		Reads:     reads,
	})
	if err != nil {
		var rej *head.Rejected
		if errors.As(err, &rej) {
			werr, stale := publicationRefusal(rej)
			return out, werr, true, stale
		}
		return out, core.FromError(err), false, false
	}
	if err := json.Unmarshal(res.Value, &out); err != nil {
		return out, core.FromError(fmt.Errorf("workbench: publish result: %w: %w", err, bucket.ErrIntegrity)), false, false
	}
	// The StagedObject rows own the blocks now: the ledger goes in the
	// background, once past the store's write budget for its name
	// (cleanup.go). A ledger left behind names only owned objects.
	if p.St.HasLedger() {
		s.Cleanup.Add(p.St.Op)
	}
	return out, nil, false, false
}

// publishReads names, for the group commit to load with the rest of its
// batch, the records the command reads by keys the observation did not
// fetch: the fresh operation and revision ids (random, so in pages no
// earlier read needed) and the replaced revision.
func publishReads(s *core.Service, p *PubPlan) ([]head.ShardRef, error) {
	var refs []head.ShardRef
	add := func(f shards.Family, key []byte, err error) error {
		if err != nil {
			return err
		}
		ref, err := p.Sn.ShardOf(f, key)
		ref.Prefix = key
		refs = append(refs, ref)
		return err
	}
	op, err := nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindPublish, ID: p.St.Op}.Encode()
	if err := add(nokv.FamilyOperation, op, err); err != nil {
		return nil, err
	}
	rev, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: p.St.Rev}.Encode()
	if err := add(nokv.FamilyArtifactRevision, rev, err); err != nil {
		return nil, err
	}
	if p.Base != nil {
		old, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: p.Base.Revision}.Encode()
		if err := add(nokv.FamilyArtifactRevision, old, err); err != nil {
			return nil, err
		}
		// The replaced revision's rows, which its release reads to retire
		// it at once when its body is inline (refs.retireInline).
		row, err := nokv.ArtifactManifestKey{Root: s.Root(), Revision: p.Base.Revision}.Encode()
		if err := add(nokv.FamilyArtifactManifest, row, err); err != nil {
			return nil, err
		}
		refs[len(refs)-1].Prefix = nokv.ArtifactManifestPrefix(s.Root(), p.Base.Revision)
	}
	return refs, nil
}

// applyPublish is the publication command: the predicates first, against
// the command's snapshot, then every write, each step named after what it
// does. A predicate failure is a pubReject and nothing is applied.
func applyPublish(s *core.Service, tx *head.Tx, p *PubPlan, manifestDigest string, digest [32]byte) ([]byte, error) {
	c := &pubCommand{s: s, tx: tx, p: p, manifestDigest: manifestDigest, digest: digest, seq: tx.Sequence()}
	c.out.CommitVersion = c.seq
	for _, step := range []func() error{
		c.checkStaging,
		c.openWorkspace,
		c.readPath,
		c.checkCondition,
		c.checkPlacement,
		c.checkFreshIDs,
		c.updateReferences,
		c.placeRevision,
		c.movePath,
		c.indexPath,
		c.placeDirectories,
		c.recordStaging,
		c.bumpWorkspace,
		c.writeOperation,
		c.recordEvent,
	} {
		if err := step(); err != nil {
			return nil, err
		}
	}
	c.out.Generation = c.entry.Generation
	c.out.WorkspaceRevision = c.ws.WorkspaceRevision
	c.out.Size = c.p.Size
	return json.Marshal(c.out)
}

// checkStaging refuses blocks the store stamped before the attempt's
// floor: a sweep may delete them before this commit lands (head.Tx.Floor).
func (c *pubCommand) checkStaging() error {
	if c.p.St.Stale(c.tx.Floor()) {
		return RejectStale()
	}
	return nil
}

// pubCommand is one run of the publication command: the plan, and what
// the steps found and wrote so far.
type pubCommand struct {
	s              *core.Service
	tx             *head.Tx
	p              *PubPlan
	manifestDigest string
	digest         [32]byte
	seq            uint64 // the commit version

	ws      nokv.WorkspaceCurrent
	pathKey []byte
	cur     *nokv.PathEntry // the artifact at the path, nil when none
	opKey   []byte
	revKey  []byte
	entry   nokv.PathEntry // the path's new entry
	out     pubOutcome
}

// openWorkspace finds the Visible workbench, or creates it when the mode
// allows: a replace needs the workbench, and an append that observed an
// artifact lost its base.
func (c *pubCommand) openWorkspace() error {
	ws, ok, werr := c.s.Workspace(c.tx.Context(), core.TxReader(c.tx), c.p.ID)
	if werr != nil {
		return werr
	}
	switch {
	case ok && ws.State == nokv.WorkspaceStateStaging:
		return core.Reject(core.WorkspaceBusy(c.p.ID))
	case !ok || ws.State != nokv.WorkspaceStateVisible:
		if c.p.Mode == PubReplace {
			return core.Reject(core.NotFound(core.LogicalPath(c.p.Path)))
		}
		if c.p.Mode == PubAppend && c.p.Base != nil {
			return core.Reject(generationConflict(c.p.Path, c.p.Base, nil))
		}
		var err error
		if ws, err = c.s.CreateWorkspace(c.tx, c.p.ID, c.p.NewInc); err != nil {
			return err
		}
		c.out.WorkbenchCreated = true
	}
	c.ws = ws
	return nil
}

// readPath reads the artifact at the path, if any.
func (c *pubCommand) readPath() error {
	var err error
	c.pathKey, err = nokv.PathCurrentKey{Root: c.s.Root(), Incarnation: c.ws.Incarnation, Path: c.p.Path}.Encode()
	if err != nil {
		return err
	}
	b, exists, err := c.tx.Get(nokv.FamilyPathCurrent, c.pathKey)
	if err != nil || !exists {
		return err
	}
	e, err := nokv.DecodePathEntry(b)
	if err != nil {
		return err
	}
	c.cur = &e
	return nil
}

// checkCondition checks the mode's condition on the path: create-only
// finds nothing, replace finds the observed revision, append finds what it
// observed (an artifact or nothing).
func (c *pubCommand) checkCondition() error {
	p, cur := c.p, c.cur
	switch p.Mode {
	case PubCreate:
		if cur != nil {
			return core.Reject(core.AlreadyExists(fmt.Sprintf("%s already exists", core.LogicalPath(p.Path))))
		}
	case PubReplace:
		if cur == nil {
			dir, err := core.TxIsDirectory(c.tx, c.s.Root(), c.ws.Incarnation, p.Path)
			if err != nil {
				return err
			}
			if dir {
				return core.Reject(core.NotArtifact(core.LogicalPath(p.Path)))
			}
			return core.Reject(core.NotFound(core.LogicalPath(p.Path)))
		}
		if p.Base == nil || cur.Generation != p.Base.Generation || cur.Revision != p.Base.Revision {
			return core.Reject(generationConflict(p.Path, p.Base, cur))
		}
	case PubAppend:
		if (p.Base == nil) != (cur == nil) || (cur != nil && (cur.Generation != p.Base.Generation || cur.Revision != p.Base.Revision)) {
			return core.Reject(generationConflict(p.Path, p.Base, cur))
		}
	}
	return nil
}

// checkPlacement checks that a new path lies under no file and is not a
// directory.
func (c *pubCommand) checkPlacement() error {
	if c.cur != nil {
		return nil
	}
	p := c.p
	for i := 1; i < len(p.Path); i++ {
		k, err := nokv.PathCurrentKey{Root: c.s.Root(), Incarnation: c.ws.Incarnation, Path: p.Path[:i]}.Encode()
		if err != nil {
			return err
		}
		if _, isFile, err := c.tx.Get(nokv.FamilyPathCurrent, k); err != nil {
			return err
		} else if isFile {
			return core.Reject(underFile(p.Path[:i]))
		}
	}
	dir, err := core.TxIsDirectory(c.tx, c.s.Root(), c.ws.Incarnation, p.Path)
	if err != nil {
		return err
	}
	if dir {
		if p.Mode == PubCreate {
			return core.Reject(core.AlreadyExists(fmt.Sprintf("%s already exists as a directory", core.LogicalPath(p.Path))))
		}
		return core.Reject(core.NotArtifact(core.LogicalPath(p.Path)))
	}
	return nil
}

// checkFreshIDs checks that the operation and revision ids are unused.
func (c *pubCommand) checkFreshIDs() error {
	st := c.p.St
	var err error
	c.opKey, err = nokv.OperationKey{Root: c.s.Root(), Kind: nokv.OperationKindPublish, ID: st.Op}.Encode()
	if err != nil {
		return err
	}
	if err := core.TxAbsent(c.tx, nokv.FamilyOperation, c.opKey, "publish operation "+st.Op.String()+" already exists"); err != nil {
		return err
	}
	c.revKey, err = nokv.ArtifactRevisionKey{Root: c.s.Root(), Revision: st.Rev}.Encode()
	if err != nil {
		return err
	}
	return core.TxAbsent(c.tx, nokv.FamilyArtifactRevision, c.revKey, "artifact revision "+st.Rev.String()+" already exists")
}

// updateReferences takes the new revision's dependency references and
// releases the replaced revision's path reference.
func (c *pubCommand) updateReferences() error {
	rc := &Refs{S: c.s, Tx: c.tx, Revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, owner := range c.p.Deps {
		epoch, err := rc.Add(owner)
		if err != nil {
			return err
		}
		k, err := nokv.DependencyRefKey(c.s.Root(), c.p.St.Rev, owner).Encode()
		if err != nil {
			return err
		}
		v, err := nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: c.seq}.Encode()
		if err != nil {
			return err
		}
		if err := c.tx.Put(nokv.FamilyRevisionRef, k, v); err != nil {
			return err
		}
	}
	if c.cur != nil {
		k, err := nokv.PathRefKey(c.s.Root(), c.ws.Incarnation, c.p.Path, c.cur.Revision).Encode()
		if err != nil {
			return err
		}
		if err := c.tx.Delete(nokv.FamilyRevisionRef, k); err != nil {
			return err
		}
		if err := rc.Remove(c.cur.Revision); err != nil {
			return err
		}
	}
	return rc.Flush()
}

// placeRevision writes the new revision, its manifest and its path
// reference.
func (c *pubCommand) placeRevision() error {
	p := c.p
	rev := nokv.ArtifactRevision{
		LogicalSize:          p.Size,
		BodyDigestURI:        p.Digest,
		ManifestDigestURI:    c.manifestDigest,
		BlockCount:           uint64(len(p.Rows)),
		DependencyCount:      uint32(len(p.Deps)),
		DependencyDepth:      p.Depth,
		DependencyDigest:     DependencyDigest(p.Deps),
		ContentType:          p.ContentType,
		State:                nokv.RevisionStateAvailable,
		ReferenceEpoch:       1,
		StrongReferenceCount: 1,
		CreatedVersion:       c.seq,
	}
	if err := core.PutRecord(c.tx, nokv.FamilyArtifactRevision, c.revKey, rev.Encode); err != nil {
		return err
	}
	for i, r := range p.Rows {
		k, err := nokv.ArtifactManifestKey{Root: c.s.Root(), Revision: p.St.Rev, ObjectIndex: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		if err := core.PutRecord(c.tx, nokv.FamilyArtifactManifest, k, r.Encode); err != nil {
			return err
		}
	}
	refKey, err := nokv.PathRefKey(c.s.Root(), c.ws.Incarnation, p.Path, p.St.Rev).Encode()
	if err != nil {
		return err
	}
	return core.PutRecord(c.tx, nokv.FamilyRevisionRef, refKey, nokv.RevisionRef{ReferenceEpochAtAdd: 1, CreatedVersion: c.seq}.Encode)
}

// movePath points the path at the new revision: the next generation of an
// existing path, keeping its creation version, or generation 1.
func (c *pubCommand) movePath() error {
	p := c.p
	c.entry = nokv.PathEntry{
		Generation:        1,
		Revision:          p.St.Rev,
		LogicalSize:       p.Size,
		BodyDigestURI:     p.Digest,
		ManifestDigestURI: c.manifestDigest,
		DependencyCount:   uint32(len(p.Deps)),
		DependencyDepth:   p.Depth,
		ContentType:       p.ContentType,
		CreatedVersion:    c.seq,
		ModifiedVersion:   c.seq,
	}
	if c.cur != nil {
		c.entry.Generation = c.cur.Generation + 1
		c.entry.CreatedVersion = c.cur.CreatedVersion
	} else {
		c.out.Created = true
	}
	return core.PutRecord(c.tx, nokv.FamilyPathCurrent, c.pathKey, c.entry.Encode)
}

// indexPath writes the path's SecondaryIndex rows for its new entry and
// deletes those of the entry it replaced whose value changed
// (path_index.go).
func (c *pubCommand) indexPath() error {
	return core.WritePathIndex(c.tx, c.s.Root(), c.ws.Incarnation, c.p.Path, c.cur, &c.entry)
}

// placeDirectories writes the path_directory rows of a new path's
// ancestors that lack one (directories.go), so that a listing finds every
// directory in its parent's shard.
func (c *pubCommand) placeDirectories() error {
	if c.cur != nil {
		return nil // the path existed: its ancestors have their rows
	}
	return core.PlaceDirectories(c.tx, c.s.Root(), c.ws.Incarnation, c.p.Path, c.seq)
}

// recordStaging writes the staging ledger's rows: the StagedObject rows
// own the uploaded blocks from now on.
func (c *pubCommand) recordStaging() error {
	st := c.p.St
	for i, b := range st.Blocks {
		k, err := nokv.StagedObjectKey{Root: c.s.Root(), Operation: st.Op, Sequence: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		so := nokv.StagedObject{
			Revision:          st.Rev,
			ObjectKey:         b.Key,
			ExpectedLength:    b.Size,
			ExpectedDigestURI: b.Digest.URI(),
			Provider:          nokv.StagedProviderStateUploaded,
			Cleanup:           nokv.StagedCleanupStateOwned,
		}
		if err := core.PutRecord(c.tx, nokv.FamilyStagedObject, k, so.Encode); err != nil {
			return err
		}
	}
	return nil
}

// bumpWorkspace moves the workspace revision on.
func (c *pubCommand) bumpWorkspace() error {
	c.ws.WorkspaceRevision++
	c.ws.ModifiedVersion = c.seq
	return c.s.PutWorkspace(c.tx, c.p.ID, c.ws)
}

// writeOperation writes the Publish operation, Published with its result.
func (c *pubCommand) writeOperation() error {
	p := c.p
	op := nokv.PublishOperation{
		Phase:         nokv.PublishPhasePublished,
		InputDigest:   c.digest,
		WorkbenchID:   p.ID,
		Incarnation:   c.ws.Incarnation,
		Path:          p.Path,
		Revision:      p.St.Rev,
		ObjectCount:   uint64(len(p.St.Blocks)),
		CleanupCursor: 0,
		Result:        &nokv.PublishResult{Generation: c.entry.Generation, WorkspaceRevision: c.ws.WorkspaceRevision, CommitVersion: c.seq},
	}
	if p.Base != nil {
		g := p.Base.Generation
		op.ExpectedGeneration = &g
	}
	return core.PutRecord(c.tx, nokv.FamilyOperation, c.opKey, op.Encode)
}

// recordEvent appends the path's ChangeEvent: PathCreated, or
// PathReplaced or PathAppended with the state before.
func (c *pubCommand) recordEvent() error {
	p, cur := c.p, c.cur
	ev := nokv.ChangeEvent{
		WorkbenchID: p.ID,
		Incarnation: c.ws.Incarnation,
		Kind:        nokv.ChangeEventKindPathCreated,
		Path:        p.Path,
		After:       &nokv.EventProjection{Generation: c.entry.Generation, Revision: p.St.Rev, LogicalSize: p.Size, DigestURI: p.Digest},
	}
	if cur != nil {
		ev.Kind = nokv.ChangeEventKindPathReplaced
		if p.Mode == PubAppend {
			ev.Kind = nokv.ChangeEventKindPathAppended
		}
		ev.Before = &nokv.EventProjection{Generation: cur.Generation, Revision: cur.Revision, LogicalSize: cur.LogicalSize, DigestURI: cur.BodyDigestURI}
	}
	return core.WriteChangeEvent(c.tx, c.s.Root(), ev)
}

// NotDirectory under a file: a write whose path lies below an artifact.
func underFile(parent []string) *core.Error {
	return &core.Error{
		Code:    core.CodeNotDirectory,
		Message: fmt.Sprintf("%s is an artifact; nothing can be created under it", core.LogicalPath(parent)),
		Details: map[string]any{"path": core.LogicalPath(parent)},
	}
}

// generationConflict reports a path that moved after the write observed
// it: current is its generation now, nil when it holds no artifact.
func generationConflict(path []string, observed *nokv.PathEntry, current *nokv.PathEntry) *core.Error {
	var was, now string
	if observed != nil {
		was = fmt.Sprintf("generation %d", observed.Generation)
	} else {
		was = "no artifact"
	}
	var cur *uint64
	if current != nil {
		g := current.Generation
		cur = &g
		now = fmt.Sprintf("generation %d", g)
	} else {
		now = "no artifact"
	}
	return core.Conflict(fmt.Sprintf("%s changed: observed %s, found %s", core.LogicalPath(path), was, now), "Generation", cur)
}

// IsGenerationConflict reports whether e is a lost generation CAS.
func IsGenerationConflict(e *core.Error) bool {
	return e != nil && e.Code == core.CodeConflict && e.Details["conflict"] == "Generation"
}
