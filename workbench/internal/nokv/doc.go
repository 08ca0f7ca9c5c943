// Package nokv is the NoKV workspace schema as cairn's engine stores it:
// the seed schema's metadata families with their tags, tree names and
// shard-key rules, cairn's own derived families (path_directory), the
// schema marker (nokv_workspace, format 11, value format 2), and the durable records themselves: ids, the keys and values
// of the families the file tools use, the index scalar codec and the enum
// registry. Package workbench opens its shard with Schema and reads and
// writes these records; the engine knows none of this.
//
// # Families
//
// Each family is the one-byte tag of the seed schema's History
// source-family table, under the seed's exact tree name; both are durable
// (tags in every object, names in bucket keys) and must never change.
// Specs lists the product's families; Families is the registry with the
// engine's own added, and Schema pairs it with the marker. The
// constants are named Family<Name> (FamilyPathCurrent), so that a family
// and its record type (ChangeEvent, PathCurrentKey) never share a name.
//
// The seed's reserved engine trees map as follows: system is the engine's
// family system (0xf0, shards.System) and holds the schema marker and
// engine metadata; command_dedupe (0x14) is the engine's request dedupe
// (shards.CommandDedupe), under the seed's tag and name; history is not a
// family, because immutable roots keep every committed version (a
// historical read is a read of the root a hold names); recovery_outbox is
// not a family, because the bucket is the durable log and the head CAS is
// the commit point.
//
// # Sharding
//
// Each family derives its shard key from the record key so that its
// frequent reads touch one shard:
//
//	family                       tag   shard key                                   reads served by one shard
//	root_fence                   0x01  whole key (root_id)                         point read of the fence
//	workspace_current            0x02  whole key                                   point read of a workbench marker
//	path_current                 0x03  root_id|parent directory (ordered           point read of a path; the files
//	                                   components, each followed by NUL)           directly in one directory
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
//	path_directory               0x40  root_id|parent directory (as path_current)  point read of a directory; the
//	                                                                               subdirectories of one directory
//	lease_clock                  0x41  whole key (root_id)                         point read of the lease clock
//	system                       0xf0  whole key                                   point read of the schema marker
//
// Notes on the choices:
//
//   - path_current: a point read and the files of a direct-child listing
//     each touch one shard; a recursive listing merges shards. The shard
//     key leaves out the incarnation (format 9): a reader names a path's
//     shard before it has read the workbench's marker, and fetches both in
//     one round; incarnations of one workbench share a directory's shard,
//     and the incarnation stays in the record key, so their rows never
//     mix.
//   - path_directory (format 10) is not a seed family: it is a cairn
//     mechanism, a derived index of the seed's PathCurrent like the
//     engine's own families, under a tag outside the seed's 0x01-0x17
//     range. One row names each directory that has at least one artifact
//     below it, keyed root_id | incarnation | the directory's exact-row
//     path (PathDirectoryKey) and sharded by the directory's parent, so a
//     directory's files and its subdirectories are found under one shard
//     key, one shard in each family. The seed's directories stay implicit
//     in meaning; the rows are kept complete by the commands that create
//     paths (package workbench) and never removed while nothing removes
//     an artifact.
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
// The shard-key rules also check what they can of a key's shape, so that
// the engine's ShardOf refuses a malformed key: the length of
// fixed-width keys (root_fence, gc_barrier 16 bytes; artifact_revision,
// workbench_commit_head, workspace_incarnation_claim 32; commit 48;
// artifact_manifest, snapshot_ref 40; operation 33), a least length for the
// others, the path structure of path_current and commit_member, the name
// length of tag and snapshot_alias, the owner of revision_ref and the index
// id of secondary_index. A key that fails wraps shards.ErrMalformedKey.
// command_dedupe (a 16-byte namespace and a request id) and system (any
// non-empty key) are checked by the engine.
//
//   - lease_clock (format 13) is not a seed family either: the seed keeps
//     the shard's persisted lease clock among the shard's own records
//     (System), which cairn's engine reserves, so the Workbench keeps one
//     row per root here: the high-water mark of the wall time snapshot
//     commands observed, and the time before which no snapshot may be
//     reaped after a clock regression (snapshot.go).
//
// # Expiry
//
// Two families carry expiry rules (expiry.go; shards.FamilySpec.Expire),
// applied by the engine when a fold rewrites a row's page anyway: a
// Published Publish Operation row expires once its result's commit
// version is more than the engine's dedupe window of commits old (unless
// it published metadata/run_manifest.json or metadata/restore_manifest.json,
// which a commit's or restore's exact replay needs); an Uploaded, Owned
// StagedObject row expires at the first fold that rewrites it, because
// the manifest rows written in the same command own its block. Every
// other row, and every row a rule cannot decode, is kept.
//
// # Records
//
// The record layer covers the key and value of WorkspaceCurrent,
// WorkspaceIncarnationClaim, PathCurrent, ArtifactRevision,
// ArtifactManifest, RevisionRef, GcCandidate, ChangeEvent, Operation
// (Publish), StagedObject and SecondaryIndex (keys.go, values.go,
// operations.go, index.go), SnapshotRef, SnapshotAlias, HistoryHold and
// LeaseClock (snapshot.go), of the commit records Commit, CommitMember,
// CommitConsumer, WorkbenchCommitHead and the BuildCommit and CommitRetire
// Operation values (commit.go), of the Restore Operation value and
// RestoreMember (restore.go), plus the order-preserving index scalar codec
// (index.go). Ids are fixed-width values with String, Parse<Id> and text
// marshalling (ids.go).
//
// Keys follow the seed's layouts and are built with shards.KeyBuilder, so
// every key satisfies Families().ShardOf for its family. Keys carry no
// version: the store's schema marker gates their codec. Parse<Family>Key
// is strict and fails with an error wrapping ErrBadRecord (and the shards
// package's ErrMalformedKey where its reader found the fault).
//
// Every value begins with a one-byte value format version, the seed's
// Durable Format Registry: 2 for the publication-owned workspace, path and
// revision records (WorkspaceCurrent, PathCurrent, ArtifactRevision), for
// ChangeEvent, and for ArtifactManifest, whose rows may carry a small body
// inline (value format 2 of the marker); 2 for the immutable commit
// records (Commit, CommitMember); 5 for a BuildCommit Operation, the
// seed's; 1 for the other ordinary records. The fields follow in
// a fixed order: integers unsigned big-endian, enums one byte, ids at
// their fixed width, variable bytes and strings a four-byte big-endian
// length and the exact bytes, an optional field a presence byte (0 absent,
// 1 present) and then the field. A path inside a value is u32(path_bytes)
// and the ordered, NUL-separated components, as in a Path RevisionRef
// owner. Values are written and read with package bucket/wire (codec.go).
//
// Each encoding is canonical: Decode<Record> accepts exactly the bytes
// Encode produces, so encode(decode(b)) == b for every b that decodes.
// Decoders fail closed with an error wrapping ErrBadRecord on truncation,
// trailing bytes, a bad presence byte, a field that breaks its rule (a
// digest URI that is not "sha256:" and 64 lowercase hex digits, a content
// type that is empty, longer than 255 bytes or holds NUL, an invalid
// workbench id or path); additionally ErrUnknownVersion on an unknown
// version byte and ErrUnknownEnum on an unknown discriminant. Encode
// refuses the same invalid values with the same errors.
//
// # Field rules
//
// The workbench id check (CheckWorkbenchID) and the path normalizer
// (SplitPath) live here, because every key and value holding an id or a
// path applies them; package workbench reports their reasons as
// InvalidArguments. A RuleError's text is the reason alone.
//
// # Enums
//
// Every enum a durable record stores is a one-byte discriminant with the
// exact numeric values of the seed schema's "Initial durable enum
// discriminants" (enums.go). Values are dense from 1; 0 is never valid.
// Each type has String, Valid and a strict Parse<Type> that fails closed
// with ErrUnknownEnum on any value the registry does not hold. SeedEnums
// lists the registry; CairnEnums lists the enums cairn adds where the seed
// names a typed field without fixing its discriminants (ChangeEventKind).
// Adding a discriminant is a schema change: it needs golden bytes, reopen
// and unknown-value rejection tests.
package nokv
