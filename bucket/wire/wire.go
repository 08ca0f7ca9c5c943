package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by every error of this package.
var ErrMalformed = errors.New("malformed binary")

// Error says what could not be read or written, and where.
type Error struct {
	Op     string // the field, e.g. "u32" or "bytes32"
	Offset int    // byte offset where the field starts
	Reason string
}

func (e *Error) Error() string {
	return fmt.Sprintf("wire: %s at offset %d: %s", e.Op, e.Offset, e.Reason)
}

// Unwrap makes every Error match ErrMalformed.
func (e *Error) Unwrap() error { return ErrMalformed }

// Writer appends fields to a byte slice. Its methods chain; the first
// error sticks.
type Writer struct {
	buf []byte
	err error
}

// NewWriter returns a Writer that appends to dst.
func NewWriter(dst []byte) *Writer { return &Writer{buf: dst} }

// Reset makes w append to dst, with no error: a Writer held by value
// inside another struct starts this way.
func (w *Writer) Reset(dst []byte) { w.buf, w.err = dst, nil }

// U8 appends one byte.
func (w *Writer) U8(v uint8) *Writer { return w.raw(v) }

// U16 appends a big-endian uint16.
func (w *Writer) U16(v uint16) *Writer {
	if w.err == nil {
		w.buf = binary.BigEndian.AppendUint16(w.buf, v)
	}
	return w
}

// U32 appends a big-endian uint32.
func (w *Writer) U32(v uint32) *Writer {
	if w.err == nil {
		w.buf = binary.BigEndian.AppendUint32(w.buf, v)
	}
	return w
}

// U64 appends a big-endian uint64.
func (w *Writer) U64(v uint64) *Writer {
	if w.err == nil {
		w.buf = binary.BigEndian.AppendUint64(w.buf, v)
	}
	return w
}

// UVarint appends v as an unsigned varint (7 bits a byte, low groups
// first), the shortest encoding, which is the only one Reader.UVarint
// accepts.
func (w *Writer) UVarint(v uint64) *Writer {
	if w.err == nil {
		w.buf = binary.AppendUvarint(w.buf, v)
	}
	return w
}

// Raw appends b as it is: a fixed-width field or one encoded elsewhere.
func (w *Writer) Raw(b []byte) *Writer { return w.raw(b...) }

func (w *Writer) raw(b ...byte) *Writer {
	if w.err == nil {
		w.buf = append(w.buf, b...)
	}
	return w
}

// Bytes16 appends a two-byte length and b; more than 65535 bytes is an
// error.
func (w *Writer) Bytes16(b []byte) *Writer {
	if len(b) > math.MaxUint16 {
		return w.Fail("bytes16", fmt.Sprintf("%d bytes, more than a u16 length", len(b)))
	}
	return w.U16(uint16(len(b))).Raw(b)
}

// Bytes32 appends a four-byte length and b; more than 2^32-1 bytes is an
// error.
func (w *Writer) Bytes32(b []byte) *Writer {
	if uint64(len(b)) > math.MaxUint32 {
		return w.Fail("bytes32", fmt.Sprintf("%d bytes, more than a u32 length", len(b)))
	}
	return w.U32(uint32(len(b))).Raw(b)
}

// Fail records an error for field op at the current offset, unless one is
// already recorded. Codecs use it for rules of their own (a bad path, a
// count out of range).
func (w *Writer) Fail(op, reason string) *Writer {
	if w.err == nil {
		w.err = &Error{Op: op, Offset: len(w.buf), Reason: reason}
	}
	return w
}

// Len returns how many bytes the slice holds, including those it held when
// it was given to NewWriter.
func (w *Writer) Len() int { return len(w.buf) }

// Bytes returns the slice written so far (not a copy). Check Err before
// using it as a whole.
func (w *Writer) Bytes() []byte { return w.buf }

// Err returns the first error met, or nil.
func (w *Writer) Err() error { return w.err }

// Reader reads fields in order from a byte slice. The first error sticks:
// later reads return zero values.
type Reader struct {
	b   []byte
	off int
	err error
}

// NewReader returns a Reader over b. It does not copy b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Take returns the next n bytes (aliasing the input), or nil after an error.
func (r *Reader) Take(n int) []byte { return r.take("bytes", n) }

func (r *Reader) take(op string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.Fail(op, fmt.Sprintf("need %d bytes, have %d", n, len(r.b)-r.off))
		return nil
	}
	out := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return out
}

// Copy fills dst with the next len(dst) bytes; dst is left alone after an
// error.
func (r *Reader) Copy(dst []byte) { copy(dst, r.take("bytes", len(dst))) }

// U8 reads one byte.
func (r *Reader) U8() uint8 {
	if b := r.take("u8", 1); b != nil {
		return b[0]
	}
	return 0
}

// U16 reads a big-endian uint16.
func (r *Reader) U16() uint16 {
	if b := r.take("u16", 2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

// U32 reads a big-endian uint32.
func (r *Reader) U32() uint32 {
	if b := r.take("u32", 4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

// U64 reads a big-endian uint64.
func (r *Reader) U64() uint64 {
	if b := r.take("u64", 8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// UVarint reads an unsigned varint, refusing one longer than the shortest
// encoding of its value (so that every value has one encoding) or one
// that overflows 64 bits.
func (r *Reader) UVarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.Fail("uvarint", "truncated")
		return 0
	case n < 0:
		r.Fail("uvarint", "overflows 64 bits")
		return 0
	case n != uvarintLen(v):
		r.Fail("uvarint", fmt.Sprintf("%d bytes for %d, not the shortest encoding", n, v))
		return 0
	}
	r.off += n
	return v
}

// uvarintLen is the length of the shortest varint encoding of v.
func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// Bytes16 reads a two-byte length and that many bytes.
func (r *Reader) Bytes16() []byte {
	start := r.off
	n := r.U16()
	return r.lengthed("bytes16", start, uint64(n))
}

// Bytes32 reads a four-byte length and that many bytes.
func (r *Reader) Bytes32() []byte {
	start := r.off
	n := r.U32()
	return r.lengthed("bytes32", start, uint64(n))
}

// lengthed takes the n bytes of a length-prefixed field that began at
// start, reporting a short input at the field's start.
func (r *Reader) lengthed(op string, start int, n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = &Error{Op: op, Offset: start, Reason: fmt.Sprintf("length %d, have %d bytes", n, len(r.b)-r.off)}
		return nil
	}
	return r.take(op, int(n))
}

// Fail records an error for field op at the current offset, unless one is
// already recorded. Codecs use it for checks of their own (a bad magic, an
// unknown version, a value out of range).
func (r *Reader) Fail(op, reason string) {
	if r.err == nil {
		r.err = &Error{Op: op, Offset: r.off, Reason: reason}
	}
}

// Offset returns how many bytes have been read.
func (r *Reader) Offset() int { return r.off }

// Len returns how many bytes remain unread.
func (r *Reader) Len() int { return len(r.b) - r.off }

// Err returns the first error met, or nil.
func (r *Reader) Err() error { return r.err }

// End returns the first error met, or an error if bytes remain unread.
func (r *Reader) End() error {
	if r.err == nil && r.off != len(r.b) {
		r.Fail("end", fmt.Sprintf("%d trailing bytes", len(r.b)-r.off))
	}
	return r.err
}
