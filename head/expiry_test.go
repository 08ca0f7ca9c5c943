package head_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// dedupeShard returns the command_dedupe shard of request id under the
// zero namespace.
func dedupeShard(id string) uint8 {
	return shards.HashShardKey(shards.CommandDedupe, append(make([]byte, 16), id...))
}

// requestsIn returns n request ids beginning with prefix whose dedupe records
// land in shard idx.
func requestsIn(idx uint8, prefix string, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if id := prefix + strconv.Itoa(i); dedupeShard(id) == idx {
			out = append(out, id)
		}
	}
	return out
}

// counter is a command with a request id that adds one to key 0 and
// returns the new count.
func counter(id string) head.Command {
	return head.Command{RequestID: id, Digest: head.Digest([]byte(id)), Apply: func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(fam, key(0))
		if err != nil {
			return nil, err
		}
		n, _ := strconv.Atoi(string(v))
		out := []byte(strconv.Itoa(n + 1))
		return out, tx.Put(fam, key(0), out)
	}}
}

// TestDedupeRecordExpires: with every commit folding inline, a dedupe
// record survives folds within Options.DedupeWindow (an exact retry
// replays) and folds past the window that do not rewrite its shard; the
// first fold past the window that rewrites its shard drops it, and a
// retry of its request id then applies again.
func TestDedupeRecordExpires(t *testing.T) {
	ctx := context.Background()
	const window = 3
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{MaxDeltaBytes: 1, DedupeWindow: window})
	target := counter("target")
	first, err := s.Do(ctx, target)
	if err != nil || first.Replayed || string(first.Value) != "1" {
		t.Fatalf("first = %+v, %v", first, err)
	}
	retry := func(wantReplay bool, wantValue string) {
		t.Helper()
		r, err := s.Do(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if r.Replayed != wantReplay || string(r.Value) != wantValue {
			t.Fatalf("retry = %+v (value %q), want replayed %v with %q", r, r.Value, wantReplay, wantValue)
		}
	}
	idx := dedupeShard("target")
	same := requestsIn(idx, "same-", 4)
	// Within the window, folds that rewrite the record's shard keep it.
	for _, id := range same[:window] {
		if _, err := s.Do(ctx, counter(id)); err != nil {
			t.Fatal(err)
		}
		retry(true, "1")
	}
	// Past the window, folds of other shards leave it alone.
	for i := range 3 {
		if _, err := s.Do(ctx, put(100+i, "x")); err != nil {
			t.Fatal(err)
		}
		retry(true, "1")
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if age := sn.Sequence() - first.Sequence; age <= window {
		t.Fatalf("the record is %d commits old, want more than the window %d", age, window)
	}
	// The next fold of its shard drops it, and the retry applies again.
	if _, err := s.Do(ctx, counter(same[window])); err != nil {
		t.Fatal(err)
	}
	// The count was 1 + window + 1: the target and the other requests.
	retry(false, strconv.Itoa(window+3))
	// The fresh record it wrote replays.
	retry(true, strconv.Itoa(window+3))
}

// expiring is a test family whose values are a u64 deadline sequence and
// a payload: a record expires at a fold of sequence deadline or later.
// Its shard key is a key's first two bytes, so that keys share shards and
// a shard grows into pages.
const expiring shards.Family = 0x30

func expiringSchema(t testing.TB) head.Schema {
	t.Helper()
	spec := shards.FamilySpec{Family: expiring, Name: "expiring", Expire: func(_, v []byte, at shards.ExpiryClock) bool {
		return len(v) >= 8 && at.Sequence >= binary.BigEndian.Uint64(v)
	}, ShardKey: func(key []byte) ([]byte, error) {
		if len(key) < 2 {
			return nil, &shards.KeyError{Op: "expiring key", Reason: "shorter than 2 bytes"}
		}
		return key[:2], nil
	}}
	fams, err := shards.NewSchema(append(shardstest.Specs(), spec)...)
	if err != nil {
		t.Fatal(err)
	}
	return head.Schema{Marker: head.SchemaForTest.Marker, Families: fams}
}

// baseTable returns the table of family f in sn's base (nil if it has
// none), reading it straight from the bucket.
func baseTable(t testing.TB, s *head.Store, schema head.Schema, sn *head.Snapshot, f shards.Family) *roots.Table {
	t.Helper()
	fr, ok := sn.Root().Family(f)
	if !ok {
		return nil
	}
	body, _, err := s.Bucket().Get(context.Background(), s.Layout().Table(fr.Table.Hash))
	if err != nil {
		t.Fatal(err)
	}
	tab, err := roots.DecodeTable(schema.Families, body, fr.Table.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// rootPaged reports whether sn's base holds a paged shard of family f.
func rootPaged(t testing.TB, s *head.Store, schema head.Schema, sn *head.Snapshot, f shards.Family) bool {
	t.Helper()
	tab := baseTable(t, s, schema, sn, f)
	if tab == nil {
		return false
	}
	for _, e := range tab.Entries {
		if e.Index {
			return true
		}
	}
	return false
}

func expiringValue(deadline uint64, payload string) []byte {
	return append(binary.BigEndian.AppendUint64(nil, deadline), payload...)
}

// TestExpiryInFolds drives one family's rule through folds at known
// sequences: one replica writes (its bounds never fold here), another
// folds inline with each of its commits (MaxDeltas 1), which put a key of
// another family. A record already expired when its delta is folded is
// never written; a record not yet expired survives; an expired record in
// a shard no fold rewrites stays readable until a fold rewrites that
// shard; a record a later delta overwrote is judged by its new value,
// both ways (a fresh value survives, an expired one does not bring back
// the old).
func TestExpiryInFolds(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	id := shards.NewShardID()
	schema := expiringSchema(t)
	openOn := func(opts head.Options) *head.Store {
		b, _ := mem.New(store, "")
		opts.Check = true
		s, err := head.Open(ctx, b, id, schema, opts)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writer, folder := openOn(head.Options{}), openOn(head.Options{MaxDeltas: 1, MaxDeltaBytes: 1})
	do := func(s *head.Store, f func(tx *head.Tx) error) uint64 {
		t.Helper()
		r, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) { return nil, f(tx) }})
		if err != nil {
			t.Fatal(err)
		}
		return r.Sequence
	}
	putv := func(k []byte, deadline uint64, payload string) uint64 {
		t.Helper()
		return do(writer, func(tx *head.Tx) error { return tx.Put(expiring, k, expiringValue(deadline, payload)) })
	}
	fold := func() uint64 {
		t.Helper()
		// The folder's commit folds inline when its root would list more
		// than twice its MaxDeltas: the parent must list at least two.
		for {
			sn, err := writer.Pin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(sn.Root().Deltas) >= 2 {
				break
			}
			do(writer, func(tx *head.Tx) error { return tx.Put(fam, key(int(sn.Sequence())), []byte("pad")) })
		}
		var seq uint64
		seq = do(folder, func(tx *head.Tx) error { return tx.Put(fam, key(int(seq)), []byte("pad")) })
		sn, err := folder.Pin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(sn.Root().Deltas); n != 0 || sn.Sequence() != seq {
			t.Fatalf("the fold commit %d left a root of sequence %d listing %d deltas", seq, sn.Sequence(), n)
		}
		return seq
	}
	want := func(k []byte, payload string) {
		t.Helper()
		sn, err := writer.Pin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		v, ok, err := sn.Get(ctx, expiring, k)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if ok {
			got = string(v[8:])
		}
		if got != payload {
			t.Fatalf("at sequence %d, key %q = %q (present %v), want %q", sn.Sequence(), k, got, ok, payload)
		}
	}
	var (
		kDead    = []byte("dead-on-arrival")
		kLive    = []byte("long-lived")
		kRefresh = []byte("refreshed")
		kStale   = []byte("overwritten-stale")
		kIdle    = []byte("idle-shard")
	)
	idle := shards.HashShardKey(expiring, kIdle[:2])
	for _, k := range [][]byte{kDead, kLive, kRefresh, kStale} {
		if shards.HashShardKey(expiring, k[:2]) == idle {
			t.Fatalf("test key %q shares a shard with %q", k, kIdle)
		}
	}
	const far = 1 << 40
	seq := putv(kDead, 1, "dead") // the first commit: sequence 2, after the genesis
	putv(kLive, far, "live")
	putv(kRefresh, seq+6, "old")
	putv(kStale, far, "base")
	putv(kIdle, seq+6, "idle")
	want(kDead, "dead") // reads never ask the rule
	if f := fold(); f != seq+5 {
		t.Fatalf("first fold at %d, want %d", f, seq+5)
	}
	want(kDead, "")
	want(kLive, "live")
	want(kRefresh, "old")
	want(kIdle, "idle")
	putv(kRefresh, far, "fresh") // replaces a value that expires before the next fold
	putv(kStale, 1, "expired")   // replaces a live base value with an expired one
	if f := fold(); f != seq+8 {
		t.Fatalf("second fold at %d, want %d", f, seq+8)
	}
	want(kRefresh, "fresh")
	want(kStale, "")
	want(kLive, "live")
	want(kIdle, "idle")         // expired, but no fold rewrote its shard
	k := []byte("id-neighbour") // in kIdle's shard
	putv(k, far, "same-shard")
	fold()
	want(kIdle, "")
	want(k, "same-shard")
	want(kLive, "live")
}

// TestExpiryMatchesModel: random puts of values with random deadlines,
// overwrites and deletes, committed by two replicas with small pages
// (PageBytes 256, and the keys share a few shards, so shards are paged)
// and small fold bounds, are compared after every commit with a map: a
// key whose model value has not expired reads exactly that value; one
// whose value has expired reads that value or nothing, never an older
// one. Every commit is checked strictly. The run must see expired records
// dropped and paged shards.
func TestExpiryMatchesModel(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			ctx := context.Background()
			r := rand.New(rand.NewPCG(seed, 91))
			store := mem.NewStore()
			id := shards.NewShardID()
			schema := expiringSchema(t)
			var replicas []*head.Store
			for i := range 2 {
				b, _ := mem.New(store, "")
				// The second replica folds into the base only, so that
				// the base grows paged shards; the first also merges.
				opts := head.Options{Check: true, NoGroupCommit: i == 1, PageBytes: 256, MaxDeltas: 1 + r.IntN(4), MaxDeltaBytes: int64(200 + r.IntN(1000))}
				if i == 1 {
					opts.MergeBytes = -1
				}
				s, err := head.Open(ctx, b, id, schema, opts)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				replicas = append(replicas, s)
			}
			type val struct {
				deadline uint64
				payload  string
			}
			model := map[string]val{}
			k := func(i int) []byte { return []byte(fmt.Sprintf("%02d%03d", i%3, i)) }
			dropped, paged := 0, false
			for step := range 150 {
				s := replicas[r.IntN(len(replicas))]
				var seq int64 = 1
				if sn, err := s.Pin(ctx); err == nil {
					seq = int64(sn.Sequence()) + 1
				}
				type op struct {
					i   int
					del bool
					v   val
				}
				var ops []op
				for range 1 + r.IntN(5) {
					// Deadlines from already passed to far ahead.
					ops = append(ops, op{i: r.IntN(60), del: r.IntN(5) == 0, v: val{deadline: uint64(max(0, seq-3+int64(r.IntN(30)))), payload: fmt.Sprintf("v%d.%d", step, r.IntN(100))}})
				}
				_, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
					for _, o := range ops {
						var err error
						if o.del {
							err = tx.Delete(expiring, k(o.i))
						} else {
							err = tx.Put(expiring, k(o.i), expiringValue(o.v.deadline, o.v.payload))
						}
						if err != nil {
							return nil, err
						}
					}
					return nil, nil
				}})
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for _, o := range ops {
					if o.del {
						delete(model, string(k(o.i)))
					} else {
						model[string(k(o.i))] = o.v
					}
				}
				sn, err := replicas[r.IntN(len(replicas))].Pin(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for i := range 60 {
					v, ok, err := sn.Get(ctx, expiring, k(i))
					if err != nil {
						t.Fatal(err)
					}
					w, wok := model[string(k(i))]
					got := ""
					if ok {
						got = string(v[8:])
					}
					switch {
					case wok && sn.Sequence() < w.deadline:
						if got != w.payload {
							t.Fatalf("step %d, sequence %d: live key %d = %q (present %v), want %q (deadline %d)", step, sn.Sequence(), i, got, ok, w.payload, w.deadline)
						}
					case wok:
						if !ok {
							dropped++
						}
						if ok && got != w.payload {
							t.Fatalf("step %d, sequence %d: expired key %d = %q, want %q or nothing", step, sn.Sequence(), i, got, w.payload)
						}
					default:
						if ok {
							t.Fatalf("step %d: deleted key %d = %q", step, i, got)
						}
					}
				}
				paged = paged || rootPaged(t, replicas[0], schema, sn, expiring)
			}
			if dropped == 0 || !paged {
				t.Fatalf("the run saw %d reads of dropped records, paged shards %v: it tested nothing", dropped, paged)
			}
		})
	}
}

