package nokv

import "fmt"

// ---------------------------------------------------------------------------
// Values

// OperationRef names an Operation row: its kind and id.
type OperationRef struct {
	Kind OperationKind
	ID   OperationID
}

// WorkspaceCurrent is the value of a WorkspaceCurrent row, the workbench's
// marker (version 2):
//
//	incarnation [16] | workspace_revision u64 | state u8 |
//	owner? (kind u8 | operation_id [16]) | created_version u64 | modified_version u64
type WorkspaceCurrent struct {
	Incarnation       IncarnationID
	WorkspaceRevision uint64
	State             WorkspaceState
	// Owner is the operation that owns a Staging marker (a restore), if any.
	Owner           *OperationRef
	CreatedVersion  uint64
	ModifiedVersion uint64
}

const recWorkspaceCurrent = "workspace_current value"

// Encode returns the value's bytes.
func (v WorkspaceCurrent) Encode() ([]byte, error) {
	w := newValueWriter(recWorkspaceCurrent, WorkspaceCurrentVersion)
	w.id16(v.Incarnation)
	w.u64(v.WorkspaceRevision)
	w.enum("state", &workspaceStateDef, uint8(v.State))
	w.present(v.Owner != nil)
	if v.Owner != nil {
		w.enum("owner kind", &operationKindDef, uint8(v.Owner.Kind))
		w.id16(v.Owner.ID)
	}
	w.u64(v.CreatedVersion)
	w.u64(v.ModifiedVersion)
	return w.finish()
}

// DecodeWorkspaceCurrent decodes a WorkspaceCurrent value.
func DecodeWorkspaceCurrent(b []byte) (WorkspaceCurrent, error) {
	r := newValueReader(recWorkspaceCurrent, b, WorkspaceCurrentVersion)
	var v WorkspaceCurrent
	v.Incarnation = r.id16()
	v.WorkspaceRevision = r.u64()
	v.State = WorkspaceState(r.enum("state", &workspaceStateDef))
	if r.present() {
		v.Owner = &OperationRef{Kind: OperationKind(r.enum("owner kind", &operationKindDef)), ID: r.id16()}
	}
	v.CreatedVersion = r.u64()
	v.ModifiedVersion = r.u64()
	if err := r.end(); err != nil {
		return WorkspaceCurrent{}, err
	}
	return v, nil
}

// WorkspaceIncarnationClaim is the value of a WorkspaceIncarnationClaim row
// (version 1): the stable workbench id, u32-length-prefixed.
type WorkspaceIncarnationClaim struct {
	WorkbenchID string
}

const recClaim = "workspace_incarnation_claim value"

// Encode returns the value's bytes.
func (v WorkspaceIncarnationClaim) Encode() ([]byte, error) {
	w := newValueWriter(recClaim, WorkspaceIncarnationClaimVersion)
	w.check(workbenchIDReason(v.WorkbenchID))
	w.str("workbench id", v.WorkbenchID)
	return w.finish()
}

// DecodeWorkspaceIncarnationClaim decodes a WorkspaceIncarnationClaim value.
func DecodeWorkspaceIncarnationClaim(b []byte) (WorkspaceIncarnationClaim, error) {
	r := newValueReader(recClaim, b, WorkspaceIncarnationClaimVersion)
	off := r.offset()
	v := WorkspaceIncarnationClaim{WorkbenchID: r.str("workbench id")}
	if r.err == nil {
		r.check(off, workbenchIDReason(v.WorkbenchID))
	}
	if err := r.end(); err != nil {
		return WorkspaceIncarnationClaim{}, err
	}
	return v, nil
}

// PathDirectory is the value of a PathDirectory row (version 1): the
// commit version that first placed an artifact below the directory.
//
//	created_version u64
type PathDirectory struct {
	CreatedVersion uint64
}

const recPathDirectory = "path_directory value"

