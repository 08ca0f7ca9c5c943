package head

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// pageKey returns key i of the paging property test: a Fixed32 key for
// i < 40 (about one per shard: leaves), else a Grouped key in one of three
// groups, each group's keys sharing one shard (pages).
func pageKey(i int) (shards.Family, []byte) {
	if i < 40 {
		k := make([]byte, 32)
		binary.BigEndian.PutUint64(k[24:], uint64(i))
		return shardstest.Fixed32, k
	}
	k := make([]byte, 40)
	k[31] = byte(i % 3)
	binary.BigEndian.PutUint64(k[32:], uint64(i*7919%1000))
	return shardstest.Grouped, k
}

const pageKeys = 340

// shardShape returns, for each shard of f in sn's base, its page count (1
// for a plain shard object).
func shardShape(t *testing.T, sn *Snapshot, f shards.Family) map[uint8]int {
	t.Helper()
	ctx := context.Background()
	tbl, err := sn.table(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[uint8]int{}
	if tbl == nil {
		return out
	}
	for _, e := range tbl.Entries {
		out[e.Shard] = 1
		if e.Index {
			x, err := sn.s.loadIndex(ctx, f, e)
			if err != nil {
				t.Fatal(err)
			}
			out[e.Shard] = x.Len()
		}
	}
	return out
}

// TestPagesMatchModel: random puts (of values of random length) and
// deletes, first mostly puts and then mostly deletes, committed in random
// batches by two replicas with small and different page bounds and fold
// bounds, so that shards grow into pages that split, then shrink so that
// pages merge and indexes turn back into plain shard objects. After every
// commit every Get and random Scans are compared with a map, and every
// commit is checked strictly (Options.Check walks indexes and pages).
func TestPagesMatchModel(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) {
			ctx := context.Background()
			r := rand.New(rand.NewPCG(seed, 512))
			store := mem.NewStore()
			id := shards.NewShardID()
			var replicas []*Store
			for i, page := range []int64{512, 700} {
				b, _ := mem.New(store, "")
				s, err := Open(ctx, b, id, testSchema, Options{NoGroupCommit: i == 1, MaxDeltas: 1 + r.IntN(3), MaxDeltaBytes: int64(200 + r.IntN(2000)), PageBytes: page, Check: true})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				replicas = append(replicas, s)
			}
			model := map[shards.Family]map[string]string{shardstest.Fixed32: {}, shardstest.Grouped: {}}
			maxPages, merged, collapsed := 0, false, false
			prev := map[uint8]int{}
			const steps = 300
			for step := range steps {
				s := replicas[r.IntN(len(replicas))]
				delP := 4
				if step > 100 {
					delP = 97
				}
				type op struct {
					i   int
					del bool
					v   string
				}
				var ops []op
				for range 1 + r.IntN(12) {
					v := fmt.Sprintf("v%d.", step) + string(bytes.Repeat([]byte{'x'}, r.IntN(40)))
					ops = append(ops, op{i: r.IntN(pageKeys), del: r.IntN(100) < delP, v: v})
				}
				if _, err := s.Do(ctx, Command{Apply: func(tx *Tx) ([]byte, error) {
					for _, o := range ops {
						f, k := pageKey(o.i)
						var err error
						if o.del {
							err = tx.Delete(f, k)
						} else {
							err = tx.Put(f, k, []byte(o.v))
						}
						if err != nil {
							return nil, err
						}
					}
					return nil, nil
				}}); err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				for _, o := range ops {
					f, k := pageKey(o.i)
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
				for i := range pageKeys {
					f, k := pageKey(i)
					v, ok, err := sn.Get(ctx, f, k)
					want, wantOK := model[f][string(k)]
					if err != nil || ok != wantOK || string(v) != want {
						t.Fatalf("step %d: Get(%x) = %q, %v, %v; want %q, %v", step, k, v, ok, err, want, wantOK)
					}
				}
				for range 3 {
					for _, f := range []shards.Family{shardstest.Fixed32, shardstest.Grouped} {
						_, k := pageKey(r.IntN(40))
						if f == shardstest.Grouped {
							_, k = pageKey(40 + r.IntN(pageKeys-40))
						}
						prefix := k[:r.IntN(len(k)+1)]
						var after []byte
						if r.IntN(2) == 0 {
							_, after = pageKey(r.IntN(pageKeys))
						}
						limit := r.IntN(30)
						recs, err := sn.Scan(ctx, f, prefix, after, limit)
						if err != nil {
							t.Fatal(err)
						}
						var got []string
						for _, rec := range recs {
							got = append(got, string(rec.Key)+"="+string(rec.Value))
						}
						if want := pageModelScan(model[f], prefix, after, limit); !slices.Equal(got, want) {
							t.Fatalf("step %d: Scan(%s, %x, after %x, %d) = %q, want %q", step, f, prefix, after, limit, got, want)
						}
					}
				}
				shape := shardShape(t, sn, shardstest.Grouped)
				for idx, n := range shape {
					maxPages = max(maxPages, n)
					if p := prev[idx]; p > 1 && n < p {
						merged = true
					}
					if prev[idx] > 1 && n == 1 {
						collapsed = true
					}
				}
				prev = shape
			}
			t.Logf("final shape %v, %d grouped records", prev, len(model[shardstest.Grouped]))
			if maxPages < 4 || !merged || !collapsed {
				t.Fatalf("the run never exercised paging: at most %d pages, merged %v, back to one object %v", maxPages, merged, collapsed)
			}
			t.Logf("at most %d pages per shard", maxPages)
		})
	}
}

