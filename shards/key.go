package shards

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/wire"
)

// Record keys follow the seed schema's encodings: unsigned big-endian
// integers, fixed-width ids, byte strings with a four-byte big-endian length,
// tag names and aliases with a two-byte length, and the ordered path
// transform.

// Path encoding bytes: the separator between ordered components and the
// terminator of an exact row. No ordered component holds either.
const (
	PathSep  = 0x00 // between ordered components
	PathTerm = 0x01 // ends the exact row of a path
)

var (
	// ErrMalformedKey is wrapped by every error that reading a key returns.
	ErrMalformedKey = errors.New("malformed key")
	// ErrInvalidPath is returned when a path cannot be encoded: it has no
	// component, or a component is empty, holds NUL or is not UTF-8.
	ErrInvalidPath = errors.New("invalid path")
)

// KeyError describes a malformed key: what was being read and where.
type KeyError struct {
	Op     string // what was being read, e.g. "u32" or "path"
	Offset int    // byte offset in the key where reading failed
	Reason string
}

func (e *KeyError) Error() string {
	return fmt.Sprintf("shards: read key %s at offset %d: %s", e.Op, e.Offset, e.Reason)
}

// Unwrap makes every KeyError match ErrMalformedKey.
func (e *KeyError) Unwrap() error { return ErrMalformedKey }

// Ordered applies the seed's order-preserving transform to one path
// component: it adds one to each byte. The component must be non-empty
// UTF-8 without NUL, so the result never holds 0x00 or 0x01, which the
// encoding reserves as separator and terminator.
func Ordered(component string) ([]byte, error) {
	if err := checkComponent(component); err != nil {
		return nil, err
	}
	return appendOrdered(nil, component), nil
}

// Unordered inverts Ordered, failing with ErrMalformedKey on bytes that
// Ordered cannot produce.
func Unordered(b []byte) (string, error) {
	c, reason := unordered(b)
	if reason != "" {
		return "", &KeyError{Op: "path component", Reason: reason}
	}
	return c, nil
}

func checkComponent(c string) error {
	switch {
	case c == "":
		return fmt.Errorf("shards: path component: empty: %w", ErrInvalidPath)
	case !utf8.ValidString(c):
		return fmt.Errorf("shards: path component %q: not UTF-8: %w", c, ErrInvalidPath)
	case bytes.IndexByte([]byte(c), 0) >= 0:
		return fmt.Errorf("shards: path component %q: holds NUL: %w", c, ErrInvalidPath)
	}
	return nil
}

func appendOrdered(dst []byte, c string) []byte {
	for i := 0; i < len(c); i++ {
		dst = append(dst, c[i]+1)
	}
	return dst
}

func unordered(b []byte) (string, string) {
	if len(b) == 0 {
		return "", "empty component"
	}
	out := make([]byte, len(b))
	for i, x := range b {
		if x <= PathTerm {
			return "", fmt.Sprintf("reserved byte 0x%02x in component", x)
		}
		out[i] = x - 1
	}
	if !utf8.Valid(out) {
		return "", "component is not UTF-8"
	}
	return string(out), ""
}

func checkPath(components []string) error {
	if len(components) == 0 {
		return fmt.Errorf("shards: path: no components: %w", ErrInvalidPath)
	}
	for _, c := range components {
		if err := checkComponent(c); err != nil {
			return err
		}
	}
	return nil
}

// AppendPath appends the exact-row encoding of a path to dst:
// ordered(c0) NUL … NUL ordered(cn) 0x01. The path needs at least one
// component (the empty path has no record).
func AppendPath(dst []byte, components []string) ([]byte, error) {
	if err := checkPath(components); err != nil {
		return dst, err
	}
	dst = appendJoined(dst, components)
	return append(dst, PathTerm), nil
}

// AppendPathPrefix appends the subtree prefix of a directory to dst: each
// ordered component followed by NUL. Every key of a path strictly below the
// directory starts with it; the directory's own exact row and siblings that
// merely share a byte prefix (a against ab) do not. No components give the
// empty prefix, which covers the whole workspace.
func AppendPathPrefix(dst []byte, components []string) ([]byte, error) {
	for _, c := range components {
		if err := checkComponent(c); err != nil {
			return dst, err
		}
	}
	for _, c := range components {
		dst = appendOrdered(dst, c)
		dst = append(dst, PathSep)
	}
	return dst, nil
}

func appendJoined(dst []byte, components []string) []byte {
	for i, c := range components {
		if i > 0 {
			dst = append(dst, PathSep)
		}
		dst = appendOrdered(dst, c)
	}
	return dst
}

// EncodePath returns the exact-row encoding of a path (see AppendPath).
func EncodePath(components []string) ([]byte, error) {
	return AppendPath(nil, components)
}

// DecodePath inverts EncodePath; b must be exactly one exact-row path.
func DecodePath(b []byte) ([]string, error) {
	r := NewKeyReader(b)
	p := r.Path()
	if err := r.End(); err != nil {
		return nil, err
	}
	return p, nil
}

