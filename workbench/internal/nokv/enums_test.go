package nokv_test

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
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
func parseSeedEnums(t *testing.T) []nokv.EnumType {
	t.Helper()
	head := regexp.MustCompile(`^([A-Za-z]+):\s+(.*)$`)
	pair := regexp.MustCompile(`^([A-Za-z]+)=([0-9]+)$`)
	var out []nokv.EnumType
	for _, line := range strings.Split(seedEnumText, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		rest := line
		if m := head.FindStringSubmatch(line); m != nil {
			out = append(out, nokv.EnumType{Name: m[1]})
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
			cur.Values = append(cur.Values, nokv.EnumValue{Name: m[1], Value: uint8(n)})
		}
	}
	return out
}

func TestSeedEnumRegistryMatchesSeedText(t *testing.T) {
	want := parseSeedEnums(t)
	got := nokv.SeedEnums()
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
		case func(uint8) (nokv.WorkspaceState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.RevisionState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.CommitState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.SnapshotState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.ReferenceKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.HistoryHoldKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.HistoryHoldState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.RootActivationState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.RootPlacementLifecycle, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.CommitConsumerKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.RestoreSourceKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.OperationKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.PublishPhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.BuildCommitPhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.RestorePhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.CommitRetirePhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.GcPhase, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.StagedProviderState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.StagedCleanupState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.GcClaimState, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		case func(uint8) (nokv.ChangeEventKind, error):
			return func(b uint8) (fmt.Stringer, error) { return f(b) }
		}
		panic(fmt.Sprintf("no wrapper for %T", f))
	}
	return map[string]func(uint8) (fmt.Stringer, error){
		"WorkspaceState":         wrap(nokv.ParseWorkspaceState),
		"RevisionState":          wrap(nokv.ParseRevisionState),
		"CommitState":            wrap(nokv.ParseCommitState),
		"SnapshotState":          wrap(nokv.ParseSnapshotState),
		"ReferenceKind":          wrap(nokv.ParseReferenceKind),
		"HistoryHoldKind":        wrap(nokv.ParseHistoryHoldKind),
		"HistoryHoldState":       wrap(nokv.ParseHistoryHoldState),
		"RootActivationState":    wrap(nokv.ParseRootActivationState),
		"RootPlacementLifecycle": wrap(nokv.ParseRootPlacementLifecycle),
		"CommitConsumerKind":     wrap(nokv.ParseCommitConsumerKind),
		"RestoreSourceKind":      wrap(nokv.ParseRestoreSourceKind),
		"OperationKind":          wrap(nokv.ParseOperationKind),
		"PublishPhase":           wrap(nokv.ParsePublishPhase),
		"BuildCommitPhase":       wrap(nokv.ParseBuildCommitPhase),
		"RestorePhase":           wrap(nokv.ParseRestorePhase),
		"CommitRetirePhase":      wrap(nokv.ParseCommitRetirePhase),
		"GcPhase":                wrap(nokv.ParseGcPhase),
		"StagedProviderState":    wrap(nokv.ParseStagedProviderState),
		"StagedCleanupState":     wrap(nokv.ParseStagedCleanupState),
		"GcClaimState":           wrap(nokv.ParseGcClaimState),
		"ChangeEventKind":        wrap(nokv.ParseChangeEventKind),
	}
}

