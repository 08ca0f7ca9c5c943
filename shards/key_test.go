package shards_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/shards"
)

func TestKeyBuilderReaderRoundTrip(t *testing.T) {
	root := [16]byte{1, 2, 3}
	commit := [32]byte{9: 7}
	snap := [8]byte{0, 0, 0, 0, 0, 0, 1, 2}
	key, err := shards.NewKey().ID16(root).U8(3).U16(0x0102).U32(0x03040506).U64(0x0708090a0b0c0d0e).
		ID32(commit).ID8(snap).String("wb-1").Name("tag").Path([]string{"outputs", "a.txt"}).
		LenPath([]string{"x", "y"}).Raw([]byte{0xaa}).Build()
	if err != nil {
		t.Fatal(err)
	}
	r := shards.NewKeyReader(key)
	if got := r.ID16(); got != root {
		t.Errorf("ID16 = %x", got)
	}
	if got := r.U8(); got != 3 {
		t.Errorf("U8 = %d", got)
	}
	if got := r.U16(); got != 0x0102 {
		t.Errorf("U16 = %x", got)
	}
	if got := r.U32(); got != 0x03040506 {
		t.Errorf("U32 = %x", got)
	}
	if got := r.U64(); got != 0x0708090a0b0c0d0e {
		t.Errorf("U64 = %x", got)
	}
	if got := r.ID32(); got != commit {
		t.Errorf("ID32 = %x", got)
	}
	if got := r.ID8(); got != snap {
		t.Errorf("ID8 = %x", got)
	}
	if got := string(r.Bytes()); got != "wb-1" {
		t.Errorf("Bytes = %q", got)
	}
	if got := string(r.Name()); got != "tag" {
		t.Errorf("Name = %q", got)
	}
	if got := r.Path(); !slices.Equal(got, []string{"outputs", "a.txt"}) {
		t.Errorf("Path = %q", got)
	}
	if got := r.LenPath(); !slices.Equal(got, []string{"x", "y"}) {
		t.Errorf("LenPath = %q", got)
	}
	if got := r.Rest(); !bytes.Equal(got, []byte{0xaa}) {
		t.Errorf("Rest = %x", got)
	}
	if err := r.End(); err != nil {
		t.Fatalf("End: %v", err)
	}
}

func TestKeyEncodingsGolden(t *testing.T) {
	key, err := shards.NewKey().U16(1).U32(2).String("ab").Name("c").Path([]string{"a", "b"}).LenPath([]string{"a", "b"}).Build()
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		0x00, 0x01, // u16
		0x00, 0x00, 0x00, 0x02, // u32
		0x00, 0x00, 0x00, 0x02, 'a', 'b', // four-byte length string
		0x00, 0x01, 'c', // two-byte length name
		'b', 0x00, 'c', 0x01, // exact row of a/b
		0x00, 0x00, 0x00, 0x03, 'b', 0x00, 'c', // length-delimited path
	}
	if !bytes.Equal(key, want) {
		t.Fatalf("key = %x\nwant  %x", key, want)
	}
	prefix, err := shards.NewKey().PathPrefix([]string{"a", "b"}).Build()
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{'b', 0, 'c', 0}; !bytes.Equal(prefix, want) {
		t.Fatalf("prefix = %x, want %x", prefix, want)
	}
}

func TestKeyReaderMalformed(t *testing.T) {
	cases := []struct {
		name string
		key  []byte
		read func(r *shards.KeyReader)
	}{
		{"short u16", []byte{1}, func(r *shards.KeyReader) { r.U16() }},
		{"short u32", []byte{1, 2, 3}, func(r *shards.KeyReader) { r.U32() }},
		{"short u64", make([]byte, 7), func(r *shards.KeyReader) { r.U64() }},
		{"short id16", make([]byte, 15), func(r *shards.KeyReader) { r.ID16() }},
		{"short id32", make([]byte, 31), func(r *shards.KeyReader) { r.ID32() }},
		{"bytes overrun", []byte{0, 0, 0, 5, 'a'}, func(r *shards.KeyReader) { r.Bytes() }},
		{"huge bytes length", []byte{0xff, 0xff, 0xff, 0xff}, func(r *shards.KeyReader) { r.Bytes() }},
		{"name overrun", []byte{0, 2, 'a'}, func(r *shards.KeyReader) { r.Name() }},
		{"path without terminator", []byte{'b', 0, 'c'}, func(r *shards.KeyReader) { r.Path() }},
		{"empty path", []byte{0x01}, func(r *shards.KeyReader) { r.Path() }},
		{"empty component", []byte{'b', 0, 0, 'c', 1}, func(r *shards.KeyReader) { r.Path() }},
		{"leading separator", []byte{0, 'c', 1}, func(r *shards.KeyReader) { r.Path() }},
		{"trailing separator", []byte{'c', 0, 1}, func(r *shards.KeyReader) { r.Path() }},
		{"component not utf-8", []byte{0xc1 + 1, 1}, func(r *shards.KeyReader) { r.Path() }},
		{"len path with terminator", []byte{0, 0, 0, 2, 'b', 1}, func(r *shards.KeyReader) { r.LenPath() }},
		{"len path empty", []byte{0, 0, 0, 0}, func(r *shards.KeyReader) { r.LenPath() }},
		{"trailing bytes", []byte{1, 2}, func(r *shards.KeyReader) { r.U8() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := shards.NewKeyReader(c.key)
			c.read(r)
			err := r.End()
			if !errors.Is(err, shards.ErrMalformedKey) {
				t.Fatalf("error = %v, want ErrMalformedKey", err)
			}
			var ke *shards.KeyError
			if !errors.As(err, &ke) {
				t.Fatalf("error %v is not a *KeyError", err)
			}
			// The error sticks: later reads return zero values.
			if got := r.U8(); got != 0 || r.Err() != err {
				t.Fatalf("after error: U8 = %d, Err = %v", got, r.Err())
			}
		})
	}
}

