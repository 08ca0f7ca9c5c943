// Package digest owns the one content-address type of cairn: Hash, the
// SHA-256 of an immutable object's exact bytes.
//
// # Two spellings
//
// A Hash has two text forms, and each has one place:
//
//   - String: 64 lowercase hex digits. The engine's object names and keys
//     (shard, table and root objects, the head's "root" member) use it.
//     Parse reads it.
//   - URI: "sha256:" followed by the same 64 digits. The Workbench
//     contract's digest strings and the manifests' documents use it.
//     ParseURI reads it.
//
// Both parsers are strict: upper-case hex, other lengths, other algorithms
// and whitespace are errors wrapping ErrInvalid, so that every Hash has
// exactly one spelling in each form.
//
// # Text encoding
//
// MarshalText writes the URI form and UnmarshalText reads only the URI
// form. A Hash inside a JSON document is thus self-describing, as the
// contract's digests are; code that names objects uses String, never
// MarshalText. Changing either choice changes stored documents.
//
// # Verification
//
// Callers verify, not trust: Verify recomputes the hash of bytes fetched by
// their address and fails with an error wrapping bucket.ErrIntegrity on a
// mismatch, before the bytes are decoded, used or cached.
package digest
