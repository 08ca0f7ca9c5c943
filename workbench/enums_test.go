package workbench_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// seedEnumText is the seed schema's "Initial durable enum discriminants"
// section, verbatim. The registry must match it exactly.
const seedEnumText = `
WorkspaceState:  Staging=1, Visible=2, Retired=3
RevisionState:   Available=1, Deleting=2, Deleted=3, Quarantined=4
CommitState:     Sealed=1, Retiring=2, Retired=3
SnapshotState:   Active=1, ReapClaimed=2, Reaped=3, Retired=4
ReferenceKind:   Path=1, Commit=2, RevisionDependency=3
HistoryHoldKind: Snapshot=1, BuildCommit=2, Restore=3
HistoryHoldState: Active=1, Releasing=2
RootActivationState: Installing=1, Active=2, Draining=3, Fenced=4
RootPlacementLifecycle: Provisioning=1, Active=2, Draining=3, Retired=4
CommitConsumerKind: WorkbenchHead=1, Tag=2, Lease=3, ChildCommit=4
RestoreSourceKind: Snapshot=1, Commit=2
OperationKind:   Publish=1, BuildCommit=2, Restore=3, CommitRetire=4, Gc=5
PublishPhase:    Uploading=1, Finalizing=2, Published=3, Aborting=4,
                 Cleaning=5, Cleaned=6, Quarantined=7
BuildCommitPhase: Building=1, Sealing=2, Complete=3, Aborting=4,
                  Cleaning=5, Cleaned=6, Quarantined=7
RestorePhase:    Preparing=1, Copying=2, SourceSealed=3, Ready=4,
                 Complete=5, Aborting=6, Cleaning=7, Cleaned=8,
                 Quarantined=9
CommitRetirePhase: Claiming=1, Releasing=2, Complete=3, Quarantined=4
GcPhase:         Queued=1, Claimed=2, Deleting=3, Deleted=4, Quarantined=5
StagedProviderState: Planned=1, Uploading=2, Uploaded=3, AbortPending=4,
                     Aborted=5, Ambiguous=6
StagedCleanupState: Owned=1, DeletePending=2, Deleted=3, Quarantined=4
GcClaimState:    Candidate=1, Claimed=2, Complete=3, Quarantined=4
`

// parseSeedEnums reads seedEnumText: "Type: Name=N, ..." with indented
// continuation lines.
func parseSeedEnums(t *testing.T) []workbench.EnumType {
	t.Helper()
	head := regexp.MustCompile(`^([A-Za-z]+):\s+(.*)$`)
	pair := regexp.MustCompile(`^([A-Za-z]+)=([0-9]+)$`)
	var out []workbench.EnumType
	for _, line := range strings.Split(seedEnumText, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		rest := line
		if m := head.FindStringSubmatch(line); m != nil {
			out = append(out, workbench.EnumType{Name: m[1]})
			rest = m[2]
		} else if len(out) == 0 || !strings.HasPrefix(line, " ") {
			t.Fatalf("seed line %q is neither a type nor a continuation", line)
		}
		cur := &out[len(out)-1]
		for _, p := range strings.Split(rest, ",") {
			p = strings.TrimSpace(p)
			if p == "" {
				continue
			}
			m := pair.FindStringSubmatch(p)
			if m == nil {
				t.Fatalf("seed item %q is not Name=N", p)
			}
			n, err := strconv.ParseUint(m[2], 10, 8)
			if err != nil {
				t.Fatal(err)
			}
			cur.Values = append(cur.Values, workbench.EnumValue{Name: m[1], Value: uint8(n)})
		}
	}
	return out
}

func TestSeedEnumRegistryMatchesSeedText(t *testing.T) {
	want := parseSeedEnums(t)
	got := workbench.SeedEnums()
	if len(want) != 20 {
		t.Fatalf("seed text parsed into %d enums, want 20", len(want))
	}
	if len(got) != len(want) {
		t.Fatalf("registry has %d enums, seed %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Name != want[i].Name {
			t.Fatalf("enum %d is %s, seed says %s", i, got[i].Name, want[i].Name)
		}
		if fmt.Sprint(got[i].Values) != fmt.Sprint(want[i].Values) {
			t.Errorf("%s: registry %v, seed %v", want[i].Name, got[i].Values, want[i].Values)
		}
	}
}

