package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Crash injection at each step of a publication. A hook that fails a
// bucket call stands for the process dying at that point: the tool call
// ends there and nothing after it runs. Whatever the step, a publication
// whose command did not land leaves no visible path, and every block it
// uploaded is named by its staging ledger.

var errCrash = errors.New("process crashed")

// crashRig is a Service over a fault-injecting bucket, with a short
// engine retry budget, and a plain view of the same store.
type crashRig struct {
	s     *workbench.Service
	fb    *fault.Bucket
	plain bucket.Bucket
}

// faultAndPlain returns two views of one new memory store: one through a
// fault-injecting bucket, the other plain, to look at what the faults
// left.
func faultAndPlain(t *testing.T) (*fault.Bucket, bucket.Bucket) {
	t.Helper()
	store := mem.NewStore()
	inner, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	plain, err := mem.New(store, "")
	if err != nil {
		t.Fatal(err)
	}
	return fault.New(inner), plain
}

func newCrashRig(t *testing.T) crashRig {
	t.Helper()
	fb, plain := faultAndPlain(t)
	s := newServiceOn(t, fb, workbench.Options{
		BlockSize: 4,
		Engine: head.Options{
			MaxAttempts:     2,
			BackoffBase:     time.Millisecond,
			BackoffMax:      2 * time.Millisecond,
			ThrottleBackoff: time.Millisecond,
		},
	})
	return crashRig{s: s, fb: fb, plain: plain}
}

// crashBody is ten blocks of four bytes.
const crashBody = "0123456789abcdefghijklmnopqrstuvwxyzABCD"

func (r crashRig) put(t *testing.T) (map[string]any, bool) {
	t.Helper()
	return call(t, r.s, "workbench_put_file", putInput("wb", "outputs", "c.bin", fmt.Sprintf(`"text":%q`, crashBody)))
}

// ledgers returns every staging ledger in the bucket.
func (r crashRig) ledgers(t *testing.T) []bodies.StagingLedger {
	t.Helper()
	var out []bodies.StagingLedger
	for _, k := range listKeys(t, r.plain, bodies.StagingPrefix(r.s.Store().Layout())) {
		raw, _, err := r.plain.Get(t.Context(), k)
		if err != nil {
			t.Fatal(err)
		}
		l, err := bodies.DecodeStagingLedger(raw)
		if err != nil {
			t.Fatalf("ledger %s: %v", k, err)
		}
		if want := bodies.StagingKey(r.s.Store().Layout(), mustOperationID(t, l.Operation)); want != k {
			t.Fatalf("ledger of operation %s stored at %s", l.Operation, k)
		}
		out = append(out, l)
	}
	return out
}

func mustOperationID(t *testing.T, s string) [16]byte {
	t.Helper()
	id, err := nokv.ParseOperationID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// revisionBlocks lists the block objects under one revision's prefix.
func (r crashRig) revisionBlocks(t *testing.T, rev string) []string {
	t.Helper()
	prefix := bodies.ArtifactsPrefix(r.s.Store().Layout()) + r.s.Root().String() + "/" + rev + "/"
	return listKeys(t, r.plain, prefix)
}

// checkInvisible asserts that the path and the workbench it would have
// created are not visible.
func (r crashRig) checkInvisible(t *testing.T) {
	t.Helper()
	if _, ok := workbench.PathForTest(t, r.s, "wb", "outputs/c.bin"); ok {
		t.Fatal("the path is visible although its publication did not land")
	}
	if recs := workbench.ScanForTest(t, r.s, nokv.FamilyPathCurrent, nil); len(recs) != 0 {
		t.Fatalf("%d paths listed", len(recs))
	}
	if recs := workbench.ScanForTest(t, r.s, nokv.FamilyArtifactRevision, nil); len(recs) != 0 {
		t.Fatalf("%d revisions", len(recs))
	}
}

// checkLedgerOwnsBlocks asserts one ledger, naming all ten planned blocks,
// and that every block object in the bucket is one it names. It returns
// how many of the blocks exist.
func (r crashRig) checkLedgerOwnsBlocks(t *testing.T) int {
	t.Helper()
	ls := r.ledgers(t)
	if len(ls) != 1 {
		t.Fatalf("%d ledgers, want 1", len(ls))
	}
	l := ls[0]
	if l.Tool != "workbench_put_file" || l.WorkbenchID != "wb" || l.Path != "outputs/c.bin" || l.Root != r.s.Root().String() || len(l.Objects) != 10 {
		t.Fatalf("ledger %+v", l)
	}
	var named []string
	for i, o := range l.Objects {
		if o.Length != 4 || o.Digest != workbench.DigestURI([]byte(crashBody[4*i:4*i+4])) {
			t.Fatalf("ledger object %d: %+v", i, o)
		}
		named = append(named, o.Key)
	}
	present := r.revisionBlocks(t, l.Revision)
	for _, k := range present {
		if !slices.Contains(named, k) {
			t.Errorf("block %s is not named by the ledger", k)
		}
	}
	all := listKeys(t, r.plain, bodies.ArtifactsPrefix(r.s.Store().Layout()))
	if len(all) != len(present) {
		t.Errorf("blocks outside the ledger's revision: %v", all)
	}
	return len(present)
}

// retryAfterCrash: once the store behaves, the same write succeeds anew;
// the orphans do not stand in its way.
func (r crashRig) retryAfterCrash(t *testing.T) {
	t.Helper()
	r.fb.Clear()
	got, ok := r.put(t)
	if !ok || num(got["generation"]) != "1" {
		t.Fatalf("put after the crash: %v", got)
	}
	if b := workbench.BodyForTest(t, r.s, "wb", "outputs/c.bin"); string(b) != crashBody {
		t.Fatalf("body %q", b)
	}
	workbench.CheckReferencesForTest(t, r.s)
}

func TestCrashAfterLedger(t *testing.T) {
	r := newCrashRig(t)
	r.fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: bodies.StagingPrefix(r.s.Store().Layout()), Count: 1,
		Fault: fault.HookAfter(func(context.Context, fault.Op, string) error { return errCrash })})
	if got, ok := r.put(t); ok {
		t.Fatalf("put succeeded: %v", got)
	}
	r.checkInvisible(t)
	// The blocks go in the same round as the ledger: any of them may be
	// in the bucket, and the ledger names each.
	if n := r.checkLedgerOwnsBlocks(t); n > 10 {
		t.Fatalf("%d blocks", n)
	}
	r.retryAfterCrash(t)
}

