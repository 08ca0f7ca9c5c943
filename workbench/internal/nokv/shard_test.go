package nokv_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestShardOfGolden pins the sharding of the NoKV schema: a change to any
// family's shard key or to the hash moves these keys and fails here.
func TestShardOfGolden(t *testing.T) {
	cases := []struct {
		f   shards.Family
		key string
		idx uint8
	}{
		{nokv.FamilyPathCurrent, "0000000000007007000000000000005a0000000000000001000000000000005a707675717675740065340067342f75797501", 0x8d},
		{nokv.FamilyArtifactManifest, "0000000000007007000000000000005a0000000000000002000000000000005a0000000000000002", 0x19},
		{nokv.FamilyArtifactManifest, "0000000000007007000000000000005a0000000000000003000000000000005a0000000000000003", 0xe7},
		{nokv.FamilyRevisionRef, "0000000000007007000000000000005a010000000000000001000000000000005a0000000a707675717675740067310000000000000000000000000000005a", 0x8e},
		{nokv.FamilyRevisionRef, "0000000000007007000000000000005a0200000000000000010000000000000000000000000000000000000000000000c30000000000000001000000000000005a", 0x49},
		{nokv.FamilyChangeEvent, "0000000000007007000000000000005a000000000000012c00000000", 0x27},
		{nokv.FamilySecondaryIndex, "0000000000007007000000000000005a000000066669656c64317331000000000000000001000000000000005a7076757176757400673201", 0x12},
		{nokv.FamilyWorkspaceCurrent, "0000000000007007000000000000005a0000000477622d31", 0x4d},
		{shards.CommandDedupe, "0000000000007007000000000000005a000000057265712d31", 0x9d},
		{shards.System, "6b65792d30", 0x89},
		{nokv.FamilyTag, "0000000000007007000000000000005a0000000000000001000000000000005a00066e616d652d34", 0x04},
	}
	for _, c := range cases {
		key, err := hex.DecodeString(c.key)
		if err != nil {
			t.Fatal(err)
		}
		if got := shardOf(t, c.f, key); got != c.idx {
			t.Errorf("ShardOf(%v, %s) = 0x%02x, want 0x%02x", c.f, c.key, got, c.idx)
		}
	}
}

func TestEveryFamilyShards(t *testing.T) {
	for _, f := range fams.Families() {
		hit := map[uint8]bool{}
		for i := 0; i < 2000; i++ {
			key := sampleKey(t, f, i)
			idx := shardOf(t, f, key)
			if again := shardOf(t, f, key); again != idx {
				t.Fatalf("%v: ShardOf not stable", f)
			}
			hit[idx] = true
		}
		// Whole-key families spread 2000 keys over nearly every shard.
		if len(hit) < 2 {
			t.Errorf("%v: 2000 keys hit %d shards", f, len(hit))
		}
	}
	if _, err := fams.ShardOf(shards.Family(0x99), []byte("k")); !errors.Is(err, shards.ErrUnknownFamily) {
		t.Fatalf("unknown family error = %v", err)
	}
}

func TestShardSpreadOfPointFamily(t *testing.T) {
	hit := map[uint8]int{}
	for i := 0; i < 10000; i++ {
		hit[shardOf(t, nokv.FamilyArtifactRevision, sampleKey(t, nokv.FamilyArtifactRevision, i))]++
	}
	if len(hit) != shards.Shards {
		t.Fatalf("10000 revisions hit %d shards, want %d", len(hit), shards.Shards)
	}
	for idx, n := range hit {
		if n > 100 { // mean 39
			t.Fatalf("shard %02x holds %d of 10000 revisions", idx, n)
		}
	}
}

