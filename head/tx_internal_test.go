package head

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// TestTxScanAndLastSeePendingWrites: over random committed records and
// random pending puts and deletes of the batch and of the command (with
// room made for more keys now and then: Tx.Grow), Scan
// returns exactly the live records of a prefix in order, and Last the
// greatest of them, as a naive merge of the three layers computes them.
func TestTxScanAndLastSeePendingWrites(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{MaxDeltaBytes: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	r := rand.New(rand.NewPCG(7, 11))
	key := func() []byte {
		k := ruleKey(r.IntN(64))
		k[0] = byte(r.IntN(3)) // three prefixes
		return k
	}
	want := map[string][]byte{} // the committed records
	for range 4 {
		ruleDo(t, s, func(tx *Tx) error {
			for range 20 {
				k := key()
				if r.IntN(4) == 0 {
					delete(want, string(k))
					if err := tx.Delete(ruleFam, k); err != nil {
						return err
					}
					continue
				}
				v := []byte(fmt.Sprint(r.Int()))
				want[string(k)] = v
				if err := tx.Put(ruleFam, k, v); err != nil {
					return err
				}
			}
			return nil
		})
	}
	sn := rulePin(t, s)
	for round := range 50 {
		base, own := newBatchState(testSchema.Families), newBatchState(testSchema.Families)
		live := map[string][]byte{}
		for k, v := range want {
			live[k] = v
		}
		for _, st := range []*batchState{base, own} {
			for range r.IntN(40) {
				if r.IntN(8) == 0 { // room made at any point changes nothing
					st.grow(ruleFam, r.IntN(40))
				}
				k := key()
				if r.IntN(3) == 0 {
					st.del(ruleFam, k)
					delete(live, string(k))
				} else {
					v := []byte(fmt.Sprint(r.Int()))
					st.put(ruleFam, k, v)
					live[string(k)] = v
				}
			}
		}
		tx := &Tx{ctx: ctx, sn: sn, base: base, own: own}
		for p := range byte(4) {
			prefix := []byte{p}
			var exp []shards.Record
			for k, v := range live {
				if bytes.HasPrefix([]byte(k), prefix) {
					exp = append(exp, shards.Record{Key: []byte(k), Value: v})
				}
			}
			slices.SortFunc(exp, func(a, b shards.Record) int { return bytes.Compare(a.Key, b.Key) })
			got, err := tx.Scan(ruleFam, prefix, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(exp) {
				t.Fatalf("round %d prefix %d: Scan = %d records, want %d", round, p, len(got), len(exp))
			}
			last, ok, err := tx.Last(ruleFam, prefix)
			if err != nil {
				t.Fatal(err)
			}
			if ok != (len(exp) > 0) || (ok && fmt.Sprint(last) != fmt.Sprint(exp[len(exp)-1])) {
				t.Fatalf("round %d prefix %d: Last = %v %v, want the last of %d", round, p, last, ok, len(exp))
			}
			if len(exp) > 1 {
				after := exp[0].Key
				got, err := tx.Scan(ruleFam, prefix, after, 0)
				if err != nil || fmt.Sprint(got) != fmt.Sprint(exp[1:]) {
					t.Fatalf("round %d prefix %d: Scan after the first = %d records, %v; want %d", round, p, len(got), err, len(exp)-1)
				}
			}
		}
	}
}

// TestAbsorbAndFoldUnionMatchMerge: absorbing a command's changes into a
// batch (whichever holds more), and the union a fold applies (a batch's
// changes over the deltas'), give exactly the changes, in key order,
// that copying the older into a new batch and merging the newer on top
// does, over random puts and deletes of overlapping keys in two
// families.
func TestAbsorbAndFoldUnionMatchMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 5))
	fams := []shards.Family{shardstest.Fixed32, shardstest.Fixed32B}
	random := func(n int) *batchState {
		b := newBatchState(testSchema.Families)
		for range n {
			m := shards.Mutation{Key: ruleKey(r.IntN(96))}
			if r.IntN(3) == 0 {
				m.Delete = true
			} else {
				m.Value = []byte(fmt.Sprint(r.Int()))
			}
			b.set(fams[r.IntN(len(fams))], m)
		}
		return b
	}
	same := func(t *testing.T, got, want []shards.Mutation) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d changes, want %d", len(got), len(want))
		}
		for i := range got {
			if !bytes.Equal(got[i].Key, want[i].Key) || !bytes.Equal(got[i].Value, want[i].Value) || got[i].Delete != want[i].Delete {
				t.Fatalf("change %d: %x=%q (delete %v), want %x=%q (delete %v)", i,
					got[i].Key, got[i].Value, got[i].Delete, want[i].Key, want[i].Value, want[i].Delete)
			}
		}
	}
	for round := range 40 {
		older, newer := random(r.IntN(60)), random(r.IntN(60))
		if round%4 == 0 {
			older = newBatchState(testSchema.Families) // a group's first command
		}
		want := newBatchState(testSchema.Families)
		want.merge(older)
		want.merge(newer)

		u := foldUnion{state: newer, deltas: older}
		if len(older.muts) == 0 {
			u.deltas = nil
		}
		for _, f := range fams {
			same(t, u.sorted(f), want.sorted(f))
		}
		wantFams := slices.Sorted(maps.Keys(want.muts))
		if got := u.families(); !slices.Equal(got, wantFams) {
			t.Fatalf("families %v, want %v", got, wantFams)
		}

		older.absorb(newer)
		for _, f := range fams {
			same(t, older.sorted(f), want.sorted(f))
			for _, m := range want.sorted(f) {
				if got, ok := older.lookup(f, m.Key); !ok || !bytes.Equal(got.Value, m.Value) || got.Delete != m.Delete {
					t.Fatalf("lookup %x after absorb: %q, %v", m.Key, got.Value, ok)
				}
			}
		}
	}
}
