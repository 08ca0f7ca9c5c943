package shards_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// goldenDelta is the delta of commit 7 with salt 00…0f: fixed16 key
// 00…0f put "x", system "mo" deleted, system "schema" put "v8".
const goldenDelta = "43524e44" + "01" + "000102030405060708090a0b0c0d0e0f" + "0000000000000007" + "00000003" +
	"01" + "01" + "00000010" + "000102030405060708090a0b0c0d0e0f" + "00000001" + "78" +
	"f0" + "02" + "00000002" + "6d6f" + "00000000" +
	"f0" + "01" + "00000006" + "736368656d61" + "00000002" + "7638"

var goldenSalt = shards.Salt{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

func goldenDeltaRecords() []shards.DeltaRecord {
	return []shards.DeltaRecord{ // deliberately out of order
		{Family: shards.System, Mutation: shards.Mutation{Key: []byte("schema"), Value: []byte("v8")}},
		{Family: shards.System, Mutation: shards.Mutation{Key: []byte("mo"), Delete: true}},
		{Family: shardstest.Fixed16, Mutation: shards.Mutation{Key: goldenSalt[:], Value: []byte("x")}},
	}
}

func TestDeltaGolden(t *testing.T) {
	want, err := hex.DecodeString(goldenDelta)
	if err != nil {
		t.Fatal(err)
	}
	d, err := shards.NewDelta(schema, goldenSalt, 7, goldenDeltaRecords())
	if err != nil {
		t.Fatal(err)
	}
	b, ref, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x\nwant    %x", b, want)
	}
	if ref.Hash != digest.Sum(want) || ref.Size != int64(len(want)) || ref.Count != 3 || d.EncodedSize() != int64(len(want)) {
		t.Fatalf("ref = %+v, EncodedSize %d", ref, d.EncodedSize())
	}
	// DeltaSize predicts the size without encoding, a tombstone's value
	// left out as NewDelta leaves it out.
	recs := goldenDeltaRecords()
	recs[1].Value = []byte("dropped")
	if n := shards.DeltaSize(func(yield func(shards.Mutation) bool) {
		for _, r := range recs {
			if !yield(r.Mutation) {
				return
			}
		}
	}); n != int64(len(want)) {
		t.Fatalf("DeltaSize = %d, the encoding has %d bytes", n, len(want))
	}
	back, err := shards.DecodeDelta(schema, want, ref.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if back.Sequence() != 7 || back.Salt() != goldenSalt || back.Len() != 3 {
		t.Fatalf("decoded sequence %d, salt %x, %d records", back.Sequence(), back.Salt(), back.Len())
	}
	if v, del, ok := back.Get(shards.System, []byte("schema")); !ok || del || string(v) != "v8" {
		t.Fatalf("Get(schema) = %q, %v, %v", v, del, ok)
	}
	if _, del, ok := back.Get(shards.System, []byte("mo")); !ok || !del {
		t.Fatalf("Get(mo) = %v, %v; want a tombstone", del, ok)
	}
	if _, _, ok := back.Get(shards.System, []byte("zz")); ok {
		t.Fatal("Get of an absent key found a change")
	}
	if _, _, ok := back.Get(shardstest.Fixed32, goldenSalt[:]); ok {
		t.Fatal("Get in another family found a change")
	}
	if got := len(back.Family(shards.System)); got != 2 {
		t.Fatalf("Family(system) has %d records, want 2", got)
	}
	if got := len(back.Family(shardstest.Fixed48)); got != 0 {
		t.Fatalf("Family(fixed48) has %d records, want 0", got)
	}
}

func TestDeltaScan(t *testing.T) {
	d, err := shards.NewDelta(schema, goldenSalt, 1, []shards.DeltaRecord{
		{Family: shards.System, Mutation: shards.Mutation{Key: []byte("a1"), Value: []byte("1")}},
		{Family: shards.System, Mutation: shards.Mutation{Key: []byte("a2"), Delete: true}},
		{Family: shards.System, Mutation: shards.Mutation{Key: []byte("a3"), Value: []byte("3")}},
		{Family: shards.System, Mutation: shards.Mutation{Key: []byte("b1"), Value: []byte("4")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := func(prefix, after string) []string {
		var out []string
		var a []byte
		if after != "" {
			a = []byte(after)
		}
		for r := range d.Scan(shards.System, []byte(prefix), a) {
			out = append(out, string(r.Key))
		}
		return out
	}
	for _, c := range []struct {
		prefix, after string
		want          []string
	}{
		{"", "", []string{"a1", "a2", "a3", "b1"}},
		{"a", "", []string{"a1", "a2", "a3"}},
		{"a", "a1", []string{"a2", "a3"}},
		{"a", "a15", []string{"a2", "a3"}},
		{"a", "0", []string{"a1", "a2", "a3"}},
		{"b", "a9", []string{"b1"}},
		{"c", "", nil},
	} {
		if got := keys(c.prefix, c.after); !slices.Equal(got, c.want) {
			t.Errorf("Scan(%q, after %q) = %q, want %q", c.prefix, c.after, got, c.want)
		}
	}
}

func TestNewDeltaRejects(t *testing.T) {
	put := func(f shards.Family, k string) shards.DeltaRecord {
		return shards.DeltaRecord{Family: f, Mutation: shards.Mutation{Key: []byte(k), Value: []byte("v")}}
	}
	for name, c := range map[string]struct {
		recs []shards.DeltaRecord
		want error
	}{
		"empty":          {nil, shards.ErrEmptyObject},
		"duplicate key":  {[]shards.DeltaRecord{put(shards.System, "a"), put(shards.System, "a")}, shards.ErrUnsorted},
		"unknown family": {[]shards.DeltaRecord{put(0x02, "a")}, shards.ErrUnknownFamily},
		"malformed key":  {[]shards.DeltaRecord{put(shardstest.Fixed16, "short")}, shards.ErrMalformedKey},
	} {
		if _, err := shards.NewDelta(schema, goldenSalt, 1, c.recs); !errors.Is(err, c.want) {
			t.Errorf("%s: NewDelta error %v, want %v", name, err, c.want)
		}
	}
}

func TestDecodeDeltaRejects(t *testing.T) {
	golden, _ := hex.DecodeString(goldenDelta)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(golden)) }
	for name, b := range map[string][]byte{
		"bad magic":      edit(func(b []byte) []byte { b[0] = 'X'; return b }),
		"bad version":    edit(func(b []byte) []byte { b[4] = 2; return b }),
		"zero count":     edit(func(b []byte) []byte { b[32] = 0; return b }),
		"count too high": edit(func(b []byte) []byte { b[32] = 4; return b }),
		"trailing byte":  append(bytes.Clone(golden), 0),
		"truncated":      golden[:len(golden)-1],
		"bad kind":       edit(func(b []byte) []byte { b[34] = 3; return b }),
		"unknown family": edit(func(b []byte) []byte { b[33] = 0x02; return b }),
		"unsorted":       edit(func(b []byte) []byte { b[66], b[67] = 's', 'd'; return b }), // "mo" -> "sd", after "schema"
		"tombstone value": edit(func(b []byte) []byte {
			// make the put of "schema" a tombstone that keeps its value
			b[len(b)-2-4-6-4-1] = 2
			return b
		}),
	} {
		d, err := shards.DecodeDelta(schema, b, digest.Sum(b))
		if err == nil || !errors.Is(err, shards.ErrMalformedObject) {
			t.Errorf("%s: DecodeDelta = %v, %v; want ErrMalformedObject", name, d, err)
		}
	}
	other := digest.Sum([]byte("other"))
	if _, err := shards.DecodeDelta(schema, golden, other); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("under another hash: %v", err)
	}
}

// FuzzDecodeDelta: no input panics the decoder; anything that decodes is
// canonical (encode(decode(b)) == b) and every record is found by Get.
func FuzzDecodeDelta(f *testing.F) {
	golden, _ := hex.DecodeString(goldenDelta)
	f.Add(golden)
	f.Add([]byte{})
	f.Add([]byte("CRND\x01"))
	f.Add(shards.Compress(golden))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := shards.DecodeDelta(schema, b, digest.Sum(b))
		if err != nil {
			if d != nil || !errors.Is(err, shards.ErrMalformedObject) {
				t.Fatalf("DecodeDelta = %v, %v", d, err)
			}
			return
		}
		b, err = shards.Expand(b, shards.MaxExpandedBytes) // a compressed frame is the writer's; what is within is canonical
		if err != nil {
			t.Fatal(err)
		}
		again, ref, err := d.Encode()
		if err != nil || !bytes.Equal(again, b) || ref.Hash != digest.Sum(b) || ref.Count != uint32(d.Len()) {
			t.Fatalf("encode(decode(b)) differs: %v", err)
		}
		recs := make([]shards.DeltaRecord, d.Len())
		for i := range recs {
			recs[i] = d.At(i)
			v, del, ok := d.Get(recs[i].Family, recs[i].Key)
			if !ok || del != recs[i].Delete || !bytes.Equal(v, recs[i].Value) {
				t.Fatalf("Get of record %d failed", i)
			}
		}
		rebuilt, err := shards.NewDelta(schema, d.Salt(), d.Sequence(), recs)
		if err != nil {
			t.Fatal(err)
		}
		if b2, _, _ := rebuilt.Encode(); !bytes.Equal(b2, b) {
			t.Fatal("NewDelta of the decoded records encodes differently")
		}
	})
}
