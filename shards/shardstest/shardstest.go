// Package shardstest holds a small schema for tests of the engine
// (packages shards, roots and head): families of fixed-length keys, as a
// product would define them, under tags a product may use. It is test
// glue; no production code imports it.
package shardstest

import (
	"fmt"
	"sync"

	"github.com/cairnstore/cairn/shards"
)

// The test families. Each key is exactly the length the name says; a
// key of Grouped is 40 bytes and its first 32 select the shard, so many
// keys share one shard and a prefix of 32 bytes or more names it.
const (
	Fixed16  shards.Family = 0x01
	Fixed32  shards.Family = 0x04
	Grouped  shards.Family = 0x05
	Fixed48  shards.Family = 0x07
	Fixed32B shards.Family = 0x09
	Fixed32C shards.Family = 0x17
)

// GroupLen is the length of the shard key of a Grouped key.
const GroupLen = 32

// Specs returns the test families' specs in tag order.
func Specs() []shards.FamilySpec {
	return []shards.FamilySpec{
		fixed(Fixed16, "fixed16", 16),
		fixed(Fixed32, "fixed32", 32),
		grouped(),
		fixed(Fixed48, "fixed48", 48),
		fixed(Fixed32B, "fixed32_b", 32),
		fixed(Fixed32C, "fixed32_c", 32),
	}
}

var schema = sync.OnceValue(func() *shards.Schema {
	s, err := shards.NewSchema(Specs()...)
	if err != nil {
		panic("shardstest: " + err.Error())
	}
	return s
})

// Schema returns the test schema: the test families and the engine's.
func Schema() *shards.Schema { return schema() }

func fixed(f shards.Family, name string, n int) shards.FamilySpec {
	return shards.FamilySpec{Family: f, Name: name, ShardKey: func(key []byte) ([]byte, error) {
		if len(key) != n {
			return nil, &shards.KeyError{Op: name + " key", Reason: fmt.Sprintf("%d bytes, want %d", len(key), n)}
		}
		return key, nil
	}}
}

func grouped() shards.FamilySpec {
	spec := fixed(Grouped, "grouped", GroupLen+8)
	check := spec.ShardKey
	spec.ShardKey = func(key []byte) ([]byte, error) {
		if _, err := check(key); err != nil {
			return nil, err
		}
		return key[:GroupLen], nil
	}
	spec.PrefixKey = func(p []byte) ([]byte, bool) {
		if len(p) < GroupLen {
			return nil, false
		}
		return p[:GroupLen], true
	}
	return spec
}
