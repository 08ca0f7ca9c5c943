package shards_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

func fillHash(b byte) (h digest.Hash) {
	for i := range h {
		h[i] = b
	}
	return h
}

// goldenIndex is the index of system shard 0x3a with salt 00…0f naming
// three pages: everything below "mo", "mo" up to "morl", and "morl"
// onwards.
const goldenIndex = "43524e58" + "02" + // magic "CRNX", version 2
	"000102030405060708090a0b0c0d0e0f" + // salt
	"f0" + "3a" + "00000003" + // family system, shard 3a, 3 pages
	"00" + "00" + "1111111111111111111111111111111111111111111111111111111111111111" + "64" + "03" + // page 0: no first key, 100 bytes, 3 records
	"00" + "02" + "6d6f" + "2222222222222222222222222222222222222222222222222222222222222222" + "32" + "01" + // page 1: "mo", 50 bytes, 1 record
	"02" + "02" + "726c" + "3333333333333333333333333333333333333333333333333333333333333333" + "c801" + "02" // page 2: "mo"+"rl", 200 bytes, 2 records

func goldenIndexPages() []shards.PageRef {
	return []shards.PageRef{
		{Ref: shards.Ref{Hash: fillHash(0x11), Size: 100, Count: 3}},
		{First: []byte("mo"), Ref: shards.Ref{Hash: fillHash(0x22), Size: 50, Count: 1}},
		{First: []byte("morl"), Ref: shards.Ref{Hash: fillHash(0x33), Size: 200, Count: 2}},
	}
}

func TestIndexGolden(t *testing.T) {
	want, err := hex.DecodeString(goldenIndex)
	if err != nil {
		t.Fatal(err)
	}
	x, err := shards.NewIndex(schema, shards.System, 0x3a, goldenSalt, goldenIndexPages())
	if err != nil {
		t.Fatal(err)
	}
	b, ref, err := x.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x\nwant    %x", b, want)
	}
	if got, want := ref, (shards.Ref{Hash: digest.Sum(want), Size: int64(len(want)), Count: 6}); got != want {
		t.Fatalf("ref = %+v, want %+v", got, want)
	}
	if got := x.EncodedSize(); got != int64(len(want)) {
		t.Fatalf("EncodedSize = %d, want %d", got, len(want))
	}
	d, err := shards.DecodeIndex(schema, want, ref.Hash, shards.System, 0x3a)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 3 || d.Salt() != goldenSalt || d.Records() != 6 || !bytes.Equal(d.Page(2).First, []byte("morl")) || !bytes.Equal(d.Page(1).First, []byte("mo")) || d.Page(0).Ref != goldenIndexPages()[0].Ref {
		t.Fatalf("decoded %+v", d)
	}
	if _, err := shards.DecodeIndex(schema, want, ref.Hash, shards.System, 0x3b); !errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("DecodeIndex as another shard: %v, want ErrMalformedObject", err)
	}
	if _, err := shards.DecodeIndex(schema, want, fillHash(1), shards.System, 0x3a); !errors.Is(err, bucket.ErrIntegrity) || errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("DecodeIndex under another hash: %v, want only ErrIntegrity", err)
	}
	for key, page := range map[string]int{"": 0, "a": 0, "mn": 0, "mo": 1, "mo\x00": 1, "mor": 1, "morl": 2, "z": 2} {
		if got := d.Find([]byte(key)); got != page {
			t.Errorf("Find(%q) = %d, want %d", key, got, page)
		}
	}
}

