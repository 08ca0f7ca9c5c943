package nokv_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

func id16(i int) (v [16]byte) {
	binary.BigEndian.PutUint64(v[:], uint64(i))
	v[15] = 0x5a
	return v
}

func id32(i int) (v [32]byte) {
	binary.BigEndian.PutUint64(v[:], uint64(i))
	v[31] = 0xc3
	return v
}

var testRoot = id16(0x7007)

// fams is the NoKV schema's family registry.
var fams = nokv.Families()

// sampleKey returns a valid record key of family f, varying with i.
func sampleKey(t testing.TB, f shards.Family, i int) []byte {
	t.Helper()
	k := shards.NewKey()
	switch f {
	case nokv.FamilyRootFence, nokv.FamilyGcBarrier, nokv.FamilyLeaseClock:
		k.ID16(id16(i))
	case nokv.FamilyWorkspaceCurrent:
		k.ID16(testRoot).String(fmt.Sprintf("wb-%d", i))
	case nokv.FamilyPathCurrent, nokv.FamilyPathDirectory:
		k.ID16(testRoot).ID16(id16(1)).Path([]string{"outputs", fmt.Sprintf("d%d", i%7), fmt.Sprintf("f%d.txt", i)})
	case nokv.FamilyArtifactRevision, nokv.FamilyWorkspaceIncarnationClaim, nokv.FamilyWorkbenchCommitHead:
		k.ID16(testRoot).ID16(id16(i))
	case nokv.FamilyArtifactManifest:
		k.ID16(testRoot).ID16(id16(i % 5)).U64(uint64(i))
	case nokv.FamilyRevisionRef:
		k.ID16(testRoot)
		switch i % 3 {
		case 0:
			k.U8(1).ID16(id16(1)).LenPath([]string{"outputs", fmt.Sprintf("f%d", i)})
		case 1:
			k.U8(2).ID32(id32(i % 4))
		case 2:
			k.U8(3).ID16(id16(i % 4))
		}
		k.ID16(id16(i))
	case nokv.FamilyCommit:
		k.ID16(testRoot).ID32(id32(i))
	case nokv.FamilyCommitMember:
		k.ID16(testRoot).ID32(id32(i % 3)).Path([]string{"outputs", fmt.Sprintf("f%d", i)})
	case nokv.FamilyTag, nokv.FamilySnapshotAlias:
		k.ID16(testRoot).ID16(id16(i % 3)).Name(fmt.Sprintf("name-%d", i))
	case nokv.FamilySnapshotRef:
		k.ID16(testRoot).ID16(id16(i % 3)).U64(uint64(i))
	case nokv.FamilyHistoryHold:
		k.ID16(testRoot).U8(1).U64(uint64(i))
	case nokv.FamilyCommitConsumer:
		k.ID16(testRoot).ID32(id32(i % 3)).U8(1).ID16(id16(i))
	case nokv.FamilySecondaryIndex:
		k.ID16(testRoot).String(fmt.Sprintf("field%d", i%2)).Raw([]byte(fmt.Sprintf("s%d\x00", i%9))).
			ID16(id16(1)).Path([]string{"outputs", fmt.Sprintf("f%d", i)})
	case nokv.FamilyChangeEvent:
		k.ID16(testRoot).U64(uint64(i)).U32(0)
	case nokv.FamilyOperation:
		k.ID16(testRoot).U8(1).ID16(id16(i))
	case nokv.FamilyRestoreMember, nokv.FamilyStagedObject:
		k.ID16(testRoot).ID16(id16(i % 3)).U64(uint64(i))
	case shards.CommandDedupe:
		k.ID16(testRoot).String(fmt.Sprintf("req-%d", i))
	case nokv.FamilyGcCandidate:
		k.ID16(testRoot).ID16(id16(i)).U64(1)
	case shards.System:
		k.Raw([]byte(fmt.Sprintf("key-%d", i)))
	default:
		t.Fatalf("no sample key for %v", f)
	}
	b, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustKey(t testing.TB, k *shards.KeyBuilder) []byte {
	t.Helper()
	b, err := k.Build()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func shardOf(t testing.TB, f shards.Family, key []byte) uint8 {
	t.Helper()
	idx, err := fams.ShardOf(f, key)
	if err != nil {
		t.Fatalf("ShardOf(%v, %x): %v", f, key, err)
	}
	return idx
}
