package head

import (
	"context"
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

var ruleFam = shardstest.Fixed32

func ruleKey(i int) []byte {
	k := make([]byte, 32)
	binary.BigEndian.PutUint64(k[24:], uint64(i))
	return k
}

func ruleDo(t *testing.T, s *Store, apply func(tx *Tx) error) {
	t.Helper()
	if _, err := s.Do(context.Background(), Command{Apply: func(tx *Tx) ([]byte, error) { return nil, apply(tx) }}); err != nil {
		t.Fatal(err)
	}
}

func rulePin(t *testing.T, s *Store) *Snapshot {
	t.Helper()
	sn, err := s.Pin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sn
}

func ruleTable(t *testing.T, sn *Snapshot) *roots.Table {
	t.Helper()
	tbl, err := sn.table(context.Background(), ruleFam)
	if err != nil || tbl == nil {
		t.Fatalf("table: %v, %v", tbl, err)
	}
	return tbl
}

// withTable returns a candidate whose root is the parent's with family
// ruleFam's table replaced by tbl, which the candidate writes; the shard
// objects in writeShards are written too.
func withTable(t *testing.T, s *Store, sn *Snapshot, tbl *roots.Table, writeShards ...roots.Entry) *candidate {
	t.Helper()
	body, ref, err := tbl.Encode(testSchema.Families)
	if err != nil {
		t.Fatal(err)
	}
	root := *sn.root
	root.Parent = sn.rootHash
	root.Sequence++
	root.Families = append([]roots.FamilyRef(nil), sn.root.Families...)
	for i := range root.Families {
		if root.Families[i].Family == ruleFam {
			root.Families[i] = roots.FamilyRef{Family: ruleFam, Table: ref, Shards: uint16(len(tbl.Entries)), Records: tbl.Records()}
		}
	}
	c := &candidate{root: &root, tables: map[digest.Hash]*roots.Table{ref.Hash: tbl}, objects: map[digest.Hash]*shards.Object{}}
	c.writes = append(c.writes, write{s.layout.Table(ref.Hash), body})
	for _, e := range writeShards {
		c.writes = append(c.writes, write{s.layout.Shard(ruleFam, e.Shard, e.Ref.Hash), nil})
	}
	return c
}

func copyTable(tbl *roots.Table) *roots.Table {
	c := *tbl
	c.Nonce = roots.Nonce{0xee}
	c.Entries = append([]roots.Entry(nil), tbl.Entries...)
	return &c
}

func setEntry(tbl *roots.Table, e roots.Entry) {
	for i := range tbl.Entries {
		if tbl.Entries[i].Shard == e.Shard {
			tbl.Entries[i] = e
			return
		}
	}
	panic("no such shard")
}

// TestCheckWriterRule feeds checkWriterRule candidates that name objects
// neither reachable from the parent nor written by the attempt (an
// orphaned shard object, an orphaned table, an unheld old root) and
// checks it refuses each, while accepting what build produces and what
// the parent already reaches.
func TestCheckWriterRule(t *testing.T) {
	ctx := context.Background()
	// MaxDeltaBytes 1 folds every commit inline: this test is about the
	// base's tables and shards; TestCheckWriterRuleDeltas covers deltas.
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{Check: true, MaxDeltaBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	x := ruleKey(1)
	xi, _ := testSchema.Families.ShardOf(ruleFam, x)
	genesis := rulePin(t, s)
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, x, []byte("A")) })
	snA := rulePin(t, s)
	tableA := ruleTable(t, snA)
	orphanRef, _ := tableA.Lookup(xi)
	orphanTable, _ := snA.root.Family(ruleFam)
	ruleDo(t, s, func(tx *Tx) error { return tx.Hold("kept", tx.Snapshot().RootHash()) })
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, x, []byte("B")) })
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(2), []byte("y")) })
	sn := rulePin(t, s) // x=B, y, holds "kept" (the x=A state plus the hold)
	keptRoot, _ := sn.root.Hold("kept")
	parentTable := ruleTable(t, sn)
	parentX, _ := parentTable.Lookup(xi)
	if parentX == orphanRef {
		t.Fatal("x=B shares the x=A object")
	}

	t.Run("build passes", func(t *testing.T) {
		st := newBatchState(testSchema.Families)
		if err := st.put(ruleFam, x, []byte("A")); err != nil {
			t.Fatal(err)
		}
		c, err := s.build(ctx, sn, st, newNonce(), keepDeltas, time.Now(), nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.checkWriterRule(ctx, sn, c); err != nil {
			t.Fatal(err)
		}
		// The rebuilt x=A object has the orphan's records, not its key.
		fr, _ := c.root.Family(ruleFam)
		ref, _ := c.tables[fr.Table.Hash].Lookup(xi)
		if ref.Hash == orphanRef.Hash || ref.Count != orphanRef.Count || ref.Size != orphanRef.Size {
			t.Fatalf("rebuilt x object %+v, orphan %+v", ref, orphanRef)
		}
	})

	t.Run("the parent's own table passes", func(t *testing.T) {
		root := *sn.root
		root.Parent, root.Sequence = sn.rootHash, root.Sequence+1
		if err := s.checkWriterRule(ctx, sn, &candidate{root: &root}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a written table naming the parent's shards passes", func(t *testing.T) {
		if err := s.checkWriterRule(ctx, sn, withTable(t, s, sn, copyTable(parentTable))); err != nil {
			t.Fatal(err)
		}
	})

	refused := map[string]*candidate{}

	tbl := copyTable(parentTable)
	setEntry(tbl, roots.Entry{Shard: xi, Ref: orphanRef})
	refused["orphaned shard object, not written"] = withTable(t, s, sn, tbl)

	tbl = copyTable(parentTable)
	moved := parentX
	moved.Count++ // the parent's hash under another reference
	setEntry(tbl, roots.Entry{Shard: xi, Ref: moved})
	refused["parent's object under another count"] = withTable(t, s, sn, tbl)

	tbl = copyTable(parentTable)
	other := xi + 1
	tbl.Entries = append(tbl.Entries, roots.Entry{Shard: other, Ref: parentX})
	sortEntries(tbl)
	refused["parent's object at another shard index"] = withTable(t, s, sn, tbl)

	tbl = copyTable(parentTable)
	setEntry(tbl, roots.Entry{Shard: xi, Ref: orphanRef})
	// Written, but under another shard index than the table names.
	refused["orphan written under another index"] = withTable(t, s, sn, tbl, roots.Entry{Shard: xi + 1, Ref: orphanRef})

	root := *sn.root
	root.Families = append([]roots.FamilyRef(nil), sn.root.Families...)
	for i := range root.Families {
		if root.Families[i].Family == ruleFam {
			root.Families[i] = orphanTable
		}
	}
	refused["orphaned table, not written"] = &candidate{root: &root}

	if keptRoot != snA.rootHash {
		t.Fatal("the hold names another root than the x=A state")
	}
	for name, h := range map[string]digest.Hash{"genesis": genesis.rootHash, "never written": digest.Sum([]byte("never written"))} {
		root := *sn.root
		root.Holds = append([]roots.Hold{{Owner: "a-new-hold", Root: h}}, sn.root.Holds...)
		refused["hold on an unheld root ("+name+")"] = &candidate{root: &root}
	}

	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			if err := s.checkWriterRule(ctx, sn, c); !errors.Is(err, ErrWriterRule) {
				t.Fatalf("checkWriterRule = %v, want ErrWriterRule", err)
			}
		})
	}

	t.Run("holds on the parent and on a held root pass", func(t *testing.T) {
		root := *sn.root
		root.Holds = []roots.Hold{{Owner: "kept", Root: keptRoot}, {Owner: "parent", Root: sn.rootHash}}
		if err := s.checkWriterRule(ctx, sn, &candidate{root: &root}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("no parent: everything must be written", func(t *testing.T) {
		root := &roots.Root{Families: []roots.FamilyRef{orphanTable}}
		if err := s.checkWriterRule(ctx, nil, &candidate{root: root}); !errors.Is(err, ErrWriterRule) {
			t.Fatalf("unwritten table without a parent: %v", err)
		}
		c := withTable(t, s, sn, copyTable(tableA))
		fr, _ := c.root.Family(ruleFam)
		c.root.Families = []roots.FamilyRef{fr}
		if err := s.checkWriterRule(ctx, nil, c); !errors.Is(err, ErrWriterRule) {
			t.Fatalf("unwritten shard without a parent: %v", err)
		}
		root = &roots.Root{Holds: []roots.Hold{{Owner: "h", Root: keptRoot}}}
		if err := s.checkWriterRule(ctx, nil, &candidate{root: root}); !errors.Is(err, ErrWriterRule) {
			t.Fatalf("hold without a parent: %v", err)
		}
	})
}

func sortEntries(tbl *roots.Table) {
	for i := 1; i < len(tbl.Entries); i++ {
		for j := i; j > 0 && tbl.Entries[j-1].Shard > tbl.Entries[j].Shard; j-- {
			tbl.Entries[j-1], tbl.Entries[j] = tbl.Entries[j], tbl.Entries[j-1]
		}
	}
}

// TestBuildSaltsEveryObject: two attempts that build the same state write
// no object in common, and one attempt's build is a function of its nonce.
func TestBuildSaltsEveryObject(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(9), []byte("base")) })
	sn := rulePin(t, s)
	state := func() *batchState {
		st := newBatchState(testSchema.Families)
		for i := range 20 {
			if err := st.put(ruleFam, ruleKey(i), []byte("v")); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}
	n1, n2 := newNonce(), newNonce()
	a, err := s.build(ctx, sn, state(), n1, keepDeltas, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.build(ctx, sn, state(), n2, keepDeltas, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.build(ctx, sn, state(), n1, keepDeltas, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	keysA := map[string]bool{}
	for _, w := range a.writes {
		keysA[w.key] = true
	}
	for _, w := range b.writes {
		if keysA[w.key] {
			t.Fatalf("two attempts both write %s", w.key)
		}
	}
	if len(again.writes) != len(a.writes) || again.rootRef != a.rootRef {
		t.Fatal("the same nonce built another candidate")
	}
	for _, w := range again.writes {
		if !keysA[w.key] {
			t.Fatalf("the same nonce wrote %s", w.key)
		}
	}
	// Shards, tables and the root: one write each, every key distinct.
	if len(keysA) != len(a.writes) {
		t.Fatalf("%d writes, %d distinct keys", len(a.writes), len(keysA))
	}
}

// TestCheckWriterRuleDeltas: a candidate root may list the parent's delta
// segments (the same references) and the one delta its attempt wrote, at
// its own sequence; any other delta is refused.
func TestCheckWriterRuleDeltas(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), shards.NewShardID(), testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("A")) })
	ruleDo(t, s, func(tx *Tx) error { return tx.Put(ruleFam, ruleKey(1), []byte("B")) })
	sn := rulePin(t, s)
	if len(sn.root.Deltas) < 2 {
		t.Fatalf("the parent lists %d deltas", len(sn.root.Deltas))
	}
	st := newBatchState(testSchema.Families)
	if err := st.put(ruleFam, ruleKey(2), []byte("C")); err != nil {
		t.Fatal(err)
	}
	c, err := s.build(ctx, sn, st, newNonce(), keepDeltas, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := len(c.root.Deltas), len(sn.root.Deltas)+1; got != want {
		t.Fatalf("built root lists %d deltas, want %d", got, want)
	}
	if c.root.Deltas[0].Sequence != c.root.Sequence || len(c.root.Families) != len(sn.root.Families) {
		t.Fatalf("built root %+v", c.root)
	}
	if err := s.checkWriterRule(ctx, sn, c); err != nil {
		t.Fatalf("built candidate: %v", err)
	}

	edit := func(f func(r *roots.Root)) *candidate {
		r := *c.root
		r.Deltas = append([]roots.DeltaRef(nil), c.root.Deltas...)
		f(&r)
		return &candidate{root: &r, writes: c.writes, deltas: c.deltas}
	}
	if err := s.checkWriterRule(ctx, sn, edit(func(r *roots.Root) { r.Deltas = r.Deltas[1:] })); err != nil {
		t.Fatalf("only the parent's deltas: %v", err)
	}
	orphan := roots.DeltaRef{Ref: shards.Ref{Hash: digest.Sum([]byte("an orphaned delta")), Size: 80, Count: 1}, Sequence: sn.root.Sequence}
	refused := map[string]*candidate{
		"a delta neither written nor the parent's": edit(func(r *roots.Root) { r.Deltas[1] = orphan }),
		"the parent's delta under another count":   edit(func(r *roots.Root) { r.Deltas[1].Ref.Count++ }),
		"the written delta at another sequence":    edit(func(r *roots.Root) { r.Deltas[0].Sequence-- }),
	}
	// Another attempt's delta of the same changes: not written by this one.
	sibling, err := s.build(ctx, sn, st, newNonce(), keepDeltas, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	refused["another attempt's delta"] = edit(func(r *roots.Root) { r.Deltas[0] = sibling.root.Deltas[0] })
	// A fold lists no delta and writes the base objects.
	folded, err := s.build(ctx, sn, newBatchState(testSchema.Families), newNonce(), foldBase, time.Now(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(folded.root.Deltas) != 0 || len(folded.writes) < 3 {
		t.Fatalf("a fold built %d deltas and %d writes", len(folded.root.Deltas), len(folded.writes))
	}
	if err := s.checkWriterRule(ctx, sn, folded); err != nil {
		t.Fatalf("fold: %v", err)
	}
	for name, c := range refused {
		t.Run(name, func(t *testing.T) {
			if err := s.checkWriterRule(ctx, sn, c); !errors.Is(err, ErrWriterRule) {
				t.Fatalf("checkWriterRule = %v, want ErrWriterRule", err)
			}
		})
	}
}
