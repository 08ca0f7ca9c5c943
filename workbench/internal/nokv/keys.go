package nokv

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// ---------------------------------------------------------------------------
// Keys

// keyError turns a key builder or reader error into a RecordError.
func keyError(op, rec string, off int, err error) error {
	return &RecordError{Op: op, Record: rec, Offset: off, Reason: err.Error(), Err: err}
}

func keyFail(op, rec string, off int, reason string) error {
	return &RecordError{Op: op, Record: rec, Offset: off, Reason: reason}
}

// RootPrefix returns the key prefix every record of a root shares in every
// family: the root id itself.
func RootPrefix(root RootID) []byte { return bytes.Clone(root[:]) }

// WorkspaceCurrentKey is root_id | u32(len(workbench_id)) | workbench_id.
type WorkspaceCurrentKey struct {
	Root        RootID
	WorkbenchID string
}

const recWorkspaceCurrentKey = "workspace_current key"

// Family returns FamilyWorkspaceCurrent.
func (WorkspaceCurrentKey) Family() shards.Family { return FamilyWorkspaceCurrent }

// Encode returns the key's bytes.
func (k WorkspaceCurrentKey) Encode() ([]byte, error) {
	if reason := workbenchIDReason(k.WorkbenchID); reason != "" {
		return nil, keyFail("encode", recWorkspaceCurrentKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).String(k.WorkbenchID).Build()
}

// ParseWorkspaceCurrentKey parses a WorkspaceCurrent key.
func ParseWorkspaceCurrentKey(b []byte) (WorkspaceCurrentKey, error) {
	r := shards.NewKeyReader(b)
	k := WorkspaceCurrentKey{Root: r.ID16()}
	id := r.Bytes()
	if err := r.End(); err != nil {
		return WorkspaceCurrentKey{}, keyError("decode", recWorkspaceCurrentKey, r.Offset(), err)
	}
	if reason := workbenchIDReason(string(id)); reason != "" {
		return WorkspaceCurrentKey{}, keyFail("decode", recWorkspaceCurrentKey, 16, reason)
	}
	k.WorkbenchID = string(id)
	return k, nil
}

// WorkspaceIncarnationClaimKey is root_id | workspace_incarnation_id.
type WorkspaceIncarnationClaimKey struct {
	Root        RootID
	Incarnation IncarnationID
}

const recClaimKey = "workspace_incarnation_claim key"

// Family returns FamilyWorkspaceIncarnationClaim.
func (WorkspaceIncarnationClaimKey) Family() shards.Family { return FamilyWorkspaceIncarnationClaim }

// Encode returns the key's bytes.
func (k WorkspaceIncarnationClaimKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Build()
}

// ParseWorkspaceIncarnationClaimKey parses a WorkspaceIncarnationClaim key.
func ParseWorkspaceIncarnationClaimKey(b []byte) (WorkspaceIncarnationClaimKey, error) {
	r := shards.NewKeyReader(b)
	k := WorkspaceIncarnationClaimKey{Root: r.ID16(), Incarnation: r.ID16()}
	if err := r.End(); err != nil {
		return WorkspaceIncarnationClaimKey{}, keyError("decode", recClaimKey, r.Offset(), err)
	}
	return k, nil
}

// PathCurrentKey is root_id | workspace_incarnation_id | the exact-row
// encoding of the path (ordered components joined by NUL, then 0x01).
type PathCurrentKey struct {
	Root        RootID
	Incarnation IncarnationID
	Path        []string
}

const recPathCurrentKey = "path_current key"

// Family returns FamilyPathCurrent.
func (PathCurrentKey) Family() shards.Family { return FamilyPathCurrent }

// Encode returns the key's bytes.
func (k PathCurrentKey) Encode() ([]byte, error) {
	if reason := pathReason(k.Path); reason != "" {
		return nil, keyFail("encode", recPathCurrentKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Path(k.Path).Build()
}

// ParsePathCurrentKey parses a PathCurrent key.
func ParsePathCurrentKey(b []byte) (PathCurrentKey, error) {
	r := shards.NewKeyReader(b)
	k := PathCurrentKey{Root: r.ID16(), Incarnation: r.ID16()}
	k.Path = r.Path()
	if err := r.End(); err != nil {
		return PathCurrentKey{}, keyError("decode", recPathCurrentKey, r.Offset(), err)
	}
	if reason := pathReason(k.Path); reason != "" {
		return PathCurrentKey{}, keyFail("decode", recPathCurrentKey, 32, reason)
	}
	return k, nil
}

// PathCurrentPrefix returns the scan prefix of the paths strictly below
// directory dir of one incarnation; an empty dir covers the whole
// workspace. PathDirectoryKey shares the encoding, so the prefix serves
// path_directory too.
func PathCurrentPrefix(root RootID, inc IncarnationID, dir []string) ([]byte, error) {
	if len(dir) > 0 {
		if reason := pathReason(dir); reason != "" {
			return nil, keyFail("encode", "path_current prefix", 0, reason)
		}
	}
	return shards.NewKey().ID16(root).ID16(inc).PathPrefix(dir).Build()
}

// PathDirectoryKey is root_id | workspace_incarnation_id | the exact-row
// encoding of a directory's path, the PathCurrentKey encoding: a
// directory's row and an artifact's row at the same path have equal keys
// in their two families, and the subdirectories of a directory share a
// shard key with its files (PathCurrentShardKey).
type PathDirectoryKey struct {
	Root        RootID
	Incarnation IncarnationID
	Path        []string
}

const recPathDirectoryKey = "path_directory key"

// Family returns FamilyPathDirectory.
func (PathDirectoryKey) Family() shards.Family { return FamilyPathDirectory }

// Encode returns the key's bytes.
func (k PathDirectoryKey) Encode() ([]byte, error) {
	if reason := pathReason(k.Path); reason != "" {
		return nil, keyFail("encode", recPathDirectoryKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Path(k.Path).Build()
}

// ParsePathDirectoryKey parses a PathDirectory key.
func ParsePathDirectoryKey(b []byte) (PathDirectoryKey, error) {
	k, err := ParsePathCurrentKey(b)
	if err != nil {
		var re *RecordError
		if errors.As(err, &re) {
			re.Record = recPathDirectoryKey
		}
		return PathDirectoryKey{}, err
	}
	return PathDirectoryKey(k), nil
}

// ArtifactRevisionKey is root_id | artifact_revision_id.
type ArtifactRevisionKey struct {
	Root     RootID
	Revision RevisionID
}

const recArtifactRevisionKey = "artifact_revision key"

// Family returns FamilyArtifactRevision.
func (ArtifactRevisionKey) Family() shards.Family { return FamilyArtifactRevision }

// Encode returns the key's bytes.
func (k ArtifactRevisionKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Revision).Build()
}

// ParseArtifactRevisionKey parses an ArtifactRevision key.
func ParseArtifactRevisionKey(b []byte) (ArtifactRevisionKey, error) {
	r := shards.NewKeyReader(b)
	k := ArtifactRevisionKey{Root: r.ID16(), Revision: r.ID16()}
	if err := r.End(); err != nil {
		return ArtifactRevisionKey{}, keyError("decode", recArtifactRevisionKey, r.Offset(), err)
	}
	return k, nil
}

// ArtifactManifestKey is root_id | artifact_revision_id | u64(object_index),
// the ordered row position in the revision's manifest.
type ArtifactManifestKey struct {
	Root        RootID
	Revision    RevisionID
	ObjectIndex uint64
}

const recArtifactManifestKey = "artifact_manifest key"

// Family returns FamilyArtifactManifest.
func (ArtifactManifestKey) Family() shards.Family { return FamilyArtifactManifest }

// Encode returns the key's bytes.
func (k ArtifactManifestKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Revision).U64(k.ObjectIndex).Build()
}

// ParseArtifactManifestKey parses an ArtifactManifest key.
func ParseArtifactManifestKey(b []byte) (ArtifactManifestKey, error) {
	r := shards.NewKeyReader(b)
	k := ArtifactManifestKey{Root: r.ID16(), Revision: r.ID16(), ObjectIndex: r.U64()}
	if err := r.End(); err != nil {
		return ArtifactManifestKey{}, keyError("decode", recArtifactManifestKey, r.Offset(), err)
	}
	return k, nil
}

// ArtifactManifestPrefix returns the scan prefix of one revision's whole
// manifest, in object_index order.
func ArtifactManifestPrefix(root RootID, rev RevisionID) []byte {
	return append(bytes.Clone(root[:]), rev[:]...)
}

// RevisionRefKey is root_id | u8(reference_kind) | reference_owner_id |
// artifact_revision_id, where the owner is discriminated by the kind:
//
//	Path:               workspace_incarnation_id | u32(path_bytes) | ordered, NUL-separated path
//	Commit:             commit_id
//	RevisionDependency: child_artifact_revision_id
//
// Only the owner fields of Kind may be set; the others must be zero.
type RevisionRefKey struct {
	Root RootID
	Kind ReferenceKind
	// Path owner.
	Incarnation IncarnationID
	Path        []string
	// Commit owner.
	Commit CommitID
	// RevisionDependency owner.
	Child RevisionID
	// The referenced revision.
	Revision RevisionID
}

const recRevisionRefKey = "revision_ref key"

// PathRefKey returns the key of a Path reference.
func PathRefKey(root RootID, inc IncarnationID, path []string, rev RevisionID) RevisionRefKey {
	return RevisionRefKey{Root: root, Kind: ReferenceKindPath, Incarnation: inc, Path: path, Revision: rev}
}

// CommitRefKey returns the key of a Commit reference.
func CommitRefKey(root RootID, commit CommitID, rev RevisionID) RevisionRefKey {
	return RevisionRefKey{Root: root, Kind: ReferenceKindCommit, Commit: commit, Revision: rev}
}

// DependencyRefKey returns the key of a RevisionDependency reference that
// child holds on rev.
func DependencyRefKey(root RootID, child, rev RevisionID) RevisionRefKey {
	return RevisionRefKey{Root: root, Kind: ReferenceKindRevisionDependency, Child: child, Revision: rev}
}

// Family returns FamilyRevisionRef.
func (RevisionRefKey) Family() shards.Family { return FamilyRevisionRef }

func (k RevisionRefKey) owner(op string) (*shards.KeyBuilder, error) {
	b := shards.NewKey().ID16(k.Root).U8(uint8(k.Kind))
	var stray bool
	switch k.Kind {
	case ReferenceKindPath:
		if reason := pathReason(k.Path); reason != "" {
			return nil, keyFail(op, recRevisionRefKey, 0, reason)
		}
		b.ID16(k.Incarnation).LenPath(k.Path)
		stray = !k.Commit.IsZero() || !k.Child.IsZero()
	case ReferenceKindCommit:
		b.ID32(k.Commit)
		stray = !k.Incarnation.IsZero() || k.Path != nil || !k.Child.IsZero()
	case ReferenceKindRevisionDependency:
		b.ID16(k.Child)
		stray = !k.Incarnation.IsZero() || k.Path != nil || !k.Commit.IsZero()
	default:
		return nil, &RecordError{Op: op, Record: recRevisionRefKey, Reason: fmt.Sprintf("reference kind %d", k.Kind), Err: ErrUnknownEnum}
	}
	if stray {
		return nil, keyFail(op, recRevisionRefKey, 0, fmt.Sprintf("owner fields set that kind %v does not use", k.Kind))
	}
	return b, nil
}

// Encode returns the key's bytes.
func (k RevisionRefKey) Encode() ([]byte, error) {
	b, err := k.owner("encode")
	if err != nil {
		return nil, err
	}
	return b.ID16(k.Revision).Build()
}

// OwnerPrefix returns the scan prefix of every reference k's owner holds
// (root_id | kind | owner); k.Revision is ignored.
func (k RevisionRefKey) OwnerPrefix() ([]byte, error) {
	b, err := k.owner("encode")
	if err != nil {
		return nil, err
	}
	return b.Build()
}

// ParseRevisionRefKey parses a RevisionRef key.
func ParseRevisionRefKey(b []byte) (RevisionRefKey, error) {
	r := shards.NewKeyReader(b)
	k := RevisionRefKey{Root: r.ID16()}
	kindOff := r.Offset()
	kind := r.U8()
	if r.Err() == nil && !referenceKindDef.valid(kind) {
		return RevisionRefKey{}, &RecordError{Op: "decode", Record: recRevisionRefKey, Offset: kindOff,
			Reason: fmt.Sprintf("reference kind %d", kind), Err: ErrUnknownEnum}
	}
	k.Kind = ReferenceKind(kind)
	switch k.Kind {
	case ReferenceKindPath:
		k.Incarnation = r.ID16()
		k.Path = r.LenPath()
	case ReferenceKindCommit:
		k.Commit = r.ID32()
	case ReferenceKindRevisionDependency:
		k.Child = r.ID16()
	}
	k.Revision = r.ID16()
	if err := r.End(); err != nil {
		return RevisionRefKey{}, keyError("decode", recRevisionRefKey, r.Offset(), err)
	}
	if k.Kind == ReferenceKindPath {
		if reason := pathReason(k.Path); reason != "" {
			return RevisionRefKey{}, keyFail("decode", recRevisionRefKey, 33, reason)
		}
	}
	return k, nil
}

// GcCandidateKey is root_id | artifact_revision_id | u64(reference_epoch).
type GcCandidateKey struct {
	Root           RootID
	Revision       RevisionID
	ReferenceEpoch uint64
}

const recGcCandidateKey = "gc_candidate key"

// Family returns FamilyGcCandidate.
func (GcCandidateKey) Family() shards.Family { return FamilyGcCandidate }

// Encode returns the key's bytes.
func (k GcCandidateKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Revision).U64(k.ReferenceEpoch).Build()
}

// ParseGcCandidateKey parses a GcCandidate key.
func ParseGcCandidateKey(b []byte) (GcCandidateKey, error) {
	r := shards.NewKeyReader(b)
	k := GcCandidateKey{Root: r.ID16(), Revision: r.ID16(), ReferenceEpoch: r.U64()}
	if err := r.End(); err != nil {
		return GcCandidateKey{}, keyError("decode", recGcCandidateKey, r.Offset(), err)
	}
	return k, nil
}

// ChangeEventKey is root_id | u64(commit_version) | u32(event_sequence), so
// the family sorts in log order. The shards package places 256 consecutive
// commit versions of one root in one shard.
type ChangeEventKey struct {
	Root          RootID
	CommitVersion uint64
	Sequence      uint32
}

const recChangeEventKey = "change_event key"

// Family returns FamilyChangeEvent.
func (ChangeEventKey) Family() shards.Family { return FamilyChangeEvent }

// Encode returns the key's bytes.
func (k ChangeEventKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).U64(k.CommitVersion).U32(k.Sequence).Build()
}

// ParseChangeEventKey parses a ChangeEvent key.
func ParseChangeEventKey(b []byte) (ChangeEventKey, error) {
	r := shards.NewKeyReader(b)
	k := ChangeEventKey{Root: r.ID16(), CommitVersion: r.U64(), Sequence: r.U32()}
	if err := r.End(); err != nil {
		return ChangeEventKey{}, keyError("decode", recChangeEventKey, r.Offset(), err)
	}
	return k, nil
}

// ChangeEventVersionPrefix returns the scan prefix of the events of one
// commit version, in sequence order.
func ChangeEventVersionPrefix(root RootID, commitVersion uint64) []byte {
	return wire.NewWriter(bytes.Clone(root[:])).U64(commitVersion).Bytes()
}

// OperationKey is root_id | u8(operation_kind) | operation_id.
type OperationKey struct {
	Root RootID
	Kind OperationKind
	ID   OperationID
}

const recOperationKey = "operation key"

// Family returns FamilyOperation.
func (OperationKey) Family() shards.Family { return FamilyOperation }

// Encode returns the key's bytes.
func (k OperationKey) Encode() ([]byte, error) {
	if !k.Kind.Valid() {
		return nil, &RecordError{Op: "encode", Record: recOperationKey, Reason: fmt.Sprintf("operation kind %d", k.Kind), Err: ErrUnknownEnum}
	}
	return shards.NewKey().ID16(k.Root).U8(uint8(k.Kind)).ID16(k.ID).Build()
}

// ParseOperationKey parses an Operation key.
func ParseOperationKey(b []byte) (OperationKey, error) {
	r := shards.NewKeyReader(b)
	k := OperationKey{Root: r.ID16()}
	kind := r.U8()
	k.ID = r.ID16()
	if err := r.End(); err != nil {
		return OperationKey{}, keyError("decode", recOperationKey, r.Offset(), err)
	}
	if !operationKindDef.valid(kind) {
		return OperationKey{}, &RecordError{Op: "decode", Record: recOperationKey, Offset: 16,
			Reason: fmt.Sprintf("operation kind %d", kind), Err: ErrUnknownEnum}
	}
	k.Kind = OperationKind(kind)
	return k, nil
}

// StagedObjectKey is root_id | publish_operation_id | u64(object_sequence).
type StagedObjectKey struct {
	Root      RootID
	Operation OperationID
	Sequence  uint64
}

const recStagedObjectKey = "staged_object key"

// Family returns FamilyStagedObject.
func (StagedObjectKey) Family() shards.Family { return FamilyStagedObject }

// Encode returns the key's bytes.
func (k StagedObjectKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Operation).U64(k.Sequence).Build()
}

