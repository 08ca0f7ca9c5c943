package shards

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Shards is the number of shards of every family.
const Shards = 256

// Lengths of the seed's fixed-width ids.
const (
	idLen       = 16 // root, logical shard, incarnation, revision, operation
	commitIDLen = 32
)

// ReferenceKind discriminants of RevisionRef (seed enum registry).
const (
	refKindPath               = 1
	refKindCommit             = 2
	refKindRevisionDependency = 3
)

// shape says what this package checks of a family's record key and how it
// derives the shard key.
type shape struct {
	exact int // exact key length, or 0 when the length varies
	min   int // least key length
	// prefix, when non-zero, is the length of the key prefix that is the
	// shard key. Otherwise shardKey derives it, or the whole key is.
	prefix   int
	shardKey func(key []byte) ([]byte, string)
	// prefixKey returns the shard key shared by every key that begins with
	// p, if p determines one.
	prefixKey func(p []byte) ([]byte, bool)
}

var shapes = map[Family]shape{
	RootFence:                 {exact: idLen},
	WorkspaceCurrent:          {min: idLen + 1},
	PathCurrent:               {min: 2*idLen + 2, shardKey: pathCurrentShardKey},
	ArtifactRevision:          {exact: 2 * idLen},
	ArtifactManifest:          {exact: 2*idLen + 8, prefix: 2 * idLen},
	RevisionRef:               {min: idLen + 1 + idLen + idLen, shardKey: revisionRefShardKey, prefixKey: revisionRefPrefixKey},
	Commit:                    {exact: idLen + commitIDLen},
	CommitMember:              {min: idLen + commitIDLen + 2, prefix: idLen + commitIDLen, shardKey: commitMemberCheck},
	WorkbenchCommitHead:       {exact: 2 * idLen},
	Tag:                       {min: 2*idLen + 2, prefix: 2 * idLen, shardKey: nameKeyCheck},
	SnapshotRef:               {exact: 2*idLen + 8, prefix: 2 * idLen},
	SnapshotAlias:             {min: 2*idLen + 2, prefix: 2 * idLen, shardKey: nameKeyCheck},
	HistoryHold:               {min: idLen + 2},
	CommitConsumer:            {min: idLen + commitIDLen + 2, prefix: idLen + commitIDLen},
	SecondaryIndex:            {min: idLen + 4 + 1 + idLen + 2, shardKey: secondaryIndexShardKey, prefixKey: secondaryIndexPrefixKey},
	ChangeEvent:               {min: idLen + 8 + 1, shardKey: changeEventShardKey, prefixKey: changeEventPrefixKey},
	Operation:                 {exact: idLen + 1 + idLen},
	RestoreMember:             {min: 2*idLen + 1, prefix: 2 * idLen},
	StagedObject:              {min: 2*idLen + 1, prefix: 2 * idLen},
	CommandDedupe:             {min: idLen + 1},
	GcCandidate:               {min: 2*idLen + 1},
	GcBarrier:                 {exact: idLen},
	WorkspaceIncarnationClaim: {exact: 2 * idLen},
	System:                    {min: 1},
}

// ShardKey returns the part of a record key that selects its shard, after
// checking what the sharding needs of the key's shape. The result may alias
// key.
func ShardKey(f Family, key []byte) ([]byte, error) {
	s, ok := shapes[f]
	if !ok {
		return nil, fmt.Errorf("shards: shard key: family tag 0x%02x: %w", uint8(f), ErrUnknownFamily)
	}
	switch {
	case s.exact != 0 && len(key) != s.exact:
		return nil, keyErr(f, 0, fmt.Sprintf("%d bytes, want %d", len(key), s.exact))
	case len(key) < s.min:
		return nil, keyErr(f, 0, fmt.Sprintf("%d bytes, want at least %d", len(key), s.min))
	}
	sk := key
	if s.shardKey != nil {
		var reason string
		if sk, reason = s.shardKey(key); reason != "" {
			return nil, keyErr(f, 0, reason)
		}
	}
	if s.prefix != 0 {
		sk = key[:s.prefix]
	}
	return sk, nil
}

