package gcsweep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

// A small Workbench whose state has every kind of object: blocks (bodies
// over InlineMax, several blocks each), bodies inline in their rows, and
// enough commits for deltas and folds.
func openPinned(t *testing.T, b bucket.Bucket) *workbench.Service {
	t.Helper()
	return openPinnedAt(t, b, 0)
}

// openPinnedAt is openPinned creating shards in value format v (0: the
// test binary's).
func openPinnedAt(t *testing.T, b bucket.Bucket, v int) *workbench.Service {
	t.Helper()
	svc, err := workbench.Open(context.Background(), b, workbench.Options{
		AgentID: "pins", BlockSize: 256, InlineMax: 32, ValueFormat: v,
		Engine: head.Options{Check: true, MaxDeltas: 4, MergeBytes: -1, PageBytes: 256, InlineBytes: 160},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	return svc
}

func call(t *testing.T, svc *workbench.Service, tool, input string) string {
	t.Helper()
	out, ok := svc.Call(context.Background(), tool, []byte(input))
	if !ok {
		t.Fatalf("%s %s: %s", tool, input, out)
	}
	return string(out)
}

func putText(t *testing.T, svc *workbench.Service, path, text string) {
	t.Helper()
	call(t, svc, "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q}`, path, text))
}

func replaceText(t *testing.T, svc *workbench.Service, path, text string) {
	t.Helper()
	call(t, svc, "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q,"replace":true}`, path, text))
}

// answers are the results of the reads a copy must answer alike.
func answers(t *testing.T, svc *workbench.Service, paths []string) []string {
	t.Helper()
	out := []string{
		call(t, svc, "workbench_list", `{"id":"wb","section":"outputs"}`),
		call(t, svc, "workbench_list", `{"id":"wb","section":"outputs","path":"docs"}`),
		call(t, svc, "workbench_stat", `{"id":"wb"}`),
	}
	for _, p := range paths {
		out = append(out,
			call(t, svc, "workbench_stat", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q}`, p)),
			call(t, svc, "workbench_read", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q}`, p)))
	}
	return out
}

// fillPinned writes a workbench of small and block-sized files and
// returns their paths.
func fillPinned(t *testing.T, svc *workbench.Service) []string {
	t.Helper()
	call(t, svc, "workbench_create", `{"id":"wb"}`)
	var paths []string
	for i := range 12 {
		p := fmt.Sprintf("docs/f%02d.txt", i)
		text := fmt.Sprintf("file %d\n", i)
		if i%3 == 0 {
			text = strings.Repeat(fmt.Sprintf("line %d of a longer file\n", i), 30) // about 3 blocks
		}
		putText(t, svc, p, text)
		paths = append(paths, p)
	}
	return paths
}

func TestPinCopyResumesAndServesThePinnedState(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc := openPinned(t, src)
	paths := fillPinned(t, svc)
	want := answers(t, svc, paths)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "", "before the change", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// The source moves on: a file replaced, one added.
	replaceText(t, svc, paths[0], "replaced after the pin\n")
	putText(t, svc, "docs/new.txt", strings.Repeat("new ", 200))

	// The first copy fails after 5 writes, as an interrupted run.
	dst := mem.NewBucket()
	fb := fault.New(dst)
	var puts atomic.Int64
	fb.Inject(fault.Rule{Op: fault.OpPut, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		if puts.Add(1) > 5 {
			return bucket.ErrUnavailable
		}
		return nil
	})})
	rep, err := gcsweep.CopyPin(ctx, svc.Store(), fb, pin, workbench.BlockRefs, gcsweep.VerifyOptions{Concurrency: 1})
	if !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("interrupted copy: %v", err)
	}
	if rep.Copied != 5 {
		t.Fatalf("interrupted copy wrote %d objects, want 5", rep.Copied)
	}
	if _, _, err := dst.Get(ctx, svc.Store().Layout().Head()); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("head written by an interrupted copy: %v", err)
	}
	// Damage one copied object: the resumed copy must write it again.
	damaged := firstKey(t, dst, svc.Store().Layout().Prefix())
	body, _, err := dst.Get(ctx, damaged)
	if err != nil {
		t.Fatal(err)
	}
	body[len(body)-1] ^= 1
	if _, err := dst.Put(ctx, damaged, body, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}

	cb := counting.New(dst)
	rep, err = gcsweep.CopyPin(ctx, svc.Store(), cb, pin, workbench.BlockRefs, gcsweep.VerifyOptions{Concurrency: 4})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Objects < 20 {
		t.Fatalf("the pinned state reaches %d objects; the test wants a larger one", rep.Objects)
	}
	if got, want := rep.Present, int64(4); got != want {
		t.Fatalf("resumed copy found %d objects intact, want %d (5 written, 1 damaged)", got, want)
	}
	if got, want := rep.Copied, rep.Objects-4; got != want {
		t.Fatalf("resumed copy wrote %d objects, want %d", got, want)
	}
	// Its writes: the objects not yet there, the pin and the head.
	if got, want := cb.Snapshot().Put.Requests, rep.Copied+2; got != want {
		t.Fatalf("resumed copy made %d PUTs, want %d", got, want)
	}
	t.Logf("%d objects (%d bytes): 5 written by the interrupted run (one then damaged), %d by the resumed one", rep.Objects, rep.Bytes, rep.Copied)

	// A Service on the copy answers as the source did at the pin.
	cp := openPinned(t, dst)
	got := answers(t, cp, paths)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answer %d differs\n copy %s\n  pin %s", i, got[i], want[i])
		}
	}
	if sn, err := cp.Store().Pin(ctx); err != nil || sn.Sequence() != pin.Sequence || sn.RootHash() != pin.RootHash {
		t.Fatalf("copy's head: %v", err)
	}
	if p, err := gcsweep.ReadPin(ctx, dst, cp.Store().Layout(), pin.Name); err != nil || p != pin {
		t.Fatalf("copy's pin %+v %v, want %+v", p, err, pin)
	}
	// The copy is a store of its own: it commits, from the pinned sequence.
	putText(t, cp, "docs/on-the-copy.txt", "x")

	// A third run over a copy that moved on refuses to touch its head.
	if _, err := gcsweep.CopyPin(ctx, svc.Store(), dst, pin, workbench.BlockRefs, gcsweep.VerifyOptions{}); !errors.Is(err, head.ErrHeadExists) {
		t.Fatalf("copy over a moved head: %v, want ErrHeadExists", err)
	}
}

