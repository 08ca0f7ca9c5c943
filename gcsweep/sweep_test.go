package gcsweep_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

// sweepOptions are the Workbench's (with a touch of the head first, as
// cairn gc sweeps) and the deployment's grace.
func sweepOptions() gcsweep.Options {
	return workbench.SweepOptions()
}

// listAll returns every key in the bucket.
func listAll(t testing.TB, b bucket.Bucket) map[string]bool {
	t.Helper()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, o := range objs {
		out[o.Key] = true
	}
	return out
}

// files is a small Workbench state: the paths put and their bodies.
type files map[string]string

// fill puts n files of mixed sizes through s (inline rows and blocks),
// replacing some, so that folds leave superseded objects behind.
func fill(t testing.TB, s *workbench.Service, fs files, from, n int) {
	t.Helper()
	for i := from; i < from+n; i++ {
		size := 40
		if i%3 == 0 {
			size = 2500
		}
		path := fmt.Sprintf("f%02d.txt", i%10)
		_, replace := fs[path]
		fs[path] = body(i, size)
		put(t, s, path, fs[path], replace)
	}
}

// checkState runs a strict Check of the head's root and reads every file
// through a new Service over b.
func checkState(t testing.TB, b bucket.Bucket, agent string, fs files) {
	t.Helper()
	layout, err := workbench.Layout(agent)
	if err != nil {
		t.Fatal(err)
	}
	if err := head.Check(context.Background(), b, layout, headRoot(t, b, layout), head.CheckOptions{Strict: true}); err != nil {
		t.Fatalf("check after the sweep: %v", err)
	}
	cold := openService(t, b, smallOptions(agent))
	for _, p := range slices.Sorted(maps.Keys(fs)) {
		readBack(t, cold, p, fs[p])
	}
}

// orphanStaging stages a body that no command publishes, as a
// publication that crashed after its uploads leaves it: a ledger and its
// blocks.
func orphanStaging(t testing.TB, b bucket.Bucket, layout shards.Layout, root [16]byte) []string {
	t.Helper()
	bs := bodies.New(b, layout, bodies.Options{BlockSize: 1 << 10})
	var op, rev [16]byte
	op[0], rev[0] = 0xee, 0xee
	data := []byte(body(999, 2100))
	st := &bodies.Staging{Operation: op, Root: root, Revision: rev, Blocks: bs.Plan(root, rev, data)}
	if _, err := bs.Stage(context.Background(), st, data); err != nil {
		t.Fatal(err)
	}
	keys := []string{bodies.StagingKey(layout, op)}
	for _, blk := range st.Blocks {
		keys = append(keys, blk.Key)
	}
	return keys
}

