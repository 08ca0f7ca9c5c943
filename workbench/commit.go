package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// workbench_commit seals the workbench's current tree as a commit and
// moves the workbench's commit head to it (docs/workbench.md, "Commits").
//
// The run manifest, the 8-key nokv.workbench.run_manifest.v1 envelope of
// the caller's manifest, is published at metadata/run_manifest.json by the
// same engine command that writes the commit: its ArtifactRevision (one
// Path and one Commit reference), the path's entry, one CommitMember per
// file of the tree (the run manifest included), one Commit RevisionRef
// per unique revision, the sealed Commit, the WorkbenchCommitHead, the
// CommitConsumer rows of the head (and of the parent, on a replace), the
// BuildCommit Operation row with its terminal result, and one
// WorkbenchCommitted ChangeEvent. Nothing of a commit is visible before
// that command lands, and it lands whole or not at all.
//
// An exact retry (same workbench, manifest, content digest and replace)
// finds the BuildCommit operation by its derived id before reading
// anything live and returns the stored result with idempotent_replay
// true, even after a later commit replaced the head. Otherwise a
// workbench that does not exist is created; a workbench with a head
// refuses a different commit unless replace is true
// (WorkbenchCommitConflict, retryable); replace advances the head with
// the old head as the only parent.
func init() { registerTool("workbench_commit", (*Service).commitTool) }

// commitInput is workbench_commit's input. Manifest is the member's
// canonical text: the arguments are canonicalized by the reference
// parser's rules before they are decoded (schema.go), so its keys are
// sorted, duplicates resolved last-wins and numbers kept as written in
// canonical form ("1.0" stays "1.0").
type commitInput struct {
	ID               string          `json:"id"`
	Manifest         json.RawMessage `json:"manifest"`
	ContentDigestURI string          `json:"content_digest_uri"`
	Replace          bool            `json:"replace"`

	id string
}

func (in *commitInput) resolve(*Service) *Error {
	var werr *Error
	if in.id, werr = ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	if len(in.Manifest) == 0 || in.Manifest[0] != '{' {
		return InvalidArguments("manifest must be an object")
	}
	return nil
}

// commitRequest is one commit request with everything derived from it
// alone: the projection the reference facade computes before it calls
// storage, and the operation id a retry finds.
type commitRequest struct {
	id             string
	workbenchPath  string
	contentDigest  string
	canonical      []byte // the caller's manifest, canonical
	manifestDigest string
	identity       nokv.CommitID
	projection     [32]byte // the seed's projection-input digest
	replace        bool
	opID           nokv.OperationID
}

func (s *Service) newCommitRequest(id string, manifest []byte, contentDigest string, replace bool) *commitRequest {
	r := &commitRequest{
		id:            id,
		workbenchPath: WorkbenchPath(s.logical, id),
		contentDigest: contentDigest,
		canonical:     bytes.Clone(manifest),
		replace:       replace,
	}
	r.manifestDigest = DigestURI(r.canonical)
	r.identity = CommitIdentity(id, contentDigest, r.manifestDigest)
	r.projection = ProjectionInputDigest(id, r.workbenchPath, contentDigest, r.canonical, r.manifestDigest, r.identity)
	r.opID = buildCommitOperationID(s.root, r.identity)
	return r
}

func (r *commitRequest) envelope(committedAt uint64) ([]byte, error) {
	return runManifestEnvelope(r.id, r.workbenchPath, r.contentDigest, r.canonical, r.manifestDigest, r.identity, committedAt)
}

func (s *Service) commitTool(ctx context.Context, in *commitInput) (map[string]any, *Error) {
	req := s.newCommitRequest(in.id, in.Manifest, in.ContentDigestURI, in.Replace)
	res, werr := s.commit(ctx, req, time.Now)
	return res, CommitConflict(werr)
}