func TestCrashAfterSomeBlocks(t *testing.T) {
	for _, k := range []int{0, 3, 9} {
		t.Run(fmt.Sprintf("k=%d", k), func(t *testing.T) {
			r := newCrashRig(t)
			var n atomic.Int64
			r.fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: bodies.ArtifactsPrefix(r.s.Store().Layout()),
				Fault: fault.Hook(func(context.Context, fault.Op, string) error {
					if n.Add(1) > int64(k) {
						return errCrash
					}
					return nil
				})})
			if got, ok := r.put(t); ok {
				t.Fatalf("put succeeded: %v", got)
			}
			r.checkInvisible(t)
			if got := r.checkLedgerOwnsBlocks(t); got > k {
				t.Fatalf("%d blocks present, at most %d uploaded", got, k)
			}
			r.retryAfterCrash(t)
		})
	}
}

func TestCrashBeforeCommit(t *testing.T) {
	r := newCrashRig(t)
	h := r.fb.Inject(fault.Rule{Op: fault.OpPut, Key: r.s.Store().Layout().Head(),
		Fault: fault.Hook(func(context.Context, fault.Op, string) error { return errCrash })})
	got, ok := r.put(t)
	if ok {
		t.Fatalf("put succeeded: %v", got)
	}
	if h.Fired() == 0 {
		t.Fatal("the head was never written")
	}
	r.checkInvisible(t)
	if n := r.checkLedgerOwnsBlocks(t); n != 10 {
		t.Fatalf("%d blocks present, want all 10", n)
	}
	r.retryAfterCrash(t)
}

// TestAmbiguousCommit: the head write lands but its answer is lost or
// turned into a precondition failure; the engine finds its own commit and
// the publication applies once.
func TestAmbiguousCommit(t *testing.T) {
	for name, f := range map[string]fault.Fault{"lost response": fault.LoseResponse(), "precondition after apply": fault.PreconditionAfterApply()} {
		t.Run(name, func(t *testing.T) {
			r := newCrashRig(t)
			h := r.fb.Inject(fault.Rule{Op: fault.OpPut, Key: r.s.Store().Layout().Head(), Count: 1, Fault: f})
			got, ok := r.put(t)
			if !ok || num(got["generation"]) != "1" {
				t.Fatalf("put: %v", got)
			}
			if h.Fired() != 1 {
				t.Fatalf("fault fired %d times", h.Fired())
			}
			checkAppliedOnce(t, r)
		})
	}
}

