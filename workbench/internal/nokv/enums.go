package nokv

import (
	"errors"
	"fmt"
)

// Durable enums: see the package comment, # Enums.

// ErrUnknownEnum is wrapped by every error for an enum discriminant the
// registry does not hold, whether met by Parse<Type> or by a record decoder.
var ErrUnknownEnum = errors.New("unknown enum value")

// EnumValue is one discriminant of a durable enum.
type EnumValue struct {
	Name  string
	Value uint8
}

// EnumType is one durable enum with its discriminants in ascending order.
type EnumType struct {
	Name   string
	Values []EnumValue
}

// enumDef names the discriminants of one enum: names[i] is the name of
// value i+1.
type enumDef struct {
	typ   string
	names []string
}

func (d *enumDef) valid(v uint8) bool { return v >= 1 && int(v) <= len(d.names) }

func (d *enumDef) name(v uint8) string {
	if d.valid(v) {
		return d.names[v-1]
	}
	return fmt.Sprintf("%s(%d)", d.typ, v)
}

func (d *enumDef) check(v uint8) error {
	if !d.valid(v) {
		return fmt.Errorf("nokv: parse %s %d: %w", d.typ, v, ErrUnknownEnum)
	}
	return nil
}

func (d *enumDef) export() EnumType {
	t := EnumType{Name: d.typ, Values: make([]EnumValue, len(d.names))}
	for i, n := range d.names {
		t.Values[i] = EnumValue{Name: n, Value: uint8(i + 1)}
	}
	return t
}

func parseEnum[T ~uint8](d *enumDef, v uint8) (T, error) {
	if err := d.check(v); err != nil {
		return 0, err
	}
	return T(v), nil
}

var (
	workspaceStateDef         = enumDef{"WorkspaceState", []string{"Staging", "Visible", "Retired"}}
	revisionStateDef          = enumDef{"RevisionState", []string{"Available", "Deleting", "Deleted", "Quarantined"}}
	commitStateDef            = enumDef{"CommitState", []string{"Sealed", "Retiring", "Retired"}}
	snapshotStateDef          = enumDef{"SnapshotState", []string{"Active", "ReapClaimed", "Reaped", "Retired"}}
	referenceKindDef          = enumDef{"ReferenceKind", []string{"Path", "Commit", "RevisionDependency"}}
	historyHoldKindDef        = enumDef{"HistoryHoldKind", []string{"Snapshot", "BuildCommit", "Restore"}}
	historyHoldStateDef       = enumDef{"HistoryHoldState", []string{"Active", "Releasing"}}
	rootActivationStateDef    = enumDef{"RootActivationState", []string{"Installing", "Active", "Draining", "Fenced"}}
	rootPlacementLifecycleDef = enumDef{"RootPlacementLifecycle", []string{"Provisioning", "Active", "Draining", "Retired"}}
	commitConsumerKindDef     = enumDef{"CommitConsumerKind", []string{"WorkbenchHead", "Tag", "Lease", "ChildCommit"}}
	restoreSourceKindDef      = enumDef{"RestoreSourceKind", []string{"Snapshot", "Commit"}}
	operationKindDef          = enumDef{"OperationKind", []string{"Publish", "BuildCommit", "Restore", "CommitRetire", "Gc"}}
	publishPhaseDef           = enumDef{"PublishPhase", []string{"Uploading", "Finalizing", "Published", "Aborting", "Cleaning", "Cleaned", "Quarantined"}}
	buildCommitPhaseDef       = enumDef{"BuildCommitPhase", []string{"Building", "Sealing", "Complete", "Aborting", "Cleaning", "Cleaned", "Quarantined"}}
	restorePhaseDef           = enumDef{"RestorePhase", []string{"Preparing", "Copying", "SourceSealed", "Ready", "Complete", "Aborting", "Cleaning", "Cleaned", "Quarantined"}}
	commitRetirePhaseDef      = enumDef{"CommitRetirePhase", []string{"Claiming", "Releasing", "Complete", "Quarantined"}}
	gcPhaseDef                = enumDef{"GcPhase", []string{"Queued", "Claimed", "Deleting", "Deleted", "Quarantined"}}
	stagedProviderStateDef    = enumDef{"StagedProviderState", []string{"Planned", "Uploading", "Uploaded", "AbortPending", "Aborted", "Ambiguous"}}
	stagedCleanupStateDef     = enumDef{"StagedCleanupState", []string{"Owned", "DeletePending", "Deleted", "Quarantined"}}
	gcClaimStateDef           = enumDef{"GcClaimState", []string{"Candidate", "Claimed", "Complete", "Quarantined"}}

	changeEventKindDef = enumDef{"ChangeEventKind", []string{
		"WorkspaceCreated", "PathCreated", "PathReplaced", "PathAppended", "PathRemoved",
		"WorkbenchCommitted", "WorkspaceRestored", "SnapshotMinted", "SnapshotRenewed",
		"SnapshotRetired", "SnapshotReaped",
	}}
)

