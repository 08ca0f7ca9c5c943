package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// The first write of a deployment, crashed at every bucket write: the
// process dies just before, or just after, its nth write, and a new
// process over the same bucket must find the deployment usable (it
// creates a workbench, writes, reads back, and fsck finds nothing). The
// first write creates the genesis head before it stages anything, so a
// crash leaves nothing, a genesis head or a committed head, never objects
// without a head. docs/engine.md, section 4, holds the table this prints:
//
//	go test ./workbench -run TestFirstWriteCrash -v

// firstWrite is one scenario: the first call made on a deployment never
// written.
type firstWrite struct {
	name string
	call func(t *testing.T, s *workbench.Service) bool
}

// bigBody is the first put's body: three blocks of matrixOptions' 1 KiB.
var bigBody = strings.Repeat("0123456789abcdef", 180)

var firstWrites = []firstWrite{
	{"first workbench_create", func(t *testing.T, s *workbench.Service) bool {
		_, ok := call(t, s, "workbench_create", `{"id":"m"}`)
		return ok
	}},
	{"first put_file of 2880 bytes (3 blocks)", func(t *testing.T, s *workbench.Service) bool {
		_, ok := call(t, s, "workbench_put_file", putInput("m", "outputs", "big.bin", fmt.Sprintf(`"text":%q`, bigBody)))
		return ok
	}},
}

// crashRun is one run of a first write that crashes at write n.
type crashRun struct {
	acked  bool   // the crashed call answered success
	early  int    // writes under the shard's prefix sent before its head
	writes int    // the writes sent (the crashed one included)
	left   string // "nothing", "genesis" or "committed"
	usable bool
}

func TestFirstWriteCrash(t *testing.T) {
	var table []string
	for _, fw := range firstWrites {
		t.Run(strings.ReplaceAll(fw.name, " ", "_"), func(t *testing.T) {
			total := runFirstWrite(t, fw, 0, false).writes
			for _, after := range []bool{false, true} {
				left := map[string]int{}
				usable, early := 0, 0
				for n := 1; n <= total; n++ {
					r := runFirstWrite(t, fw, n, after)
					left[r.left]++
					early += r.early
					if r.usable {
						usable++
					}
				}
				when := "before"
				if after {
					when = "after"
				}
				line := fmt.Sprintf("%-40s crash %-6s write n: crash points %2d  usable after %2d  unusable %d  (left: %d nothing, %d genesis head, %d committed; %d writes under the shard before its head)",
					fw.name, when, total, usable, total-usable, left["nothing"], left["genesis"], left["committed"], early)
				table = append(table, line)
				if usable != total || early != 0 {
					t.Errorf("%s", line)
				}
			}
		})
	}
	for _, l := range table {
		t.Log(l)
	}
}

