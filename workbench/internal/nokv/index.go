package nokv

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/wire"
)

// ---------------------------------------------------------------------------
// Index scalars

// IndexScalarCodecVersion is the version of the index scalar codec below.
// Like keys, encoded scalars carry no version of their own: the store's
// schema marker gates the codec, and a new codec would take new kind tags.
const IndexScalarCodecVersion = 1

// IndexScalarKind is the type of an index scalar and, in the codec, its
// leading tag byte. Scalars of different kinds order by this tag:
//
//	Null < Bool < Signed < Unsigned < Float < Timestamp < Bytes < String
//
// Numbers of different kinds are never compared numerically: the seed's
// queries compare only scalars of one type.
type IndexScalarKind uint8

// Index scalar kinds, in cross-kind order.
const (
	IndexScalarNull      IndexScalarKind = 0x01
	IndexScalarBool      IndexScalarKind = 0x02
	IndexScalarSigned    IndexScalarKind = 0x03
	IndexScalarUnsigned  IndexScalarKind = 0x04
	IndexScalarFloat     IndexScalarKind = 0x05
	IndexScalarTimestamp IndexScalarKind = 0x06
	IndexScalarBytes     IndexScalarKind = 0x07
	IndexScalarString    IndexScalarKind = 0x08
)

var indexScalarKindDef = enumDef{"IndexScalarKind", []string{
	"Null", "Bool", "Signed", "Unsigned", "Float", "Timestamp", "Bytes", "String",
}}

func (k IndexScalarKind) String() string { return indexScalarKindDef.name(uint8(k)) }

// Valid reports whether k is a known kind.
func (k IndexScalarKind) Valid() bool { return indexScalarKindDef.valid(uint8(k)) }

// IndexScalar is one typed value of a secondary index or of a path's index
// projection. Kind selects the one field that holds the value; the others
// are ignored. Use the constructors, which normalize: a timestamp is kept
// in UTC without a monotonic reading, bytes are copied.
type IndexScalar struct {
	Kind     IndexScalarKind
	Bool     bool
	Signed   int64
	Unsigned uint64
	Float    float64 // finite; -0 is encoded, and decodes, as +0
	Time     time.Time
	Bytes    []byte
	Text     string // valid UTF-8
}

// NullScalar returns the null scalar.
func NullScalar() IndexScalar { return IndexScalar{Kind: IndexScalarNull} }

// BoolScalar returns a boolean scalar.
func BoolScalar(b bool) IndexScalar { return IndexScalar{Kind: IndexScalarBool, Bool: b} }

// SignedScalar returns a signed integer scalar.
func SignedScalar(v int64) IndexScalar { return IndexScalar{Kind: IndexScalarSigned, Signed: v} }

// UnsignedScalar returns an unsigned integer scalar.
func UnsignedScalar(v uint64) IndexScalar { return IndexScalar{Kind: IndexScalarUnsigned, Unsigned: v} }

// FloatScalar returns a float scalar; -0 becomes +0. Encoding a NaN or an
// infinity fails.
func FloatScalar(f float64) IndexScalar {
	if f == 0 {
		f = 0
	}
	return IndexScalar{Kind: IndexScalarFloat, Float: f}
}

// TimestampScalar returns a timestamp scalar at nanosecond precision, in
// UTC.
func TimestampScalar(t time.Time) IndexScalar {
	return IndexScalar{Kind: IndexScalarTimestamp, Time: time.Unix(t.Unix(), int64(t.Nanosecond())).UTC()}
}

// BytesScalar returns a bytes scalar holding a copy of b.
func BytesScalar(b []byte) IndexScalar {
	return IndexScalar{Kind: IndexScalarBytes, Bytes: append([]byte{}, b...)}
}

// StringScalar returns a string scalar. Encoding fails unless s is UTF-8.
func StringScalar(s string) IndexScalar { return IndexScalar{Kind: IndexScalarString, Text: s} }