// commit runs one commit request; now gives the commit time of a fresh
// build.
func (s *Service) commit(ctx context.Context, req *commitRequest, now func() time.Time) (map[string]any, *Error) {
	sn, werr := s.pinForWrite(ctx)
	if werr != nil {
		return nil, werr
	}
	// The operation first: an exact retry is answered from it alone.
	op, found, werr := s.buildCommitOperation(ctx, snapshotReader(ctx, sn), req.opID)
	if werr != nil || found {
		if werr != nil {
			return nil, werr
		}
		return s.replayCommit(req, op)
	}
	// Fresh construction: the live preconditions, checked again by the
	// command, refuse early what is bound to fail.
	ws, ok, werr := s.workspace(ctx, snapshotReader(ctx, sn), req.id)
	if werr != nil {
		return nil, werr
	}
	var observed *nokv.WorkbenchCommitHead
	if ok && ws.State == nokv.WorkspaceStateStaging {
		return nil, workspaceBusy(req.id)
	}
	if ok && ws.State == nokv.WorkspaceStateVisible {
		h, has, err := commitHead(ctx, sn, s.root, ws.Incarnation)
		if err != nil {
			return nil, FromError(err)
		}
		if has {
			if !req.replace {
				return nil, headConflict()
			}
			observed = &h
		}
	}
	committedAt := uint64(max(now().Unix(), 0))
	env, err := req.envelope(committedAt)
	if err != nil {
		return nil, FromError(err)
	}
	if int64(len(env)) > s.opts.MaxBytes {
		return nil, ArtifactTooLarge(uint64(len(env)), s.opts.MaxBytes)
	}
	st := s.planStaging("workbench_commit", req.id, runManifestComps, env)
	if werr := s.stageBytes(ctx, st, env); werr != nil {
		return nil, werr
	}
	rows := ownRows(st, 0, nil)
	rowsDigest, err := manifestDigestURI(rows)
	if err != nil {
		return nil, FromError(err)
	}
	b := &commitBuild{
		s: s, req: req, observed: observed, newInc: nokv.NewIncarnationID(),
		committedAt: committedAt, env: env, st: st, rows: rows, rowsDigest: rowsDigest,
	}
	sctx, cancel, werr := s.withinStagingAge(ctx, st)
	if werr != nil {
		return nil, werr
	}
	defer cancel()
	res, err := s.doExact(sctx, head.Command{
		Namespace: s.root,
		RequestID: s.requestID(),
		Digest:    b.commandDigest(),
		Apply:     b.apply,
		At:        sn,
	})
	if err != nil {
		if _, rejected := errors.AsType[*pubReject](err); rejected {
			s.discardStaging(ctx, st)
		}
		return nil, FromError(err)
	}
	if st.hasLedger() {
		s.cleanup.add(st.op)
	}
	var out commitOutcome
	if err := json.Unmarshal(res.Value, &out); err != nil {
		return nil, FromError(fmt.Errorf("workbench: commit result: %w: %w", err, bucket.ErrIntegrity))
	}
	if out.Replayed {
		// Another call landed the same commit first: answer from its
		// operation, as a retry would.
		s.discardStaging(ctx, st)
		sn, werr := s.pin(ctx)
		if werr != nil {
			return nil, werr
		}
		op, found, werr := s.buildCommitOperation(ctx, snapshotReader(ctx, sn), req.opID)
		if werr != nil {
			return nil, werr
		}
		if !found {
			return nil, Internal("commit operation " + req.opID.String() + " vanished")
		}
		return s.replayCommit(req, op)
	}
	return s.commitResult(req, len(env), DigestURI(env), out.HeadGeneration, out.TreeDigestURI, false), nil
}

// headConflict is the reference's refusal of a different commit onto a
// workbench that has a head, without replace.
func headConflict() *Error {
	return LifecycleConflict("workbench already has a different commit head; set replace=true")
}

// commitResult shapes the tool's result.
func (s *Service) commitResult(req *commitRequest, size int, envelopeDigest string, generation uint64, treeDigest string, replay bool) map[string]any {
	return map[string]any{
		"workbench_id":        req.id,
		"workbench_path":      req.workbenchPath,
		"path":                PresentationPath(s.logical, req.id, runManifestComps),
		"size_bytes":          size,
		"generation":          generation,
		"content_digest_uri":  req.contentDigest,
		"manifest_digest_uri": req.manifestDigest,
		"commit_identity":     req.identity.String(),
		"envelope_digest_uri": envelopeDigest,
		"tree_digest_uri":     treeDigest,
		"replace":             req.replace,
		"idempotent_replay":   replay,
	}
}

