package roots_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
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

// FuzzDecodeTable: no input panics the decoder; anything that decodes
// re-encodes to exactly the same bytes and reference; the same bytes under
// another hash are an integrity failure.
func FuzzDecodeTable(f *testing.F) {
	addSeeds(f, goldenTable, func(r *rand.Rand) []byte {
		b, _, err := randomTable(r).Encode(schema)
		if err != nil {
			f.Fatal(err)
		}
		return b
	})
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