// seedEnumDefs is the seed's registry in the seed's order.
var seedEnumDefs = []*enumDef{
	&workspaceStateDef, &revisionStateDef, &commitStateDef, &snapshotStateDef,
	&referenceKindDef, &historyHoldKindDef, &historyHoldStateDef,
	&rootActivationStateDef, &rootPlacementLifecycleDef, &commitConsumerKindDef,
	&restoreSourceKindDef, &operationKindDef, &publishPhaseDef, &buildCommitPhaseDef,
	&restorePhaseDef, &commitRetirePhaseDef, &gcPhaseDef, &stagedProviderStateDef,
	&stagedCleanupStateDef, &gcClaimStateDef,
}

// SeedEnums returns the seed schema's complete registry of initial durable
// enum discriminants, in the seed's order. The result is a fresh copy.
func SeedEnums() []EnumType {
	out := make([]EnumType, len(seedEnumDefs))
	for i, d := range seedEnumDefs {
		out[i] = d.export()
	}
	return out
}

// CairnEnums returns the durable enums cairn adds where the seed names a
// typed field but fixes no discriminants. The result is a fresh copy.
func CairnEnums() []EnumType {
	return []EnumType{changeEventKindDef.export()}
}

// WorkspaceState is WorkspaceCurrent's lifecycle: Visible is the
// publication marker and is terminal; Retired is reachable only from
// Staging.
type WorkspaceState uint8

// WorkspaceState discriminants.
const (
	WorkspaceStateStaging WorkspaceState = 1
	WorkspaceStateVisible WorkspaceState = 2
	WorkspaceStateRetired WorkspaceState = 3
)

func (v WorkspaceState) String() string { return workspaceStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v WorkspaceState) Valid() bool { return workspaceStateDef.valid(uint8(v)) }

// ParseWorkspaceState returns the WorkspaceState with discriminant b, or
// an error wrapping ErrUnknownEnum.
func ParseWorkspaceState(b uint8) (WorkspaceState, error) {
	return parseEnum[WorkspaceState](&workspaceStateDef, b)
}

// RevisionState is an ArtifactRevision's lifecycle.
type RevisionState uint8

// RevisionState discriminants.
const (
	RevisionStateAvailable   RevisionState = 1
	RevisionStateDeleting    RevisionState = 2
	RevisionStateDeleted     RevisionState = 3
	RevisionStateQuarantined RevisionState = 4
)

func (v RevisionState) String() string { return revisionStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v RevisionState) Valid() bool { return revisionStateDef.valid(uint8(v)) }

// ParseRevisionState returns the RevisionState with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParseRevisionState(b uint8) (RevisionState, error) {
	return parseEnum[RevisionState](&revisionStateDef, b)
}

// CommitState is a Commit's lifecycle.
type CommitState uint8

// CommitState discriminants.
const (
	CommitStateSealed   CommitState = 1
	CommitStateRetiring CommitState = 2
	CommitStateRetired  CommitState = 3
)

func (v CommitState) String() string { return commitStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v CommitState) Valid() bool { return commitStateDef.valid(uint8(v)) }

// ParseCommitState returns the CommitState with discriminant b, or an error
// wrapping ErrUnknownEnum.
func ParseCommitState(b uint8) (CommitState, error) {
	return parseEnum[CommitState](&commitStateDef, b)
}

