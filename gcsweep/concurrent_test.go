package gcsweep_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// Sweeps running beside writers and readers, on the real clock with a
// grace of a second and a half (and writers whose attempts live at most
// 300 ms): three replicas put, append to and edit their own files (inline
// bodies and bodies of two blocks) while a fourth reads, and a sweep, then
// a collection of the replaced revisions it allows, runs every 100 ms. Every read must return a body some writer put; at the end
// the head's root passes a strict Check and fsck finds nothing, a cold replica reads every file
// as its writer last saw it, and the sweeps must have deleted roots,
// tables and shard objects.

const (
	concGrace = 2 * time.Second // head.MinGrace
	concRun   = 3500 * time.Millisecond
	// concMaxRun bounds a run on a slow machine that has not yet made
	// old enough garbage after concRun.
	concMaxRun = 20 * time.Second
)

func concOptions(agent string) workbench.Options {
	return workbench.Options{
		AgentID:      agent,
		BlockSize:    128,
		InlineMax:    64,
		CleanupDelay: 10 * time.Millisecond,
		Engine: head.Options{
			PageBytes:   256,
			InlineBytes: 160,
			MaxDeltas:   4,
			MergeBytes:  -1,
			Check:       true,
		},
	}
}

// versions records every body ever attempted for each path.
type versions struct {
	mu sync.Mutex
	m  map[string]map[string]bool
}

func (v *versions) add(path, body string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m[path] == nil {
		v.m[path] = map[string]bool{}
	}
	v.m[path][body] = true
}

func (v *versions) has(path, body string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.m[path][body]
}

// readOnce reads a file of at most 300 bytes in one call; ok is false
// when the file does not exist yet.
func readOnce(s *workbench.Service, path string) (string, bool, error) {
	in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"format":"bytes","limit":300}`, path)
	out, ok := s.Call(context.Background(), "workbench_read", []byte(in))
	var r struct {
		Code  string `json:"code"`
		Bytes []byte `json:"bytes"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return "", false, err
	}
	if !ok {
		if r.Code == "NotFound" {
			return "", false, nil
		}
		return "", false, fmt.Errorf("read %s: %s", path, out)
	}
	return string(r.Bytes), true, nil
}