// pageModelScan is the model's answer to a Scan.
func pageModelScan(m map[string]string, prefix, after []byte, limit int) []string {
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

// pagedStore returns a Store that folds every commit inline with a page
// bound of 256 bytes, filled with 2,000 Fixed32 records of 40-byte values
// (about 8 per shard, so each shard is 2 or 3 pages), and a shard of at
// least three pages with its index.
func pagedStore(t *testing.T, b *mem.Bucket) (*Store, uint8, *shards.Index) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, b, shards.NewShardID(), testSchema, Options{Check: true, MaxDeltaBytes: 1, PageBytes: 256, InlineBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ruleDo(t, s, func(tx *Tx) error {
		for i := range 2000 {
			if err := tx.Put(ruleFam, ruleKey(i), bytes.Repeat([]byte{byte(i)}, 40)); err != nil {
				return err
			}
		}
		return nil
	})
	sn := rulePin(t, s)
	for _, e := range ruleTable(t, sn).Entries {
		if !e.Index {
			continue
		}
		x, err := s.loadIndex(ctx, ruleFam, e)
		if err != nil {
			t.Fatal(err)
		}
		if x.Len() >= 3 {
			return s, e.Shard, x
		}
	}
	t.Fatal("no shard of three pages")
	return nil, 0, nil
}

// writeKinds counts a candidate's writes by the kind of object.
func writeKinds(t *testing.T, s *Store, c *candidate) map[string]int {
	t.Helper()
	m := map[string]int{}
	for _, w := range c.writes {
		k, err := shards.ParseObjectKey(s.fams, w.key)
		if err != nil {
			t.Fatal(err)
		}
		m[k.Kind.String()]++
	}
	return m
}

// TestWriterRulePages: a fold that changes one record of a paged shard
// writes that page, the index, the table and the root, and its index
// names the parent's other pages; the writer rule accepts it and an
// index naming the parent's pages, and refuses an index not written by
// the attempt (an orphan from an older root), an index naming an orphaned
// page, and one naming a parent's page under another reference.
func TestWriterRulePages(t *testing.T) {
	ctx := context.Background()
	s, xi, oldIndex := pagedStore(t, mem.NewBucket())
	oldEntry, _ := ruleTable(t, rulePin(t, s)).Entry(xi)
	x := bytes.Clone(oldIndex.Page(1).First)
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, x, []byte("B")) })
	sn := rulePin(t, s)
	parentTable := ruleTable(t, sn)
	pe, _ := parentTable.Entry(xi)
	parent, err := s.loadIndex(ctx, ruleFam, pe)
	if err != nil {
		t.Fatal(err)
	}
	orphanPage := oldIndex.Page(1).Ref
	if parent.Len() != oldIndex.Len() || parent.Page(0).Ref != oldIndex.Page(0).Ref || parent.Page(2).Ref != oldIndex.Page(2).Ref || parent.Page(1).Ref == orphanPage {
		t.Fatal("the fold of one record did not keep the other pages")
	}

	t.Run("build rewrites one page and passes", func(t *testing.T) {
		st := newBatchState(testSchema.Families)
		if err := st.put(ruleFam, x, []byte("C")); err != nil {
			t.Fatal(err)
		}
		c, err := s.build(ctx, sn, st, newNonce(), keepDeltas, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.checkWriterRule(ctx, sn, c); err != nil {
			t.Fatal(err)
		}
		if got, want := fmt.Sprint(writeKinds(t, s, c)), fmt.Sprint(map[string]int{"shard": 1, "index": 1, "table": 1, "root": 1}); got != want {
			t.Fatalf("writes %s, want %s", got, want)
		}
	})

	// withIndex is a candidate whose table names, for shard xi, a new
	// index of pages, written by the attempt.
	withIndex := func(pages []shards.PageRef) *candidate {
		nx, err := shards.NewIndex(s.fams, ruleFam, xi, shards.Salt{0xee}, pages)
		if err != nil {
			t.Fatal(err)
		}
		body, ref, err := nx.Encode()
		if err != nil {
			t.Fatal(err)
		}
		tbl := copyTable(parentTable)
		setEntry(tbl, roots.Entry{Shard: xi, Index: true, Ref: ref})
		c := withTable(t, s, sn, tbl)
		c.indexes = map[digest.Hash]*shards.Index{ref.Hash: nx}
		c.writes = append(c.writes, write{s.layout.Index(ruleFam, xi, ref.Hash), body})
		return c
	}
	pages := func() []shards.PageRef {
		var ps []shards.PageRef
		for i := range parent.Len() {
			ps = append(ps, parent.Page(i))
		}
		return ps
	}

	t.Run("a written index naming the parent's pages passes", func(t *testing.T) {
		if err := s.checkWriterRule(ctx, sn, withIndex(pages())); err != nil {
			t.Fatal(err)
		}
	})

	refused := map[string]*candidate{}
	tbl := copyTable(parentTable)
	setEntry(tbl, oldEntry)
	refused["orphaned index, not written"] = withTable(t, s, sn, tbl)

	ps := pages()
	ps[1].Ref = orphanPage
	refused["written index naming an orphaned page"] = withIndex(ps)

	ps = pages()
	ps[2].Ref.Count++
	refused["written index naming a parent's page under another count"] = withIndex(ps)

	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			if err := s.checkWriterRule(ctx, sn, c); !errors.Is(err, ErrWriterRule) {
				t.Fatalf("checkWriterRule = %v, want ErrWriterRule", err)
			}
		})
	}
}

