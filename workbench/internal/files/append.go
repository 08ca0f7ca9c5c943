package files

import (
	"context"
	"fmt"
	"hash"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_append creates the path when it is missing (created:true) and
// otherwise appends after a generation CAS: the write names the generation
// it extended and, when another write moved the path meanwhile, observes
// again and retries, up to appendMaxAttempts times; then it fails with the
// last Conflict (retryable). PayloadTooLarge applies to the delta; an
// append whose result would be larger than MaxBytes is ResourceExhausted
// (ArtifactTooLarge), as the reference's backend refuses it, and changes
// nothing, so no artifact outgrows what read, grep and edit serve. digest is the
// SHA-256 of the appended bytes; the stored revision carries the whole
// body's digest. An explicit content_type becomes the artifact's content
// type; without one a new artifact gets the payload's default and an
// existing one keeps its own. A missing workbench is created by the same
// command.
//
// The delta's blocks are uploaded once and reused by every retry that
// extends a base with them; a rematerializing attempt (see publish.go)
// writes the whole body again and is tied to its base.
func init() { core.RegisterTool("workbench_append", appendTool) }

// appendMaxAttempts bounds the generation CAS attempts of one append.
const appendMaxAttempts = 64

// appendInput is workbench_append's input.
type appendInput struct {
	core.TargetInput
	core.PayloadInput
}

func (in *appendInput) Resolve(s *core.Service) *core.Error {
	if werr := in.TargetInput.Resolve(); werr != nil {
		return werr
	}
	return in.PayloadInput.Resolve(s.Opts.MaxBytes)
}

// AppendInput is workbench_append's input. Exactly one of Text and Base64
// is set; its strings must be valid UTF-8, as for PutFileInput.
type AppendInput struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Path    string `json:"path"` // relative to Section
	// Text is the appended bytes as UTF-8 text.
	Text *string `json:"text,omitempty"`
	// Base64 is the appended bytes in standard base64 with padding.
	Base64 *string `json:"base64,omitempty"`
	// ContentType, when set, becomes the artifact's content type; without
	// it a new artifact gets the payload's default and an existing one
	// keeps its own.
	ContentType *string `json:"content_type,omitempty"`
}

// AppendResult is workbench_append's result.
type AppendResult struct {
	core.Success
	core.FileLocation
	AppendedBytes uint64 `json:"appended_bytes"`
	Created       bool   `json:"created"`    // whether the append created the path
	Digest        string `json:"digest"`     // the appended bytes' SHA-256
	Generation    uint64 `json:"generation"` // the path's generation after the append
	SizeBytes     uint64 `json:"size_bytes"` // the whole body's size after the append
}

func appendTool(ctx context.Context, s *core.Service, in *appendInput) (*AppendResult, *core.Error) {
	return AppendFile(ctx, s, in.WorkbenchID, in.StoredPath, in.Body, in.ResolvedContentType, in.ContentType != nil)
}

// appendState is one append's staged objects across its attempts.
type appendState struct {
	s     *core.Service
	id    string
	path  []string
	delta []byte
	own   *publish.Staging // the delta's own blocks
	remat *publish.Staging // a rematerialized body, tied to rematBase
	// rematBase is the revision the rematerialized body extends.
	rematBase nokv.RevisionID
}

// adopt follows a publication that staged its body again (publish): the
// staging it sent, sent, is now fresh.
func (st *appendState) adopt(sent, fresh *publish.Staging) {
	switch {
	case sent == fresh:
	case st.own == sent:
		st.own = fresh
	case st.remat == sent:
		st.remat = fresh
	}
}

// discard deletes every staged object but keep's.
func (st *appendState) discard(ctx context.Context, keep *publish.Staging) {
	for _, x := range []*publish.Staging{st.own, st.remat} {
		if x != nil && x != keep && x.Staged {
			publish.DiscardStaging(ctx, st.s, x)
		}
	}
}

