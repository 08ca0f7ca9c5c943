package shards_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// goldenObject is system shard 0x3a with salt 00…0f holding "mo" -> "" and
// "schema" -> "v8".
const goldenObject = "43524e53" + "01" + "f0" + "3a" + "000102030405060708090a0b0c0d0e0f" + "00000002" +
	"00000002" + "6d6f" + "00000000" +
	"00000006" + "736368656d61" + "00000002" + "7638"

func goldenBytes(t testing.TB) []byte {
	b, err := hex.DecodeString(goldenObject)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestObjectGolden(t *testing.T) {
	o, err := shards.NewObject(schema, shards.System, 0x3a, []shards.Record{
		{Key: []byte("mo")},
		{Key: []byte("schema"), Value: []byte("v8")},
	})
	if err != nil {
		t.Fatal(err)
	}
	o = o.Salted(shards.Salt{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15})
	b, ref, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := goldenBytes(t)
	if !bytes.Equal(b, want) {
		t.Fatalf("encoded %x\nwant    %x", b, want)
	}
	if ref.Hash != digest.Sum(want) || ref.Size != int64(len(want)) || ref.Count != 2 {
		t.Fatalf("ref = %+v", ref)
	}
	if got := o.EncodedSize(); got != int64(len(want)) {
		t.Fatalf("EncodedSize = %d, want %d", got, len(want))
	}
	d, err := shards.DecodeShard(schema, want, ref.Hash, shards.System, 0x3a)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := d.Get([]byte("schema")); !ok || string(v) != "v8" {
		t.Fatalf("Get(schema) = %q, %v", v, ok)
	}
	if d.Salt() != o.Salt() {
		t.Fatalf("decoded salt %x, want %x", d.Salt(), o.Salt())
	}
	if v, ok := d.Get([]byte("mo")); !ok || len(v) != 0 {
		t.Fatalf("Get(mo) = %q, %v", v, ok)
	}
	if _, ok := d.Get([]byte("n")); ok {
		t.Fatal("Get(n) found a record")
	}
}

// oneShardKeys returns n keys of family f that share one shard, sorted.
func oneShardKeys(t testing.TB, f shards.Family, n int) ([][]byte, uint8) {
	groups := map[uint8][][]byte{}
	for i := 0; ; i++ {
		k := sampleKey(t, f, i)
		idx := shardOf(t, f, k)
		groups[idx] = append(groups[idx], k)
		if len(groups[idx]) == n {
			slices.SortFunc(groups[idx], bytes.Compare)
			return groups[idx], idx
		}
		if i > 1_000_000 {
			t.Fatalf("%v: no shard reached %d keys", f, n)
		}
	}
}

func TestObjectRoundTripEveryFamily(t *testing.T) {
	for _, f := range schema.Families() {
		keys, idx := oneShardKeys(t, f, 3)
		var recs []shards.Record
		for i, k := range keys {
			recs = append(recs, shards.Record{Key: k, Value: bytes.Repeat([]byte{byte(i)}, i)})
		}
		o, err := shards.NewObject(schema, f, idx, recs)
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		b, ref, err := o.Encode()
		if err != nil {
			t.Fatal(err)
		}
		d, err := shards.DecodeShard(schema, b, ref.Hash, f, idx)
		if err != nil {
			t.Fatalf("%v: %v", f, err)
		}
		again, ref2, err := d.Encode()
		if err != nil || !bytes.Equal(again, b) || ref2 != ref {
			t.Fatalf("%v: encode(decode(b)) differs: %v", f, err)
		}
		if d.Family() != f || d.Shard() != idx || d.Len() != len(recs) {
			t.Fatalf("%v: decoded %v/%02x with %d records", f, d.Family(), d.Shard(), d.Len())
		}
		for i, r := range recs {
			got := d.At(i)
			if !bytes.Equal(got.Key, r.Key) || !bytes.Equal(got.Value, r.Value) {
				t.Fatalf("%v: record %d differs", f, i)
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	golden := goldenBytes(t)
	edit := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(golden)) }
	// A second key in shard 0x3a that sorts before "mo", for order cases.
	cases := []struct {
		name string
		b    []byte
		also error
	}{
		{"empty", nil, nil},
		{"short header", golden[:10], nil},
		{"bad magic", edit(func(b []byte) []byte { b[0] = 'X'; return b }), nil},
		{"version 0", edit(func(b []byte) []byte { b[4] = 0; return b }), shards.ErrFormatVersion},
		{"version 2", edit(func(b []byte) []byte { b[4] = 2; return b }), shards.ErrFormatVersion},
		{"unknown family", edit(func(b []byte) []byte { b[5] = 0x99; return b }), shards.ErrUnknownFamily},
		{"wrong shard", edit(func(b []byte) []byte { b[6] = 0x3b; return b }), shards.ErrWrongShard},
		{"family whose keys are malformed", edit(func(b []byte) []byte { b[5] = byte(shardstest.Fixed16); return b }), shards.ErrMalformedKey},
		{"zero count", edit(func(b []byte) []byte { b[26] = 0; return b[:27] }), nil},
		{"count too small", edit(func(b []byte) []byte { b[26] = 1; return b }), nil},
		{"count too large", edit(func(b []byte) []byte { b[26] = 3; return b }), nil},
		{"count beyond bytes", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[23:], 1<<31); return b }), nil},
		{"trailing byte", append(bytes.Clone(golden), 0), nil},
		{"truncated value", golden[:len(golden)-1], nil},
		{"truncated length", golden[:len(golden)-5], nil},
		{"key length overrun", edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[27:], 1<<30); return b }), nil},
		{"empty key", encodeRaw(shards.System, 0x3a, [][2]string{{"", "x"}}), shards.ErrMalformedKey},
		{"duplicate keys", encodeRaw(shards.System, 0x3a, [][2]string{{"mo", "1"}, {"mo", "2"}}), shards.ErrUnsorted},
		{"unsorted keys", encodeRaw(shards.System, 0x3a, [][2]string{{"schema", "1"}, {"mo", "2"}}), shards.ErrUnsorted},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := shards.Decode(schema, c.b, digest.Sum(c.b))
			if !errors.Is(err, shards.ErrMalformedObject) {
				t.Fatalf("error = %v, want ErrMalformedObject", err)
			}
			if c.also != nil && !errors.Is(err, c.also) {
				t.Fatalf("error = %v, want also %v", err, c.also)
			}
		})
	}
}

