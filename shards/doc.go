// Package shards is the bottom layer of cairn's engine: the registry of
// metadata families, the encoding of record keys, the 256-way hash sharding
// of every family, the canonical shard object codec, ordered scans across
// shards, the key layout of the bucket and a byte-bounded cache of decoded
// immutable objects.
//
// Each family is stored as up to 256 immutable, content-addressed shard
// objects. A root (package roots) names the current object of each
// non-empty shard of each family; a commit rewrites only the shards it
// changed. This package knows nothing of roots, heads or commits.
//
// # Families
//
// A Family is the one-byte tag of the seed schema's History source-family
// table, under the seed's exact tree name; the engine adds its own families
// from tag 0xf0. Families lists them in tag order; ParseFamily and ByName
// fail closed with ErrUnknownFamily for any other tag or name.
//
// The seed's reserved engine trees map as follows: system is the family
// system (0xf0) and holds the schema marker and engine metadata; history is
// not a family, because immutable roots keep every committed version (a
// historical read is a read of the root a hold names); recovery_outbox is
// not a family, because the bucket is the durable log and the head CAS is
// the commit point.
//
// # Sharding
//
// A record lives in shard SHA-256(tag || shard key)[0] of its family, where
// each family derives the shard key from the record key so that its
// frequent reads touch one shard. ShardOf computes the index; ShardKey
// returns the shard key; HashShardKey hashes a shard key a caller built
// (a direct-child listing hashes the directory's prefix); PrefixShard says
// whether a scan prefix determines one shard, and if not the scan merges
// the family's shards (Merge).
//
//	family                       tag   shard key                                   reads served by one shard
//	root_fence                   0x01  whole key (root_id)                         point read of the fence
//	workspace_current            0x02  whole key                                   point read of a workbench marker
//	path_current                 0x03  root_id|incarnation|parent directory        point read of a path; the files
//	                                   (ordered components, each followed by NUL)  directly in one directory
//	artifact_revision            0x04  whole key                                   point read of a revision
//	artifact_manifest            0x05  root_id|artifact_revision_id                a revision's whole manifest
//	revision_ref                 0x06  root_id|reference_kind|reference_owner_id   every reference one owner holds
//	                                                                               (a commit's revision set)
//	commit                       0x07  whole key                                   point read of a commit
//	commit_member                0x08  root_id|commit_id                           a commit's members in path order
//	workbench_commit_head        0x09  whole key                                   point read of a head
//	tag                          0x0a  root_id|workspace_incarnation_id            a tag; all tags of a workspace
//	snapshot_ref                 0x0b  root_id|workspace_incarnation_id            a snapshot; a workspace's snapshots
//	snapshot_alias               0x0c  root_id|workspace_incarnation_id            an alias; a workspace's aliases
//	history_hold                 0x0d  whole key                                   point read of a hold
//	commit_consumer              0x0e  root_id|commit_id                           all consumers of one commit
//	secondary_index              0x0f  root_id|index_id                            an equality or range query on one
//	                                                                               index
//	change_event                 0x10  root_id|u64(commit_version >> 8)            a feed of 256 consecutive versions
//	operation                    0x11  whole key                                   point read of an operation
//	restore_member               0x12  root_id|operation_id                        one restore's ordered members
//	staged_object                0x13  root_id|publish_operation_id                one publication's staging ledger
//	command_dedupe               0x14  whole key                                   exact replay of a request id
//	gc_candidate                 0x15  whole key                                   point read of a candidate
//	gc_barrier                   0x16  whole key (root_id)                         point read of the barrier
//	workspace_incarnation_claim  0x17  whole key                                   point read of a claim
//	system                       0xf0  whole key                                   point read of the schema marker
//
// Notes on the choices:
//
//   - path_current: a point read and the files of a direct-child listing
//     each touch one shard. Directories are implicit, so the subdirectories
//     a listing rolls up have their records in their own shards; naming
//     them, like a recursive listing, merges shards.
//   - revision_ref: the owner's encoding is discriminated by the kind
//     (Path: incarnation | u32 length | ordered NUL-separated path bytes;
//     Commit: commit_id; RevisionDependency: child revision id), and the
//     16-byte artifact revision id ends the key; both are checked.
//     reference_kind is one byte, as the seed writes enum discriminants in
//     its identity digests. An unknown kind fails closed.
//   - secondary_index: the seed gives each index an order-preserving value
//     codec but does not define it, so the end of the encoded value cannot
//     be found here. The shard key is therefore root_id | index_id, with
//     index_id a general byte string (four-byte length); a query on one
//     index reads one shard, and one index's entries share that shard, so a
//     large index makes a large shard. Once the codec is fixed and
//     self-delimiting, the value can join the shard key under a new format.
//     The key must end with the exact-row path.
//   - change_event: commit_version is a u64; a prefix of root_id and the
//     first seven bytes of the version already fixes the shard.
//
// ShardOf also checks what it can of a key's shape: the length of
// fixed-width keys (root_fence, gc_barrier 16 bytes; artifact_revision,
// workbench_commit_head, workspace_incarnation_claim 32; commit 48;
// artifact_manifest, snapshot_ref 40; operation 33), a least length for the
// others, the path structure of path_current and commit_member, the name
// length of tag and snapshot_alias, the owner of revision_ref and the index
// id of secondary_index. A key that fails wraps ErrMalformedKey.
//
// # Record keys
//
// KeyBuilder and KeyReader encode the seed's fields: unsigned big-endian
// integers (U8, U16, U32, U64), fixed ids (ID8, ID16, ID32), general byte
// strings with a four-byte length (Bytes, String), tag names and aliases
// with a two-byte length (Name), and paths. A path component is encoded by
// Ordered, which adds one to each byte (a component is non-empty UTF-8
// without NUL, so the result holds neither 0x00 nor 0x01). The exact row of
// a path joins the ordered components with NUL and ends with 0x01; the
// subtree prefix of a directory is each ordered component followed by NUL.
// Keys then sort component by component in byte order, with a directory's
// descendants before its own exact row, then longer siblings: "a/…", "a",
// "a\x01", "ab". No exact row is a prefix of another, and a subtree prefix
// matches exactly the paths below the directory. Further path rules (no
// "." or "..", no "/", length limits) belong to the one path normalizer
// above this package. Reading a malformed key returns a *KeyError wrapping
// ErrMalformedKey.
//
// # Shard object format
//
// A shard object is the canonical encoding of one shard's records, format
// version 1:
//
//	offset  size  field
//	0       4     magic "CRNS"
//	4       1     format version, 1
//	5       1     family tag
//	6       1     shard index
//	7       16    salt: the nonce of the commit attempt that wrote it
//	23      4     record count n, u32 big-endian, at least 1
//	27      …     n records, each:
//	                u32 key length | key | u32 value length | value
//
// The salt gives objects with equal records distinct identities: no commit
// attempt can find one of its new objects already present in the bucket as
// an orphan that a sweep may be deleting (see the writer rule in package
// head). Keys are non-empty and strictly ascending; every key belongs to the
// object's family and shard. Nothing follows the last record. There is
// exactly one encoding of a set of records, so encode(decode(b)) == b. An
// empty shard is never stored; Encode refuses it with ErrEmptyObject and
// the root omits the shard.
//
// An object's identity is the SHA-256 of its exact bytes (Hash). Decode
// verifies the hash before anything else and fails with ErrIntegrity (the
// bucket package's sentinel) on a mismatch; it then rejects, with
// ErrMalformedObject, a wrong magic or version, an unknown family
// (also ErrUnknownFamily), a count that does not match the records, a
// length that overruns, unsorted or repeated keys (also ErrUnsorted), a key
// of another shard (also ErrWrongShard) and trailing bytes. DecodeShard
// also checks the family and index that a root's table names.
//
// A decoded Object is immutable: Get is a binary search, Scan yields the
// records under a prefix strictly after a start key, and Apply returns a
// new object from sorted puts and deletes, sharing the unchanged records.
// A one-record change rewrites the whole shard: BenchmarkApplyOneRecord
// measures it for a shard of 400 records (a family of 100,000 records).
//
// # Bucket layout
//
// Layout formats every key of one logical shard (ShardID, 32 lowercase hex
// digits); no other code formats them:
//
//	shards/{lsid}/head                                  the one mutable object
//	shards/{lsid}/roots/{hash}                          roots
//	shards/{lsid}/tables/{hash}                         tables
//	shards/{lsid}/objects/{family}/{idx}/{hash}         shard objects, idx as 2 hex digits
//	artifacts/{lsid}/{root_id}/{revision_id}/blocks/{object_index}
//	                                                    artifact blocks, ids in 32 hex digits,
//	                                                    object_index in 16
//	pins/{lsid}/{name}                                  pins
//
// Hashes are 64 lowercase hex digits. ParseObjectKey accepts only the
// canonical keys of roots, tables and shard objects, the hash-named
// immutable objects, and rejects everything else with ErrInvalidObjectKey.
//
// # Cache
//
// Cache holds decoded immutable values keyed by Hash, bounded by a byte
// budget that a size function measures (Object.MemSize for shard objects),
// evicting the least recently used entries. A value larger than the whole
// budget is not cached (counted as Rejected) and evicts nothing. Entries
// never go stale because their keys are their content; adding a present
// hash keeps the present value. Load fetches on a miss, verifies the bytes
// against the hash before decoding, caches the result and shares one fetch
// among concurrent loads of one hash; each caller waits only as long as its
// own context allows. Bytes that fail verification or decoding are never
// cached. Hits, misses, evictions and rejections are counted (Stats). The
// cache is generic, so roots and tables can share the mechanism.
package shards
