// Package manifests owns cairn's immutable JSON documents: artifact, run and
// restore manifests, pins, and the Workbench's canonical manifest digests.
// A document is stored as canonical JSON bytes and named by the SHA-256 of
// exactly those bytes.
//
// The canonical form is the one the Workbench reference implementation
// produces (Rust serde_json parsing into its Value type and serializing
// compactly with keys sorted), so digests computed here equal the
// reference's byte for byte.
//
// # Canonical bytes
//
//   - One JSON value, no whitespace anywhere outside strings.
//   - Object members sorted by the bytes of their keys' UTF-8 encoding
//     (not by UTF-16 code units: "\uFFFD" sorts before "\U0001F600"),
//     recursively. An input key given twice keeps its last value.
//   - Array elements in their input order.
//   - Strings escape exactly three things: '"' as \", '\' as \\, and the
//     control characters U+0000-U+001F, as \b \f \n \r \t where those exist
//     and as \u00xx with lower-case hex otherwise (\u0000, \u001f). Every
//     other character is written as raw UTF-8, including '/', '<', '>', '&',
//     U+007F, U+2028, U+2029 and all non-ASCII.
//   - Literals are null, true and false.
//
// # Numbers
//
// A number keeps the form the reference parser gives it:
//
//   - An integer in [0, 2^64) or [-2^63, 0) prints as plain decimal ("0",
//     "18446744073709551615", "-9223372036854775808").
//   - Everything else becomes a float64: a fraction or exponent ("1.0",
//     "1e2"), "-0", and integers outside those ranges (18446744073709551616
//     prints as "1.8446744073709552e19"). The float64 is computed as the
//     reference computes it (at most 19-20 significant digits kept, one
//     conversion, one multiplication or division by a power of ten), which is
//     not always the correctly rounded value: "51.248178375505404" becomes
//     51.24817837550541. A value beyond float64 range ("1e400") is ErrInvalid;
//     one below it becomes zero ("1e-400" prints "0.0", "-1e-400" "-0.0").
//   - A float64 prints with the shortest digits that read back to it. When
//     the decimal exponent of its first digit is in [-5, 15] it is written
//     in plain decimal, integral values with ".0": "1.0", "0.1", "123.456",
//     "0.00001", "1000000000000000.0", "-0.0". Otherwise it is written as
//     mantissa, "e" and the exponent without leading zeros, signed only when
//     negative: "1e16", "1e21", "1e-6", "1.5e-7", "5e-324",
//     "1.7976931348623157e308".
//
// This is the form the Workbench facts give ("1e21"): the ryu-style layout
// of serde_json's float printing. Builds of serde_json whose printer writes
// an explicit "+" in positive exponents ("1e+21") produce different bytes,
// and so different digests, for documents with exponent-form floats.
//
// Because the reference parser is not correctly rounding, it does not read
// every shortest float text back to the float it came from: roughly one
// random float64 in three, and one in ten of those in [0, 1000), print as text
// that it parses to a neighbouring float ("51.248178375505404" reads as
// 51.24817837550541). Canonicalization is therefore not idempotent for such
// numbers: the integer 100070000101117100000000 canonicalizes to
// "1.0007000010111709e23", which canonicalizes to "1.0007000010111707e23",
// and CheckCanonical rejects the first output with ErrNotCanonical. The
// reference behaves the same way: it re-canonicalizes a caller manifest's
// canonical bytes before building the run manifest and refuses the commit
// when they differ. Callers that must mirror that check call CheckCanonical
// on CanonicalizeJSON's output; Encode does it for every document it writes.
//
// cairn's own documents contain no floats: Encode refuses Go float values
// (ErrFloat). Floats reach canonical bytes only inside caller-supplied JSON,
// such as the "manifest" object of a Workbench commit.
//
// # Input the parser refuses
//
// CanonicalizeJSON and the decoders accept exactly what the reference parser
// accepts, and report everything else as ErrInvalid: bad syntax (including
// leading zeros, "1.", ".5", "+1", trailing commas), invalid UTF-8, raw
// control characters in strings, escapes of unpaired UTF-16 surrogates,
// nesting deeper than MaxDepth (127) arrays and objects, numbers out of
// range, and anything but whitespace after the value. NaN and infinities are
// not JSON and never appear.
//
// # Identity
//
// A document's identity is digest.Sum(canonical bytes), written as a
// digest URI "sha256:" + 64 lower-case hex digits (digest.Hash.URI); a
// digest.Hash field in a document encodes in that form. Two documents are
// the same document exactly when their canonical bytes are equal. Bytes
// fetched by hash are checked with DecodeVerified (or digest.Verify) before
// they are decoded, used or cached; a mismatch is ErrIntegrity, which is
// bucket.ErrIntegrity.
//
// # Strict decoding
//
// Readers are strict. DecodeStrict accepts only canonical bytes
// (ErrNotCanonical otherwise), rejects members the Go type does not define
// (ErrUnknownField), and requires the decoded value to re-encode to exactly
// the bytes read, so a document has one accepted form per type: missing
// members, case-variant member names and explicit zero values that the type
// omits are all refused. Decode additionally requires the top-level "schema"
// member to equal the Document's Schema() exactly, before looking at any
// other member (ErrSchema): a reader never interprets a version it does not
// know, and each version is its own Go type.
//
// Writers use Encode, which canonicalizes whatever order the struct fields
// are in and checks the schema member of a Document.
package manifests