// encodeRaw writes a shard object without any checks.
func encodeRaw(f shards.Family, idx uint8, recs [][2]string) []byte {
	b := []byte("CRNS")
	b = append(b, shards.ObjectFormat, byte(f), idx)
	b = append(b, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15) // the golden salt
	b = binary.BigEndian.AppendUint32(b, uint32(len(recs)))
	for _, r := range recs {
		for _, s := range r {
			b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	return b
}

func TestEncodeRawMatchesGolden(t *testing.T) {
	if got := encodeRaw(shards.System, 0x3a, [][2]string{{"mo", ""}, {"schema", "v8"}}); !bytes.Equal(got, goldenBytes(t)) {
		t.Fatalf("encodeRaw = %x", got)
	}
}

func TestDecodeVerifiesHashFirst(t *testing.T) {
	golden := goldenBytes(t)
	wrong := digest.Sum([]byte("other"))
	_, err := shards.Decode(schema, golden, wrong)
	if !errors.Is(err, shards.ErrIntegrity) || !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("error = %v, want ErrIntegrity", err)
	}
	// Malformed bytes under the wrong hash report the hash mismatch.
	_, err = shards.Decode(schema, []byte("junk"), wrong)
	if !errors.Is(err, shards.ErrIntegrity) || errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("error = %v, want only ErrIntegrity", err)
	}
	// A well-formed object of another shard than the table names.
	_, err = shards.DecodeShard(schema, golden, digest.Sum(golden), shards.System, 0x3b)
	if !errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("DecodeShard wrong index error = %v", err)
	}
	_, err = shards.DecodeShard(schema, golden, digest.Sum(golden), shardstest.Fixed48, 0x3a)
	if !errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("DecodeShard wrong family error = %v", err)
	}
}

