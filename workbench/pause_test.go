package workbench_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// The pause test: a writer stopped at any bucket operation of a put, an
// append, a commit, a restore, a pin copy or a pin restore, for longer
// than the grace and any attempt limit (two hours of the store's clock,
// against the shortest grace a deployment root accepts, head.MinGrace),
// while another writer moves the head and sweeps and collections run.
// Deterministic: the pause is a hook on the writer's n-th bucket call,
// which moves the store's clock on, writes through another replica,
// sweeps and collects, and then lets the call go on. After the writer's
// call ends, every acknowledged write reads back, fsck (with bodies) finds
// nothing and every pin verifies; and again after one more sweep.
//
// Each operation runs with the writer's clock real and frozen: its own
// clocks play no part in what is safe.

// pauseGrace is the grace the pause test records: the shortest allowed.
const pauseGrace = head.MinGrace

// pauseWorld is one run's store.
type pauseWorld struct {
	t     *testing.T
	clock *storeClock
	raw   *mem.Bucket
	fb    *fault.Bucket // the paused writer's view of raw
	w, o  *workbench.Service
	opts  workbench.Options
	// files is "id/section/path" → the body last acknowledged. The
	// writer's engine may make its calls (and so the pause) on its own
	// goroutine while the test goroutine records an answer: mu guards it.
	mu    sync.Mutex
	files map[string]string
	pin   gcsweep.Pin
	// pinned and snapped are the files at the pin and at the snapshot.
	pinned, snapped map[string]string
	snap            string
	puts            int
	deleted         int64 // objects the sweeps deleted
	collected       int   // revisions the collections collected
}

func pauseOptions(frozen bool) workbench.Options {
	opts := workbench.Options{AgentID: "pause", BlockSize: 64, InlineMax: 16,
		Engine: head.Options{MaxDeltas: 4, InlineBytes: 128}}
	if frozen {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now := func() time.Time { return t0 }
		opts.Now, opts.Engine.Now = now, now
	}
	return opts
}

