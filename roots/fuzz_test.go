package roots_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

func addSeeds(f *testing.F, golden string, random func(*rand.Rand) []byte) {
	f.Add(unhex(f, golden))
	f.Add([]byte{})
	f.Add([]byte("CRNT\x01"))
	f.Add([]byte("CRNR\x01"))
	r := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		f.Add(random(r))
	}
}

// inlineSeedTables returns tables of format 3 whose entries carry real
// encodings inline: a page index (kind 4) and a shard object (kind 3),
// beside entries of kinds 1 and 2, so that the fuzzer starts from the
// entries the engine writes most.
func inlineSeedTables(f *testing.F) [][]byte {
	var salt shards.Salt
	copy(salt[:], "inline-seed-salt")
	group := bytes.Repeat([]byte{7}, shardstest.GroupLen)
	key := func(n byte) []byte { return append(bytes.Clone(group), 0, 0, 0, 0, 0, 0, 1, n) }
	idx, err := schema.ShardOf(shardstest.Grouped, key(0))
	if err != nil {
		f.Fatal(err)
	}
	x, err := shards.NewIndex(schema, shardstest.Grouped, idx, salt, []shards.PageRef{
		{Ref: shards.Ref{Hash: fill(0x61), Size: 300, Count: 2}},
		{First: key(5), Ref: shards.Ref{Hash: fill(0x62), Size: 1 << 20, Count: 70000}},
		{First: key(9), Ref: shards.Ref{Hash: fill(0x63), Size: 29, Count: 1}},
	})
	if err != nil {
		f.Fatal(err)
	}
	xb, xref, err := x.Encode()
	if err != nil {
		f.Fatal(err)
	}
	if _, err := shards.DecodeIndex(schema, xb, xref.Hash, shardstest.Grouped, idx); err != nil {
		f.Fatal(err)
	}
	var out [][]byte
	for _, entries := range [][]roots.Entry{
		{{Shard: idx, Index: true, Ref: xref, Inline: string(xb)}},
		{
			{Shard: 0, Ref: shards.Ref{Hash: fill(0x11), Size: 100, Count: 2}},
			inlineEntry(idx-1, "a shard object's bytes"),
			{Shard: idx, Index: true, Ref: xref, Inline: string(xb)},
			{Shard: 0xff, Index: true, Ref: shards.Ref{Hash: fill(0x22), Size: 4000, Count: 9}},
		},
	} {
		if idx == 0 || idx == 0xff {
			f.Fatalf("seed group lands in shard %02x; pick another", idx)
		}
		b, _, err := (&roots.Table{Family: shardstest.Grouped, Entries: entries}).Encode(schema)
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzDecodeTable: no input panics the decoder; anything that decodes
// re-encodes to exactly the same bytes and reference; the same bytes under
// another hash are an integrity failure. An inline page index either
// decodes to its own canonical bytes or fails as a malformed object.
func FuzzDecodeTable(f *testing.F) {
	addSeeds(f, goldenTable, func(r *rand.Rand) []byte {
		b, _, err := randomTable(r).Encode(schema)
		if err != nil {
			f.Fatal(err)
		}
		return b
	})
	for _, b := range inlineSeedTables(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		h := digest.Sum(b)
		tbl, err := roots.DecodeTable(schema, b, h)
		if err != nil {
			if tbl != nil || !errors.Is(err, roots.ErrMalformed) {
				t.Fatalf("DecodeTable = %+v, %v", tbl, err)
			}
			return
		}
		again, ref, err := tbl.Encode(schema)
		if err != nil {
			t.Fatalf("decoded table does not encode: %v", err)
		}
		if !bytes.Equal(again, b) || ref.Hash != h || ref.Size != int64(len(b)) || ref.Count != uint32(len(tbl.Entries)) {
			t.Fatalf("encode(decode(b)) = %x, want %x", again, b)
		}
		wrong := h
		wrong[0] ^= 1
		if _, err := roots.DecodeTable(schema, b, wrong); !errors.Is(err, bucket.ErrIntegrity) {
			t.Fatalf("under another hash: %v", err)
		}
		for _, e := range tbl.Entries {
			if e.Inline == "" || !e.Index {
				continue
			}
			x, err := shards.DecodeIndex(schema, []byte(e.Inline), e.Ref.Hash, tbl.Family, e.Shard)
			if err != nil {
				if !errors.Is(err, shards.ErrMalformedObject) {
					t.Fatalf("inline index of shard %02x: %v", e.Shard, err)
				}
				continue
			}
			if xb, _, err := x.Encode(); err != nil || string(xb) != e.Inline {
				t.Fatalf("inline index of shard %02x does not re-encode: %v", e.Shard, err)
			}
		}
	})
}

// FuzzDecodeRoot is FuzzDecodeTable for roots.
func FuzzDecodeRoot(f *testing.F) {
	addSeeds(f, goldenRoot, func(r *rand.Rand) []byte {
		b, _, err := randomRoot(r).Encode(schema)
		if err != nil {
			f.Fatal(err)
		}
		return b
	})
	f.Fuzz(func(t *testing.T, b []byte) {
		h := digest.Sum(b)
		root, err := roots.DecodeRoot(schema, b, h)
		if err != nil {
			if root != nil || !errors.Is(err, roots.ErrMalformed) {
				t.Fatalf("DecodeRoot = %+v, %v", root, err)
			}
			return
		}
		again, ref, err := root.Encode(schema)
		if err != nil {
			t.Fatalf("decoded root does not encode: %v", err)
		}
		if !bytes.Equal(again, b) || ref.Hash != h || ref.Size != int64(len(b)) {
			t.Fatalf("encode(decode(b)) = %x, want %x", again, b)
		}
		for _, fr := range root.Families {
			if fr.Table.Count != uint32(fr.Shards) {
				t.Fatalf("family %s: table count %d, shards %d", fr.Family, fr.Table.Count, fr.Shards)
			}
		}
		wrong := h
		wrong[31] ^= 1
		if _, err := roots.DecodeRoot(schema, b, wrong); !errors.Is(err, bucket.ErrIntegrity) {
			t.Fatalf("under another hash: %v", err)
		}
	})
}
