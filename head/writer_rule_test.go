package head_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// The writer rule against garbage collection.
//
// A sweep marks from the current head and deletes what it listed and did
// not mark. A writer that builds the same records an orphan holds must not
// come to depend on that orphan: if its new shard object had the orphan's
// key, a sweep that listed the orphan before the writer staged would
// delete it after the writer staged, and the writer's commit would name a
// missing object. The engine salts every object with the attempt's nonce,
// so a writer's objects have keys no listing made before it staged can
// hold, and it refuses a candidate root that names anything neither
// reachable from its parent nor written by the attempt.

// headRoot reads the head straight from the bucket and returns its root.
func headRoot(t *testing.T, b bucket.Bucket, layout shards.Layout) digest.Hash {
	t.Helper()
	h, _, err := head.ReadHead(context.Background(), b, layout, head.Marker{})
	if err != nil {
		t.Fatal(err)
	}
	root, err := digest.Parse(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func readRoot(t *testing.T, b bucket.Bucket, layout shards.Layout, h digest.Hash) *roots.Root {
	t.Helper()
	body, _, err := b.Get(context.Background(), layout.Root(h))
	if err != nil {
		t.Fatal(err)
	}
	r, err := roots.DecodeRoot(head.SchemaForTest.Families, body, h)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func readTable(t *testing.T, b bucket.Bucket, layout shards.Layout, h digest.Hash) *roots.Table {
	t.Helper()
	body, _, err := b.Get(context.Background(), layout.Table(h))
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := roots.DecodeTable(head.SchemaForTest.Families, body, h)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// shardKeyIn returns the key of shard idx of family f in root h, or "".
func shardKeyIn(t *testing.T, b bucket.Bucket, layout shards.Layout, h digest.Hash, f shards.Family, idx uint8) string {
	t.Helper()
	fr, ok := readRoot(t, b, layout, h).Family(f)
	if !ok {
		return ""
	}
	ref, ok := readTable(t, b, layout, fr.Table.Hash).Lookup(idx)
	if !ok {
		return ""
	}
	return layout.Shard(f, idx, ref.Hash)
}

// immutableKeys lists the shard's roots, tables and shard objects.
func immutableKeys(t *testing.T, b bucket.Bucket, layout shards.Layout) map[string]bool {
	t.Helper()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{Prefix: layout.Prefix()})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, o := range objs {
		if o.Key == layout.Head() {
			continue
		}
		k, err := shards.ParseObjectKey(head.SchemaForTest.Families, o.Key)
		if err != nil || k.Shard != layout.ID() {
			t.Fatalf("unexpected key %q in the shard: %v", o.Key, err)
		}
		out[o.Key] = true
	}
	return out
}

// mark returns every immutable object reachable from the head's root, the
// roots it holds (transitively) and its parents up to grace generations
// back.
func mark(t *testing.T, b bucket.Bucket, layout shards.Layout, grace int) map[string]bool {
	t.Helper()
	marked := map[string]bool{}
	var markRoot func(h digest.Hash, parents int)
	markRoot = func(h digest.Hash, parents int) {
		key := layout.Root(h)
		if marked[key] {
			return
		}
		marked[key] = true
		r := readRoot(t, b, layout, h)
		for _, fr := range r.Families {
			marked[layout.Table(fr.Table.Hash)] = true
			for _, e := range readTable(t, b, layout, fr.Table.Hash).Entries {
				marked[layout.Shard(fr.Family, e.Shard, e.Ref.Hash)] = true
			}
		}
		for _, hold := range r.Holds {
			markRoot(hold.Root, 0)
		}
		if parents > 0 && !r.Parent.IsZero() {
			markRoot(r.Parent, parents-1)
		}
	}
	markRoot(headRoot(t, b, layout), grace)
	return marked
}

// sweep deletes every key of listed that marked lacks and returns them.
func sweep(t *testing.T, b bucket.Bucket, listed, marked map[string]bool) map[string]bool {
	t.Helper()
	deleted := map[string]bool{}
	for k := range listed {
		if marked[k] {
			continue
		}
		if err := b.Delete(context.Background(), k, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		deleted[k] = true
	}
	return deleted
}

// checkCommitted runs a strict Check on the head's root and on every
// committed parent root still in the bucket, and returns how many it
// checked.
func checkCommitted(t *testing.T, b bucket.Bucket, layout shards.Layout) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for h := headRoot(t, b, layout); !h.IsZero(); {
		if _, err := b.Stat(ctx, layout.Root(h)); errors.Is(err, bucket.ErrNotExist) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if err := head.Check(ctx, b, layout, h, head.CheckOptions{Strict: true}); err != nil {
			t.Fatalf("committed root %s: %v", h, err)
		}
		n++
		h = readRoot(t, b, layout, h).Parent
	}
	return n
}

// decodeShardAt fetches and decodes the shard object under key.
func decodeShardAt(t *testing.T, b bucket.Bucket, key string) *shards.Object {
	t.Helper()
	k, err := shards.ParseObjectKey(head.SchemaForTest.Families, key)
	if err != nil {
		t.Fatal(err)
	}
	body, _, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	o, err := shards.DecodeShard(head.SchemaForTest.Families, body, k.Hash, k.Family, k.Index)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func sameRecords(a, b *shards.Object) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i := range a.Len() {
		if string(a.At(i).Key) != string(b.At(i).Key) || string(a.At(i).Value) != string(b.At(i).Value) {
			return false
		}
	}
	return true
}

// TestSweepDuringPausedWriter drives the interleaving deterministically:
//
//  1. commits x=A then x=B: the shard object holding x=A (O1) is an orphan;
//  2. a sweep lists the shard's objects (O1 among them);
//  3. a writer pins, builds a state whose x shard has O1's records again,
//     stages it, and is paused just before its head CAS;
//  4. (head-moves only) another replica commits while the writer waits,
//     also producing O1's records again;
//  5. the sweep marks from the current head with no grace generations
//     and deletes every listed object it did not mark: O1 goes;
//  6. the writer is released and commits (first try, or after losing
//     the race and rebuilding).
//
// Every committed root still in the bucket must then pass a strict
// Check, and no object a commit wrote may have O1's key.
func TestSweepDuringPausedWriter(t *testing.T) {
	for _, headMoves := range []bool{false, true} {
		name := "writer-lands"
		if headMoves {
			name = "head-moves"
		}
		t.Run(name, func(t *testing.T) { sweepDuringPausedWriter(t, headMoves) })
	}
}

func sweepDuringPausedWriter(t *testing.T, headMoves bool) {
	ctx := context.Background()
	store := mem.NewStore()
	raw, _ := mem.New(store, "")
	otherBucket, _ := mem.New(store, "")
	writerInner, _ := mem.New(store, "")
	fb := fault.New(writerInner)
	id := shards.NewShardID()
	layout := shards.NewLayout(head.SchemaForTest.Families, id)
	// Every commit folds inline: the scenario is about base shard objects.
	other := open(t, otherBucket, id, head.Options{NoGroupCommit: true, MaxDeltaBytes: foldEvery, InlineBytes: -1})
	writer := open(t, fb, id, head.Options{NoGroupCommit: true, MaxDeltaBytes: foldEvery, InlineBytes: -1})

	x := key(1)
	xi, err := head.SchemaForTest.Families.ShardOf(fam, x)
	if err != nil {
		t.Fatal(err)
	}
	// 1. x=A, then x=B.
	if _, err := other.Do(ctx, put(1, "A")); err != nil {
		t.Fatal(err)
	}
	orphan := shardKeyIn(t, raw, layout, headRoot(t, raw, layout), fam, xi)
	orphanObj := decodeShardAt(t, raw, orphan)
	if _, err := other.Do(ctx, put(1, "B")); err != nil {
		t.Fatal(err)
	}
	if shardKeyIn(t, raw, layout, headRoot(t, raw, layout), fam, xi) == orphan {
		t.Fatal("x=B still names the x=A object")
	}

	// 2. The sweep lists.
	listed := immutableKeys(t, raw, layout)
	if !listed[orphan] {
		t.Fatal("the sweep's listing lacks the orphan")
	}

	// 3. The writer builds x=A (head-moves: y, while the other replica
	// produces x=A) and pauses at its head CAS.
	paused, release := make(chan struct{}), make(chan struct{})
	hook := fb.Inject(fault.Rule{Op: fault.OpPut, Key: layout.Head(), Conditional: true, Count: 1,
		Fault: fault.Hook(func(context.Context, fault.Op, string) error {
			close(paused)
			<-release
			return nil
		})})
	cmd := put(1, "A")
	if headMoves {
		cmd = put(2, "y")
	}
	type result struct {
		r   head.Result
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := writer.Do(ctx, cmd)
		done <- result{r, err}
	}()
	select {
	case <-paused:
	case r := <-done:
		t.Fatalf("the writer finished without reaching its CAS: %+v, %v", r.r, r.err)
	}
	staged := map[string]bool{}
	for k := range immutableKeys(t, raw, layout) {
		if !listed[k] {
			staged[k] = true
		}
	}
	if len(staged) == 0 {
		t.Fatal("the paused writer staged nothing")
	}

	// 4. Another replica commits x=A meanwhile.
	if headMoves {
		if _, err := other.Do(ctx, put(1, "A")); err != nil {
			t.Fatal(err)
		}
		checkReproduced(t, raw, shardKeyIn(t, raw, layout, headRoot(t, raw, layout), fam, xi), orphan, orphanObj)
	}

	// 5. The sweep marks and deletes.
	deleted := sweep(t, raw, listed, mark(t, raw, layout, 0))
	if !deleted[orphan] {
		t.Fatal("the sweep did not delete the orphan")
	}
	for k := range deleted {
		if staged[k] {
			t.Fatalf("the sweep deleted %s, which it never listed", k)
		}
	}

	// 6. The writer commits.
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatalf("writer: %v", r.err)
	}
	if hook.Fired() != 1 {
		t.Fatalf("the pause fired %d times", hook.Fired())
	}
	wantSeq := uint64(4) // genesis 1, x=A 2, x=B 3
	if headMoves {
		wantSeq = 5 // lost sequence 4 to x=A, rebuilt on top of it
	}
	if r.r.Sequence != wantSeq {
		t.Fatalf("writer committed sequence %d, want %d", r.r.Sequence, wantSeq)
	}
	xKey := shardKeyIn(t, raw, layout, headRoot(t, raw, layout), fam, xi)
	if !headMoves {
		// The writer's own x object, staged before the pause.
		if !staged[xKey] {
			t.Errorf("the committed x object %s was not staged by the writer", xKey)
		}
		checkReproduced(t, raw, xKey, orphan, orphanObj)
	}
	if n := checkCommitted(t, raw, layout); n < 2 {
		t.Fatalf("checked %d committed roots, want at least 2", n)
	}

	// A cold replica reads the committed state.
	cold, _ := mem.New(store, "")
	reader := open(t, cold, id, head.Options{})
	if v, ok := get(t, reader, 1); !ok || v != "A" {
		t.Fatalf("x = %q, %v", v, ok)
	}
	if headMoves {
		if v, ok := get(t, reader, 2); !ok || v != "y" {
			t.Fatalf("y = %q, %v", v, ok)
		}
	}
}

// checkReproduced checks that the object under key holds the orphan's
// records under another salt, hence another key.
func checkReproduced(t *testing.T, b bucket.Bucket, key, orphan string, orphanObj *shards.Object) {
	t.Helper()
	if key == orphan {
		t.Errorf("a new commit names the orphan's key %s", key)
		return
	}
	if _, err := b.Stat(context.Background(), key); err != nil {
		t.Errorf("new x object %s: %v", key, err)
		return
	}
	o := decodeShardAt(t, b, key)
	if !sameRecords(o, orphanObj) || o.Salt() == orphanObj.Salt() {
		t.Errorf("new x object %s: same records %v, salt %x (the orphan's %x)", key, sameRecords(o, orphanObj), o.Salt(), orphanObj.Salt())
	}
}

// TestHoldOfUnheldRootIsRefused: a command can hold only the pinned root
// or one already held; naming an older root that GC may have swept is the
// writer rule's error, and nothing commits.
func TestHoldOfUnheldRootIsRefused(t *testing.T) {
	ctx := context.Background()
	s := open(t, mem.NewBucket(), shards.NewShardID(), head.Options{})
	old, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do(ctx, put(1, "v")); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Pin(ctx)
	_, err = s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("snap", old.RootHash())
	}})
	if !errors.Is(err, head.ErrWriterRule) {
		t.Fatalf("hold of an unheld old root: %v", err)
	}
	after, _ := s.Pin(ctx)
	if after.Sequence() != before.Sequence() {
		t.Fatal("a refused hold committed")
	}
	// The pinned root can be held, and a held root can be held again
	// under another owner after the head moved on.
	if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("snap", tx.Snapshot().RootHash())
	}}); err != nil {
		t.Fatal(err)
	}
	held, _ := s.Pin(ctx)
	heldRoot, _ := held.Root().Hold("snap")
	if _, err := s.Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("snap-2", heldRoot)
	}}); err != nil {
		t.Fatal(err)
	}
}