// ParseStagedObjectKey parses a StagedObject key.
func ParseStagedObjectKey(b []byte) (StagedObjectKey, error) {
	r := shards.NewKeyReader(b)
	k := StagedObjectKey{Root: r.ID16(), Operation: r.ID16(), Sequence: r.U64()}
	if err := r.End(); err != nil {
		return StagedObjectKey{}, keyError("decode", recStagedObjectKey, r.Offset(), err)
	}
	return k, nil
}

// StagedObjectPrefix returns the scan prefix of one publication's staging
// ledger, in object_sequence order.
func StagedObjectPrefix(root RootID, op OperationID) []byte {
	return append(bytes.Clone(root[:]), op[:]...)
}

// SecondaryIndexKey is root_id | u32(len(index_id)) | index_id |
// encoded_value | workspace_incarnation_id | exact-row path, with the value
// in the index scalar codec. Because that codec is self-delimiting and
// order-preserving, one index's rows sort by value, then incarnation, then
// path.
type SecondaryIndexKey struct {
	Root        RootID
	IndexID     string
	Value       IndexScalar
	Incarnation IncarnationID
	Path        []string
}

const recSecondaryIndexKey = "secondary_index key"

// Family returns FamilySecondaryIndex.
func (SecondaryIndexKey) Family() shards.Family { return FamilySecondaryIndex }