func TestEmptyObjectIsNotEncoded(t *testing.T) {
	o, err := shards.Empty(schema, shards.System, 0x3a)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Encode(); !errors.Is(err, shards.ErrEmptyObject) {
		t.Fatalf("Encode(empty) error = %v", err)
	}
	if _, err := shards.Empty(schema, shards.Family(0x99), 0); !errors.Is(err, shards.ErrUnknownFamily) {
		t.Fatalf("Empty(unknown) error = %v", err)
	}
	// Deleting the last record leaves an empty shard, which the root omits.
	g, err := shards.Decode(schema, goldenBytes(t), digest.Sum(goldenBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	e, err := g.Apply([]shards.Mutation{{Key: []byte("mo"), Delete: true}, {Key: []byte("schema"), Delete: true}})
	if err != nil {
		t.Fatal(err)
	}
	if e.Len() != 0 {
		t.Fatalf("Len = %d after deleting every record", e.Len())
	}
	if _, _, err := e.Encode(); !errors.Is(err, shards.ErrEmptyObject) {
		t.Fatalf("Encode after deleting all error = %v", err)
	}
}

func TestNewObjectRejects(t *testing.T) {
	for _, c := range []struct {
		name string
		recs []shards.Record
		want error
	}{
		{"unsorted", []shards.Record{{Key: []byte("schema")}, {Key: []byte("mo")}}, shards.ErrUnsorted},
		{"duplicate", []shards.Record{{Key: []byte("mo")}, {Key: []byte("mo")}}, shards.ErrUnsorted},
		{"other shard", []shards.Record{{Key: []byte("a")}}, shards.ErrWrongShard},
		{"empty key", []shards.Record{{Key: nil}}, shards.ErrMalformedKey},
	} {
		if _, err := shards.NewObject(schema, shards.System, 0x3a, c.recs); !errors.Is(err, c.want) {
			t.Errorf("%s: error = %v, want %v", c.name, err, c.want)
		}
	}
}

func manifestKey(t testing.TB, i int) []byte {
	return mustKey(t, shards.NewKey().ID16(testRoot).ID16(id16(77)).U64(uint64(i)))
}

func TestApplyMatchesModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	idx := shardOf(t, shardstest.Grouped, manifestKey(t, 0))
	o, err := shards.Empty(schema, shardstest.Grouped, idx)
	if err != nil {
		t.Fatal(err)
	}
	model := map[string]string{}
	for step := 0; step < 300; step++ {
		byKey := map[int]shards.Mutation{}
		for n := rng.IntN(6); n >= 0; n-- {
			i := rng.IntN(60)
			if rng.IntN(3) == 0 {
				byKey[i] = shards.Mutation{Key: manifestKey(t, i), Delete: true}
			} else {
				byKey[i] = shards.Mutation{Key: manifestKey(t, i), Value: []byte(fmt.Sprintf("v%d-%d", i, step))}
			}
		}
		muts := slices.SortedFunc(maps.Values(byKey), func(a, b shards.Mutation) int { return bytes.Compare(a.Key, b.Key) })
		var before []byte
		if o.Len() > 0 {
			before, _, _ = o.Encode()
		}
		next, err := o.Apply(muts)
		if err != nil {
			t.Fatal(err)
		}
		// The old object is unchanged.
		if o.Len() > 0 {
			after, _, _ := o.Encode()
			if !bytes.Equal(before, after) {
				t.Fatalf("step %d: Apply changed its receiver", step)
			}
		}
		// Mutating the caller's buffers afterwards changes nothing.
		for _, m := range muts {
			if !m.Delete {
				m.Value[0] = '!'
			}
		}
		for _, m := range muts {
			if m.Delete {
				delete(model, string(m.Key))
			} else {
				model[string(m.Key)] = "v" + string(m.Value[1:])
			}
		}
		o = next
		if o.Len() != len(model) {
			t.Fatalf("step %d: %d records, model %d", step, o.Len(), len(model))
		}
		keys := slices.Sorted(maps.Keys(model))
		for i, k := range keys {
			r := o.At(i)
			if string(r.Key) != k || string(r.Value) != model[k] {
				t.Fatalf("step %d: record %d = %x:%q, model %x:%q", step, i, r.Key, r.Value, k, model[k])
			}
			if v, ok := o.Get([]byte(k)); !ok || string(v) != model[k] {
				t.Fatalf("step %d: Get(%x) = %q, %v", step, k, v, ok)
			}
		}
		var size int64 = 11 + shards.SaltLen
		for _, k := range keys {
			size += 8 + int64(len(k)+len(model[k]))
		}
		if o.EncodedSize() != size {
			t.Fatalf("step %d: EncodedSize %d, want %d", step, o.EncodedSize(), size)
		}
	}
}

func TestApplyRejects(t *testing.T) {
	g, err := shards.Decode(schema, goldenBytes(t), digest.Sum(goldenBytes(t)))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		muts []shards.Mutation
		want error
	}{
		{"unsorted", []shards.Mutation{{Key: []byte("schema")}, {Key: []byte("mo")}}, shards.ErrUnsorted},
		{"duplicate", []shards.Mutation{{Key: []byte("mo")}, {Key: []byte("mo"), Delete: true}}, shards.ErrUnsorted},
		{"other shard", []shards.Mutation{{Key: []byte("a")}}, shards.ErrWrongShard},
	} {
		if _, err := g.Apply(c.muts); !errors.Is(err, c.want) {
			t.Errorf("%s: error = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestObjectScan(t *testing.T) {
	keys, idx := oneShardKeys(t, shardstest.Grouped, 1)
	prefix := keys[0][:32]
	var recs []shards.Record
	for i := 0; i < 10; i++ {
		recs = append(recs, shards.Record{Key: mustKey(t, shards.NewKey().Raw(prefix).U64(uint64(i*10))), Value: []byte{byte(i)}})
	}
	o, err := shards.NewObject(schema, shardstest.Grouped, idx, recs)
	if err != nil {
		t.Fatal(err)
	}
	collect := func(prefix, after []byte) []uint64 {
		var out []uint64
		for k := range o.Scan(prefix, after) {
			out = append(out, binary.BigEndian.Uint64(k[32:]))
		}
		return out
	}
	at := func(v uint64) []byte { return mustKey(t, shards.NewKey().Raw(prefix).U64(v)) }
	for _, c := range []struct {
		name          string
		prefix, after []byte
		want          []uint64
	}{
		{"all", nil, nil, []uint64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}},
		{"after existing", prefix, at(40), []uint64{50, 60, 70, 80, 90}},
		{"after missing", prefix, at(41), []uint64{50, 60, 70, 80, 90}},
		{"after last", prefix, at(90), nil},
		{"after before prefix", prefix, []byte{0}, []uint64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}},
		{"narrow prefix", at(30)[:39], nil, []uint64{0, 10, 20, 30, 40, 50, 60, 70, 80, 90}},
		{"exact prefix", at(30), nil, []uint64{30}},
		{"absent prefix", append(bytes.Clone(prefix), 1), nil, nil},
	} {
		if got := collect(c.prefix, c.after); !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	// Stopping early.
	n := 0
	for range o.Scan(nil, nil) {
		n++
		if n == 3 {
			break
		}
	}
	if n != 3 {
		t.Fatalf("break after 3 gave %d", n)
	}
}

func FuzzDecodeObject(f *testing.F) {
	f.Add(goldenBytes(f))
	f.Add(encodeRaw(shards.System, 0x3a, [][2]string{{"mo", "1"}, {"mo", "2"}}))
	f.Add([]byte("CRNS\x01\xf0\x3a\x00\x00\x00\x01"))
	f.Add(shards.Compress(goldenBytes(f)))
	f.Add(shards.Compress(encodeRaw(shards.System, 0x3a, [][2]string{{"mo", "cairn cairn cairn cairn"}, {"schema", "cairn cairn cairn cairn"}})))
	f.Fuzz(func(t *testing.T, b []byte) {
		o, err := shards.Decode(schema, b, digest.Sum(b))
		if err != nil {
			if !errors.Is(err, shards.ErrMalformedObject) {
				t.Fatalf("error %v is not ErrMalformedObject", err)
			}
			return
		}
		// What decodes is canonical: the bytes, or those within a
		// compressed object (whose frame is the writer's).
		within, err := shards.Expand(b, shards.MaxExpandedBytes)
		if err != nil {
			t.Fatal(err)
		}
		again, ref, err := o.Encode()
		if err != nil || !bytes.Equal(again, within) || ref.Hash != digest.Sum(within) || o.StoredSize() != int64(len(b)) {
			t.Fatalf("encode(decode(b)) differs: %v", err)
		}
		for i := 0; i < o.Len(); i++ {
			if v, ok := o.Get(o.At(i).Key); !ok || !bytes.Equal(v, o.At(i).Value) {
				t.Fatalf("Get of record %d failed", i)
			}
		}
	})
}

// BenchmarkApplyOneRecord changes one record of a shard of 400 records (a
// family of 100,000 records over 256 shards) with values of 160 bytes, and
// encodes and hashes the new shard: the work and the bytes a one-record
// commit writes for that family.
func BenchmarkApplyOneRecord(b *testing.B) {
	const n = 400
	var recs []shards.Record
	var idx uint8
	target := -1
	for i := 0; len(recs) < n; i++ {
		k := mustKey(b, shards.NewKey().ID16(testRoot).ID16(id16(i)))
		s := shardOf(b, shardstest.Fixed32, k)
		if target < 0 {
			target, idx = int(s), s
		}
		if s == idx {
			recs = append(recs, shards.Record{Key: k, Value: bytes.Repeat([]byte{byte(i)}, 160)})
		}
	}
	slices.SortFunc(recs, func(x, y shards.Record) int { return bytes.Compare(x.Key, y.Key) })
	o, err := shards.NewObject(schema, shardstest.Fixed32, idx, recs)
	if err != nil {
		b.Fatal(err)
	}
	mut := []shards.Mutation{{Key: recs[n/2].Key, Value: bytes.Repeat([]byte{0xee}, 160)}}
	var encoded int
	b.ReportAllocs()
	for b.Loop() {
		next, err := o.Apply(mut)
		if err != nil {
			b.Fatal(err)
		}
		out, _, err := next.Encode()
		if err != nil {
			b.Fatal(err)
		}
		encoded = len(out)
	}
	b.SetBytes(int64(encoded))
	b.ReportMetric(float64(encoded), "encoded-bytes/op")
}

// TestObjectDrop: Drop leaves out exactly the records its predicate
// names, keeps the others in order with a size that encodes, returns the
// object itself when it drops nothing, and may empty it.
func TestObjectDrop(t *testing.T) {
	var recs []shards.Record
	for i := range 6 {
		recs = append(recs, shards.Record{Key: sampleKey(t, shardstest.Grouped, 5*i), Value: []byte{byte(i)}}) // one group: one shard
	}
	idx, err := schema.ShardOf(shardstest.Grouped, recs[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	o, err := shards.NewObject(schema, shardstest.Grouped, idx, recs)
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Drop(func(k, v []byte) bool { return false }); got != o {
		t.Fatal("Drop of nothing returned a new object")
	}
	odd := o.Drop(func(_, v []byte) bool { return v[0]%2 == 1 })
	if got, want := odd.Len(), 3; got != want {
		t.Fatalf("after dropping the odd values %d records, want %d", got, want)
	}
	for i := range odd.Len() {
		if r := odd.At(i); r.Value[0] != byte(2*i) {
			t.Fatalf("record %d = %q=%v, want value %d", i, r.Key, r.Value, 2*i)
		}
	}
	b, _, err := odd.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if got, want := int64(len(b)), odd.EncodedSize(); got != want {
		t.Fatalf("encoded %d bytes, EncodedSize says %d", got, want)
	}
	if o.Len() != 6 {
		t.Fatalf("Drop changed its receiver: %d records", o.Len())
	}
	if got := o.Drop(func(k, v []byte) bool { return true }).Len(); got != 0 {
		t.Fatalf("dropping every record left %d", got)
	}
}

// TestSchemaExpiry: a schema returns a family's expiry rule, and none
// for a family without one or a tag it does not hold.
func TestSchemaExpiry(t *testing.T) {
	rule := func(_, v []byte, at shards.ExpiryClock) bool { return at.Sequence > 7 }
	s, err := shards.NewSchema(shards.FamilySpec{Family: 0x30, Name: "expiring", Expire: rule}, shards.FamilySpec{Family: 0x31, Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	if r := s.Expiry(0x30); r == nil || !r(nil, nil, shards.ExpiryClock{Sequence: 8}) || r(nil, nil, shards.ExpiryClock{Sequence: 7}) {
		t.Fatal("the expiring family's rule is not the spec's")
	}
	for _, f := range []shards.Family{0x31, 0x32, shards.CommandDedupe, shards.System} {
		if s.Expiry(f) != nil {
			t.Fatalf("family %v has a rule", f)
		}
	}
}