// CompareIndexScalars orders two valid scalars as their encodings order:
// by kind (see IndexScalarKind), then by value: false < true, numbers
// numerically, timestamps by time, bytes and strings bytewise.
func CompareIndexScalars(a, b IndexScalar) int {
	if a.Kind != b.Kind {
		return cmp.Compare(a.Kind, b.Kind)
	}
	switch a.Kind {
	case IndexScalarBool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case b.Bool:
			return -1
		default:
			return 1
		}
	case IndexScalarSigned:
		return cmp.Compare(a.Signed, b.Signed)
	case IndexScalarUnsigned:
		return cmp.Compare(a.Unsigned, b.Unsigned)
	case IndexScalarFloat:
		return cmp.Compare(a.Float, b.Float)
	case IndexScalarTimestamp:
		if c := cmp.Compare(a.Time.Unix(), b.Time.Unix()); c != 0 {
			return c
		}
		return cmp.Compare(a.Time.Nanosecond(), b.Time.Nanosecond())
	case IndexScalarBytes:
		return bytes.Compare(a.Bytes, b.Bytes)
	case IndexScalarString:
		return strings.Compare(a.Text, b.Text)
	}
	return 0
}

const recIndexScalar = "index scalar"

const signBit = 1 << 63

// AppendIndexScalar appends the order-preserving encoding of v to dst:
//
//	Null       0x01
//	Bool       0x02 | 0x00 or 0x01
//	Signed     0x03 | u64(v XOR 1<<63)
//	Unsigned   0x04 | u64(v)
//	Float      0x05 | u64(bits): the IEEE 754 bits with the sign bit set for
//	           a positive value, every bit inverted for a negative one
//	Timestamp  0x06 | u64(unix seconds XOR 1<<63) | u32(nanoseconds)
//	Bytes      0x07 | escaped bytes | 0x00 0x00
//	String     0x08 | escaped bytes | 0x00 0x00
//
// Escaping writes 0x00 as 0x00 0xff and every other byte as itself, so the
// terminator 0x00 0x00 cannot occur inside. Integers are big-endian. For
// two valid scalars a and b, bytes.Compare(enc(a), enc(b)) ==
// CompareIndexScalars(a, b), and no encoding is a prefix of another, so a
// key may continue after the value. Bytes and strings hold at most
// MaxIndexScalarBytes; floats are finite, -0 is written as +0.
func AppendIndexScalar(dst []byte, v IndexScalar) ([]byte, error) {
	fail := func(reason string, cause error) ([]byte, error) {
		return dst, &RecordError{Op: "encode", Record: recIndexScalar, Reason: reason, Err: cause}
	}
	w := wire.NewWriter(dst).U8(uint8(v.Kind))
	switch v.Kind {
	case IndexScalarNull:
	case IndexScalarBool:
		b := byte(0)
		if v.Bool {
			b = 1
		}
		w.U8(b)
	case IndexScalarSigned:
		w.U64(uint64(v.Signed) ^ signBit)
	case IndexScalarUnsigned:
		w.U64(v.Unsigned)
	case IndexScalarFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return fail(fmt.Sprintf("float %v is not finite", v.Float), nil)
		}
		bits := math.Float64bits(v.Float)
		switch {
		case v.Float == 0:
			bits = signBit
		case bits&signBit != 0:
			bits = ^bits
		default:
			bits |= signBit
		}
		w.U64(bits)
	case IndexScalarTimestamp:
		w.U64(uint64(v.Time.Unix()) ^ signBit).U32(uint32(v.Time.Nanosecond()))
	case IndexScalarBytes:
		if len(v.Bytes) > MaxIndexScalarBytes {
			return fail(fmt.Sprintf("%d bytes, more than %d", len(v.Bytes), MaxIndexScalarBytes), nil)
		}
		return appendEscaped(w.Bytes(), v.Bytes), nil
	case IndexScalarString:
		switch {
		case len(v.Text) > MaxIndexScalarBytes:
			return fail(fmt.Sprintf("string of %d bytes, more than %d", len(v.Text), MaxIndexScalarBytes), nil)
		case !utf8.ValidString(v.Text):
			return fail("string is not UTF-8", nil)
		}
		return appendEscaped(w.Bytes(), []byte(v.Text)), nil
	default:
		return fail(fmt.Sprintf("kind %d", v.Kind), ErrUnknownEnum)
	}
	return w.Bytes(), nil
}

func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 0)
}

// EncodeIndexScalar returns the encoding of v (see AppendIndexScalar).
func EncodeIndexScalar(v IndexScalar) ([]byte, error) {
	// Room for the kind, a number of up to 12 bytes, or a text or bytes
	// and their terminator: one allocation unless they hold NUL bytes.
	return AppendIndexScalar(make([]byte, 0, 1+12+len(v.Text)+len(v.Bytes)+2), v)
}

