package roots_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// schema is the engine's test schema.
var schema = shardstest.Schema()

// fill returns a hash whose 32 bytes are all b.
func fill(b byte) digest.Hash {
	var h digest.Hash
	for i := range h {
		h[i] = b
	}
	return h
}

func rep(hexByte string, n int) string { return strings.Repeat(hexByte, n) }

var goldenNonce = roots.Nonce{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// goldenTableValue is the fixed32 table of the golden bytes.
func goldenTableValue() *roots.Table {
	return &roots.Table{
		Nonce:  goldenNonce,
		Family: shardstest.Fixed32,
		Format: roots.TableFormat,
		Entries: []roots.Entry{
			{Shard: 0x01, Ref: shards.Ref{Hash: fill(0x11), Size: 100, Count: 2}, Last: strings.Repeat("\xaa", 32)},
			{Shard: 0x80, Index: true, Ref: shards.Ref{Hash: fill(0x22), Size: 50, Count: 1}},
			{Shard: 0x90, Ref: shards.Ref{Hash: digest.Sum([]byte(goldenInline)), Size: int64(len(goldenInline)), Count: 4}, Inline: goldenInline, Last: strings.Repeat("\xbb", 32)},
		},
	}
}

// goldenTableV3Value is goldenTableValue in table format 3, which keeps
// no last keys.
func goldenTableV3Value() *roots.Table {
	t := goldenTableValue()
	t.Format = roots.TableFormatV3
	for i := range t.Entries {
		t.Entries[i].Last = ""
	}
	return t
}

// goldenInline stands for the bytes of a small object a table carries.
const goldenInline = "tiny"

// goldenTable is goldenTableValue's canonical encoding.
var goldenTable = "43524e54" + "04" + // magic "CRNT", version 4
	"000102030405060708090a0b0c0d0e0f" + // nonce
	"04" + "0003" + // family fixed32, 3 entries
	"01" + "01" + rep("11", 32) + "0000000000000064" + "00000002" + "20" + rep("aa", 32) + // shard 01, a shard object: 100 bytes, 2 records, last key aa…
	"80" + "02" + rep("22", 32) + "0000000000000032" + "00000001" + "00" + // shard 80, a page index: 50 bytes, 1 record, last key not known
	"90" + "03" + digest.Sum([]byte(goldenInline)).String() + "0000000000000004" + "00000004" + "20" + rep("bb", 32) + "74696e79" // shard 90, inline: 4 records, last key bb…, "tiny"

// goldenTableV3 is goldenTableV3Value's canonical encoding.
var goldenTableV3 = "43524e54" + "03" + // magic "CRNT", version 3
	"000102030405060708090a0b0c0d0e0f" + // nonce
	"04" + "0003" + // family fixed32, 3 entries
	"01" + "01" + rep("11", 32) + "0000000000000064" + "00000002" + // shard 01, a shard object: 100 bytes, 2 records
	"80" + "02" + rep("22", 32) + "0000000000000032" + "00000001" + // shard 80, a page index: 50 bytes, 1 record
	"90" + "03" + digest.Sum([]byte(goldenInline)).String() + "0000000000000004" + "00000004" + "74696e79" // shard 90, inline: "tiny", 4 records

// goldenRootValue is the root of the golden bytes.
func goldenRootValue() *roots.Root {
	return &roots.Root{
		Nonce:    roots.Nonce{0xf0, 0xf1, 0xf2, 0xf3, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xfc, 0xfd, 0xfe, 0xff},
		Parent:   fill(0x33),
		Sequence: 7,
		Families: []roots.FamilyRef{
			{Family: shardstest.Fixed32, Table: shards.Ref{Hash: fill(0x44), Size: 233, Count: 3}, Shards: 3, Records: 7},
			{Family: shards.System, Table: shards.Ref{Hash: fill(0x55), Size: 69, Count: 1}, Shards: 1, Records: 1},
		},
		Holds: []roots.Hold{
			{Owner: "op/1", Root: fill(0x66)},
			{Owner: "snap", Root: fill(0x77)},
		},
		Deltas: []roots.DeltaRef{
			{Ref: shards.Ref{Hash: fill(0x88), Size: 200, Count: 3}, Sequence: 7},
			{Ref: shards.Ref{Hash: fill(0x99), Size: 100, Count: 1}, Sequence: 5},
		},
	}
}

var goldenRoot = "43524e52" + "02" + // magic "CRNR", version 2
	"f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff" + // nonce
	rep("33", 32) + // parent
	"0000000000000007" + // sequence
	"02" + // 2 families
	"04" + rep("44", 32) + "00000000000000e9" + "0003" + "0000000000000007" + // fixed32
	"f0" + rep("55", 32) + "0000000000000045" + "0001" + "0000000000000001" + // system
	"00000002" + // 2 holds
	"0004" + "6f702f31" + rep("66", 32) + // "op/1"
	"0004" + "736e6170" + rep("77", 32) + // "snap"
	"02" + // 2 deltas, newest first
	rep("88", 32) + "00000000000000c8" + "00000003" + "0000000000000007" + // 200 bytes, 3 records, sequence 7
	rep("99", 32) + "0000000000000064" + "00000001" + "0000000000000005" // 100 bytes, 1 record, sequence 5

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTableGolden(t *testing.T) {
	want := unhex(t, goldenTable)
	tbl := goldenTableValue()
	b, ref, err := tbl.Encode(schema)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x\nwant    %x", b, want)
	}
	if got, want := ref, (shards.Ref{Hash: digest.Sum(want), Size: int64(len(want)), Count: 3}); got != want {
		t.Fatalf("ref = %+v, want %+v", got, want)
	}
	d, err := roots.DecodeTable(schema, want, ref.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if d.Nonce != tbl.Nonce || d.Family != tbl.Family || d.Format != roots.TableFormat || !slices.Equal(d.Entries, tbl.Entries) {
		t.Fatalf("decoded %+v, want %+v", d, tbl)
	}
	if got, want := d.Records(), uint64(7); got != want {
		t.Fatalf("Records = %d, want %d", got, want)
	}
	if r, ok := d.Lookup(0x80); !ok || r != tbl.Entries[1].Ref {
		t.Fatalf("Lookup(80) = %+v, %v", r, ok)
	}
	if _, ok := d.Lookup(0x02); ok {
		t.Fatal("Lookup(02) found an empty shard")
	}
}

func TestRootGolden(t *testing.T) {
	want := unhex(t, goldenRoot)
	r := goldenRootValue()
	b, ref, err := r.Encode(schema)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x\nwant    %x", b, want)
	}
	if got, want := ref, (shards.Ref{Hash: digest.Sum(want), Size: int64(len(want))}); got != want {
		t.Fatalf("ref = %+v, want %+v", got, want)
	}
	d, err := roots.DecodeRoot(schema, want, ref.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !rootsEqual(d, r) {
		t.Fatalf("decoded %+v, want %+v", d, r)
	}
	if fr, ok := d.Family(shards.System); !ok || fr != r.Families[1] {
		t.Fatalf("Family(system) = %+v, %v", fr, ok)
	}
	if _, ok := d.Family(shardstest.Fixed48); ok {
		t.Fatal("Family(commit) found a family the root omits")
	}
	if h, ok := d.Hold("snap"); !ok || h != fill(0x77) {
		t.Fatalf("Hold(snap) = %s, %v", h, ok)
	}
	if _, ok := d.Hold("op"); ok {
		t.Fatal("Hold(op) found a hold")
	}
}

// TestGoldenSizesMatch ties the golden root's table size to the golden
// table, so the two golden values describe one consistent state.
func TestGoldenSizesMatch(t *testing.T) {
	if got, want := goldenRootValue().Families[0].Table.Size, int64(len(unhex(t, goldenTable))); got != want {
		t.Fatalf("golden root names a table of %d bytes, golden table has %d", got, want)
	}
}

func rootsEqual(a, b *roots.Root) bool {
	if a.Nonce != b.Nonce || a.Parent != b.Parent || a.Sequence != b.Sequence ||
		len(a.Families) != len(b.Families) || len(a.Holds) != len(b.Holds) || len(a.Deltas) != len(b.Deltas) {
		return false
	}
	for i := range a.Deltas {
		if a.Deltas[i] != b.Deltas[i] {
			return false
		}
	}
	for i := range a.Families {
		if a.Families[i] != b.Families[i] {
			return false
		}
	}
	for i := range a.Holds {
		if a.Holds[i] != b.Holds[i] {
			return false
		}
	}
	return true
}

func tablesEqual(a, b *roots.Table) bool {
	if a.Nonce != b.Nonce || a.Family != b.Family || len(a.Entries) != len(b.Entries) {
		return false
	}
	for i := range a.Entries {
		if a.Entries[i] != b.Entries[i] {
			return false
		}
	}
	return true
}

// randomTable returns a valid table with 1..256 entries.
func randomTable(r *rand.Rand) *roots.Table {
	fams := schema.Families()
	t := &roots.Table{Family: fams[r.IntN(len(fams))]}
	for i := range t.Nonce {
		t.Nonce[i] = byte(r.Uint32())
	}
	for idx := 0; idx < shards.Shards; idx++ {
		if r.IntN(8) != 0 && !(idx == shards.Shards-1 && len(t.Entries) == 0) {
			continue
		}
		var h digest.Hash
		for i := range h {
			h[i] = byte(r.Uint32())
		}
		t.Entries = append(t.Entries, roots.Entry{Shard: uint8(idx), Index: r.IntN(2) == 0, Ref: shards.Ref{
			Hash: h, Size: 1 + r.Int64N(1<<40), Count: 1 + r.Uint32N(1<<31),
		}})
	}
	return t
}

// randomRoot returns a valid root.
func randomRoot(r *rand.Rand) *roots.Root {
	root := &roots.Root{Sequence: r.Uint64()}
	for i := range root.Nonce {
		root.Nonce[i] = byte(r.Uint32())
	}
	if r.IntN(4) != 0 {
		for i := range root.Parent {
			root.Parent[i] = byte(r.Uint32())
		}
	}
	for _, f := range schema.Families() {
		if r.IntN(3) != 0 {
			continue
		}
		n := uint16(1 + r.IntN(shards.Shards))
		var h digest.Hash
		for i := range h {
			h[i] = byte(r.Uint32())
		}
		root.Families = append(root.Families, roots.FamilyRef{
			Family: f, Table: shards.Ref{Hash: h, Size: 1 + r.Int64N(1<<30), Count: uint32(n)},
			Shards: n, Records: r.Uint64(),
		})
	}
	owners := []string{"a", "op/\u00e9t\u00e9", "snap/1", "snap/2", strings.Repeat("z", roots.MaxOwnerLen)}
	for _, o := range owners {
		if r.IntN(2) == 0 {
			continue
		}
		var h digest.Hash
		h[r.IntN(32)] = 1 + byte(r.IntN(255))
		root.Holds = append(root.Holds, roots.Hold{Owner: o, Root: h})
	}
	seq := root.Sequence
	for n := r.IntN(5); n > 0 && seq > 0; n-- {
		var h digest.Hash
		h[r.IntN(32)] = 1 + byte(r.IntN(255))
		root.Deltas = append(root.Deltas, roots.DeltaRef{
			Ref:      shards.Ref{Hash: h, Size: 1 + r.Int64N(1<<40), Count: 1 + r.Uint32N(1<<31)},
			Sequence: seq,
		})
		seq -= 1 + min(seq-1, r.Uint64N(3))
	}
	return root
}

// TestRoundTripAndCanonical encodes random valid tables and roots, decodes
// them, and checks the value survives and encode(decode(b)) == b.
func TestRoundTripAndCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	for i := 0; i < 300; i++ {
		tbl := randomTable(r)
		b, ref, err := tbl.Encode(schema)
		if err != nil {
			t.Fatalf("table %d: %v", i, err)
		}
		d, err := roots.DecodeTable(schema, b, ref.Hash)
		if err != nil {
			t.Fatalf("table %d: %v", i, err)
		}
		if !tablesEqual(d, tbl) {
			t.Fatalf("table %d: decoded %+v, want %+v", i, d, tbl)
		}
		again, ref2, err := d.Encode(schema)
		if err != nil || !bytes.Equal(again, b) || ref2 != ref {
			t.Fatalf("table %d: encode(decode(b)) differs (%v)", i, err)
		}

		root := randomRoot(r)
		b, ref, err = root.Encode(schema)
		if err != nil {
			t.Fatalf("root %d: %v", i, err)
		}
		dr, err := roots.DecodeRoot(schema, b, ref.Hash)
		if err != nil {
			t.Fatalf("root %d: %v", i, err)
		}
		if !rootsEqual(dr, root) {
			t.Fatalf("root %d: decoded %+v, want %+v", i, dr, root)
		}
		again, ref2, err = dr.Encode(schema)
		if err != nil || !bytes.Equal(again, b) || ref2 != ref {
			t.Fatalf("root %d: encode(decode(b)) differs (%v)", i, err)
		}
	}
}

