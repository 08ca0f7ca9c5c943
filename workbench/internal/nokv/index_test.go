package nokv_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// ---------------------------------------------------------------------------
// Index scalars

func TestIndexScalarGolden(t *testing.T) {
	cases := []struct {
		v    nokv.IndexScalar
		want string
	}{
		{nokv.NullScalar(), "01"},
		{nokv.BoolScalar(false), "02 00"},
		{nokv.BoolScalar(true), "02 01"},
		{nokv.SignedScalar(math.MinInt64), "03 0000000000000000"},
		{nokv.SignedScalar(-1), "03 7fffffffffffffff"},
		{nokv.SignedScalar(0), "03 8000000000000000"},
		{nokv.SignedScalar(1), "03 8000000000000001"},
		{nokv.SignedScalar(math.MaxInt64), "03 ffffffffffffffff"},
		{nokv.UnsignedScalar(258), "04 0000000000000102"},
		{nokv.FloatScalar(1.5), "05 bff8000000000000"},
		{nokv.FloatScalar(-1.5), "05 4007ffffffffffff"},
		{nokv.FloatScalar(0), "05 8000000000000000"},
		{nokv.FloatScalar(math.Copysign(0, -1)), "05 8000000000000000"},
		{nokv.TimestampScalar(time.Unix(1, 5)), "06 8000000000000001 00000005"},
		{nokv.TimestampScalar(time.Unix(-1, 0)), "06 7fffffffffffffff 00000000"},
		{nokv.BytesScalar(nil), "07 0000"},
		{nokv.BytesScalar([]byte{0, 1, 0xff}), "07 00ff 01 ff 0000"},
		{nokv.StringScalar("ab"), "08 6162 0000"},
		{nokv.StringScalar("\x00"), "08 00ff 0000"},
	}
	for _, c := range cases {
		got, err := nokv.EncodeIndexScalar(c.v)
		if err != nil {
			t.Fatalf("%v: %v", c.v, err)
		}
		want := hx(t, c.want)
		if !bytes.Equal(got, want) {
			t.Errorf("%v:\n got %x\nwant %x", c.v, got, want)
		}
		dec, n, err := nokv.DecodeIndexScalar(append(bytes.Clone(want), 0xee))
		if err != nil || n != len(want) {
			t.Errorf("decode %x = %v, %d, %v", want, dec, n, err)
			continue
		}
		if nokv.CompareIndexScalars(dec, c.v) != 0 || dec.Kind != c.v.Kind {
			t.Errorf("decode %x = %#v, want %#v", want, dec, c.v)
		}
		if !reflect.DeepEqual(dec, c.v) {
			t.Errorf("decode %x = %#v, not identical to %#v", want, dec, c.v)
		}
	}
}

func TestIndexScalarDecodeRejects(t *testing.T) {
	bad := []struct {
		hex  string
		enum bool
	}{
		{"", false},
		{"00", true},
		{"09", true},
		{"ff", true},
		{"02", false},
		{"02 02", false},
		{"03 00", false},
		{"05 7fffffffffffffff", false}, // -0
		{"05 fff0000000000000", false}, // +Inf
		{"05 000fffffffffffff", false}, // -Inf
		{"05 fff8000000000000", false}, // NaN
		{"05 0007ffffffffffff", false}, // -NaN
		{"06 8000000000000000 3b9aca00", false},
		{"06 8000000000000000 0000", false},
		{"07", false},
		{"07 00", false},
		{"07 61 00", false},
		{"07 00 01", false},
		{"07 00 fe 0000", false},
		{"08 ff 0000", false}, // not UTF-8
	}
	for _, c := range bad {
		_, _, err := nokv.DecodeIndexScalar(hx(t, c.hex))
		if !errors.Is(err, nokv.ErrBadRecord) || c.enum != errors.Is(err, nokv.ErrUnknownEnum) {
			t.Errorf("decode %q: %v (want ErrBadRecord, ErrUnknownEnum %t)", c.hex, err, c.enum)
		}
	}
	for _, v := range []nokv.IndexScalar{
		{}, {Kind: 9}, nokv.FloatScalar(math.Inf(1)), nokv.FloatScalar(math.NaN()),
		nokv.StringScalar("\xff"), nokv.BytesScalar(make([]byte, nokv.MaxIndexScalarBytes+1)),
		nokv.StringScalar(strings.Repeat("a", nokv.MaxIndexScalarBytes+1)),
	} {
		if _, err := nokv.EncodeIndexScalar(v); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("encode %v: %v", v.Kind, err)
		}
	}
	// The largest allowed scalar round-trips; one escaped byte more does not decode.
	big := nokv.BytesScalar(bytes.Repeat([]byte{0}, nokv.MaxIndexScalarBytes))
	enc, err := nokv.EncodeIndexScalar(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, n, err := nokv.DecodeIndexScalar(enc); err != nil || n != len(enc) {
		t.Fatalf("largest scalar: %d, %v", n, err)
	}
	over := append(append([]byte{0x07}, bytes.Repeat([]byte{0, 0xff}, nokv.MaxIndexScalarBytes+1)...), 0, 0)
	if _, _, err := nokv.DecodeIndexScalar(over); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("oversized scalar: %v", err)
	}
}