// firstKey returns the first key under prefix other than the head.
func firstKey(t *testing.T, b bucket.Bucket, prefix string) string {
	t.Helper()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, "/head") {
			return o.Key
		}
	}
	t.Fatal("no object")
	return ""
}

func TestPinVerifyReportsEveryProblem(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	svc := openPinned(t, b)
	fillPinned(t, svc)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "v", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	layout := svc.Store().Layout()
	rep, err := gcsweep.VerifyPin(ctx, b, layout, pin, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) != 0 || rep.Objects < 20 || rep.Bytes == 0 {
		t.Fatalf("clean verify: %+v", rep)
	}
	// Damage one block and delete another.
	blocks, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(layout)})
	if err != nil || len(blocks) < 2 {
		t.Fatalf("blocks %d: %v", len(blocks), err)
	}
	corrupt, gone := blocks[0].Key, blocks[len(blocks)-1].Key
	body, _, err := b.Get(ctx, corrupt)
	if err != nil {
		t.Fatal(err)
	}
	body[0] ^= 0x20
	if _, err := b.Put(ctx, corrupt, body, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, gone, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	rep, err = gcsweep.VerifyPin(ctx, b, layout, pin, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, p := range rep.Problems {
		found[p.Object.Key] = true
		if p.Object.Key == gone && !p.Missing || p.Object.Key == corrupt && p.Missing {
			t.Errorf("problem %v misclassified", p)
		}
	}
	if len(rep.Problems) != 2 || !found[corrupt] || !found[gone] {
		t.Fatalf("problems %v, want %s damaged and %s missing", rep.Problems, corrupt, gone)
	}
}

func TestPinRestoreMakesThePinnedStateCurrent(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	svc := openPinned(t, b)
	paths := fillPinned(t, svc)
	commit := `{"id":"wb","manifest":{"task":"pins"},"content_digest_uri":"sha256:` + strings.Repeat("01", 32) + `","replace":true}`
	call(t, svc, "workbench_commit", commit)
	early := snapshotID(t, call(t, svc, "workbench_snapshot", `{"id":"wb","name":"before-pin"}`))
	want := answers(t, svc, paths)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "r", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	replaceText(t, svc, paths[3], "changed after the pin\n")
	putText(t, svc, "docs/later.txt", "later\n")
	call(t, svc, "workbench_commit", commit)
	late := snapshotID(t, call(t, svc, "workbench_snapshot", `{"id":"wb","name":"after-pin"}`))
	lateRead := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"at_snapshot":%s}`, paths[3], late)
	wantLate := call(t, svc, "workbench_read", lateRead)
	wantSnapshots := call(t, svc, "workbench_snapshot_list", `{"id":"wb"}`)
	wantFeed, err := svc.ReadChanges(ctx, workbench.ChangesRequest{WorkbenchID: "wb", Limit: workbench.MaxChangesLimit})
	if err != nil || len(wantFeed.Events) == 0 {
		t.Fatalf("feed before the restore: %d events, %v", len(wantFeed.Events), err)
	}
	before, err := svc.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sn, committed, err := svc.Store().RestoreRoot(ctx, pin.RootHash, head.RestoreOptions{KeepCurrent: workbench.RestoreKeepCurrent})
	if err != nil || !committed {
		t.Fatalf("restore: committed %v, %v", committed, err)
	}
	if got, want := sn.Sequence(), before.Sequence()+1; got != want {
		t.Fatalf("restored at %d, want %d", got, want)
	}
	if sn.Root().Parent != before.RootHash() {
		t.Fatal("the restored root's parent is not the previous root")
	}
	// A new Service (cold caches) reads the pinned contents.
	fresh := openPinned(t, b)
	got := answers(t, fresh, paths)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("answer %d after restore\n got %s\nwant %s", i, got[i], want[i])
		}
	}
	// Snapshots are as they were before the restore, on both sides of the
	// pin: listed alike, and the later one still reads its own state; the
	// earlier one retires.
	if got := call(t, fresh, "workbench_snapshot_list", `{"id":"wb"}`); got != wantSnapshots {
		t.Fatalf("snapshots after restore\n got %s\nwant %s", got, wantSnapshots)
	}
	if got := call(t, fresh, "workbench_read", lateRead); got != wantLate {
		t.Fatalf("read at the later snapshot after restore\n got %s\nwant %s", got, wantLate)
	}
	call(t, fresh, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"wb","snapshot_id":%s}`, early))
	// The change feed's log is history: every event served before the
	// restore is still there, in order.
	feed, err := fresh.ReadChanges(ctx, workbench.ChangesRequest{WorkbenchID: "wb", Limit: workbench.MaxChangesLimit})
	if err != nil || len(feed.Events) < len(wantFeed.Events) {
		t.Fatalf("feed after the restore: %d events, want at least %d: %v", len(feed.Events), len(wantFeed.Events), err)
	}
	for i := range wantFeed.Events {
		g, _ := json.Marshal(feed.Events[i])
		w, _ := json.Marshal(wantFeed.Events[i])
		if string(g) != string(w) {
			t.Fatalf("feed event %d after the restore\n got %s\nwant %s", i, g, w)
		}
	}
	// History is intact: the state before the restore is still readable.
	prev, err := fresh.Store().At(ctx, sn.Root().Parent)
	if err != nil || prev.Sequence() != before.Sequence() {
		t.Fatalf("previous root: %v", err)
	}
	cur, err := fresh.Store().Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := gcsweep.VerifyPin(ctx, b, fresh.Store().Layout(), gcsweep.Pin{Name: "head", RootHash: cur.RootHash(), Sequence: cur.Sequence()}, workbench.BlockRefs, gcsweep.VerifyOptions{})
	if err != nil || len(rep.Problems) != 0 {
		t.Fatalf("restored root: %v %v", rep.Problems, err)
	}
}

