package nokv

import (
	"errors"
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// Value format versions of the records of this package.
const (
	WorkspaceCurrentVersion          = 2
	WorkspaceIncarnationClaimVersion = 1
	PathEntryVersion                 = 2
	ArtifactRevisionVersion          = 2
	ArtifactManifestVersion          = 2
	RevisionRefVersion               = 1
	GcCandidateVersion               = 1
	ChangeEventVersion               = 2
	PublishOperationVersion          = 1
	StagedObjectVersion              = 1
	SecondaryIndexVersion            = 1
	PathDirectoryVersion             = 1
)

var (
	// ErrBadRecord is wrapped by every error that encoding or decoding a
	// record key or value returns.
	ErrBadRecord = errors.New("bad record")
	// ErrUnknownVersion is wrapped, beside ErrBadRecord, when a value's
	// format version is not the one this code reads.
	ErrUnknownVersion = fmt.Errorf("unknown record version: %w", shards.ErrFormatVersion)
	// ErrBadID is wrapped by every error that parsing an id returns.
	ErrBadID = errors.New("bad id")
)

// RecordError describes a record that cannot be encoded or decoded. It
// matches ErrBadRecord and, when set, Err (ErrUnknownVersion,
// ErrUnknownEnum, or the shards package's key error).
type RecordError struct {
	Op     string // "encode" or "decode"
	Record string // e.g. "path_current value"
	Offset int    // byte offset of the fault when decoding
	Reason string
	Err    error
}

func (e *RecordError) Error() string {
	if e.Op == "decode" {
		return fmt.Sprintf("nokv: decode %s at offset %d: %s", e.Record, e.Offset, e.Reason)
	}
	return fmt.Sprintf("nokv: encode %s: %s", e.Record, e.Reason)
}

// Unwrap makes a RecordError match ErrBadRecord and its cause.
func (e *RecordError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadRecord, e.Err}
	}
	return []error{ErrBadRecord}
}

// Value writer and reader: a record's fields on a wire.Writer or
// wire.Reader, with the field rules checked on the way and every fault
// reported once as a RecordError.

// valueWriter writes one value. A rule failure sticks in err; the bytes
// written after it are dropped by finish.
type valueWriter struct {
	rec string
	w   *wire.Writer
	err error
}

func newValueWriter(rec string, version uint8) *valueWriter {
	return &valueWriter{rec: rec, w: wire.NewWriter(nil).U8(version)}
}

func (w *valueWriter) fail(reason string, cause error) {
	if w.err == nil {
		w.err = &RecordError{Op: "encode", Record: w.rec, Reason: reason, Err: cause}
	}
}

// check fails with reason when it is not empty.
func (w *valueWriter) check(reason string) {
	if reason != "" {
		w.fail(reason, nil)
	}
}

func (w *valueWriter) u8(v uint8)      { w.w.U8(v) }
func (w *valueWriter) u32(v uint32)    { w.w.U32(v) }
func (w *valueWriter) u64(v uint64)    { w.w.U64(v) }
func (w *valueWriter) id16(v [16]byte) { w.w.Raw(v[:]) }
func (w *valueWriter) id32(v [32]byte) { w.w.Raw(v[:]) }

