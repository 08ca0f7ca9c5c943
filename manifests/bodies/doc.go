// Package bodies owns the objects that hold artifact bodies: the block
// objects under BlockKey and the staging ledgers under
// StagingKey. A Store is the only holder of the bucket for
// them; it cuts bodies into blocks, stages them behind a ledger, reads
// them back as a stream and deletes what a failed publication left. It
// knows nothing of paths, revisions' metadata or the engine: the caller
// decides when a staging is published and records its blocks in its own
// metadata (the Workbench's ArtifactManifest rows), converting them to and
// from Block.
//
// # Blocks and ledgers
//
// A body is cut into blocks of Options.BlockSize bytes, the last one
// shorter (Plan, or a Planner for a stream); block i of revision rev of
// root is the object BlockKey(root, rev, i), immutable once
// written. A Block names its key, its index, its size and the SHA-256 of
// its bytes.
//
// A Staging's ledger is written create-only under
// StagingKey(operation): a canonical manifests document, schema
// "cairn.staging_ledger.v1" (StagingLedger), naming every block the
// staging may upload with its length and digest, and the call that staged
// it (Origin). Stage and StageStream send the ledger in the same round as
// the blocks, not before them, and a failed block does not cancel the
// ledger's write. Blocks are uploaded create-only, Options.Parallel at a
// time, each checked against its planned size and digest before it is
// sent; Upload sends blocks alone.
//
// Sending the ledger beside the blocks is safe because nothing reachable
// ever depends on a block before its publication lands, and a publication
// is committed only after Stage returned, with the ledger and every block
// in the bucket. A crash in that round can leave blocks that no ledger
// names: no root references them either, so they are unreachable objects
// that the shard's sweep, which owns everything not reachable from a root
// once it is older than the grace period, deletes. The ledger is a
// shortcut for cleanup, not what makes it safe.
//
// A Block may hold its bytes (Block.Data): a small body that the caller
// keeps inline in its own metadata, with no object, or an object fetched
// ahead with Prefetch before the metadata naming it arrived. Stream checks
// such a block like any other and sends no request for it.
//
// # What is retried
//
// Ledgers and blocks are immutable objects written create-only, so
// sending one again cannot make things worse: each write runs under
// bucket.Retry with Options.Retry (DefaultRetry: 4 tries) and is tried
// again after any bucket.Transient error (unavailable, throttled, an
// ambiguous outcome, an integrity failure in transit). A precondition
// failure means the key is taken, usually by an earlier try whose answer
// was lost: the object is read back, and equal bytes are success. Different
// bytes are an error wrapping bucket.ErrPrecondition, which is final.
//
// Reads and deletes are not retried. A failed read fails the Stream; a
// failed delete leaves garbage that a ledger still names (below).
//
// # Reading
//
// Stream reads the blocks of a body in order, one GET each, fetching up
// to Options.Parallel blocks ahead of the one it hands to the caller, so a
// body of at most that many blocks costs one round of requests and a
// larger one keeps that many in flight. Every block is checked against its
// size and digest before the caller sees it: a short object or a mismatch
// is an error wrapping bucket.ErrIntegrity, a missing one keeps
// bucket.ErrNotExist. The first error ends the stream once the fetches in
// flight have ended.
//
// A block that is a whole object of at most CacheMaxBlock bytes is kept,
// once checked, in a least-recently-used cache bounded by
// Options.CacheBytes (DefaultCacheBytes, 32 MiB; negative: none), under
// its object key; a read finds it there only when it expects the digest
// it was checked against, so the cache is content-addressed by key and
// digest. Block objects are immutable, so a cached block never goes
// stale. Prefetch of a key whose block is cached sends nothing. A block
// that failed its check, a slice of an object and the blocks of large
// bodies are never cached; what Stream hands out may be shared with the
// cache and must not be modified.
//
// # Crashes and cleanup
//
// Discard deletes a staging that was not published: its blocks, then,
// only when every block delete succeeded, its ledger. DropLedger deletes
// the ledger of a staging that was published, whose blocks the caller's
// metadata owns now; the caller decides when (the Workbench does it in the
// background, past the store's write budget for one object). Both are best
// effort for their callers. What a crash or a failed delete leaves behind:
//
//   - a crash while staging: the ledger, if it landed, and the blocks
//     uploaded so far, which the ledger names if it landed;
//   - a failed block delete in Discard: the ledger and what remains;
//   - a crash after publication, before DropLedger: the ledger alone, its
//     blocks owned by the published metadata.
//
// The Store never removes those leftovers itself. They are garbage the
// shard's sweep owns once older than its grace period (package gcsweep):
// it deletes a ledger older than the grace, and a block once no reachable
// record of the caller names it and it is older than the grace.
package bodies
