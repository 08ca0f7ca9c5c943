package shards

import (
	"errors"
	"fmt"
)

// Family is a metadata family, identified by its one-byte tag. The tags of
// the NoKV families are the seed schema's History source-family tags; the
// engine's own families use tags from 0xf0 up, outside the seed's range.
type Family uint8

// The families, in tag order.
const (
	RootFence                 Family = 0x01
	WorkspaceCurrent          Family = 0x02
	PathCurrent               Family = 0x03
	ArtifactRevision          Family = 0x04
	ArtifactManifest          Family = 0x05
	RevisionRef               Family = 0x06
	Commit                    Family = 0x07
	CommitMember              Family = 0x08
	WorkbenchCommitHead       Family = 0x09
	Tag                       Family = 0x0a
	SnapshotRef               Family = 0x0b
	SnapshotAlias             Family = 0x0c
	HistoryHold               Family = 0x0d
	CommitConsumer            Family = 0x0e
	SecondaryIndex            Family = 0x0f
	ChangeEvent               Family = 0x10
	Operation                 Family = 0x11
	RestoreMember             Family = 0x12
	StagedObject              Family = 0x13
	CommandDedupe             Family = 0x14
	GcCandidate               Family = 0x15
	GcBarrier                 Family = 0x16
	WorkspaceIncarnationClaim Family = 0x17

	// System holds the schema marker and the engine's own metadata.
	System Family = 0xf0
)

// ErrUnknownFamily is returned for a tag or name that names no family.
var ErrUnknownFamily = errors.New("unknown family")

var familyNames = map[Family]string{
	RootFence:                 "root_fence",
	WorkspaceCurrent:          "workspace_current",
	PathCurrent:               "path_current",
	ArtifactRevision:          "artifact_revision",
	ArtifactManifest:          "artifact_manifest",
	RevisionRef:               "revision_ref",
	Commit:                    "commit",
	CommitMember:              "commit_member",
	WorkbenchCommitHead:       "workbench_commit_head",
	Tag:                       "tag",
	SnapshotRef:               "snapshot_ref",
	SnapshotAlias:             "snapshot_alias",
	HistoryHold:               "history_hold",
	CommitConsumer:            "commit_consumer",
	SecondaryIndex:            "secondary_index",
	ChangeEvent:               "change_event",
	Operation:                 "operation",
	RestoreMember:             "restore_member",
	StagedObject:              "staged_object",
	CommandDedupe:             "command_dedupe",
	GcCandidate:               "gc_candidate",
	GcBarrier:                 "gc_barrier",
	WorkspaceIncarnationClaim: "workspace_incarnation_claim",
	System:                    "system",
}

var (
	familyList   []Family
	familyByName map[string]Family
)

func init() {
	familyByName = make(map[string]Family, len(familyNames))
	for t := 0; t < 256; t++ {
		f := Family(t)
		if name, ok := familyNames[f]; ok {
			familyList = append(familyList, f)
			familyByName[name] = f
		}
	}
}

// Families returns every family in tag order. The slice is a copy.
func Families() []Family {
	return append([]Family(nil), familyList...)
}

// Known reports whether f is a registered family.
func (f Family) Known() bool {
	_, ok := familyNames[f]
	return ok
}

// String returns the family's name, or "family(0xNN)" for an unknown tag.
func (f Family) String() string {
	if name, ok := familyNames[f]; ok {
		return name
	}
	return fmt.Sprintf("family(0x%02x)", uint8(f))
}

// ParseFamily returns the family with tag t, failing closed with
// ErrUnknownFamily for any tag the registry does not hold.
func ParseFamily(t byte) (Family, error) {
	f := Family(t)
	if !f.Known() {
		return 0, fmt.Errorf("shards: family tag 0x%02x: %w", t, ErrUnknownFamily)
	}
	return f, nil
}

// ByName returns the family with the exact name, failing with
// ErrUnknownFamily for any other name.
func ByName(name string) (Family, error) {
	f, ok := familyByName[name]
	if !ok {
		return 0, fmt.Errorf("shards: family %q: %w", name, ErrUnknownFamily)
	}
	return f, nil
}