// TestUnknownOutcomeRetriedExactly: the head write lands, its answer is
// lost and the head cannot be read to settle it, so the engine reports an
// unknown outcome. The tool runs the same command again with the same
// request id: the engine replays the landed result instead of applying it
// twice.
func TestUnknownOutcomeRetriedExactly(t *testing.T) {
	r := newCrashRig(t)
	headKey := r.s.Store().Layout().Head()
	var failReads atomic.Int64
	r.fb.Inject(fault.Rule{Op: fault.OpGet, Key: headKey, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		for {
			n := failReads.Load()
			if n <= 0 {
				return nil
			}
			if failReads.CompareAndSwap(n, n-1) {
				return fmt.Errorf("head unreadable: %w", bucket.ErrUnavailable)
			}
		}
	})})
	landed := r.fb.Inject(fault.Rule{Op: fault.OpPut, Key: headKey, Count: 1, Fault: fault.HookAfter(func(context.Context, fault.Op, string) error {
		failReads.Store(2) // every settling read of the engine's budget
		return fmt.Errorf("response lost: %w", bucket.ErrAmbiguous)
	})})
	got, ok := r.put(t)
	if !ok || num(got["generation"]) != "1" {
		t.Fatalf("put: %v", got)
	}
	if landed.Fired() != 1 || failReads.Load() != 0 {
		t.Fatalf("the commit was not ambiguous: put fault fired %d, reads left to fail %d", landed.Fired(), failReads.Load())
	}
	checkAppliedOnce(t, r)
	// A new call is a new operation: create-only refuses it.
	got, ok = r.put(t)
	wantWriteError(t, got, ok, "AlreadyExists", false, `{"code":"AlreadyExists","conflict":null,"current_generation":null,"source":"cairn"}`, "")
}

// checkAppliedOnce asserts one publication: one revision, one operation,
// one path event, generation 1, and no ledger left once the background
// cleanup ran.
func checkAppliedOnce(t *testing.T, r crashRig) {
	t.Helper()
	st, ok := workbench.PathForTest(t, r.s, "wb", "outputs/c.bin")
	if !ok || st.Entry.Generation != 1 {
		t.Fatalf("path %+v %t", st.Entry, ok)
	}
	if n := len(workbench.ScanForTest(t, r.s, nokv.FamilyArtifactRevision, nil)); n != 1 {
		t.Fatalf("%d revisions", n)
	}
	if n := len(workbench.ScanForTest(t, r.s, nokv.FamilyOperation, nil)); n != 1 {
		t.Fatalf("%d operations", n)
	}
	var kinds []string
	for _, rec := range workbench.ScanForTest(t, r.s, nokv.FamilyChangeEvent, nil) {
		ev, err := nokv.DecodeChangeEvent(rec.Value)
		if err != nil {
			t.Fatal(err)
		}
		kinds = append(kinds, ev.Kind.String())
	}
	if got := strings.Join(kinds, ","); got != "WorkspaceCreated,PathCreated" {
		t.Fatalf("events %s", got)
	}
	workbench.FlushCleanupForTest(r.s)
	if ls := r.ledgers(t); len(ls) != 0 {
		t.Fatalf("ledgers left: %+v", ls)
	}
	if b := workbench.BodyForTest(t, r.s, "wb", "outputs/c.bin"); string(b) != crashBody {
		t.Fatalf("body %q", b)
	}
	workbench.CheckReferencesForTest(t, r.s)
}

// TestRejectedPublicationCleansUp: a create-only write that loses to a
// concurrent create after it staged its blocks applies nothing and deletes
// what it staged, blocks first, ledger last.
func TestRejectedPublicationCleansUp(t *testing.T) {
	r := newCrashRig(t)
	other := newServiceOn(t, r.plain, workbench.Options{InlineMax: -1}) // the winner's body in a block
	var once atomic.Bool
	r.fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: bodies.ArtifactsPrefix(r.s.Store().Layout()), Fault: fault.Hook(func(ctx context.Context, _ fault.Op, _ string) error {
		if once.CompareAndSwap(false, true) {
			if out, ok := other.Call(ctx, "workbench_put_file", []byte(putInput("wb", "outputs", "c.bin", `"text":"winner"`))); !ok {
				t.Errorf("concurrent create: %s", out)
			}
		}
		return nil
	})})
	var mu sync.Mutex
	var deletes []string
	r.fb.Inject(fault.Rule{Op: fault.OpDelete, Fault: fault.HookAfter(func(_ context.Context, _ fault.Op, key string) error {
		mu.Lock()
		defer mu.Unlock()
		if !strings.Contains(key, "/intents/") { // the engine drops the intent it settled, too
			deletes = append(deletes, key)
		}
		return nil
	})})
	got, ok := r.put(t)
	wantWriteError(t, got, ok, "AlreadyExists", false, `{"code":"AlreadyExists","conflict":null,"current_generation":null,"source":"cairn"}`, "")
	if b := workbench.BodyForTest(t, r.s, "wb", "outputs/c.bin"); string(b) != "winner" {
		t.Fatalf("body %q", b)
	}
	workbench.FlushCleanupForTest(other)
	if ls := r.ledgers(t); len(ls) != 0 {
		t.Fatalf("ledgers left: %+v", ls)
	}
	if keys := listKeys(t, r.plain, bodies.ArtifactsPrefix(r.s.Store().Layout())); len(keys) != 1 {
		t.Fatalf("blocks left: %v (want the winner's one)", keys)
	}
	if n := len(deletes); n != 11 || !strings.HasPrefix(deletes[n-1], bodies.StagingPrefix(r.s.Store().Layout())) {
		t.Fatalf("deletes %v: want ten blocks, then the ledger", deletes)
	}
	workbench.CheckReferencesForTest(t, r.s)
}
