package manifests

import (
	"errors"

	"github.com/cairnstore/cairn/bucket"
)

// These errors are returned, wrapped, by the functions of this package. Test
// them with errors.Is.
var (
	// ErrInvalid: the bytes are not a JSON document the canonical parser
	// accepts (bad syntax, invalid UTF-8, an unpaired surrogate escape,
	// nesting deeper than MaxDepth, a number out of range, trailing data), or
	// they do not fit the Go type they are decoded into (a value of the wrong
	// type, a member the type requires is missing).
	ErrInvalid = errors.New("invalid document")

	// ErrNotCanonical: the bytes are valid JSON but not in canonical form,
	// or a decoded document does not re-encode to exactly the bytes read.
	ErrNotCanonical = errors.New("not canonical")

	// ErrUnknownField: the document has a member its Go type does not
	// define (including a member whose name differs from a field's only in
	// case, and a zero value the type omits when encoding).
	ErrUnknownField = errors.New("unknown field")

	// ErrSchema: the document's top-level "schema" member is missing, not a
	// string, or not exactly the schema the reader expects. Readers never
	// guess at a version they do not know.
	ErrSchema = errors.New("unexpected schema")

	// ErrFloat: Encode found a Go floating-point value in a cairn document.
	ErrFloat = errors.New("floating-point value in a cairn document")

	// ErrIntegrity: the bytes do not hash to the address they were fetched
	// by. It is the same sentinel as bucket.ErrIntegrity, so one errors.Is
	// covers a store's checksum failure and a content-address mismatch.
	ErrIntegrity = bucket.ErrIntegrity
)