// runFirstWrite makes fw's call on a deployment never written through a
// process that dies before (or, with after, just after) its nth bucket
// write (n = 0: never), then opens a new process over the same bucket and
// uses the deployment.
func runFirstWrite(t *testing.T, fw firstWrite, n int, after bool) crashRun {
	t.Helper()
	ctx := context.Background()
	fb, plain := faultAndPlain(t)
	s := newMatrixService(t, fb)
	layout := s.Store().Layout()
	var r crashRun
	var seen atomic.Int64
	var dead, headSent atomic.Bool
	var early atomic.Int64
	fb.Inject(fault.Rule{Fault: fault.Hook(func(_ context.Context, op fault.Op, key string) error {
		if dead.Load() {
			return errCrashed
		}
		if op&(fault.OpPut|fault.OpDelete) == 0 {
			return nil
		}
		if key == layout.Head() {
			headSent.Store(true)
		} else if strings.HasPrefix(key, layout.Prefix()) && !headSent.Load() {
			early.Add(1)
			t.Errorf("write %d (%s %s) under the shard's prefix before its head", seen.Load()+1, op, key)
		}
		if seen.Add(1) == int64(n) {
			dead.Store(true)
			if !after {
				return errCrashed
			}
		}
		return nil
	})})
	r.acked = fw.call(t, s)
	r.writes, r.early = int(seen.Load()), int(early.Load())
	if n == 0 {
		if !r.acked {
			t.Fatalf("%s without a crash failed", fw.name)
		}
		return r
	}

	// What the crash left: nothing, a genesis head or a committed head;
	// never objects without a head.
	marker := s.Store().Schema().Marker
	h, _, err := head.ReadHead(ctx, plain, layout, marker)
	switch {
	case errors.Is(err, head.ErrNoHead):
		written, lerr := head.HasObjects(ctx, plain, layout)
		if lerr != nil {
			t.Fatal(lerr)
		}
		if written {
			t.Errorf("crash at write %d: objects under %s but no head", n, layout.Prefix())
			return r
		}
		r.left = "nothing"
	case err != nil:
		t.Errorf("crash at write %d: the head does not read: %v", n, err)
		return r
	case h.Genesis():
		r.left = "genesis"
	default:
		r.left = "committed"
	}

	// A new process uses the deployment.
	fresh := newMatrixService(t, plain)
	if rep, err := workbench.Fsck(ctx, plain, workbench.FsckOptions{AgentID: "matrix"}); err != nil || !rep.Clean() {
		t.Errorf("crash at write %d: fsck of what it left: %v, %v", n, err, rep)
		return r
	}
	if _, ok := call(t, fresh, "workbench_create", `{"id":"m"}`); !ok {
		t.Errorf("crash at write %d (left %s): workbench_create fails afterwards", n, r.left)
		return r
	}
	if r.acked && strings.Contains(fw.name, "put_file") {
		if body, _, code, ok := readPath(t, fresh, "big.bin"); !ok || string(body) != bigBody {
			t.Errorf("crash at write %d: the acknowledged put reads back %d bytes (%s)", n, len(body), code)
			return r
		}
	}
	for _, f := range []struct{ path, body string }{{"after.txt", "written after the crash"}, {"after.bin", bigBody + "!"}} {
		if _, ok := call(t, fresh, "workbench_put_file", putInput("m", "outputs", f.path, fmt.Sprintf(`"text":%q`, f.body))); !ok {
			t.Errorf("crash at write %d (left %s): put_file %s fails afterwards", n, r.left, f.path)
			return r
		}
		if body, _, code, ok := readPath(t, fresh, f.path); !ok || string(body) != f.body {
			t.Errorf("crash at write %d: %s reads back %d bytes (%s)", n, f.path, len(body), code)
			return r
		}
	}
	if rep, err := workbench.Fsck(ctx, plain, workbench.FsckOptions{AgentID: "matrix"}); err != nil || !rep.Clean() || rep.Empty {
		t.Errorf("crash at write %d: fsck after the writes: %v, %+v", n, err, rep)
		return r
	}
	r.usable = true
	return r
}

// TestGenesisDeploymentReads: a deployment left with only a genesis head
// (its first write died right after creating it) reads as empty
// everywhere, writes nothing when read, and the next write goes on.
func TestGenesisDeploymentReads(t *testing.T) {
	ctx := context.Background()
	fb, plain := faultAndPlain(t)
	crashed := newMatrixService(t, fb)
	var writes atomic.Int64
	fb.Inject(fault.Rule{Op: fault.OpPut | fault.OpDelete, Fault: fault.Hook(func(context.Context, fault.Op, string) error {
		if writes.Add(1) > 1 {
			return errCrashed
		}
		return nil
	})})
	if _, ok := call(t, crashed, "workbench_create", `{"id":"m"}`); ok {
		t.Fatal("create through a store that dies after its first write succeeded")
	}
	layout := crashed.Store().Layout()
	if h, _, err := head.ReadHead(ctx, plain, layout, crashed.Store().Schema().Marker); err != nil || !h.Genesis() {
		t.Fatalf("left head %+v, %v; want a genesis head", h, err)
	}
	before := listKeys(t, plain, "")

	s := newMatrixService(t, plain)
	if m, ok := call(t, s, "workbench_list", `{"id":"m","section":"outputs"}`); ok || m["code"] != "NotFound" {
		t.Fatalf("list in a genesis deployment: %v", m)
	}
	page, err := s.ReadChanges(ctx, workbench.ChangesRequest{})
	if err != nil || len(page.Events) != 0 || page.ReadVersion != 0 || !page.CaughtUp {
		t.Fatalf("changes of a genesis deployment: %+v, %v", page, err)
	}
	if n, err := s.Reap(ctx); err != nil || n != 0 {
		t.Fatalf("reap of a genesis deployment: %d, %v", n, err)
	}
	rep, err := s.Fsck(ctx, workbench.FsckOptions{})
	if err != nil || !rep.Empty || !rep.Clean() {
		t.Fatalf("fsck of a genesis deployment: %+v, %v", rep, err)
	}
	if after := listKeys(t, plain, ""); len(after) != len(before) {
		t.Fatalf("reads of a genesis deployment wrote: %d objects, then %d", len(before), len(after))
	}
	mustCall(t, s, "workbench_put_file", putInput("m", "outputs", "a.txt", `"text":"after"`))
	if body, _, code, ok := readPath(t, s, "a.txt"); !ok || string(body) != "after" {
		t.Fatalf("read back %q, %s", body, code)
	}
}