// Encode returns the key's bytes.
func (k SecondaryIndexKey) Encode() ([]byte, error) {
	kb, err := k.value()
	if err != nil {
		return nil, err
	}
	if reason := pathReason(k.Path); reason != "" {
		return nil, keyFail("encode", recSecondaryIndexKey, 0, reason)
	}
	return kb.ID16(k.Incarnation).Path(k.Path).Build()
}

// value returns a builder holding the key's prefix up to its value.
func (k SecondaryIndexKey) value() (*shards.KeyBuilder, error) {
	if reason := indexFieldIDReason(k.IndexID); reason != "" {
		return nil, keyFail("encode", recSecondaryIndexKey, 0, reason)
	}
	v, err := EncodeIndexScalar(k.Value)
	if err != nil {
		return nil, err
	}
	return shards.NewKey().ID16(k.Root).String(k.IndexID).Raw(v), nil
}

func (k SecondaryIndexKey) valuePrefix() ([]byte, error) {
	kb, err := k.value()
	if err != nil {
		return nil, err
	}
	return kb.Build()
}

// SecondaryIndexPrefix returns the scan prefix of one whole index.
func SecondaryIndexPrefix(root RootID, indexID string) ([]byte, error) {
	if reason := indexFieldIDReason(indexID); reason != "" {
		return nil, keyFail("encode", "secondary_index prefix", 0, reason)
	}
	return shards.NewKey().ID16(root).String(indexID).Build()
}