// splitPath decodes ordered NUL-separated components.
func splitPath(b []byte) ([]string, string) {
	if len(b) == 0 {
		return nil, "empty path"
	}
	var out []string
	for {
		i := bytes.IndexByte(b, PathSep)
		part := b
		if i >= 0 {
			part = b[:i]
		}
		c, reason := unordered(part)
		if reason != "" {
			return nil, reason
		}
		out = append(out, c)
		if i < 0 {
			return out, ""
		}
		b = b[i+1:]
	}
}

// CheckJoinedPath checks the byte structure of ordered components joined
// by NUL, as a length-delimited path holds them, without decoding the
// components: no empty component and no terminator inside. It returns the
// offset of the last separator, or -1 for a single component. A failure
// is a *KeyError.
func CheckJoinedPath(b []byte) (lastSep int, err error) {
	if len(b) == 0 {
		return -1, &KeyError{Op: "path", Reason: "empty path"}
	}
	lastSep = -1
	for i, x := range b {
		switch x {
		case PathTerm:
			return -1, &KeyError{Op: "path", Offset: i, Reason: "terminator inside path"}
		case PathSep:
			if i == lastSep+1 {
				return -1, &KeyError{Op: "path", Offset: i, Reason: "empty path component"}
			}
			lastSep = i
		}
	}
	if lastSep == len(b)-1 {
		return -1, &KeyError{Op: "path", Offset: lastSep, Reason: "empty last path component"}
	}
	return lastSep, nil
}

// CheckExactPath is CheckJoinedPath for an exact-row path, which must end
// with the terminator. The subtree prefix of the path's parent directory
// is b[:lastSep+1].
func CheckExactPath(b []byte) (lastSep int, err error) {
	if len(b) == 0 || b[len(b)-1] != PathTerm {
		return -1, &KeyError{Op: "path", Reason: "path does not end with the terminator"}
	}
	return CheckJoinedPath(b[:len(b)-1])
}

// KeyBuilder appends the fields of a record key on a wire.Writer. Its
// methods chain; the first error sticks and is returned by Build.
type KeyBuilder struct {
	w   wire.Writer
	err error // a path that cannot be encoded, kept with ErrInvalidPath
	// buf is where the key is built: room for the common keys (two ids
	// and a number, 40 bytes) without growing the slice, which was most
	// of the allocations of a restore's index and count keys; Build
	// returns a copy of exactly the key's length.
	buf [64]byte
}

// NewKey returns an empty builder.
func NewKey() *KeyBuilder {
	k := &KeyBuilder{}
	k.w.Reset(k.buf[:0])
	return k
}

// U8 appends one byte.
func (k *KeyBuilder) U8(v uint8) *KeyBuilder { k.w.U8(v); return k }

// U16 appends a big-endian uint16.
func (k *KeyBuilder) U16(v uint16) *KeyBuilder { k.w.U16(v); return k }

// U32 appends a big-endian uint32.
func (k *KeyBuilder) U32(v uint32) *KeyBuilder { k.w.U32(v); return k }

// U64 appends a big-endian uint64.
func (k *KeyBuilder) U64(v uint64) *KeyBuilder { k.w.U64(v); return k }

// ID8 appends an 8-byte id.
func (k *KeyBuilder) ID8(v [8]byte) *KeyBuilder { k.w.Raw(v[:]); return k }

// ID16 appends a 16-byte id (root, logical shard, incarnation, revision,
// operation).
func (k *KeyBuilder) ID16(v [16]byte) *KeyBuilder { k.w.Raw(v[:]); return k }

// ID32 appends a 32-byte id (commit).
func (k *KeyBuilder) ID32(v [32]byte) *KeyBuilder { k.w.Raw(v[:]); return k }

// Bytes appends a general byte string: a four-byte big-endian length and
// the exact bytes.
func (k *KeyBuilder) Bytes(b []byte) *KeyBuilder { k.w.Bytes32(b); return k }

// String appends s as a general byte string (see Bytes).
func (k *KeyBuilder) String(s string) *KeyBuilder { return k.Bytes([]byte(s)) }

// Name appends a tag name or snapshot alias: a two-byte big-endian length
// and the exact bytes. Validating the name itself is the caller's concern.
func (k *KeyBuilder) Name(s string) *KeyBuilder { k.w.Bytes16([]byte(s)); return k }

// Path appends the exact-row encoding of a path (see AppendPath).
func (k *KeyBuilder) Path(components []string) *KeyBuilder {
	if err := checkPath(components); err != nil {
		return k.fail(err)
	}
	k.w.Raw(append(appendJoined(nil, components), PathTerm))
	return k
}

// PathPrefix appends the subtree prefix of a directory (see
// AppendPathPrefix). It is meant to end a scan prefix.
func (k *KeyBuilder) PathPrefix(components []string) *KeyBuilder {
	b, err := AppendPathPrefix(nil, components)
	if err != nil {
		return k.fail(err)
	}
	k.w.Raw(b)
	return k
}

