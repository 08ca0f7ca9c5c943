package workbench

// Publication: how put_file, append and edit make a body visible.
//
// # Object first, metadata last
//
// A publication never names an object before it exists, and never leaves an
// object it uploaded without a durable owner:
//
//  1. It draws a fresh RevisionID and OperationID.
//  2. It writes a staging ledger (StagingLedger, shards.Layout.Staging of
//     the operation id), create-only: the exact list of every block object
//     the operation may upload, with its length and digest. From here on a
//     crash leaves every uploaded object named by a ledger.
//  3. It uploads the body's new blocks (shards.Layout.Block of the root,
//     the revision and the block's physical index), create-only and in
//     parallel.
//  4. One engine command checks every predicate against the pinned
//     snapshot and writes everything at once: the ArtifactRevision
//     (Available, one strong reference), its ArtifactManifest rows, the
//     PathCurrent entry, the Path RevisionRef, the RevisionDependency refs
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
// it lands, the StagedObject rows own the blocks and the ledger object is
// deleted. When the outcome is unknown, everything is left in place: the
// ledger is the cleanup owner.
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

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// Bounds of an append's dependency graph (the seed's "at most 64 distinct
// owner revisions" and "at most eight revisions deep").
const (
	MaxDependencyOwners = 64
	MaxDependencyDepth  = 8
)

const (
	// uploadConcurrency bounds the parallel block uploads and reads of one
	// call.
	uploadConcurrency = 8
	// objectTries bounds the attempts of one object write that met a
	// transient error.
	objectTries = 4
	// exactRetries bounds the retries of an engine command whose outcome
	// was unknown, with its own request id and digest.
	exactRetries = 3
)

// StagingLedgerSchema is the schema of a staging ledger document.
const StagingLedgerSchema = "cairn.staging_ledger.v1"

// StagingLedger is a publication's staging ledger: the durable list of every
// object the operation may upload, written create-only before the first of
// them under shards.Layout.Staging(operation id). It is canonical JSON
// (package manifests).
type StagingLedger struct {
	SchemaName  string        `json:"schema"`
	Operation   string        `json:"operation_id"` // 32 lowercase hex
	Revision    string        `json:"revision_id"`  // 32 lowercase hex
	Root        string        `json:"root_id"`      // 32 lowercase hex
	WorkbenchID string        `json:"workbench_id"`
	Path        string        `json:"path"` // section-joined logical path
	Tool        string        `json:"tool"`
	Objects     []StagedBlock `json:"objects"`
}

// StagedBlock is one object a staging ledger names.
type StagedBlock struct {
	Key    string `json:"key"`
	Length uint64 `json:"length"`
	Digest string `json:"digest_uri"`
}

// Schema returns StagingLedgerSchema.
func (StagingLedger) Schema() string { return StagingLedgerSchema }

// DecodeStagingLedger decodes a staging ledger's canonical bytes strictly.
func DecodeStagingLedger(b []byte) (StagingLedger, error) {
	var l StagingLedger
	if err := manifests.Decode(b, &l); err != nil {
		return StagingLedger{}, fmt.Errorf("workbench: decode staging ledger: %w", err)
	}
	return l, nil
}

// staging is one publication's objects: the ledger and the blocks it
// names, with the ids they are keyed by.
type staging struct {
	op     nokv.OperationID
	rev    nokv.RevisionID
	blocks []StagedBlock
	staged bool // the ledger and every block are in the bucket
	// remat marks the staging of a rematerialized append, which depends on
	// its base and is never reused for another base.
	remat bool
}

func (s *Service) newStaging() *staging {
	return &staging{op: nokv.NewOperationID(), rev: nokv.NewRevisionID()}
}

// planBlocks returns the blocks data is stored in, owned by st's revision,
// from physical index first on.
func (s *Service) planBlocks(st *staging, first uint64, data []byte) []StagedBlock {
	var out []StagedBlock
	bs := s.opts.BlockSize
	for i := 0; i < len(data); i += bs {
		chunk := data[i:min(i+bs, len(data))]
		out = append(out, StagedBlock{
			Key:    s.layout.Block(s.root, st.rev, first+uint64(len(out))),
			Length: uint64(len(chunk)),
			Digest: DigestURI(chunk),
		})
	}
	return out
}

// ownRows returns the manifest rows of st's blocks, which hold the body's
// bytes from logical offset off on.
func (s *Service) ownRows(st *staging, off uint64, seg *nokv.AppendSegment) []nokv.ArtifactManifestEntry {
	rows := make([]nokv.ArtifactManifestEntry, len(st.blocks))
	for i, b := range st.blocks {
		rows[i] = nokv.ArtifactManifestEntry{
			PhysicalOwner:       st.rev,
			PhysicalObjectIndex: uint64(i),
			ObjectKey:           b.Key,
			LogicalOffset:       off,
			Length:              b.Length,
			DigestURI:           b.Digest,
		}
		if seg != nil && off < seg.DeltaOffset+seg.DeltaLength && off+b.Length > seg.DeltaOffset {
			c := *seg
			rows[i].Append = &c
		}
		off += b.Length
	}
	return rows
}

