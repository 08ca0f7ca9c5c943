// Package bucket is cairn's port to object storage.
//
// Everything cairn keeps lives in one bucket: one mutable head object per
// logical shard and immutable, content-addressed objects beside it. This
// package defines what cairn needs from a store and nothing more; adapters in
// sub-packages (mem, file, gcs, s3) translate it to a backend, and wrappers
// beside them (counting, latency, fault) decorate any Bucket for tests and
// benchmarks.
//
// # Semantics every adapter gives
//
//   - Strong read-after-write, list-after-write and read-after-delete.
//   - Put with IfAbsent or IfVersion is atomic against concurrent writers:
//     of several writers racing on one precondition exactly one succeeds and
//     the others get ErrPrecondition.
//   - A Version is opaque and compared only for equality. It is stable while
//     an object is unchanged and changes on every write, with one exception
//     callers must design around: S3 versions are ETags, the MD5 of the
//     content, so rewriting identical bytes keeps the version. A caller that
//     compares-and-swaps an object must make every version's bytes unique
//     (cairn's head carries a sequence number and a writer nonce).
//   - Get, Stat and List report the same Version for an unchanged object.
//   - Delete of a missing key is not an error. A conditional delete is a
//     capability (Capabilities.ConditionalDelete); adapters without it
//     return ErrUnsupported rather than deleting unconditionally.
//   - A Put with IfVersion on a missing key fails with ErrPrecondition on
//     every adapter (AWS answers 404 there, other stores 412).
//
// # Errors
//
// Adapters translate provider errors at the edge into the sentinels below,
// keeping the original error wrapped. Callers test them with errors.Is.
// A failed call returns zero values beside its error.
//
// ErrAmbiguous deserves care: it means a write was sent and its outcome is
// unknown (a timeout, a lost connection or a 5xx after the request left).
// The write may or may not have landed. Adapters never let an SDK retry a
// conditional write on its own, because a retry of a write that landed
// answers "precondition failed" and would turn a success into an apparent
// loss; they report ErrAmbiguous instead and leave reconciliation to the
// caller (cairn's head re-reads itself and looks for its own attempt's
// nonce).
//
// # Retrying
//
// Transient is the one classification of errors that may go away on
// another try (unavailable, throttled, ambiguous, integrity); Retry repeats
// a request that is safe to repeat (a read, a write of an immutable object)
// under a RetryPolicy: bounded tries, jittered exponential backoff, and
// the store's pace after throttling. Sleep is the one context-aware wait.
// Permanent is its counterpart: the store refused the request for good
// (denied, full, no bucket, a refused key, an unsupported request) and
// the request took no effect, so callers stop at once and name the cause.
//
// # Keys
//
// Keys are checked before any I/O (ValidateKey): non-empty UTF-8, at most
// MaxKeyLen bytes including an adapter's prefix, no CR or LF, and not "."
// or "..". Adapters may refuse further keys they cannot store, with
// ErrInvalidKey.
//
// # Opening
//
// Open takes a URL; each adapter registers its scheme from an init function
// and programs import adapters for their side effect (in cmd/cairn).
// Libraries take a Bucket, never a URL.
package bucket