// LenPath appends a path in the length-delimited form that a Path revision
// reference owner uses: u32(path_bytes) then the ordered, NUL-separated
// components, without the exact-row terminator.
func (k *KeyBuilder) LenPath(components []string) *KeyBuilder {
	if err := checkPath(components); err != nil {
		return k.fail(err)
	}
	k.w.Bytes32(appendJoined(nil, components))
	return k
}

// Raw appends bytes as they are, for a field encoded elsewhere (such as a
// secondary-index value).
func (k *KeyBuilder) Raw(b []byte) *KeyBuilder { k.w.Raw(b); return k }

// fail records err unless an error is already recorded, and stops the
// writer.
func (k *KeyBuilder) fail(err error) *KeyBuilder {
	if k.err == nil && k.w.Err() == nil {
		k.err = err
		k.w.Fail("path", err.Error())
	}
	return k
}

// Build returns the key, or the first error any method met: one wrapping
// ErrInvalidPath for a path, ErrMalformedKey for a field too long for its
// length.
func (k *KeyBuilder) Build() ([]byte, error) {
	if k.err != nil {
		return nil, k.err
	}
	if err := k.w.Err(); err != nil {
		return nil, fmt.Errorf("shards: build key: %w: %w", ErrMalformedKey, err)
	}
	return bytes.Clone(k.w.Bytes()), nil
}

// KeyReader reads the fields of a record key in order from a wire.Reader.
// The first error sticks: later reads return zero values and Err reports
// it as a *KeyError.
type KeyReader struct {
	b   []byte // the key, for the paths that end at a terminator
	r   *wire.Reader
	err *KeyError
}

// NewKeyReader returns a reader over b. It does not copy b; byte slices it
// returns alias b.
func NewKeyReader(b []byte) *KeyReader { return &KeyReader{b: b, r: wire.NewReader(b)} }

// Err returns the first error met, or nil.
func (r *KeyReader) Err() error {
	if r.err == nil {
		var we *wire.Error
		if !errors.As(r.r.Err(), &we) {
			return nil
		}
		r.err = &KeyError{Op: we.Op, Offset: we.Offset, Reason: we.Reason}
	}
	return r.err
}

// Offset returns how many bytes have been read.
func (r *KeyReader) Offset() int { return r.r.Offset() }

// End returns the first error met, or an error if bytes remain unread.
func (r *KeyReader) End() error {
	r.r.End()
	return r.Err()
}

// fail records a failure of the key's own rules at offset off, unless an
// error is already recorded, and stops the wire reader.
func (r *KeyReader) fail(op string, off int, reason string) {
	if r.Err() == nil {
		r.err = &KeyError{Op: op, Offset: off, Reason: reason}
		r.r.Fail(op, reason)
	}
}

// U8 reads one byte.
func (r *KeyReader) U8() uint8 { return r.r.U8() }

// U16 reads a big-endian uint16.
func (r *KeyReader) U16() uint16 { return r.r.U16() }

// U32 reads a big-endian uint32.
func (r *KeyReader) U32() uint32 { return r.r.U32() }

// U64 reads a big-endian uint64.
func (r *KeyReader) U64() uint64 { return r.r.U64() }

// ID8 reads an 8-byte id.
func (r *KeyReader) ID8() (v [8]byte) { r.r.Copy(v[:]); return v }

// ID16 reads a 16-byte id.
func (r *KeyReader) ID16() (v [16]byte) { r.r.Copy(v[:]); return v }

// ID32 reads a 32-byte id.
func (r *KeyReader) ID32() (v [32]byte) { r.r.Copy(v[:]); return v }

// Bytes reads a general byte string (four-byte length).
func (r *KeyReader) Bytes() []byte { return r.r.Bytes32() }

// Name reads a tag name or alias (two-byte length).
func (r *KeyReader) Name() []byte { return r.r.Bytes16() }

// Path reads an exact-row path: ordered components up to and including the
// 0x01 terminator, which no ordered component contains.
func (r *KeyReader) Path() []string {
	if r.Err() != nil {
		return nil
	}
	start := r.r.Offset()
	i := bytes.IndexByte(r.b[start:], PathTerm)
	if i < 0 {
		r.fail("path", start, "no terminator")
		return nil
	}
	p, reason := splitPath(r.b[start : start+i])
	if reason != "" {
		r.fail("path", start, reason)
		return nil
	}
	r.r.Take(i + 1)
	return p
}

// LenPath reads a length-delimited path (see KeyBuilder.LenPath).
func (r *KeyReader) LenPath() []string {
	start := r.r.Offset()
	b := r.r.Bytes32()
	if r.Err() != nil {
		return nil
	}
	p, reason := splitPath(b)
	if reason != "" {
		r.fail("length-delimited path", start, reason)
		return nil
	}
	return p
}

// Rest reads every remaining byte.
func (r *KeyReader) Rest() []byte { return r.r.Take(r.r.Len()) }