func TestIndexRejects(t *testing.T) {
	golden, _ := hex.DecodeString(goldenIndex)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(golden)) }
	const (
		pagesAt = 4 + 1 + 16 + 1 + 1 + 4
		page1   = pagesAt + 36 // page 0: two empty varints, hash, size, count
		page2   = page1 + 38   // page 1: first key "mo"
	)
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty", nil},
		{"short header", golden[:10]},
		{"bad magic", edit(func(b []byte) []byte { b[3] = 'S'; return b })},
		{"version 1", edit(func(b []byte) []byte { b[4] = 1; return b })},
		{"version 3", edit(func(b []byte) []byte { b[4] = 3; return b })},
		{"unknown family", edit(func(b []byte) []byte { b[21] = 0x99; return b })},
		{"one page", edit(func(b []byte) []byte { b[pagesAt-1] = 1; return b[:page1] })},
		{"count above bytes", edit(func(b []byte) []byte { b[pagesAt-1] = 4; return b })},
		{"trailing byte", append(bytes.Clone(golden), 0)},
		{"truncated", golden[:len(golden)-1]},
		{"first page with a key", edit(func(b []byte) []byte {
			return slices.Concat(b[:pagesAt], []byte{0, 1, 'a'}, b[pagesAt+2:])
		})},
		{"zero records", edit(func(b []byte) []byte { b[pagesAt+35] = 0; return b })},
		{"zero hash", edit(func(b []byte) []byte { clear(b[pagesAt+2 : pagesAt+34]); return b })},
		{"size below a shard header", edit(func(b []byte) []byte { b[pagesAt+34] = 27; return b })},
		{"shares more than the previous key", edit(func(b []byte) []byte { b[page1] = 1; return b })},
		{"shares less than it could", edit(func(b []byte) []byte {
			return slices.Concat(b[:page2], []byte{1, 3, 'o', 'r', 'l'}, b[page2+4:])
		})},
		// Found by FuzzDecodeIndex: a shared length past the previous key
		// followed by a suffix length that does not decode panicked.
		{"shares past the previous key, then a bad varint", edit(func(b []byte) []byte {
			return slices.Concat(b[:pagesAt], []byte{0x30, 0x98, 0x00}, b[pagesAt+3:])
		})},
		{"overlong varint size", edit(func(b []byte) []byte {
			return slices.Concat(b[:pagesAt+34], []byte{0xe4, 0x00}, b[pagesAt+35:])
		})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			x, err := shards.DecodeIndex(schema, c.b, digest.Sum(c.b), shards.System, 0x3a)
			if !errors.Is(err, shards.ErrMalformedObject) || x != nil {
				t.Fatalf("DecodeIndex = %v, %v; want ErrMalformedObject", x, err)
			}
		})
	}
	// NewIndex refuses what the decoder refuses.
	pages := goldenIndexPages()
	for name, ps := range map[string][]shards.PageRef{
		"one page":        pages[:1],
		"unsorted":        {pages[0], pages[1], {First: []byte("ma"), Ref: pages[1].Ref}},
		"empty later key": {pages[0], {Ref: pages[1].Ref}},
	} {
		if _, err := shards.NewIndex(schema, shards.System, 0x3a, goldenSalt, ps); err == nil {
			t.Errorf("NewIndex %s: no error", name)
		}
	}
	// A first key of another shard.
	keys, idx := oneShardKeys(t, shardstest.Fixed32, 2)
	other := sampleKey(t, shardstest.Fixed32, 0)
	for i := 1; shardOf(t, shardstest.Fixed32, other) == idx; i++ {
		other = sampleKey(t, shardstest.Fixed32, i)
	}
	ref := shards.Ref{Hash: fillHash(1), Size: 100, Count: 1}
	if _, err := shards.NewIndex(schema, shardstest.Fixed32, idx, goldenSalt, []shards.PageRef{{Ref: ref}, {First: keys[1], Ref: ref}}); err != nil {
		t.Fatalf("NewIndex of the shard's keys: %v", err)
	}
	if _, err := shards.NewIndex(schema, shardstest.Fixed32, idx, goldenSalt, []shards.PageRef{{Ref: ref}, {First: other, Ref: ref}}); !errors.Is(err, shards.ErrWrongShard) {
		t.Fatalf("NewIndex with a key of another shard: %v, want ErrWrongShard", err)
	}
}

