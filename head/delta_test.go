package head_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// modelKey returns key i of the property test: a Fixed32 key (i < 40) or a
// Grouped key in one of three groups, whose 32-byte prefix fixes a shard.
func modelKey(i int) (shards.Family, []byte) {
	if i < 40 {
		return fam, key(i)
	}
	k := make([]byte, 40)
	k[31] = byte(i % 3)
	k[39] = byte(i)
	return shardstest.Grouped, k
}

// modelScan is the model's answer to a Scan.
func modelScan(m map[string]string, prefix, after []byte, limit int) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !bytes.HasPrefix([]byte(k), prefix) || (len(after) > 0 && k <= string(after)) {
			continue
		}
		if limit > 0 && len(out) == limit {
			break
		}
		out = append(out, k+"="+m[k])
	}
	return out
}

// TestDeltasMatchModel: random puts, overwrites and deletes, committed in
// random batches by two replicas whose fold bounds differ (so that folds
// happen in the background, inline, and lose races, at points the run
// chooses), are compared after every commit with a map: every Get and a
// random Scan of each family, through a fresh snapshot. Every commit is
// checked strictly (Options.Check).
func TestDeltasMatchModel(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			ctx := context.Background()
			r := rand.New(rand.NewPCG(seed, 77))
			store := mem.NewStore()
			id := shards.NewShardID()
			var replicas []*head.Store
			for i := range 2 {
				b, _ := mem.New(store, "")
				opts := head.Options{NoGroupCommit: i == 1, MaxDeltas: 1 + r.IntN(5), MaxDeltaBytes: int64(100 + r.IntN(2000))}
				replicas = append(replicas, open(t, b, id, opts))
			}
			model := map[shards.Family]map[string]string{fam: {}, shardstest.Grouped: {}}
			for step := range 120 {
				s := replicas[r.IntN(len(replicas))]
				type op struct {
					i   int
					del bool
					v   string
				}
				var ops []op
				for range 1 + r.IntN(4) {
					ops = append(ops, op{i: r.IntN(52), del: r.IntN(3) == 0, v: fmt.Sprintf("v%d.%d", step, r.IntN(100))})
				}
				if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
					for _, o := range ops {
						f, k := modelKey(o.i)
						var err error
						if o.del {
							err = tx.Delete(f, k)
						} else {
							err = tx.Put(f, k, []byte(o.v))
						}
						if err != nil {
							return nil, err
						}
						// The command sees its own writes.
						v, ok, err := tx.Get(f, k)
						if err != nil || ok == o.del || (ok && string(v) != o.v) {
							return nil, fmt.Errorf("tx.Get after write: %q, %v, %v", v, ok, err)
						}
					}
					return nil, nil
				}}); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for _, o := range ops {
					f, k := modelKey(o.i)
					if o.del {
						delete(model[f], string(k))
					} else {
						model[f][string(k)] = o.v
					}
				}
				sn, err := replicas[r.IntN(len(replicas))].Pin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 52 {
					f, k := modelKey(i)
					v, ok, err := sn.Get(ctx, f, k)
					want, wantOK := model[f][string(k)]
					if err != nil || ok != wantOK || string(v) != want {
						t.Fatalf("step %d (root of %d deltas): Get(%x) = %q, %v, %v; want %q, %v", step, len(sn.Root().Deltas), k, v, ok, err, want, wantOK)
					}
				}
				for _, f := range []shards.Family{fam, shardstest.Grouped} {
					_, k := modelKey(r.IntN(52))
					if f == shardstest.Grouped {
						_, k = modelKey(40 + r.IntN(12))
					}
					prefix := k[:r.IntN(len(k)+1)]
					var after []byte
					if r.IntN(2) == 0 {
						_, after = modelKey(r.IntN(52))
					}
					limit := r.IntN(6)
					recs, err := sn.Scan(ctx, f, prefix, after, limit)
					if err != nil {
						t.Fatal(err)
					}
					var got []string
					for _, rec := range recs {
						got = append(got, string(rec.Key)+"="+string(rec.Value))
					}
					if want := modelScan(model[f], prefix, after, limit); !slices.Equal(got, want) {
						t.Fatalf("step %d (root of %d deltas): Scan(%s, %x, after %x, %d) = %q, want %q", step, len(sn.Root().Deltas), f, prefix, after, limit, got, want)
					}
				}
			}
		})
	}
}