// snapshotID returns the snapshot_id of a workbench_snapshot result, as
// the JSON number it is.
func snapshotID(t *testing.T, result string) string {
	t.Helper()
	var r struct {
		ID json.Number `json:"snapshot_id"`
	}
	d := json.NewDecoder(strings.NewReader(result))
	d.UseNumber()
	if err := d.Decode(&r); err != nil || r.ID == "" {
		t.Fatalf("snapshot result %s: %v", result, err)
	}
	return r.ID.String()
}

// A damaged source object stops the copy before the pin and the head: the
// destination never opens on a state it does not hold intact.
func TestPinCopyRefusesADamagedSource(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc := openPinned(t, src)
	fillPinned(t, svc)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "d", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	layout := svc.Store().Layout()
	blocks, _, err := bucket.ListAll(ctx, src, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(layout)})
	if err != nil || len(blocks) == 0 {
		t.Fatalf("blocks %d: %v", len(blocks), err)
	}
	body, _, err := src.Get(ctx, blocks[0].Key)
	if err != nil {
		t.Fatal(err)
	}
	body[0] ^= 1
	if _, err := src.Put(ctx, blocks[0].Key, body, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	dst := mem.NewBucket()
	if _, err := gcsweep.CopyPin(ctx, svc.Store(), dst, pin, workbench.BlockRefs, gcsweep.VerifyOptions{}); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("copy of a damaged source: %v, want ErrIntegrity", err)
	}
	for _, key := range []string{layout.Head(), pin.Key, blocks[0].Key} {
		if _, err := dst.Stat(ctx, key); !errors.Is(err, bucket.ErrNotExist) {
			t.Errorf("%s at the destination: %v, want absent", key, err)
		}
	}
}

