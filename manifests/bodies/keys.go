package bodies

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/shards"
)

// The keys of the objects this package owns: a body's blocks and the
// staging ledgers that name them before a commit does. The engine's
// layout (shards.Layout) formats only the engine's own keys; the sweep
// (package gcsweep) finds blocks and ledgers by these functions.

// ArtifactsPrefix returns "artifacts/{lsid}/", under which the blocks of
// shard l live. It lies outside the shard's prefix.
func ArtifactsPrefix(l shards.Layout) string { return "artifacts/" + l.ID().String() + "/" }

// BlockKey returns the key of block objectIndex of an artifact revision:
// "artifacts/{lsid}/{root_id}/{revision_id}/blocks/{object_index}", with
// the ids in lowercase hex and the index as 16 lowercase hex digits.
func BlockKey(l shards.Layout, rootID, revisionID [16]byte, objectIndex uint64) string {
	return fmt.Sprintf("%s%x/%x/blocks/%016x", ArtifactsPrefix(l), rootID, revisionID, objectIndex)
}

// IsBlockKey reports whether key is a block key of shard l in the one
// spelling BlockKey writes.
func IsBlockKey(l shards.Layout, key string) bool {
	rest, ok := strings.CutPrefix(key, ArtifactsPrefix(l))
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 4 && isLowerHex(parts[0], 32) && isLowerHex(parts[1], 32) && parts[2] == "blocks" && isLowerHex(parts[3], 16)
}

// TreePrefix returns the prefix of the member-tree nodes of a deployment
// root: "artifacts/{lsid}/{root_id}/trees/". A node's key is the prefix
// and the SHA-256 of its bytes in lowercase hex (package
// workbench/internal/tree).
func TreePrefix(l shards.Layout, rootID [16]byte) string {
	return fmt.Sprintf("%s%x/trees/", ArtifactsPrefix(l), rootID)
}

// IsTreeKey reports whether key is a tree node's key of shard l in the
// one spelling TreePrefix gives.
func IsTreeKey(l shards.Layout, key string) bool {
	rest, ok := strings.CutPrefix(key, ArtifactsPrefix(l))
	if !ok {
		return false
	}
	parts := strings.Split(rest, "/")
	return len(parts) == 3 && isLowerHex(parts[0], 32) && parts[1] == "trees" && isLowerHex(parts[2], 64)
}

// StagingPrefix returns the prefix of shard l's staging ledgers,
// "shards/{lsid}/staging/".
func StagingPrefix(l shards.Layout) string { return l.Prefix() + "staging/" }

// StagingKey returns the key of the staging ledger of a publish operation
// (16 bytes, lowercase hex): the durable list of every object the
// operation may upload, written before the first of them.
func StagingKey(l shards.Layout, operation [16]byte) string {
	return StagingPrefix(l) + hex.EncodeToString(operation[:])
}

func isLowerHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}
