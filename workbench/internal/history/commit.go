package history

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
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
func init() { core.RegisterTool("workbench_commit", commitTool) }

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

func (in *commitInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if in.id, werr = core.ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	if len(in.Manifest) == 0 || in.Manifest[0] != '{' {
		return core.InvalidArguments("manifest must be an object")
	}
	// The schema's pattern already holds it; the projection checks again.
	if !digest.ValidURI(in.ContentDigestURI) {
		return core.InvalidArguments("content_digest_uri must be sha256: and 64 lowercase hex digits")
	}
	return nil
}

// MaxCommitMembers bounds the members of one commit: 100,000 files and
// the run manifest. A commit is one engine command, which holds a
// CommitMember row and a revision rewrite per file in memory and writes
// about a kilobyte per file; beyond this bound the commit is
// ResourceExhausted and nothing is written.
const MaxCommitMembers = 100_000 + 1

// maxCommitMembers is MaxCommitMembers; tests lower it.
var CommitMembersLimit = MaxCommitMembers

// tooManyMembers reports a tree over maxCommitMembers files.
func tooManyMembers(n int) *core.Error {
	return core.ResourceExhausted(fmt.Sprintf("a commit of %d files exceeds the %d-file limit of one commit", n, CommitMembersLimit))
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

func NewCommitRequest(s *core.Service, id string, manifest []byte, contentDigest string, replace bool) *commitRequest {
	r := &commitRequest{
		id:            id,
		workbenchPath: core.WorkbenchPath(s.LogicalRoot(), id),
		contentDigest: contentDigest,
		canonical:     bytes.Clone(manifest),
		replace:       replace,
	}
	r.manifestDigest = core.DigestURI(r.canonical)
	r.identity = core.CommitIdentity(id, contentDigest, r.manifestDigest)
	r.projection = core.ProjectionInputDigest(id, r.workbenchPath, contentDigest, r.canonical, r.manifestDigest, r.identity)
	r.opID = core.BuildCommitOperationID(s.Root(), r.identity)
	return r
}

func (r *commitRequest) envelope(committedAt uint64) ([]byte, error) {
	return core.RunManifestEnvelope(r.id, r.workbenchPath, r.contentDigest, r.canonical, r.manifestDigest, r.identity, committedAt)
}

// CommitInput is workbench_commit's input.
type CommitInput struct {
	ID string `json:"id"`
	// Manifest is the caller's run manifest, a JSON object: a map, a
	// struct, or a json.RawMessage (whose numbers keep their text, as a
	// JSON call's do: "1.0" stays "1.0").
	Manifest         any    `json:"manifest,omitempty"`
	ContentDigestURI string `json:"content_digest_uri"`
	// Replace lets the commit replace a different commit head.
	Replace bool `json:"replace,omitempty"`
}

// CommitResult is workbench_commit's result. An exact retry answers the
// same members, idempotent_replay aside.
type CommitResult struct {
	core.Success
	WorkbenchID       string `json:"workbench_id"`
	WorkbenchPath     string `json:"workbench_path"`
	Path              string `json:"path"`       // the run manifest's presentation path
	SizeBytes         int    `json:"size_bytes"` // of the run manifest envelope
	Generation        uint64 `json:"generation"` // the commit head's
	ContentDigestURI  string `json:"content_digest_uri"`
	ManifestDigestURI string `json:"manifest_digest_uri"` // of the caller's manifest, canonical
	CommitIdentity    string `json:"commit_identity"`
	EnvelopeDigestURI string `json:"envelope_digest_uri"`
	TreeDigestURI     string `json:"tree_digest_uri"`
	Replace           bool   `json:"replace"`
	IdempotentReplay  bool   `json:"idempotent_replay"`
}

func commitTool(ctx context.Context, s *core.Service, in *commitInput) (*CommitResult, *core.Error) {
	req := NewCommitRequest(s, in.id, in.Manifest, in.ContentDigestURI, in.Replace)
	res, werr := Commit(ctx, s, req, time.Now)
	return res, core.CommitConflict(werr)
}

// Commit runs one commit request; now gives the commit time of a fresh
// build.
func Commit(ctx context.Context, s *core.Service, req *commitRequest, now func() time.Time) (*CommitResult, *core.Error) {
	sn, werr := s.PinForWrite(ctx)
	if werr != nil {
		return nil, werr
	}
	// The operation first: an exact retry is answered from it alone.
	op, found, werr := buildCommitOperation(ctx, s, core.SnapshotReader(ctx, sn), req.opID)
	if werr != nil || found {
		if werr != nil {
			return nil, werr
		}
		return replayCommit(s, req, op)
	}
	// Fresh construction: the live preconditions, checked again by the
	// command, refuse early what is bound to fail.
	ws, ok, werr := s.Workspace(ctx, core.SnapshotReader(ctx, sn), req.id)
	if werr != nil {
		return nil, werr
	}
	var observed *nokv.WorkbenchCommitHead
	if ok && ws.State == nokv.WorkspaceStateStaging {
		return nil, core.WorkspaceBusy(req.id)
	}
	if ok && ws.State == nokv.WorkspaceStateVisible {
		h, has, err := core.CommitHead(ctx, sn, s.Root(), ws.Incarnation)
		if err != nil {
			return nil, core.FromError(err)
		}
		if has {
			if !req.replace {
				return nil, headConflict()
			}
			observed = &h
		}
	}
	reads, werr := prefetchCommit(ctx, s, sn, req.id, ws, ok && ws.State == nokv.WorkspaceStateVisible, observed)
	if werr != nil {
		return nil, werr
	}
	committedAt := uint64(max(now().Unix(), 0))
	env, err := req.envelope(committedAt)
	if err != nil {
		return nil, core.FromError(err)
	}
	var st *publish.Staging
	var res head.Result
	for try := 0; ; try++ {
		var rows []nokv.ArtifactManifestEntry
		var rowsDigest string
		var werr *core.Error
		st, rows, rowsDigest, werr = stageRunManifest(ctx, s, "workbench_commit", req.id, env)
		if werr != nil {
			return nil, werr
		}
		b := &commitBuild{
			s: s, req: req, observed: observed, newInc: nokv.NewIncarnationID(),
			committedAt: committedAt, env: env, st: st, rows: rows, rowsDigest: rowsDigest,
		}
		res, err = s.Store().Do(ctx, head.Command{
			Namespace: s.Root(),
			RequestID: s.RequestID(),
			Digest:    b.commandDigest(),
			Apply:     b.apply,
			At:        sn,
			Reads:     reads,
		})
		if !publish.IsStale(err) || try == publish.MaxRestages {
			break
		}
		// The run manifest's blocks aged past the attempt's floor (a
		// pause): stage it again, under fresh ids, and send again.
		publish.DiscardStaging(ctx, s, st)
		sn = nil
	}
	if err != nil {
		if _, rejected := errors.AsType[*core.PubReject](err); rejected {
			publish.DiscardStaging(ctx, s, st)
		}
		return nil, core.FromError(err)
	}
	if st.HasLedger() {
		s.Cleanup.Add(st.Op)
	}
	var out commitOutcome
	if err := json.Unmarshal(res.Value, &out); err != nil {
		return nil, core.FromError(fmt.Errorf("workbench: commit result: %w: %w", err, bucket.ErrIntegrity))
	}
	if out.Replayed {
		// Another call landed the same commit first: answer from its
		// operation, as a retry would.
		publish.DiscardStaging(ctx, s, st)
		sn, werr := s.Pin(ctx)
		if werr != nil {
			return nil, werr
		}
		op, found, werr := buildCommitOperation(ctx, s, core.SnapshotReader(ctx, sn), req.opID)
		if werr != nil {
			return nil, werr
		}
		if !found {
			return nil, core.Internal("commit operation " + req.opID.String() + " vanished")
		}
		return replayCommit(s, req, op)
	}
	return commitResult(s, req, len(env), core.DigestURI(env), out.HeadGeneration, out.TreeDigestURI, false), nil
}

// headConflict is the reference's refusal of a different commit onto a
// workbench that has a head, without replace.
func headConflict() *core.Error {
	return core.LifecycleConflict("workbench already has a different commit head; set replace=true")
}

// commitResult shapes the tool's result.
func commitResult(s *core.Service, req *commitRequest, size int, envelopeDigest string, generation uint64, treeDigest string, replay bool) *CommitResult {
	return &CommitResult{
		WorkbenchID:       req.id,
		WorkbenchPath:     req.workbenchPath,
		Path:              core.PresentationPath(s.LogicalRoot(), req.id, core.RunManifestComps),
		SizeBytes:         size,
		Generation:        generation,
		ContentDigestURI:  req.contentDigest,
		ManifestDigestURI: req.manifestDigest,
		CommitIdentity:    req.identity.String(),
		EnvelopeDigestURI: envelopeDigest,
		TreeDigestURI:     treeDigest,
		Replace:           req.replace,
		IdempotentReplay:  replay,
	}
}

// buildCommitOperation reads the BuildCommit operation opID, if any.
func buildCommitOperation(ctx context.Context, s *core.Service, read func(shards.Family, []byte) ([]byte, bool, error), opID nokv.OperationID) (nokv.BuildCommitOperation, bool, *core.Error) {
	key, err := nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindBuildCommit, ID: opID}.Encode()
	if err != nil {
		return nokv.BuildCommitOperation{}, false, core.FromError(err)
	}
	b, ok, err := read(nokv.FamilyOperation, key)
	if err != nil || !ok {
		return nokv.BuildCommitOperation{}, false, core.FromError(err)
	}
	op, err := nokv.DecodeBuildCommitOperation(b)
	if err != nil {
		return nokv.BuildCommitOperation{}, false, core.FromError(err)
	}
	return op, true, nil
}