// TestSplitJoinAndPages: Split cuts a shard into pages within the bound,
// none under a quarter of it; Join puts them back; an index over the pages
// finds each key's page, names the pages a scan needs, and CheckPage
// accepts each page and refuses it in another place.
func TestSplitJoinAndPages(t *testing.T) {
	const n, bound = 300, 1024
	keys, idx := oneShardKeys(t, shardstest.Grouped, n)
	recs := make([]shards.Record, n)
	for i, k := range keys {
		recs[i] = shards.Record{Key: k, Value: bytes.Repeat([]byte{byte(i)}, i%40)}
	}
	o, err := shards.NewObject(schema, shardstest.Grouped, idx, recs)
	if err != nil {
		t.Fatal(err)
	}
	pieces := o.Split(bound)
	if len(pieces) < 2 {
		t.Fatalf("Split of %d bytes at %d: %d pieces", o.EncodedSize(), bound, len(pieces))
	}
	joined := pieces[0]
	var pages []shards.PageRef
	total := 0
	for i, p := range pieces {
		if p.EncodedSize() > bound || p.EncodedSize() < bound/4 {
			t.Fatalf("piece %d: %d bytes, want %d..%d", i, p.EncodedSize(), bound/4, bound)
		}
		total += p.Len()
		if i > 0 {
			if joined, err = shards.Join(joined, p); err != nil {
				t.Fatal(err)
			}
		}
		_, ref, err := p.Encode()
		if err != nil {
			t.Fatal(err)
		}
		pr := shards.PageRef{First: p.First(), Ref: ref}
		if i == 0 {
			pr.First = nil
		}
		pages = append(pages, pr)
	}
	if total != n || joined.Len() != n || joined.EncodedSize() != o.EncodedSize() {
		t.Fatalf("pieces hold %d records, joined %d of %d bytes; want %d of %d", total, joined.Len(), joined.EncodedSize(), n, o.EncodedSize())
	}
	if _, err := shards.Join(pieces[1], pieces[0]); !errors.Is(err, shards.ErrUnsorted) {
		t.Fatalf("Join out of order: %v, want ErrUnsorted", err)
	}
	x, err := shards.NewIndex(schema, shardstest.Grouped, idx, goldenSalt, pages)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pieces {
		if err := x.CheckPage(i, p); err != nil {
			t.Fatalf("CheckPage(%d): %v", i, err)
		}
		for j := range p.Len() {
			if got := x.Find(p.At(j).Key); got != i {
				t.Fatalf("Find(record %d of page %d) = %d", j, i, got)
			}
		}
	}
	if err := x.CheckPage(1, pieces[0]); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("CheckPage of page 0 as page 1: %v, want ErrIntegrity", err)
	}
	// Range: the pages whose keys may begin with a prefix, after a key.
	for _, c := range []struct {
		prefix, after []byte
	}{
		{nil, nil}, {keys[0][:16], nil}, {keys[0][:32], nil}, {keys[0][:16], keys[n/2]}, {nil, keys[n-1]},
	} {
		lo, hi := x.Range(c.prefix, c.after)
		for i, p := range pieces {
			needed := false
			for r := range p.Scan(c.prefix, c.after) {
				_ = r
				needed = true
				break
			}
			if needed && (i < lo || i >= hi) {
				t.Fatalf("Range(%x, %x) = [%d, %d) misses page %d", c.prefix, c.after, lo, hi, i)
			}
		}
	}
	// A small object stays whole.
	if got := pieces[0].Split(bound); len(got) != 1 {
		t.Fatalf("Split of a page: %d pieces", len(got))
	}
}

// randomIndex returns the canonical bytes of an index of the grouped
// family whose first keys share a 32-byte group and part of a suffix, as
// the paths of one directory do, with sizes whose varints take one to six
// bytes.
func randomIndex(t testing.TB, seed uint64) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	group := make([]byte, shardstest.GroupLen)
	for i := range group {
		group[i] = byte(r.Uint32())
	}
	idx, err := schema.ShardOf(shardstest.Grouped, append(bytes.Clone(group), make([]byte, 8)...))
	if err != nil {
		t.Fatal(err)
	}
	pages := []shards.PageRef{{Ref: shards.Ref{Hash: fillHash(1), Size: 29, Count: 1}}}
	suffix := r.Uint64N(1 << 20)
	for i := range 2 + r.IntN(20) {
		suffix += 1 + r.Uint64N(1<<uint(8*(1+r.IntN(4))))
		first := binary.BigEndian.AppendUint64(bytes.Clone(group), suffix)
		pages = append(pages, shards.PageRef{First: first, Ref: shards.Ref{
			Hash: fillHash(byte(i + 2)), Size: 29 + r.Int64N(1<<uint(7*(1+r.IntN(5)))), Count: 1 + r.Uint32N(1<<uint(7*(1+r.IntN(3)))),
		}})
	}
	var salt shards.Salt
	for i := range salt {
		salt[i] = byte(r.Uint32())
	}
	x, err := shards.NewIndex(schema, shardstest.Grouped, idx, salt, pages)
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := x.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shards.DecodeIndex(schema, b, digest.Sum(b), shardstest.Grouped, idx); err != nil {
		t.Fatal(err)
	}
	return b
}