// TestPinCopyFollowsMemberTrees copies a pin whose commit keeps its
// members in a tree of several nodes: the inner node's children are
// reached only through it, and are copied checked against the digests
// it names (a copy once refused them: it had no reference for them).
func TestPinCopyFollowsMemberTrees(t *testing.T) {
	ctx := context.Background()
	src := mem.NewBucket()
	svc := openPinnedAt(t, src, workbench.ValueFormat) // member trees whatever the suite's format
	call(t, svc, "workbench_create", `{"id":"wb"}`)
	for i := range 60 {
		putText(t, svc, fmt.Sprintf("docs/f%02d.txt", i), fmt.Sprintf("file %d\n", i))
	}
	commit := call(t, svc, "workbench_commit", `{"id":"wb","manifest":{"task":"trees"},"content_digest_uri":"sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`)
	pin, err := gcsweep.PinHead(ctx, svc.Store(), "", "a commit with a tree", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dst := mem.NewBucket()
	if _, err := gcsweep.CopyPin(ctx, svc.Store(), dst, pin, workbench.BlockRefs, gcsweep.VerifyOptions{Concurrency: 4}); err != nil {
		t.Fatal(err)
	}
	objs, _, err := bucket.ListAll(ctx, dst, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nodes := 0
	for _, o := range objs {
		if strings.Contains(o.Key, "/trees/") {
			nodes++
		}
	}
	if nodes < 2 {
		t.Fatalf("the commit's tree has %d nodes; the test wants an inner node", nodes)
	}
	// The copy reads the commit's members: a restore of it walks them all.
	var res struct {
		CommitIdentity string `json:"commit_identity"`
	}
	if err := json.Unmarshal([]byte(commit), &res); err != nil {
		t.Fatal(err)
	}
	cp := openPinnedAt(t, dst, workbench.ValueFormat)
	call(t, cp, "workbench_restore", fmt.Sprintf(`{"id":"wb","destination_id":"wb2","at_commit":%q}`, res.CommitIdentity))
}