// TestCheckPages: Check walks indexes and pages and reports a missing or
// corrupt page or index, and a page that another page's bytes replace.
func TestCheckPages(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s, xi, x := pagedStore(t, b)
	root := rulePin(t, s).rootHash
	e, _ := ruleTable(t, rulePin(t, s)).Entry(xi)
	check := func() error { return Check(ctx, b, s.layout, root, CheckOptions{Strict: true}) }
	if err := check(); err != nil {
		t.Fatal(err)
	}
	pageKey := s.layout.Shard(ruleFam, xi, x.Page(1).Ref.Hash)
	indexKey := s.layout.Index(ruleFam, xi, e.Ref.Hash)
	damage := func(key string, body []byte) (restore func()) {
		t.Helper()
		old, _, err := b.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if body == nil {
			err = b.Delete(ctx, key, bucket.Unconditional)
		} else {
			_, err = b.Put(ctx, key, body, bucket.Unconditional)
		}
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if _, err := b.Put(ctx, key, old, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
		}
	}
	other, _, err := b.Get(ctx, s.layout.Shard(ruleFam, xi, x.Page(2).Ref.Hash))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, key string
		body      []byte
		want      error
	}{
		{"missing page", pageKey, nil, bucket.ErrNotExist},
		{"corrupt page", pageKey, []byte("CRNS garbage"), bucket.ErrIntegrity},
		{"missing index", indexKey, nil, bucket.ErrNotExist},
		{"corrupt index", indexKey, []byte("CRNX garbage"), bucket.ErrIntegrity},
	} {
		t.Run(c.name, func(t *testing.T) {
			restore := damage(c.key, c.body)
			defer restore()
			err := check()
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.key[strings.LastIndex(c.key, "/")+1:]) {
				t.Fatalf("Check = %v, want %v naming %s", err, c.want, c.key)
			}
		})
	}
	// A page whose bytes are another page's (hash and all) fails its
	// place in the index: that is what CheckPage is for, beyond the hash.
	t.Run("page out of place", func(t *testing.T) {
		if err := x.CheckPage(1, mustDecodePage(t, s, other, x.Page(2).Ref.Hash, xi)); !errors.Is(err, bucket.ErrIntegrity) {
			t.Fatalf("CheckPage = %v, want ErrIntegrity", err)
		}
	})
	if err := check(); err != nil {
		t.Fatalf("after restoring: %v", err)
	}
}