var kinds = []nokv.IndexScalarKind{
	nokv.IndexScalarNull, nokv.IndexScalarBool, nokv.IndexScalarSigned, nokv.IndexScalarUnsigned,
	nokv.IndexScalarFloat, nokv.IndexScalarTimestamp, nokv.IndexScalarBytes, nokv.IndexScalarString,
}

// randScalar returns a random valid scalar of kind k, biased to edges:
// extreme integers, signed zeros and subnormals, negative times, NUL and
// 0xff bytes, prefixes of one another.
func randScalar(r *rand.Rand, k nokv.IndexScalarKind) nokv.IndexScalar {
	pick := func(n int) int { return r.IntN(n) }
	switch k {
	case nokv.IndexScalarNull:
		return nokv.NullScalar()
	case nokv.IndexScalarBool:
		return nokv.BoolScalar(pick(2) == 1)
	case nokv.IndexScalarSigned:
		edges := []int64{math.MinInt64, math.MinInt64 + 1, -256, -1, 0, 1, 255, math.MaxInt64 - 1, math.MaxInt64}
		if pick(3) == 0 {
			return nokv.SignedScalar(edges[pick(len(edges))])
		}
		return nokv.SignedScalar(int64(r.Uint64()) >> pick(64))
	case nokv.IndexScalarUnsigned:
		edges := []uint64{0, 1, 255, 256, math.MaxUint32, math.MaxUint64 - 1, math.MaxUint64}
		if pick(3) == 0 {
			return nokv.UnsignedScalar(edges[pick(len(edges))])
		}
		return nokv.UnsignedScalar(r.Uint64() >> pick(64))
	case nokv.IndexScalarFloat:
		edges := []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
			math.MaxFloat64, -math.MaxFloat64, 1, -1, 0.1, -0.1, 1e300, -1e-300}
		if pick(3) == 0 {
			return nokv.FloatScalar(edges[pick(len(edges))])
		}
		for {
			f := math.Float64frombits(r.Uint64())
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return nokv.FloatScalar(f)
			}
		}
	case nokv.IndexScalarTimestamp:
		sec := int64(r.Uint64()) >> pick(64)
		if pick(4) == 0 {
			sec = int64(pick(5)) - 2
		}
		return nokv.TimestampScalar(time.Unix(sec, int64(pick(3))*int64(r.IntN(1e9))/2))
	case nokv.IndexScalarBytes:
		alphabet := []byte{0x00, 0x01, 0x61, 0xfe, 0xff}
		b := make([]byte, pick(6))
		for i := range b {
			b[i] = alphabet[pick(len(alphabet))]
		}
		return nokv.BytesScalar(b)
	case nokv.IndexScalarString:
		alphabet := []string{"\x00", "\x01", "a", "b", "é", "\u00ff", "\U0001F600", "/"}
		var sb strings.Builder
		for range pick(6) {
			sb.WriteString(alphabet[pick(len(alphabet))])
		}
		return nokv.StringScalar(sb.String())
	}
	panic("unknown kind")
}

func mustEncode(t testing.TB, v nokv.IndexScalar) []byte {
	t.Helper()
	b, err := nokv.EncodeIndexScalar(v)
	if err != nil {
		t.Fatalf("encode %#v: %v", v, err)
	}
	return b
}