// Encode returns the value's bytes.
func (v PathDirectory) Encode() ([]byte, error) {
	w := newValueWriter(recPathDirectory, PathDirectoryVersion)
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodePathDirectory decodes a PathDirectory value.
func DecodePathDirectory(b []byte) (PathDirectory, error) {
	r := newValueReader(recPathDirectory, b, PathDirectoryVersion)
	v := PathDirectory{CreatedVersion: r.u64()}
	if err := r.end(); err != nil {
		return PathDirectory{}, err
	}
	return v, nil
}

// PathEntry is the value of a PathCurrent row (version 2). It keeps every
// immutable revision field an exact stat or listing needs:
//
//	generation u64 | artifact_revision_id [16] | logical_size u64 |
//	body_digest_uri str | manifest_digest_uri str | dependency_count u32 |
//	dependency_depth u32 | content_type str | producer? str | manifest_id? str |
//	created_version u64 | modified_version u64 | index projection
type PathEntry struct {
	Generation        uint64
	Revision          RevisionID
	LogicalSize       uint64
	BodyDigestURI     string
	ManifestDigestURI string
	DependencyCount   uint32
	DependencyDepth   uint32
	ContentType       string
	Producer          *string
	ManifestID        *string
	CreatedVersion    uint64
	ModifiedVersion   uint64
	Index             IndexProjection
}

const recPathEntry = "path_current value"

// Encode returns the value's bytes.
func (v PathEntry) Encode() ([]byte, error) {
	w := newValueWriter(recPathEntry, PathEntryVersion)
	w.check(bodyReason(v.BodyDigestURI, v.ManifestDigestURI, v.ContentType))
	w.u64(v.Generation)
	w.id16(v.Revision)
	w.u64(v.LogicalSize)
	w.str("body digest uri", v.BodyDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.u32(v.DependencyCount)
	w.u32(v.DependencyDepth)
	w.str("content type", v.ContentType)
	w.optStr("producer", v.Producer)
	w.optStr("manifest id", v.ManifestID)
	w.u64(v.CreatedVersion)
	w.u64(v.ModifiedVersion)
	w.indexProjection(v.Index)
	return w.finish()
}

// DecodePathEntry decodes a PathCurrent value.
func DecodePathEntry(b []byte) (PathEntry, error) {
	r := newValueReader(recPathEntry, b, PathEntryVersion)
	var v PathEntry
	v.Generation = r.u64()
	v.Revision = r.id16()
	v.LogicalSize = r.u64()
	off := r.offset()
	v.BodyDigestURI = r.str("body digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.DependencyCount = r.u32()
	v.DependencyDepth = r.u32()
	v.ContentType = r.str("content type")
	if r.err == nil {
		r.check(off, bodyReason(v.BodyDigestURI, v.ManifestDigestURI, v.ContentType))
	}
	v.Producer = r.optStr("producer")
	v.ManifestID = r.optStr("manifest id")
	v.CreatedVersion = r.u64()
	v.ModifiedVersion = r.u64()
	v.Index = r.indexProjection()

	if err := r.end(); err != nil {
		return PathEntry{}, err
	}
	return v, nil
}

// ArtifactRevision is the value of an ArtifactRevision row (version 2):
//
//	logical_size u64 | body_digest_uri str | manifest_digest_uri str |
//	block_count u64 | dependency_count u32 | dependency_depth u32 |
//	dependency_digest [32] | content_type str | state u8 | reference_epoch u64 |
//	strong_reference_count u64 | last_zero_ref_version u64 | created_version u64
//
// LastZeroRefVersion is 0 while the count has never dropped to zero.
type ArtifactRevision struct {
	LogicalSize          uint64
	BodyDigestURI        string
	ManifestDigestURI    string
	BlockCount           uint64
	DependencyCount      uint32
	DependencyDepth      uint32
	DependencyDigest     [32]byte
	ContentType          string
	State                RevisionState
	ReferenceEpoch       uint64
	StrongReferenceCount uint64
	LastZeroRefVersion   uint64
	CreatedVersion       uint64
}

const recArtifactRevision = "artifact_revision value"

// Encode returns the value's bytes.
func (v ArtifactRevision) Encode() ([]byte, error) {
	w := newValueWriter(recArtifactRevision, ArtifactRevisionVersion)
	w.check(bodyReason(v.BodyDigestURI, v.ManifestDigestURI, v.ContentType))
	w.u64(v.LogicalSize)
	w.str("body digest uri", v.BodyDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.u64(v.BlockCount)
	w.u32(v.DependencyCount)
	w.u32(v.DependencyDepth)
	w.id32(v.DependencyDigest)
	w.str("content type", v.ContentType)
	w.enum("state", &revisionStateDef, uint8(v.State))
	w.u64(v.ReferenceEpoch)
	w.u64(v.StrongReferenceCount)
	w.u64(v.LastZeroRefVersion)
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeArtifactRevision decodes an ArtifactRevision value.
func DecodeArtifactRevision(b []byte) (ArtifactRevision, error) {
	r := newValueReader(recArtifactRevision, b, ArtifactRevisionVersion)
	var v ArtifactRevision
	v.LogicalSize = r.u64()
	off := r.offset()
	v.BodyDigestURI = r.str("body digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.BlockCount = r.u64()
	v.DependencyCount = r.u32()
	v.DependencyDepth = r.u32()
	v.DependencyDigest = r.id32()
	v.ContentType = r.str("content type")
	if r.err == nil {
		r.check(off, bodyReason(v.BodyDigestURI, v.ManifestDigestURI, v.ContentType))
	}
	v.State = RevisionState(r.enum("state", &revisionStateDef))
	v.ReferenceEpoch = r.u64()
	v.StrongReferenceCount = r.u64()
	v.LastZeroRefVersion = r.u64()
	v.CreatedVersion = r.u64()
	if err := r.end(); err != nil {
		return ArtifactRevision{}, err
	}
	return v, nil
}

// AppendSegment says which append produced a manifest row: the path
// generation the append extended, the delta's logical range in the
// resulting body and the delta's own digest (the Workbench append digest).
type AppendSegment struct {
	BaseGeneration uint64
	DeltaOffset    uint64
	DeltaLength    uint64
	DeltaDigestURI string
}

// ArtifactManifestEntry is the value of an ArtifactManifest row (version 2):
//
//	physical_owner_revision_id [16] | physical_object_index u64 | object_key str |
//	logical_offset u64 | object_offset u64 | length u64 | digest_uri str |
//	append? (base_generation u64 | delta_offset u64 | delta_length u64 | delta_digest_uri str) |
//	inline? (u32 len | bytes)
//
// PhysicalOwner and PhysicalObjectIndex name the block that holds the
// bytes; the key's object_index is only the row's position. An inline row
// is a block whose bytes live in the row instead of an object: Inline
// holds exactly Length (1 to MaxInlineBytes) bytes, ObjectKey is empty
// and ObjectOffset zero. Everything else (owner, index, offsets, digest,
// append segment) means what it means for a block.
type ArtifactManifestEntry struct {
	PhysicalOwner       RevisionID
	PhysicalObjectIndex uint64
	ObjectKey           string
	LogicalOffset       uint64
	ObjectOffset        uint64
	Length              uint64
	DigestURI           string
	Append              *AppendSegment
	Inline              []byte
}

// MaxInlineBytes bounds the bytes one inline ArtifactManifest row holds.
// Writers choose a smaller threshold (the Workbench inlines bodies of at
// most a few KiB); this is what a decoder accepts.
const MaxInlineBytes = 64 << 10

const recArtifactManifest = "artifact_manifest value"

// inlineReason checks the shape of a row's inline bytes against its other
// fields.
func (v ArtifactManifestEntry) inlineReason() string {
	if v.Inline == nil {
		return objectKeyReason(v.ObjectKey)
	}
	switch {
	case len(v.Inline) == 0 || len(v.Inline) > MaxInlineBytes:
		return fmt.Sprintf("inline body of %d bytes, want 1 to %d", len(v.Inline), MaxInlineBytes)
	case uint64(len(v.Inline)) != v.Length:
		return fmt.Sprintf("inline body of %d bytes, length says %d", len(v.Inline), v.Length)
	case v.ObjectKey != "" || v.ObjectOffset != 0:
		return "an inline row names an object"
	}
	return ""
}

// Encode returns the value's bytes.
func (v ArtifactManifestEntry) Encode() ([]byte, error) {
	w := newValueWriter(recArtifactManifest, ArtifactManifestVersion)
	w.check(firstReason(v.inlineReason(), digestURIReason("digest uri", v.DigestURI)))
	w.id16(v.PhysicalOwner)
	w.u64(v.PhysicalObjectIndex)
	w.str("object key", v.ObjectKey)
	w.u64(v.LogicalOffset)
	w.u64(v.ObjectOffset)
	w.u64(v.Length)
	w.str("digest uri", v.DigestURI)
	w.present(v.Append != nil)
	if a := v.Append; a != nil {
		w.check(digestURIReason("delta digest uri", a.DeltaDigestURI))
		w.u64(a.BaseGeneration)
		w.u64(a.DeltaOffset)
		w.u64(a.DeltaLength)
		w.str("delta digest uri", a.DeltaDigestURI)
	}
	w.present(v.Inline != nil)
	if v.Inline != nil {
		w.w.Bytes32(v.Inline)
	}
	return w.finish()
}

// DecodeArtifactManifestEntry decodes an ArtifactManifest value.
func DecodeArtifactManifestEntry(b []byte) (ArtifactManifestEntry, error) {
	r := newValueReader(recArtifactManifest, b, ArtifactManifestVersion)
	var v ArtifactManifestEntry
	v.PhysicalOwner = r.id16()
	v.PhysicalObjectIndex = r.u64()
	v.ObjectKey = r.str("object key")
	v.LogicalOffset = r.u64()
	v.ObjectOffset = r.u64()
	v.Length = r.u64()
	off := r.offset()
	v.DigestURI = r.str("digest uri")
	if r.err == nil {
		r.check(off, digestURIReason("digest uri", v.DigestURI))
	}
	if r.present() {
		a := &AppendSegment{BaseGeneration: r.u64(), DeltaOffset: r.u64(), DeltaLength: r.u64()}
		off = r.offset()
		a.DeltaDigestURI = r.str("delta digest uri")
		if r.err == nil {
			r.check(off, digestURIReason("delta digest uri", a.DeltaDigestURI))
		}
		v.Append = a
	}
	off = r.offset()
	if r.present() {
		b, _ := r.lenPrefixed("inline body")
		v.Inline = append([]byte{}, b...)
	}
	if r.err == nil {
		r.check(off, v.inlineReason())
	}
	if err := r.end(); err != nil {
		return ArtifactManifestEntry{}, err
	}
	return v, nil
}

// RevisionRef is the value of a RevisionRef row (version 1):
// reference_epoch_at_add u64 | created_version u64.
type RevisionRef struct {
	ReferenceEpochAtAdd uint64
	CreatedVersion      uint64
}

const recRevisionRef = "revision_ref value"

// Encode returns the value's bytes.
func (v RevisionRef) Encode() ([]byte, error) {
	w := newValueWriter(recRevisionRef, RevisionRefVersion)
	w.u64(v.ReferenceEpochAtAdd)
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeRevisionRef decodes a RevisionRef value.
func DecodeRevisionRef(b []byte) (RevisionRef, error) {
	r := newValueReader(recRevisionRef, b, RevisionRefVersion)
	v := RevisionRef{ReferenceEpochAtAdd: r.u64(), CreatedVersion: r.u64()}
	if err := r.end(); err != nil {
		return RevisionRef{}, err
	}
	return v, nil
}

// GcCandidate is the value of a GcCandidate row (version 1):
//
//	last_zero_ref_version u64 | claim u8 | attempts u32 | evidence? str
//
// Attempts counts deletion attempts; Evidence records why the candidate
// was retried or quarantined.
type GcCandidate struct {
	LastZeroRefVersion uint64
	Claim              GcClaimState
	Attempts           uint32
	Evidence           *string
}

const recGcCandidate = "gc_candidate value"

// Encode returns the value's bytes.
func (v GcCandidate) Encode() ([]byte, error) {
	w := newValueWriter(recGcCandidate, GcCandidateVersion)
	w.u64(v.LastZeroRefVersion)
	w.enum("claim", &gcClaimStateDef, uint8(v.Claim))
	w.u32(v.Attempts)
	w.optStr("evidence", v.Evidence)
	return w.finish()
}

// DecodeGcCandidate decodes a GcCandidate value.
func DecodeGcCandidate(b []byte) (GcCandidate, error) {
	r := newValueReader(recGcCandidate, b, GcCandidateVersion)
	var v GcCandidate
	v.LastZeroRefVersion = r.u64()
	v.Claim = GcClaimState(r.enum("claim", &gcClaimStateDef))
	v.Attempts = r.u32()
	v.Evidence = r.optStr("evidence")
	if err := r.end(); err != nil {
		return GcCandidate{}, err
	}
	return v, nil
}

// EventProjection is the compact state a ChangeEvent records before and
// after a change: for a path, its generation, revision, size and body
// digest; for a whole-workbench event, the workspace revision (or head
// generation) as Generation and, where there is one, a digest such as the
// tree digest. DigestURI is empty or a sha256 digest URI.
type EventProjection struct {
	Generation  uint64
	Revision    RevisionID
	LogicalSize uint64
	DigestURI   string
}

// ChangeEvent is the value of a ChangeEvent row (version 2):
//
//	workbench_id str | incarnation [16] | kind u8 | path? | before? projection |
//	after? projection | commit? [32] | snapshot? u64
//
// where a projection is generation u64 | revision [16] | logical_size u64 |
// digest_uri str. The kind fixes which optional fields exist: a path kind
// has a path and no commit or snapshot; PathCreated has only After,
// PathRemoved only Before, PathReplaced and PathAppended both.
// WorkbenchCommitted has a commit; the snapshot kinds have a snapshot;
// WorkspaceRestored has a commit or a snapshot (its source), not both;
// WorkspaceCreated has neither.
type ChangeEvent struct {
	WorkbenchID string
	Incarnation IncarnationID
	Kind        ChangeEventKind
	Path        []string
	Before      *EventProjection
	After       *EventProjection
	Commit      *CommitID
	Snapshot    *SnapshotID
}

const recChangeEvent = "change_event value"

// shapeReason returns why the optional fields do not fit the kind, or "".
func (v *ChangeEvent) shapeReason() string {
	if !v.Kind.Valid() {
		return ""
	}
	hasPath := v.Path != nil
	wantBefore, wantAfter := -1, -1 // -1: either, 0: absent, 1: present
	commit, snapshot := 0, 0        // 0: absent, 1: present, 2: one of them
	switch v.Kind {
	case ChangeEventKindPathCreated:
		wantBefore, wantAfter = 0, 1
	case ChangeEventKindPathReplaced, ChangeEventKindPathAppended:
		wantBefore, wantAfter = 1, 1
	case ChangeEventKindPathRemoved:
		wantBefore, wantAfter = 1, 0
	case ChangeEventKindWorkbenchCommitted:
		commit = 1
	case ChangeEventKindWorkspaceRestored:
		commit, snapshot = 2, 2
	case ChangeEventKindSnapshotMinted, ChangeEventKindSnapshotRenewed,
		ChangeEventKindSnapshotRetired, ChangeEventKindSnapshotReaped:
		snapshot = 1
	}
	has := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	switch {
	case hasPath != v.Kind.IsPath():
		return fmt.Sprintf("%v event with path present %t", v.Kind, hasPath)
	case wantBefore >= 0 && has(v.Before != nil) != wantBefore,
		wantAfter >= 0 && has(v.After != nil) != wantAfter:
		return fmt.Sprintf("%v event with before present %t and after present %t", v.Kind, v.Before != nil, v.After != nil)
	case commit == 2 && (v.Commit != nil) == (v.Snapshot != nil):
		return fmt.Sprintf("%v event needs exactly one of commit and snapshot", v.Kind)
	case commit != 2 && (has(v.Commit != nil) != commit || has(v.Snapshot != nil) != snapshot):
		return fmt.Sprintf("%v event with commit present %t and snapshot present %t", v.Kind, v.Commit != nil, v.Snapshot != nil)
	}
	return ""
}

func projectionReason(p *EventProjection) string {
	if p == nil || p.DigestURI == "" {
		return ""
	}
	return digestURIReason("event digest uri", p.DigestURI)
}

func (w *valueWriter) projection(p *EventProjection) {
	w.present(p != nil)
	if p != nil {
		w.check(projectionReason(p))
		w.u64(p.Generation)
		w.id16(p.Revision)
		w.u64(p.LogicalSize)
		w.str("event digest uri", p.DigestURI)
	}
}

func (r *valueReader) projection() *EventProjection {
	if !r.present() {
		return nil
	}
	p := &EventProjection{Generation: r.u64(), Revision: r.id16(), LogicalSize: r.u64()}
	off := r.offset()
	p.DigestURI = r.str("event digest uri")
	if r.err == nil {
		r.check(off, projectionReason(p))
	}
	return p
}

// Encode returns the value's bytes.
func (v ChangeEvent) Encode() ([]byte, error) {
	w := newValueWriter(recChangeEvent, ChangeEventVersion)
	w.check(workbenchIDReason(v.WorkbenchID))
	w.check(v.shapeReason())
	w.str("workbench id", v.WorkbenchID)
	w.id16(v.Incarnation)
	w.enum("kind", &changeEventKindDef, uint8(v.Kind))
	w.present(v.Path != nil)
	if v.Path != nil {
		w.path("path", v.Path)
	}
	w.projection(v.Before)
	w.projection(v.After)
	w.present(v.Commit != nil)
	if v.Commit != nil {
		w.id32(*v.Commit)
	}
	w.present(v.Snapshot != nil)
	if v.Snapshot != nil {
		w.u64(uint64(*v.Snapshot))
	}
	return w.finish()
}

// DecodeChangeEvent decodes a ChangeEvent value.
func DecodeChangeEvent(b []byte) (ChangeEvent, error) {
	r := newValueReader(recChangeEvent, b, ChangeEventVersion)
	var v ChangeEvent
	off := r.offset()
	v.WorkbenchID = r.str("workbench id")
	if r.err == nil {
		r.check(off, workbenchIDReason(v.WorkbenchID))
	}
	v.Incarnation = r.id16()
	v.Kind = ChangeEventKind(r.enum("kind", &changeEventKindDef))
	if r.present() {
		v.Path = r.path("path")
	}
	v.Before = r.projection()
	v.After = r.projection()
	if r.present() {
		c := CommitID(r.id32())
		v.Commit = &c
	}
	if r.present() {
		s := SnapshotID(r.u64())
		v.Snapshot = &s
	}
	if r.err == nil {
		r.check(1, v.shapeReason())
	}
	if err := r.end(); err != nil {
		return ChangeEvent{}, err
	}
	return v, nil
}
