// Package roots is cairn's immutable root object and the per-family tables
// it names.
//
// A root is one committed state of a logical shard. For each family that
// has records it names one table object; a table (format 2) names, for
// each non-empty shard of that family, its current shard object or, for a
// large shard, its page index (shards.Index): the base. A root (format
// 2) also lists, newest first, the delta segments (shards.Delta) of the
// commits not yet folded into the base; readers overlay them on it. A
// commit writes a delta and a new root that lists it; a fold writes new
// shard objects (or pages and indexes) for the shards it changed, new tables for the families it
// changed, and a root with fewer deltas; everything unchanged is
// referenced as it was.
// Keeping tables apart keeps the root small (about 50 bytes a family), and
// every replica reads the root after every commit.
//
// A root also carries its parent's hash, the sequence of the commit that
// made it, the commit's nonce, and holds: roots that must be kept (a
// snapshot's state, an operation in flight), each under a unique owner
// name. GC marks from the current root, its holds and pins; holds keep
// one level (Root.KeptHolds).
//
// # Formats
//
// Both are binary, canonical (one encoding per value) and versioned, and
// are named by the SHA-256 of their exact bytes. Integers are unsigned
// big-endian.
//
//	table: "CRNT" | version=1 | nonce[16] | family u8 | n u16 |
//	       n × (shard u8 | hash[32] | size u64 | records u32)
//	       shards strictly ascending, 1 ≤ n ≤ 256
//	root:  "CRNR" | version=1 | nonce[16] | parent[32] (zeros: none) |
//	       sequence u64 | f u8 | f × (family u8 | table hash[32] |
//	       table size u64 | shards u16 | records u64)  families strictly ascending |
//	       h u32 | h × (owner: u16 len, bytes | root hash[32])  owners strictly ascending
//
// The nonce is the committing attempt's: it makes every table and root an
// attempt writes a new object, so a writer never finds its own new root or
// table already in the bucket as an orphan that a sweep may be deleting.
//
// Decoders verify the hash first (bucket.ErrIntegrity) and then reject
// anything that is not the canonical encoding (ErrMalformed). LoadTable
// and LoadRoot decode through a shards.Cache instead, whose Load verifies
// the hash of fetched bytes; the bytes are hashed once, before they are
// decoded or cached.
package roots