// SnapshotState is a SnapshotRef's lifecycle.
type SnapshotState uint8

// SnapshotState discriminants.
const (
	SnapshotStateActive      SnapshotState = 1
	SnapshotStateReapClaimed SnapshotState = 2
	SnapshotStateReaped      SnapshotState = 3
	SnapshotStateRetired     SnapshotState = 4
)

func (v SnapshotState) String() string { return snapshotStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v SnapshotState) Valid() bool { return snapshotStateDef.valid(uint8(v)) }

// ParseSnapshotState returns the SnapshotState with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParseSnapshotState(b uint8) (SnapshotState, error) {
	return parseEnum[SnapshotState](&snapshotStateDef, b)
}

// ReferenceKind discriminates a RevisionRef's owner.
type ReferenceKind uint8

// ReferenceKind discriminants.
const (
	ReferenceKindPath               ReferenceKind = 1
	ReferenceKindCommit             ReferenceKind = 2
	ReferenceKindRevisionDependency ReferenceKind = 3
)

func (v ReferenceKind) String() string { return referenceKindDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v ReferenceKind) Valid() bool { return referenceKindDef.valid(uint8(v)) }

// ParseReferenceKind returns the ReferenceKind with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParseReferenceKind(b uint8) (ReferenceKind, error) {
	return parseEnum[ReferenceKind](&referenceKindDef, b)
}

// HistoryHoldKind says what owns a HistoryHold.
type HistoryHoldKind uint8

// HistoryHoldKind discriminants.
const (
	HistoryHoldKindSnapshot    HistoryHoldKind = 1
	HistoryHoldKindBuildCommit HistoryHoldKind = 2
	HistoryHoldKindRestore     HistoryHoldKind = 3
)

func (v HistoryHoldKind) String() string { return historyHoldKindDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v HistoryHoldKind) Valid() bool { return historyHoldKindDef.valid(uint8(v)) }

// ParseHistoryHoldKind returns the HistoryHoldKind with discriminant b, or
// an error wrapping ErrUnknownEnum.
func ParseHistoryHoldKind(b uint8) (HistoryHoldKind, error) {
	return parseEnum[HistoryHoldKind](&historyHoldKindDef, b)
}

// HistoryHoldState is a HistoryHold's lifecycle.
type HistoryHoldState uint8

// HistoryHoldState discriminants.
const (
	HistoryHoldStateActive    HistoryHoldState = 1
	HistoryHoldStateReleasing HistoryHoldState = 2
)

func (v HistoryHoldState) String() string { return historyHoldStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v HistoryHoldState) Valid() bool { return historyHoldStateDef.valid(uint8(v)) }

// ParseHistoryHoldState returns the HistoryHoldState with discriminant b,
// or an error wrapping ErrUnknownEnum.
func ParseHistoryHoldState(b uint8) (HistoryHoldState, error) {
	return parseEnum[HistoryHoldState](&historyHoldStateDef, b)
}

// RootActivationState is a RootFence's activation state.
type RootActivationState uint8

// RootActivationState discriminants.
const (
	RootActivationStateInstalling RootActivationState = 1
	RootActivationStateActive     RootActivationState = 2
	RootActivationStateDraining   RootActivationState = 3
	RootActivationStateFenced     RootActivationState = 4
)

func (v RootActivationState) String() string { return rootActivationStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v RootActivationState) Valid() bool { return rootActivationStateDef.valid(uint8(v)) }

// ParseRootActivationState returns the RootActivationState with
// discriminant b, or an error wrapping ErrUnknownEnum.
func ParseRootActivationState(b uint8) (RootActivationState, error) {
	return parseEnum[RootActivationState](&rootActivationStateDef, b)
}

// RootPlacementLifecycle is the control plane's RootPlacement lifecycle. It
// is not interchangeable with RootActivationState.
type RootPlacementLifecycle uint8

// RootPlacementLifecycle discriminants.
const (
	RootPlacementLifecycleProvisioning RootPlacementLifecycle = 1
	RootPlacementLifecycleActive       RootPlacementLifecycle = 2
	RootPlacementLifecycleDraining     RootPlacementLifecycle = 3
	RootPlacementLifecycleRetired      RootPlacementLifecycle = 4
)