func TestPathCurrentShardsByParentDirectory(t *testing.T) {
	inc := id16(4)
	key := func(p ...string) []byte {
		return mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).Path(p))
	}
	dirShard := func(p ...string) uint8 {
		sk, err := nokv.PathCurrentShardKey(testRoot, p)
		if err != nil {
			t.Fatal(err)
		}
		if want := mustKey(t, shards.NewKey().ID16(testRoot).PathPrefix(p)); !bytes.Equal(sk, want) {
			t.Fatalf("PathCurrentShardKey = %x, want root | directory prefix %x", sk, want)
		}
		return shards.HashShardKey(nokv.FamilyPathCurrent, sk)
	}
	// Every file of one directory lives in the directory's shard.
	for i := 0; i < 50; i++ {
		if got, want := shardOf(t, nokv.FamilyPathCurrent, key("outputs", "run", fmt.Sprintf("f%d", i))), dirShard("outputs", "run"); got != want {
			t.Fatalf("outputs/run/f%d in shard %02x, directory shard %02x", i, got, want)
		}
	}
	// Top-level entries live in the shard of root_id alone.
	if got, want := shardOf(t, nokv.FamilyPathCurrent, key("notes")), dirShard(); got != want {
		t.Fatalf("top-level entry in shard %02x, want %02x", got, want)
	}
	// The shard key of a/b is root|ordered(a)|NUL: no incarnation, so
	// every incarnation of a workbench keeps a directory in one shard.
	sk, err := fams.ShardKey(nokv.FamilyPathCurrent, key("a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	if want := mustKey(t, shards.NewKey().ID16(testRoot).U8('a'+1).U8(0)); !bytes.Equal(sk, want) {
		t.Fatalf("shard key %x, want %x", sk, want)
	}
	other := mustKey(t, shards.NewKey().ID16(testRoot).ID16(id16(5)).Path([]string{"a", "b"}))
	if got, want := shardOf(t, nokv.FamilyPathCurrent, other), shardOf(t, nokv.FamilyPathCurrent, key("a", "b")); got != want {
		t.Fatalf("a/b of another incarnation in shard %02x, want %02x", got, want)
	}
	// A directory's row in path_directory has the shard key of its
	// parent, as a file there would: a directory's files and
	// subdirectories are found by one shard key.
	for _, p := range [][]string{{"outputs", "run"}, {"notes"}} {
		k := mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).Path(p))
		got, err := fams.ShardKey(nokv.FamilyPathDirectory, k)
		if err != nil {
			t.Fatal(err)
		}
		want, err := nokv.PathCurrentShardKey(testRoot, p[:len(p)-1])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("path_directory %v: shard key %x, want %x", p, got, want)
		}
	}
	// A subtree prefix spans shards: PrefixShard declines it.
	pre := mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).PathPrefix([]string{"outputs"}))
	if _, ok := fams.PrefixShard(nokv.FamilyPathCurrent, pre); ok {
		t.Fatal("PrefixShard claims one shard for a path subtree")
	}
}

func TestRevisionRefShardsByOwner(t *testing.T) {
	owners := []*shards.KeyBuilder{
		shards.NewKey().ID16(testRoot).U8(1).ID16(id16(3)).LenPath([]string{"outputs", "x"}),
		shards.NewKey().ID16(testRoot).U8(2).ID32(id32(3)),
		shards.NewKey().ID16(testRoot).U8(3).ID16(id16(3)),
	}
	for _, ob := range owners {
		owner := mustKey(t, ob)
		want := shards.HashShardKey(nokv.FamilyRevisionRef, owner)
		for i := 0; i < 20; i++ {
			key := append(bytes.Clone(owner), func() []byte { v := id16(100 + i); return v[:] }()...)
			if got := shardOf(t, nokv.FamilyRevisionRef, key); got != want {
				t.Fatalf("owner %x revision %d: shard %02x, want %02x", owner, i, got, want)
			}
		}
		if got, ok := fams.PrefixShard(nokv.FamilyRevisionRef, owner); !ok || got != want {
			t.Fatalf("PrefixShard(owner %x) = %02x, %v; want %02x", owner, got, ok, want)
		}
		if _, ok := fams.PrefixShard(nokv.FamilyRevisionRef, owner[:len(owner)-1]); ok {
			t.Fatalf("PrefixShard of a truncated owner claims one shard")
		}
	}
}

func TestChangeEventShardsByVersionBlock(t *testing.T) {
	key := func(v uint64, seq uint32) []byte {
		return mustKey(t, shards.NewKey().ID16(testRoot).U64(v).U32(seq))
	}
	for block := uint64(0); block < 4; block++ {
		want := shardOf(t, nokv.FamilyChangeEvent, key(block<<8, 0))
		for v := block << 8; v < (block+1)<<8; v += 17 {
			if got := shardOf(t, nokv.FamilyChangeEvent, key(v, uint32(v))); got != want {
				t.Fatalf("version %d in shard %02x, block %d in %02x", v, got, block, want)
			}
			// A feed that seeks to a version knows its shard.
			if got, ok := fams.PrefixShard(nokv.FamilyChangeEvent, key(v, 0)[:16+8]); !ok || got != want {
				t.Fatalf("PrefixShard(version %d) = %02x, %v", v, got, ok)
			}
		}
	}
}