func TestSweepBesideWritersAndReaders(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for a few seconds")
	}
	ctx := context.Background()
	store := mem.NewStore()
	newBucket := func() bucket.Bucket {
		b, err := mem.New(store, "")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	writers := make([]*workbench.Service, 3)
	for i := range writers {
		writers[i] = openService(t, newBucket(), concOptions("conc"))
	}
	reader := openService(t, newBucket(), concOptions("conc"))
	layout := writers[0].Store().Layout()
	seen := &versions{m: map[string]map[string]bool{}}
	final := make([]map[string]string, len(writers))
	start := time.Now()
	var done atomic.Bool
	running := func() bool { return !done.Load() }

	var wg sync.WaitGroup
	var failMu sync.Mutex
	var failures []string
	fail := func(format string, a ...any) {
		failMu.Lock()
		defer failMu.Unlock()
		if len(failures) < 10 {
			failures = append(failures, fmt.Sprintf(format, a...))
		}
	}
	for w, s := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			final[w] = concWriter(s, w, running, seen, fail)
		}()
	}
	readsDone := 0
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(99, 1))
		for running() {
			path := fmt.Sprintf("w%d/f%d.txt", rng.IntN(len(writers)), rng.IntN(4))
			got, ok, err := readOnce(reader, path)
			switch {
			case err != nil:
				fail("reader: %v", err)
			case ok && !seen.has(path, got):
				fail("reader: %s holds %q, which no writer put", path, got)
			}
			readsDone++
		}
	}()
	var reports []*gcsweep.Report
	var collected workbench.CollectReport
	collector := openService(t, newBucket(), concOptions("conc"))
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer done.Store(true)
		sb := newBucket()
		var shardsDeleted int64
		for {
			// Run for concRun, and on until the sweeps have deleted shard
			// objects and the collections blocks (a slow machine makes
			// garbage old enough later), at most concMaxRun.
			elapsed := time.Since(start)
			if elapsed > concMaxRun || elapsed > concRun && shardsDeleted > 0 && collected.BlocksDeleted > 0 {
				return
			}
			opts := workbench.SweepOptions()
			opts.Grace, opts.SetGrace, opts.Touch = concGrace, true, true
			rep, err := gcsweep.Sweep(ctx, sb, layout, opts)
			if err != nil {
				fail("sweep: %v", err)
				return
			}
			reports = append(reports, rep)
			for _, row := range rep.ByClass {
				if row.Class == gcsweep.ClassShard {
					shardsDeleted += row.Deleted.Objects
				}
			}
			c, err := collector.CollectRevisions(ctx, workbench.CollectOptions{Kept: rep.Kept})
			if err != nil {
				fail("collect revisions: %v", err)
				return
			}
			collected.Collected += c.Collected
			collected.BlocksDeleted += c.BlocksDeleted
			collected.Quarantined += c.Quarantined
			time.Sleep(100 * time.Millisecond)
		}
	}()
	wg.Wait()
	for _, f := range failures {
		t.Error(f)
	}

	var deleted gcsweep.Tally
	classes := map[gcsweep.Class]int64{}
	for _, r := range reports {
		deleted.Objects += r.Deleted.Objects
		deleted.Bytes += r.Deleted.Bytes
		for _, row := range r.ByClass {
			classes[row.Class] += row.Deleted.Objects
		}
	}
	t.Logf("%d sweeps deleted %d objects (%d bytes) %v; revisions collected %d (%d blocks); %d reads",
		len(reports), deleted.Objects, deleted.Bytes, classes, collected.Collected, collected.BlocksDeleted, readsDone)
	if classes[gcsweep.ClassRoot] == 0 || classes[gcsweep.ClassShard] == 0 || classes[gcsweep.ClassTable] == 0 {
		t.Errorf("the sweeps deleted %d objects, %v: the test exercised nothing", deleted.Objects, classes)
	}
	if collected.Collected == 0 || collected.BlocksDeleted == 0 || collected.Quarantined != 0 {
		t.Errorf("revisions: %+v", collected)
	}
	raw := newBucket()
	if err := head.Check(ctx, raw, layout, headRoot(t, raw, layout), head.CheckOptions{Strict: true}); err != nil {
		t.Fatalf("check of the final root: %v", err)
	}
	fr, err := workbench.Fsck(ctx, newBucket(), workbench.FsckOptions{AgentID: "conc", Bodies: true})
	if err != nil {
		t.Fatalf("fsck after the sweeps: %v", err)
	}
	if !fr.Clean() {
		t.Errorf("fsck after the sweeps: %d findings, the first: %+v", len(fr.Findings), fr.Findings[0])
	}
	cold := openService(t, newBucket(), concOptions("conc"))
	for w, files := range final {
		for path, want := range files {
			got, ok, err := readOnce(cold, path)
			if err != nil || !ok || got != want {
				t.Errorf("writer %d: %s = %q, %v, %v; want %q", w, path, got, ok, err, want)
			}
		}
	}
}

// concWriter puts, appends to and edits files w{w}/f0..3.txt through s
// while running, and returns each file's body as it last knew it.
func concWriter(s *workbench.Service, w int, running func() bool, seen *versions, fail func(string, ...any)) map[string]string {
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	files := map[string]string{}
	for n := 0; running(); n++ {
		path := fmt.Sprintf("w%d/f%d.txt", w, rng.IntN(4))
		prev, exists := files[path]
		var tool, in, next string
		tag := fmt.Sprintf("<<%d.%d>>", w, n)
		switch op := rng.IntN(3); {
		case !exists || op == 0 || (op == 1 && len(prev) > 250):
			size := 40
			if rng.IntN(2) == 0 {
				size = 200
			}
			next = (tag + strings.Repeat(fmt.Sprintf("%d.%d ", w, n), size))[:size]
			tool, in = "workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q,"replace":%t}`, path, next, exists)
		case op == 1:
			more := fmt.Sprintf(" more %d.%d", w, n)
			next = prev + more
			tool, in = "workbench_append", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q}`, path, more)
		default:
			old := prev[:strings.Index(prev, ">>")+2]
			next = tag + prev[len(old):]
			tool, in = "workbench_edit", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"old_string":%q,"new_string":%q}`, path, old, tag)
		}
		seen.add(path, next)
		if out, ok := s.Call(context.Background(), tool, []byte(in)); ok {
			files[path] = next
			continue
		} else if !strings.Contains(string(out), `"retryable":true`) {
			fail("writer %d: %s %s: %s", w, tool, path, out)
		}
		// An outcome the writer does not know: learn it.
		got, ok, err := readOnce(s, path)
		switch {
		case err != nil:
			fail("writer %d: %v", w, err)
		case ok && (got == next || got == prev):
			files[path] = got
		case !ok && !exists:
		default:
			fail("writer %d: after a failed %s, %s = %q, %v", w, tool, path, got, ok)
		}
	}
	return files
}