func TestPathEncodeRejects(t *testing.T) {
	for _, p := range [][]string{nil, {}, {""}, {"a", ""}, {"a\x00b"}, {"\xff"}, {"a", "\xc3"}} {
		if _, err := shards.EncodePath(p); !errors.Is(err, shards.ErrInvalidPath) {
			t.Errorf("EncodePath(%q) error = %v, want ErrInvalidPath", p, err)
		}
		if _, err := shards.NewKey().U8(1).Path(p).Build(); !errors.Is(err, shards.ErrInvalidPath) {
			t.Errorf("KeyBuilder.Path(%q) error = %v, want ErrInvalidPath", p, err)
		}
		if _, err := shards.NewKey().LenPath(p).Build(); !errors.Is(err, shards.ErrInvalidPath) {
			t.Errorf("KeyBuilder.LenPath(%q) error = %v, want ErrInvalidPath", p, err)
		}
	}
	if _, err := shards.NewKey().Name(strings.Repeat("x", 1<<16)).Build(); !errors.Is(err, shards.ErrMalformedKey) {
		t.Errorf("Name of 65536 bytes error = %v, want ErrMalformedKey", err)
	}
	if _, err := shards.Ordered(""); !errors.Is(err, shards.ErrInvalidPath) {
		t.Errorf("Ordered(\"\") error = %v", err)
	}
	if _, err := shards.Unordered([]byte{0x01}); !errors.Is(err, shards.ErrMalformedKey) {
		t.Errorf("Unordered(0x01) error = %v", err)
	}
}

func TestOrderedTransform(t *testing.T) {
	got, err := shards.Ordered("a\x01é")
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{'b', 0x02, 0xc3 + 1, 0xa9 + 1}; !bytes.Equal(got, want) {
		t.Fatalf("Ordered = %x, want %x", got, want)
	}
	back, err := shards.Unordered(got)
	if err != nil || back != "a\x01é" {
		t.Fatalf("Unordered = %q, %v", back, err)
	}
}

// runes the path generator draws from: low control bytes next to the
// reserved ones, ASCII, and multi-byte UTF-8 up to the largest code point.
var pathRunes = []rune{0x01, 0x02, '-', '.', '/', 'a', 'b', 0x7f, 'é', '中', 0x10ffff}

func randomPath(rng *rand.Rand) []string {
	p := make([]string, 1+rng.IntN(4))
	for i := range p {
		var b strings.Builder
		for n := 1 + rng.IntN(3); n > 0; n-- {
			b.WriteRune(pathRunes[rng.IntN(len(pathRunes))])
		}
		p[i] = b.String()
	}
	return p
}

// comparePaths is the order the seed states for path keys: components
// compare by their bytes in turn, and a path sorts after every path below
// it ("a/" subtree, then exact "a", then longer siblings such as "a\x01").
func comparePaths(a, b []string) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	switch {
	case len(a) == len(b):
		return 0
	case len(a) < len(b):
		return 1 // a is an ancestor of b
	default:
		return -1
	}
}

func TestPathOrderAndReversibility(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		a, b := randomPath(rng), randomPath(rng)
		if rng.IntN(4) == 0 { // often share an ancestor
			b = append(slices.Clone(a[:rng.IntN(len(a))]), b...)
		}
		ea, err := shards.EncodePath(a)
		if err != nil {
			t.Fatal(err)
		}
		eb, err := shards.EncodePath(b)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := bytes.Compare(ea, eb), comparePaths(a, b); got != want {
			t.Fatalf("compare(%q, %q): encoded %d, paths %d", a, b, got, want)
		}
		if got, want := len(ea), len(strings.Join(a, "/"))+1; got != want {
			t.Fatalf("encoded %q is %d bytes, want %d", a, got, want)
		}
		back, err := shards.DecodePath(ea)
		if err != nil || !slices.Equal(back, a) {
			t.Fatalf("DecodePath(EncodePath(%q)) = %q, %v", a, back, err)
		}
		// No exact key is a strict prefix of another.
		if len(ea) < len(eb) && bytes.HasPrefix(eb, ea) {
			t.Fatalf("exact %q is a prefix of %q", a, b)
		}
		// The subtree prefix of a directory matches exactly its strict
		// descendants.
		dir := a[:rng.IntN(len(a)+1)]
		pre, err := shards.AppendPathPrefix(nil, dir)
		if err != nil {
			t.Fatal(err)
		}
		below := len(b) > len(dir) && slices.Equal(b[:len(dir)], dir)
		if got := bytes.HasPrefix(eb, pre); got != below {
			t.Fatalf("HasPrefix(%q, prefix %q) = %v, want %v", b, dir, got, below)
		}
	}
}