func TestSecondaryIndexShardsByIndexID(t *testing.T) {
	key := func(field, value string, path string) []byte {
		return mustKey(t, shards.NewKey().ID16(testRoot).String(field).Raw([]byte(value)).ID16(id16(1)).Path([]string{path}))
	}
	want := shardOf(t, nokv.FamilySecondaryIndex, key("content_type", "text/plain", "a"))
	for _, v := range []string{"", "application/json", "\x00\x01\xff"} {
		if got := shardOf(t, nokv.FamilySecondaryIndex, key("content_type", v, "b")); got != want {
			t.Fatalf("value %q in shard %02x, want %02x", v, got, want)
		}
	}
	pre := mustKey(t, shards.NewKey().ID16(testRoot).String("content_type"))
	if got, ok := fams.PrefixShard(nokv.FamilySecondaryIndex, pre); !ok || got != want {
		t.Fatalf("PrefixShard(index) = %02x, %v; want %02x", got, ok, want)
	}
}

// TestPrefixShardAgreesWithShardOf checks, for each family, that whenever a
// prefix of a key is said to determine a shard, it is the key's shard.
func TestPrefixShardAgreesWithShardOf(t *testing.T) {
	determined := map[shards.Family]bool{}
	for _, f := range fams.Families() {
		for i := 0; i < 50; i++ {
			key := sampleKey(t, f, i)
			idx := shardOf(t, f, key)
			for n := 0; n <= len(key); n++ {
				if got, ok := fams.PrefixShard(f, key[:n]); ok {
					determined[f] = true
					if got != idx {
						t.Fatalf("%v key %x: PrefixShard(%d bytes) = %02x, ShardOf = %02x", f, key, n, got, idx)
					}
				}
			}
		}
	}
	for _, f := range []shards.Family{nokv.FamilyArtifactManifest, nokv.FamilyRevisionRef, nokv.FamilyCommitMember, nokv.FamilyTag,
		nokv.FamilySnapshotRef, nokv.FamilySnapshotAlias, nokv.FamilyCommitConsumer, nokv.FamilySecondaryIndex, nokv.FamilyChangeEvent,
		nokv.FamilyRestoreMember, nokv.FamilyStagedObject} {
		if !determined[f] {
			t.Errorf("%v: no prefix determines a shard", f)
		}
	}
	for _, f := range []shards.Family{nokv.FamilyPathCurrent, nokv.FamilyCommit, shards.CommandDedupe, shards.System} {
		if determined[f] {
			t.Errorf("%v: a prefix claims one shard", f)
		}
	}
}

