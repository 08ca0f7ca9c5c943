package head_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

// checkBoth runs Check in strict and in default mode.
func checkBoth(b bucket.Bucket, layout shards.Layout, root digest.Hash) (strict, loose error) {
	ctx := context.Background()
	return head.Check(ctx, b, layout, root, head.CheckOptions{Strict: true}),
		head.Check(ctx, b, layout, root, head.CheckOptions{})
}

// foldEvery makes every commit fold inline (a delta of any size is over
// twice MaxDeltaBytes), so that tests of the base's tables and shard
// objects see every commit write them.
const foldEvery = 1

// busyShard commits a few states: puts over many shards, overwrites,
// deletes, a shard emptied, and a second family filled then emptied.
// Every commit folds inline, so its objects are base tables and shards.
func busyShard(t *testing.T, b bucket.Bucket) (*head.Store, shards.Layout) {
	return busyShardWith(t, b, head.Options{NoGroupCommit: true, MaxDeltaBytes: foldEvery, InlineBytes: -1})
}

func busyShardWith(t *testing.T, b bucket.Bucket, opts head.Options) (*head.Store, shards.Layout) {
	t.Helper()
	ctx := context.Background()
	s := open(t, b, shards.NewShardID(), opts)
	do := func(apply func(tx *head.Tx) error) {
		t.Helper()
		if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) { return nil, apply(tx) }}); err != nil {
			t.Fatal(err)
		}
	}
	do(func(tx *head.Tx) error {
		for i := range 60 {
			if err := tx.Put(fam, key(i), []byte(fmt.Sprint("v", i))); err != nil {
				return err
			}
		}
		return nil
	})
	do(func(tx *head.Tx) error { return tx.Put(fam, key(3), []byte("changed")) })
	do(func(tx *head.Tx) error {
		for i := 10; i < 20; i++ {
			if err := tx.Delete(fam, key(i)); err != nil {
				return err
			}
		}
		return nil
	})
	fence := make([]byte, 16)
	do(func(tx *head.Tx) error { return tx.Put(shardstest.Fixed16, fence, []byte("f")) })
	do(func(tx *head.Tx) error { return tx.Delete(shardstest.Fixed16, fence) })
	do(func(tx *head.Tx) error { return tx.Hold("snap", tx.Snapshot().RootHash()) })
	return s, s.Layout()
}

func TestCheckPassesHealthyShard(t *testing.T) {
	b := mem.NewBucket()
	_, layout := busyShard(t, b)
	n := 0
	for h := headRoot(t, b, layout); !h.IsZero(); h = readRoot(t, b, layout, h).Parent {
		strict, loose := checkBoth(b, layout, h)
		if strict != nil || loose != nil {
			t.Fatalf("root %s: strict %v; default %v", h, strict, loose)
		}
		n++
	}
	if n != 7 {
		t.Fatalf("checked %d roots, want 7", n)
	}
}

// referencedShard returns the key of one shard object of fam that the
// head's root names.
func referencedShard(t *testing.T, b bucket.Bucket, layout shards.Layout) (string, digest.Hash) {
	t.Helper()
	root := headRoot(t, b, layout)
	fr, ok := readRoot(t, b, layout, root).Family(fam)
	if !ok {
		t.Fatal("no records")
	}
	e := readTable(t, b, layout, fr.Table.Hash).Entries[0]
	return layout.Shard(fam, e.Shard, e.Ref.Hash), root
}