func (v RootPlacementLifecycle) String() string { return rootPlacementLifecycleDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v RootPlacementLifecycle) Valid() bool { return rootPlacementLifecycleDef.valid(uint8(v)) }

// ParseRootPlacementLifecycle returns the RootPlacementLifecycle with
// discriminant b, or an error wrapping ErrUnknownEnum.
func ParseRootPlacementLifecycle(b uint8) (RootPlacementLifecycle, error) {
	return parseEnum[RootPlacementLifecycle](&rootPlacementLifecycleDef, b)
}

// CommitConsumerKind discriminates a CommitConsumer's owner.
type CommitConsumerKind uint8

// CommitConsumerKind discriminants.
const (
	CommitConsumerKindWorkbenchHead CommitConsumerKind = 1
	CommitConsumerKindTag           CommitConsumerKind = 2
	CommitConsumerKindLease         CommitConsumerKind = 3
	CommitConsumerKindChildCommit   CommitConsumerKind = 4
)

func (v CommitConsumerKind) String() string { return commitConsumerKindDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v CommitConsumerKind) Valid() bool { return commitConsumerKindDef.valid(uint8(v)) }

// ParseCommitConsumerKind returns the CommitConsumerKind with discriminant
// b, or an error wrapping ErrUnknownEnum.
func ParseCommitConsumerKind(b uint8) (CommitConsumerKind, error) {
	return parseEnum[CommitConsumerKind](&commitConsumerKindDef, b)
}

// RestoreSourceKind says what a restore reads from.
type RestoreSourceKind uint8

// RestoreSourceKind discriminants.
const (
	RestoreSourceKindSnapshot RestoreSourceKind = 1
	RestoreSourceKindCommit   RestoreSourceKind = 2
)

func (v RestoreSourceKind) String() string { return restoreSourceKindDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v RestoreSourceKind) Valid() bool { return restoreSourceKindDef.valid(uint8(v)) }

// ParseRestoreSourceKind returns the RestoreSourceKind with discriminant b,
// or an error wrapping ErrUnknownEnum.
func ParseRestoreSourceKind(b uint8) (RestoreSourceKind, error) {
	return parseEnum[RestoreSourceKind](&restoreSourceKindDef, b)
}

// OperationKind is the kind of a durable Operation; it is part of the
// Operation key.
type OperationKind uint8

// OperationKind discriminants.
const (
	OperationKindPublish      OperationKind = 1
	OperationKindBuildCommit  OperationKind = 2
	OperationKindRestore      OperationKind = 3
	OperationKindCommitRetire OperationKind = 4
	OperationKindGc           OperationKind = 5
)

func (v OperationKind) String() string { return operationKindDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v OperationKind) Valid() bool { return operationKindDef.valid(uint8(v)) }

// ParseOperationKind returns the OperationKind with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParseOperationKind(b uint8) (OperationKind, error) {
	return parseEnum[OperationKind](&operationKindDef, b)
}

// PublishPhase is a Publish operation's phase.
type PublishPhase uint8

// PublishPhase discriminants.
const (
	PublishPhaseUploading   PublishPhase = 1
	PublishPhaseFinalizing  PublishPhase = 2
	PublishPhasePublished   PublishPhase = 3
	PublishPhaseAborting    PublishPhase = 4
	PublishPhaseCleaning    PublishPhase = 5
	PublishPhaseCleaned     PublishPhase = 6
	PublishPhaseQuarantined PublishPhase = 7
)

func (v PublishPhase) String() string { return publishPhaseDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v PublishPhase) Valid() bool { return publishPhaseDef.valid(uint8(v)) }

// ParsePublishPhase returns the PublishPhase with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParsePublishPhase(b uint8) (PublishPhase, error) {
	return parseEnum[PublishPhase](&publishPhaseDef, b)
}

// BuildCommitPhase is a BuildCommit operation's phase.
type BuildCommitPhase uint8