func TestShardOfRejectsMalformedKeys(t *testing.T) {
	root := testRoot[:]
	inc := id16(1)
	cases := []struct {
		f   shards.Family
		key []byte
	}{
		{nokv.FamilyRootFence, root[:15]},
		{nokv.FamilyRootFence, append(bytes.Clone(root), 0)},
		{nokv.FamilyWorkspaceCurrent, root},
		{shards.System, nil},
		{nokv.FamilyArtifactRevision, root},
		{nokv.FamilyArtifactManifest, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).U32(1))},
		{nokv.FamilyCommit, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc))},
		{nokv.FamilyOperation, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc))},
		{nokv.FamilySnapshotRef, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).U32(1))},
		// path_current: no terminator, empty component, terminator inside.
		{nokv.FamilyPathCurrent, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).Raw([]byte("bc")))},
		{nokv.FamilyPathCurrent, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).Raw([]byte{'b', 0, 0, 'c', 1}))},
		{nokv.FamilyPathCurrent, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).Raw([]byte{'b', 1, 'c', 1}))},
		{nokv.FamilyPathCurrent, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).Raw([]byte{'b', 0, 1}))},
		{nokv.FamilyCommitMember, mustKey(t, shards.NewKey().ID16(testRoot).ID32(id32(1)).Raw([]byte{'b', 'c'}))},
		// revision_ref: unknown kind, truncated owner, wrong tail.
		{nokv.FamilyRevisionRef, mustKey(t, shards.NewKey().ID16(testRoot).U8(4).ID16(inc).ID16(inc))},
		{nokv.FamilyRevisionRef, mustKey(t, shards.NewKey().ID16(testRoot).U8(2).ID16(inc).ID16(inc).U8(0))},
		{nokv.FamilyRevisionRef, mustKey(t, shards.NewKey().ID16(testRoot).U8(3).ID16(inc).ID16(inc).U8(0))},
		{nokv.FamilyRevisionRef, mustKey(t, shards.NewKey().ID16(testRoot).U8(1).ID16(inc).U32(100).Raw([]byte("bcd")).ID16(inc))},
		{nokv.FamilyRevisionRef, mustKey(t, shards.NewKey().ID16(testRoot).U8(1).ID16(inc).U32(2).Raw([]byte{'b', 1}).ID16(inc))},
		// tag and alias: the name length must match.
		{nokv.FamilyTag, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).U16(3).Raw([]byte("ab")))},
		{nokv.FamilySnapshotAlias, mustKey(t, shards.NewKey().ID16(testRoot).ID16(inc).U16(1).Raw([]byte("ab")))},
		// secondary_index: empty or overlong index id, no path terminator.
		{nokv.FamilySecondaryIndex, mustKey(t, shards.NewKey().ID16(testRoot).U32(0).ID16(inc).Path([]string{"a"}))},
		{nokv.FamilySecondaryIndex, mustKey(t, shards.NewKey().ID16(testRoot).U32(40).Raw([]byte("f")).ID16(inc).Path([]string{"a"}))},
		{nokv.FamilySecondaryIndex, mustKey(t, shards.NewKey().ID16(testRoot).String("f").ID16(inc).Raw([]byte{'b', 'c'}))},
		{nokv.FamilyChangeEvent, mustKey(t, shards.NewKey().ID16(testRoot).U64(5))},
	}
	for _, c := range cases {
		_, err := fams.ShardOf(c.f, c.key)
		if !errors.Is(err, shards.ErrMalformedKey) {
			t.Errorf("ShardOf(%v, %x) error = %v, want ErrMalformedKey", c.f, c.key, err)
		}
	}
}

// TestObjectRoundTripEveryFamily: records of every family, in one shard,
// make a shard object that decodes under the NoKV schema.
func TestObjectRoundTripEveryFamily(t *testing.T) {
	for _, f := range fams.Families() {
		groups := map[uint8][]shards.Record{}
		var idx uint8
		for i := 0; ; i++ {
			k := sampleKey(t, f, i)
			idx = shardOf(t, f, k)
			groups[idx] = append(groups[idx], shards.Record{Key: k, Value: []byte{byte(i)}})
			if len(groups[idx]) == 3 {
				break
			}
		}
		recs := groups[idx]
		slices.SortFunc(recs, func(a, b shards.Record) int { return bytes.Compare(a.Key, b.Key) })
		o, err := shards.NewObject(fams, f, idx, recs)
		if err != nil {
			t.Fatalf("%s: %v", fams.Name(f), err)
		}
		b, ref, err := o.Encode()
		if err != nil {
			t.Fatal(err)
		}
		d, err := shards.DecodeShard(fams, b, ref.Hash, f, idx)
		if err != nil || d.Len() != len(recs) {
			t.Fatalf("%s: decoded %v, %v", fams.Name(f), d, err)
		}
	}
}

// FuzzShardOf: sharding any bytes as a key of any NoKV family never
// panics, fails only with ErrMalformedKey, and agrees with PrefixShard.
func FuzzShardOf(f *testing.F) {
	for _, fam := range fams.Families() {
		for i := 0; i < 3; i++ {
			f.Add(sampleKey(f, fam, i))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, fam := range fams.Families() {
			idx, err := fams.ShardOf(fam, b)
			if err != nil && !errors.Is(err, shards.ErrMalformedKey) {
				t.Fatalf("ShardOf(%v, %x) error %v is not ErrMalformedKey", fam, b, err)
			}
			if pidx, ok := fams.PrefixShard(fam, b); ok && err == nil && pidx != idx {
				t.Fatalf("%v key %x: ShardOf %02x, PrefixShard %02x", fam, b, idx, pidx)
			}
		}
	})
}
