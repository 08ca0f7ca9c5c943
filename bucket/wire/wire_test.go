package wire_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/wire"
)

func TestWriterLayout(t *testing.T) {
	w := wire.NewWriter([]byte("pre")).
		U8(1).U16(0x0203).U32(0x04050607).U64(0x08090a0b0c0d0e0f).
		Raw([]byte{0xff}).Bytes16([]byte("ab")).Bytes32([]byte("c"))
	want := []byte("pre\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\xff\x00\x02ab\x00\x00\x00\x01c")
	if err := w.Err(); err != nil {
		t.Fatalf("Err() = %v, want nil", err)
	}
	if got := w.Bytes(); !bytes.Equal(got, want) {
		t.Fatalf("Bytes() = %x, want %x", got, want)
	}
	if got, want := w.Len(), len(want); got != want {
		t.Fatalf("Len() = %d, want %d", got, want)
	}
}

func TestRoundTrip(t *testing.T) {
	w := wire.NewWriter(nil).U8(7).U16(65535).U32(1<<32 - 1).U64(1 << 63).
		Bytes16([]byte("name")).Bytes32(nil).Raw([]byte("xyz"))
	r := wire.NewReader(w.Bytes())
	u8, u16, u32, u64 := r.U8(), r.U16(), r.U32(), r.U64()
	name, empty := r.Bytes16(), r.Bytes32()
	var fixed [3]byte
	r.Copy(fixed[:])
	if err := r.End(); err != nil {
		t.Fatalf("End() = %v, want nil", err)
	}
	if u8 != 7 || u16 != 65535 || u32 != 1<<32-1 || u64 != 1<<63 {
		t.Fatalf("ints = %d %d %d %d", u8, u16, u32, u64)
	}
	if got, want := string(name), "name"; got != want {
		t.Fatalf("Bytes16() = %q, want %q", got, want)
	}
	if got, want := len(empty), 0; got != want || empty == nil {
		t.Fatalf("Bytes32() of an empty string = %v, want a non-nil empty slice", empty)
	}
	if got, want := string(fixed[:]), "xyz"; got != want {
		t.Fatalf("Copy = %q, want %q", got, want)
	}
	if got, want := r.Offset(), len(w.Bytes()); got != want {
		t.Fatalf("Offset() = %d, want %d", got, want)
	}
}

// TestReaderStickyError: the first failure is reported with its field and
// offset, and every later read returns zero.
func TestReaderStickyError(t *testing.T) {
	r := wire.NewReader([]byte{1, 2, 3})
	if got, want := r.U16(), uint16(0x0102); got != want {
		t.Fatalf("U16() = %#x, want %#x", got, want)
	}
	if got := r.U32(); got != 0 {
		t.Fatalf("U32() past the end = %d, want 0", got)
	}
	if got := r.U8(); got != 0 {
		t.Fatalf("U8() after an error = %d, want 0 (the error sticks)", got)
	}
	var e *wire.Error
	if err := r.End(); !errors.As(err, &e) || !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("End() = %v, want a *wire.Error wrapping ErrMalformed", err)
	}
	if got, want := *e, (wire.Error{Op: "u32", Offset: 2, Reason: "need 4 bytes, have 1"}); got != want {
		t.Fatalf("error = %+v, want %+v", got, want)
	}
}

func TestReaderFailures(t *testing.T) {
	for _, c := range []struct {
		name string
		in   []byte
		read func(*wire.Reader)
		op   string
		off  int
	}{
		{"trailing bytes", []byte{1, 2}, func(r *wire.Reader) { r.U8() }, "end", 1},
		{"bytes16 longer than input", []byte{0, 0, 0, 5, 'a'}, func(r *wire.Reader) { r.U16(); r.Bytes16() }, "bytes16", 2},
		{"bytes32 length cut", []byte{0, 0}, func(r *wire.Reader) { r.Bytes32() }, "u32", 0},
		{"bytes32 huge length", []byte{0xff, 0xff, 0xff, 0xff, 'a'}, func(r *wire.Reader) { r.Bytes32() }, "bytes32", 0},
		{"negative take", nil, func(r *wire.Reader) { r.Take(-1) }, "bytes", 0},
		{"codec's own check", []byte("XX"), func(r *wire.Reader) { r.Take(2); r.Fail("magic", "bad magic") }, "magic", 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := wire.NewReader(c.in)
			c.read(r)
			var e *wire.Error
			if err := r.End(); !errors.As(err, &e) {
				t.Fatalf("End() = %v, want a *wire.Error", err)
			}
			if got, want := e.Op, c.op; got != want {
				t.Errorf("Op = %q, want %q", got, want)
			}
			if got, want := e.Offset, c.off; got != want {
				t.Errorf("Offset = %d, want %d", got, want)
			}
		})
	}
}