// BuildCommitPhase discriminants.
const (
	BuildCommitPhaseBuilding    BuildCommitPhase = 1
	BuildCommitPhaseSealing     BuildCommitPhase = 2
	BuildCommitPhaseComplete    BuildCommitPhase = 3
	BuildCommitPhaseAborting    BuildCommitPhase = 4
	BuildCommitPhaseCleaning    BuildCommitPhase = 5
	BuildCommitPhaseCleaned     BuildCommitPhase = 6
	BuildCommitPhaseQuarantined BuildCommitPhase = 7
)

func (v BuildCommitPhase) String() string { return buildCommitPhaseDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v BuildCommitPhase) Valid() bool { return buildCommitPhaseDef.valid(uint8(v)) }

// ParseBuildCommitPhase returns the BuildCommitPhase with discriminant b,
// or an error wrapping ErrUnknownEnum.
func ParseBuildCommitPhase(b uint8) (BuildCommitPhase, error) {
	return parseEnum[BuildCommitPhase](&buildCommitPhaseDef, b)
}

// RestorePhase is a Restore operation's phase.
type RestorePhase uint8

// RestorePhase discriminants.
const (
	RestorePhasePreparing    RestorePhase = 1
	RestorePhaseCopying      RestorePhase = 2
	RestorePhaseSourceSealed RestorePhase = 3
	RestorePhaseReady        RestorePhase = 4
	RestorePhaseComplete     RestorePhase = 5
	RestorePhaseAborting     RestorePhase = 6
	RestorePhaseCleaning     RestorePhase = 7
	RestorePhaseCleaned      RestorePhase = 8
	RestorePhaseQuarantined  RestorePhase = 9
)

func (v RestorePhase) String() string { return restorePhaseDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v RestorePhase) Valid() bool { return restorePhaseDef.valid(uint8(v)) }

// ParseRestorePhase returns the RestorePhase with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParseRestorePhase(b uint8) (RestorePhase, error) {
	return parseEnum[RestorePhase](&restorePhaseDef, b)
}

// CommitRetirePhase is a CommitRetire operation's phase.
type CommitRetirePhase uint8

// CommitRetirePhase discriminants.
const (
	CommitRetirePhaseClaiming    CommitRetirePhase = 1
	CommitRetirePhaseReleasing   CommitRetirePhase = 2
	CommitRetirePhaseComplete    CommitRetirePhase = 3
	CommitRetirePhaseQuarantined CommitRetirePhase = 4
)

func (v CommitRetirePhase) String() string { return commitRetirePhaseDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v CommitRetirePhase) Valid() bool { return commitRetirePhaseDef.valid(uint8(v)) }

// ParseCommitRetirePhase returns the CommitRetirePhase with discriminant b,
// or an error wrapping ErrUnknownEnum.
func ParseCommitRetirePhase(b uint8) (CommitRetirePhase, error) {
	return parseEnum[CommitRetirePhase](&commitRetirePhaseDef, b)
}

// GcPhase is a Gc operation's phase.
type GcPhase uint8

// GcPhase discriminants.
const (
	GcPhaseQueued      GcPhase = 1
	GcPhaseClaimed     GcPhase = 2
	GcPhaseDeleting    GcPhase = 3
	GcPhaseDeleted     GcPhase = 4
	GcPhaseQuarantined GcPhase = 5
)

func (v GcPhase) String() string { return gcPhaseDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v GcPhase) Valid() bool { return gcPhaseDef.valid(uint8(v)) }

// ParseGcPhase returns the GcPhase with discriminant b, or an error
// wrapping ErrUnknownEnum.
func ParseGcPhase(b uint8) (GcPhase, error) {
	return parseEnum[GcPhase](&gcPhaseDef, b)
}

// StagedProviderState is what the object store is known to hold for a
// StagedObject.
type StagedProviderState uint8

// StagedProviderState discriminants.
const (
	StagedProviderStatePlanned      StagedProviderState = 1
	StagedProviderStateUploading    StagedProviderState = 2
	StagedProviderStateUploaded     StagedProviderState = 3
	StagedProviderStateAbortPending StagedProviderState = 4
	StagedProviderStateAborted      StagedProviderState = 5
	StagedProviderStateAmbiguous    StagedProviderState = 6
)

