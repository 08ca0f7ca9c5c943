package workbench

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

// casBackoff spaces the attempts of an edit or an append that lost its
// generation check to another writer.
var casBackoff = bucket.RetryPolicy{Base: 4 * time.Millisecond, Max: 64 * time.Millisecond}

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
	return digest.Hash(h.Sum(nil)).URI()
}
