package publish

import (
	"crypto/sha256"
	"encoding"
	"hash"
	"sync"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Body digests of publication: the SHA-256 states an append extends. The
// body's blocks and staging ledger belong to package manifests/bodies
// (staging.go converts its blocks to and from ArtifactManifest rows); the
// command that names them is in publish_command.go.

// Bounds of an append's dependency graph (the seed's "at most 64 distinct
// owner revisions" and "at most eight revisions deep").
const (
	MaxDependencyOwners = 64
	MaxDependencyDepth  = 8
)

// CasBackoff spaces the attempts of an edit or an append that lost its
// generation check to another writer.
var CasBackoff = bucket.RetryPolicy{Base: 4 * time.Millisecond, Max: 64 * time.Millisecond}

// Body digest states.

// BodyStates remembers the SHA-256 state of the bodies of revisions this
// process wrote or read, so that an append extends the whole-body digest
// without reading the base again. A revision's body never changes, so an
// entry never goes stale; the map is bounded and forgets the oldest.
var BodyStates = struct {
	sync.Mutex
	M     map[[32]byte]BodyState
	Order [][32]byte
}{M: map[[32]byte]BodyState{}}

const maxBodyStates = 4096

type BodyState struct {
	size  uint64
	state []byte
}

func bodyStateKey(root nokv.RootID, rev nokv.RevisionID) (k [32]byte) {
	copy(k[:16], root[:])
	copy(k[16:], rev[:])
	return k
}

// RememberBody records the state h reached after hashing the whole body
// of rev, size bytes.
func RememberBody(root nokv.RootID, rev nokv.RevisionID, h hash.Hash, size uint64) {
	m, ok := h.(encoding.BinaryMarshaler)
	if !ok {
		return
	}
	st, err := m.MarshalBinary()
	if err != nil {
		return
	}
	k := bodyStateKey(root, rev)
	BodyStates.Lock()
	defer BodyStates.Unlock()
	if _, dup := BodyStates.M[k]; dup {
		return
	}
	if len(BodyStates.Order) >= maxBodyStates {
		delete(BodyStates.M, BodyStates.Order[0])
		BodyStates.Order = BodyStates.Order[1:]
	}
	BodyStates.M[k] = BodyState{size: size, state: st}
	BodyStates.Order = append(BodyStates.Order, k)
}

// RecallBody returns a hash holding the state after the whole body of
// rev, if this process remembers it.
func RecallBody(root nokv.RootID, rev nokv.RevisionID, size uint64) (hash.Hash, bool) {
	BodyStates.Lock()
	st, ok := BodyStates.M[bodyStateKey(root, rev)]
	BodyStates.Unlock()
	if !ok || st.size != size {
		return nil, false
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st.state); err != nil {
		return nil, false
	}
	return h, true
}

// NewBodyHash returns a SHA-256 hash that has consumed body.
func NewBodyHash(body []byte) hash.Hash {
	h := sha256.New()
	h.Write(body)
	return h
}

// DigestURIOf renders a finished hash as a digest URI.
func DigestURIOf(h hash.Hash) string {
	return digest.Hash(h.Sum(nil)).URI()
}
