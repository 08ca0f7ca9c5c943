// Package shards is the bottom layer of cairn's engine: the registry of
// metadata families, the encoding of record keys, the 256-way hash sharding
// of every family, the canonical shard object and delta segment codecs,
// ordered scans across
// shards, the key layout of the bucket and a byte-bounded cache of decoded
// immutable objects.
//
// Each family is stored as up to 256 immutable, content-addressed shard
// objects. A root (package roots) names the current object of each
// non-empty shard of each family; a commit rewrites only the shards it
// changed. This package knows nothing of roots, heads or commits.
//
// # Families and schemas
//
// A Family is a one-byte tag. The engine owns two families: System (0xf0,
// "system"), which holds the schema marker and engine metadata, and
// CommandDedupe (0x14, "command_dedupe"), which holds package head's
// request dedupe records. Every other family belongs to the product, which
// describes each with a FamilySpec (tag, name, shard-key rule) and
// collects them with NewSchema; the engine's families are added
// automatically, and a tag or name used twice, an engine family's tag or
// name, a tag from MinEngineTag up or a name that is not 1 to 64 bytes of
// a-z, 0-9 and '_' is ErrInvalidSchema. A Schema is immutable and the only
// registry: every codec and layout function that meets a tag or name takes
// the schema it is to be resolved in. Families lists them in tag order;
// ParseFamily and ByName fail closed with ErrUnknownFamily for any tag or
// name the schema does not hold, and so does every decoder. Tags and names
// are durable: tags are written into every shard object, table and root,
// and names into bucket keys.
//
// # Sharding
//
// A record lives in shard SHA-256(tag || shard key)[0] of its family. The
// family's FamilySpec.ShardKey derives the shard key from the record key,
// so that the family's frequent reads touch one shard, and checks what it
// needs of the key's shape; without one, the whole key is the shard key.
// Keys are never empty. Schema.ShardOf computes the index and
// Schema.ShardKey returns the shard key, failing with an error that wraps
// ErrMalformedKey for a key of the wrong shape; HashShardKey hashes a
// shard key a caller built (a direct-child listing hashes the directory's
// prefix). Schema.PrefixShard says, through FamilySpec.PrefixKey, whether
// a scan prefix determines one shard; if not, the scan merges the
// family's shards (Merge).
//
// # Expiry
//
// A FamilySpec may carry an Expire rule for records that only serve
// exact retries; Schema.Expiry returns it. The engine asks it, with an
// ExpiryClock (the fold's commit sequence and time), only of records in
// objects a fold rewrites anyway, and Object.Drop leaves the expired ones
// out. The engine's own command_dedupe rule is package head's.
//
// CheckJoinedPath and CheckExactPath check the byte structure of encoded
// paths without decoding them, for shard-key rules that end at a path or
// its parent directory.
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
// An object's identity is the SHA-256 of its exact bytes (digest.Hash). Decode
// verifies the hash before anything else and fails with ErrIntegrity (the
// bucket package's sentinel) on a mismatch; it then rejects, with
// ErrMalformedObject, a wrong magic or version, a family its schema does
// not hold (also ErrUnknownFamily), a count that does not match the records, a
// length that overruns, unsorted or repeated keys (also ErrUnsorted), a key
// of another shard (also ErrWrongShard) and trailing bytes. DecodeShard
// also checks the family and index that a root's table names.
//
// An Object keeps the schema it was built or decoded with, and checks
// every key it takes against that schema's shard-key rule. LoadObject
// decodes through a Cache, which must serve one schema. A decoded Object
// is immutable: Get is a binary search, Scan yields the
// records under a prefix strictly after a start key, and Apply returns a
// new object from sorted puts and deletes, sharing the unchanged records.
// A one-record change rewrites the whole object (shard or page):
// BenchmarkApplyOneRecord measures it for a shard of 400 records (a family
// of 100,000 records).
//
// # Delta segments
//
// A Delta ("CRND", format 1) holds every record change of one commit,
// across families: puts and tombstones sorted by (family, key), each key
// once per family, every key checked against its family's shape. The
// engine writes one per commit and folds them into shard objects later;
// NewDelta, Encode, DecodeDelta (hash first, then one canonical encoding)
// and LoadDelta through a Cache, as for objects.
//
// # Pages
//
// A shard too large for one object is stored as pages: shard objects in
// the same format, each holding the shard's records of one key range,
// named in key order by an Index ("CRNX", format 1: salt, family, shard,
// then per page its first key, hash, size and record count; the first
// page's key empty, the others strictly ascending and of the shard; at
// least two pages). Index.Find names the page of a key, Range the pages
// a scan needs, CheckPage checks a page against its place. Object.Split,
// Join and Slice cut and join pages without checking keys again; Merge
// accepts pages of one shard in key order beside other shards.
//
// # Bucket layout
//
// Layout formats every key of one logical shard (ShardID, 32 lowercase hex
// digits) under one schema, whose names the shard objects' keys use; no
// other code formats them:
//
//	shards/{lsid}/head                                  the one mutable object
//	shards/{lsid}/roots/{hash}                          roots
//	shards/{lsid}/tables/{hash}                         tables
//	shards/{lsid}/deltas/{hash}                         delta segments
//	shards/{lsid}/objects/{family}/{idx}/{hash}         shard objects and pages, idx as 2 hex digits
//	shards/{lsid}/indexes/{family}/{idx}/{hash}         page indexes
//	artifacts/{lsid}/{root_id}/{revision_id}/blocks/{object_index}
//	                                                    artifact blocks, ids in 32 hex digits,
//	                                                    object_index in 16
//	pins/{lsid}/{name}                                  pins
//
// Hashes are 64 lowercase hex digits. ParseObjectKey accepts only the
// canonical keys of roots, tables, delta segments, shard objects and page indexes of families its
// schema holds, the hash-named immutable objects, and rejects everything
// else with ErrInvalidObjectKey.
//
// # Cache
//
// Cache holds decoded immutable values keyed by digest.Hash, bounded by a byte
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
