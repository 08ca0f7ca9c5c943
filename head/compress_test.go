package head_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// TestCompressedShard: a shard whose marker's value format is at least
// the schema's CompressFrom writes its delta segments and shard objects
// compressed, and one below writes them plain; either way another Store
// reads every value back and a strict check of every root passes.
func TestCompressedShard(t *testing.T) {
	for _, compress := range []bool{true, false} {
		t.Run(fmt.Sprint("compress=", compress), func(t *testing.T) {
			ctx := context.Background()
			b := mem.NewBucket()
			id := shards.NewShardID()
			sc := head.SchemaForTest
			sc.CompressFrom = sc.Marker.ValueFormatVersion
			if !compress {
				sc.CompressFrom++
			}
			s, err := head.Open(ctx, b, id, sc, head.Options{Check: true, NoGroupCommit: true, MaxDeltas: 4, InlineBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.Initialize(ctx); err != nil {
				t.Fatal(err)
			}
			value := func(i int) string { return fmt.Sprintf("sha256:%064x revision %d of a file", i*7919, i) }
			for batch := range 6 {
				if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
					for i := batch * 50; i < (batch+1)*50; i++ {
						if err := tx.Put(fam, key(i), []byte(value(i))); err != nil {
							return nil, err
						}
					}
					return nil, nil
				}}); err != nil {
					t.Fatal(err)
				}
				if batch == 3 {
					if err := s.Fold(ctx); err != nil {
						t.Fatal(err)
					}
				}
			}
			attrs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			kinds := map[string][2]int{} // compressed, plain
			for _, a := range attrs {
				var kind string
				switch {
				case strings.Contains(a.Key, "/deltas/"):
					kind = "delta"
				case strings.Contains(a.Key, "/objects/"):
					kind = "object"
				default:
					continue
				}
				body, _, err := b.Get(ctx, a.Key)
				if err != nil {
					t.Fatal(err)
				}
				n := kinds[kind]
				if shards.IsCompressed(body) {
					n[0]++
				} else {
					n[1]++
				}
				kinds[kind] = n
			}
			for _, kind := range []string{"delta", "object"} {
				n := kinds[kind]
				if compress && n[0] == 0 || !compress && n[0] > 0 || n[0]+n[1] == 0 {
					t.Errorf("%ss: %d compressed, %d plain", kind, n[0], n[1])
				}
			}

			other, err := head.Open(ctx, b, id, sc, head.Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			sn, err := other.Pin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for i := range 300 {
				if v, ok, err := sn.Get(ctx, fam, key(i)); err != nil || !ok || string(v) != value(i) {
					t.Fatalf("key %d: %q %v %v", i, v, ok, err)
				}
			}
			for h := sn.RootHash(); !h.IsZero(); h = readRoot(t, b, s.Layout(), h).Parent {
				if err := head.Check(ctx, b, s.Layout(), h, head.CheckOptions{Strict: true}); err != nil {
					t.Fatalf("root %s: %v", h, err)
				}
			}
		})
	}
}
