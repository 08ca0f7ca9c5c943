package head_test

// Request-count tests: how many bucket requests, and how many sequential
// round trips, the engine's reads and commits cost. They count requests
// with bucket/counting and, where the kind of object matters, with
// rqRecorder, which logs every call with its key. They are correctness
// tests of counts, never timing tests; docs/performance.md turns the same
// counts into figures with the benchmarks of bench_test.go.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// TestRequestsWarmPointRead: once a replica has read a key, reading it again
// at an unchanged head costs exactly one request, the head's GET, in one
// round: the head names the same version, so everything decoded before is
// reused.
func TestRequestsWarmPointRead(t *testing.T) {
	store := mem.NewStore()
	id := shards.NewShardID()
	w := newRQReplica(t, store, id, head.Options{})
	rqFill(t, w.s, rqFamilies[:1], 1000)
	r := newRQReplica(t, store, id, head.Options{})
	f := rqFamilies[0]
	rqMustGet(t, rqPin(t, r.s), f, 7, rqValue(f, 7, 0)) // warm
	for range 3 {
		r.reset()
		sn := rqPin(t, r.s)
		rqMustGet(t, sn, f, 7, rqValue(f, 7, 0))
		st := r.cb.Snapshot()
		calls := r.rec.take()
		if st.Total().Requests != 1 || st.Rounds != 1 || len(calls) != 1 ||
			calls[0].Op != "get" || calls[0].Key != r.s.Layout().Head() {
			t.Fatalf("warm point read: %d requests in %d rounds, want 1 in 1 (the head); calls %v", st.Total().Requests, st.Rounds, calls)
		}
	}
	// Reading other keys of the already loaded shard through the same
	// snapshot costs nothing more.
	r.reset()
	sn := rqPin(t, r.s)
	idx := rqShardOf(t, f, rqKey(f, 7))
	for i := range 1000 {
		if rqShardOf(t, f, rqKey(f, i)) == idx {
			rqMustGet(t, sn, f, i, rqValue(f, i, 0))
		}
	}
	if got := r.cb.Snapshot().Total().Requests; got != 1 {
		t.Fatalf("point reads of one loaded shard through one pin took %d requests, want 1", got)
	}
}