// constants lists every exported discriminant constant with the number
// and name the seed (or, for ChangeEventKind, cairn) gives it.
var constants = []enumCase{
	{"WorkspaceState", "Staging", 1, nokv.WorkspaceStateStaging},
	{"WorkspaceState", "Visible", 2, nokv.WorkspaceStateVisible},
	{"WorkspaceState", "Retired", 3, nokv.WorkspaceStateRetired},
	{"RevisionState", "Available", 1, nokv.RevisionStateAvailable},
	{"RevisionState", "Deleting", 2, nokv.RevisionStateDeleting},
	{"RevisionState", "Deleted", 3, nokv.RevisionStateDeleted},
	{"RevisionState", "Quarantined", 4, nokv.RevisionStateQuarantined},
	{"CommitState", "Sealed", 1, nokv.CommitStateSealed},
	{"CommitState", "Retiring", 2, nokv.CommitStateRetiring},
	{"CommitState", "Retired", 3, nokv.CommitStateRetired},
	{"SnapshotState", "Active", 1, nokv.SnapshotStateActive},
	{"SnapshotState", "ReapClaimed", 2, nokv.SnapshotStateReapClaimed},
	{"SnapshotState", "Reaped", 3, nokv.SnapshotStateReaped},
	{"SnapshotState", "Retired", 4, nokv.SnapshotStateRetired},
	{"ReferenceKind", "Path", 1, nokv.ReferenceKindPath},
	{"ReferenceKind", "Commit", 2, nokv.ReferenceKindCommit},
	{"ReferenceKind", "RevisionDependency", 3, nokv.ReferenceKindRevisionDependency},
	{"HistoryHoldKind", "Snapshot", 1, nokv.HistoryHoldKindSnapshot},
	{"HistoryHoldKind", "BuildCommit", 2, nokv.HistoryHoldKindBuildCommit},
	{"HistoryHoldKind", "Restore", 3, nokv.HistoryHoldKindRestore},
	{"HistoryHoldState", "Active", 1, nokv.HistoryHoldStateActive},
	{"HistoryHoldState", "Releasing", 2, nokv.HistoryHoldStateReleasing},
	{"RootActivationState", "Installing", 1, nokv.RootActivationStateInstalling},
	{"RootActivationState", "Active", 2, nokv.RootActivationStateActive},
	{"RootActivationState", "Draining", 3, nokv.RootActivationStateDraining},
	{"RootActivationState", "Fenced", 4, nokv.RootActivationStateFenced},
	{"RootPlacementLifecycle", "Provisioning", 1, nokv.RootPlacementLifecycleProvisioning},
	{"RootPlacementLifecycle", "Active", 2, nokv.RootPlacementLifecycleActive},
	{"RootPlacementLifecycle", "Draining", 3, nokv.RootPlacementLifecycleDraining},
	{"RootPlacementLifecycle", "Retired", 4, nokv.RootPlacementLifecycleRetired},
	{"CommitConsumerKind", "WorkbenchHead", 1, nokv.CommitConsumerKindWorkbenchHead},
	{"CommitConsumerKind", "Tag", 2, nokv.CommitConsumerKindTag},
	{"CommitConsumerKind", "Lease", 3, nokv.CommitConsumerKindLease},
	{"CommitConsumerKind", "ChildCommit", 4, nokv.CommitConsumerKindChildCommit},
	{"RestoreSourceKind", "Snapshot", 1, nokv.RestoreSourceKindSnapshot},
	{"RestoreSourceKind", "Commit", 2, nokv.RestoreSourceKindCommit},
	{"OperationKind", "Publish", 1, nokv.OperationKindPublish},
	{"OperationKind", "BuildCommit", 2, nokv.OperationKindBuildCommit},
	{"OperationKind", "Restore", 3, nokv.OperationKindRestore},
	{"OperationKind", "CommitRetire", 4, nokv.OperationKindCommitRetire},
	{"OperationKind", "Gc", 5, nokv.OperationKindGc},
	{"PublishPhase", "Uploading", 1, nokv.PublishPhaseUploading},
	{"PublishPhase", "Finalizing", 2, nokv.PublishPhaseFinalizing},
	{"PublishPhase", "Published", 3, nokv.PublishPhasePublished},
	{"PublishPhase", "Aborting", 4, nokv.PublishPhaseAborting},
	{"PublishPhase", "Cleaning", 5, nokv.PublishPhaseCleaning},
	{"PublishPhase", "Cleaned", 6, nokv.PublishPhaseCleaned},
	{"PublishPhase", "Quarantined", 7, nokv.PublishPhaseQuarantined},
	{"BuildCommitPhase", "Building", 1, nokv.BuildCommitPhaseBuilding},
	{"BuildCommitPhase", "Sealing", 2, nokv.BuildCommitPhaseSealing},
	{"BuildCommitPhase", "Complete", 3, nokv.BuildCommitPhaseComplete},
	{"BuildCommitPhase", "Aborting", 4, nokv.BuildCommitPhaseAborting},
	{"BuildCommitPhase", "Cleaning", 5, nokv.BuildCommitPhaseCleaning},
	{"BuildCommitPhase", "Cleaned", 6, nokv.BuildCommitPhaseCleaned},
	{"BuildCommitPhase", "Quarantined", 7, nokv.BuildCommitPhaseQuarantined},
	{"RestorePhase", "Preparing", 1, nokv.RestorePhasePreparing},
	{"RestorePhase", "Copying", 2, nokv.RestorePhaseCopying},
	{"RestorePhase", "SourceSealed", 3, nokv.RestorePhaseSourceSealed},
	{"RestorePhase", "Ready", 4, nokv.RestorePhaseReady},
	{"RestorePhase", "Complete", 5, nokv.RestorePhaseComplete},
	{"RestorePhase", "Aborting", 6, nokv.RestorePhaseAborting},
	{"RestorePhase", "Cleaning", 7, nokv.RestorePhaseCleaning},
	{"RestorePhase", "Cleaned", 8, nokv.RestorePhaseCleaned},
	{"RestorePhase", "Quarantined", 9, nokv.RestorePhaseQuarantined},
	{"CommitRetirePhase", "Claiming", 1, nokv.CommitRetirePhaseClaiming},
	{"CommitRetirePhase", "Releasing", 2, nokv.CommitRetirePhaseReleasing},
	{"CommitRetirePhase", "Complete", 3, nokv.CommitRetirePhaseComplete},
	{"CommitRetirePhase", "Quarantined", 4, nokv.CommitRetirePhaseQuarantined},
	{"GcPhase", "Queued", 1, nokv.GcPhaseQueued},
	{"GcPhase", "Claimed", 2, nokv.GcPhaseClaimed},
	{"GcPhase", "Deleting", 3, nokv.GcPhaseDeleting},
	{"GcPhase", "Deleted", 4, nokv.GcPhaseDeleted},
	{"GcPhase", "Quarantined", 5, nokv.GcPhaseQuarantined},
	{"StagedProviderState", "Planned", 1, nokv.StagedProviderStatePlanned},
	{"StagedProviderState", "Uploading", 2, nokv.StagedProviderStateUploading},
	{"StagedProviderState", "Uploaded", 3, nokv.StagedProviderStateUploaded},
	{"StagedProviderState", "AbortPending", 4, nokv.StagedProviderStateAbortPending},
	{"StagedProviderState", "Aborted", 5, nokv.StagedProviderStateAborted},
	{"StagedProviderState", "Ambiguous", 6, nokv.StagedProviderStateAmbiguous},
	{"StagedCleanupState", "Owned", 1, nokv.StagedCleanupStateOwned},
	{"StagedCleanupState", "DeletePending", 2, nokv.StagedCleanupStateDeletePending},
	{"StagedCleanupState", "Deleted", 3, nokv.StagedCleanupStateDeleted},
	{"StagedCleanupState", "Quarantined", 4, nokv.StagedCleanupStateQuarantined},
	{"GcClaimState", "Candidate", 1, nokv.GcClaimStateCandidate},
	{"GcClaimState", "Claimed", 2, nokv.GcClaimStateClaimed},
	{"GcClaimState", "Complete", 3, nokv.GcClaimStateComplete},
	{"GcClaimState", "Quarantined", 4, nokv.GcClaimStateQuarantined},
	{"ChangeEventKind", "WorkspaceCreated", 1, nokv.ChangeEventKindWorkspaceCreated},
	{"ChangeEventKind", "PathCreated", 2, nokv.ChangeEventKindPathCreated},
	{"ChangeEventKind", "PathReplaced", 3, nokv.ChangeEventKindPathReplaced},
	{"ChangeEventKind", "PathAppended", 4, nokv.ChangeEventKindPathAppended},
	{"ChangeEventKind", "PathRemoved", 5, nokv.ChangeEventKindPathRemoved},
	{"ChangeEventKind", "WorkbenchCommitted", 6, nokv.ChangeEventKindWorkbenchCommitted},
	{"ChangeEventKind", "WorkspaceRestored", 7, nokv.ChangeEventKindWorkspaceRestored},
	{"ChangeEventKind", "SnapshotMinted", 8, nokv.ChangeEventKindSnapshotMinted},
	{"ChangeEventKind", "SnapshotRenewed", 9, nokv.ChangeEventKindSnapshotRenewed},
	{"ChangeEventKind", "SnapshotRetired", 10, nokv.ChangeEventKindSnapshotRetired},
	{"ChangeEventKind", "SnapshotReaped", 11, nokv.ChangeEventKindSnapshotReaped},
}