func TestPathSeedOrderExample(t *testing.T) {
	paths := [][]string{{"ab"}, {"a\x01"}, {"a"}, {"a", "z"}, {"a", "b", "c"}}
	var enc [][]byte
	for _, p := range paths {
		e, err := shards.EncodePath(p)
		if err != nil {
			t.Fatal(err)
		}
		enc = append(enc, e)
	}
	slices.SortFunc(enc, bytes.Compare)
	var got []string
	for _, e := range enc {
		p, err := shards.DecodePath(e)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, strings.Join(p, "/"))
	}
	want := []string{"a/b/c", "a/z", "a", "a\x01", "ab"}
	if !slices.Equal(got, want) {
		t.Fatalf("order = %q, want %q", got, want)
	}
}

func FuzzDecodeKey(f *testing.F) {
	f.Add([]byte{'b', 0, 'c', 1})
	f.Add([]byte{0, 0, 0, 3, 'b', 0, 'c'})
	f.Add([]byte{0, 1, 'c', 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		// Exact-row paths: decoding never panics, and what decodes
		// re-encodes to the same bytes.
		if p, err := shards.DecodePath(b); err == nil {
			e, err := shards.EncodePath(p)
			if err != nil || !bytes.Equal(e, b) {
				t.Fatalf("DecodePath(%x) = %q, re-encoded %x, %v", b, p, e, err)
			}
		} else if !errors.Is(err, shards.ErrMalformedKey) {
			t.Fatalf("DecodePath(%x) error %v is not ErrMalformedKey", b, err)
		}
		// Length-delimited paths likewise.
		r := shards.NewKeyReader(b)
		if p := r.LenPath(); r.End() == nil {
			e, err := shards.NewKey().LenPath(p).Build()
			if err != nil || !bytes.Equal(e, b) {
				t.Fatalf("LenPath(%x) = %q, re-encoded %x, %v", b, p, e, err)
			}
		}
		// A mixed sequence of reads never panics.
		r = shards.NewKeyReader(b)
		r.ID16()
		r.U8()
		r.Bytes()
		r.Name()
		r.Path()
		r.U64()
		r.Rest()
		_ = r.End()
		// Sharding any bytes as a key of any family never panics.
		for _, fam := range schema.Families() {
			idx, err := schema.ShardOf(fam, b)
			if err != nil && !errors.Is(err, shards.ErrMalformedKey) {
				t.Fatalf("ShardOf(%v, %x) error %v is not ErrMalformedKey", fam, b, err)
			}
			// A key begins with itself: when both answer, they agree.
			if pidx, ok := schema.PrefixShard(fam, b); ok && err == nil && pidx != idx {
				t.Fatalf("%v key %x: ShardOf %02x, PrefixShard %02x", fam, b, idx, pidx)
			}
		}
	})
}

// FuzzPathOrder checks, for any two paths given as "/"-joined text, that
// encoding is reversible and preserves the seed's order.
func FuzzPathOrder(f *testing.F) {
	f.Add("a/b", "a")
	f.Add("a\x01", "ab")
	f.Add("é/x", "\U0010ffff")
	f.Fuzz(func(t *testing.T, sa, sb string) {
		a, b := strings.Split(sa, "/"), strings.Split(sb, "/")
		ea, errA := shards.EncodePath(a)
		eb, errB := shards.EncodePath(b)
		for _, c := range []struct {
			p   []string
			e   []byte
			err error
		}{{a, ea, errA}, {b, eb, errB}} {
			if c.err != nil {
				if !errors.Is(c.err, shards.ErrInvalidPath) {
					t.Fatalf("EncodePath(%q) error %v is not ErrInvalidPath", c.p, c.err)
				}
				continue
			}
			back, err := shards.DecodePath(c.e)
			if err != nil || !slices.Equal(back, c.p) {
				t.Fatalf("DecodePath(EncodePath(%q)) = %q, %v", c.p, back, err)
			}
		}
		if errA == nil && errB == nil {
			if got, want := bytes.Compare(ea, eb), comparePaths(a, b); got != want {
				t.Fatalf("compare(%q, %q): encoded %d, paths %d", a, b, got, want)
			}
		}
	})
}

// BenchmarkKeyBuild builds the key shape most families use: two 16-byte
// ids and a u64.
func BenchmarkKeyBuild(b *testing.B) {
	var root, rev [16]byte
	b.ReportAllocs()
	for i := range b.N {
		if _, err := shards.NewKey().ID16(root).ID16(rev).U64(uint64(i)).Build(); err != nil {
			b.Fatal(err)
		}
	}
}