func mustDecodePage(t *testing.T, s *Store, b []byte, h digest.Hash, idx uint8) *shards.Object {
	t.Helper()
	o, err := shards.DecodeShard(s.fams, b, h, ruleFam, idx)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestRequestsPagedRead: with the table cached, a point read of a plain
// shard object costs one request and a point read of a paged shard two,
// one after the other (the index names the page); a scan of a paged shard
// reads the index and then every page in range; cached, neither costs a
// request.
func TestRequestsPagedRead(t *testing.T) {
	ctx := context.Background()
	mb := mem.NewBucket()
	w, _, x := pagedStore(t, mb)
	cb := counting.New(mb)
	s, err := Open(ctx, cb, w.id, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sn := rulePin(t, s)
	if err := sn.Prefetch(ctx, []shards.Family{ruleFam}, nil); err != nil {
		t.Fatal(err)
	}
	if err := sn.gate(ctx); err != nil {
		t.Fatal(err)
	}
	var leafKey []byte
	for i := range 2000 {
		idx, _ := s.fams.ShardOf(ruleFam, ruleKey(i))
		if e, _ := ruleTable(t, sn).Entry(idx); !e.Index {
			leafKey = ruleKey(i)
			break
		}
	}
	paged := x.Page(2).First
	for _, c := range []struct {
		name string
		key  []byte
		want int64
	}{{"plain shard", leafKey, 1}, {"paged shard", paged, 2}, {"paged shard, cached", paged, 0}} {
		if c.key == nil {
			t.Fatalf("%s: no key", c.name)
		}
		cb.Reset()
		if _, ok, err := sn.Get(ctx, ruleFam, c.key); err != nil || !ok {
			t.Fatalf("%s: Get = %v, %v", c.name, ok, err)
		}
		if got := cb.Snapshot().Get.Requests; got != c.want {
			t.Fatalf("%s: %d requests, want %d", c.name, got, c.want)
		}
	}
	// A scan of the whole family reads every index and every page: the
	// family's pages and plain objects plus one index per paged shard, less
	// what the reads above cached (a plain object, an index and a page).
	cb.Reset()
	recs, err := sn.Scan(ctx, ruleFam, nil, nil, 0)
	if err != nil || len(recs) != 2000 {
		t.Fatalf("Scan: %d records, %v", len(recs), err)
	}
	objects := 0
	for _, e := range ruleTable(t, sn).Entries {
		objects++
		if e.Index {
			ix, err := s.loadIndex(ctx, ruleFam, e)
			if err != nil {
				t.Fatal(err)
			}
			objects += ix.Len()
		}
	}
	if got, want := cb.Snapshot().Get.Requests, int64(objects-3); got != want {
		t.Fatalf("scan: %d requests, want %d", got, want)
	}
}

// groupKey returns key i of one group of shardstest.Grouped: every such
// key selects one shard, and they sort by i.
func groupKey(i int) []byte {
	k := make([]byte, shardstest.GroupLen+8)
	binary.BigEndian.PutUint64(k[shardstest.GroupLen:], uint64(i))
	return k
}

// groupIndex returns the page index of the one shard of
// shardstest.Grouped that s's head holds, failing unless it is paged.
func groupIndex(t *testing.T, s *Store) *shards.Index {
	t.Helper()
	ctx := context.Background()
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := sn.table(ctx, shardstest.Grouped)
	if err != nil || tbl == nil || len(tbl.Entries) != 1 || !tbl.Entries[0].Index {
		t.Fatalf("the group's table: %+v, %v; want one paged shard", tbl, err)
	}
	x, err := s.loadIndex(ctx, shardstest.Grouped, tbl.Entries[0])
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// TestFamilyPageBound: a family's own page bound (FamilySpec.PageBytes)
// shapes its pages when it is below the store's, and the store's bound
// holds when the family's is above it or unset.
func TestFamilyPageBound(t *testing.T) {
	ctx := context.Background()
	const store = 4096
	for _, c := range []struct {
		family, want int64
	}{{0, store}, {512, 512}, {64 << 10, store}} {
		t.Run(fmt.Sprint(c.family), func(t *testing.T) {
			specs := shardstest.Specs()
			for i := range specs {
				if specs[i].Family == shardstest.Grouped {
					specs[i].PageBytes = c.family
				}
			}
			fams, err := shards.NewSchema(specs...)
			if err != nil {
				t.Fatal(err)
			}
			schema := Schema{Marker: testSchema.Marker, Families: fams}
			s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), schema, Options{Check: true, PageBytes: store, InlineBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// One group: 300 records of about 70 bytes in one shard.
			ruleDo(t, s, func(tx *Tx) error {
				for i := range 300 {
					if err := tx.Put(shardstest.Grouped, groupKey(i), bytes.Repeat([]byte{byte(i)}, 30)); err != nil {
						return err
					}
				}
				return nil
			})
			if err := s.Fold(ctx); err != nil {
				t.Fatal(err)
			}
			x := groupIndex(t, s)
			var total int64
			for i := range x.Len() {
				p := x.Page(i)
				if p.Ref.Size > c.want {
					t.Fatalf("page %d of %d is %d bytes, bound %d", i, x.Len(), p.Ref.Size, c.want)
				}
				total += p.Ref.Size
			}
			// Pages are at least a quarter of the bound, so their count
			// says which bound cut them.
			if n := int64(x.Len()); n > 4*total/c.want+1 || n < total/c.want {
				t.Fatalf("%d pages of %d bytes in all under a bound of %d", n, total, c.want)
			}
		})
	}
}

// TestGrowingShardPagesStayFull: a shard whose new keys all come after
// its old ones, as with time-ordered ids, leaves full pages behind as it
// grows, fold after fold; an even split would leave each about half
// full. A fold that changes an older key splits as before.
func TestGrowingShardPagesStayFull(t *testing.T) {
	ctx := context.Background()
	const bound = 1024
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{Check: true, PageBytes: bound, InlineBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const value = 30 // a record is 8 + 40 + 30 bytes
	for c := range 40 {
		ruleDo(t, s, func(tx *Tx) error {
			for i := c * 10; i < c*10+10; i++ {
				if err := tx.Put(shardstest.Grouped, groupKey(i), bytes.Repeat([]byte{byte(i)}, value)); err != nil {
					return err
				}
			}
			return nil
		})
		if err := s.Fold(ctx); err != nil {
			t.Fatal(err)
		}
	}
	x := groupIndex(t, s)
	for i := range x.Len() - 1 {
		if size := x.Page(i).Ref.Size; size <= bound-(8+40+value) {
			t.Fatalf("page %d of %d: %d bytes under a bound of %d: not full", i, x.Len(), size, bound)
		}
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 400 {
		if v, ok, err := sn.Get(ctx, shardstest.Grouped, groupKey(i)); err != nil || !ok || len(v) != value {
			t.Fatalf("record %d: %d bytes, %v, %v", i, len(v), ok, err)
		}
	}
}