// ShardOf returns the shard index of a record key of family f: the first
// byte of SHA-256(tag || shard key).
func ShardOf(f Family, key []byte) (uint8, error) {
	sk, err := ShardKey(f, key)
	if err != nil {
		return 0, err
	}
	return HashShardKey(f, sk), nil
}

// HashShardKey returns the shard index of a shard key of family f. Callers
// that build a shard key themselves (such as the parent-directory prefix of
// a direct-child listing) use it to find the one shard to read.
func HashShardKey(f Family, shardKey []byte) uint8 {
	var buf [96]byte
	b := append(buf[:0], byte(f))
	b = append(b, shardKey...)
	sum := sha256.Sum256(b)
	return sum[0]
}

// PrefixShard reports whether every key of family f that begins with
// prefix falls in one shard, and which. When it does not (ok false), a scan
// of the prefix must merge the family's shards.
func PrefixShard(f Family, prefix []byte) (idx uint8, ok bool) {
	s, known := shapes[f]
	if !known {
		return 0, false
	}
	switch {
	case s.prefix != 0 && len(prefix) >= s.prefix:
		return HashShardKey(f, prefix[:s.prefix]), true
	case s.prefixKey != nil:
		if sk, ok := s.prefixKey(prefix); ok {
			return HashShardKey(f, sk), true
		}
	}
	return 0, false
}

func keyErr(f Family, off int, reason string) error {
	return &KeyError{Op: f.String() + " key", Offset: off, Reason: reason}
}

// checkPathBytes checks the byte structure of ordered, NUL-separated path
// components without decoding them: no empty component and no terminator
// byte inside. It returns the index of the last separator, or -1.
func checkPathBytes(b []byte) (lastSep int, reason string) {
	if len(b) == 0 {
		return -1, "empty path"
	}
	lastSep = -1
	for i, x := range b {
		switch x {
		case pathTerm:
			return -1, fmt.Sprintf("terminator inside path at %d", i)
		case pathSep:
			if i == lastSep+1 {
				return -1, fmt.Sprintf("empty path component at %d", i)
			}
			lastSep = i
		}
	}
	if lastSep == len(b)-1 {
		return -1, "empty last path component"
	}
	return lastSep, ""
}

// checkExactPath checks an exact-row path that ends the key at off.
func checkExactPath(key []byte, off int) (lastSep int, reason string) {
	p := key[off:]
	if len(p) == 0 || p[len(p)-1] != pathTerm {
		return -1, "path does not end with the terminator"
	}
	lastSep, reason = checkPathBytes(p[:len(p)-1])
	if reason != "" {
		return -1, reason
	}
	if lastSep >= 0 {
		lastSep += off
	}
	return lastSep, ""
}

// pathCurrentShardKey: root_id | incarnation | the ordered components of
// the parent directory, each followed by NUL. That is the key up to and
// including the path's last separator, or root_id | incarnation for a
// top-level entry.
func pathCurrentShardKey(key []byte) ([]byte, string) {
	lastSep, reason := checkExactPath(key, 2*idLen)
	if reason != "" {
		return nil, reason
	}
	if lastSep < 0 {
		return key[:2*idLen], ""
	}
	return key[:lastSep+1], ""
}

// commitMemberCheck checks the member's exact-row path.
func commitMemberCheck(key []byte) ([]byte, string) {
	if _, reason := checkExactPath(key, idLen+commitIDLen); reason != "" {
		return nil, reason
	}
	return key, ""
}

// nameKeyCheck checks root_id | incarnation | u16(len) | name.
func nameKeyCheck(key []byte) ([]byte, string) {
	n := int(binary.BigEndian.Uint16(key[2*idLen:]))
	if got := len(key) - 2*idLen - 2; got != n {
		return nil, fmt.Sprintf("name length %d, %d bytes follow", n, got)
	}
	return key, ""
}