// replayCommit answers an exact retry from its terminal operation. The
// durable request must be the same (projection-input digest and replace);
// the envelope is rebuilt from the request and the frozen commit time and
// must match the operation's manifest binding byte for byte, so the answer
// never depends on what metadata/run_manifest.json holds now.
func replayCommit(s *core.Service, req *commitRequest, op nokv.BuildCommitOperation) (*CommitResult, *core.Error) {
	if op.Commit != req.identity {
		return nil, core.CommitProtocolMismatch(req.identity.String(), op.Commit.String())
	}
	if op.ProjectionInputDigest != req.projection || op.Replace != req.replace {
		e := core.InvalidState(fmt.Sprintf("commit %s was requested before with other inputs (replace=%t)", req.identity, op.Replace))
		return nil, e.With("commit_identity", req.identity.String())
	}
	switch {
	case op.Failure != nil:
		return nil, core.NewError(op.Failure.Code, op.Failure.Message, false, core.SourceDetails())
	case op.Phase != nokv.BuildCommitPhaseComplete || op.Result == nil:
		return nil, core.InvalidState(fmt.Sprintf("commit %s is in phase %v", req.identity, op.Phase))
	}
	env, err := req.envelope(op.CommittedAtUnix)
	if err != nil {
		return nil, core.FromError(err)
	}
	envDigest := core.DigestURI(env)
	if envDigest != op.Binding.BodyDigestURI || uint64(len(env)) != op.Binding.LogicalSize {
		return nil, core.FromError(fmt.Errorf("workbench: commit %s: rebuilt run manifest does not match its binding: %w", req.identity, bucket.ErrIntegrity))
	}
	tree := nokv.Commit{MemberDigest: op.MemberDigest}.TreeDigestURI()
	return commitResult(s, req, len(env), envDigest, op.Result.HeadGeneration, tree, true), nil
}

// stageRunManifest stages env, a run manifest envelope, as the body of
// workbench id's metadata/run_manifest.json for tool (a commit, or a
// restore's final step), and returns the staging, its manifest rows and
// their digest.
func stageRunManifest(ctx context.Context, s *core.Service, tool, id string, env []byte) (*publish.Staging, []nokv.ArtifactManifestEntry, string, *core.Error) {
	if int64(len(env)) > s.Opts.MaxBytes {
		return nil, nil, "", core.ArtifactTooLarge(uint64(len(env)), s.Opts.MaxBytes)
	}
	st := publish.PlanStaging(s, tool, id, core.RunManifestComps, env)
	if werr := publish.StageBytes(ctx, s, st, env); werr != nil {
		return nil, nil, "", werr
	}
	rows := publish.OwnRows(st, 0, nil)
	rowsDigest, err := publish.ManifestDigestURI(rows)
	if err != nil {
		return nil, nil, "", core.FromError(err)
	}
	return st, rows, rowsDigest, nil
}
