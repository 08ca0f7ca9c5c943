package nokv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// The seed's History source-family tags, in tag order. command_dedupe
// (0x14) is the engine's (shards.CommandDedupe), as is system (0xf0).
const (
	FamilyRootFence                 shards.Family = 0x01
	FamilyWorkspaceCurrent          shards.Family = 0x02
	FamilyPathCurrent               shards.Family = 0x03
	FamilyArtifactRevision          shards.Family = 0x04
	FamilyArtifactManifest          shards.Family = 0x05
	FamilyRevisionRef               shards.Family = 0x06
	FamilyCommit                    shards.Family = 0x07
	FamilyCommitMember              shards.Family = 0x08
	FamilyWorkbenchCommitHead       shards.Family = 0x09
	FamilyTag                       shards.Family = 0x0a
	FamilySnapshotRef               shards.Family = 0x0b
	FamilySnapshotAlias             shards.Family = 0x0c
	FamilyHistoryHold               shards.Family = 0x0d
	FamilyCommitConsumer            shards.Family = 0x0e
	FamilySecondaryIndex            shards.Family = 0x0f
	FamilyChangeEvent               shards.Family = 0x10
	FamilyOperation                 shards.Family = 0x11
	FamilyRestoreMember             shards.Family = 0x12
	FamilyStagedObject              shards.Family = 0x13
	FamilyGcCandidate               shards.Family = 0x15
	FamilyGcBarrier                 shards.Family = 0x16
	FamilyWorkspaceIncarnationClaim shards.Family = 0x17
)

// Families of cairn's own, outside the seed's tag range: derived indexes
// of seed families that the engine's layout calls for. The seed's
// semantics do not change; these rows are kept complete by the same
// commands that write the rows they index.
const (
	// FamilyPathDirectory names each directory that has at least one
	// artifact below it: a derived index of PathCurrent, sharded like it
	// by parent directory, so that a direct-child listing reads one shard
	// of each (format 10).
	FamilyPathDirectory shards.Family = 0x40
	// FamilyLeaseClock holds each root's persisted lease clock, the
	// high-water mark of the wall time snapshot commands observed, that
	// snapshot leases are judged against (format 13). The seed keeps it
	// among the shard's own records; cairn's engine reserves its system
	// family, so the Workbench keeps it here.
	FamilyLeaseClock shards.Family = 0x41
)

// The schema marker: the seed's System("schema") record.
const (
	SchemaID           = "nokv_workspace"
	FormatVersion      = 13 // 13: lease_clock rows hold the snapshot lease clock; 12: tables carry small shard objects and page indexes inline (table format 3, index format 2); 11: publication writes secondary_index rows of built-in fields; 10: path_directory rows name the directories; 9: path_current's shard key leaves out the incarnation
	ValueFormatVersion = 7  // 7: a restore's copy commands place each family's rows in that family's key order (KeyOrderedRestoreFrom); 6: heads of format cairn.head.v3 say whether their writer carries other replicas' intents (CarrierFrom), and tables of format 4 carry each shard's last key (LastKeysFrom); 5: shard objects, delta segments and member-tree nodes are kept compressed (CompressFrom); 4: a commit's digests are its member tree's (Commit value 4) and it reads only what changed since its parent; 3: a commit keeps its members in a member tree (Commit value 3) in shards of this marker; 2: a manifest row may carry its body inline
)

// CompressFrom is the value format from which a shard keeps its shard
// objects, delta segments and member-tree nodes compressed
// (shards.Compress): a release that reads only plain objects refuses such
// a shard whole, by its marker.
const CompressFrom = 5

// KeyOrderedRestoreFrom is the value format from which a restore's copy
// commands place each family's rows in that family's own key order
// (history/restore_ordered.go): what a command writes at a given cursor
// differs from the member-ordered restore of the formats before, so a
// release of format 6 must not resume such a restore, and refuses the
// shard whole, by its marker.
const KeyOrderedRestoreFrom = 7

// CarrierFrom is the value format from which a shard's heads are of
// head.HeadFormat and say whether their writer lists other replicas'
// intents, so that a replica alone on its head skips the listing: a
// release that reads only the older head refuses such a shard whole, by
// its marker.
const CarrierFrom = 6

// LastKeysFrom is the value format from which a shard's tables carry each
// shard's last key (roots.TableFormat), so that a lookup of a new,
// time-ordered id reads no shard: a release that reads only the older
// table refuses such a shard whole, by its marker.
const LastKeysFrom = 6

// Lengths of the seed's fixed-width ids.
const (
	idLen       = 16 // root, logical shard, incarnation, revision, operation
	commitIDLen = 32
)

