package shards_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// compressible returns n records of family f in one shard whose values
// repeat, so that the object compresses.
func compressible(t *testing.T, f shards.Family, n int) (uint8, []shards.Record) {
	keys, idx := oneShardKeys(t, f, n)
	var recs []shards.Record
	for _, k := range keys {
		recs = append(recs, shards.Record{Key: k, Value: bytes.Repeat([]byte("sha256:0123456789abcdef"), 8)})
	}
	return idx, recs
}

// TestObjectCompressed: a compressed shard object is smaller than its
// plain encoding, is named by its own bytes, decodes (through Decode and
// through a cache) to the same records, and reports the stored size its
// reference carries; the bytes within are the plain encoding.
func TestObjectCompressed(t *testing.T) {
	f := shardstest.Fixed32
	idx, recs := compressible(t, f, 40)
	o, err := shards.NewObject(schema, f, idx, recs)
	if err != nil {
		t.Fatal(err)
	}
	plain, pref, err := o.Encode()
	if err != nil {
		t.Fatal(err)
	}
	z, zref, err := o.Salted(o.Salt()).EncodeCompressed()
	if err != nil {
		t.Fatal(err)
	}
	if !shards.IsCompressed(z) || len(z) >= len(plain) || zref.Size != int64(len(z)) || zref.Hash != digest.Sum(z) || zref.Count != pref.Count {
		t.Fatalf("compressed %d bytes (plain %d), ref %+v", len(z), len(plain), zref)
	}
	within, err := shards.Expand(z, shards.MaxExpandedBytes)
	if err != nil || !bytes.Equal(within, plain) {
		t.Fatalf("expand: %v", err)
	}
	d, err := shards.DecodeShard(schema, z, zref.Hash, f, idx)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != len(recs) || d.StoredSize() != zref.Size || d.EncodedSize() != int64(len(plain)) || d.Summary().Size != zref.Size {
		t.Fatalf("decoded %d records, stored %d, encoded %d, summary %d", d.Len(), d.StoredSize(), d.EncodedSize(), d.Summary().Size)
	}
	for i, r := range recs {
		if got := d.At(i); !bytes.Equal(got.Key, r.Key) || !bytes.Equal(got.Value, r.Value) {
			t.Fatalf("record %d differs", i)
		}
	}
	c := shards.NewObjectCache(1 << 20)
	lo, err := shards.LoadObject(t.Context(), c, schema, zref.Hash, f, idx, func(ctx context.Context) ([]byte, error) { return z, nil })
	if err != nil || lo.StoredSize() != zref.Size || lo.Len() != len(recs) {
		t.Fatalf("load: %v", err)
	}
	// A plain object decodes as before, its stored size its encoding's.
	p, err := shards.DecodeShard(schema, plain, pref.Hash, f, idx)
	if err != nil || p.StoredSize() != int64(len(plain)) {
		t.Fatalf("plain: %v", err)
	}
}

// TestCompressKeepsSmallPlain: bytes that would not shrink stay as they
// are, and an object of them encodes plain; so do bytes longer than a
// reader expands.
func TestCompressKeepsSmallPlain(t *testing.T) {
	b := []byte("CRNS\x01")
	if got := shards.Compress(b); !bytes.Equal(got, b) {
		t.Fatalf("Compress(%q) = %q", b, got)
	}
	// Bytes a reader would refuse to expand stay plain, however well
	// they compress.
	big := make([]byte, shards.MaxExpandedBytes+1)
	if got := shards.Compress(big); len(got) != len(big) || shards.IsCompressed(got) {
		t.Fatalf("Compress of %d bytes returned %d bytes", len(big), len(got))
	}
	keys, idx := oneShardKeys(t, shardstest.Fixed16, 1)
	o, err := shards.NewObject(schema, shardstest.Fixed16, idx, []shards.Record{{Key: keys[0], Value: []byte("v")}})
	if err != nil {
		t.Fatal(err)
	}
	o = o.Salted(shards.Salt{0x9e, 0x37, 0x79, 0xb9, 0x7f, 0x4a, 0x7c, 0x15, 0xf3, 0x9c, 0xc0, 0x60, 0x5c, 0xed, 0xc8, 0x34})
	plain, _, _ := o.Encode()
	got, ref, err := o.Salted(o.Salt()).EncodeCompressed()
	if err != nil || !bytes.Equal(got, plain) || ref.Size != int64(len(plain)) {
		t.Fatalf("a one-record object: %d bytes, plain %d: %v", len(got), len(plain), err)
	}
}

