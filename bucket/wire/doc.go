// Package wire reads and writes the big-endian binary fields of cairn's
// formats: the local-file object header, and the record keys, shard, table,
// root and head codecs built on the same field kinds.
//
// # Fields
//
// Unsigned integers of 1, 2, 4 and 8 bytes are big-endian. Raw bytes are
// written as they are. A byte string is a length then the bytes: Bytes16
// with a two-byte length (names, owners), Bytes32 with a four-byte length
// (general byte strings).
//
// # Sticky errors
//
// A Writer and a Reader remember the first error they meet; later calls do
// nothing (a Reader returns zero values and nil slices) and Err reports it,
// so a codec reads or writes every field and checks once. Every error is
// an *Error that wraps ErrMalformed, with the field and the byte offset. A
// codec with a sentinel of its own adds it when it returns the error, for
// example fmt.Errorf("roots: decode root: %w: %w", err, ErrMalformed).
//
// A Reader does not copy its input: the slices Take, Bytes16 and Bytes32
// return alias it. End reports bytes left unread as an error.
package wire
