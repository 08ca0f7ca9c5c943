package nokv

import (
	"fmt"

	"github.com/cairnstore/cairn/shards"
)

// Restore records: the Restore Operation row and the RestoreMember rows
// of one restore.

// Value versions of the restore records.
const (
	RestoreOperationVersion = 4 // the seed's RestoreOperation v4
	RestoreMemberVersion    = 1
)

// RestoreMemberKey is root_id | operation_id | u64(member_sequence): one
// restore's members in copy order, all in one shard.
type RestoreMemberKey struct {
	Root      RootID
	Operation OperationID
	Sequence  uint64
}

const recRestoreMemberKey = "restore_member key"

// Family returns FamilyRestoreMember.
func (RestoreMemberKey) Family() shards.Family { return FamilyRestoreMember }

// Encode returns the key's bytes.
func (k RestoreMemberKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Operation).U64(k.Sequence).Build()
}

// ParseRestoreMemberKey parses a RestoreMember key.
func ParseRestoreMemberKey(b []byte) (RestoreMemberKey, error) {
	r := shards.NewKeyReader(b)
	k := RestoreMemberKey{Root: r.ID16(), Operation: r.ID16(), Sequence: r.U64()}
	if err := r.End(); err != nil {
		return RestoreMemberKey{}, keyError("decode", recRestoreMemberKey, r.Offset(), err)
	}
	return k, nil
}

// RestoreMemberPrefix is the scan prefix of one restore's members.
func RestoreMemberPrefix(root RootID, op OperationID) []byte {
	b, _ := shards.NewKey().ID16(root).ID16(op).Build()
	return b
}

// RestoreMember is the value of a RestoreMember row (version 1):
//
//	path | revision [16] | path_generation u64 | row_digest [32]
//
// Path is the destination path; RowDigest binds the whole PathEntry the
// restore placed there, so a recheck can tell the row it wrote.
type RestoreMember struct {
	Path           []string
	Revision       RevisionID
	PathGeneration uint64
	RowDigest      [32]byte
}

const recRestoreMember = "restore_member value"

// Encode returns the value's bytes.
func (v RestoreMember) Encode() ([]byte, error) {
	w := newValueWriter(recRestoreMember, RestoreMemberVersion)
	w.path("path", v.Path)
	w.id16(v.Revision)
	w.u64(v.PathGeneration)
	w.id32(v.RowDigest)
	return w.finish()
}

// DecodeRestoreMember decodes a RestoreMember value.
func DecodeRestoreMember(b []byte) (RestoreMember, error) {
	r := newValueReader(recRestoreMember, b, RestoreMemberVersion)
	var v RestoreMember
	v.Path = r.path("path")
	v.Revision = r.id16()
	v.PathGeneration = r.u64()
	v.RowDigest = r.id32()
	if err := r.end(); err != nil {
		return RestoreMember{}, err
	}
	return v, nil
}

// RestoreResult is a completed restore's result.
type RestoreResult struct {
	DestinationGeneration uint64 // the destination's workspace revision
	CommitVersion         uint64 // the version of the final command
	Commit                CommitID
}

// RestoreOperation is the value of an Operation row of kind Restore
// (version 4):
//
//	phase u8 | identity_digest [32] | initialization_digest [32] |
//	source_workbench_id str | source_incarnation [16] | source_kind u8 |
//	source_snapshot? u64 | source_commit? [32] | source_read_version u64 |
//	destination_workbench_id str | destination_incarnation [16] |
//	destination_commit [32] | member_count u64 | member_cursor u64 |
//	member_digest [32] |
//	result? (destination_generation u64 | commit_version u64 | commit [32]) |
//	failure? (code str | message str) | created_version u64
//
// The source kind fixes which selector is present (Snapshot: the snapshot
// id, Commit: the commit id), so a replay answers without reading the
// source. MemberCount is the number of members the source holds;
// MemberCursor how many of them the copy batches placed; MemberDigest the
// chain over the RestoreMember rows placed so far (sealed at the end).
// SourceReadVersion is the snapshot's read version, 0 for a commit.
type RestoreOperation struct {
	Phase                  RestorePhase
	IdentityDigest         [32]byte
	InitializationDigest   [32]byte
	SourceWorkbenchID      string
	SourceIncarnation      IncarnationID
	SourceKind             RestoreSourceKind
	SourceSnapshot         *SnapshotID
	SourceCommit           *CommitID
	SourceReadVersion      uint64
	DestinationWorkbenchID string
	DestinationIncarnation IncarnationID
	DestinationCommit      CommitID
	MemberCount            uint64
	MemberCursor           uint64
	MemberDigest           [32]byte
	Result                 *RestoreResult
	Failure                *OperationFailure
	CreatedVersion         uint64
}