// SecondaryIndexValuePrefix returns the scan prefix of the rows of one index
// whose value is exactly v.
func SecondaryIndexValuePrefix(root RootID, indexID string, v IndexScalar) ([]byte, error) {
	return SecondaryIndexKey{Root: root, IndexID: indexID, Value: v}.valuePrefix()
}

// ParseSecondaryIndexKey parses a SecondaryIndex key.
func ParseSecondaryIndexKey(b []byte) (SecondaryIndexKey, error) {
	r := shards.NewKeyReader(b)
	k := SecondaryIndexKey{Root: r.ID16()}
	id := r.Bytes()
	if r.Err() != nil {
		return SecondaryIndexKey{}, keyError("decode", recSecondaryIndexKey, r.Offset(), r.Err())
	}
	if reason := indexFieldIDReason(string(id)); reason != "" {
		return SecondaryIndexKey{}, keyFail("decode", recSecondaryIndexKey, 16, reason)
	}
	k.IndexID = string(id)
	off := r.Offset()
	v, n, err := DecodeIndexScalar(b[off:])
	if err != nil {
		return SecondaryIndexKey{}, &RecordError{Op: "decode", Record: recSecondaryIndexKey, Offset: off, Reason: err.Error(), Err: err}
	}
	k.Value = v
	r = shards.NewKeyReader(b[off+n:])
	k.Incarnation = r.ID16()
	k.Path = r.Path()
	if err := r.End(); err != nil {
		return SecondaryIndexKey{}, keyError("decode", recSecondaryIndexKey, off+n+r.Offset(), err)
	}
	if reason := pathReason(k.Path); reason != "" {
		return SecondaryIndexKey{}, keyFail("decode", recSecondaryIndexKey, off+n+16, reason)
	}
	return k, nil
}