// shardPages returns how many pages sn's base holds in shard idx of
// family f (1 for a leaf, 0 for no shard), reading the table and the
// index straight from the bucket.
func shardPages(t testing.TB, s *head.Store, schema head.Schema, sn *head.Snapshot, f shards.Family, idx uint8) int {
	t.Helper()
	tab := baseTable(t, s, schema, sn, f)
	if tab == nil {
		return 0
	}
	for _, e := range tab.Entries {
		if e.Shard != idx {
			continue
		}
		if !e.Index {
			return 1
		}
		ib := []byte(e.Inline)
		if len(ib) == 0 {
			var err error
			if ib, _, err = s.Bucket().Get(context.Background(), s.Layout().Index(f, idx, e.Ref.Hash)); err != nil {
				t.Fatal(err)
			}
		}
		x, err := shards.DecodeIndex(schema.Families, ib, e.Ref.Hash, f, idx)
		if err != nil {
			t.Fatal(err)
		}
		return x.Len()
	}
	return 0
}

// TestExpiredFrontPagesDropped: a shard keyed by increasing ids, whose
// records expire some commits after they are written, gains records at
// its end and loses them at its front, where no change ever lands. Folds
// drop its leading pages once all their records have expired, so its
// pages stay near what its live records fill instead of growing with
// every record ever written, and every live record stays readable.
func TestExpiredFrontPagesDropped(t *testing.T) {
	ctx := context.Background()
	schema := expiringSchema(t)
	s, err := head.Open(ctx, mem.NewBucket(), shards.NewShardID(), schema,
		head.Options{Check: true, PageBytes: 256, MaxDeltas: 1, MaxDeltaBytes: 1, MergeBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const (
		commits = 300
		life    = 20 // commits a record lives
	)
	k := func(i int) []byte { return []byte(fmt.Sprintf("aa%06d", i)) }
	idx := shards.HashShardKey(expiring, []byte("aa"))
	var sn *head.Snapshot
	most := 0
	for i := range commits {
		r, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
			return nil, tx.Put(expiring, k(i), expiringValue(tx.Sequence()+life, fmt.Sprintf("payload %03d of forty bytes or so", i)))
		}})
		if err != nil {
			t.Fatal(err)
		}
		if sn, err = s.Pin(ctx); err != nil {
			t.Fatal(err)
		}
		// Every record younger than its life is read back.
		for j := max(0, i-life+2); j <= i; j++ {
			if _, ok, err := sn.Get(ctx, expiring, k(j)); err != nil || !ok {
				t.Fatalf("commit %d (sequence %d): live record %d present %v, %v", i, r.Sequence, j, ok, err)
			}
		}
		if i > commits/2 {
			most = max(most, shardPages(t, s, schema, sn, expiring, idx))
		}
	}
	// About 60 bytes a record, 20 live ones in pages of 256 bytes: 5 to
	// 10 pages, and a few expired pages not yet dropped. Without the
	// front drops, 300 records fill over 70.
	if most == 0 || most > 20 {
		t.Fatalf("the shard held up to %d pages in its second half", most)
	}
	if _, ok, err := sn.Get(ctx, expiring, k(0)); err != nil || ok {
		t.Fatalf("the first record, long expired, present %v, %v", ok, err)
	}
	t.Logf("at most %d pages", most)
}