func TestCheckFindsMissingObject(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	_, layout := busyShard(t, b)
	key, root := referencedShard(t, b, layout)
	if err := b.Delete(ctx, key, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	strict, loose := checkBoth(b, layout, root)
	for _, err := range []error{strict, loose} {
		if !errors.Is(err, bucket.ErrNotExist) || !strings.Contains(err.Error(), key) {
			t.Fatalf("Check = %v, want the missing %s", err, key)
		}
	}
	// A missing table and a missing root are found too.
	fr, _ := readRoot(t, b, layout, root).Family(shards.System)
	if err := b.Delete(ctx, layout.Table(fr.Table.Hash), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := head.Check(ctx, b, layout, root, head.CheckOptions{}); !errors.Is(err, bucket.ErrNotExist) || !strings.Contains(err.Error(), fr.Table.Hash.String()) {
		t.Fatalf("missing table: %v", err)
	}
	if err := b.Delete(ctx, layout.Root(root), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := head.Check(ctx, b, layout, root, head.CheckOptions{}); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("missing root: %v", err)
	}
}

func TestCheckFindsCorruptObjects(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	_, layout := busyShard(t, b)
	shardKey, root := referencedShard(t, b, layout)
	fr, _ := readRoot(t, b, layout, root).Family(fam)
	for _, key := range []string{shardKey, layout.Table(fr.Table.Hash), layout.Root(root)} {
		t.Run(strings.Split(strings.TrimPrefix(key, layout.Prefix()), "/")[0], func(t *testing.T) {
			body, _, err := b.Get(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			// A corrupt read, the stored bytes intact.
			fb := fault.New(b)
			fb.Inject(fault.Rule{Op: fault.OpGet, Key: key, Fault: fault.CorruptRead()})
			if err := head.Check(ctx, fb, layout, root, head.CheckOptions{Strict: true}); !errors.Is(err, bucket.ErrIntegrity) {
				t.Fatalf("corrupt read: %v", err)
			}
			// Corrupt stored bytes, one byte flipped in the middle.
			bad := bytes.Clone(body)
			bad[len(bad)/2] ^= 0x20
			if _, err := b.Put(ctx, key, bad, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
			defer b.Put(ctx, key, body, bucket.Unconditional)
			strict, loose := checkBoth(b, layout, root)
			for _, err := range []error{strict, loose} {
				if !errors.Is(err, bucket.ErrIntegrity) {
					t.Fatalf("Check = %v, want ErrIntegrity", err)
				}
			}
		})
	}
	if err := head.Check(ctx, b, layout, root, head.CheckOptions{Strict: true}); err != nil {
		t.Fatalf("restored: %v", err)
	}
}

// sameShardKeys returns n keys of one shard of the Fixed32 test family.
func sameShardKeys(t *testing.T, n int) ([][]byte, uint8) {
	t.Helper()
	groups := map[uint8][][]byte{}
	for i := 0; ; i++ {
		k := key(i)
		idx, err := head.SchemaForTest.Families.ShardOf(fam, k)
		if err != nil {
			t.Fatal(err)
		}
		groups[idx] = append(groups[idx], k)
		if len(groups[idx]) == n {
			return groups[idx], idx
		}
	}
}

// craft writes shard objects, a table and a root with the engine's codecs
// (and raw bytes where the codecs refuse), without a head.
type craft struct {
	t      *testing.T
	b      bucket.Bucket
	layout shards.Layout
}

func newCraft(t *testing.T) *craft {
	return &craft{t: t, b: mem.NewBucket(), layout: shards.NewLayout(head.SchemaForTest.Families, shards.NewShardID())}
}

func (c *craft) put(key string, body []byte) {
	c.t.Helper()
	if _, err := c.b.Put(context.Background(), key, body, bucket.Unconditional); err != nil {
		c.t.Fatal(err)
	}
}

// object writes body as shard idx of fam and returns its table entry.
func (c *craft) object(idx uint8, body []byte, count uint32) roots.Entry {
	ref := shards.Ref{Hash: digest.Sum(body), Size: int64(len(body)), Count: count}
	c.put(c.layout.Shard(fam, idx, ref.Hash), body)
	return roots.Entry{Shard: idx, Ref: ref}
}

// records encodes a valid shard object of fam.
func (c *craft) records(idx uint8, keys [][]byte) []byte {
	c.t.Helper()
	var recs []shards.Record
	for _, k := range keys {
		recs = append(recs, shards.Record{Key: k, Value: []byte("v")})
	}
	o, err := shards.NewObject(head.SchemaForTest.Families, fam, idx, recs)
	if err != nil {
		c.t.Fatal(err)
	}
	body, _, err := o.Encode()
	if err != nil {
		c.t.Fatal(err)
	}
	return body
}

// root writes a table of entries and a root naming it under ref, after
// edit, with the holds given.
func (c *craft) root(entries []roots.Entry, edit func(*roots.FamilyRef), holds ...roots.Hold) digest.Hash {
	c.t.Helper()
	tbl := &roots.Table{Family: fam, Entries: entries}
	body, ref, err := tbl.Encode(head.SchemaForTest.Families)
	if err != nil {
		c.t.Fatal(err)
	}
	c.put(c.layout.Table(ref.Hash), body)
	fr := roots.FamilyRef{Family: fam, Table: ref, Shards: uint16(len(entries)), Records: tbl.Records()}
	if edit != nil {
		edit(&fr)
	}
	r := &roots.Root{Sequence: 2, Families: []roots.FamilyRef{fr}, Holds: holds}
	body, rref, err := r.Encode(head.SchemaForTest.Families)
	if err != nil {
		c.t.Fatal(err)
	}
	c.put(c.layout.Root(rref.Hash), body)
	return rref.Hash
}

// TestCheckFindsCountMismatch: a table whose shard or record counts or
// size disagree with its root entry, and a table entry that disagrees with
// its shard object, are findings; the consistent state is not.
func TestCheckFindsCountMismatch(t *testing.T) {
	keys, idx := sameShardKeys(t, 2)
	cases := []struct {
		name  string
		count uint32 // the table's record count for the 2-record object
		edit  func(*roots.FamilyRef)
		ok    bool
	}{
		{name: "consistent", count: 2, ok: true},
		{name: "root counts 3 records", count: 2, edit: func(fr *roots.FamilyRef) { fr.Records = 3 }},
		{name: "root counts 2 shards", count: 2, edit: func(fr *roots.FamilyRef) { fr.Shards = 2 }},
		{name: "root names another table size", count: 2, edit: func(fr *roots.FamilyRef) { fr.Table.Size++ }},
		{name: "table counts 3 records", count: 3},
		{name: "table counts 1 record", count: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr := newCraft(t)
			e := cr.object(idx, cr.records(idx, keys), c.count)
			root := cr.root([]roots.Entry{e}, c.edit)
			strict, loose := checkBoth(cr.b, cr.layout, root)
			if c.ok {
				if strict != nil || loose != nil {
					t.Fatalf("strict %v; default %v", strict, loose)
				}
				return
			}
			for _, err := range []error{strict, loose} {
				if err == nil {
					t.Fatal("Check passed")
				}
				if errors.Is(err, bucket.ErrNotExist) || errors.Is(err, bucket.ErrIntegrity) || !errors.Is(err, head.ErrInconsistent) {
					t.Fatalf("Check = %v, want a count finding", err)
				}
			}
		})
	}
	// A shard object whose size disagrees with its table entry.
	cr := newCraft(t)
	e := cr.object(idx, cr.records(idx, keys), 2)
	e.Ref.Size++
	if err := head.Check(context.Background(), cr.b, cr.layout, cr.root([]roots.Entry{e}, nil), head.CheckOptions{}); !errors.Is(err, head.ErrInconsistent) {
		t.Fatalf("Check = %v for a shard whose size disagrees with its table", err)
	}
}

// rawShard encodes a shard object of fam without any checks.
func rawShard(idx uint8, keys [][]byte) []byte {
	b := []byte("CRNS")
	b = append(b, shards.ObjectFormat, byte(fam), idx)
	b = append(b, make([]byte, shards.SaltLen)...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = binary.BigEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.BigEndian.AppendUint32(b, 1)
		b = append(b, 'v')
	}
	return b
}

// TestCheckFindsRecordInWrongShard: an object that hashes correctly but
// holds a key of another shard, and a valid object filed under another
// shard index, are malformed.
func TestCheckFindsRecordInWrongShard(t *testing.T) {
	keys, idx := sameShardKeys(t, 2)
	var stray []byte
	for i := 0; stray == nil; i++ {
		if j, _ := head.SchemaForTest.Families.ShardOf(fam, key(1000+i)); j != idx {
			stray = key(1000 + i)
		}
	}
	// The raw encoder agrees with the codec on a valid object.
	cr := newCraft(t)
	if !bytes.Equal(rawShard(idx, keys), cr.records(idx, keys)) {
		t.Fatal("rawShard differs from the codec")
	}
	all := append(append([][]byte(nil), keys...), stray)
	sortKeys(all)
	e := cr.object(idx, rawShard(idx, all), uint32(len(all)))
	root := cr.root([]roots.Entry{e}, nil)
	strict, loose := checkBoth(cr.b, cr.layout, root)
	for _, err := range []error{strict, loose} {
		if !errors.Is(err, shards.ErrWrongShard) || !errors.Is(err, shards.ErrMalformedObject) {
			t.Fatalf("Check = %v, want ErrWrongShard", err)
		}
	}

	// A valid object of shard idx named as shard idx+1.
	cr = newCraft(t)
	body := cr.records(idx, keys)
	e = cr.object(idx+1, body, 2)
	if err := head.Check(context.Background(), cr.b, cr.layout, cr.root([]roots.Entry{e}, nil), head.CheckOptions{}); !errors.Is(err, shards.ErrMalformedObject) {
		t.Fatalf("object under another index: %v", err)
	}
}

func sortKeys(ks [][]byte) {
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && bytes.Compare(ks[j-1], ks[j]) > 0; j-- {
			ks[j-1], ks[j] = ks[j], ks[j-1]
		}
	}
}

// TestCheckFindsMissingHoldRoot: a hold naming a root that is not in the
// bucket is a finding in both modes; strict mode also checks a present
// held root's objects.
func TestCheckFindsMissingHoldRoot(t *testing.T) {
	ctx := context.Background()
	keys, idx := sameShardKeys(t, 2)
	cr := newCraft(t)
	e := cr.object(idx, cr.records(idx, keys), 2)
	gone := digest.Sum([]byte("a root never written"))
	root := cr.root([]roots.Entry{e}, nil, roots.Hold{Owner: "snap", Root: gone})
	strict, loose := checkBoth(cr.b, cr.layout, root)
	for _, err := range []error{strict, loose} {
		if !errors.Is(err, bucket.ErrNotExist) || !strings.Contains(err.Error(), gone.String()) {
			t.Fatalf("Check = %v, want the missing held root", err)
		}
	}

	// Through the engine: hold a root, then lose one of its objects that
	// only it reaches. Strict mode walks into the held root.
	b := mem.NewBucket()
	s := open(t, b, shards.NewShardID(), head.Options{NoGroupCommit: true, MaxDeltaBytes: foldEvery, InlineBytes: -1})
	layout := s.Layout()
	if _, err := s.Do(ctx, put(1, "old")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("snap", tx.Snapshot().RootHash())
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, put(1, "new")); err != nil {
		t.Fatal(err)
	}
	cur := headRoot(t, b, layout)
	held, _ := readRoot(t, b, layout, cur).Hold("snap")
	x, _ := head.SchemaForTest.Families.ShardOf(fam, key(1))
	oldKey := shardKeyIn(t, b, layout, held, fam, x)
	if oldKey == "" || oldKey == shardKeyIn(t, b, layout, cur, fam, x) {
		t.Fatal("the held state does not have its own x object")
	}
	if err := b.Delete(ctx, oldKey, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := head.Check(ctx, b, layout, cur, head.CheckOptions{}); err != nil {
		t.Fatalf("default mode reads only the held root's existence: %v", err)
	}
	if err := head.Check(ctx, b, layout, cur, head.CheckOptions{Strict: true}); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("strict: %v", err)
	}
	if err := b.Delete(ctx, layout.Root(held), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := head.Check(ctx, b, layout, cur, head.CheckOptions{}); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("default mode, held root deleted: %v", err)
	}
}

// TestCheckHeldRootSharingShards: a held root and the current root share
// the shard objects the commits since the hold did not change; that is the
// normal state of a snapshot, and Check must pass it.
func TestCheckHeldRootSharingShards(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s, err := head.Open(ctx, b, shards.NewShardID(), head.SchemaForTest, head.Options{NoGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 20 { // 20 keys: several shards of one family
		if _, err := s.Do(ctx, put(i, "v")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("snap", tx.Snapshot().RootHash())
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, put(3, "changed")); err != nil {
		t.Fatal(err)
	}
	if err := head.Check(ctx, b, s.Layout(), headRoot(t, b, s.Layout()), head.CheckOptions{Strict: true}); err != nil {
		t.Fatalf("Check of a healthy shard with a snapshot hold: %v", err)
	}
}

func TestCheckStopsAtMaxFindings(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	_, layout := busyShard(t, b)
	root := headRoot(t, b, layout)
	objs, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: layout.Prefix() + "objects/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := b.Delete(ctx, o.Key, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
	all := head.Check(ctx, b, layout, root, head.CheckOptions{})
	two := head.Check(ctx, b, layout, root, head.CheckOptions{MaxFindings: 2})
	if all == nil || two == nil {
		t.Fatalf("Check = %v, %v", all, two)
	}
	count := func(err error) int { return len(err.(interface{ Unwrap() []error }).Unwrap()) }
	if count(all) < 3 || count(two) != 2 {
		t.Fatalf("%d findings, %d with MaxFindings 2", count(all), count(two))
	}
}

// TestCheckDeltas: a shard whose root lists delta segments passes Check;
// a missing delta, a corrupt read of one, and a delta whose bytes decode
// but disagree with the root's reference are each found.
func TestCheckDeltas(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	_, layout := busyShardWith(t, b, head.Options{NoGroupCommit: true, InlineBytes: -1})
	root := headRoot(t, b, layout)
	r := readRoot(t, b, layout, root)
	if len(r.Deltas) < 5 {
		t.Fatalf("the root lists %d deltas, want every commit's", len(r.Deltas))
	}
	if strict, loose := checkBoth(b, layout, root); strict != nil || loose != nil {
		t.Fatalf("healthy: strict %v; default %v", strict, loose)
	}
	key := layout.Delta(r.Deltas[1].Ref.Hash)

	fb := fault.New(b)
	fb.Inject(fault.Rule{Op: fault.OpGet, Key: key, Fault: fault.CorruptRead()})
	if err := head.Check(ctx, fb, layout, root, head.CheckOptions{}); !errors.Is(err, bucket.ErrIntegrity) || !strings.Contains(err.Error(), r.Deltas[1].Ref.Hash.String()) {
		t.Fatalf("corrupt delta read: %v", err)
	}

	// A root that names a real delta under the wrong record count, or
	// at another sequence (the newest one's, one later, in a root one
	// later).
	for name, lie := range map[string]func(*roots.Root){
		"count":    func(r *roots.Root) { r.Deltas[1].Ref.Count++ },
		"sequence": func(r *roots.Root) { r.Sequence++; r.Deltas[0].Sequence++ },
	} {
		lying := *r
		lying.Deltas = append([]roots.DeltaRef(nil), r.Deltas...)
		lie(&lying)
		lb, lref, err := lying.Encode(layout.Schema())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, layout.Root(lref.Hash), lb, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		if err := head.Check(ctx, b, layout, lref.Hash, head.CheckOptions{}); !errors.Is(err, head.ErrInconsistent) || !strings.Contains(err.Error(), "root says") {
			t.Fatalf("delta with a wrong %s: %v", name, err)
		}
	}

	if err := b.Delete(ctx, key, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	strict, loose := checkBoth(b, layout, root)
	for _, err := range []error{strict, loose} {
		if !errors.Is(err, bucket.ErrNotExist) || !strings.Contains(err.Error(), key) {
			t.Fatalf("Check = %v, want the missing %s", err, key)
		}
	}
}