func TestEmptyRootRoundTrips(t *testing.T) {
	b, ref, err := (&roots.Root{Sequence: 1}).Encode(schema)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(b), 4+1+16+32+8+1+4+1; got != want {
		t.Fatalf("empty root is %d bytes, want %d", got, want)
	}
	d, err := roots.DecodeRoot(schema, b, ref.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Parent.IsZero() || len(d.Families) != 0 || len(d.Holds) != 0 || len(d.Deltas) != 0 || d.Sequence != 1 {
		t.Fatalf("decoded %+v", d)
	}
}

// rawTable writes a table without any checks.
func rawTable(magic string, version, family byte, n uint16, entries []roots.Entry) []byte {
	b := []byte(magic)
	b = append(b, version)
	b = append(b, goldenNonce[:]...)
	b = append(b, family)
	b = binary.BigEndian.AppendUint16(b, n)
	for _, e := range entries {
		b = append(b, e.Shard)
		if version != 1 {
			kind := byte(1)
			if e.Index {
				kind = 2
			}
			if e.Inline != "" {
				kind += 2
			}
			b = append(b, kind)
		}
		b = append(b, e.Ref.Hash[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(e.Ref.Size))
		b = binary.BigEndian.AppendUint32(b, e.Ref.Count)
		if version >= 4 {
			b = binary.AppendUvarint(b, uint64(len(e.Last)))
			b = append(b, e.Last...)
		}
		b = append(b, e.Inline...)
	}
	return b
}

// kindAt sets the kind byte of the first entry of a raw table.
func kindAt(b []byte, kind byte) []byte {
	b[4+1+16+1+2+1] = kind
	return b
}

func inlineEntry(idx uint8, b string) roots.Entry {
	return roots.Entry{Shard: idx, Ref: shards.Ref{Hash: digest.Sum([]byte(b)), Size: int64(len(b)), Count: 1}, Inline: b}
}

func entry(idx uint8, size int64, count uint32) roots.Entry {
	return roots.Entry{Shard: idx, Ref: shards.Ref{Hash: fill(idx), Size: size, Count: count}}
}

func TestRawTableMatchesGolden(t *testing.T) {
	tbl := goldenTableValue()
	if got := rawTable("CRNT", 4, byte(tbl.Family), 3, tbl.Entries); !bytes.Equal(got, unhex(t, goldenTable)) {
		t.Fatalf("rawTable = %x", got)
	}
	v3 := goldenTableV3Value()
	if got := rawTable("CRNT", 3, byte(v3.Family), 3, v3.Entries); !bytes.Equal(got, unhex(t, goldenTableV3)) {
		t.Fatalf("rawTable(3) = %x", got)
	}
}

func TestDecodeTableRejects(t *testing.T) {
	two := []roots.Entry{entry(1, 10, 1), entry(2, 10, 1)}
	fam := byte(shardstest.Fixed32)
	cases := []struct {
		name string
		b    []byte
	}{
		{"empty input", nil},
		{"truncated header", []byte("CRNT\x03")},
		{"bad magic", rawTable("CRNX", 3, fam, 2, two)},
		{"root magic", rawTable("CRNR", 3, fam, 2, two)},
		{"version 0", rawTable("CRNT", 0, fam, 2, two)},
		{"version 1 (before paged shards)", rawTable("CRNT", 1, fam, 2, two)},
		{"version 2 (before inline entries)", rawTable("CRNT", 2, fam, 2, two)},
		{"version 5", rawTable("CRNT", 5, fam, 2, two)},
		{"unknown family", rawTable("CRNT", 3, 0x99, 2, two)},
		{"family zero", rawTable("CRNT", 3, 0x00, 2, two)},
		{"no entries", rawTable("CRNT", 3, fam, 0, nil)},
		{"count above bytes", rawTable("CRNT", 3, fam, 3, two)},
		{"count below bytes", rawTable("CRNT", 3, fam, 1, two)},
		{"count above 256", rawTable("CRNT", 3, fam, 257, nil)},
		{"trailing byte", append(rawTable("CRNT", 3, fam, 2, two), 0)},
		{"truncated entry", rawTable("CRNT", 3, fam, 2, two)[:4+1+16+1+2+46+45]},
		{"kind 0", kindAt(rawTable("CRNT", 3, fam, 2, two), 0)},
		{"kind 5", kindAt(rawTable("CRNT", 3, fam, 2, two), 5)},
		{"inline bytes under another hash", rawTable("CRNT", 3, fam, 1, []roots.Entry{{Shard: 1, Ref: shards.Ref{Hash: fill(1), Size: 4, Count: 1}, Inline: "tiny"}})},
		{"inline bytes truncated", rawTable("CRNT", 3, fam, 1, []roots.Entry{inlineEntry(1, "tiny")})[:4+1+16+1+2+46+3]},
		{"inline above the bound", rawTable("CRNT", 3, fam, 1, []roots.Entry{inlineEntry(1, strings.Repeat("x", roots.MaxInline+1))})},
		{"unsorted shards", rawTable("CRNT", 3, fam, 2, []roots.Entry{entry(2, 10, 1), entry(1, 10, 1)})},
		{"duplicate shards", rawTable("CRNT", 3, fam, 2, []roots.Entry{entry(1, 10, 1), entry(1, 10, 1)})},
		{"zero record count", rawTable("CRNT", 3, fam, 2, []roots.Entry{entry(1, 10, 1), entry(2, 10, 0)})},
		{"zero size", rawTable("CRNT", 3, fam, 1, []roots.Entry{entry(1, 0, 1)})},
		{"negative size", rawTable("CRNT", 3, fam, 1, []roots.Entry{entry(1, -1, 1)})},
		{"size above 1 TiB", rawTable("CRNT", 3, fam, 1, []roots.Entry{entry(1, 1<<40+1, 1)})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, err := roots.DecodeTable(schema, c.b, digest.Sum(c.b))
			if !errors.Is(err, roots.ErrMalformed) || tbl != nil {
				t.Fatalf("DecodeTable = %+v, %v; want ErrMalformed", tbl, err)
			}
			if errors.Is(err, bucket.ErrIntegrity) {
				t.Fatalf("bytes with the right hash reported as an integrity failure: %v", err)
			}
		})
	}
	// The largest accepted size and a full table decode.
	full := make([]roots.Entry, shards.Shards)
	for i := range full {
		full[i] = entry(uint8(i), 1<<40, 1)
	}
	b := rawTable("CRNT", 3, fam, shards.Shards, full)
	if _, err := roots.DecodeTable(schema, b, digest.Sum(b)); err != nil {
		t.Fatalf("full table: %v", err)
	}
}

func TestDecodeVerifiesHashFirst(t *testing.T) {
	table := unhex(t, goldenTable)
	root := unhex(t, goldenRoot)
	for _, c := range []struct {
		name string
		err  error
	}{
		{"table under another hash", func() error { _, err := roots.DecodeTable(schema, table, fill(0x01)); return err }()},
		{"root under another hash", func() error { _, err := roots.DecodeRoot(schema, root, fill(0x01)); return err }()},
		{"table under a root's hash", func() error { _, err := roots.DecodeTable(schema, table, digest.Sum(root)); return err }()},
		{"flipped table byte", func() error {
			b := bytes.Clone(table)
			b[len(b)-1] ^= 1
			_, err := roots.DecodeTable(schema, b, digest.Sum(table))
			return err
		}()},
		{"flipped root byte", func() error {
			b := bytes.Clone(root)
			b[30] ^= 0x80
			_, err := roots.DecodeRoot(schema, b, digest.Sum(root))
			return err
		}()},
		// Garbage under the wrong hash is an integrity failure, not a
		// format one: the hash is checked before anything else.
		{"garbage table", func() error { _, err := roots.DecodeTable(schema, []byte("junk"), fill(0x01)); return err }()},
		{"garbage root", func() error { _, err := roots.DecodeRoot(schema, []byte("junk"), fill(0x01)); return err }()},
	} {
		if !errors.Is(c.err, bucket.ErrIntegrity) || !errors.Is(c.err, shards.ErrIntegrity) || errors.Is(c.err, roots.ErrMalformed) {
			t.Errorf("%s: error %v, want only ErrIntegrity", c.name, c.err)
		}
	}
}

// rootBuilder writes a root without any checks.
type rootBuilder struct {
	magic    string
	version  byte
	families []roots.FamilyRef
	nf       int // family count written; -1: len(families)
	holds    []roots.Hold
	nh       int64 // hold count written; -1: len(holds)
	deltas   []roots.DeltaRef
	nd       int    // delta count written; -1: len(deltas)
	seq      uint64 // 0: the golden root's
	trailing []byte
}

func newRootBuilder() *rootBuilder {
	r := goldenRootValue()
	return &rootBuilder{magic: "CRNR", version: 2, families: r.Families, nf: -1, holds: r.Holds, nh: -1, deltas: r.Deltas, nd: -1}
}

func (rb *rootBuilder) bytes() []byte {
	g := goldenRootValue()
	b := []byte(rb.magic)
	b = append(b, rb.version)
	b = append(b, g.Nonce[:]...)
	b = append(b, g.Parent[:]...)
	seq := g.Sequence
	if rb.seq != 0 {
		seq = rb.seq
	}
	b = binary.BigEndian.AppendUint64(b, seq)
	nf := rb.nf
	if nf < 0 {
		nf = len(rb.families)
	}
	b = append(b, byte(nf))
	for _, f := range rb.families {
		b = append(b, byte(f.Family))
		b = append(b, f.Table.Hash[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(f.Table.Size))
		b = binary.BigEndian.AppendUint16(b, f.Shards)
		b = binary.BigEndian.AppendUint64(b, f.Records)
	}
	nh := rb.nh
	if nh < 0 {
		nh = int64(len(rb.holds))
	}
	b = binary.BigEndian.AppendUint32(b, uint32(nh))
	for _, h := range rb.holds {
		b = binary.BigEndian.AppendUint16(b, uint16(len(h.Owner)))
		b = append(b, h.Owner...)
		b = append(b, h.Root[:]...)
	}
	if rb.version >= 2 {
		nd := rb.nd
		if nd < 0 {
			nd = len(rb.deltas)
		}
		b = append(b, byte(nd))
		for _, d := range rb.deltas {
			b = append(b, d.Ref.Hash[:]...)
			b = binary.BigEndian.AppendUint64(b, uint64(d.Ref.Size))
			b = binary.BigEndian.AppendUint32(b, d.Ref.Count)
			b = binary.BigEndian.AppendUint64(b, d.Sequence)
		}
	}
	return append(b, rb.trailing...)
}

func TestRootBuilderMatchesGolden(t *testing.T) {
	if got := newRootBuilder().bytes(); !bytes.Equal(got, unhex(t, goldenRoot)) {
		t.Fatalf("rootBuilder = %x", got)
	}
}

func delta(seq uint64, b byte) roots.DeltaRef {
	return roots.DeltaRef{Ref: shards.Ref{Hash: fill(b), Size: 10, Count: 1}, Sequence: seq}
}

// TestRootFormat1FailsClosed: a root of the format before delta segments
// is refused with an error that says so.
func TestRootFormat1FailsClosed(t *testing.T) {
	rb := newRootBuilder()
	rb.version = 1
	b := rb.bytes()
	_, err := roots.DecodeRoot(schema, b, digest.Sum(b))
	if !errors.Is(err, roots.ErrMalformed) || !strings.Contains(err.Error(), "root format 1") {
		t.Fatalf("DecodeRoot of format 1: %v; want ErrMalformed naming format 1", err)
	}
}

func TestDecodeRootRejects(t *testing.T) {
	fr := func(f shards.Family, size int64, n uint16) roots.FamilyRef {
		return roots.FamilyRef{Family: f, Table: shards.Ref{Hash: fill(0x44), Size: size}, Shards: n, Records: 1}
	}
	hold := func(owner string, root digest.Hash) roots.Hold { return roots.Hold{Owner: owner, Root: root} }
	cases := []struct {
		name string
		edit func(*rootBuilder)
		b    []byte
	}{
		{name: "empty input", b: []byte{}},
		{name: "truncated header", b: unhex(t, goldenRoot)[:40]},
		{name: "bad magic", edit: func(r *rootBuilder) { r.magic = "CRNS" }},
		{name: "table magic", edit: func(r *rootBuilder) { r.magic = "CRNT" }},
		{name: "version 0", edit: func(r *rootBuilder) { r.version = 0 }},
		{name: "version 1", edit: func(r *rootBuilder) { r.version = 1 }},
		{name: "version 3", edit: func(r *rootBuilder) { r.version = 3 }},
		{name: "unknown family", edit: func(r *rootBuilder) { r.families = []roots.FamilyRef{fr(0x99, 10, 1)} }},
		{name: "families unsorted", edit: func(r *rootBuilder) {
			r.families = []roots.FamilyRef{fr(shards.System, 10, 1), fr(shardstest.Fixed48, 10, 1)}
		}},
		{name: "duplicate family", edit: func(r *rootBuilder) {
			r.families = []roots.FamilyRef{fr(shardstest.Fixed48, 10, 1), fr(shardstest.Fixed48, 10, 1)}
		}},
		{name: "no shards", edit: func(r *rootBuilder) { r.families = []roots.FamilyRef{fr(shardstest.Fixed48, 10, 0)} }},
		{name: "257 shards", edit: func(r *rootBuilder) { r.families = []roots.FamilyRef{fr(shardstest.Fixed48, 10, 257)} }},
		{name: "zero table size", edit: func(r *rootBuilder) { r.families = []roots.FamilyRef{fr(shardstest.Fixed48, 0, 1)} }},
		{name: "table size above 1 GiB", edit: func(r *rootBuilder) { r.families = []roots.FamilyRef{fr(shardstest.Fixed48, 1<<30+1, 1)} }},
		{name: "family count above bytes", edit: func(r *rootBuilder) { r.nf = 3 }},
		{name: "family count below bytes", edit: func(r *rootBuilder) { r.nf = 1 }},
		{name: "hold count above bytes", edit: func(r *rootBuilder) { r.nh = 3 }},
		{name: "hold count below bytes", edit: func(r *rootBuilder) { r.nh = 1 }},
		{name: "huge hold count", edit: func(r *rootBuilder) { r.nh = 1<<32 - 1 }},
		{name: "zero hold root", edit: func(r *rootBuilder) { r.holds = []roots.Hold{hold("snap", digest.Hash{})} }},
		{name: "empty owner", edit: func(r *rootBuilder) { r.holds = []roots.Hold{hold("", fill(1))} }},
		{name: "owner not UTF-8", edit: func(r *rootBuilder) { r.holds = []roots.Hold{hold("snap\xff", fill(1))} }},
		{name: "owner too long", edit: func(r *rootBuilder) {
			r.holds = []roots.Hold{hold(strings.Repeat("o", roots.MaxOwnerLen+1), fill(1))}
		}},
		{name: "owners unsorted", edit: func(r *rootBuilder) { r.holds = []roots.Hold{hold("b", fill(1)), hold("a", fill(1))} }},
		{name: "duplicate owner", edit: func(r *rootBuilder) { r.holds = []roots.Hold{hold("a", fill(1)), hold("a", fill(2))} }},
		{name: "trailing byte", edit: func(r *rootBuilder) { r.trailing = []byte{0} }},
		{name: "delta count above bytes", edit: func(r *rootBuilder) { r.nd = 3 }},
		{name: "delta count below bytes", edit: func(r *rootBuilder) { r.nd = 1 }},
		{name: "delta count above MaxDeltas", edit: func(r *rootBuilder) {
			r.deltas = make([]roots.DeltaRef, roots.MaxDeltas+1)
			for i := range r.deltas {
				r.deltas[i] = delta(7, 0x10+byte(i))
			}
		}},
		{name: "zero delta hash", edit: func(r *rootBuilder) { r.deltas = []roots.DeltaRef{delta(7, 0)} }},
		{name: "zero delta size", edit: func(r *rootBuilder) { r.deltas[0].Ref.Size = 0 }},
		{name: "delta size above 1 TiB", edit: func(r *rootBuilder) { r.deltas[0].Ref.Size = 1<<40 + 1 }},
		{name: "zero delta count", edit: func(r *rootBuilder) { r.deltas[0].Ref.Count = 0 }},
		{name: "delta after the root", edit: func(r *rootBuilder) { r.deltas = []roots.DeltaRef{delta(8, 1)} }},
		{name: "delta of sequence 0", edit: func(r *rootBuilder) { r.deltas = []roots.DeltaRef{delta(0, 1)} }},
		{name: "deltas ascending", edit: func(r *rootBuilder) { r.deltas = []roots.DeltaRef{delta(5, 1), delta(7, 2)} }},
		{name: "deltas of one sequence", edit: func(r *rootBuilder) { r.deltas = []roots.DeltaRef{delta(7, 1), delta(7, 2)} }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.b
			if c.edit != nil {
				rb := newRootBuilder()
				c.edit(rb)
				b = rb.bytes()
			}
			r, err := roots.DecodeRoot(schema, b, digest.Sum(b))
			if !errors.Is(err, roots.ErrMalformed) || r != nil {
				t.Fatalf("DecodeRoot = %+v, %v; want ErrMalformed", r, err)
			}
			if errors.Is(err, bucket.ErrIntegrity) {
				t.Fatalf("bytes with the right hash reported as an integrity failure: %v", err)
			}
		})
	}
	// The limits themselves decode.
	rb := newRootBuilder()
	rb.deltas = nil
	rb.seq = roots.MaxDeltas
	for i := range roots.MaxDeltas {
		rb.deltas = append(rb.deltas, roots.DeltaRef{Ref: shards.Ref{Hash: fill(1), Size: 1 << 40, Count: 1<<32 - 1}, Sequence: uint64(roots.MaxDeltas - i)})
	}
	rb.families = []roots.FamilyRef{fr(shardstest.Fixed48, 1<<30, 256)}
	rb.holds = []roots.Hold{hold(strings.Repeat("o", roots.MaxOwnerLen), fill(1))}
	if b := rb.bytes(); func() error { _, err := roots.DecodeRoot(schema, b, digest.Sum(b)); return err }() != nil {
		t.Fatal("a root at the limits does not decode")
	}
}

func TestEncodeRefuses(t *testing.T) {
	ok := goldenTableValue()
	tables := map[string]*roots.Table{
		"no entries":       {Family: ok.Family},
		"unknown family":   {Family: 0x99, Entries: ok.Entries},
		"unsorted shards":  {Family: ok.Family, Entries: []roots.Entry{ok.Entries[1], ok.Entries[0]}},
		"duplicate shards": {Family: ok.Family, Entries: []roots.Entry{ok.Entries[0], ok.Entries[0]}},
		"empty shard":      {Family: ok.Family, Entries: []roots.Entry{entry(1, 10, 0)}},
		"zero size":        {Family: ok.Family, Entries: []roots.Entry{entry(1, 0, 1)}},
		"257 entries":      {Family: ok.Family, Entries: make([]roots.Entry, 257)},
	}
	for name, tbl := range tables {
		if b, _, err := tbl.Encode(schema); err == nil {
			t.Errorf("table %s: encoded %x", name, b)
		}
	}
	good := goldenRootValue()
	rootsBad := map[string]func(*roots.Root){
		"unknown family":    func(r *roots.Root) { r.Families[0].Family = 0x99 },
		"unsorted families": func(r *roots.Root) { r.Families[0], r.Families[1] = r.Families[1], r.Families[0] },
		"no shards":         func(r *roots.Root) { r.Families[0].Shards = 0 },
		"zero table size":   func(r *roots.Root) { r.Families[0].Table.Size = 0 },
		"unsorted holds":    func(r *roots.Root) { r.Holds[0], r.Holds[1] = r.Holds[1], r.Holds[0] },
		"duplicate holds":   func(r *roots.Root) { r.Holds[1].Owner = r.Holds[0].Owner },
		"zero hold root":    func(r *roots.Root) { r.Holds[0].Root = digest.Hash{} },
		"empty owner":       func(r *roots.Root) { r.Holds[0].Owner = "" },
		"bad UTF-8 owner":   func(r *roots.Root) { r.Holds[0].Owner = "\xff" },
		"deltas ascending":  func(r *roots.Root) { r.Deltas[0], r.Deltas[1] = r.Deltas[1], r.Deltas[0] },
		"zero delta":        func(r *roots.Root) { r.Deltas[0].Ref.Hash = digest.Hash{} },
		"empty delta":       func(r *roots.Root) { r.Deltas[0].Ref.Count = 0 },
		"delta too new":     func(r *roots.Root) { r.Deltas[0].Sequence = 8 },
		"too many deltas":   func(r *roots.Root) { r.Deltas = make([]roots.DeltaRef, roots.MaxDeltas+1) },
	}
	for name, edit := range rootsBad {
		r := goldenRootValue()
		edit(r)
		if b, _, err := r.Encode(schema); err == nil {
			t.Errorf("root %s: encoded %x", name, b)
		}
	}
	if _, _, err := good.Encode(schema); err != nil {
		t.Fatal(err)
	}
	if err := roots.CheckOwner(strings.Repeat("o", roots.MaxOwnerLen)); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeChecksTheSchema: a table or root is decoded against the schema
// at hand; a family tag that schema does not hold fails closed, even one
// another schema holds.
func TestDecodeChecksTheSchema(t *testing.T) {
	engineOnly, err := shards.NewSchema()
	if err != nil {
		t.Fatal(err)
	}
	table, root := unhex(t, goldenTable), unhex(t, goldenRoot)
	if _, err := roots.DecodeTable(engineOnly, table, digest.Sum(table)); !errors.Is(err, roots.ErrMalformed) {
		t.Fatalf("table of fixed32 under an engine-only schema: %v, want ErrMalformed", err)
	}
	if _, err := roots.DecodeRoot(engineOnly, root, digest.Sum(root)); !errors.Is(err, roots.ErrMalformed) {
		t.Fatalf("root naming fixed32 under an engine-only schema: %v, want ErrMalformed", err)
	}
	if _, _, err := goldenTableValue().Encode(engineOnly); err == nil {
		t.Fatal("encoded a table of a family the schema does not hold")
	}
	if _, _, err := goldenRootValue().Encode(engineOnly); err == nil {
		t.Fatal("encoded a root naming a family the schema does not hold")
	}
	// The engine's own families are in every schema.
	sys := &roots.Table{Family: shards.System, Entries: []roots.Entry{{Shard: 1, Ref: shards.Ref{Hash: fill(1), Size: 10, Count: 1}}}}
	b, ref, err := sys.Encode(engineOnly)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roots.DecodeTable(engineOnly, b, ref.Hash); err != nil {
		t.Fatalf("system table under an engine-only schema: %v", err)
	}
}

// TestTableGoldenV3: a table of format 3, as the shards of older value
// formats keep writing, decodes with its format and no last keys, and
// encodes back to the same bytes; an entry with a last key is refused
// in format 3 rather than dropped, since the table in memory would then
// differ from the one its bytes decode to.
func TestTableGoldenV3(t *testing.T) {
	want := unhex(t, goldenTableV3)
	d, err := roots.DecodeTable(schema, want, digest.Sum(want))
	if err != nil {
		t.Fatal(err)
	}
	if d.Format != roots.TableFormatV3 || !slices.Equal(d.Entries, goldenTableV3Value().Entries) {
		t.Fatalf("decoded %+v, want %+v", d, goldenTableV3Value())
	}
	if b, _, err := d.Encode(schema); err != nil || !bytes.Equal(b, want) {
		t.Fatalf("encoded %x, %v\nwant    %x", b, err, want)
	}
	withLast := goldenTableValue()
	withLast.Format = roots.TableFormatV3
	if _, _, err := withLast.Encode(schema); !errors.Is(err, roots.ErrMalformed) {
		t.Fatalf("format 3 with last keys: %v, want ErrMalformed", err)
	}
}

// TestTableLastKeys: a last key longer than MaxLastKey is refused by the
// encoder and the decoder; a missing one is read as not known.
func TestTableLastKeys(t *testing.T) {
	tbl := goldenTableValue()
	tbl.Entries[0].Last = strings.Repeat("k", roots.MaxLastKey+1)
	if _, _, err := tbl.Encode(schema); !errors.Is(err, roots.ErrMalformed) {
		t.Fatalf("a last key of %d bytes: %v, want ErrMalformed", roots.MaxLastKey+1, err)
	}
	// The golden bytes with shard 01's last key 65 bytes long.
	long := strings.Replace(goldenTable, "20"+rep("aa", 32), "41"+rep("aa", 65), 1)
	b := unhex(t, long)
	if _, err := roots.DecodeTable(schema, b, digest.Sum(b)); !errors.Is(err, roots.ErrMalformed) {
		t.Fatalf("decoding a last key of 65 bytes: %v, want ErrMalformed", err)
	}
}

// TestEntryAbove: a key, or every key under a prefix, above an entry's
// last key; a last key of MaxLastKey bytes may be cut from a longer key,
// so only the bytes it keeps tell.
func TestEntryAbove(t *testing.T) {
	cut := strings.Repeat("m", roots.MaxLastKey)
	for _, c := range []struct {
		last, p string
		want    bool
	}{
		{"", "zzz", false},      // not known
		{"key5", "key6", true},  // a greater key
		{"key5", "key5", false}, // the last key itself
		{"key5", "key4", false}, // a smaller one
		{"key5", "key50", true}, // longer, so greater
		{"key5", "key", false},  // a prefix of the last key: it is there
		{"key5", "key6x", true}, // every key under key6x
		{cut, cut, false},       // the cut itself
		{cut, cut + "a", false}, // may be the longer last key, or below it
		{cut, "n", true},        // greater in the bytes kept
		{cut, cut[:10], false},  // a prefix of the kept bytes
		{cut, cut[:10] + "n", true},
		{cut, cut[:10] + "a", false},
	} {
		e := roots.Entry{Last: c.last}
		if got := e.Above([]byte(c.p)); got != c.want {
			t.Errorf("Last %q: Above(%q) = %v, want %v", c.last, c.p, got, c.want)
		}
	}
	if got := roots.LastKey([]byte(cut + "tail")); got != cut {
		t.Errorf("LastKey of a long key = %q, want its first %d bytes", got, roots.MaxLastKey)
	}
	for _, c := range []struct {
		last, key string
		want      bool
	}{{"", "any", true}, {"key5", "key5", true}, {"key5", "key6", false}, {cut, cut + "tail", true}, {cut, cut[:10], false}} {
		if got := (roots.Entry{Last: c.last}).Ends([]byte(c.key)); got != c.want {
			t.Errorf("Last %q: Ends(%q) = %v, want %v", c.last, c.key, got, c.want)
		}
	}
}