// buildCommitOperation reads the BuildCommit operation opID, if any.
func (s *Service) buildCommitOperation(ctx context.Context, read func(shards.Family, []byte) ([]byte, bool, error), opID nokv.OperationID) (nokv.BuildCommitOperation, bool, *Error) {
	key, err := nokv.OperationKey{Root: s.root, Kind: nokv.OperationKindBuildCommit, ID: opID}.Encode()
	if err != nil {
		return nokv.BuildCommitOperation{}, false, FromError(err)
	}
	b, ok, err := read(nokv.FamilyOperation, key)
	if err != nil || !ok {
		return nokv.BuildCommitOperation{}, false, FromError(err)
	}
	op, err := nokv.DecodeBuildCommitOperation(b)
	if err != nil {
		return nokv.BuildCommitOperation{}, false, FromError(err)
	}
	return op, true, nil
}

// replayCommit answers an exact retry from its terminal operation. The
// durable request must be the same (projection-input digest and replace);
// the envelope is rebuilt from the request and the frozen commit time and
// must match the operation's manifest binding byte for byte, so the answer
// never depends on what metadata/run_manifest.json holds now.
func (s *Service) replayCommit(req *commitRequest, op nokv.BuildCommitOperation) (map[string]any, *Error) {
	if op.Commit != req.identity {
		return nil, CommitProtocolMismatch(req.identity.String(), op.Commit.String())
	}
	if op.ProjectionInputDigest != req.projection || op.Replace != req.replace {
		e := InvalidState(fmt.Sprintf("commit %s was requested before with other inputs (replace=%t)", req.identity, op.Replace))
		return nil, e.With("commit_identity", req.identity.String())
	}
	switch {
	case op.Failure != nil:
		return nil, newError(op.Failure.Code, op.Failure.Message, false, sourceDetails())
	case op.Phase != nokv.BuildCommitPhaseComplete || op.Result == nil:
		return nil, InvalidState(fmt.Sprintf("commit %s is in phase %v", req.identity, op.Phase))
	}
	env, err := req.envelope(op.CommittedAtUnix)
	if err != nil {
		return nil, FromError(err)
	}
	envDigest := DigestURI(env)
	if envDigest != op.Binding.BodyDigestURI || uint64(len(env)) != op.Binding.LogicalSize {
		return nil, FromError(fmt.Errorf("workbench: commit %s: rebuilt run manifest does not match its binding: %w", req.identity, bucket.ErrIntegrity))
	}
	tree := nokv.Commit{MemberDigest: op.MemberDigest}.TreeDigestURI()
	return s.commitResult(req, len(env), envDigest, op.Result.HeadGeneration, tree, true), nil
}

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
	s           *Service
	req         *commitRequest
	observed    *nokv.WorkbenchCommitHead // the head seen before the command; nil: none
	newInc      nokv.IncarnationID        // the incarnation if the command creates the workbench
	committedAt uint64
	env         []byte
	st          *staging
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
		[]byte{boolByte(b.req.replace)},
		observed,
		b.newInc[:],
		wire.NewWriter(nil).U64(b.committedAt).Bytes(),
		[]byte(b.rowsDigest),
		b.st.op[:],
		b.st.rev[:],
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

	ws       nokv.WorkspaceCurrent
	oldHead  *nokv.WorkbenchCommitHead
	cur      *nokv.PathEntry // the run manifest the commit replaces
	entry    nokv.PathEntry  // the run manifest's new entry
	members  []member
	revs     []nokv.RevisionID // unique, ascending
	parents  []nokv.CommitID
	memberD  [32]byte
	headGen  uint64
	commitID nokv.CommitID
}