// writeLedger writes st's ledger create-only.
func (s *Service) writeLedger(ctx context.Context, st *staging, tool, id string, path []string) error {
	l := StagingLedger{
		SchemaName:  StagingLedgerSchema,
		Operation:   st.op.String(),
		Revision:    st.rev.String(),
		Root:        s.root.String(),
		WorkbenchID: id,
		Path:        LogicalPath(path),
		Tool:        tool,
		Objects:     st.blocks,
	}
	if l.Objects == nil {
		l.Objects = []StagedBlock{}
	}
	b, err := manifests.Encode(l)
	if err != nil {
		return err
	}
	return s.putObject(ctx, s.layout.Staging(st.op), b)
}

// stageBytes writes st's ledger and uploads its blocks, cut from data.
func (s *Service) stageBytes(ctx context.Context, st *staging, tool, id string, path []string, data []byte) *Error {
	if st.staged {
		return nil
	}
	if err := s.writeLedger(ctx, st, tool, id, path); err != nil {
		return FromError(err)
	}
	bs := s.opts.BlockSize
	err := s.uploadBlocks(ctx, st.blocks, func(emit func(i int, b []byte) error) error {
		for i := range st.blocks {
			if err := emit(i, data[i*bs:min((i+1)*bs, len(data))]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return FromError(err)
	}
	st.staged = true
	return nil
}

// uploadBlocks uploads the blocks of plan in parallel as produce emits
// them, each checked against its planned length and digest first.
func (s *Service) uploadBlocks(ctx context.Context, plan []StagedBlock, produce func(emit func(i int, b []byte) error) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(uploadConcurrency)
	perr := produce(func(i int, b []byte) error {
		if err := gctx.Err(); err != nil {
			return err
		}
		if i >= len(plan) || uint64(len(b)) != plan[i].Length || DigestURI(b) != plan[i].Digest {
			return fmt.Errorf("workbench: upload block %d: bytes differ from the staging plan: %w", i, bucket.ErrIntegrity)
		}
		key := plan[i].Key
		g.Go(func() error { return s.putObject(gctx, key, b) })
		return nil
	})
	werr := g.Wait()
	if perr != nil && !(errors.Is(perr, context.Canceled) && werr != nil) {
		return perr
	}
	return werr
}

// putObject writes a new immutable object create-only. A write whose
// outcome was unknown is tried again; a precondition failure then means an
// earlier try landed, which the object's bytes confirm.
func (s *Service) putObject(ctx context.Context, key string, body []byte) error {
	var err error
	for try := range objectTries {
		if try > 0 {
			if werr := sleepJitter(ctx, try); werr != nil {
				return werr
			}
		}
		_, err = s.b.Put(ctx, key, body, bucket.IfAbsent())
		switch {
		case err == nil:
			return nil
		case errors.Is(err, bucket.ErrPrecondition):
			got, _, gerr := s.b.Get(ctx, key)
			if gerr != nil {
				err = gerr
				if transientObjectError(gerr) {
					continue
				}
				return gerr
			}
			if !bytes.Equal(got, body) {
				return fmt.Errorf("workbench: put %q: a different object exists: %w", key, bucket.ErrIntegrity)
			}
			return nil
		case transientObjectError(err):
			continue
		default:
			return err
		}
	}
	return err
}

func transientObjectError(err error) bool {
	return errors.Is(err, bucket.ErrAmbiguous) || errors.Is(err, bucket.ErrUnavailable) || errors.Is(err, bucket.ErrThrottled)
}

// sleepJitter waits a short, jittered, growing time before try.
func sleepJitter(ctx context.Context, try int) error {
	d := time.Millisecond << min(try, 5)
	d += time.Duration(rand.Int64N(int64(d)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// discardStaging deletes what a publication that did not land uploaded:
// the blocks first, the ledger last, so that whatever a failure leaves
// behind is still named by the ledger. Best effort.
func (s *Service) discardStaging(ctx context.Context, st *staging) {
	if st == nil {
		return
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(uploadConcurrency)
	for _, b := range st.blocks {
		g.Go(func() error { return s.b.Delete(gctx, b.Key, bucket.Unconditional) })
	}
	if g.Wait() != nil {
		return
	}
	_ = s.b.Delete(ctx, s.layout.Staging(st.op), bucket.Unconditional)
	st.staged = false
}

// dropLedger deletes the ledger of a publication that landed: its
// StagedObject rows own the blocks now. Best effort.
func (s *Service) dropLedger(ctx context.Context, st *staging) {
	_ = s.b.Delete(ctx, s.layout.Staging(st.op), bucket.Unconditional)
}

// Reading bodies as a stream.

// streamBody calls fn with the body rows describe, slice by slice in
// order, each checked against its row's digest. Blocks are fetched a
// window at a time, in parallel.
func (s *Service) streamBody(ctx context.Context, rows []nokv.ArtifactManifestEntry, fn func([]byte) error) error {
	var off uint64
	for start := 0; start < len(rows); start += uploadConcurrency {
		window := rows[start:min(start+uploadConcurrency, len(rows))]
		parts := make([][]byte, len(window))
		g, gctx := errgroup.WithContext(ctx)
		for i, r := range window {
			g.Go(func() error {
				obj, _, err := s.b.Get(gctx, r.ObjectKey)
				if err != nil {
					return err
				}
				if r.ObjectOffset+r.Length > uint64(len(obj)) {
					return fmt.Errorf("workbench: block %s: %d bytes, row wants [%d, %d): %w", r.ObjectKey, len(obj), r.ObjectOffset, r.ObjectOffset+r.Length, bucket.ErrIntegrity)
				}
				sl := obj[r.ObjectOffset : r.ObjectOffset+r.Length]
				if DigestURI(sl) != r.DigestURI {
					return fmt.Errorf("workbench: block %s: digest mismatch: %w", r.ObjectKey, bucket.ErrIntegrity)
				}
				parts[i] = sl
				return nil
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
		for i, sl := range parts {
			if window[i].LogicalOffset != off {
				return fmt.Errorf("workbench: manifest row at logical offset %d, want %d: %w", window[i].LogicalOffset, off, bucket.ErrIntegrity)
			}
			off += uint64(len(sl))
			if err := fn(sl); err != nil {
				return err
			}
		}
	}
	return nil
}

// blocker cuts a stream of bytes into blocks of one size.
type blocker struct {
	size int
	buf  []byte
	emit func([]byte) error
}

func (b *blocker) write(p []byte) error {
	for len(p) > 0 {
		if b.buf == nil {
			b.buf = make([]byte, 0, b.size)
		}
		n := min(b.size-len(b.buf), len(p))
		b.buf = append(b.buf, p[:n]...)
		p = p[n:]
		if len(b.buf) == b.size {
			full := b.buf
			b.buf = nil
			if err := b.emit(full); err != nil {
				return err
			}
		}
	}
	return nil
}

func (b *blocker) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	last := b.buf
	b.buf = nil
	return b.emit(last)
}

// Body digest states.

// bodyStates remembers the SHA-256 state of the bodies of revisions this
// process wrote or read, so that an append extends the whole-body digest
// without reading the base again. A revision's body never changes, so an
// entry never goes stale; the map is bounded and forgets the oldest.
var bodyStates = struct {
	sync.Mutex
	m     map[[32]byte]bodyState
	order [][32]byte
}{m: map[[32]byte]bodyState{}}

const maxBodyStates = 4096

type bodyState struct {
	size  uint64
	state []byte
}

func bodyStateKey(root nokv.RootID, rev nokv.RevisionID) (k [32]byte) {
	copy(k[:16], root[:])
	copy(k[16:], rev[:])
	return k
}

// rememberBody records the state h reached after hashing the whole body
// of rev, size bytes.
func rememberBody(root nokv.RootID, rev nokv.RevisionID, h hash.Hash, size uint64) {
	m, ok := h.(encoding.BinaryMarshaler)
	if !ok {
		return
	}
	st, err := m.MarshalBinary()
	if err != nil {
		return
	}
	k := bodyStateKey(root, rev)
	bodyStates.Lock()
	defer bodyStates.Unlock()
	if _, dup := bodyStates.m[k]; dup {
		return
	}
	if len(bodyStates.order) >= maxBodyStates {
		delete(bodyStates.m, bodyStates.order[0])
		bodyStates.order = bodyStates.order[1:]
	}
	bodyStates.m[k] = bodyState{size: size, state: st}
	bodyStates.order = append(bodyStates.order, k)
}

// recallBody returns a hash holding the state after the whole body of
// rev, if this process remembers it.
func recallBody(root nokv.RootID, rev nokv.RevisionID, size uint64) (hash.Hash, bool) {
	bodyStates.Lock()
	st, ok := bodyStates.m[bodyStateKey(root, rev)]
	bodyStates.Unlock()
	if !ok || st.size != size {
		return nil, false
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.state); err != nil {
		return nil, false
	}
	return h, true
}

// newBodyHash returns a SHA-256 hash that has consumed body.
func newBodyHash(body []byte) hash.Hash {
	h := sha256.New()
	h.Write(body)
	return h
}

// digestURIOf renders a finished hash as a digest URI.
func digestURIOf(h hash.Hash) string {
	return fmt.Sprintf("sha256:%x", h.Sum(nil))
}

// Manifest and dependency digests.

// manifestDigestURI is the digest of a revision's manifest: SHA-256 of
// "cairn.workbench.artifact_manifest.v1\0" and, for each row in index
// order, u64(len) and the row's encoded value.
func manifestDigestURI(rows []nokv.ArtifactManifestEntry) (string, error) {
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
	return digestURIOf(h), nil
}

// dependencyDigest seals a revision's dependency set: SHA-256 of
// "cairn.workbench.revision_dependencies.v1\0", u32(count) and the owner
// ids in ascending order.
func dependencyDigest(deps []nokv.RevisionID) [32]byte {
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

// The publication command.

type pubMode uint8

const (
	// pubCreate is create-only: the path must hold nothing.
	pubCreate pubMode = iota + 1
	// pubReplace is replace-if-generation: the path must hold the
	// observed revision.
	pubReplace
	// pubAppend extends the observed revision, or creates the path when
	// it was observed absent.
	pubAppend
)

func (m pubMode) String() string {
	switch m {
	case pubCreate:
		return "create"
	case pubReplace:
		return "replace"
	case pubAppend:
		return "append"
	}
	return "unknown"
}

// pubPlan is everything one publication command needs; the command is a
// pure function of the plan and the snapshot.
type pubPlan struct {
	tool string
	mode pubMode
	id   string
	path []string
	// newInc is the incarnation of the workbench if the command has to
	// create it.
	newInc nokv.IncarnationID
	// base is the entry the write observed (replace, append); nil when
	// it observed no artifact.
	base        *nokv.PathEntry
	contentType string
	size        uint64
	digest      string // of the whole body
	rows        []nokv.ArtifactManifestEntry
	deps        []nokv.RevisionID // distinct physical owners other than the new revision, ascending
	depth       uint32
	st          *staging
}

// pubOutcome is the deterministic result of a publication command.
type pubOutcome struct {
	Generation        uint64 `json:"generation"`
	WorkspaceRevision uint64 `json:"workspace_revision"`
	CommitVersion     uint64 `json:"commit_version"`
	Created           bool   `json:"created"`
	WorkbenchCreated  bool   `json:"workbench_created"`
}

// pubReject is a predicate failure of a publication command: nothing was
// applied.
type pubReject struct{ e *Error }

func (r *pubReject) Error() string { return r.e.Error() }
func (r *pubReject) Unwrap() error { return r.e }

func reject(e *Error) error { return &pubReject{e: e} }

// commandDigest identifies the plan's exact inputs.
func (p *pubPlan) commandDigest(manifestDigest string) [32]byte {
	var base []byte
	if p.base != nil {
		base = wire.NewWriter(nil).U64(p.base.Generation).Raw(p.base.Revision[:]).Bytes()
	}
	var deps []byte
	for _, d := range p.deps {
		deps = append(deps, d[:]...)
	}
	return head.Digest(
		[]byte("cairn.workbench.publish.v1"),
		[]byte(p.tool),
		[]byte{byte(p.mode)},
		[]byte(p.id),
		[]byte(strings.Join(p.path, "\x00")),
		p.newInc[:],
		base,
		[]byte(p.contentType),
		wire.NewWriter(nil).U64(p.size).Bytes(),
		[]byte(p.digest),
		[]byte(manifestDigest),
		deps,
		wire.NewWriter(nil).U32(p.depth).Bytes(),
		p.st.op[:],
		p.st.rev[:],
	)
}

// publish runs the plan's one engine command. A predicate failure comes
// back with rejected set: nothing was applied, and the caller decides
// what becomes of the staged objects. On success the ledger is dropped.
func (s *Service) publish(ctx context.Context, p *pubPlan) (out pubOutcome, werr *Error, rejected bool) {
	md, err := manifestDigestURI(p.rows)
	if err != nil {
		return out, FromError(err), false
	}
	digest := p.commandDigest(md)
	res, err := s.doExact(ctx, head.Command{
		Namespace: s.root,
		RequestID: s.requestID(),
		Digest:    digest,
		Apply:     func(tx *head.Tx) ([]byte, error) { return s.applyPublish(tx, p, md, digest) },
	})
	if err != nil {
		var rej *pubReject
		if errors.As(err, &rej) {
			return out, rej.e, true
		}
		return out, FromError(err), false
	}
	if err := json.Unmarshal(res.Value, &out); err != nil {
		return out, FromError(fmt.Errorf("workbench: publish result: %w: %w", err, bucket.ErrIntegrity)), false
	}
	s.dropLedger(ctx, p.st)
	return out, nil, false
}

// doExact runs cmd and, while its outcome is unknown, runs it again with
// the same request id and digest: the engine replays it if it landed and
// applies it if it did not, so it applies at most once.
func (s *Service) doExact(ctx context.Context, cmd head.Command) (head.Result, error) {
	for try := 0; ; try++ {
		res, err := s.store.Do(ctx, cmd)
		if errors.Is(err, head.ErrUnknownOutcome) && try < exactRetries && ctx.Err() == nil {
			continue
		}
		return res, err
	}
}

// txReader reads through a command's transaction.
func txReader(tx *head.Tx) func(shards.Family, []byte) ([]byte, bool, error) {
	return tx.Get
}

// createWorkspace writes a new Visible workspace marker of incarnation inc
// for workbench id, its incarnation claim and its WorkspaceCreated event.
func (s *Service) createWorkspace(tx *head.Tx, id string, inc nokv.IncarnationID) (nokv.WorkspaceCurrent, error) {
	claimKey, err := nokv.WorkspaceIncarnationClaimKey{Root: s.root, Incarnation: inc}.Encode()
	if err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	if _, taken, err := tx.Get(nokv.FamilyWorkspaceIncarnationClaim, claimKey); err != nil {
		return nokv.WorkspaceCurrent{}, err
	} else if taken {
		return nokv.WorkspaceCurrent{}, reject(Internal("workspace incarnation " + inc.String() + " is already claimed"))
	}
	claim, err := nokv.WorkspaceIncarnationClaim{WorkbenchID: id}.Encode()
	if err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	if err := tx.Put(nokv.FamilyWorkspaceIncarnationClaim, claimKey, claim); err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	ws := nokv.WorkspaceCurrent{
		Incarnation:       inc,
		WorkspaceRevision: 1,
		State:             nokv.WorkspaceStateVisible,
		CreatedVersion:    tx.Sequence(),
		ModifiedVersion:   tx.Sequence(),
	}
	if err := s.putWorkspace(tx, id, ws); err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	return ws, writeChangeEvent(tx, s.root, nokv.ChangeEvent{WorkbenchID: id, Incarnation: inc, Kind: nokv.ChangeEventKindWorkspaceCreated})
}

func (s *Service) putWorkspace(tx *head.Tx, id string, ws nokv.WorkspaceCurrent) error {
	key, err := nokv.WorkspaceCurrentKey{Root: s.root, WorkbenchID: id}.Encode()
	if err != nil {
		return err
	}
	val, err := ws.Encode()
	if err != nil {
		return err
	}
	return tx.Put(nokv.FamilyWorkspaceCurrent, key, val)
}

// workspaceBusy reports a workbench whose marker is Staging: a restore is
// building it.
func workspaceBusy(id string) *Error {
	return Conflict(fmt.Sprintf("workbench %s is being restored and cannot be written yet", id), "Workspace", nil)
}

// writeChangeEvent appends ev to the change feed at the command's commit
// version, after the events earlier commands of the same commit wrote.
func writeChangeEvent(tx *head.Tx, root nokv.RootID, ev nokv.ChangeEvent) error {
	recs, err := tx.Scan(nokv.FamilyChangeEvent, nokv.ChangeEventVersionPrefix(root, tx.Sequence()), nil, 0)
	if err != nil {
		return err
	}
	var next uint32
	if n := len(recs); n > 0 {
		k, err := nokv.ParseChangeEventKey(recs[n-1].Key)
		if err != nil {
			return err
		}
		next = k.Sequence + 1
	}
	key, err := nokv.ChangeEventKey{Root: root, CommitVersion: tx.Sequence(), Sequence: next}.Encode()
	if err != nil {
		return err
	}
	val, err := ev.Encode()
	if err != nil {
		return err
	}
	return tx.Put(nokv.FamilyChangeEvent, key, val)
}

// NotDirectory under a file: a write whose path lies below an artifact.
func underFile(parent []string) *Error {
	return &Error{
		Code:    CodeNotDirectory,
		Message: fmt.Sprintf("%s is an artifact; nothing can be created under it", LogicalPath(parent)),
		Details: map[string]any{"path": LogicalPath(parent)},
	}
}

// generationConflict reports a path that moved after the write observed
// it: current is its generation now, nil when it holds no artifact.
func generationConflict(path []string, observed *nokv.PathEntry, current *nokv.PathEntry) *Error {
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
	return Conflict(fmt.Sprintf("%s changed: observed %s, found %s", LogicalPath(path), was, now), "Generation", cur)
}

// isGenerationConflict reports whether e is a lost generation CAS.
func isGenerationConflict(e *Error) bool {
	return e != nil && e.Code == CodeConflict && e.Details["conflict"] == "Generation"
}

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
			cv, err := nokv.GcCandidate{LastZeroRefVersion: seq, Claim: nokv.GcClaimStateCandidate}.Encode()
			if err != nil {
				return err
			}
			if err := r.tx.Put(nokv.FamilyGcCandidate, ck, cv); err != nil {
				return err
			}
		}
		key, err := nokv.ArtifactRevisionKey{Root: r.s.root, Revision: rev}.Encode()
		if err != nil {
			return err
		}
		val, err := a.Encode()
		if err != nil {
			return err
		}
		if err := r.tx.Put(nokv.FamilyArtifactRevision, key, val); err != nil {
			return err
		}
	}
	return nil
}

// applyPublish is the publication command.
func (s *Service) applyPublish(tx *head.Tx, p *pubPlan, manifestDigest string, digest [32]byte) ([]byte, error) {
	ctx := tx.Context()
	seq := tx.Sequence()
	var out pubOutcome
	out.CommitVersion = seq

	ws, ok, werr := s.workspace(ctx, txReader(tx), p.id)
	if werr != nil {
		return nil, werr
	}
	switch {
	case ok && ws.State == nokv.WorkspaceStateStaging:
		return nil, reject(workspaceBusy(p.id))
	case !ok || ws.State != nokv.WorkspaceStateVisible:
		if p.mode == pubReplace {
			return nil, reject(NotFound(LogicalPath(p.path)))
		}
		if p.mode == pubAppend && p.base != nil {
			return nil, reject(generationConflict(p.path, p.base, nil))
		}
		var err error
		if ws, err = s.createWorkspace(tx, p.id, p.newInc); err != nil {
			return nil, err
		}
		out.WorkbenchCreated = true
	}

	pathKey, err := nokv.PathCurrentKey{Root: s.root, Incarnation: ws.Incarnation, Path: p.path}.Encode()
	if err != nil {
		return nil, err
	}
	var cur *nokv.PathEntry
	if b, exists, err := tx.Get(nokv.FamilyPathCurrent, pathKey); err != nil {
		return nil, err
	} else if exists {
		e, err := nokv.DecodePathEntry(b)
		if err != nil {
			return nil, err
		}
		cur = &e
	}

	switch p.mode {
	case pubCreate:
		if cur != nil {
			return nil, reject(AlreadyExists(fmt.Sprintf("%s already exists", LogicalPath(p.path))))
		}
	case pubReplace:
		if cur == nil {
			dir, err := txHasDescendant(tx, s.root, ws.Incarnation, p.path)
			if err != nil {
				return nil, err
			}
			if dir {
				return nil, reject(NotArtifact(LogicalPath(p.path)))
			}
			return nil, reject(NotFound(LogicalPath(p.path)))
		}
		if p.base == nil || cur.Generation != p.base.Generation || cur.Revision != p.base.Revision {
			return nil, reject(generationConflict(p.path, p.base, cur))
		}
	case pubAppend:
		if (p.base == nil) != (cur == nil) || (cur != nil && (cur.Generation != p.base.Generation || cur.Revision != p.base.Revision)) {
			return nil, reject(generationConflict(p.path, p.base, cur))
		}
	}
	if cur == nil {
		// A new path: not a directory, not under a file.
		for i := 1; i < len(p.path); i++ {
			k, err := nokv.PathCurrentKey{Root: s.root, Incarnation: ws.Incarnation, Path: p.path[:i]}.Encode()
			if err != nil {
				return nil, err
			}
			if _, isFile, err := tx.Get(nokv.FamilyPathCurrent, k); err != nil {
				return nil, err
			} else if isFile {
				return nil, reject(underFile(p.path[:i]))
			}
		}
		dir, err := txHasDescendant(tx, s.root, ws.Incarnation, p.path)
		if err != nil {
			return nil, err
		}
		if dir {
			if p.mode == pubCreate {
				return nil, reject(AlreadyExists(fmt.Sprintf("%s already exists as a directory", LogicalPath(p.path))))
			}
			return nil, reject(NotArtifact(LogicalPath(p.path)))
		}
	}

	// The operation and revision ids are fresh.
	opKey, err := nokv.OperationKey{Root: s.root, Kind: nokv.OperationKindPublish, ID: p.st.op}.Encode()
	if err != nil {
		return nil, err
	}
	if _, taken, err := tx.Get(nokv.FamilyOperation, opKey); err != nil {
		return nil, err
	} else if taken {
		return nil, reject(Internal("publish operation " + p.st.op.String() + " already exists"))
	}
	revKey, err := nokv.ArtifactRevisionKey{Root: s.root, Revision: p.st.rev}.Encode()
	if err != nil {
		return nil, err
	}
	if _, taken, err := tx.Get(nokv.FamilyArtifactRevision, revKey); err != nil {
		return nil, err
	} else if taken {
		return nil, reject(Internal("artifact revision " + p.st.rev.String() + " already exists"))
	}

	// References: the new revision's dependencies, the replaced
	// revision's path reference.
	rc := &refs{s: s, tx: tx, revs: map[nokv.RevisionID]*nokv.ArtifactRevision{}}
	for _, owner := range p.deps {
		epoch, err := rc.add(owner)
		if err != nil {
			return nil, err
		}
		k, err := nokv.DependencyRefKey(s.root, p.st.rev, owner).Encode()
		if err != nil {
			return nil, err
		}
		v, err := nokv.RevisionRef{ReferenceEpochAtAdd: epoch, CreatedVersion: seq}.Encode()
		if err != nil {
			return nil, err
		}
		if err := tx.Put(nokv.FamilyRevisionRef, k, v); err != nil {
			return nil, err
		}
	}
	if cur != nil {
		k, err := nokv.PathRefKey(s.root, ws.Incarnation, p.path, cur.Revision).Encode()
		if err != nil {
			return nil, err
		}
		if err := tx.Delete(nokv.FamilyRevisionRef, k); err != nil {
			return nil, err
		}
		if err := rc.remove(cur.Revision); err != nil {
			return nil, err
		}
	}
	if err := rc.flush(); err != nil {
		return nil, err
	}

	// The new revision, its manifest and its path reference.
	rev := nokv.ArtifactRevision{
		LogicalSize:          p.size,
		BodyDigestURI:        p.digest,
		ManifestDigestURI:    manifestDigest,
		BlockCount:           uint64(len(p.rows)),
		DependencyCount:      uint32(len(p.deps)),
		DependencyDepth:      p.depth,
		DependencyDigest:     dependencyDigest(p.deps),
		ContentType:          p.contentType,
		State:                nokv.RevisionStateAvailable,
		ReferenceEpoch:       1,
		StrongReferenceCount: 1,
		CreatedVersion:       seq,
	}
	if err := putRecord(tx, nokv.FamilyArtifactRevision, revKey, rev.Encode); err != nil {
		return nil, err
	}
	for i, r := range p.rows {
		k, err := nokv.ArtifactManifestKey{Root: s.root, Revision: p.st.rev, ObjectIndex: uint64(i)}.Encode()
		if err != nil {
			return nil, err
		}
		if err := putRecord(tx, nokv.FamilyArtifactManifest, k, r.Encode); err != nil {
			return nil, err
		}
	}
	refKey, err := nokv.PathRefKey(s.root, ws.Incarnation, p.path, p.st.rev).Encode()
	if err != nil {
		return nil, err
	}
	if err := putRecord(tx, nokv.FamilyRevisionRef, refKey, nokv.RevisionRef{ReferenceEpochAtAdd: 1, CreatedVersion: seq}.Encode); err != nil {
		return nil, err
	}

	// The path.
	entry := nokv.PathEntry{
		Generation:        1,
		Revision:          p.st.rev,
		LogicalSize:       p.size,
		BodyDigestURI:     p.digest,
		ManifestDigestURI: manifestDigest,
		DependencyCount:   uint32(len(p.deps)),
		DependencyDepth:   p.depth,
		ContentType:       p.contentType,
		CreatedVersion:    seq,
		ModifiedVersion:   seq,
	}
	if cur != nil {
		entry.Generation = cur.Generation + 1
		entry.CreatedVersion = cur.CreatedVersion
	} else {
		out.Created = true
	}
	if err := putRecord(tx, nokv.FamilyPathCurrent, pathKey, entry.Encode); err != nil {
		return nil, err
	}

	// The staging ledger's rows and the operation.
	for i, b := range p.st.blocks {
		k, err := nokv.StagedObjectKey{Root: s.root, Operation: p.st.op, Sequence: uint64(i)}.Encode()
		if err != nil {
			return nil, err
		}
		so := nokv.StagedObject{
			Revision:          p.st.rev,
			ObjectKey:         b.Key,
			ExpectedLength:    b.Length,
			ExpectedDigestURI: b.Digest,
			Provider:          nokv.StagedProviderStateUploaded,
			Cleanup:           nokv.StagedCleanupStateOwned,
		}
		if err := putRecord(tx, nokv.FamilyStagedObject, k, so.Encode); err != nil {
			return nil, err
		}
	}
	ws.WorkspaceRevision++
	ws.ModifiedVersion = seq
	if err := s.putWorkspace(tx, p.id, ws); err != nil {
		return nil, err
	}
	op := nokv.PublishOperation{
		Phase:         nokv.PublishPhasePublished,
		InputDigest:   digest,
		WorkbenchID:   p.id,
		Incarnation:   ws.Incarnation,
		Path:          p.path,
		Revision:      p.st.rev,
		ObjectCount:   uint64(len(p.st.blocks)),
		CleanupCursor: 0,
		Result:        &nokv.PublishResult{Generation: entry.Generation, WorkspaceRevision: ws.WorkspaceRevision, CommitVersion: seq},
	}
	if p.base != nil {
		g := p.base.Generation
		op.ExpectedGeneration = &g
	}
	if err := putRecord(tx, nokv.FamilyOperation, opKey, op.Encode); err != nil {
		return nil, err
	}

	// The event.
	ev := nokv.ChangeEvent{
		WorkbenchID: p.id,
		Incarnation: ws.Incarnation,
		Kind:        nokv.ChangeEventKindPathCreated,
		Path:        p.path,
		After:       &nokv.EventProjection{Generation: entry.Generation, Revision: p.st.rev, LogicalSize: p.size, DigestURI: p.digest},
	}
	if cur != nil {
		ev.Kind = nokv.ChangeEventKindPathReplaced
		if p.mode == pubAppend {
			ev.Kind = nokv.ChangeEventKindPathAppended
		}
		ev.Before = &nokv.EventProjection{Generation: cur.Generation, Revision: cur.Revision, LogicalSize: cur.LogicalSize, DigestURI: cur.BodyDigestURI}
	}
	if err := writeChangeEvent(tx, s.root, ev); err != nil {
		return nil, err
	}

	out.Generation = entry.Generation
	out.WorkspaceRevision = ws.WorkspaceRevision
	return json.Marshal(out)
}

// putRecord encodes a value and puts it.
func putRecord(tx *head.Tx, f shards.Family, key []byte, encode func() ([]byte, error)) error {
	v, err := encode()
	if err != nil {
		return err
	}
	return tx.Put(f, key, v)
}

// txHasDescendant reports whether any artifact lies strictly under path.
func txHasDescendant(tx *head.Tx, root nokv.RootID, inc nokv.IncarnationID, path []string) (bool, error) {
	prefix, err := nokv.PathCurrentPrefix(root, inc, path)
	if err != nil {
		return false, err
	}
	recs, err := tx.Scan(nokv.FamilyPathCurrent, prefix, nil, 1)
	if err != nil {
		return false, err
	}
	return len(recs) > 0, nil
}

// Observation.

// observation is what a write saw before it staged anything: the pinned
// snapshot, the workbench's marker (nil when there is no visible
// workbench) and the artifact at the path (nil when there is none).
type observation struct {
	sn    *head.Snapshot
	ws    *nokv.WorkspaceCurrent
	entry *nokv.PathEntry
}

// observe pins the shard and reads the workbench and the path. A
// workbench being restored is a Conflict.
func (s *Service) observe(ctx context.Context, id string, path []string) (observation, *Error) {
	sn, werr := s.pin(ctx)
	if werr != nil {
		return observation{}, werr
	}
	o := observation{sn: sn}
	ws, ok, werr := s.workspace(ctx, snapshotReader(ctx, sn), id)
	if werr != nil {
		return observation{}, werr
	}
	if ok && ws.State == nokv.WorkspaceStateStaging {
		return observation{}, workspaceBusy(id)
	}
	if !ok || ws.State != nokv.WorkspaceStateVisible {
		return o, nil
	}
	o.ws = &ws
	v := &view{s: s, sn: sn, id: id, ws: ws}
	e, found, werr := v.entry(ctx, path)
	if werr != nil {
		return observation{}, werr
	}
	if found {
		o.entry = &e
	}
	return o, nil
}

// hasDescendant reports whether the observed workbench has an artifact
// strictly under path.
func (o observation) hasDescendant(ctx context.Context, s *Service, id string, path []string) (bool, *Error) {
	if o.ws == nil {
		return false, nil
	}
	v := &view{s: s, sn: o.sn, id: id, ws: *o.ws}
	return v.hasDescendant(ctx, path)
}

// Results shared by the write tools.

// fileResult starts a write tool's result: workbench_id, path, section and
// relative_path.
func (s *Service) fileResult(id string, path []string) map[string]any {
	section, rel := SplitSection(path)
	return map[string]any{
		"workbench_id":  id,
		"path":          PresentationPath(s.logical, id, path),
		"section":       section,
		"relative_path": LogicalPath(rel),
	}
}

// sortRevisions sorts revision ids ascending and drops duplicates.
func sortRevisions(ids []nokv.RevisionID) []nokv.RevisionID {
	slices.SortFunc(ids, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}
