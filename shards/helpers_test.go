package shards_test

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// schema is the engine's test schema: a few families of fixed-length keys
// and the engine's own.
var schema = shardstest.Schema()

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

// sampleKey returns a valid record key of family f, varying with i.
func sampleKey(t testing.TB, f shards.Family, i int) []byte {
	t.Helper()
	k := shards.NewKey()
	switch f {
	case shardstest.Fixed16:
		k.ID16(id16(i))
	case shardstest.Fixed32, shardstest.Fixed32B, shardstest.Fixed32C:
		k.ID16(testRoot).ID16(id16(i))
	case shardstest.Grouped:
		k.ID16(testRoot).ID16(id16(i % 5)).U64(uint64(i))
	case shardstest.Fixed48:
		k.ID16(testRoot).ID32(id32(i))
	case shards.CommandDedupe:
		k.ID16(testRoot).String(fmt.Sprintf("req-%d", i))
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
	idx, err := schema.ShardOf(f, key)
	if err != nil {
		t.Fatalf("ShardOf(%v, %x): %v", f, key, err)
	}
	return idx
}
