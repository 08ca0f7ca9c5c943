package nokv_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

func TestRestoreRecords(t *testing.T) {
	snap := nokv.SnapshotID(7)
	commit := nokv.CommitID{9}
	ops := []nokv.RestoreOperation{
		{Phase: nokv.RestorePhaseCopying, IdentityDigest: [32]byte{1}, InitializationDigest: [32]byte{2},
			SourceWorkbenchID: "src", SourceIncarnation: nokv.IncarnationID{3}, SourceKind: nokv.RestoreSourceKindSnapshot,
			SourceSnapshot: &snap, SourceReadVersion: 42, DestinationWorkbenchID: "dst", DestinationIncarnation: nokv.IncarnationID{4}, DestinationCommit: nokv.CommitID{6},
			MemberCount: 10, MemberCursor: 4, MemberDigest: [32]byte{5}, CreatedVersion: 43},
		{Phase: nokv.RestorePhaseComplete, SourceWorkbenchID: "src", SourceKind: nokv.RestoreSourceKindCommit, SourceCommit: &commit,
			DestinationWorkbenchID: "dst", MemberCount: 3, MemberCursor: 3,
			Result: &nokv.RestoreResult{DestinationGeneration: 1, CommitVersion: 50, Commit: nokv.CommitID{8}}},
	}
	for _, op := range ops {
		b, err := op.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if b[0] != nokv.RestoreOperationVersion {
			t.Fatalf("version byte %d", b[0])
		}
		got, err := nokv.DecodeRestoreOperation(b)
		if err != nil || !reflect.DeepEqual(got, op) {
			t.Fatalf("round trip: %+v, %v\nwant %+v", got, err, op)
		}
		for n := range len(b) {
			if _, err := nokv.DecodeRestoreOperation(b[:n]); err == nil {
				t.Fatalf("a %d-byte prefix decodes", n)
			}
		}
		if _, err := nokv.DecodeRestoreOperation(append(b, 0)); err == nil {
			t.Fatal("a trailing byte decodes")
		}
		b[0] = 3
		if _, err := nokv.DecodeRestoreOperation(b); !errors.Is(err, nokv.ErrUnknownVersion) {
			t.Fatalf("version 3: %v", err)
		}
	}
	for _, bad := range []nokv.RestoreOperation{
		{SourceWorkbenchID: "src", DestinationWorkbenchID: "dst", Phase: nokv.RestorePhaseCopying, SourceKind: nokv.RestoreSourceKindSnapshot},
		{SourceWorkbenchID: "src", DestinationWorkbenchID: "dst", Phase: nokv.RestorePhaseCopying, SourceKind: nokv.RestoreSourceKindCommit, SourceCommit: &commit, SourceSnapshot: &snap},
		{SourceWorkbenchID: "src", DestinationWorkbenchID: "dst", Phase: nokv.RestorePhaseCopying, SourceKind: nokv.RestoreSourceKindCommit, SourceCommit: &commit, MemberCount: 1, MemberCursor: 2},
		{SourceWorkbenchID: "a.b", DestinationWorkbenchID: "dst", Phase: nokv.RestorePhaseCopying, SourceKind: nokv.RestoreSourceKindCommit, SourceCommit: &commit},
	} {
		if _, err := bad.Encode(); err == nil {
			t.Errorf("encoded %+v", bad)
		}
	}

	m := nokv.RestoreMember{Path: []string{"outputs", "a.txt"}, Revision: nokv.RevisionID{1}, PathGeneration: 3, RowDigest: [32]byte{4}}
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := nokv.DecodeRestoreMember(b); err != nil || !reflect.DeepEqual(got, m) {
		t.Fatalf("member round trip: %+v, %v", got, err)
	}
	if _, err := nokv.DecodeRestoreMember(b[:len(b)-1]); err == nil {
		t.Fatal("a truncated member decodes")
	}
	k := nokv.RestoreMemberKey{Root: nokv.RootID{1}, Operation: nokv.OperationID{2}, Sequence: 300}
	kb, err := k.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := nokv.ParseRestoreMemberKey(kb); err != nil || got != k {
		t.Fatalf("key round trip: %+v, %v", got, err)
	}
	if string(kb[:32]) != string(nokv.RestoreMemberPrefix(k.Root, k.Operation)) {
		t.Fatal("the prefix does not begin the key")
	}
	// One restore's members share a shard.
	k2 := k
	k2.Sequence = 1
	kb2, _ := k2.Encode()
	if s1, s2 := shardOf(t, nokv.FamilyRestoreMember, kb), shardOf(t, nokv.FamilyRestoreMember, kb2); s1 != s2 {
		t.Fatalf("members in shards %d and %d", s1, s2)
	}
}
