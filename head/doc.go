// Package head is cairn's commit engine for one logical shard: the head
// object, the schema gate, pinned snapshots, and the commit loop.
//
// # The head
//
// Each logical shard has exactly one mutable object, its head
// (shards.Layout.Head), a canonical JSON document (schema "cairn.head.v2")
// holding only what every request needs: the schema marker, the logical
// shard id, the commit sequence, the hash and size of the current root,
// the nonce of the attempt that wrote it, the commit time and the nonces
// of the MaxRecentNonces attempts that wrote the heads before it, under
// MaxHeadBytes (1 KiB). A head of format "cairn.head.v1" is ErrOldFormat,
// never read as empty. ReadHead (and DecodeHead, its decoder) is the one
// reader of heads, for the engine, the sweep, pins, fsck and recovery; it
// returns the head object's attributes too, its store time among them.
//
// A genesis head (Head.Genesis) has sequence 0 and names no root: the
// first write of a shard creates it, create-only, before anything is
// staged, so that a crash during a first write leaves nothing, a genesis
// head or a committed head, never objects without a head.
//
// # The schema gate
//
// The engine knows no product's families. The caller opens a shard with a
// Schema: the product's family registry (to which the engine adds its own
// system and command_dedupe families) and a Marker naming the product's
// formats (schema id, format version, value format version). Every object
// is decoded against that registry; an unknown family tag fails closed. A
// Store opens shards of its marker and of the value format before it, and
// writes each in its own (docs/engine.md, section 2.8).
//
// Open does no I/O. The first commit of a shard without a head (or any
// object under its prefix) creates the genesis head, create-only, then
// commits the System("schema") record, the marker, as sequence 1. A read
// of a shard without a head fails with ErrNoHead and writes nothing
// (PinOrEmpty lists the prefix to tell a shard never written from a lost
// head); a shard with objects but no head is never initialized. Every Pin
// checks the head's marker and shard id (ErrSchemaMismatch, ErrBadHead);
// the system record is checked once per Store, beside the first
// snapshot's own reads, and every read and commit waits for that check,
// so a replica that cannot validate the shard serves nothing, yet the
// check adds no round.
//
// # Reads
//
// Pin reads the head (a strong read) and returns the Snapshot it names.
// Concurrent Pins of one Store share a head read only if it was sent after
// each of them arrived, so no Pin returns a state older than its call. An
// unchanged head version reuses the decoded snapshot; a changed one loads
// the new root, and tables, delta segments and shard objects load lazily
// through caches of immutable objects keyed by hash and bounded in bytes.
// A read overlays the root's deltas, newest first, on the base shards
// (a tombstone hides a key); it fetches the deltas in the same round as
// the table it needs. Prefetch loads the tables of several families (and
// the deltas) in one parallel round and named shards in a second, for a
// caller that knows what it will read. Every object is
// verified against its hash before it is used or cached. At returns a
// frozen snapshot of a held root.
//
// # Commits
//
// Do runs a Command, a pure function of the pinned snapshot, and commits
// its mutations:
//
//  1. pin the head;
//  2. apply the command (and the others of its group commit, in order) to
//     an overlay of the snapshot; a command that returns an error applies
//     nothing;
//  3. build one delta segment holding every record change and a new root
//     listing it before the parent's deltas (or, when folding, the new
//     shard objects, pages, page indexes and tables of the parent's deltas
//     and the batch applied to the base, and a root without deltas, pages
//     rewritten only where changes touch them), all salted with a fresh
//     attempt nonce, and check the writer rule;
//  4. write them all in one parallel round;
//  5. write the new head (sequence + 1) conditional on the pinned head's
//     version.
//
// A root past Options.MaxDeltas deltas (or MaxDeltaBytes) is folded by a
// background commit; one past twice either bound folds inline.
//
// A precondition failure, an ambiguous write or an unreachable store at
// step 5 is never taken at face value: the head is read again, and the
// attempt's nonce in it, in its recent nonces or in the chain of roots back to
// the pinned sequence means the commit landed. Otherwise the attempt is
// rebuilt from step 1 after a jittered exponential backoff (at least
// ThrottleBackoff when the store throttled), up to MaxAttempts, then
// ErrRetryable. If the head cannot be read to settle an ambiguous write,
// the result is ErrUnknownOutcome. Both are safe to retry with the same
// request id: a command with a RequestID stores its result in the
// command_dedupe family in the same commit, so an exact retry replays it
// and a reuse with other inputs is ErrRequestReused.
//
// Dedupe records expire: a fold that rewrites the shard object or page
// holding one leaves it out once its commit sequence is more than
// Options.DedupeWindow commits (default 1,000,000) before the fold's.
// A retry of a request id older than the window may therefore apply
// again, as a new request; within the window it always replays. A fold
// never rewrites a page only to expire records, so a record may outlive
// its window. A product family may carry its own expiry rule
// (shards.FamilySpec.Expire), applied the same way.
//
// Group commit: commands that arrive together at one Store are applied in
// order to one pinned snapshot and land with one CAS; their results (and
// refusals) are delivered once it landed, or at once when the group wrote
// nothing (the pin was read after each command arrived).
//
// # The writer rule
//
// GC deletes objects unreachable from the roots it marks. A new root may
// therefore reference only objects reachable from its parent root or
// written by the attempt itself. Salting every new object with the
// attempt's nonce means an attempt never finds one of its objects already
// present as an orphan, and checkWriterRule refuses any candidate root that
// breaks the rule (ErrWriterRule). An attempt whose staging took longer
// than MaxAttemptAge is abandoned before its CAS.
//
// # The graph walker and Check
//
// Walk (and Walker, for several roots) is the one walker of the object
// graph: the sweep's mark, pin verify and pin copy, fsck and Check all
// use it, so what the sweep keeps and what a check reads are the same
// objects. A verifying walk (walk.Options.Verify) checks every object
// against its hash and against the reference that named it
// (ErrInconsistent), and every block a record names (Refs) against its
// digest. Check is a verifying walk of a root's whole reachable graph
// straight from the bucket, as bbolt's Tx.Check does for its file;
// Options.Check runs it after every commit, which tests turn on.
package head