func TestWriterStickyError(t *testing.T) {
	w := wire.NewWriter(nil).U8(1).Bytes16([]byte(strings.Repeat("x", 1<<16))).U8(2)
	var e *wire.Error
	if err := w.Err(); !errors.As(err, &e) || !errors.Is(err, wire.ErrMalformed) {
		t.Fatalf("Err() = %v, want a *wire.Error wrapping ErrMalformed", err)
	}
	if got, want := e.Op, "bytes16"; got != want {
		t.Fatalf("Op = %q, want %q", got, want)
	}
	if got, want := w.Bytes(), []byte{1}; !bytes.Equal(got, want) {
		t.Fatalf("Bytes() = %x, want %x (nothing after the error)", got, want)
	}
	w.Fail("later", "ignored")
	if got, want := e.Op, "bytes16"; w.Err() != error(e) || got != want {
		t.Fatalf("a later Fail replaced the first error: %v", w.Err())
	}
}

// FuzzReader: any input either reads to its end or fails with an Error
// wrapping ErrMalformed; nothing panics, and what was read writes back to
// the bytes consumed.
func FuzzReader(f *testing.F) {
	f.Add([]byte{0, 2, 'a', 'b', 0, 0, 0, 1, 'c', 9})
	f.Add([]byte{0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := wire.NewReader(b)
		a, c, n := r.Bytes16(), r.Bytes32(), r.U8()
		if err := r.Err(); err != nil {
			if !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("Err() = %v, want ErrMalformed", err)
			}
			return
		}
		back := wire.NewWriter(nil).Bytes16(a).Bytes32(c).U8(n).Bytes()
		if !bytes.Equal(back, b[:r.Offset()]) {
			t.Fatalf("rewritten %x, read %x", back, b[:r.Offset()])
		}
	})
}

// TestUVarint: values round-trip in their shortest encoding; a longer
// encoding of the same value, a truncated one and one past 64 bits are
// refused.
func TestUVarint(t *testing.T) {
	for _, v := range []uint64{0, 1, 127, 128, 16383, 16384, 1<<32 - 1, 1<<64 - 1} {
		w := wire.NewWriter(nil).UVarint(v)
		r := wire.NewReader(w.Bytes())
		if got := r.UVarint(); got != v || r.End() != nil {
			t.Fatalf("UVarint round trip of %d = %d, %v", v, got, r.End())
		}
	}
	for name, b := range map[string][]byte{
		"overlong zero": {0x80, 0x00},
		"overlong one":  {0x81, 0x00},
		"truncated":     {0x80},
		"empty":         {},
		"past 64 bits":  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02},
		"eleven bytes":  {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	} {
		r := wire.NewReader(b)
		if got := r.UVarint(); got != 0 || !errors.Is(r.Err(), wire.ErrMalformed) {
			t.Errorf("%s: UVarint() = %d, err %v; want 0 and ErrMalformed", name, got, r.Err())
		}
	}
}

// FuzzUVarint: a varint either fails with ErrMalformed or is the shortest
// encoding of its value, so writing the value back gives exactly the
// bytes read; a reader never reads past its input.
func FuzzUVarint(f *testing.F) {
	for _, v := range []uint64{0, 1, 127, 128, 300, 16384, 1<<32 - 1, 1<<63 + 5, 1<<64 - 1} {
		f.Add(wire.NewWriter(nil).UVarint(v).U8(0xaa).Bytes())
	}
	f.Add([]byte{0x80, 0x00})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := wire.NewReader(b)
		v := r.UVarint()
		if err := r.Err(); err != nil {
			if v != 0 || !errors.Is(err, wire.ErrMalformed) {
				t.Fatalf("UVarint() = %d, %v; want 0 and ErrMalformed", v, err)
			}
			return
		}
		if r.Offset() > len(b) {
			t.Fatalf("read %d of %d bytes", r.Offset(), len(b))
		}
		if back := wire.NewWriter(nil).UVarint(v).Bytes(); !bytes.Equal(back, b[:r.Offset()]) {
			t.Fatalf("UVarint %d from %x writes back as %x", v, b[:r.Offset()], back)
		}
	})
}