func (v StagedProviderState) String() string { return stagedProviderStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v StagedProviderState) Valid() bool { return stagedProviderStateDef.valid(uint8(v)) }

// ParseStagedProviderState returns the StagedProviderState with
// discriminant b, or an error wrapping ErrUnknownEnum.
func ParseStagedProviderState(b uint8) (StagedProviderState, error) {
	return parseEnum[StagedProviderState](&stagedProviderStateDef, b)
}

// StagedCleanupState is a StagedObject's cleanup ownership.
type StagedCleanupState uint8

// StagedCleanupState discriminants.
const (
	StagedCleanupStateOwned         StagedCleanupState = 1
	StagedCleanupStateDeletePending StagedCleanupState = 2
	StagedCleanupStateDeleted       StagedCleanupState = 3
	StagedCleanupStateQuarantined   StagedCleanupState = 4
)

func (v StagedCleanupState) String() string { return stagedCleanupStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v StagedCleanupState) Valid() bool { return stagedCleanupStateDef.valid(uint8(v)) }

// ParseStagedCleanupState returns the StagedCleanupState with discriminant
// b, or an error wrapping ErrUnknownEnum.
func ParseStagedCleanupState(b uint8) (StagedCleanupState, error) {
	return parseEnum[StagedCleanupState](&stagedCleanupStateDef, b)
}

// GcClaimState is a GcCandidate's claim state.
type GcClaimState uint8

// GcClaimState discriminants.
const (
	GcClaimStateCandidate   GcClaimState = 1
	GcClaimStateClaimed     GcClaimState = 2
	GcClaimStateComplete    GcClaimState = 3
	GcClaimStateQuarantined GcClaimState = 4
)

func (v GcClaimState) String() string { return gcClaimStateDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v GcClaimState) Valid() bool { return gcClaimStateDef.valid(uint8(v)) }

// ParseGcClaimState returns the GcClaimState with discriminant b, or an
// error wrapping ErrUnknownEnum.
func ParseGcClaimState(b uint8) (GcClaimState, error) {
	return parseEnum[GcClaimState](&gcClaimStateDef, b)
}

// ChangeEventKind is the typed event of a ChangeEvent. The seed names a
// "typed event" without fixing discriminants; these are cairn's, durable
// from ChangeEvent value version 2 on. Path kinds (PathCreated,
// PathReplaced, PathAppended, PathRemoved) carry the path they changed; the
// others concern the whole workbench.
type ChangeEventKind uint8

// ChangeEventKind discriminants.
const (
	ChangeEventKindWorkspaceCreated   ChangeEventKind = 1
	ChangeEventKindPathCreated        ChangeEventKind = 2
	ChangeEventKindPathReplaced       ChangeEventKind = 3
	ChangeEventKindPathAppended       ChangeEventKind = 4
	ChangeEventKindPathRemoved        ChangeEventKind = 5
	ChangeEventKindWorkbenchCommitted ChangeEventKind = 6
	ChangeEventKindWorkspaceRestored  ChangeEventKind = 7
	ChangeEventKindSnapshotMinted     ChangeEventKind = 8
	ChangeEventKindSnapshotRenewed    ChangeEventKind = 9
	ChangeEventKindSnapshotRetired    ChangeEventKind = 10
	ChangeEventKindSnapshotReaped     ChangeEventKind = 11
)

func (v ChangeEventKind) String() string { return changeEventKindDef.name(uint8(v)) }

// Valid reports whether v is a registered discriminant.
func (v ChangeEventKind) Valid() bool { return changeEventKindDef.valid(uint8(v)) }

// ParseChangeEventKind returns the ChangeEventKind with discriminant b, or
// an error wrapping ErrUnknownEnum.
func ParseChangeEventKind(b uint8) (ChangeEventKind, error) {
	return parseEnum[ChangeEventKind](&changeEventKindDef, b)
}

// IsPath reports whether events of kind v concern one path.
func (v ChangeEventKind) IsPath() bool {
	switch v {
	case ChangeEventKindPathCreated, ChangeEventKindPathReplaced, ChangeEventKindPathAppended, ChangeEventKindPathRemoved:
		return true
	}
	return false
}