func openPaused(t *testing.T, b bucket.Bucket, opts workbench.Options) *workbench.Service {
	t.Helper()
	s, err := workbench.Open(context.Background(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newPauseWorld(t *testing.T, frozen bool) *pauseWorld {
	t.Helper()
	clock := newStoreClock()
	raw := mem.NewBucketAt(clock.Now)
	pw := &pauseWorld{t: t, clock: clock, raw: raw, fb: fault.New(raw), opts: pauseOptions(frozen), files: map[string]string{}}
	pw.o = openPaused(t, raw, pauseOptions(false))
	mustCall(t, pw.o, "workbench_create", `{"id":"wb"}`)
	pw.put("wb/outputs/a.txt", strings.Repeat("a", 200))
	pw.put("wb/outputs/b.txt", "small")
	pw.put("wb/outputs/c.txt", strings.Repeat("c", 150))
	pw.put("wb/outputs/c.txt", strings.Repeat("C", 130)) // a replaced revision: a candidate
	mustCall(t, pw.o, "workbench_commit", commitInput("wb", `{"task":"pause"}`, digest01))
	_, pw.snap = mint(t, pw.o, "wb", map[string]any{})
	pw.snapped = maps.Clone(pw.files)
	pin, err := gcsweep.PinHead(context.Background(), pw.o.Store(), "before", "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pw.pin, pw.pinned = pin, maps.Clone(pw.files)
	pw.put("wb/outputs/c.txt", strings.Repeat("d", 140)) // another candidate, after the pin
	pw.sweep(true)                                       // records the shortest grace
	pw.w = openPaused(t, pw.fb, pw.opts)
	return pw
}

// put puts (or replaces) a file through the other writer.
func (pw *pauseWorld) put(key, body string) {
	pw.t.Helper()
	id, rest, _ := strings.Cut(key, "/")
	sec, path, _ := strings.Cut(rest, "/")
	pw.mu.Lock()
	_, replace := pw.files[key]
	pw.mu.Unlock()
	in := putInput(id, sec, path, `"text":"`+body+`"`)
	if replace {
		in = putInput(id, sec, path, `"text":"`+body+`"`, `"replace":true`)
	}
	mustCall(pw.t, pw.o, "workbench_put_file", in)
	pw.set(key, body)
}

// set records the body last acknowledged at key.
func (pw *pauseWorld) set(key, body string) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.files[key] = body
}

// sweep runs a sweep as cairn gc does, with the shortest grace (touching
// the head first, or, as a library caller may, not), then a collection
// of the revisions it allows.
func (pw *pauseWorld) sweep(touch bool) {
	pw.t.Helper()
	ctx := context.Background()
	opts := workbench.SweepOptions()
	opts.Grace, opts.SetGrace, opts.Touch = pauseGrace, true, touch
	rep, err := gcsweep.Sweep(ctx, pw.raw, pw.o.Store().Layout(), opts)
	if err != nil {
		pw.t.Fatalf("sweep: %v", err)
	}
	pw.deleted += rep.Deleted.Objects
	c, err := pw.o.CollectRevisions(ctx, workbench.CollectOptions{Kept: rep.Kept})
	if err != nil {
		pw.t.Fatalf("collect: %v", err)
	}
	pw.collected += c.Collected
}

// meanwhile is what happens while the writer is stopped: two hours of
// the store's clock, a write through the other replica (when the head
// moves), a sweep and a collection.
func (pw *pauseWorld) meanwhile(moveHead, touch bool) {
	pw.clock.Advance(2 * time.Hour)
	if moveHead {
		pw.puts++
		pw.put(fmt.Sprintf("wb/outputs/o%d.txt", pw.puts), strings.Repeat("o", 90))
	}
	pw.sweep(touch)
}

// verify reads every acknowledged file through a cold replica, runs fsck
// with bodies and verifies the pin.
func (pw *pauseWorld) verify(stage string) {
	pw.t.Helper()
	ctx := context.Background()
	cold := openPaused(pw.t, pw.raw, pauseOptions(false))
	for _, key := range slices.Sorted(maps.Keys(pw.files)) {
		id, rel, _ := strings.Cut(key, "/")
		if got := readText(pw.t, cold, id, rel); got != pw.files[key] {
			pw.t.Fatalf("%s: %s reads %q, want %q", stage, key, got, pw.files[key])
		}
	}
	rep, err := cold.Fsck(ctx, workbench.FsckOptions{Bodies: true})
	if err != nil {
		pw.t.Fatalf("%s: fsck: %v", stage, err)
	}
	for _, f := range rep.Findings {
		pw.t.Errorf("%s: fsck: %s", stage, f)
	}
	pins, err := gcsweep.ListPins(ctx, pw.raw, cold.Store().Layout())
	if err != nil {
		pw.t.Fatal(err)
	}
	for _, p := range pins {
		refs, err := workbench.PinBlockRefs(ctx, cold.Store(), p.RootHash)
		if err != nil {
			pw.t.Fatal(err)
		}
		v, err := gcsweep.VerifyPin(ctx, pw.raw, cold.Store().Layout(), p, refs, gcsweep.VerifyOptions{})
		if err != nil || len(v.Problems) != 0 {
			pw.t.Fatalf("%s: pin %s: %v %v", stage, p.Name, v.Problems, err)
		}
	}
}

// pauseOp is one operation of the paused writer; it reports whether the
// writer was told its change was applied, and records what it changed.
type pauseOp struct {
	name string
	// spread runs each pause point in one of the variants, in turn, not
	// in all three: the operations of many bucket calls (a restore, a
	// pin copy) repeat the same few steps, and the suite runs on two
	// cores with the race detector.
	spread bool
	run    func(pw *pauseWorld) (acked bool, err string)
}

var pauseOps = []pauseOp{
	{"put", false, func(pw *pauseWorld) (bool, string) {
		body := strings.Repeat("n", 300)
		res, ok := call(pw.t, pw.w, "workbench_put_file", putInput("wb", "outputs", "new.txt", `"text":"`+body+`"`))
		if ok {
			pw.set("wb/outputs/new.txt", body)
		}
		return ok, fmt.Sprint(res["code"])
	}},
	{"append", false, func(pw *pauseWorld) (bool, string) {
		delta := strings.Repeat("+", 150)
		res, ok := call(pw.t, pw.w, "workbench_append", appendInput("wb", "outputs", "a.txt", `"text":"`+delta+`"`))
		if ok {
			pw.mu.Lock()
			pw.files["wb/outputs/a.txt"] += delta
			pw.mu.Unlock()
		}
		return ok, fmt.Sprint(res["code"])
	}},
	{"commit", false, func(pw *pauseWorld) (bool, string) {
		res, ok := call(pw.t, pw.w, "workbench_commit", commitInput("wb", `{"task":"paused","note":"`+strings.Repeat("m", 80)+`"}`, digest02, true))
		return ok, fmt.Sprint(res["code"])
	}},
	{"restore", true, func(pw *pauseWorld) (bool, string) {
		res, ok := call(pw.t, pw.w, "workbench_restore", restoreIn("wb", "back", `"at_snapshot":`+pw.snap))
		if ok {
			for k, v := range pw.snapped {
				pw.set("back/"+strings.TrimPrefix(k, "wb/"), v)
			}
		}
		return ok, fmt.Sprint(res["code"])
	}},
	{"pin copy", true, func(pw *pauseWorld) (bool, string) {
		ctx := context.Background()
		dst := mem.NewBucket()
		refs, err := workbench.PinBlockRefs(ctx, pw.w.Store(), pw.pin.RootHash)
		if err != nil {
			return false, err.Error()
		}
		if _, err := gcsweep.CopyPin(ctx, pw.w.Store(), dst, pw.pin, refs, gcsweep.VerifyOptions{}); err != nil {
			return false, err.Error()
		}
		// The copy serves exactly the pinned state.
		copied := openPaused(pw.t, dst, pauseOptions(false))
		for k, want := range pw.pinned {
			id, rel, _ := strings.Cut(k, "/")
			if got := readText(pw.t, copied, id, rel); got != want {
				pw.t.Fatalf("the copy reads %s as %q, want %q", k, got, want)
			}
		}
		copiedRefs, err := workbench.PinBlockRefs(ctx, copied.Store(), pw.pin.RootHash)
		if err != nil {
			pw.t.Fatal(err)
		}
		v, err := gcsweep.VerifyPin(ctx, dst, copied.Store().Layout(), pw.pin, copiedRefs, gcsweep.VerifyOptions{})
		if err != nil || len(v.Problems) != 0 {
			pw.t.Fatalf("the copy's pin: %v %v", v.Problems, err)
		}
		return true, ""
	}},
	{"pin restore", false, func(pw *pauseWorld) (bool, string) {
		ctx := context.Background()
		store := pw.w.Store()
		g, err := gcsweep.NewRestoreGuard(ctx, store.Bucket(), store.Layout(), pw.pin, time.Now)
		if err != nil {
			return false, err.Error()
		}
		defer g.Close(ctx)
		if _, _, err := store.RestoreRoot(ctx, pw.pin.RootHash, head.RestoreOptions{Guard: g.Check, KeepCurrent: workbench.RestoreKeepCurrent}); err != nil {
			return false, err.Error()
		}
		pw.mu.Lock()
		pw.files = maps.Clone(pw.pinned)
		pw.mu.Unlock()
		return true, ""
	}},
}

// countOps runs op once without a pause and returns how many bucket calls
// the writer made.
func countOps(t *testing.T, op pauseOp) int64 {
	pw := newPauseWorld(t, false)
	var n atomic.Int64
	pw.fb.Inject(fault.Rule{Fault: fault.Hook(func(context.Context, fault.Op, string) error { n.Add(1); return nil })})
	if acked, code := op.run(pw); !acked {
		t.Fatalf("%s without a pause: %s", op.name, code)
	}
	return n.Load()
}

func TestPausedWriterLosesNothing(t *testing.T) {
	if testing.Short() {
		t.Skip("the pause matrix runs every operation at every pause point")
	}
	type row struct {
		op, variant           string
		points, acked, failed int
		deleted               int64
		collected             int
	}
	var rows []row
	for _, op := range pauseOps {
		n := countOps(t, op)
		for vi, v := range []struct {
			name             string
			frozen, moveHead bool
			touch            bool
		}{
			{"head moved, gc", false, true, true},
			{"head still, no touch", false, false, false},
			{"frozen clock, head moved, gc", true, true, true},
		} {
			if op.name == "pin restore" && v.moveHead {
				continue // a restore undoes what the other writer wrote meanwhile
			}
			r := row{op: op.name, variant: v.name}
			for k := int64(1); k <= n; k++ {
				if op.spread && int(k%3) != vi {
					continue
				}
				t.Run(fmt.Sprintf("%s/%s/%d", op.name, v.name, k), func(t *testing.T) {
					pw := newPauseWorld(t, v.frozen)
					// The pause holds every call of the writer's process
					// (its engine's goroutines too) until it ends, as a
					// stopped process would. Calls after the operation
					// answered (its background work) pause nothing.
					var hook sync.Mutex
					var calls int64
					ended := false
					pw.fb.Inject(fault.Rule{Fault: fault.Hook(func(context.Context, fault.Op, string) error {
						hook.Lock()
						defer hook.Unlock()
						if calls++; !ended && calls == k {
							pw.meanwhile(v.moveHead, v.touch)
						}
						return nil
					})})
					acked, code := op.run(pw)
					hook.Lock()
					ended = true
					made := calls
					hook.Unlock()
					if made < k {
						return // this run made fewer calls
					}
					r.points++
					if acked {
						r.acked++
					} else {
						r.failed++
						t.Logf("not applied: %s", code)
					}
					pw.verify("after the call")
					pw.meanwhile(v.moveHead, true)
					pw.verify("after one more sweep")
					r.deleted += pw.deleted
					r.collected += pw.collected
				})
			}
			rows = append(rows, r)
		}
	}
	t.Log("operation    variant                        points  acked  not applied  objects swept  revisions collected")
	for _, r := range rows {
		t.Logf("%-12s %-30s %6d  %5d  %11d  %13d  %19d", r.op, r.variant, r.points, r.acked, r.failed, r.deleted, r.collected)
	}
}