// enumCase is one Go constant: its type's parser, its String and number.
type enumCase struct {
	typ   string
	name  string
	value uint8
	got   fmt.Stringer
}

// parsers returns each enum's Parse<Type> by type name.
func parsers() map[string]func(uint8) (fmt.Stringer, error) {
	wrap := func(f any) func(uint8) (fmt.Stringer, error) {
		switch f := f.(type) {
		case func(uint8) (workbench.WorkspaceState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.RevisionState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.CommitState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.SnapshotState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.ReferenceKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.HistoryHoldKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.HistoryHoldState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.RootActivationState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.RootPlacementLifecycle, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.CommitConsumerKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.RestoreSourceKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.OperationKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.PublishPhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.BuildCommitPhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.RestorePhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.CommitRetirePhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.GcPhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.StagedProviderState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.StagedCleanupState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.GcClaimState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (workbench.ChangeEventKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		}
		panic(fmt.Sprintf("no wrapper for %T", f))
	}
	return map[string]func(uint8) (fmt.Stringer, error){
		"WorkspaceState":         wrap(workbench.ParseWorkspaceState),
		"RevisionState":          wrap(workbench.ParseRevisionState),
		"CommitState":            wrap(workbench.ParseCommitState),
		"SnapshotState":          wrap(workbench.ParseSnapshotState),
		"ReferenceKind":          wrap(workbench.ParseReferenceKind),
		"HistoryHoldKind":        wrap(workbench.ParseHistoryHoldKind),
		"HistoryHoldState":       wrap(workbench.ParseHistoryHoldState),
		"RootActivationState":    wrap(workbench.ParseRootActivationState),
		"RootPlacementLifecycle": wrap(workbench.ParseRootPlacementLifecycle),
		"CommitConsumerKind":     wrap(workbench.ParseCommitConsumerKind),
		"RestoreSourceKind":      wrap(workbench.ParseRestoreSourceKind),
		"OperationKind":          wrap(workbench.ParseOperationKind),
		"PublishPhase":           wrap(workbench.ParsePublishPhase),
		"BuildCommitPhase":       wrap(workbench.ParseBuildCommitPhase),
		"RestorePhase":           wrap(workbench.ParseRestorePhase),
		"CommitRetirePhase":      wrap(workbench.ParseCommitRetirePhase),
		"GcPhase":                wrap(workbench.ParseGcPhase),
		"StagedProviderState":    wrap(workbench.ParseStagedProviderState),
		"StagedCleanupState":     wrap(workbench.ParseStagedCleanupState),
		"GcClaimState":           wrap(workbench.ParseGcClaimState),
		"ChangeEventKind":        wrap(workbench.ParseChangeEventKind),
	}
}

// constants lists every exported discriminant constant with the number
// and name the seed (or, for ChangeEventKind, cairn) gives it.
var constants = []enumCase{
	{"WorkspaceState", "Staging", 1, workbench.WorkspaceStateStaging},
	{"WorkspaceState", "Visible", 2, workbench.WorkspaceStateVisible},
	{"WorkspaceState", "Retired", 3, workbench.WorkspaceStateRetired},
	{"RevisionState", "Available", 1, workbench.RevisionStateAvailable},
	{"RevisionState", "Deleting", 2, workbench.RevisionStateDeleting},
	{"RevisionState", "Deleted", 3, workbench.RevisionStateDeleted},
	{"RevisionState", "Quarantined", 4, workbench.RevisionStateQuarantined},
	{"CommitState", "Sealed", 1, workbench.CommitStateSealed},
	{"CommitState", "Retiring", 2, workbench.CommitStateRetiring},
	{"CommitState", "Retired", 3, workbench.CommitStateRetired},
	{"SnapshotState", "Active", 1, workbench.SnapshotStateActive},
	{"SnapshotState", "ReapClaimed", 2, workbench.SnapshotStateReapClaimed},
	{"SnapshotState", "Reaped", 3, workbench.SnapshotStateReaped},
	{"SnapshotState", "Retired", 4, workbench.SnapshotStateRetired},
	{"ReferenceKind", "Path", 1, workbench.ReferenceKindPath},
	{"ReferenceKind", "Commit", 2, workbench.ReferenceKindCommit},
	{"ReferenceKind", "RevisionDependency", 3, workbench.ReferenceKindRevisionDependency},
	{"HistoryHoldKind", "Snapshot", 1, workbench.HistoryHoldKindSnapshot},
	{"HistoryHoldKind", "BuildCommit", 2, workbench.HistoryHoldKindBuildCommit},
	{"HistoryHoldKind", "Restore", 3, workbench.HistoryHoldKindRestore},
	{"HistoryHoldState", "Active", 1, workbench.HistoryHoldStateActive},
	{"HistoryHoldState", "Releasing", 2, workbench.HistoryHoldStateReleasing},
	{"RootActivationState", "Installing", 1, workbench.RootActivationStateInstalling},
	{"RootActivationState", "Active", 2, workbench.RootActivationStateActive},
	{"RootActivationState", "Draining", 3, workbench.RootActivationStateDraining},
	{"RootActivationState", "Fenced", 4, workbench.RootActivationStateFenced},
	{"RootPlacementLifecycle", "Provisioning", 1, workbench.RootPlacementLifecycleProvisioning},
	{"RootPlacementLifecycle", "Active", 2, workbench.RootPlacementLifecycleActive},
	{"RootPlacementLifecycle", "Draining", 3, workbench.RootPlacementLifecycleDraining},
	{"RootPlacementLifecycle", "Retired", 4, workbench.RootPlacementLifecycleRetired},
	{"CommitConsumerKind", "WorkbenchHead", 1, workbench.CommitConsumerKindWorkbenchHead},
	{"CommitConsumerKind", "Tag", 2, workbench.CommitConsumerKindTag},
	{"CommitConsumerKind", "Lease", 3, workbench.CommitConsumerKindLease},
	{"CommitConsumerKind", "ChildCommit", 4, workbench.CommitConsumerKindChildCommit},
	{"RestoreSourceKind", "Snapshot", 1, workbench.RestoreSourceKindSnapshot},
	{"RestoreSourceKind", "Commit", 2, workbench.RestoreSourceKindCommit},
	{"OperationKind", "Publish", 1, workbench.OperationKindPublish},
	{"OperationKind", "BuildCommit", 2, workbench.OperationKindBuildCommit},
	{"OperationKind", "Restore", 3, workbench.OperationKindRestore},
	{"OperationKind", "CommitRetire", 4, workbench.OperationKindCommitRetire},
	{"OperationKind", "Gc", 5, workbench.OperationKindGc},
	{"PublishPhase", "Uploading", 1, workbench.PublishPhaseUploading},
	{"PublishPhase", "Finalizing", 2, workbench.PublishPhaseFinalizing},
	{"PublishPhase", "Published", 3, workbench.PublishPhasePublished},
	{"PublishPhase", "Aborting", 4, workbench.PublishPhaseAborting},
	{"PublishPhase", "Cleaning", 5, workbench.PublishPhaseCleaning},
	{"PublishPhase", "Cleaned", 6, workbench.PublishPhaseCleaned},
	{"PublishPhase", "Quarantined", 7, workbench.PublishPhaseQuarantined},
	{"BuildCommitPhase", "Building", 1, workbench.BuildCommitPhaseBuilding},
	{"BuildCommitPhase", "Sealing", 2, workbench.BuildCommitPhaseSealing},
	{"BuildCommitPhase", "Complete", 3, workbench.BuildCommitPhaseComplete},
	{"BuildCommitPhase", "Aborting", 4, workbench.BuildCommitPhaseAborting},
	{"BuildCommitPhase", "Cleaning", 5, workbench.BuildCommitPhaseCleaning},
	{"BuildCommitPhase", "Cleaned", 6, workbench.BuildCommitPhaseCleaned},
	{"BuildCommitPhase", "Quarantined", 7, workbench.BuildCommitPhaseQuarantined},
	{"RestorePhase", "Preparing", 1, workbench.RestorePhasePreparing},
	{"RestorePhase", "Copying", 2, workbench.RestorePhaseCopying},
	{"RestorePhase", "SourceSealed", 3, workbench.RestorePhaseSourceSealed},
	{"RestorePhase", "Ready", 4, workbench.RestorePhaseReady},
	{"RestorePhase", "Complete", 5, workbench.RestorePhaseComplete},
	{"RestorePhase", "Aborting", 6, workbench.RestorePhaseAborting},
	{"RestorePhase", "Cleaning", 7, workbench.RestorePhaseCleaning},
	{"RestorePhase", "Cleaned", 8, workbench.RestorePhaseCleaned},
	{"RestorePhase", "Quarantined", 9, workbench.RestorePhaseQuarantined},
	{"CommitRetirePhase", "Claiming", 1, workbench.CommitRetirePhaseClaiming},
	{"CommitRetirePhase", "Releasing", 2, workbench.CommitRetirePhaseReleasing},
	{"CommitRetirePhase", "Complete", 3, workbench.CommitRetirePhaseComplete},
	{"CommitRetirePhase", "Quarantined", 4, workbench.CommitRetirePhaseQuarantined},
	{"GcPhase", "Queued", 1, workbench.GcPhaseQueued},
	{"GcPhase", "Claimed", 2, workbench.GcPhaseClaimed},
	{"GcPhase", "Deleting", 3, workbench.GcPhaseDeleting},
	{"GcPhase", "Deleted", 4, workbench.GcPhaseDeleted},
	{"GcPhase", "Quarantined", 5, workbench.GcPhaseQuarantined},
	{"StagedProviderState", "Planned", 1, workbench.StagedProviderStatePlanned},
	{"StagedProviderState", "Uploading", 2, workbench.StagedProviderStateUploading},
	{"StagedProviderState", "Uploaded", 3, workbench.StagedProviderStateUploaded},
	{"StagedProviderState", "AbortPending", 4, workbench.StagedProviderStateAbortPending},
	{"StagedProviderState", "Aborted", 5, workbench.StagedProviderStateAborted},
	{"StagedProviderState", "Ambiguous", 6, workbench.StagedProviderStateAmbiguous},
	{"StagedCleanupState", "Owned", 1, workbench.StagedCleanupStateOwned},
	{"StagedCleanupState", "DeletePending", 2, workbench.StagedCleanupStateDeletePending},
	{"StagedCleanupState", "Deleted", 3, workbench.StagedCleanupStateDeleted},
	{"StagedCleanupState", "Quarantined", 4, workbench.StagedCleanupStateQuarantined},
	{"GcClaimState", "Candidate", 1, workbench.GcClaimStateCandidate},
	{"GcClaimState", "Claimed", 2, workbench.GcClaimStateClaimed},
	{"GcClaimState", "Complete", 3, workbench.GcClaimStateComplete},
	{"GcClaimState", "Quarantined", 4, workbench.GcClaimStateQuarantined},
	{"ChangeEventKind", "WorkspaceCreated", 1, workbench.ChangeEventKindWorkspaceCreated},
	{"ChangeEventKind", "PathCreated", 2, workbench.ChangeEventKindPathCreated},
	{"ChangeEventKind", "PathReplaced", 3, workbench.ChangeEventKindPathReplaced},
	{"ChangeEventKind", "PathAppended", 4, workbench.ChangeEventKindPathAppended},
	{"ChangeEventKind", "PathRemoved", 5, workbench.ChangeEventKindPathRemoved},
	{"ChangeEventKind", "WorkbenchCommitted", 6, workbench.ChangeEventKindWorkbenchCommitted},
	{"ChangeEventKind", "WorkspaceRestored", 7, workbench.ChangeEventKindWorkspaceRestored},
	{"ChangeEventKind", "SnapshotMinted", 8, workbench.ChangeEventKindSnapshotMinted},
	{"ChangeEventKind", "SnapshotRenewed", 9, workbench.ChangeEventKindSnapshotRenewed},
	{"ChangeEventKind", "SnapshotRetired", 10, workbench.ChangeEventKindSnapshotRetired},
	{"ChangeEventKind", "SnapshotReaped", 11, workbench.ChangeEventKindSnapshotReaped},
}

// TestEnumConstants checks every Go constant's number and name against the
// registry, and that the constants cover the registry exactly.
func TestEnumConstants(t *testing.T) {
	registry := map[string]uint8{}
	for _, e := range append(workbench.SeedEnums(), workbench.CairnEnums()...) {
		for _, v := range e.Values {
			registry[e.Name+"."+v.Name] = v.Value
		}
	}
	seen := map[string]bool{}
	for _, c := range constants {
		key := c.typ + "." + c.name
		if seen[key] {
			t.Fatalf("constant %s listed twice", key)
		}
		seen[key] = true
		want, ok := registry[key]
		if !ok {
			t.Errorf("constant %s is not in the registry", key)
			continue
		}
		if want != c.value {
			t.Errorf("registry gives %s = %d, table %d", key, want, c.value)
		}
		if got := c.got.String(); got != c.name {
			t.Errorf("%s: String() = %q", key, got)
		}
		if got := fmt.Sprintf("%d", c.got); got != strconv.Itoa(int(c.value)) {
			t.Errorf("%s = %s, want %d", key, got, c.value)
		}
	}
	if len(seen) != len(registry) {
		t.Errorf("%d constants for %d registry values", len(seen), len(registry))
	}
}

// TestEnumParseStrict parses every byte for every enum: exactly the
// registry's values are accepted, everything else is ErrUnknownEnum.
func TestEnumParseStrict(t *testing.T) {
	ps := parsers()
	all := append(workbench.SeedEnums(), workbench.CairnEnums()...)
	if len(ps) != len(all) {
		t.Fatalf("%d parsers for %d enums", len(ps), len(all))
	}
	for _, e := range all {
		parse := ps[e.Name]
		if parse == nil {
			t.Fatalf("no parser for %s", e.Name)
		}
		names := map[uint8]string{}
		for _, v := range e.Values {
			names[v.Value] = v.Name
		}
		for b := 0; b < 256; b++ {
			got, err := parse(uint8(b))
			name, known := names[uint8(b)]
			switch {
			case known && err != nil:
				t.Errorf("Parse%s(%d): %v", e.Name, b, err)
			case known && got.String() != name:
				t.Errorf("Parse%s(%d) = %s, want %s", e.Name, b, got, name)
			case !known && !errors.Is(err, workbench.ErrUnknownEnum):
				t.Errorf("Parse%s(%d) = %v, %v; want ErrUnknownEnum", e.Name, b, got, err)
			case !known && fmt.Sprintf("%d", got) != "0":
				t.Errorf("Parse%s(%d) returned %d beside its error", e.Name, b, got)
			}
		}
	}
}

func TestEnumStringOfUnknownValue(t *testing.T) {
	if got, want := workbench.WorkspaceState(9).String(), "WorkspaceState(9)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if workbench.PublishPhase(0).Valid() || !workbench.PublishPhaseQuarantined.Valid() || workbench.PublishPhase(8).Valid() {
		t.Error("PublishPhase.Valid disagrees with the registry")
	}
}

func TestSeedEnumsIsACopy(t *testing.T) {
	a := workbench.SeedEnums()
	a[0].Values[0].Name = "changed"
	if b := workbench.SeedEnums(); b[0].Values[0].Name != "Staging" {
		t.Fatal("SeedEnums shares its slices")
	}
}
