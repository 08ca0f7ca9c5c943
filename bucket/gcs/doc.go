// Package gcs is the Bucket adapter for Google Cloud Storage, built on
// cloud.google.com/go/storage over the JSON API.
//
// # Opening
//
// The URL is
//
//	gs://BUCKET[/PREFIX][?endpoint=URL[&emulator=fake-gcs-server]]
//
// endpoint (optional) points the client at a GCS-compatible server such as
// fake-gcs-server, for example http://127.0.0.1:4443. It is the server's
// root: the adapter adds /storage/v1/ itself, sends no credentials and
// reads through the JSON API (the Go client's default XML reads do not
// work against a custom endpoint). Without an endpoint the client uses
// Application Default Credentials, or the emulator named by
// STORAGE_EMULATOR_HOST as the Go client does. Programs that build their
// own client use New.
//
// emulator (optional) declares what the server is, so that the bucket
// takes its known gaps into account; the only value is fake-gcs-server,
// which opens the bucket as with Options.FakeServer (see Known gaps). It
// needs an endpoint or STORAGE_EMULATOR_HOST. The adapter never probes a
// server to find out what it is: `cairn fake-gcs` and the test harness
// print and use URLs that carry the parameter. Any other query parameter,
// or another emulator, is an error. Open sends no request.
//
// # Versions are generations
//
// A Version is the object's generation as a decimal string. GCS gives
// every write of an object a new generation, also when the bytes are
// the same, so versions never repeat for one key (not even after a delete
// and re-create). Put with IfAbsent sends ifGenerationMatch=0
// (Conditions.DoesNotExist) and Put with IfVersion sends
// ifGenerationMatch=GEN. A version that is not a generation this adapter
// handed out (not a canonical positive decimal) can match no object: such a
// conditional Put or Delete fails with ErrPrecondition without any request.
// Metagenerations and ETags are never used.
//
// # Attributes
//
// Attrs.Checksum is "crc32c:HEX" (eight hex digits). Attrs.ModTime is the
// object's update time, truncated to the second: a read carries it only in
// its Last-Modified header, which has one-second precision, and Get, Stat
// and List must agree. Get checks the CRC32C of every body it reads
// against the one the server sent and reports a mismatch as ErrIntegrity.
// Put sends the body's CRC32C, so the server refuses a body damaged on the
// way (a 400, reported without a sentinel: nothing was written).
//
// # Edge semantics
//
//   - Every Put is one request (Writer.ChunkSize = 0): no resumable
//     upload and no 16 MiB buffer per write.
//   - Delete of a missing key is nil when unconditional. Delete with
//     IfVersion sends ifGenerationMatch (ConditionalDelete is true) and
//     fails with ErrPrecondition when the object changed or is missing.
//     Delete with IfAbsent is ErrUnsupported.
//   - Put with IfVersion on a missing key is ErrPrecondition (GCS answers
//     412).
//   - List honours Prefix, Delimiter and StartAfter exactly as
//     bucket.ListSorted does; a folded prefix is listed when any key under
//     it is greater than StartAfter. Its page tokens are the adapter's own
//     (the last entry of the page), opaque and valid only with the same
//     Prefix and Delimiter. A page holds at most bucket.PageSize entries,
//     objects and prefixes together.
//
// # Errors and retries
//
// Errors are classified from the client's typed errors (*googleapi.Error
// and its HTTP status, storage.ErrObjectNotExist, transport errors), never
// from their text, and the original error stays wrapped:
//
//   - 412 is ErrPrecondition.
//   - 404 (storage.ErrObjectNotExist) is ErrNotExist on Get and Stat, nil
//     on an unconditional Delete and ErrPrecondition on a conditional one.
//     A 404 once a Get's body has begun is ErrUnavailable instead: the
//     client retries a broken body by asking for the generation it began
//     with, and that generation is gone when the object was overwritten
//     meanwhile (a head, written by another replica), not the key.
//   - 429 is ErrThrottled: the request had no effect.
//   - 408, any 5xx and any transport failure (a timeout, a reset or lost
//     connection, a truncated answer) are ErrUnavailable on a read, stat
//     or list, and ErrAmbiguous on a Put or Delete, since the write may
//     have landed. A write whose connection could not even be opened (the
//     dial failed) is ErrUnavailable: it was never sent.
//   - A context cancelled (or timed out) by the caller stays in the chain,
//     so errors.Is(err, context.Canceled) holds; if a write was already
//     under way it is also ErrAmbiguous.
//
// Writes are never retried by the client: every Put and Delete runs with
// storage.RetryNever. This matters for conditional writes above all. The
// client counts a write with a generation precondition as idempotent and
// would retry it on a 5xx or a lost connection; if the first attempt had
// landed, the retry is refused with 412 and the caller's success turns
// into an apparent lost race. So a 5xx, a timeout or a broken connection
// after a conditional write was sent is reported as ErrAmbiguous, once,
// and the caller finds out by reading. Unconditional writes get the same
// treatment: a lost answer is ErrAmbiguous.
//
// Reads, stats and list pages are retried by the client on 429, 5xx and
// transport errors, with a short exponential backoff, up to
// Options.ReadAttempts attempts in all (DefaultReadAttempts for URLs), so
// an outage surfaces as ErrUnavailable or ErrThrottled instead of blocking
// until the context ends.
//
// # Known gaps
//
// fake-gcs-server (v1.56) ignores generation preconditions on delete: a
// conditional delete there deletes whatever is stored. A bucket opened for
// it (Options.FakeServer, or a URL with emulator=fake-gcs-server)
// reports ConditionalDelete false with the known gap
// "conditional-delete", and Delete with IfVersion returns ErrUnsupported
// without sending anything rather than deleting unconditionally. A URL
// that points at fake-gcs-server without declaring it opens a bucket that
// trusts the fake's conditional deletes, and the conformance suite then
// fails conditional-delete, as it should. Against real GCS there are no
// known gaps.
package gcs
