package head_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// shardGets returns the keys of the shard objects, pages and page
// indexes calls read, the system family's (the schema gate) left out.
func shardGets(calls []rqCall) []string {
	var keys []string
	for _, c := range calls {
		if c.Op == "get" && (strings.Contains(c.Key, "/objects/") || strings.Contains(c.Key, "/indexes/")) && !strings.Contains(c.Key, "/system/") {
			keys = append(keys, c.Key)
		}
	}
	return keys
}

// TestLookupPastTheLastKey: in a shard whose tables carry each shard's
// last key (Schema.LastKeysFrom), a new process looks up a key greater
// than every key of its shard, as a new time-ordered id is, without
// reading the shard, and its prefetch of that key loads nothing; a key
// inside the shard is read as before. With tables of format 3 the
// lookup reads the shard. Each way, every root verifies (Options.Check
// walks it, checking each entry's last key against its shard), and the
// shards are both leaves and pages.
func TestLookupPastTheLastKey(t *testing.T) {
	// Values of 200-odd bytes, so that a shard of two dozen records is
	// paged.
	value := func(i int) []byte { return fmt.Appendf(nil, "value %d %s", i, strings.Repeat("v", 200)) }
	for _, lastKeys := range []bool{true, false} {
		t.Run(fmt.Sprint("lastKeys=", lastKeys), func(t *testing.T) {
			ctx := context.Background()
			b := mem.NewBucket()
			id := shards.NewShardID()
			sc := head.SchemaForTest
			if lastKeys {
				sc.LastKeysFrom = sc.Marker.ValueFormatVersion
			}
			// Small pages, so that some shards are paged.
			opts := head.Options{Check: true, InlineBytes: -1, PageBytes: 2 << 10}
			s, err := head.Open(ctx, b, id, sc, opts)
			if err != nil {
				t.Fatal(err)
			}
			const n = 6000
			for batch := range 3 {
				if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
					for i := batch * n / 3; i < (batch+1)*n/3; i++ {
						if err := tx.Put(fam, key(i), value(i)); err != nil {
							return nil, err
						}
					}
					return nil, nil
				}}); err != nil {
					t.Fatal(err)
				}
				if err := s.Fold(ctx); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()

			rb := &rqRecorder{Bucket: b}
			fresh, err := head.Open(ctx, rb, id, sc, head.Options{InlineBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer fresh.Close()
			sn, err := fresh.Pin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(sn.Root().Deltas) != 0 {
				t.Fatalf("the root lists %d deltas: the keys are not all in base shards", len(sn.Root().Deltas))
			}
			if err := sn.Prefetch(ctx, []shards.Family{fam}, nil); err != nil { // the table
				t.Fatal(err)
			}
			rb.take()
			paged, reads := 0, 0
			for i := range 50 {
				k := key(n + 1000 + i)
				ref, err := sn.ShardOf(fam, k)
				if err != nil {
					t.Fatal(err)
				}
				ref.Prefix = k
				if err := sn.Prefetch(ctx, nil, []head.ShardRef{ref}); err != nil {
					t.Fatal(err)
				}
				prefetched := shardGets(rb.take())
				if _, ok, err := sn.Get(ctx, fam, k); err != nil || ok {
					t.Fatalf("Get of a new key: %v, %v", ok, err)
				}
				got := shardGets(rb.take())
				reads += len(prefetched) + len(got)
				for _, r := range append(prefetched, got...) {
					if strings.Contains(r, "/indexes/") {
						paged++
					}
				}
				if lastKeys && len(prefetched)+len(got) != 0 {
					t.Fatalf("a key past its shard's last key read %v, then %v", prefetched, got)
				}
			}
			t.Logf("50 lookups of new keys read %d shard objects and indexes (%d indexes)", reads, paged)
			if !lastKeys && (reads == 0 || paged == 0) {
				t.Errorf("with tables of format 3, 50 lookups of new keys read %d objects, %d of them indexes: want some of each", reads, paged)
			}
			if v, ok, err := sn.Get(ctx, fam, key(17)); err != nil || !ok || string(v) != string(value(17)) {
				t.Fatalf("Get of a key inside its shard: %q %v %v", v, ok, err)
			}
			if len(shardGets(rb.take())) == 0 {
				t.Fatal("a key inside its shard read no shard")
			}
		})
	}
}