// shape says what the schema checks of a family's record key and how it
// derives the shard key.
type shape struct {
	exact int // exact key length, or 0 when the length varies
	min   int // least key length
	// prefix, when non-zero, is the length of the key prefix that is the
	// shard key. Otherwise shardKey derives it, or the whole key is.
	prefix   int
	shardKey func(key []byte) ([]byte, string)
	// lookup: the family is read by point lookups (and a revision's few
	// contiguous rows), never listed, so its pages are small
	// (shards.LookupPageBytes).
	lookup bool
	// prefixKey returns the shard key shared by every key that begins with
	// p, if p determines one.
	prefixKey func(p []byte) ([]byte, bool)
}

var families = []struct {
	f    shards.Family
	name string
	shape
}{
	{FamilyRootFence, "root_fence", shape{exact: idLen}},
	{FamilyWorkspaceCurrent, "workspace_current", shape{min: idLen + 1}},
	{FamilyPathCurrent, "path_current", shape{min: 2*idLen + 2, shardKey: pathCurrentShardKey}},
	{FamilyArtifactRevision, "artifact_revision", shape{exact: 2 * idLen, lookup: true}},
	{FamilyArtifactManifest, "artifact_manifest", shape{exact: 2*idLen + 8, prefix: 2 * idLen}},
	{FamilyRevisionRef, "revision_ref", shape{min: idLen + 1 + idLen + idLen, shardKey: revisionRefShardKey, prefixKey: revisionRefPrefixKey}},
	{FamilyCommit, "commit", shape{exact: idLen + commitIDLen, lookup: true}},
	{FamilyCommitMember, "commit_member", shape{min: idLen + commitIDLen + 2, prefix: idLen + commitIDLen, shardKey: commitMemberCheck}},
	{FamilyWorkbenchCommitHead, "workbench_commit_head", shape{exact: 2 * idLen, lookup: true}},
	{FamilyTag, "tag", shape{min: 2*idLen + 2, prefix: 2 * idLen, shardKey: nameKeyCheck}},
	{FamilySnapshotRef, "snapshot_ref", shape{exact: 2*idLen + 8, prefix: 2 * idLen}},
	{FamilySnapshotAlias, "snapshot_alias", shape{min: 2*idLen + 2, prefix: 2 * idLen, shardKey: nameKeyCheck}},
	{FamilyHistoryHold, "history_hold", shape{min: idLen + 2}},
	{FamilyCommitConsumer, "commit_consumer", shape{min: idLen + commitIDLen + 2, prefix: idLen + commitIDLen}},
	{FamilySecondaryIndex, "secondary_index", shape{min: idLen + 4 + 1 + idLen + 2, shardKey: secondaryIndexShardKey, prefixKey: secondaryIndexPrefixKey}},
	{FamilyChangeEvent, "change_event", shape{min: idLen + 8 + 1, shardKey: changeEventShardKey, prefixKey: changeEventPrefixKey}},
	{FamilyOperation, "operation", shape{exact: idLen + 1 + idLen, lookup: true}},
	{FamilyRestoreMember, "restore_member", shape{min: 2*idLen + 1, prefix: 2 * idLen}},
	{FamilyStagedObject, "staged_object", shape{min: 2*idLen + 1, prefix: 2 * idLen}},
	{FamilyGcCandidate, "gc_candidate", shape{min: 2*idLen + 1}},
	{FamilyGcBarrier, "gc_barrier", shape{exact: idLen}},
	{FamilyWorkspaceIncarnationClaim, "workspace_incarnation_claim", shape{exact: 2 * idLen}},
	{FamilyPathDirectory, "path_directory", shape{min: 2*idLen + 2, shardKey: pathCurrentShardKey}},
	{FamilyLeaseClock, "lease_clock", shape{exact: idLen}},
}

// Specs returns the specs of the NoKV families, in tag order, without the
// engine's own.
func Specs() []shards.FamilySpec {
	out := make([]shards.FamilySpec, len(families))
	for i, fam := range families {
		out[i] = fam.spec(fam.f, fam.name)
		out[i].Expire = expiryRules[fam.f]
	}
	return out
}

var registry = sync.OnceValue(func() *shards.Schema {
	s, err := shards.NewSchema(Specs()...)
	if err != nil {
		panic("nokv: " + err.Error()) // a static table; TestSchema covers it
	}
	return s
})

// Families returns the family registry of the NoKV schema: its families
// and the engine's.
func Families() *shards.Schema { return registry() }