// apply is the commit command: predicates first, then every write. A
// predicate failure is a pubReject and nothing is applied.
func (b *commitBuild) apply(tx *head.Tx) ([]byte, error) {
	c := &commitCommand{commitBuild: b, tx: tx, seq: tx.Sequence(), root: b.s.root, commitID: b.req.identity}
	opKey, err := nokv.OperationKey{Root: c.root, Kind: nokv.OperationKindBuildCommit, ID: b.req.opID}.Encode()
	if err != nil {
		return nil, err
	}
	if _, exists, err := tx.Get(nokv.FamilyOperation, opKey); err != nil {
		return nil, err
	} else if exists {
		return json.Marshal(commitOutcome{Replayed: true})
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
	ws, ok, werr := c.s.workspace(c.tx.Context(), txReader(c.tx), c.req.id)
	if werr != nil {
		return werr
	}
	switch {
	case ok && ws.State == nokv.WorkspaceStateStaging:
		return reject(workspaceBusy(c.req.id))
	case !ok || ws.State != nokv.WorkspaceStateVisible:
		if c.observed != nil {
			return reject(headConflict())
		}
		var err error
		if ws, err = c.s.createWorkspace(c.tx, c.req.id, c.newInc); err != nil {
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
		return reject(headConflict())
	case ok != (c.observed != nil) || (ok && h != *c.observed):
		// The head moved since the tool looked: a concurrent commit.
		return reject(LifecycleConflict("workbench commit head moved concurrently; retry the commit"))
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
	key, err := nokv.PathCurrentKey{Root: c.root, Incarnation: c.ws.Incarnation, Path: runManifestComps}.Encode()
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
		return reject(LifecycleConflict("metadata/run_manifest.json already contains a different v1 envelope"))
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
	if err := txAbsent(c.tx, nokv.FamilyCommit, ck, "commit "+c.commitID.String()+" already exists without its operation"); err != nil {
		return err
	}
	rk, err := nokv.ArtifactRevisionKey{Root: c.root, Revision: c.st.rev}.Encode()
	if err != nil {
		return err
	}
	return txAbsent(c.tx, nokv.FamilyArtifactRevision, rk, "artifact revision "+c.st.rev.String()+" already exists")
}

// collectMembers reads the workbench's tree in canonical path order and
// puts the new run manifest in place of the old one, or at its position.
func (c *commitCommand) collectMembers() error {
	prefix, err := nokv.PathCurrentPrefix(c.root, c.ws.Incarnation, nil)
	if err != nil {
		return err
	}
	recs, err := c.tx.Scan(nokv.FamilyPathCurrent, prefix, nil, 0)
	if err != nil {
		return err
	}
	runKey, err := nokv.PathCurrentKey{Root: c.root, Incarnation: c.ws.Incarnation, Path: runManifestComps}.Encode()
	if err != nil {
		return err
	}
	c.entry = nokv.PathEntry{
		Generation:        1,
		Revision:          c.st.rev,
		LogicalSize:       uint64(len(c.env)),
		BodyDigestURI:     DigestURI(c.env),
		ManifestDigestURI: c.rowsDigest,
		ContentType:       runManifestContentType,
		CreatedVersion:    c.seq,
		ModifiedVersion:   c.seq,
	}
	if c.cur != nil {
		c.entry.Generation = c.cur.Generation + 1
		c.entry.CreatedVersion = c.cur.CreatedVersion
	}
	c.members = make([]member, 0, len(recs)+1)
	for _, r := range recs {
		if bytes.Equal(r.Key, runKey) {
			continue
		}
		k, err := nokv.ParsePathCurrentKey(r.Key)
		if err != nil {
			return err
		}
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			return err
		}
		c.members = append(c.members, member{key: r.Key, path: k.Path, m: nokv.MemberOf(e)})
	}
	at, _ := slices.BinarySearchFunc(c.members, runKey, func(m member, k []byte) int { return bytes.Compare(m.key, k) })
	c.members = slices.Insert(c.members, at, member{key: runKey, path: runManifestComps, m: nokv.MemberOf(c.entry)})
	return nil
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
		DependencyDigest:     dependencyDigest(nil),
		ContentType:          runManifestContentType,
		State:                nokv.RevisionStateAvailable,
		ReferenceEpoch:       2, // the Path reference (epoch 1), then the Commit reference (2)
		StrongReferenceCount: 2,
		CreatedVersion:       c.seq,
	}
	rk, err := nokv.ArtifactRevisionKey{Root: c.root, Revision: c.st.rev}.Encode()
	if err != nil {
		return err
	}
	if err := putRecord(c.tx, nokv.FamilyArtifactRevision, rk, rev.Encode); err != nil {
		return err
	}
	for i, r := range c.rows {
		k, err := nokv.ArtifactManifestKey{Root: c.root, Revision: c.st.rev, ObjectIndex: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		if err := putRecord(c.tx, nokv.FamilyArtifactManifest, k, r.Encode); err != nil {
			return err
		}
	}
	for i, blk := range c.st.blocks {
		k, err := nokv.StagedObjectKey{Root: c.root, Operation: c.st.op, Sequence: uint64(i)}.Encode()
		if err != nil {
			return err
		}
		so := nokv.StagedObject{
			Revision: c.st.rev, ObjectKey: blk.Key, ExpectedLength: blk.Size, ExpectedDigestURI: blk.Digest.URI(),
			Provider: nokv.StagedProviderStateUploaded, Cleanup: nokv.StagedCleanupStateOwned,
		}
		if err := putRecord(c.tx, nokv.FamilyStagedObject, k, so.Encode); err != nil {
			return err
		}
	}
	pathRef, err := nokv.PathRefKey(c.root, c.ws.Incarnation, runManifestComps, c.st.rev).Encode()
	if err != nil {
		return err
	}
	if err := putRecord(c.tx, nokv.FamilyRevisionRef, pathRef, nokv.RevisionRef{ReferenceEpochAtAdd: 1, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	commitRef, err := nokv.CommitRefKey(c.root, c.commitID, c.st.rev).Encode()
	if err != nil {
		return err
	}
	if err := putRecord(c.tx, nokv.FamilyRevisionRef, commitRef, nokv.RevisionRef{ReferenceEpochAtAdd: 2, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	pk, err := nokv.PathCurrentKey{Root: c.root, Incarnation: c.ws.Incarnation, Path: runManifestComps}.Encode()
	if err != nil {
		return err
	}
	if err := putRecord(c.tx, nokv.FamilyPathCurrent, pk, c.entry.Encode); err != nil {
		return err
	}
	if err := writePathIndex(c.tx, c.root, c.ws.Incarnation, runManifestComps, c.cur, &c.entry); err != nil {
		return err
	}
	if c.cur == nil {
		return placeDirectories(c.tx, c.root, c.ws.Incarnation, runManifestComps, c.seq)
	}
	old, err := nokv.PathRefKey(c.root, c.ws.Incarnation, runManifestComps, c.cur.Revision).Encode()
	if err != nil {
		return err
	}
	if err := c.tx.Delete(nokv.FamilyRevisionRef, old); err != nil {
		return err
	}
	rc := &refs{s: c.s, tx: c.tx, revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	if err := rc.remove(c.cur.Revision); err != nil {
		return err
	}
	return rc.flush()
}

// writeMembers writes one CommitMember row per file and seals the member
// digest.
func (c *commitCommand) writeMembers() error {
	d := newMemberDigester()
	seen := map[nokv.RevisionID]bool{}
	for _, m := range c.members {
		k, err := nokv.CommitMemberKey{Root: c.root, Commit: c.commitID, Path: m.path}.Encode()
		if err != nil {
			return err
		}
		if err := putRecord(c.tx, nokv.FamilyCommitMember, k, m.m.Encode); err != nil {
			return err
		}
		if err := d.add(m.path, m.m); err != nil {
			return err
		}
		if !seen[m.m.Revision] {
			seen[m.m.Revision] = true
			c.revs = append(c.revs, m.m.Revision)
		}
	}
	slices.SortFunc(c.revs, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) })
	c.memberD = d.sum()
	return nil
}

// referenceRevisions adds one Commit reference per unique revision of the
// tree, so that GC keeps every committed body. The run manifest's
// reference is already in place.
func (c *commitCommand) referenceRevisions() error {
	rc := &refs{s: c.s, tx: c.tx, revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, rev := range c.revs {
		if rev == c.st.rev {
			continue
		}
		epoch, err := rc.add(rev)
		if err != nil {
			return err
		}
		k, err := nokv.CommitRefKey(c.root, c.commitID, rev).Encode()
		if err != nil {
			return err
		}
		if err := putRecord(c.tx, nokv.FamilyRevisionRef, k, nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: c.seq}.Encode); err != nil {
			return err
		}
	}
	return rc.flush()
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
		return reject(InvalidState("head commit " + parent.String() + " does not exist"))
	}
	p, err := nokv.DecodeCommit(v)
	if err != nil {
		return err
	}
	if p.State != nokv.CommitStateSealed {
		return reject(InvalidState(fmt.Sprintf("head commit %s is %v", parent, p.State)))
	}
	headKey, err := nokv.CommitConsumerKey{Root: c.root, Commit: parent, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: c.ws.Incarnation}.Encode()
	if err != nil {
		return err
	}
	if _, ok, err := c.tx.Get(nokv.FamilyCommitConsumer, headKey); err != nil {
		return err
	} else if !ok || p.ConsumerCount == 0 {
		return reject(InvalidState("head commit " + parent.String() + " has no workbench-head consumer"))
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
	if err := putRecord(c.tx, nokv.FamilyCommitConsumer, childKey, nokv.CommitConsumer{ConsumerEpochAtAdd: p.ConsumerEpoch, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	c.parents = []nokv.CommitID{parent}
	return putRecord(c.tx, nokv.FamilyCommit, pk, p.Encode)
}

// sealCommit writes the sealed Commit, with the workbench head as its one
// consumer.
func (c *commitCommand) sealCommit() error {
	hk, err := nokv.CommitConsumerKey{Root: c.root, Commit: c.commitID, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: c.ws.Incarnation}.Encode()
	if err != nil {
		return err
	}
	if err := putRecord(c.tx, nokv.FamilyCommitConsumer, hk, nokv.CommitConsumer{ConsumerEpochAtAdd: 1, CreatedVersion: c.seq}.Encode); err != nil {
		return err
	}
	cm := nokv.Commit{
		SourceIncarnation:    c.ws.Incarnation,
		WorkbenchID:          c.req.id,
		ContentDigestURI:     c.req.contentDigest,
		ManifestDigestURI:    c.req.manifestDigest,
		TreeManifestRevision: c.st.rev,
		MemberCount:          uint64(len(c.members)),
		MemberDigest:         c.memberD,
		UniqueRevisionCount:  uint64(len(c.revs)),
		RevisionDigest:       revisionDigest(c.revs),
		Parents:              c.parents,
		ParentDigest:         parentDigest(c.parents),
		ConsumerCount:        1,
		ConsumerEpoch:        1,
		State:                nokv.CommitStateSealed,
		CreatedVersion:       c.seq,
	}
	ck, err := nokv.CommitKey{Root: c.root, Commit: c.commitID}.Encode()
	if err != nil {
		return err
	}
	return putRecord(c.tx, nokv.FamilyCommit, ck, cm.Encode)
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
	return putRecord(c.tx, nokv.FamilyWorkbenchCommitHead, k, nokv.WorkbenchCommitHead{Commit: c.commitID, HeadGeneration: c.headGen}.Encode)
}

// bumpWorkspace moves the workspace revision on: the run manifest changed.
func (c *commitCommand) bumpWorkspace() error {
	c.ws.WorkspaceRevision++
	c.ws.ModifiedVersion = c.seq
	return c.s.putWorkspace(c.tx, c.req.id, c.ws)
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
			Revision: c.st.rev, LogicalSize: c.entry.LogicalSize, BodyDigestURI: c.entry.BodyDigestURI,
			ManifestDigestURI: c.rowsDigest, ContentType: runManifestContentType,
		},
		Parents:      c.parents,
		MemberCount:  uint64(len(c.members)),
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
	op.InitializationDigest = buildCommitInit{
		projectionInput: op.ProjectionInputDigest,
		incarnation:     op.Incarnation,
		readVersion:     op.SourceReadVersion,
		head:            op.ExpectedHead,
		contentDigest:   op.ContentDigestURI,
		manifestDigest:  op.ManifestDigestURI,
		treeRevision:    c.st.rev,
		replace:         op.Replace,
		runManifestGen:  op.RunManifestGeneration,
		committedAt:     op.CommittedAtUnix,
		parents:         op.Parents,
	}.digest()
	return putRecord(c.tx, nokv.FamilyOperation, key, op.Encode)
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
	return writeChangeEvent(c.tx, c.root, ev)
}
