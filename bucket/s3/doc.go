// Package s3 is the Bucket adapter for Amazon S3 and S3-compatible stores,
// built on aws-sdk-go-v2.
//
// # Opening
//
// The URL is
//
//	s3://BUCKET[/PREFIX][?endpoint=URL&region=R&path_style=true&conditional_delete=false]
//
// All four query parameters are optional and any other is an error.
// endpoint points the client at an S3-compatible store instead of AWS.
// region defaults to the SDK's default chain (AWS_REGION, the shared
// config), and to "us-east-1" when an endpoint is given and nothing else
// names one. path_style (a boolean) addresses the bucket in the URL path
// instead of the host name; stores on localhost need it, because the
// virtual-host name BUCKET.localhost does not resolve.
// conditional_delete=false (a boolean, default true) declares a store
// that does not honour If-Match on DeleteObject: the bucket then reports
// no ConditionalDelete and refuses a conditional Delete with
// ErrUnsupported, and cairn deletes nothing that can be rewritten in
// place (`cairn conformance` with the default finds out: its
// conditional-delete check fails on such a store). Credentials come
// from the SDK's default chain (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY,
// the shared config, instance roles). Programs that build their own client
// use New.
//
// # Versions are ETags
//
// A Version is the object's ETag exactly as the store returns it, quotes
// included. Put with IfAbsent sends If-None-Match: *; Put and Delete with
// IfVersion send If-Match: ETAG.
//
// ETags are content MD5s (for objects written in one part, without
// SSE-KMS), so rewriting an object with identical bytes keeps its ETag: a
// version is not unique per write. A caller that compares-and-swaps an
// object must make every version's bytes unique (a sequence number, a
// writer nonce), or a stale If-Match can succeed against a rewrite of the
// same bytes.
//
// Attrs.Checksum is "md5:HEX" when the ETag is a plain 32-hex-digit MD5 and
// "" otherwise (multipart ETags carry a "-N" suffix). Stores that encrypt
// with SSE-KMS or SSE-C return ETags that look like MD5s but are not; on
// such buckets the checksum names the ETag, not the bytes. Put sends
// Content-MD5, so the store itself refuses a body damaged on the way
// (ErrIntegrity). Put's ModTime is the Date of the store's response (the
// store's clock, to the second); Get, Stat and List report Last-Modified.
//
// # Edge semantics
//
//   - Delete of a missing key is nil when unconditional. Delete with
//     IfVersion sends If-Match (ConditionalDelete is true unless the store
//     is declared without it, when it is ErrUnsupported) and fails with
//     ErrPrecondition when the object changed or is missing. Delete with
//     IfAbsent is ErrUnsupported.
//   - Put with IfVersion on a missing key is ErrPrecondition: AWS answers
//     404 NoSuchKey there and some stores 412; both are mapped.
//   - List uses ListObjectsV2; a page token is S3's continuation token,
//     opaque and valid only with the same Prefix and Delimiter.
//
// # Errors and retries
//
// Errors are classified from the SDK's typed errors (smithy.APIError for
// the S3 error code, smithyhttp.ResponseError for the HTTP status), never
// from their text:
//
//   - 412 PreconditionFailed and 409 ConditionalRequestConflict (AWS's
//     answer to a lost race between conditional writes) are ErrPrecondition.
//   - 404 NoSuchKey or NotFound on Get and Stat is ErrNotExist.
//   - 503 SlowDown and 429 are ErrThrottled: the request had no effect.
//     (HEAD answers have no body to carry the code, so a throttled Stat
//     shows as ErrUnavailable; both mean "retry later".)
//   - 501 NotImplemented is ErrUnsupported: the store did nothing. On a
//     conditional write it means the store has no conditional writes
//     (Backblaze B2 answers so), and cairn cannot run on it.
//   - 400 BadDigest (the body did not match Content-MD5) is ErrIntegrity.
//   - Any other 5xx, and any transport failure, is ErrUnavailable on a read
//     and ErrAmbiguous on a write, since the write may have landed. A
//     conditional write that could not even open a connection is
//     ErrUnavailable: it was never sent.
//   - A context cancelled by the caller stays in the chain, so
//     errors.Is(err, context.Canceled) holds; if a write was already under
//     way it is also ErrAmbiguous.
//
// The SDK retries reads and unconditional writes as it sees fit. It never
// retries a conditional PutObject or DeleteObject: if the first attempt
// landed and its answer was lost, the retry would be refused with 412 and
// turn the caller's success into an apparent loss. Those calls make one
// attempt and report ErrAmbiguous, leaving the caller to re-read and find
// out.
package s3