// Schema returns what a Workbench shard is opened with: the NoKV families
// under the marker nokv_workspace (FormatVersion, ValueFormatVersion),
// compressing from CompressFrom, writing heads that say whether their
// writer carries from CarrierFrom and tables with last keys from
// LastKeysFrom.
func Schema() head.Schema {
	return head.Schema{
		Marker:       head.Marker{SchemaID: SchemaID, FormatVersion: FormatVersion, ValueFormatVersion: ValueFormatVersion},
		Families:     Families(),
		CompressFrom: CompressFrom,
		CarrierFrom:  CarrierFrom,
		LastKeysFrom: LastKeysFrom,
	}
}

// spec turns a shape into the engine's FamilySpec of family f.
func (s shape) spec(f shards.Family, name string) shards.FamilySpec {
	keyErr := func(reason string) error {
		return &shards.KeyError{Op: name + " key", Reason: reason}
	}
	spec := shards.FamilySpec{Family: f, Name: name}
	if s.lookup {
		spec.PageBytes = shards.LookupPageBytes
	}
	spec.ShardKey = func(key []byte) ([]byte, error) {
		switch {
		case s.exact != 0 && len(key) != s.exact:
			return nil, keyErr(fmt.Sprintf("%d bytes, want %d", len(key), s.exact))
		case len(key) < s.min:
			return nil, keyErr(fmt.Sprintf("%d bytes, want at least %d", len(key), s.min))
		}
		sk := key
		if s.shardKey != nil {
			var reason string
			if sk, reason = s.shardKey(key); reason != "" {
				return nil, keyErr(reason)
			}
		}
		if s.prefix != 0 {
			sk = key[:s.prefix]
		}
		return sk, nil
	}
	switch {
	case s.prefix != 0:
		spec.PrefixKey = func(p []byte) ([]byte, bool) {
			if len(p) < s.prefix {
				return nil, false
			}
			return p[:s.prefix], true
		}
	case s.prefixKey != nil:
		spec.PrefixKey = s.prefixKey
	}
	return spec
}

// keyPathReason returns the reason a path check failed, at its offset in the
// key.
func keyPathReason(err error, off int) string {
	var ke *shards.KeyError
	if errors.As(err, &ke) {
		return fmt.Sprintf("%s at %d", ke.Reason, off+ke.Offset)
	}
	return err.Error()
}

// checkExactPath checks an exact-row path that ends the key at off and
// returns the offset in key of the path's last separator, or -1.
func checkExactPath(key []byte, off int) (lastSep int, reason string) {
	lastSep, err := shards.CheckExactPath(key[off:])
	if err != nil {
		return -1, keyPathReason(err, off)
	}
	if lastSep >= 0 {
		lastSep += off
	}
	return lastSep, ""
}

// pathCurrentShardKey (path_current and path_directory): root_id | the
// ordered components of the parent
// directory, each followed by NUL (the key without its incarnation, up to
// and including the path's last separator; root_id alone for a top-level
// entry). The incarnation is left out so that a reader can fetch a path's
// shard in the same round as the workbench's marker, before it knows the
// incarnation (format 9; format 8 included it).
func pathCurrentShardKey(key []byte) ([]byte, string) {
	lastSep, reason := checkExactPath(key, 2*idLen)
	if reason != "" {
		return nil, reason
	}
	sk := append(make([]byte, 0, idLen+max(lastSep+1-2*idLen, 0)), key[:idLen]...)
	if lastSep >= 0 {
		sk = append(sk, key[2*idLen:lastSep+1]...)
	}
	return sk, ""
}

// PathCurrentShardKey returns the path_current shard key of the entries
// directly in directory dir (nil: the top level) of any incarnation of
// root: the shard a point read of dir's children reads. path_directory
// shares the rule: it is also the shard key of dir's subdirectories' rows.
func PathCurrentShardKey(root RootID, dir []string) ([]byte, error) {
	if len(dir) > 0 {
		if reason := pathReason(dir); reason != "" {
			return nil, keyFail("encode", "path_current shard key", 0, reason)
		}
	}
	return shards.NewKey().ID16(root).PathPrefix(dir).Build()
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
	switch ReferenceKind(b[idLen]) {
	case ReferenceKindPath:
		if len(b) < off+idLen+4 {
			return 0, false, ""
		}
		n := int(binary.BigEndian.Uint32(b[off+idLen:]))
		start := off + idLen + 4
		if n > len(b)-start {
			return 0, false, ""
		}
		if _, err := shards.CheckJoinedPath(b[start : start+n]); err != nil {
			return 0, false, keyPathReason(err, start)
		}
		end = start + n
	case ReferenceKindCommit:
		end = off + commitIDLen
	case ReferenceKindRevisionDependency:
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
	if key[len(key)-1] != shards.PathTerm {
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