// TestDeltaCompressed: as TestObjectCompressed, for a delta segment.
func TestDeltaCompressed(t *testing.T) {
	var recs []shards.DeltaRecord
	for i := range 40 {
		recs = append(recs, shards.DeltaRecord{Family: shardstest.Fixed32, Mutation: shards.Mutation{
			Key: sampleKey(t, shardstest.Fixed32, i), Value: bytes.Repeat([]byte("abc"), 20)}})
	}
	d, err := shards.NewDelta(schema, shards.Salt{1}, 7, recs)
	if err != nil {
		t.Fatal(err)
	}
	plain, _, err := d.Encode()
	if err != nil {
		t.Fatal(err)
	}
	d2, err := shards.NewDelta(schema, shards.Salt{1}, 7, recs)
	if err != nil {
		t.Fatal(err)
	}
	z, ref, err := d2.EncodeCompressed()
	if err != nil || len(z) >= len(plain) || d2.StoredSize() != int64(len(z)) || ref.Size != int64(len(z)) {
		t.Fatalf("compressed %d of %d: %v", len(z), len(plain), err)
	}
	got, err := shards.DecodeDelta(schema, z, ref.Hash)
	if err != nil || got.Len() != len(recs) || got.StoredSize() != ref.Size || got.EncodedSize() != int64(len(plain)) || got.Sequence() != 7 {
		t.Fatalf("decode: %v", err)
	}
}

// TestExpandRejects: a compressed object that lies about its length, one
// past the limit, one of another version and one whose frame is broken
// fail as malformed (a version as ErrFormatVersion), never as something
// else.
func TestExpandRejects(t *testing.T) {
	plain := bytes.Repeat([]byte("cairn "), 200)
	z := shards.Compress(plain)
	if !shards.IsCompressed(z) {
		t.Fatal("did not compress")
	}
	header := func(version byte, n uint64) []byte {
		return wire.NewWriter(nil).Raw([]byte("CRNZ")).U8(version).UVarint(n).Bytes()
	}
	frame := z[len(header(1, uint64(len(plain)))):]
	for _, tc := range []struct {
		name string
		b    []byte
		want error
	}{
		{"declares more", append(header(1, uint64(len(plain)+1)), frame...), shards.ErrCompressed},
		{"declares less", append(header(1, uint64(len(plain)-1)), frame...), shards.ErrCompressed},
		{"past the limit", append(header(1, 1<<30), frame...), shards.ErrCompressed},
		{"another version", append(header(2, uint64(len(plain))), frame...), shards.ErrFormatVersion},
		{"broken frame", append(header(1, uint64(len(plain))), frame[:len(frame)/2]...), shards.ErrCompressed},
		{"no header", []byte("CRNZ"), shards.ErrCompressed},
	} {
		_, err := shards.Expand(tc.b, shards.MaxExpandedBytes)
		if !errors.Is(err, tc.want) || !errors.Is(err, shards.ErrMalformedObject) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := shards.Expand(z, int64(len(plain)-1)); !errors.Is(err, shards.ErrCompressed) {
		t.Errorf("under a limit below its length: %v", err)
	}
	// A shard object whose hash matches but whose compressed frame is
	// broken is malformed, not an integrity failure.
	bad := append(header(1, uint64(len(plain))), frame[:len(frame)/2]...)
	if _, err := shards.Decode(schema, bad, digest.Sum(bad)); !errors.Is(err, shards.ErrMalformedObject) || errors.Is(err, bucket.ErrIntegrity) {
		t.Errorf("decode a broken compressed object: %v", err)
	}
}