func AppendFile(ctx context.Context, s *core.Service, id string, path []string, delta []byte, ct string, explicitCT bool) (*AppendResult, *core.Error) {
	as := &appendState{s: s, id: id, path: path, delta: delta}
	deltaDigest := core.DigestURI(delta)
	var lastErr *core.Error
	for attempt := range appendMaxAttempts {
		if attempt > 0 {
			if err := publish.CasBackoff.Wait(ctx, attempt-1, nil); err != nil {
				return nil, core.FromError(err)
			}
		}
		obs, werr := s.Observe(ctx, id, path)
		if werr != nil {
			as.discard(ctx, nil)
			return nil, werr
		}
		p, h, werr := as.plan(ctx, obs, deltaDigest, ct, explicitCT)
		if werr != nil {
			as.discard(ctx, nil)
			return nil, werr
		}
		sent := p.St
		out, werr, rejected := publish.Publish(ctx, s, p)
		as.adopt(sent, p.St)
		if werr == nil {
			as.discard(ctx, p.St)
			publish.RememberBody(s.Root(), p.St.Rev, h, p.Size)
			return &AppendResult{
				FileLocation:  s.FileLocation(id, path),
				AppendedBytes: uint64(len(delta)),
				Created:       out.Created,
				Digest:        deltaDigest,
				Generation:    out.Generation,
				SizeBytes:     out.Size,
			}, nil
		}
		if !rejected {
			// The outcome may be unknown: the ledger stays the owner of
			// what was staged.
			return nil, werr
		}
		if !publish.IsGenerationConflict(werr) {
			as.discard(ctx, nil)
			return nil, werr
		}
		lastErr = werr
		if p.St == as.remat {
			// A rematerialized body extends one base only.
			publish.DiscardStaging(ctx, s, as.remat)
			as.remat = nil
		}
	}
	as.discard(ctx, nil)
	return nil, lastErr
}

// plan builds the publication of one attempt from what it observed, and
// returns it with the hash of the resulting whole body.
func (as *appendState) plan(ctx context.Context, obs core.Observation, deltaDigest, ct string, explicitCT bool) (*publish.PubPlan, hash.Hash, *core.Error) {
	s := as.s
	p := &publish.PubPlan{
		Tool:        "workbench_append",
		Sn:          obs.Sn,
		Mode:        publish.PubAppend,
		ID:          as.id,
		Path:        as.path,
		NewInc:      nokv.NewIncarnationID(),
		Base:        obs.Entry,
		ContentType: ct,
	}
	base := obs.Entry
	if base == nil {
		// Create the path with the delta as its body.
		dir, werr := obs.IsDirectory(ctx, s, as.id, as.path)
		if werr != nil {
			return nil, nil, werr
		}
		if dir {
			return nil, nil, core.NotArtifact(core.LogicalPath(as.path))
		}
		if werr := as.stageOwn(ctx); werr != nil {
			return nil, nil, werr
		}
		p.St = as.own
		p.Size = uint64(len(as.delta))
		p.Digest = deltaDigest
		p.Rows = publish.OwnRows(as.own, 0, nil)
		return p, publish.NewBodyHash(as.delta), nil
	}
	if !explicitCT {
		p.ContentType = base.ContentType
	}
	p.Size = base.LogicalSize + uint64(len(as.delta))
	if p.Size > uint64(s.Opts.MaxBytes) {
		// Refused before anything is staged; a staging of an earlier
		// attempt is discarded by the caller.
		return nil, nil, core.ArtifactTooLarge(p.Size, s.Opts.MaxBytes)
	}
	seg := &nokv.AppendSegment{
		BaseGeneration: base.Generation,
		DeltaOffset:    base.LogicalSize,
		DeltaLength:    uint64(len(as.delta)),
		DeltaDigestURI: deltaDigest,
	}
	baseRows, werr := s.Manifest(ctx, func(f shards.Family, prefix, after []byte) ([]shards.Record, error) {
		return obs.Sn.Scan(ctx, f, prefix, after, 0)
	}, base.Revision)
	if werr != nil {
		return nil, nil, werr
	}
	var owners []nokv.RevisionID
	for _, r := range baseRows {
		owners = append(owners, r.PhysicalOwner)
	}
	owners = core.SortRevisions(owners)
	var depth uint32
	for _, o := range owners {
		key, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: o}.Encode()
		if err != nil {
			return nil, nil, core.FromError(err)
		}
		b, ok, err := obs.Sn.Get(ctx, nokv.FamilyArtifactRevision, key)
		if err != nil {
			return nil, nil, core.FromError(err)
		}
		if !ok {
			return nil, nil, core.InvalidState(fmt.Sprintf("artifact revision %s that %s reuses does not exist", o, core.LogicalPath(as.path)))
		}
		a, err := nokv.DecodeArtifactRevision(b)
		if err != nil {
			return nil, nil, core.FromError(err)
		}
		depth = max(depth, a.DependencyDepth+1)
	}

	if len(owners) > publish.MaxDependencyOwners || depth > publish.MaxDependencyDepth {
		h, werr := as.stageRemat(ctx, base, baseRows)
		if werr != nil {
			return nil, nil, werr
		}
		p.St = as.remat
		p.Digest = publish.DigestURIOf(h)
		p.Rows = publish.OwnRows(as.remat, 0, seg)
		return p, h, nil
	}

	h, werr := baseHash(ctx, s, base, baseRows)
	if werr != nil {
		return nil, nil, werr
	}
	h.Write(as.delta)
	if werr := as.stageOwn(ctx); werr != nil {
		return nil, nil, werr
	}
	p.St = as.own
	p.Digest = publish.DigestURIOf(h)
	p.Rows = append(append([]nokv.ArtifactManifestEntry(nil), baseRows...), publish.OwnRows(as.own, base.LogicalSize, seg)...)
	p.Deps = owners
	p.Depth = depth
	return p, h, nil
}

