package workbench

import (
	"context"
	"fmt"
	"hash"

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
func init() { registerTool("workbench_append", (*Service).appendTool) }

// appendMaxAttempts bounds the generation CAS attempts of one append.
const appendMaxAttempts = 64

// appendInput is workbench_append's input.
type appendInput struct {
	targetInput
	payloadInput
}

func (in *appendInput) resolve(s *Service) *Error {
	if werr := in.targetInput.resolve(); werr != nil {
		return werr
	}
	return in.payloadInput.resolve(s.opts.MaxBytes)
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
	Success
	FileLocation
	AppendedBytes uint64 `json:"appended_bytes"`
	Created       bool   `json:"created"`    // whether the append created the path
	Digest        string `json:"digest"`     // the appended bytes' SHA-256
	Generation    uint64 `json:"generation"` // the path's generation after the append
	SizeBytes     uint64 `json:"size_bytes"` // the whole body's size after the append
}

func (s *Service) appendTool(ctx context.Context, in *appendInput) (*AppendResult, *Error) {
	return s.appendFile(ctx, in.id, in.path, in.body, in.contentType, in.ContentType != nil)
}

// appendState is one append's staged objects across its attempts.
type appendState struct {
	s     *Service
	id    string
	path  []string
	delta []byte
	own   *staging // the delta's own blocks
	remat *staging // a rematerialized body, tied to rematBase
	// rematBase is the revision the rematerialized body extends.
	rematBase nokv.RevisionID
}

// adopt follows a publication that staged its body again (publish): the
// staging it sent, sent, is now fresh.
func (st *appendState) adopt(sent, fresh *staging) {
	switch {
	case sent == fresh:
	case st.own == sent:
		st.own = fresh
	case st.remat == sent:
		st.remat = fresh
	}
}

// discard deletes every staged object but keep's.
func (st *appendState) discard(ctx context.Context, keep *staging) {
	for _, x := range []*staging{st.own, st.remat} {
		if x != nil && x != keep && x.staged {
			st.s.discardStaging(ctx, x)
		}
	}
}

func (s *Service) appendFile(ctx context.Context, id string, path []string, delta []byte, ct string, explicitCT bool) (*AppendResult, *Error) {
	as := &appendState{s: s, id: id, path: path, delta: delta}
	deltaDigest := DigestURI(delta)
	var lastErr *Error
	for attempt := range appendMaxAttempts {
		if attempt > 0 {
			if err := casBackoff.Wait(ctx, attempt-1, nil); err != nil {
				return nil, FromError(err)
			}
		}
		obs, werr := s.observe(ctx, id, path)
		if werr != nil {
			as.discard(ctx, nil)
			return nil, werr
		}
		p, h, werr := as.plan(ctx, obs, deltaDigest, ct, explicitCT)
		if werr != nil {
			as.discard(ctx, nil)
			return nil, werr
		}
		sent := p.st
		out, werr, rejected := s.publish(ctx, p)
		as.adopt(sent, p.st)
		if werr == nil {
			as.discard(ctx, p.st)
			rememberBody(s.root, p.st.rev, h, p.size)
			return &AppendResult{
				FileLocation:  s.fileLocation(id, path),
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
		if !isGenerationConflict(werr) {
			as.discard(ctx, nil)
			return nil, werr
		}
		lastErr = werr
		if p.st == as.remat {
			// A rematerialized body extends one base only.
			s.discardStaging(ctx, as.remat)
			as.remat = nil
		}
	}
	as.discard(ctx, nil)
	return nil, lastErr
}

// plan builds the publication of one attempt from what it observed, and
// returns it with the hash of the resulting whole body.
func (as *appendState) plan(ctx context.Context, obs observation, deltaDigest, ct string, explicitCT bool) (*pubPlan, hash.Hash, *Error) {
	s := as.s
	p := &pubPlan{
		tool:        "workbench_append",
		sn:          obs.sn,
		mode:        pubAppend,
		id:          as.id,
		path:        as.path,
		newInc:      nokv.NewIncarnationID(),
		base:        obs.entry,
		contentType: ct,
	}
	base := obs.entry
	if base == nil {
		// Create the path with the delta as its body.
		dir, werr := obs.isDirectory(ctx, s, as.id, as.path)
		if werr != nil {
			return nil, nil, werr
		}
		if dir {
			return nil, nil, NotArtifact(LogicalPath(as.path))
		}
		if werr := as.stageOwn(ctx); werr != nil {
			return nil, nil, werr
		}
		p.st = as.own
		p.size = uint64(len(as.delta))
		p.digest = deltaDigest
		p.rows = ownRows(as.own, 0, nil)
		return p, newBodyHash(as.delta), nil
	}
	if !explicitCT {
		p.contentType = base.ContentType
	}
	p.size = base.LogicalSize + uint64(len(as.delta))
	if p.size > uint64(s.opts.MaxBytes) {
		// Refused before anything is staged; a staging of an earlier
		// attempt is discarded by the caller.
		return nil, nil, ArtifactTooLarge(p.size, s.opts.MaxBytes)
	}
	seg := &nokv.AppendSegment{
		BaseGeneration: base.Generation,
		DeltaOffset:    base.LogicalSize,
		DeltaLength:    uint64(len(as.delta)),
		DeltaDigestURI: deltaDigest,
	}
	baseRows, werr := s.manifest(ctx, func(f shards.Family, prefix, after []byte) ([]shards.Record, error) {
		return obs.sn.Scan(ctx, f, prefix, after, 0)
	}, base.Revision)
	if werr != nil {
		return nil, nil, werr
	}
	var owners []nokv.RevisionID
	for _, r := range baseRows {
		owners = append(owners, r.PhysicalOwner)
	}
	owners = sortRevisions(owners)
	var depth uint32
	for _, o := range owners {
		key, err := nokv.ArtifactRevisionKey{Root: s.root, Revision: o}.Encode()
		if err != nil {
			return nil, nil, FromError(err)
		}
		b, ok, err := obs.sn.Get(ctx, nokv.FamilyArtifactRevision, key)
		if err != nil {
			return nil, nil, FromError(err)
		}
		if !ok {
			return nil, nil, InvalidState(fmt.Sprintf("artifact revision %s that %s reuses does not exist", o, LogicalPath(as.path)))
		}
		a, err := nokv.DecodeArtifactRevision(b)
		if err != nil {
			return nil, nil, FromError(err)
		}
		depth = max(depth, a.DependencyDepth+1)
	}

	if len(owners) > MaxDependencyOwners || depth > MaxDependencyDepth {
		h, werr := as.stageRemat(ctx, base, baseRows)
		if werr != nil {
			return nil, nil, werr
		}
		p.st = as.remat
		p.digest = digestURIOf(h)
		p.rows = ownRows(as.remat, 0, seg)
		return p, h, nil
	}

	h, werr := s.baseHash(ctx, base, baseRows)
	if werr != nil {
		return nil, nil, werr
	}
	h.Write(as.delta)
	if werr := as.stageOwn(ctx); werr != nil {
		return nil, nil, werr
	}
	p.st = as.own
	p.digest = digestURIOf(h)
	p.rows = append(append([]nokv.ArtifactManifestEntry(nil), baseRows...), ownRows(as.own, base.LogicalSize, seg)...)
	p.deps = owners
	p.depth = depth
	return p, h, nil
}

// stageOwn stages the delta's own blocks, once.
func (as *appendState) stageOwn(ctx context.Context) *Error {
	if as.own == nil {
		as.own = as.s.planStaging("workbench_append", as.id, as.path, as.delta)
	}
	return as.s.stageBytes(ctx, as.own, as.delta)
}

// baseHash returns the SHA-256 state after the whole body of base: the one
// this process remembers, or the one streaming its blocks gives, checked
// against the base's digest.
func (s *Service) baseHash(ctx context.Context, base *nokv.PathEntry, rows []nokv.ArtifactManifestEntry) (hash.Hash, *Error) {
	if h, ok := recallBody(s.root, base.Revision, base.LogicalSize); ok {
		return h, nil
	}
	h := newBodyHash(nil)
	var n uint64
	err := s.streamBody(ctx, rows, nil, func(b []byte) error {
		h.Write(b)
		n += uint64(len(b))
		return nil
	})
	if err != nil {
		return nil, FromError(err)
	}
	if n != base.LogicalSize || digestURIOf(h) != base.BodyDigestURI {
		return nil, InvalidState("stored data failed an integrity check")
	}
	rememberBody(s.root, base.Revision, h, n)
	return h, nil
}

// stageRemat stages the whole body, base then delta, as a fresh revision:
// inline when the whole is small, else as new blocks. For blocks a first
// pass over the base plans them (their lengths and digests, which the
// ledger needs), a second uploads them beside the ledger. It returns the
// hash of the whole body.
func (as *appendState) stageRemat(ctx context.Context, base *nokv.PathEntry, rows []nokv.ArtifactManifestEntry) (hash.Hash, *Error) {
	s := as.s
	if as.remat != nil && as.rematBase == base.Revision && as.remat.staged {
		h, werr := s.baseHash(ctx, base, rows)
		if werr != nil {
			return nil, werr
		}
		h.Write(as.delta)
		return h, nil
	}
	if as.remat != nil && as.remat.staged {
		s.discardStaging(ctx, as.remat)
	}
	st := newStaging("workbench_append", as.id, as.path)
	as.remat, as.rematBase = st, base.Revision
	inline := base.LogicalSize+uint64(len(as.delta)) <= uint64(max(s.opts.InlineMax, 0))

	// Pass one: plan the blocks (or gather the bytes) and hash the body.
	h := newBodyHash(nil)
	var n uint64
	var whole []byte
	plan := s.bodies.NewPlanner(s.root, st.rev)
	err := s.streamBody(ctx, rows, nil, func(b []byte) error {
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
		return nil, FromError(err)
	}
	if n != base.LogicalSize || digestURIOf(h) != base.BodyDigestURI {
		return nil, InvalidState("stored data failed an integrity check")
	}
	rememberBody(s.root, base.Revision, h, n)
	h.Write(as.delta)
	if inline {
		st.inline = append(whole, as.delta...)
		st.staged = true
		return h, nil
	}
	plan.Write(as.delta)
	st.blocks = plan.Blocks()

	// Pass two: the ledger and the blocks, cut from the body read again.
	st.produce = func(write func([]byte) error) error {
		if err := s.streamBody(ctx, rows, nil, write); err != nil {
			return err
		}
		return write(as.delta)
	}
	stamp, err := s.bodies.StageStream(ctx, s.objects(st), st.produce)
	if err != nil {
		return nil, FromError(err)
	}
	st.stamp, st.staged = stamp, true
	return h, nil
}