// TestRequestsColdPointRead: a new process pays for what it has not
// decoded yet, one round at a time, since each object names the next.
//
//   - head.Open does no I/O.
//   - The first point read pins (head, then the root it names) and reads
//     the table and the shard (and the root's delta segments, beside the
//     table); the schema gate's system record is read beside them, in the
//     same rounds: from nothing to the first value in 4 sequential hops.
//   - If another replica committed between a process's reads, the root is
//     new too, and lists that commit's delta segment: head + root + (table
//     and delta together) + shard, 5 requests in 4 rounds. This is the
//     cold point read proper: nothing cached that the read needs.
func TestRequestsColdPointRead(t *testing.T) {
	store := mem.NewStore()
	id := shards.NewShardID()
	w := newRQReplica(t, store, id, head.Options{InlineBytes: -1})
	rqFillWith(t, w.s, rqFamilies, 1000, head.Options{InlineBytes: -1}) // every shard an object of its own
	f := rqFamilies[1]
	layout := shards.NewLayout(head.SchemaForTest.Families, id)

	// A new process: every request from Open on is counted. Each request
	// takes a little while, so that requests sent together overlap.
	mb, _ := mem.New(store, "")
	rec := &rqRecorder{Bucket: latency.New(mb, latency.Options{PerRequest: 3 * time.Millisecond})}
	cb := counting.New(rec)
	r, err := head.Open(context.Background(), cb, id, head.SchemaForTest, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if st := cb.Snapshot(); st.Total().Requests != 0 {
		t.Fatalf("Open made %d requests, want none", st.Total().Requests)
	}
	rqMustGet(t, rqPin(t, r), f, 3, rqValue(f, 3, 0))
	st, calls := cb.Snapshot(), rec.take()
	got := rqSeq(calls)
	if !slices.Equal(got[:2], []string{"get head", "get root"}) {
		t.Fatalf("first read began %v, want the head, then the root", got)
	}
	rest := slices.Clone(got[2:])
	slices.Sort(rest)
	if want := []string{"get shard", "get shard", "get table", "get table"}; !slices.Equal(rest, want) ||
		st.Total().Requests != 6 || st.Rounds > 4 {
		t.Fatalf("first read of a new process: %d requests in %d rounds %v, want 6 in at most 4 rounds", st.Total().Requests, st.Rounds, got)
	}
	system := 0
	for _, c := range calls {
		if strings.Contains(c.Key, "/objects/system/") {
			system++
		}
	}
	if system != 1 {
		t.Fatalf("first read fetched %d system shards, want the one holding the schema record: %v", system, got)
	}
	t.Logf("first read of a new process: %d requests in %d rounds (Open: none)", st.Total().Requests, st.Rounds)

	// Later reads of the same process: the gate has passed.
	cb.Reset()
	rqMustGet(t, rqPin(t, r), f, 4, rqValue(f, 4, 0))
	if st := cb.Snapshot(); st.Total().Requests > 3 {
		t.Fatalf("second read: %d requests, want at most head, table and shard", st.Total().Requests)
	}
	rec.take()

	// Another new process; the head moves (a commit to another family,
	// which the root lists as a delta segment) between its Open and its
	// first read. The read fetches the family's table and the delta
	// together (the gate holds both until both are in flight), then the
	// shard.
	r2 := newRQReplica(t, store, id, head.Options{})
	rqMustGet(t, rqPin(t, r2.s), rqFamilies[2], 1, rqValue(rqFamilies[2], 1, 0))
	if _, err := w.s.Do(context.Background(), rqPut(rqFamilies[2], 5, 1)); err != nil {
		t.Fatal(err)
	}
	r2.reset()
	gate := newRQGate(2)
	r2.rec.getGate = gate
	sn := rqPin(t, r2.s)
	rqMustGet(t, sn, f, 3, rqValue(f, 3, 0))
	r2.rec.getGate = nil
	st, calls = r2.cb.Snapshot(), r2.rec.take()
	if arrived, timedOut := gate.result(); arrived != 2 || timedOut {
		t.Fatalf("%d of the table and delta GETs reached the gate, timed out %v: want both sent together", arrived, timedOut)
	}
	if got := rqKinds(calls); fmt.Sprint(got) != fmt.Sprint(map[string]int{"get head": 1, "get root": 1, "get table": 1, "get delta": 1, "get shard": 1}) ||
		st.Total().Requests != 5 || st.Rounds != 4 {
		t.Fatalf("cold point read: %d requests in %d rounds %v, want head, root, table + delta, shard in 4 rounds", st.Total().Requests, st.Rounds, got)
	}
	if len(sn.Root().Deltas) != 1 {
		t.Fatalf("the root lists %d deltas, want 1", len(sn.Root().Deltas))
	}
	tab := rqExpectTable(t, mb, sn, layout, f)
	wantKeys := []string{
		"get " + layout.Head(),
		"get " + layout.Root(sn.RootHash()),
		"get " + layout.Table(mustFamily(t, sn, f).Table.Hash),
		"get " + layout.Delta(sn.Root().Deltas[0].Ref.Hash),
		"get " + rqShardKey(t, tab, layout, f, rqShardOf(t, f, rqKey(f, 3))),
	}
	sort.Strings(wantKeys)
	if got := rqKeys(calls); !slices.Equal(got, wantKeys) {
		t.Fatalf("cold read fetched\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantKeys, "\n"))
	}
}

// TestRequestsColdPointReadInline: with the engine's defaults, shards
// within Options.InlineBytes travel in their table, so the first read of
// a new process is the head, the root and the tables (the family's and
// the gate's system table) in 3 rounds; and a paged shard whose index is
// inline costs its page only.
func TestRequestsColdPointReadInline(t *testing.T) {
	store := mem.NewStore()
	id := shards.NewShardID()
	w := newRQReplica(t, store, id, head.Options{})
	rqFill(t, w.s, rqFamilies, 1000)
	f := rqFamilies[1]

	r := newRQCold(t, store, id)
	rqMustGet(t, rqPin(t, r.s), f, 3, rqValue(f, 3, 0))
	st, calls := r.cb.Snapshot(), r.rec.take()
	if got := rqKinds(calls); fmt.Sprint(got) != fmt.Sprint(map[string]int{"get head": 1, "get root": 1, "get table": 2}) || st.Rounds != 3 {
		t.Fatalf("first read of a new process: %v in %d rounds, want head, root and two tables in 3", got, st.Rounds)
	}

	// One shard grown past PageBytes: its index is inline, its pages are
	// objects. A cold read of it is head, root, table, page.
	big := newRQReplica(t, store, id, head.Options{PageBytes: 256, MaxDeltaBytes: 1})
	idx := rqShardOf(t, f, rqKey(f, 3))
	var keys []int
	for i := 1000; len(keys) < 40; i++ {
		if rqShardOf(t, f, rqKey(f, i)) == idx {
			keys = append(keys, i)
		}
	}
	if _, err := big.s.Do(context.Background(), head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		for _, i := range keys {
			if err := tx.Put(f, rqKey(f, i), rqValue(f, i, 0)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	cold := newRQCold(t, store, id)
	sn := rqPin(t, cold.s)
	mb, _ := mem.New(store, "")
	tab := rqExpectTable(t, mb, sn, shards.NewLayout(head.SchemaForTest.Families, id), f)
	if e, ok := tab.Entry(idx); !ok || !e.Index || e.Inline == "" {
		t.Fatalf("shard %02x: entry %+v, want an inline page index", idx, e)
	}
	// A first read of another shard loads the tables (and passes the
	// schema gate); then the paged shard's read fetches its page alone.
	other := 0
	for rqShardOf(t, f, rqKey(f, other)) == idx {
		other++
	}
	rqMustGet(t, sn, f, other, rqValue(f, other, 0))
	cold.reset()
	rqMustGet(t, sn, f, keys[len(keys)-1], rqValue(f, keys[len(keys)-1], 0))
	if got := rqKinds(cold.rec.take()); fmt.Sprint(got) != fmt.Sprint(map[string]int{"get shard": 1}) {
		t.Fatalf("read of a paged shard with its table cached: %v, want the page alone", got)
	}
}

// TestRequestsPrefetch: Prefetch loads the tables of several families in
// one round and the shards it names in a second, after which reads of
// them cost no request.
func TestRequestsPrefetch(t *testing.T) {
	store := mem.NewStore()
	id := shards.NewShardID()
	w := newRQReplica(t, store, id, head.Options{InlineBytes: -1})
	rqFillWith(t, w.s, rqFamilies, 1000, head.Options{InlineBytes: -1}) // every shard an object of its own
	mb, _ := mem.New(store, "")
	cb := counting.New(latency.New(mb, latency.Options{PerRequest: 20 * time.Millisecond}))
	r, err := head.Open(context.Background(), cb, id, head.SchemaForTest, head.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	sn := rqPin(t, r)
	var refs []head.ShardRef
	for i, f := range rqFamilies[:2] {
		ref, err := sn.ShardOf(f, rqKey(f, i))
		if err != nil {
			t.Fatal(err)
		}
		refs = append(refs, ref)
	}
	if err := sn.Prefetch(ctx, rqFamilies[2:], refs); err != nil {
		t.Fatal(err)
	}
	// Reads of the prefetched shards cost no request of their own; they
	// also wait for the schema gate, which runs beside the first pin, so
	// the counts below include its two requests whatever the scheduling.
	for i, f := range rqFamilies[:2] {
		rqMustGet(t, sn, f, i, rqValue(f, i, 0))
	}
	st := cb.Snapshot()
	t.Logf("pin, prefetch of %d tables and %d shards, reads: %d requests in %d rounds", len(rqFamilies), len(refs), st.Total().Requests, st.Rounds)
	// head, root; the tables (and the gate's system table); the shards
	// (and the gate's system shard); nothing for the reads.
	if want := int64(2 + len(rqFamilies) + len(refs)); st.Rounds > 4 || st.Total().Requests != want+2 {
		t.Fatalf("pin, prefetch and reads: %d requests in %d rounds, want %d (+2 for the gate) in at most 4", st.Total().Requests, st.Rounds, want)
	}
}

func mustFamily(t testing.TB, sn *head.Snapshot, f shards.Family) roots.FamilyRef {
	t.Helper()
	fr, ok := sn.Root().Family(f)
	if !ok {
		t.Fatalf("root has no %s", f)
	}
	return fr
}

// rqSeq lists the calls' "op kind" in order.
func rqSeq(calls []rqCall) []string {
	var s []string
	for _, c := range calls {
		s = append(s, c.Op+" "+c.Kind)
	}
	return s
}

// TestRequestsCatchUpFetchesOnlyChanges: a replica that has read
// everything, after another replica commits, fetches the head, the new
// root and the commit's delta segment, and nothing else: the base's
// tables and shards did not change.
func TestRequestsCatchUpFetchesOnlyChanges(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	id := shards.NewShardID()
	layout := shards.NewLayout(head.SchemaForTest.Families, id)
	w := newRQReplica(t, store, id, head.Options{})
	const n = 2000 // every family's 256 shards are non-empty
	rqFill(t, w.s, rqFamilies, n)
	r := newRQReplica(t, store, id, head.Options{})
	readAll := func(sn *head.Snapshot) map[shards.Family][]shards.Record {
		out := map[shards.Family][]shards.Record{}
		for _, f := range rqFamilies {
			recs, err := sn.Scan(ctx, f, nil, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != n {
				t.Fatalf("%s has %d records, want %d", f, len(recs), n)
			}
			out[f] = recs
		}
		return out
	}
	sn := rqPin(t, r.s)
	for _, f := range rqFamilies {
		if fr := mustFamily(t, sn, f); fr.Shards != shards.Shards {
			t.Fatalf("%s has %d non-empty shards, want %d", f, fr.Shards, shards.Shards)
		}
	}
	readAll(sn) // warm every shard of every family

	// One key changes.
	f := rqFamilies[0]
	if _, err := w.s.Do(ctx, rqPut(f, 42, 1)); err != nil {
		t.Fatal(err)
	}
	r.reset()
	sn = rqPin(t, r.s)
	rqMustGet(t, sn, f, 42, rqValue(f, 42, 1))
	st, calls := r.cb.Snapshot(), r.rec.take()
	want := []string{
		"get " + layout.Head(),
		"get " + layout.Root(sn.RootHash()),
		"get " + layout.Delta(sn.Root().Deltas[0].Ref.Hash),
	}
	sort.Strings(want)
	if got := rqKeys(calls); !slices.Equal(got, want) || st.Rounds != 3 || st.Get.Requests != 3 || st.Total().Requests != 3 {
		t.Fatalf("catch-up point read after a one-key commit: %d requests (%d GETs) in %d rounds, fetched\n%s\nwant\n%s",
			st.Total().Requests, st.Get.Requests, st.Rounds, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// Everything else, read through the same snapshot, is already here.
	r.reset()
	readAll(sn)
	if got := r.cb.Snapshot().Total().Requests; got != 0 {
		t.Fatalf("reading every record of %d families after catching up took %d more requests: %v", len(rqFamilies), got, r.rec.take())
	}

	// One commit changes two shards of one family and one of another.
	f2 := rqFamilies[1]
	a, b := 1, 2
	for rqShardOf(t, f, rqKey(f, b)) == rqShardOf(t, f, rqKey(f, a)) {
		b++
	}
	if _, err := w.s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		for _, m := range []struct {
			f shards.Family
			i int
		}{{f, a}, {f, b}, {f2, 9}} {
			if err := tx.Put(m.f, rqKey(m.f, m.i), rqValue(m.f, m.i, 2)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	r.reset()
	sn = rqPin(t, r.s)
	all := readAll(sn)
	st, calls = r.cb.Snapshot(), r.rec.take()
	if st.Get.Requests != 3 || st.Total().Requests != 3 {
		t.Fatalf("reading everything after a three-shard commit took %d requests (%d GETs), want 3 GETs", st.Total().Requests, st.Get.Requests)
	}
	want = []string{
		"get " + layout.Head(),
		"get " + layout.Root(sn.RootHash()),
		"get " + layout.Delta(sn.Root().Deltas[0].Ref.Hash),
	}
	sort.Strings(want)
	if got := rqKeys(calls); !slices.Equal(got, want) {
		t.Fatalf("reading everything after a three-shard commit fetched\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	changed := 0
	for _, fam := range rqFamilies {
		for _, rec := range all[fam] {
			if binary.BigEndian.Uint32(rec.Value[:4])&0xffffff == 2 {
				changed++
			}
		}
	}
	if changed != 3 {
		t.Fatalf("the replica sees %d changed records, want 3", changed)
	}
}

// TestRequestsSmallCommit: a one-key commit by a warm writer pins (the
// head's GET), writes its delta segment and root together in one round,
// then the head with one conditional put: 1 GET and 2 + 1 PUTs in 3
// rounds, the PUTs in exactly 2 of them. However many keys and families
// the commit changes, and whether a dedupe record joins them, it stages
// one delta and one root. The gate in the recorder
// holds the staging writes until all of them are in flight, so the test
// fails if they were sent one after another.
func TestRequestsSmallCommit(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		opts    head.Options
		cmd     func(i int) head.Command
		staging map[string]int // staging puts by kind
	}{
		{"one key", head.Options{}, func(i int) head.Command { return rqPut(rqFamilies[0], i, 1) },
			map[string]int{"delta": 1, "root": 1}},
		{"one key without group commit", head.Options{NoGroupCommit: true}, func(i int) head.Command { return rqPut(rqFamilies[0], i, 1) },
			map[string]int{"delta": 1, "root": 1}},
		// A request id adds the command_dedupe record to the same delta.
		{"one key with request id", head.Options{}, func(i int) head.Command {
			c := rqPut(rqFamilies[0], i, 1)
			c.RequestID = fmt.Sprintf("req-%d", i)
			c.Digest = head.Digest([]byte(c.RequestID))
			return c
		}, map[string]int{"delta": 1, "root": 1}},
		{"three keys in two families", head.Options{}, func(i int) head.Command {
			return head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
				for _, k := range []struct {
					f shards.Family
					i int
				}{{rqFamilies[0], i}, {rqFamilies[0], i + 1}, {rqFamilies[1], i}} {
					if err := tx.Put(k.f, rqKey(k.f, k.i), rqValue(k.f, k.i, 1)); err != nil {
						return nil, err
					}
				}
				return nil, nil
			}}
		}, map[string]int{"delta": 1, "root": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := mem.NewStore()
			id := shards.NewShardID()
			w := newRQReplica(t, store, id, tc.opts)
			rqFill(t, w.s, rqFamilies[:2], 1000)
			// Warm the writer on the keys it will change, with a first
			// commit of the same shape.
			if _, err := w.s.Do(ctx, tc.cmd(100)); err != nil {
				t.Fatal(err)
			}
			staging := tc.staging
			const i = 200
			n := staging["delta"] + staging["root"]
			gate := newRQGate(n)
			w.rec.setGate(gate)
			w.reset()
			before := rqPin(t, w.s).Sequence()
			w.reset()
			res, err := w.s.Do(ctx, tc.cmd(i))
			if err != nil {
				t.Fatal(err)
			}
			w.rec.setGate(nil)
			st, calls := w.cb.Snapshot(), w.rec.take()
			if arrived, timedOut := gate.result(); arrived != n || timedOut {
				t.Fatalf("%d staging writes reached the gate, timed out %v: want %d sent concurrently", arrived, timedOut, n)
			}
			if res.Sequence != before+1 {
				t.Fatalf("commit sequence %d, want %d", res.Sequence, before+1)
			}
			got := rqKinds(calls)
			want := map[string]int{"get head": 1, "put head": 1}
			for k, v := range staging {
				want["put "+k] = v
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("commit requests %v, want %v; calls:\n%v", got, want, calls)
			}
			// In order: the pin, then every staging put, then the head.
			if calls[0].Op != "get" || calls[0].Kind != "head" {
				t.Fatalf("first request %v, want the head's GET", calls[0])
			}
			last := calls[len(calls)-1]
			if last.Op != "put" || last.Kind != "head" || !last.Cond {
				t.Fatalf("last request %v, want the conditional head PUT", last)
			}
			for _, c := range calls[1 : len(calls)-1] {
				if c.Op != "put" || c.Cond || c.Kind == "head" {
					t.Fatalf("staging request %v, want an unconditional put of an immutable object", c)
				}
			}
			if st.Put.Requests != int64(n+1) || st.Get.Requests != 1 || st.Total().Requests != int64(n+2) {
				t.Fatalf("counting: %+v", st)
			}
			if st.Rounds != 3 || st.MaxInFlight != int64(n) {
				t.Fatalf("commit took %d rounds with at most %d in flight, want 3 rounds (pin, staging, CAS) with %d in flight",
					st.Rounds, st.MaxInFlight, n)
			}
			if err := head.Check(ctx, w.rec.Bucket, w.s.Layout(), rqPin(t, w.s).RootHash(), head.CheckOptions{Strict: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRequestsBulkCommit: one command putting 100,000 records of one family
// commits as one sequence increment, straight into the base, and every
// record reads back.
func TestRequestsBulkCommit(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	id := shards.NewShardID()
	w := newRQReplica(t, store, id, head.Options{})
	before := rqPin(t, w.s).Sequence()
	f := rqFamilies[0]
	const n = 100_000
	w.reset()
	start := time.Now()
	res, err := w.s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		for i := range n {
			if err := tx.Put(f, rqKey(f, i), rqValue(f, i, 0)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	st, calls := w.cb.Snapshot(), w.rec.take()
	if res.Sequence != before+1 {
		t.Fatalf("bulk commit landed at sequence %d, want %d", res.Sequence, before+1)
	}
	// The records would make a delta of several MB, over twice
	// MaxDeltaBytes: the commit folds inline, writing the family's 256
	// shards and its table, and with them the genesis delta's schema
	// record into the system family's shard and table. A shard of
	// about 390 records (18.8 KB) is over the default PageBytes (16 KiB),
	// so it is written as the fewest pages within the bound plus a page
	// index, which the table carries inline (a 2-page index is far within
	// InlineBytes); the few shards within the bound stay one object, and
	// the system family's one small shard travels inline in its table.
	const pageBytes = 16 << 10
	perShard := map[uint8]int64{}
	for i := range n {
		perShard[rqShardOf(t, f, rqKey(f, i))]++
	}
	var leaves, indexes, pages int
	for _, k := range perShard {
		const header, record = 27, 8 + 32 + 8
		if size := header + k*record; size <= pageBytes {
			leaves++
		} else {
			indexes++
			pages += int((k*record + pageBytes - header - 1) / (pageBytes - header))
		}
	}
	kinds := rqKinds(calls)
	want := map[string]int{"get head": 1, "put shard": leaves + pages, "put table": 2, "put root": 1, "put head": 1}
	if indexes == 0 {
		t.Fatal("no shard is paged; the test no longer covers inline indexes")
	}
	if fmt.Sprint(kinds) != fmt.Sprint(want) {
		t.Fatalf("bulk commit requests %v, want %v", kinds, want)
	}
	t.Logf("bulk commit of %d records: %v, %d requests (at most %d in flight), %d bytes written", n, took, st.Total().Requests, st.MaxInFlight, st.Put.BytesWritten)

	// A replica in a new process reads it back.
	r := newRQReplica(t, store, id, head.Options{})
	sn := rqPin(t, r.s)
	if sn.Sequence() != before+1 {
		t.Fatalf("replica sees sequence %d, want %d", sn.Sequence(), before+1)
	}
	if fr := mustFamily(t, sn, f); fr.Records != n || fr.Shards != shards.Shards {
		t.Fatalf("root says %d records in %d shards, want %d in %d", fr.Records, fr.Shards, n, shards.Shards)
	}
	for i := 0; i < n; i += 997 {
		rqMustGet(t, sn, f, i, rqValue(f, i, 0))
	}
	rqMustGet(t, sn, f, n-1, rqValue(f, n-1, 0))
	if _, ok, err := sn.Get(ctx, f, rqKey(f, n)); err != nil || ok {
		t.Fatalf("record %d exists: %v, %v", n, ok, err)
	}
	recs, err := sn.Scan(ctx, f, nil, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("scan returns %d records, want %d", len(recs), n)
	}
	seen := make([]bool, n)
	for j, rec := range recs {
		if j > 0 && bytes.Compare(recs[j-1].Key, rec.Key) >= 0 {
			t.Fatalf("scan out of order at %d", j)
		}
		i := int(binary.BigEndian.Uint64(rec.Key[24:]))
		if i >= n || seen[i] || !bytes.Equal(rec.Key, rqKey(f, i)) || !bytes.Equal(rec.Value, rqValue(f, i, 0)) {
			t.Fatalf("scan record %d: %x = %x", j, rec.Key, rec.Value)
		}
		seen[i] = true
	}
	if err := head.Check(ctx, r.rec.Bucket, r.s.Layout(), sn.RootHash(), head.CheckOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
}