// stageOwn stages the delta's own blocks, once.
func (as *appendState) stageOwn(ctx context.Context) *core.Error {
	if as.own == nil {
		as.own = publish.PlanStaging(as.s, "workbench_append", as.id, as.path, as.delta)
	}
	return publish.StageBytes(ctx, as.s, as.own, as.delta)
}

// baseHash returns the SHA-256 state after the whole body of base: the one
// this process remembers, or the one streaming its blocks gives, checked
// against the base's digest.
func baseHash(ctx context.Context, s *core.Service, base *nokv.PathEntry, rows []nokv.ArtifactManifestEntry) (hash.Hash, *core.Error) {
	if h, ok := publish.RecallBody(s.Root(), base.Revision, base.LogicalSize); ok {
		return h, nil
	}
	h := publish.NewBodyHash(nil)
	var n uint64
	err := s.StreamBody(ctx, rows, nil, func(b []byte) error {
		h.Write(b)
		n += uint64(len(b))
		return nil
	})
	if err != nil {
		return nil, core.FromError(err)
	}
	if n != base.LogicalSize || publish.DigestURIOf(h) != base.BodyDigestURI {
		return nil, core.InvalidState("stored data failed an integrity check")
	}
	publish.RememberBody(s.Root(), base.Revision, h, n)
	return h, nil
}

// stageRemat stages the whole body, base then delta, as a fresh revision:
// inline when the whole is small, else as new blocks. For blocks a first
// pass over the base plans them (their lengths and digests, which the
// ledger needs), a second uploads them beside the ledger. It returns the
// hash of the whole body.
func (as *appendState) stageRemat(ctx context.Context, base *nokv.PathEntry, rows []nokv.ArtifactManifestEntry) (hash.Hash, *core.Error) {
	s := as.s
	if as.remat != nil && as.rematBase == base.Revision && as.remat.Staged {
		h, werr := baseHash(ctx, s, base, rows)
		if werr != nil {
			return nil, werr
		}
		h.Write(as.delta)
		return h, nil
	}
	if as.remat != nil && as.remat.Staged {
		publish.DiscardStaging(ctx, s, as.remat)
	}
	st := publish.NewStaging(as.s, "workbench_append", as.id, as.path)
	as.remat, as.rematBase = st, base.Revision
	inline := base.LogicalSize+uint64(len(as.delta)) <= uint64(max(s.Opts.InlineMax, 0))

	// Pass one: plan the blocks (or gather the bytes) and hash the body.
	h := publish.NewBodyHash(nil)
	var n uint64
	var whole []byte
	plan := s.Bodies.NewPlanner(s.Root(), st.Rev)
	err := s.StreamBody(ctx, rows, nil, func(b []byte) error {
		h.Write(b)
		n += uint64(len(b))
		if inline {
			whole = append(whole, b...)
		} else {
			plan.Write(b)
		}
		return nil
	})
	if err != nil {
		return nil, core.FromError(err)
	}
	if n != base.LogicalSize || publish.DigestURIOf(h) != base.BodyDigestURI {
		return nil, core.InvalidState("stored data failed an integrity check")
	}
	publish.RememberBody(s.Root(), base.Revision, h, n)
	h.Write(as.delta)
	if inline {
		st.Inline = append(whole, as.delta...)
		st.Staged = true
		return h, nil
	}
	plan.Write(as.delta)
	st.Blocks = plan.Blocks()

	// Pass two: the ledger and the blocks, cut from the body read again.
	st.Produce = func(write func([]byte) error) error {
		if err := s.StreamBody(ctx, rows, nil, write); err != nil {
			return err
		}
		return write(as.delta)
	}
	stamp, err := s.Bodies.StageStream(ctx, publish.Objects(s, st), st.Produce)
	if err != nil {
		return nil, core.FromError(err)
	}
	st.Stamp, st.Staged = stamp, true
	return h, nil
}