// revisionOwnerEnd returns the end of root_id | kind | owner in b, reading
// the owner by its kind. complete is false when b ends inside the owner.
func revisionOwnerEnd(b []byte) (end int, complete bool, reason string) {
	if len(b) <= idLen {
		return 0, false, ""
	}
	off := idLen + 1
	switch b[idLen] {
	case refKindPath:
		if len(b) < off+idLen+4 {
			return 0, false, ""
		}
		n := int(binary.BigEndian.Uint32(b[off+idLen:]))
		start := off + idLen + 4
		if n > len(b)-start {
			return 0, false, ""
		}
		if _, reason := checkPathBytes(b[start : start+n]); reason != "" {
			return 0, false, reason
		}
		end = start + n
	case refKindCommit:
		end = off + commitIDLen
	case refKindRevisionDependency:
		end = off + idLen
	default:
		return 0, false, fmt.Sprintf("unknown reference kind %d", b[idLen])
	}
	if end > len(b) {
		return 0, false, ""
	}
	return end, true, ""
}

// revisionRefShardKey: root_id | reference_kind | reference_owner_id. The
// owner's encoding is discriminated by the kind; the artifact revision id
// that follows ends the key.
func revisionRefShardKey(key []byte) ([]byte, string) {
	end, complete, reason := revisionOwnerEnd(key)
	switch {
	case reason != "":
		return nil, reason
	case !complete:
		return nil, "truncated reference owner"
	case len(key)-end != idLen:
		return nil, fmt.Sprintf("%d bytes after the reference owner, want %d", len(key)-end, idLen)
	}
	return key[:end], ""
}

func revisionRefPrefixKey(p []byte) ([]byte, bool) {
	end, complete, reason := revisionOwnerEnd(p)
	if reason != "" || !complete {
		return nil, false
	}
	return p[:end], true
}

// secondaryIndexShardKey: root_id | index_id, where index_id is a general
// byte string (four-byte length). The encoded value that follows has no
// codec in the seed yet, so its end cannot be found here.
func secondaryIndexShardKey(key []byte) ([]byte, string) {
	n := int(binary.BigEndian.Uint32(key[idLen:]))
	if n == 0 {
		return nil, "empty index id"
	}
	end := idLen + 4 + n
	if end > len(key) || len(key)-end < idLen+2 {
		return nil, fmt.Sprintf("index id length %d leaves no room for the value, incarnation and path", n)
	}
	if key[len(key)-1] != pathTerm {
		return nil, "path does not end with the terminator"
	}
	return key[:end], ""
}

func secondaryIndexPrefixKey(p []byte) ([]byte, bool) {
	if len(p) < idLen+4 {
		return nil, false
	}
	n := int(binary.BigEndian.Uint32(p[idLen:]))
	end := idLen + 4 + n
	if n == 0 || end > len(p) {
		return nil, false
	}
	return p[:end], true
}

// changeEventShardKey: root_id | u64(commit_version >> 8), so 256
// consecutive commit versions share one shard.
func changeEventShardKey(key []byte) ([]byte, string) {
	v := binary.BigEndian.Uint64(key[idLen:])
	sk := make([]byte, idLen+8)
	copy(sk, key[:idLen])
	binary.BigEndian.PutUint64(sk[idLen:], v>>8)
	return sk, ""
}

// changeEventPrefixKey: a prefix holding root_id and the first seven bytes
// of the commit version fixes commit_version >> 8.
func changeEventPrefixKey(p []byte) ([]byte, bool) {
	if len(p) < idLen+7 {
		return nil, false
	}
	sk := make([]byte, idLen+8)
	copy(sk, p[:idLen])
	copy(sk[idLen+1:], p[idLen:idLen+7])
	return sk, true
}