const recRestoreOperation = "operation value (restore)"

func (v RestoreOperation) reason() string {
	switch {
	case v.Result != nil && v.Failure != nil:
		return "both a result and a failure"
	case v.SourceKind == RestoreSourceKindSnapshot && (v.SourceSnapshot == nil || v.SourceCommit != nil),
		v.SourceKind == RestoreSourceKindCommit && (v.SourceCommit == nil || v.SourceSnapshot != nil):
		return fmt.Sprintf("%v source needs exactly its own selector", v.SourceKind)
	case v.MemberCursor > v.MemberCount:
		return fmt.Sprintf("member cursor %d past member count %d", v.MemberCursor, v.MemberCount)
	}
	return firstReason(workbenchIDReason(v.SourceWorkbenchID), workbenchIDReason(v.DestinationWorkbenchID))
}

// Encode returns the value's bytes.
func (v RestoreOperation) Encode() ([]byte, error) {
	w := newValueWriter(recRestoreOperation, RestoreOperationVersion)
	w.check(v.reason())
	w.enum("phase", &restorePhaseDef, uint8(v.Phase))
	w.id32(v.IdentityDigest)
	w.id32(v.InitializationDigest)
	w.str("source workbench id", v.SourceWorkbenchID)
	w.id16(v.SourceIncarnation)
	w.enum("source kind", &restoreSourceKindDef, uint8(v.SourceKind))
	w.present(v.SourceSnapshot != nil)
	if v.SourceSnapshot != nil {
		w.u64(uint64(*v.SourceSnapshot))
	}
	w.present(v.SourceCommit != nil)
	if v.SourceCommit != nil {
		w.id32(*v.SourceCommit)
	}
	w.u64(v.SourceReadVersion)
	w.str("destination workbench id", v.DestinationWorkbenchID)
	w.id16(v.DestinationIncarnation)
	w.id32(v.DestinationCommit)
	w.u64(v.MemberCount)
	w.u64(v.MemberCursor)
	w.id32(v.MemberDigest)
	w.present(v.Result != nil)
	if res := v.Result; res != nil {
		w.u64(res.DestinationGeneration)
		w.u64(res.CommitVersion)
		w.id32(res.Commit)
	}
	w.present(v.Failure != nil)
	if f := v.Failure; f != nil {
		w.str("failure code", f.Code)
		w.str("failure message", f.Message)
	}
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeRestoreOperation decodes the value of an Operation row of kind
// Restore.
func DecodeRestoreOperation(b []byte) (RestoreOperation, error) {
	r := newValueReader(recRestoreOperation, b, RestoreOperationVersion)
	var v RestoreOperation
	v.Phase = RestorePhase(r.enum("phase", &restorePhaseDef))
	v.IdentityDigest = r.id32()
	v.InitializationDigest = r.id32()
	v.SourceWorkbenchID = r.str("source workbench id")
	v.SourceIncarnation = r.id16()
	v.SourceKind = RestoreSourceKind(r.enum("source kind", &restoreSourceKindDef))
	if r.present() {
		id := SnapshotID(r.u64())
		v.SourceSnapshot = &id
	}
	if r.present() {
		c := CommitID(r.id32())
		v.SourceCommit = &c
	}
	v.SourceReadVersion = r.u64()
	v.DestinationWorkbenchID = r.str("destination workbench id")
	v.DestinationIncarnation = r.id16()
	v.DestinationCommit = r.id32()
	v.MemberCount = r.u64()
	v.MemberCursor = r.u64()
	v.MemberDigest = r.id32()
	if r.present() {
		v.Result = &RestoreResult{DestinationGeneration: r.u64(), CommitVersion: r.u64(), Commit: CommitID(r.id32())}
	}
	if r.present() {
		v.Failure = &OperationFailure{Code: r.str("failure code"), Message: r.str("failure message")}
	}
	v.CreatedVersion = r.u64()
	if r.err == nil {
		r.check(1, v.reason())
	}
	if err := r.end(); err != nil {
		return RestoreOperation{}, err
	}
	return v, nil
}