// FuzzDecodeIndex: no input panics the decoder; what decodes is canonical
// (encode(decode(b)) == b); the same bytes under another hash are an
// integrity failure, and for another shard of the family a malformed
// object. The family and shard come from the input's own header, so
// every family of the schema is reached.
func FuzzDecodeIndex(f *testing.F) {
	golden, _ := hex.DecodeString(goldenIndex)
	f.Add(golden)
	f.Add([]byte("CRNX\x01"))
	f.Add([]byte("CRNX\x02"))
	for seed := range uint64(4) {
		f.Add(randomIndex(f, seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fam, idx := shards.System, uint8(0x3a)
		if len(b) >= 23 {
			fam, idx = shards.Family(b[21]), b[22]
		}
		h := digest.Sum(b)
		x, err := shards.DecodeIndex(schema, b, h, fam, idx)
		if err != nil {
			if x != nil || !errors.Is(err, shards.ErrMalformedObject) {
				t.Fatalf("DecodeIndex = %v, error %v is not ErrMalformedObject", x, err)
			}
			return
		}
		again, ref, err := x.Encode()
		if err != nil || !bytes.Equal(again, b) || ref.Hash != h || ref.Size != int64(len(b)) || ref.Count != x.Records() || x.EncodedSize() != int64(len(b)) {
			t.Fatalf("encode(decode(b)) differs: %v", err)
		}
		wrong := h
		wrong[5] ^= 0x40
		if _, err := shards.DecodeIndex(schema, b, wrong, fam, idx); !errors.Is(err, bucket.ErrIntegrity) {
			t.Fatalf("under another hash: %v", err)
		}
		if _, err := shards.DecodeIndex(schema, b, h, fam, idx+1); !errors.Is(err, shards.ErrMalformedObject) {
			t.Fatalf("as another shard: %v", err)
		}
	})
}

// TestSplitFull: the pieces of SplitFull hold every record in order,
// each within the bound, every piece but the last full (the record after
// it would have taken it past the bound), and no more pieces than
// Split's but one.
func TestSplitFull(t *testing.T) {
	const n, bound = 300, 1024
	keys, idx := oneShardKeys(t, shardstest.Grouped, n)
	for _, m := range []int{n, n - 3, n - 6, 120, 41} { // ends that leave more or less for the last piece
		recs := make([]shards.Record, m)
		for i := range m {
			recs[i] = shards.Record{Key: keys[i], Value: bytes.Repeat([]byte{byte(i)}, i%40)}
		}
		o, err := shards.NewObject(schema, shardstest.Grouped, idx, recs)
		if err != nil {
			t.Fatal(err)
		}
		pieces := o.SplitFull(bound)
		even := len(o.Split(bound))
		total := 0
		for i, p := range pieces {
			if p.EncodedSize() > bound {
				t.Fatalf("%d records: piece %d of %d: %d bytes, bound %d", m, i, len(pieces), p.EncodedSize(), bound)
			}
			// The largest record here is 8 + 40 + 39 bytes.
			if i+1 < len(pieces) && p.EncodedSize() <= bound-8-40-39 {
				t.Fatalf("%d records: piece %d of %d: %d bytes, not full", m, i, len(pieces), p.EncodedSize())
			}
			if i > 0 && bytes.Compare(pieces[i-1].Last(), p.First()) >= 0 {
				t.Fatalf("%d records: piece %d begins before piece %d ends", m, i, i-1)
			}
			total += p.Len()
		}
		if total != m {
			t.Fatalf("%d records: pieces hold %d", m, total)
		}
		if len(pieces) > even+1 {
			t.Fatalf("%d records: %d full pieces, %d even ones", m, len(pieces), even)
		}
	}
}
