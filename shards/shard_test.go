package shards_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// TestShardOfGolden pins the sharding of the engine's families and of the
// test schema: a change to their shard keys or to the hash moves these
// keys and fails here. The product pins its own families.
func TestShardOfGolden(t *testing.T) {
	cases := []struct {
		f   shards.Family
		key string
		idx uint8
	}{
		{shards.CommandDedupe, "0000000000007007000000000000005a000000057265712d31", 0x9d},
		{shards.System, "6b65792d30", 0x89},
		{shardstest.Grouped, "0000000000007007000000000000005a0000000000000002000000000000005a0000000000000002", 0x19},
		{shardstest.Grouped, "0000000000007007000000000000005a0000000000000003000000000000005a0000000000000003", 0xe7},
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

func TestHashShardKeyIsFirstByteOfSHA256(t *testing.T) {
	for _, sk := range [][]byte{nil, []byte("x"), bytes.Repeat([]byte{7}, 200)} {
		for _, f := range schema.Families() {
			sum := sha256.Sum256(append([]byte{byte(f)}, sk...))
			if got := shards.HashShardKey(f, sk); got != sum[0] {
				t.Fatalf("HashShardKey(%v, %x) = %02x, want %02x", f, sk, got, sum[0])
			}
		}
	}
	// A whole-key family's shard key is its key.
	key := sampleKey(t, shardstest.Fixed48, 9)
	if got, want := shardOf(t, shardstest.Fixed48, key), shards.HashShardKey(shardstest.Fixed48, key); got != want {
		t.Fatalf("fixed48 shard %02x, want %02x", got, want)
	}
}

func TestEveryFamilyShards(t *testing.T) {
	for _, f := range schema.Families() {
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
	if _, err := schema.ShardOf(shards.Family(0x99), []byte("k")); !errors.Is(err, shards.ErrUnknownFamily) {
		t.Fatalf("unknown family error = %v", err)
	}
	if _, ok := schema.PrefixShard(shards.Family(0x99), []byte("k")); ok {
		t.Fatal("PrefixShard of an unknown family claims a shard")
	}
}

func TestShardSpreadOfPointFamily(t *testing.T) {
	hit := map[uint8]int{}
	for i := 0; i < 10000; i++ {
		hit[shardOf(t, shardstest.Fixed32, sampleKey(t, shardstest.Fixed32, i))]++
	}
	if len(hit) != shards.Shards {
		t.Fatalf("10000 keys hit %d shards, want %d", len(hit), shards.Shards)
	}
	for idx, n := range hit {
		if n > 100 { // mean 39
			t.Fatalf("shard %02x holds %d of 10000 keys", idx, n)
		}
	}
}

// TestPrefixShardAgreesWithShardOf checks, for each family, that whenever a
// prefix of a key is said to determine a shard, it is the key's shard.
func TestPrefixShardAgreesWithShardOf(t *testing.T) {
	determined := map[shards.Family]bool{}
	for _, f := range schema.Families() {
		for i := 0; i < 50; i++ {
			key := sampleKey(t, f, i)
			idx := shardOf(t, f, key)
			for n := 0; n <= len(key); n++ {
				if got, ok := schema.PrefixShard(f, key[:n]); ok {
					determined[f] = true
					if got != idx {
						t.Fatalf("%v key %x: PrefixShard(%d bytes) = %02x, ShardOf = %02x", f, key, n, got, idx)
					}
				}
			}
		}
	}
	if !determined[shardstest.Grouped] {
		t.Errorf("grouped: no prefix determines a shard")
	}
	for _, f := range []shards.Family{shardstest.Fixed48, shards.CommandDedupe, shards.System} {
		if determined[f] {
			t.Errorf("%v: a prefix claims one shard", f)
		}
	}
}

func TestShardOfRejectsMalformedKeys(t *testing.T) {
	root := testRoot[:]
	cases := []struct {
		f   shards.Family
		key []byte
	}{
		{shards.System, nil},
		{shards.System, []byte{}},
		{shards.CommandDedupe, root},
		{shardstest.Fixed16, root[:15]},
		{shardstest.Fixed16, append(bytes.Clone(root), 0)},
		{shardstest.Grouped, root},
	}
	for _, c := range cases {
		_, err := schema.ShardOf(c.f, c.key)
		if !errors.Is(err, shards.ErrMalformedKey) {
			t.Errorf("ShardOf(%v, %x) error = %v, want ErrMalformedKey", c.f, c.key, err)
		}
	}
}

// TestSpecErrorsAreMalformedKeys: whatever error a product's ShardKey
// returns, the schema reports a malformed key.
func TestSpecErrorsAreMalformedKeys(t *testing.T) {
	plain := errors.New("not mine")
	s, err := shards.NewSchema(shards.FamilySpec{Family: 0x01, Name: "picky",
		ShardKey: func([]byte) ([]byte, error) { return nil, plain }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.ShardOf(0x01, []byte("k")); !errors.Is(err, shards.ErrMalformedKey) || !errors.Is(err, plain) {
		t.Fatalf("ShardOf error = %v, want ErrMalformedKey wrapping the spec's", err)
	}
}

func TestCheckPath(t *testing.T) {
	for _, c := range []struct {
		b       []byte
		lastSep int
		ok      bool
	}{
		{[]byte("b"), -1, true},
		{[]byte{'b', 0, 'c'}, 1, true},
		{[]byte{'b', 0, 'c', 0, 'd'}, 3, true},
		{nil, -1, false},
		{[]byte{0, 'c'}, -1, false},
		{[]byte{'b', 0, 0, 'c'}, -1, false},
		{[]byte{'b', 0}, -1, false},
		{[]byte{'b', 1, 'c'}, -1, false},
	} {
		got, err := shards.CheckJoinedPath(c.b)
		if (err == nil) != c.ok || got != c.lastSep || (err != nil && !errors.Is(err, shards.ErrMalformedKey)) {
			t.Errorf("CheckJoinedPath(%x) = %d, %v; want %d, ok %v", c.b, got, err, c.lastSep, c.ok)
		}
		exact := append(bytes.Clone(c.b), shards.PathTerm)
		if got, err := shards.CheckExactPath(exact); (err == nil) != c.ok || got != c.lastSep {
			t.Errorf("CheckExactPath(%x) = %d, %v; want %d, ok %v", exact, got, err, c.lastSep, c.ok)
		}
	}
	if _, err := shards.CheckExactPath([]byte("bc")); !errors.Is(err, shards.ErrMalformedKey) {
		t.Errorf("CheckExactPath without terminator: %v", err)
	}
	// The path encoding passes its own check.
	p, err := shards.EncodePath([]string{"outputs", "run", "f.txt"})
	if err != nil {
		t.Fatal(err)
	}
	pre, err := shards.AppendPathPrefix(nil, []string{"outputs", "run"})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := shards.CheckExactPath(p); err != nil || !bytes.Equal(p[:got+1], pre) {
		t.Fatalf("CheckExactPath(%x) = %d, %v; parent prefix %x", p, got, err, pre)
	}
}
