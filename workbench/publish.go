package workbench

// Body staging: how a publication gets its body into the bucket before the
// command that names it (publish_command.go): the staging ledger, the
// blocks, reading bodies back as a stream, and the body digest states an
// append extends.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding"
	"errors"
	"fmt"
	"hash"
	"math/rand/v2"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/manifests"
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