// TestSweepDeletesGarbageKeepsLive: a Workbench store with superseded
// objects of folds, a crashed publication's ledger and blocks, and a
// stale intent, swept past the grace: every garbage object is deleted,
// exactly what the head reaches remains (with the head and a key the
// sweep does not recognise), every file reads back, and a second sweep
// deletes nothing.
func TestSweepDeletesGarbageKeepsLive(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	s := openService(t, b, smallOptions("sweep"))
	layout := s.Store().Layout()
	fs := files{}
	fill(t, s, fs, 0, 30)
	orphans := orphanStaging(t, b, layout, s.Root())
	intent := layout.IntentsPrefix() + "1767225600000-00000000000000000000000000000000"
	unknown := layout.Prefix() + "not-an-engine-key"
	for _, k := range []string{intent, unknown} {
		if _, err := b.Put(ctx, k, []byte("x"), bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil { // flush the ledger deletes
		t.Fatal(err)
	}
	quiesce(t, b, layout)
	root := headRoot(t, b, layout)
	live, blocks, _ := walkKeys(t, b, layout, root, false)
	before := listAll(t, b)

	// A dry run past the grace deletes nothing and reports the same.
	clk.Advance(2 * time.Hour)
	opts := sweepOptions()
	opts.DryRun = true
	dry, err := gcsweep.Sweep(ctx, b, layout, opts)
	if err != nil {
		t.Fatal(err)
	}
	if after := listAll(t, b); !maps.Equal(after, before) {
		t.Fatalf("a dry run changed the bucket: gone %v, new %v", minus(before, after), minus(after, before))
	}

	rep, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %+v", *rep)
	after := listAll(t, b)
	// What the head reaches, and the root of the sweep's own touch.
	want := map[string]bool{layout.Head(): true, unknown: true, layout.Root(headRoot(t, b, layout)): true}
	maps.Copy(want, live)
	maps.Copy(want, blocks)
	if !maps.Equal(after, want) {
		t.Fatalf("after the sweep:\nleft but unreachable: %v\nreachable but gone: %v", minus(after, want), minus(want, after))
	}
	for _, k := range append(orphans, intent) {
		if after[k] {
			t.Errorf("garbage %s survived", k)
		}
	}
	gone := int64(len(before) - len(after) + 1) // the touch wrote a root
	if rep.Deleted.Objects != gone || dry.Deleted != rep.Deleted {
		t.Errorf("deleted %d objects (dry run: %d), the bucket lost %d", rep.Deleted.Objects, dry.Deleted.Objects, gone)
	}
	if rep.Unknown.Objects != 1 || rep.Reachable.Objects != int64(len(live)+len(blocks)) || rep.Young.Objects != 0 {
		t.Errorf("kept: unknown %d, reachable %d (want %d), young %d", rep.Unknown.Objects, rep.Reachable.Objects, len(live)+len(blocks), rep.Young.Objects)
	}
	if rep.HeadSequence == 0 || rep.HeadRoot != headRoot(t, b, layout).String() || parentOf(t, b, layout, headRoot(t, b, layout)) != root || !rep.Touched || rep.Requests == 0 {
		t.Errorf("report: head %d %s (touched %v), requests %d", rep.HeadSequence, rep.HeadRoot, rep.Touched, rep.Requests)
	}
	checkState(t, b, "sweep", fs)

	again, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if again.Deleted.Objects != 0 {
		t.Errorf("a second sweep deleted %d objects", again.Deleted.Objects)
	}
}

// TestSweepKeepsYoungAndUntimed: objects younger than the grace, and
// objects whose store gives no time, are never deleted.
func TestSweepKeepsYoungAndUntimed(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	s := openService(t, b, smallOptions("young"))
	layout := s.Store().Layout()
	fill(t, s, files{}, 0, 20)
	orphanStaging(t, b, layout, s.Root())
	s.Close()
	quiesce(t, b, layout)
	before := listAll(t, b)

	clk.Advance(59 * time.Minute)
	rep, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if gone := minus(before, listAll(t, b)); len(gone) != 0 || rep.Deleted.Objects != 0 || rep.Young.Objects == 0 {
		t.Fatalf("within the grace: deleted %d, young %d, gone %v", rep.Deleted.Objects, rep.Young.Objects, gone)
	}

	clk.Advance(2 * time.Hour)
	b.noTimes = true
	rep, err = gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if gone := minus(before, listAll(t, b)); len(gone) != 0 || rep.Deleted.Objects != 0 || rep.UnknownAge.Objects == 0 {
		t.Fatalf("without times: deleted %d, unknown age %d, gone %v", rep.Deleted.Objects, rep.UnknownAge.Objects, gone)
	}
}

// TestSweepKeepsHoldsPinsAndGraceRoots: a root held by the head (a
// snapshot), a pinned root, and the roots that may have been the head
// since the horizon keep everything they reach; older roots go. A root
// was the head until its child's head write, which the sweep bounds by
// the store time of the child's child: so the root before the oldest one
// that was the head since the horizon is kept too (old's parent here),
// and its parent goes.
func TestSweepKeepsHoldsPinsAndGraceRoots(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	s := openService(t, b, smallOptions("keep"))
	layout := s.Store().Layout()
	fs := files{}
	fill(t, s, fs, 0, 12)
	held := headRoot(t, b, layout)
	if _, err := s.Store().Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("snapshot-1", tx.Snapshot().RootHash())
	}}); err != nil {
		t.Fatal(err)
	}
	fill(t, s, fs, 12, 12)
	pinned := headRoot(t, b, layout)
	pinSeq := sequenceOf(t, b, layout)
	writePin(t, b, layout, "backup-1", pinned, pinSeq)
	fill(t, s, fs, 24, 12)
	old := headRoot(t, b, layout) // the head an hour and a half before the sweep
	clk.Advance(90 * time.Minute)
	fill(t, s, fs, 36, 3) // written 30 minutes before the sweep
	s.Close()
	quiesce(t, b, layout)
	var recent []digest.Hash
	for r := headRoot(t, b, layout); r != old; r = parentOf(t, b, layout, r) {
		recent = append(recent, r)
	}
	clk.Advance(30 * time.Minute)

	rep, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pins != 1 || rep.Holds != 1 || rep.Deleted.Objects == 0 {
		t.Fatalf("pins %d, held roots %d, deleted %d", rep.Pins, rep.Holds, rep.Deleted.Objects)
	}
	// old was the head until the first of the recent commits, since the
	// horizon: it is kept; so are the recent roots (the newest is the
	// head the sweep first read), and old's parent, whose end as the
	// head only the first recent root's store time bounds.
	oldParent := parentOf(t, b, layout, old)
	if rep.RootsInGrace != len(recent)+1 {
		t.Errorf("roots since the horizon %d, want %d", rep.RootsInGrace, len(recent)+1)
	}
	for _, r := range append([]digest.Hash{held, pinned, old, oldParent}, recent...) {
		if err := head.Check(ctx, b, layout, r, head.CheckOptions{Strict: true}); err != nil {
			t.Errorf("root %s after the sweep: %v", r, err)
		}
		live, blocks, _ := walkKeys(t, b, layout, r, true)
		if len(live) == 0 || (r == pinned && len(blocks) == 0) {
			t.Errorf("root %s: %d objects, %d blocks", r, len(live), len(blocks))
		}
	}
	if _, err := b.Stat(ctx, layout.Root(parentOf(t, b, layout, oldParent))); !errors.Is(err, bucket.ErrNotExist) {
		t.Errorf("the grandparent of the oldest root since the horizon survived: %v", err)
	}
	checkState(t, b, "keep", fs)
}