// DecodeIndexScalar decodes the one scalar at the start of b and returns
// it with the number of bytes it took. It accepts exactly the encodings
// AppendIndexScalar writes; anything else wraps ErrBadRecord (an unknown
// kind tag also ErrUnknownEnum).
func DecodeIndexScalar(b []byte) (IndexScalar, int, error) {
	fail := func(off int, reason string, cause error) (IndexScalar, int, error) {
		return IndexScalar{}, 0, &RecordError{Op: "decode", Record: recIndexScalar, Offset: off, Reason: reason, Err: cause}
	}
	r := wire.NewReader(b)
	kind := IndexScalarKind(r.U8())
	if r.Err() != nil {
		return fail(0, "empty", nil)
	}
	switch kind {
	case IndexScalarNull:
		return NullScalar(), r.Offset(), nil
	case IndexScalarBool:
		v := r.U8()
		if r.Err() != nil {
			return fail(1, "truncated bool", nil)
		}
		if v > 1 {
			return fail(1, fmt.Sprintf("bool byte %d", v), nil)
		}
		return BoolScalar(v == 1), r.Offset(), nil
	case IndexScalarSigned, IndexScalarUnsigned, IndexScalarFloat:
		u := r.U64()
		if r.Err() != nil {
			return fail(1, "truncated "+kind.String(), nil)
		}
		switch kind {
		case IndexScalarSigned:
			return SignedScalar(int64(u ^ signBit)), r.Offset(), nil
		case IndexScalarUnsigned:
			return UnsignedScalar(u), r.Offset(), nil
		}
		if u&signBit != 0 {
			u &^= signBit
		} else {
			u = ^u
		}
		f := math.Float64frombits(u)
		if math.IsNaN(f) || math.IsInf(f, 0) || u == signBit {
			return fail(1, fmt.Sprintf("float bits %#016x are not a finite canonical float", u), nil)
		}
		return FloatScalar(f), r.Offset(), nil
	case IndexScalarTimestamp:
		sec := int64(r.U64() ^ signBit)
		nsec := r.U32()
		if r.Err() != nil {
			return fail(1, "truncated timestamp", nil)
		}
		if nsec >= 1e9 {
			return fail(9, fmt.Sprintf("timestamp nanoseconds %d", nsec), nil)
		}
		return IndexScalar{Kind: IndexScalarTimestamp, Time: time.Unix(sec, int64(nsec)).UTC()}, r.Offset(), nil
	case IndexScalarBytes, IndexScalarString:
		out := []byte{}
		for i := 1; ; {
			if i >= len(b) {
				return fail(i, "unterminated "+kind.String(), nil)
			}
			c := b[i]
			if c != 0 {
				out = append(out, c)
				i++
			} else {
				if i+1 >= len(b) {
					return fail(i, "unterminated "+kind.String(), nil)
				}
				switch b[i+1] {
				case 0:
					if len(out) > MaxIndexScalarBytes {
						return fail(1, fmt.Sprintf("%d bytes, more than %d", len(out), MaxIndexScalarBytes), nil)
					}
					if kind == IndexScalarBytes {
						return IndexScalar{Kind: kind, Bytes: out}, i + 2, nil
					}
					if !utf8.Valid(out) {
						return fail(1, "string is not UTF-8", nil)
					}
					return StringScalar(string(out)), i + 2, nil
				case 0xff:
					out = append(out, 0)
					i += 2
				default:
					return fail(i, fmt.Sprintf("escape 0x00 0x%02x", b[i+1]), nil)
				}
			}
			if len(out) > MaxIndexScalarBytes {
				return fail(1, fmt.Sprintf("more than %d bytes", MaxIndexScalarBytes), nil)
			}
		}
	}
	return fail(0, fmt.Sprintf("kind tag 0x%02x", b[0]), ErrUnknownEnum)
}

// IndexField is one field of a path's index projection: the index field id
// and the field's value.
type IndexField struct {
	ID    string
	Value IndexScalar
}

// IndexProjection is a path's typed index projection: its fields in
// strictly ascending order of id (bytewise), each id 1 to
// MaxIndexFieldIDBytes bytes of UTF-8. Its compact encoding is
//
//	u16(count) | count × (u8(len(id)) | id | scalar)
//
// with each scalar in the index scalar codec, so a SecondaryIndex key can
// carry the encoded value unchanged.
type IndexProjection []IndexField