// TestIndexScalarOrderSameKind: for random pairs of one kind,
// CompareIndexScalars(a, b) == bytes.Compare(enc(a), enc(b)), and decoding
// gives back a value that compares equal.
func TestIndexScalarOrderSameKind(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range kinds {
		for range 20000 {
			a, b := randScalar(r, k), randScalar(r, k)
			ea, eb := mustEncode(t, a), mustEncode(t, b)
			if got, want := bytes.Compare(ea, eb), nokv.CompareIndexScalars(a, b); got != want {
				t.Fatalf("%v: a=%#v b=%#v: bytes order %d, value order %d (%x, %x)", k, a, b, got, want, ea, eb)
			}
			if bytes.HasPrefix(eb, ea) && !bytes.Equal(ea, eb) {
				t.Fatalf("%v: encoding %x is a prefix of %x", k, ea, eb)
			}
			d, n, err := nokv.DecodeIndexScalar(ea)
			if err != nil || n != len(ea) || nokv.CompareIndexScalars(d, a) != 0 {
				t.Fatalf("%v: decode %x = %#v, %d, %v", k, ea, d, n, err)
			}
		}
	}
}

// TestIndexScalarOrderAcrossKinds: scalars of different kinds order by the
// documented kind order, Null < Bool < Signed < Unsigned < Float <
// Timestamp < Bytes < String, whatever their values.
func TestIndexScalarOrderAcrossKinds(t *testing.T) {
	want := []string{"Null", "Bool", "Signed", "Unsigned", "Float", "Timestamp", "Bytes", "String"}
	for i, k := range kinds {
		if k.String() != want[i] || uint8(k) != uint8(i+1) {
			t.Fatalf("kind %d is %v (%d), want %s", i, k, k, want[i])
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		ka, kb := kinds[r.IntN(len(kinds))], kinds[r.IntN(len(kinds))]
		if ka == kb {
			continue
		}
		a, b := randScalar(r, ka), randScalar(r, kb)
		got := bytes.Compare(mustEncode(t, a), mustEncode(t, b))
		if wantOrder := nokv.CompareIndexScalars(a, b); got != wantOrder || (ka < kb) != (got < 0) {
			t.Fatalf("%v vs %v: bytes order %d, value order %d", ka, kb, got, wantOrder)
		}
	}
}

// TestSecondaryIndexKeyOrder: because the value codec is order-preserving
// and self-delimiting, one index's keys sort by (value, incarnation, path)
// exactly as their bytes do.
func TestSecondaryIndexKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	type row struct {
		k   nokv.SecondaryIndexKey
		enc []byte
	}
	incs := []nokv.IncarnationID{fill16(0x00), fill16(0x01), fill16(0xff)}
	paths := [][]string{{"a"}, {"a", "b"}, {"ab"}, {"a\x01"}, {"b"}, {"a", "b", "c"}}
	var rows []row
	for range 3000 {
		k := nokv.SecondaryIndexKey{
			Root: tRoot, IndexID: "f",
			Value:       randScalar(r, kinds[r.IntN(len(kinds))]),
			Incarnation: incs[r.IntN(len(incs))],
			Path:        paths[r.IntN(len(paths))],
		}
		b, err := k.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := nokv.Families().ShardOf(nokv.FamilySecondaryIndex, b); err != nil {
			t.Fatalf("ShardOf: %v", err)
		}
		back, err := nokv.ParseSecondaryIndexKey(b)
		if err != nil || nokv.CompareIndexScalars(back.Value, k.Value) != 0 || back.Incarnation != k.Incarnation || !slices.Equal(back.Path, k.Path) {
			t.Fatalf("parse %x = %#v, %v", b, back, err)
		}
		rows = append(rows, row{k, b})
	}
	byTuple := func(a, b row) int {
		if c := nokv.CompareIndexScalars(a.k.Value, b.k.Value); c != 0 {
			return c
		}
		if c := bytes.Compare(a.k.Incarnation[:], b.k.Incarnation[:]); c != 0 {
			return c
		}
		return workbench.ComparePaths(a.k.Path, b.k.Path)
	}
	for i := 1; i < len(rows); i++ {
		a, b := rows[i-1], rows[i]
		if got, want := bytes.Compare(a.enc, b.enc), byTuple(a, b); got != want {
			t.Fatalf("keys %x and %x: bytes order %d, tuple order %d", a.enc, b.enc, got, want)
		}
	}
}

func TestIndexProjectionHelpers(t *testing.T) {
	p := nokv.SortedIndexProjection([]nokv.IndexField{
		{ID: "b", Value: nokv.UnsignedScalar(2)},
		{ID: "a", Value: nokv.UnsignedScalar(1)},
	})
	if p[0].ID != "a" || p[1].ID != "b" {
		t.Fatalf("sorted = %v", p)
	}
	if v, ok := p.Lookup("b"); !ok || v.Unsigned != 2 {
		t.Fatalf("Lookup(b) = %v, %t", v, ok)
	}
	if _, ok := p.Lookup("c"); ok {
		t.Fatal("Lookup(c) found a field")
	}
}
