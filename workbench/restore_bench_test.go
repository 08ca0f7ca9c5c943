package workbench_test

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// BenchmarkRestore restores a committed workbench of N files
// (CAIRN_RESTORE_FILES, default 10,000) into a new one on the file
// bucket, and reports the restore's time, head writes, requests and bytes
// written. CAIRN_RESTORE_BATCH sets the members one copy command places
// (default: the workbench's), CAIRN_RESTORE_RTT a delay before each
// request of the restore (a remote bucket's round trip),
// CAIRN_RESTORE_CPUPROFILE a file for a CPU profile of the restore alone,
// CAIRN_RESTORE_ALLOCS a file prefix for the allocation profiles before
// (PREFIX.before) and after (PREFIX.after) the restore, to compare with
// pprof -diff_base. Seeding (concurrent puts in large group commits) and the
// commit are not timed. peak-heap-MiB is the most heap in use, sampled
// every 10 ms, during the restore, less what was in use when it began;
// the bytes the restore put are logged by kind of object (the family of
// a page or page index, deltas, tables, roots).
//
//	go test ./workbench -run '^$' -bench Restore -benchtime 1x
func BenchmarkRestore(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("CAIRN_RESTORE_FILES")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("CAIRN_RESTORE_BATCH")); err == nil && v > 0 {
		defer workbench.SetRestoreBatchForTest(v)()
	}
	ctx := context.Background()
	for i := range b.N {
		fb, err := file.New(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		slow := &slowBucket{Bucket: fb}
		if v, err := time.ParseDuration(os.Getenv("CAIRN_RESTORE_RTT")); err == nil {
			slow.rtt = v
		}
		cb := counting.New(slow)
		s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "bench", Engine: head.Options{MaxBatch: 1024}})
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Store().Initialize(ctx); err != nil {
			b.Fatal(err)
		}
		if out, ok := s.Call(ctx, "workbench_create", []byte(`{"id":"src"}`)); !ok {
			b.Fatalf("create: %s", out)
		}
		var wg sync.WaitGroup
		sem := make(chan struct{}, 512)
		for f := range n {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				in := fmt.Sprintf(`{"id":"src","section":"outputs","path":"d%d/f%d.txt","text":"body %d"}`, f%100, f, f)
				if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
					b.Errorf("put: %s", out)
				}
			})
		}
		wg.Wait()
		res := mustCall(b, s, "workbench_commit", commitInput("src", `{"task":"restore-bench"}`, digestAA))
		seq := func() uint64 {
			sn, err := s.Store().Pin(ctx)
			if err != nil {
				b.Fatal(err)
			}
			return sn.Sequence()
		}
		seq0 := seq()
		cb.Reset()
		slow.on.Store(true)
		start := time.Now()
		if i == 0 {
			b.ResetTimer()
		}
		allocs := os.Getenv("CAIRN_RESTORE_ALLOCS")
		writeAllocs(b, allocs, ".before")
		stopProfile := profileCPU(b, os.Getenv("CAIRN_RESTORE_CPUPROFILE"))
		peak := sampleHeap()
		var steps []string
		last := start
		workbench.SetRestoreHookForTest(s, func(step string) error {
			now := time.Now()
			steps = append(steps, fmt.Sprintf("%s %.2fs", step, now.Sub(last).Seconds()))
			last = now
			return nil
		})
		out, ok := s.Call(ctx, "workbench_restore", []byte(fmt.Sprintf(`{"id":"src","destination_id":"dst","at_commit":%q}`, res["commit_identity"])))
		took := time.Since(start)
		stopProfile()
		writeAllocs(b, allocs, ".after")
		b.ReportMetric(float64(peak())/(1<<20), "peak-heap-MiB")
		slow.on.Store(false)
		if !ok {
			b.Fatalf("restore: %s", out)
		}
		st := cb.Snapshot().Total()
		b.Logf("steps (each from the one before; the first from the call): %s", strings.Join(steps, ", "))
		b.ReportMetric(took.Seconds(), "restore-s")
		b.ReportMetric(float64(seq()-seq0), "head-writes")
		b.ReportMetric(float64(st.Requests), "requests")
		b.ReportMetric(float64(st.BytesWritten)/(1<<20), "MiB-written")
		s.Close()
		slow.logKinds(b)
	}
}

// profileCPU starts a CPU profile into path (none if path is empty) and
// returns what stops it.
func profileCPU(b *testing.B, path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// writeAllocs writes the allocation profile to prefix+suffix, if prefix
// is not empty.
func writeAllocs(b *testing.B, prefix, suffix string) {
	if prefix == "" {
		return
	}
	f, err := os.Create(prefix + suffix)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// sampleHeap samples the heap in use every 10 ms until the returned
// function is called, which answers the most seen above the first sample.
func sampleHeap() func() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, top := ms.HeapInuse, ms.HeapInuse
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				top = max(top, ms.HeapInuse)
			}
		}
	}()
	return func() uint64 {
		close(stop)
		<-done
		return top - base
	}
}

// slowBucket delays every request by rtt while on, and counts the bytes
// put by kind of object (objectKind).
type slowBucket struct {
	bucket.Bucket
	rtt time.Duration
	on  atomic.Bool

	mu     sync.Mutex
	kinds  map[string]int64 // bytes put
	counts map[string]int   // objects put
}

// objectKind names what an engine key holds: "objects/<family>" or
// "indexes/<family>" for pages and page indexes, else the directory
// (deltas, tables, roots, blocks...).
func objectKind(key string) string {
	parts := strings.Split(key, "/")
	for i, p := range parts {
		switch p {
		case "objects", "indexes":
			if i+1 < len(parts) {
				return p + "/" + parts[i+1]
			}
		case "deltas", "tables", "roots", "blocks", "intents":
			return p
		}
	}
	return "other"
}

// logKinds logs the bytes and objects put while on by kind, the largest
// first, and forgets them.
func (s *slowBucket) logKinds(b *testing.B) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kinds := slices.Collect(maps.Keys(s.kinds))
	slices.SortFunc(kinds, func(x, y string) int { return cmp.Compare(s.kinds[y], s.kinds[x]) })
	for _, k := range kinds {
		b.Logf("%-28s %9.1f MiB %7d objects", k, float64(s.kinds[k])/(1<<20), s.counts[k])
	}
	clear(s.kinds)
	clear(s.counts)
}

func (s *slowBucket) wait(ctx context.Context) error {
	if !s.on.Load() || s.rtt <= 0 {
		return nil
	}
	return bucket.Sleep(ctx, s.rtt)
}

func (s *slowBucket) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return nil, bucket.Attrs{}, err
	}
	return s.Bucket.Get(ctx, key)
}

func (s *slowBucket) Stat(ctx context.Context, key string) (bucket.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return bucket.Attrs{}, err
	}
	return s.Bucket.Stat(ctx, key)
}

func (s *slowBucket) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if err := s.wait(ctx); err != nil {
		return bucket.Attrs{}, err
	}
	if s.on.Load() {
		s.mu.Lock()
		if s.kinds == nil {
			s.kinds, s.counts = map[string]int64{}, map[string]int{}
		}
		s.kinds[objectKind(key)] += int64(len(body))
		s.counts[objectKind(key)]++
		s.mu.Unlock()
	}
	return s.Bucket.Put(ctx, key, body, cond)
}

func (s *slowBucket) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	if err := s.wait(ctx); err != nil {
		return err
	}
	return s.Bucket.Delete(ctx, key, cond)
}

func (s *slowBucket) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	if err := s.wait(ctx); err != nil {
		return bucket.ListPage{}, err
	}
	return s.Bucket.List(ctx, opts)
}