// TestSweepRefuses: a grace no longer than the writers' attempts, a shard
// with objects but no head, and a pin that does not decode stop a sweep
// before it deletes anything.
func TestSweepRefuses(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	s := openService(t, b, smallOptions("refuse"))
	layout := s.Store().Layout()
	fill(t, s, files{}, 0, 12)
	s.Close()
	quiesce(t, b, layout)
	clk.Advance(3 * time.Hour)
	before := listAll(t, b)

	if _, err := gcsweep.Sweep(ctx, b, layout, gcsweep.Options{Grace: 10 * time.Minute}); !errors.Is(err, gcsweep.ErrGrace) {
		t.Errorf("grace of 10 minutes: %v", err)
	}
	pinKey, _ := layout.Pin("broken")
	if _, err := b.Put(ctx, pinKey, []byte(`{"format":"cairn.pin.v1"}`), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if _, err := gcsweep.Sweep(ctx, b, layout, sweepOptions()); !errors.Is(err, gcsweep.ErrBadPin) {
		t.Errorf("a broken pin: %v", err)
	}
	if err := b.Delete(ctx, pinKey, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	delete(before, pinKey)
	headBody, _, err := b.Get(ctx, layout.Head())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, layout.Head(), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := gcsweep.Sweep(ctx, b, layout, sweepOptions()); !errors.Is(err, gcsweep.ErrNoHead) {
		t.Errorf("no head: %v", err)
	}
	if _, err := b.Put(ctx, layout.Head(), headBody, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if after := listAll(t, b); !maps.Equal(after, before) {
		t.Fatalf("a refused sweep changed the bucket: gone %v, new %v", minus(before, after), minus(after, before))
	}
	// A shard never written: nothing to do.
	empty, _ := workbench.Layout("never-written")
	rep, err := gcsweep.Sweep(ctx, b, empty, sweepOptions())
	if err != nil || rep.Scanned.Objects != 0 {
		t.Errorf("an empty shard: %+v, %v", rep, err)
	}
}

func readHead(t testing.TB, b bucket.Bucket, layout shards.Layout) head.Head {
	t.Helper()
	h, _, err := head.ReadHead(context.Background(), b, layout, head.Marker{})
	if err != nil {
		t.Fatal(err)
	}
	return *h
}

func sequenceOf(t testing.TB, b bucket.Bucket, layout shards.Layout) uint64 {
	return readHead(t, b, layout).Sequence
}

func parentOf(t testing.TB, b bucket.Bucket, layout shards.Layout, h digest.Hash) digest.Hash {
	t.Helper()
	body, _, err := b.Get(context.Background(), layout.Root(h))
	if err != nil {
		t.Fatal(err)
	}
	r, err := roots.DecodeRoot(layout.Schema(), body, h)
	if err != nil {
		t.Fatal(err)
	}
	return r.Parent
}

// writePin writes a pin in the shape gcsweep reads.
func writePin(t testing.TB, b bucket.Bucket, layout shards.Layout, name string, root digest.Hash, seq uint64) {
	t.Helper()
	key, err := layout.Pin(name)
	if err != nil {
		t.Fatal(err)
	}
	body, err := manifests.Canonical(gcsweep.Pin{Format: gcsweep.PinFormat, Shard: layout.ID().String(), Sequence: seq, Root: root.String(), CreatedMS: 1, Note: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(context.Background(), key, body, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	pins, err := gcsweep.ListPins(context.Background(), b, layout)
	if err != nil || len(pins) == 0 || pins[len(pins)-1].RootHash != root {
		t.Fatalf("pins %+v, %v", pins, err)
	}
}

// TestListPins: pins decode strictly; one of another shard, or naming no
// root, is ErrBadPin.
func TestListPins(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	layout, _ := workbench.Layout("pins")
	other, _ := workbench.Layout("other")
	root := digest.Sum([]byte("a root"))
	writePin(t, b, layout, "a", root, 7)
	writePin(t, b, layout, "b", root, 8)
	pins, err := gcsweep.ListPins(ctx, b, layout)
	if err != nil || len(pins) != 2 || pins[0].Name != "a" || pins[1].Sequence != 8 || pins[1].RootHash != root {
		t.Fatalf("pins %+v, %v", pins, err)
	}
	for name, body := range map[string]string{
		"other-shard": fmt.Sprintf(`{"created_unix_ms":1,"format":"cairn.pin.v1","note":"","root":%q,"sequence":1,"shard":%q}`, root, other.ID()),
		"zero-root":   fmt.Sprintf(`{"created_unix_ms":1,"format":"cairn.pin.v1","note":"","root":%q,"sequence":1,"shard":%q}`, digest.Hash{}, layout.ID()),
		"not-json":    "pin",
	} {
		key, _ := layout.Pin(name)
		if _, err := b.Put(ctx, key, []byte(body), bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		if _, err := gcsweep.ListPins(ctx, b, layout); !errors.Is(err, gcsweep.ErrBadPin) {
			t.Errorf("%s: %v", name, err)
		}
		if err := b.Delete(ctx, key, bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
	}
}

// quiesce waits until the head has not moved for a while: a Store's
// background fold may still land after Close, and the tests compare
// exact sets of objects.
func quiesce(t testing.TB, b bucket.Bucket, layout shards.Layout) {
	t.Helper()
	last, still := "", 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		h := readHead(t, b, layout)
		if h.Root == last {
			if still++; still == 5 {
				return
			}
			continue
		}
		last, still = h.Root, 0
	}
	t.Fatal("the head kept moving")
}

// TestSweepExpiresIdempotencyRecords: an HTTP server's idempotency
// records are kept for their retention and deleted after it, whatever
// the grace; a negative retention keeps them.
func TestSweepExpiresIdempotencyRecords(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	s := openService(t, b, smallOptions("idem"))
	layout := s.Store().Layout()
	fill(t, s, files{}, 0, 4)
	s.Close()
	quiesce(t, b, layout)
	rec := gcsweep.IdempotencyKey(layout, digest.Sum([]byte("a key")))
	if _, err := b.Put(ctx, rec, []byte(`{"state":"done"}`), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	exists := func() bool {
		_, err := b.Stat(ctx, rec)
		if err != nil && !errors.Is(err, bucket.ErrNotExist) {
			t.Fatal(err)
		}
		return err == nil
	}

	clk.Advance(23 * time.Hour)
	if _, err := gcsweep.Sweep(ctx, b, layout, sweepOptions()); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("a record within its retention was deleted")
	}
	clk.Advance(2 * time.Hour)
	keep := sweepOptions()
	keep.IdempotencyRetention = -1
	if _, err := gcsweep.Sweep(ctx, b, layout, keep); err != nil {
		t.Fatal(err)
	}
	if !exists() {
		t.Fatal("a negative retention deleted a record")
	}
	rep, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if exists() {
		t.Fatalf("a record past its retention was kept: %+v", rep.ByClass)
	}
	var row *gcsweep.ClassRow
	for i := range rep.ByClass {
		if rep.ByClass[i].Class == gcsweep.ClassIdempotency {
			row = &rep.ByClass[i]
		}
	}
	if row == nil || row.Deleted.Objects != 1 {
		t.Fatalf("report: %+v", rep.ByClass)
	}
}
