package shards_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// spread builds the shards of n artifact revisions, returning the objects
// (with nil for absent shards) and every key in order.
func spread(t testing.TB, n int) ([]*shards.Object, [][]byte) {
	byShard := map[uint8][]shards.Record{}
	var all [][]byte
	for i := 0; i < n; i++ {
		k := sampleKey(t, shardstest.Fixed32, i)
		idx := shardOf(t, shardstest.Fixed32, k)
		byShard[idx] = append(byShard[idx], shards.Record{Key: k, Value: k[len(k)-4:]})
		all = append(all, k)
	}
	objs := make([]*shards.Object, shards.Shards)
	for idx, recs := range byShard {
		slices.SortFunc(recs, func(a, b shards.Record) int { return bytes.Compare(a.Key, b.Key) })
		o, err := shards.NewObject(schema, shardstest.Fixed32, idx, recs)
		if err != nil {
			t.Fatal(err)
		}
		objs[idx] = o
	}
	slices.SortFunc(all, bytes.Compare)
	return objs, all
}

func TestMergeMatchesReferenceSort(t *testing.T) {
	objs, all := spread(t, 3000)
	rng := rand.New(rand.NewPCG(5, 6))
	rootPrefix := testRoot[:]
	for trial := 0; trial < 300; trial++ {
		var prefix, after []byte
		switch rng.IntN(4) {
		case 0:
			prefix = nil
		case 1:
			prefix = rootPrefix
		case 2: // keys 0x100*m .. 0x100*m+0xff
			prefix = append(bytes.Clone(rootPrefix), 0, 0, 0, 0, 0, 0, byte(rng.IntN(12)))
		case 3:
			prefix = append(bytes.Clone(rootPrefix), 1) // matches nothing
		}
		switch rng.IntN(3) {
		case 1:
			after = all[rng.IntN(len(all))]
		case 2:
			after = append(bytes.Clone(all[rng.IntN(len(all))]), 0) // not a key
		}
		limit := 0
		if rng.IntN(2) == 0 {
			limit = 1 + rng.IntN(300)
		}
		var want [][]byte
		for _, k := range all {
			if bytes.HasPrefix(k, prefix) && (len(after) == 0 || bytes.Compare(k, after) > 0) {
				want = append(want, k)
			}
		}
		if limit > 0 && len(want) > limit {
			want = want[:limit]
		}
		seq, err := shards.Merge(objs, prefix, after, limit)
		if err != nil {
			t.Fatal(err)
		}
		for pass := 0; pass < 2; pass++ { // the sequence can be ranged again
			var got [][]byte
			for k, v := range seq {
				if !bytes.Equal(v, k[len(k)-4:]) {
					t.Fatalf("value of %x is %x", k, v)
				}
				got = append(got, k)
			}
			if !slices.EqualFunc(got, want, bytes.Equal) {
				t.Fatalf("trial %d pass %d (prefix %x after %x limit %d): got %d keys, want %d", trial, pass, prefix, after, limit, len(got), len(want))
			}
		}
	}
}

func TestMergeStopsEarly(t *testing.T) {
	objs, all := spread(t, 500)
	seq, err := shards.Merge(objs, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]byte
	for k := range seq {
		got = append(got, k)
		if len(got) == 7 {
			break
		}
	}
	if !slices.EqualFunc(got, all[:7], bytes.Equal) {
		t.Fatal("early stop yielded the wrong keys")
	}
}

func TestMergeRejectsMixedObjects(t *testing.T) {
	objs, _ := spread(t, 200)
	var some []*shards.Object
	for _, o := range objs {
		if o != nil {
			some = append(some, o)
		}
	}
	other, err := shards.NewObject(schema, shards.System, 0x3a, []shards.Record{{Key: []byte("mo")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := shards.Merge(append(slices.Clone(some[:3]), other), nil, nil, 0); !errors.Is(err, shards.ErrMixedObjects) {
		t.Fatalf("mixed families error = %v", err)
	}
	if _, err := shards.Merge([]*shards.Object{some[0], some[1], some[0]}, nil, nil, 0); !errors.Is(err, shards.ErrMixedObjects) {
		t.Fatalf("repeated shard error = %v", err)
	}
	seq, err := shards.Merge(nil, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	for range seq {
		t.Fatal("merge of nothing yielded a record")
	}
}
