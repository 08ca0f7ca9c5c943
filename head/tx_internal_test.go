package head

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/shards"
)

// TestTxScanAndLastSeePendingWrites: over random committed records and
// random pending puts and deletes of the batch and of the command, Scan
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