// TestFoldKeepsEveryValue: once a Store's commits leave more than
// MaxDeltaBytes of deltas, it folds them into the base in a commit of its
// own (with group commit, the leader runs it before the next batch), and
// every value, deletes included, reads the same afterwards. (Deltas past
// MaxDeltas by count alone are merged into one instead: TestMergeDeltas.)
func TestFoldKeepsEveryValue(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := open(t, b, shards.NewShardID(), head.Options{MaxDeltas: 4, MaxDeltaBytes: 1})
	// folded waits for the fold after the last batch to land (a command
	// sent before it starts would ride with it) and returns the root.
	folded := func() *roots.Root {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; {
			sn, err := s.Pin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(sn.Root().Deltas) == 0 {
				return sn.Root()
			}
			if time.Now().After(deadline) {
				t.Fatalf("no fold within 10 s: the root lists %d deltas", len(sn.Root().Deltas))
			}
			time.Sleep(time.Millisecond)
		}
	}
	want := map[int]string{}
	for i := range 4 {
		if _, err := s.Do(ctx, put(i, fmt.Sprint("a", i))); err != nil {
			t.Fatal(err)
		}
		want[i] = fmt.Sprint("a", i)
	}
	r := folded()
	if fr, ok := r.Family(fam); !ok || fr.Records != 4 {
		t.Fatalf("base of %s: %+v, %v; want the 4 folded records", fam, fr, ok)
	}
	if _, ok := r.Family(shards.System); !ok {
		t.Fatal("the genesis delta's schema record was not folded into the base")
	}
	if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) { return nil, tx.Delete(fam, key(2)) }}); err != nil {
		t.Fatal(err)
	}
	delete(want, 2)
	check := func(when string) {
		t.Helper()
		for i := range 5 {
			v, ok := get(t, s, i)
			if w, wok := want[i]; ok != wok || v != w {
				t.Fatalf("%s: key %d = %q, %v; want %q, %v", when, i, v, ok, w, wok)
			}
		}
	}
	check("the delete committed")
	if fr, ok := folded().Family(fam); !ok || fr.Records != 3 {
		t.Fatalf("base of %s after the delete's fold: %+v, %v; want 3 records", fam, fr, ok)
	}
	check("the delete folded")
}

// TestInlineFold: a commit whose root would list more than twice MaxDeltas
// deltas, or twice MaxDeltaBytes of them, on a root past the bounds,
// folds them, with its own changes, into the base itself. The deltas here
// come from another replica whose bounds are wider, which never folds.
func TestInlineFold(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	id := shards.NewShardID()
	wb, _ := mem.New(store, "")
	nb, _ := mem.New(store, "")
	wide := open(t, wb, id, head.Options{})
	narrow := open(t, nb, id, head.Options{MaxDeltas: 2, MaxDeltaBytes: 1})
	for i := range 4 {
		if _, err := wide.Do(ctx, put(i, "w")); err != nil {
			t.Fatal(err)
		}
	}
	sn, err := narrow.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sn.Root().Deltas); got != 5 {
		t.Fatalf("root lists %d deltas, want 5 (genesis and four puts)", got)
	}
	if _, err := narrow.Do(ctx, put(9, "n")); err != nil {
		t.Fatal(err)
	}
	sn, err = narrow.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sn.Root().Deltas); got != 0 {
		t.Fatalf("after the inline fold the root lists %d deltas, want 0", got)
	}
	if fr, ok := sn.Root().Family(fam); !ok || fr.Records != 5 {
		t.Fatalf("base of %s: %+v, %v; want 5 records", fam, fr, ok)
	}
	for _, i := range []int{0, 1, 2, 3, 9} {
		if _, ok := get(t, wide, i); !ok {
			t.Fatalf("key %d lost", i)
		}
	}
}
