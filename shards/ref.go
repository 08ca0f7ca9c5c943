package shards

import "github.com/cairnstore/cairn/bucket/digest"

// Ref names an immutable object and what a reader can check before
// fetching it: its hash, its size in bytes and, for a shard object, its
// record count.
type Ref struct {
	Hash  digest.Hash
	Size  int64
	Count uint32
}