// SortedIndexProjection returns a copy of fields sorted by id, the order a
// projection must have; it does not remove duplicates, which encoding
// rejects.
func SortedIndexProjection(fields []IndexField) IndexProjection {
	p := append(IndexProjection(nil), fields...)
	slices.SortStableFunc(p, func(a, b IndexField) int { return strings.Compare(a.ID, b.ID) })
	return p
}

// Lookup returns the value of field id.
func (p IndexProjection) Lookup(id string) (IndexScalar, bool) {
	i, ok := slices.BinarySearchFunc(p, id, func(f IndexField, id string) int { return strings.Compare(f.ID, id) })
	if !ok {
		return IndexScalar{}, false
	}
	return p[i].Value, true
}

const recIndexProjection = "index projection"

func (p IndexProjection) writeTo(w *wire.Writer) error {
	fail := func(reason string, cause error) error {
		return &RecordError{Op: "encode", Record: recIndexProjection, Reason: reason, Err: cause}
	}
	if len(p) > math.MaxUint16 {
		return fail(fmt.Sprintf("%d fields, more than %d", len(p), math.MaxUint16), nil)
	}
	w.U16(uint16(len(p)))
	for i, f := range p {
		if reason := indexFieldIDReason(f.ID); reason != "" {
			return fail(reason, nil)
		}
		if i > 0 && p[i-1].ID >= f.ID {
			return fail(fmt.Sprintf("field %q does not follow %q in ascending order", f.ID, p[i-1].ID), nil)
		}
		v, err := EncodeIndexScalar(f.Value)
		if err != nil {
			return fail(fmt.Sprintf("field %q: %v", f.ID, err), err)
		}
		w.U8(uint8(len(f.ID))).Raw([]byte(f.ID)).Raw(v)
	}
	return nil
}

// decodeIndexProjection decodes a projection at the start of b and returns
// the number of bytes it took. A projection without fields decodes as nil.
func decodeIndexProjection(b []byte) (IndexProjection, int, error) {
	fail := func(off int, reason string, cause error) (IndexProjection, int, error) {
		return nil, 0, &RecordError{Op: "decode", Record: recIndexProjection, Offset: off, Reason: reason, Err: cause}
	}
	r := wire.NewReader(b)
	n := int(r.U16())
	if r.Err() != nil {
		return fail(0, "truncated field count", nil)
	}
	var p IndexProjection
	for i := 0; i < n; i++ {
		off := r.Offset()
		l := int(r.U8())
		if r.Err() != nil {
			return fail(off, "truncated field id length", nil)
		}
		if l > r.Len() {
			return fail(off, fmt.Sprintf("field id length %d, only %d bytes follow", l, r.Len()), nil)
		}
		id := string(r.Take(l))
		if reason := indexFieldIDReason(id); reason != "" {
			return fail(off, reason, nil)
		}
		if i > 0 && p[i-1].ID >= id {
			return fail(off, fmt.Sprintf("field %q does not follow %q in ascending order", id, p[i-1].ID), nil)
		}
		v, m, err := DecodeIndexScalar(b[r.Offset():])
		if err != nil {
			return fail(r.Offset(), fmt.Sprintf("field %q: %v", id, err), err)
		}
		r.Take(m)
		p = append(p, IndexField{ID: id, Value: v})
	}
	return p, r.Offset(), nil
}

// SecondaryIndexEntry is the value of a SecondaryIndex row (version 1):
// path_generation u64 | artifact_revision_id [16]. A reader rechecks the
// workspace marker and the path at its read version before using a row.
type SecondaryIndexEntry struct {
	PathGeneration uint64
	Revision       RevisionID
}

const recSecondaryIndex = "secondary_index value"

// Encode returns the value's bytes.
func (v SecondaryIndexEntry) Encode() ([]byte, error) {
	w := newValueWriter(recSecondaryIndex, SecondaryIndexVersion)
	w.u64(v.PathGeneration)
	w.id16(v.Revision)
	return w.finish()
}

// DecodeSecondaryIndexEntry decodes a SecondaryIndex value.
func DecodeSecondaryIndexEntry(b []byte) (SecondaryIndexEntry, error) {
	r := newValueReader(recSecondaryIndex, b, SecondaryIndexVersion)
	v := SecondaryIndexEntry{PathGeneration: r.u64(), Revision: r.id16()}
	if err := r.end(); err != nil {
		return SecondaryIndexEntry{}, err
	}
	return v, nil
}