// TestEnumConstants checks every Go constant's number and name against the
// registry, and that the constants cover the registry exactly.
func TestEnumConstants(t *testing.T) {
	registry := map[string]uint8{}
	for _, e := range append(nokv.SeedEnums(), nokv.CairnEnums()...) {
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
	all := append(nokv.SeedEnums(), nokv.CairnEnums()...)
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
			case !known && !errors.Is(err, nokv.ErrUnknownEnum):
				t.Errorf("Parse%s(%d) = %v, %v; want ErrUnknownEnum", e.Name, b, got, err)
			case !known && fmt.Sprintf("%d", got) != "0":
				t.Errorf("Parse%s(%d) returned %d beside its error", e.Name, b, got)
			}
		}
	}
}

func TestEnumStringOfUnknownValue(t *testing.T) {
	if got, want := nokv.WorkspaceState(9).String(), "WorkspaceState(9)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if nokv.PublishPhase(0).Valid() || !nokv.PublishPhaseQuarantined.Valid() || nokv.PublishPhase(8).Valid() {
		t.Error("PublishPhase.Valid disagrees with the registry")
	}
}

func TestSeedEnumsIsACopy(t *testing.T) {
	a := nokv.SeedEnums()
	a[0].Values[0].Name = "changed"
	if b := nokv.SeedEnums(); b[0].Values[0].Name != "Staging" {
		t.Fatal("SeedEnums shares its slices")
	}
}