func (w *valueWriter) present(ok bool) {
	if ok {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func (w *valueWriter) enum(field string, d *enumDef, v uint8) {
	if !d.valid(v) {
		w.fail(fmt.Sprintf("%s: %s %d", field, d.typ, v), ErrUnknownEnum)
	}
	w.u8(v)
}

func (w *valueWriter) str(field, s string) {
	switch {
	case uint64(len(s)) > math.MaxUint32:
		w.fail(fmt.Sprintf("%s of %d bytes", field, len(s)), nil)
		return
	case !utf8.ValidString(s):
		w.fail(field+" is not UTF-8", nil)
	}
	w.w.Bytes32([]byte(s))
}

func (w *valueWriter) optStr(field string, s *string) {
	w.present(s != nil)
	if s != nil {
		w.str(field, *s)
	}
}

func (w *valueWriter) path(field string, p []string) {
	if reason := pathReason(p); reason != "" {
		w.fail(field+": "+reason, nil)
		return
	}
	b, err := shards.NewKey().LenPath(p).Build()
	if err != nil {
		w.fail(field+": "+err.Error(), err)
		return
	}
	w.w.Raw(b)
}

// indexProjection writes a path's index projection (see IndexProjection).
func (w *valueWriter) indexProjection(p IndexProjection) {
	if w.err != nil {
		return
	}
	if err := p.writeTo(w.w); err != nil {
		w.fail(err.Error(), err)
	}
}

func (w *valueWriter) finish() ([]byte, error) {
	if w.err == nil {
		if err := w.w.Err(); err != nil {
			w.fail(err.Error(), err)
		}
	}
	if w.err != nil {
		return nil, w.err
	}
	return w.w.Bytes(), nil
}

// valueReader reads one value. The first fault, a short read or a broken
// rule, sticks in err; later reads return zero values.
type valueReader struct {
	rec string
	b   []byte // what r reads
	r   *wire.Reader
	err error
}

// newValueReader checks the version byte and positions the reader after it.
func newValueReader(rec string, b []byte, version uint8) *valueReader {
	r := &valueReader{rec: rec, b: b, r: wire.NewReader(b)}
	switch {
	case len(b) == 0:
		r.failAt(0, "empty value", nil)
	case b[0] != version:
		r.failAt(0, fmt.Sprintf("value format version %d, want %d", b[0], version), ErrUnknownVersion)
	default:
		r.r.U8()
	}
	return r
}

func (r *valueReader) failAt(off int, reason string, cause error) {
	if r.err == nil {
		r.err = &RecordError{Op: "decode", Record: r.rec, Offset: off, Reason: reason, Err: cause}
	}
}

// check fails at the field that began at off when reason is not empty.
func (r *valueReader) check(off int, reason string) {
	if reason != "" {
		r.failAt(off, reason, nil)
	}
}

// offset is where the next field begins.
func (r *valueReader) offset() int { return r.r.Offset() }

// read reads one field with f, unless a fault is already recorded; a
// short read is a truncation at the field's start.
func read[T any](r *valueReader, f func(*wire.Reader) T) T {
	if r.err != nil {
		var zero T
		return zero
	}
	v := f(r.r)
	if err := r.r.Err(); err != nil {
		var we *wire.Error
		errors.As(err, &we)
		r.failAt(we.Offset, "truncated: "+we.Reason, nil)
	}
	return v
}

func (r *valueReader) take(n int) []byte {
	return read(r, func(wr *wire.Reader) []byte { return wr.Take(n) })
}

func (r *valueReader) u8() uint8   { return read(r, (*wire.Reader).U8) }
func (r *valueReader) u32() uint32 { return read(r, (*wire.Reader).U32) }
func (r *valueReader) u64() uint64 { return read(r, (*wire.Reader).U64) }

func (r *valueReader) id16() (v [16]byte) {
	copy(v[:], r.take(16))
	return v
}

func (r *valueReader) id32() (v [32]byte) {
	copy(v[:], r.take(32))
	return v
}

func (r *valueReader) present() bool {
	off := r.offset()
	switch b := r.u8(); {
	case r.err != nil:
		return false
	case b > 1:
		r.failAt(off, fmt.Sprintf("presence byte %d", b), nil)
		return false
	default:
		return b == 1
	}
}

func (r *valueReader) enum(field string, d *enumDef) uint8 {
	off := r.offset()
	v := r.u8()
	if r.err == nil && !d.valid(v) {
		r.failAt(off, fmt.Sprintf("%s: %s %d", field, d.typ, v), ErrUnknownEnum)
		return 0
	}
	return v
}

// lenPrefixed reads a u32 length and that many bytes, and returns them
// with the offset where the length began.
func (r *valueReader) lenPrefixed(field string) (b []byte, off int) {
	off = r.offset()
	n := r.u32()
	if r.err != nil {
		return nil, off
	}
	if uint64(n) > uint64(r.r.Len()) {
		r.failAt(off, fmt.Sprintf("%s: length %d, only %d bytes follow", field, n, r.r.Len()), nil)
		return nil, off
	}
	return r.take(int(n)), off
}

func (r *valueReader) str(field string) string {
	b, off := r.lenPrefixed(field)
	if r.err != nil {
		return ""
	}
	if !utf8.Valid(b) {
		r.failAt(off, field+" is not UTF-8", nil)
		return ""
	}
	return string(b)
}

func (r *valueReader) optStr(field string) *string {
	if !r.present() {
		return nil
	}
	s := r.str(field)
	if r.err != nil {
		return nil
	}
	return &s
}

func (r *valueReader) path(field string) []string {
	_, off := r.lenPrefixed(field)
	if r.err != nil {
		return nil
	}
	kr := shards.NewKeyReader(r.b[off:r.offset()])
	p := kr.LenPath()
	if err := kr.End(); err != nil {
		r.failAt(off, field+": "+err.Error(), err)
		return nil
	}
	if reason := pathReason(p); reason != "" {
		r.failAt(off, field+": "+reason, nil)
		return nil
	}
	return p
}

// indexProjection reads a path's index projection (see IndexProjection).
func (r *valueReader) indexProjection() IndexProjection {
	if r.err != nil {
		return nil
	}
	off := r.offset()
	p, n, err := decodeIndexProjection(r.b[off:])
	if err != nil {
		r.failAt(off, err.Error(), err)
		return nil
	}
	r.take(n)
	return p
}

// end returns the first error, or an error if bytes remain.
func (r *valueReader) end() error {
	if r.err == nil && r.r.Len() != 0 {
		r.failAt(r.offset(), fmt.Sprintf("%d trailing bytes", r.r.Len()), nil)
	}
	return r.err
}
