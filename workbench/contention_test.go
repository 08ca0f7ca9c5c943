package workbench_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// Concurrent writes that do not conflict logically (distinct paths, ids,
// files) all succeed, whether they meet in one Service's group commit or
// race for the head from several replicas; a logical conflict still
// answers as the contract says.

// contentionParallel is the number of concurrent writers of each test.
const contentionParallel = 16

// contentionSetup is one deployment the writers race on.
type contentionSetup struct {
	name string
	// replicas is the number of Services; as many as there are writers
	// is one process per call, as `cairn workbench` runs.
	replicas int
	// perRequest, if positive, delays every request by about that much
	// (bucket/latency, shared by the replicas).
	perRequest time.Duration
	// interval, if positive, is the store's write rate for one object:
	// one write per interval, as GCS takes one a second.
	interval time.Duration
	// engine tunes every replica's engine.
	engine head.Options
}

var contentionSetups = []contentionSetup{
	{name: "mem/one", replicas: 1},
	{name: "mem/replicas", replicas: 4},
	{name: "mem/per-call", replicas: contentionParallel},
	// A remote store of about 100 ms a request, time scaled by 1/10:
	// requests of 10 ms and the engine's backoff a tenth of its default.
	{name: "remote/replicas", replicas: 4, perRequest: 10 * time.Millisecond, engine: scaled(0)},
	{name: "remote/per-call", replicas: contentionParallel, perRequest: 10 * time.Millisecond, engine: scaled(0)},
	// GCS, time scaled by 1/10 as well: one head write per 100 ms, and
	// every replica's MinCommitInterval at that rate, as production sets
	// it to a second.
	{name: "gcs/one", replicas: 1, perRequest: 5 * time.Millisecond, interval: 100 * time.Millisecond, engine: scaled(100 * time.Millisecond)},
	{name: "gcs/replicas", replicas: 4, perRequest: 5 * time.Millisecond, interval: 100 * time.Millisecond, engine: scaled(100 * time.Millisecond)},
	{name: "gcs/per-call", replicas: contentionParallel, perRequest: 5 * time.Millisecond, interval: 100 * time.Millisecond, engine: scaled(100 * time.Millisecond)},
}

// scaled is the engine's default timing divided by 10, with interval as
// MinCommitInterval.
func scaled(interval time.Duration) head.Options {
	return head.Options{
		MinCommitInterval: interval,
		BackoffBase:       500 * time.Microsecond,
		BackoffMax:        200 * time.Millisecond,
		ThrottleBackoff:   100 * time.Millisecond,
	}
}

// open opens the setup's replicas over one shared memory store. Under
// latency they share one wrapper, so that the head's write rate is the
// store's, not each replica's.
func (c contentionSetup) open(t *testing.T) []*workbench.Service {
	t.Helper()
	store := mem.NewStore()
	var shared bucket.Bucket
	if c.perRequest > 0 || c.interval > 0 {
		inner, err := mem.New(store, "")
		if err != nil {
			t.Fatal(err)
		}
		lo := latency.Options{PerRequest: c.perRequest, Jitter: c.perRequest / 2}
		if c.interval > 0 {
			lo.WritesPerSecondPerObject = float64(time.Second) / float64(c.interval)
		}
		shared = latency.New(inner, lo)
	}
	services := make([]*workbench.Service, c.replicas)
	for i := range services {
		b := shared
		if b == nil {
			var err error
			if b, err = mem.New(store, ""); err != nil {
				t.Fatal(err)
			}
		}
		services[i] = newServiceOn(t, b, workbench.Options{Engine: c.engine})
	}
	return services
}

// race runs n calls of tool at once, the i-th through services[i %
// len(services)] with input(i), and returns the failures' codes (with
// their conflict, if any) by count.
func race(t *testing.T, services []*workbench.Service, tool string, n int, input func(i int) string) map[string]int {
	t.Helper()
	var mu sync.Mutex
	failed := map[string]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			out, ok := services[i%len(services)].Call(context.Background(), tool, []byte(input(i)))
			if ok {
				return
			}
			var m map[string]any
			if err := jsonUnmarshal(out, &m); err != nil {
				t.Errorf("%s: result is not JSON: %v\n%s", tool, err, out)
				return
			}
			code, _ := m["code"].(string)
			if d, _ := m["details"].(map[string]any); d != nil {
				if c, ok := d["conflict"].(string); ok {
					code += "/" + c
				}
			}
			mu.Lock()
			failed[code]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return failed
}

// report logs the failure rate as "failed k/n (code: count, …)" and fails
// the test if any call failed.
func report(t *testing.T, what string, n int, failed map[string]int) {
	t.Helper()
	total := 0
	var codes []string
	for code, k := range failed {
		total += k
		codes = append(codes, fmt.Sprintf("%s: %d", code, k))
	}
	sort.Strings(codes)
	msg := fmt.Sprintf("%s: failed %d/%d (%.0f%%)", what, total, n, 100*float64(total)/float64(n))
	if len(codes) > 0 {
		msg += " (" + strings.Join(codes, ", ") + ")"
	}
	if total > 0 {
		t.Error(msg)
	} else {
		t.Log(msg)
	}
}

// TestConcurrentPutsToDistinctPaths: put_file to distinct new paths of one
// workbench all succeed.
func TestConcurrentPutsToDistinctPaths(t *testing.T) {
	for _, c := range contentionSetups {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			services := c.open(t)
			mustCall(t, services[0], "workbench_create", `{"id":"wb"}`)
			failed := race(t, services, "workbench_put_file", contentionParallel, func(i int) string {
				return putInput("wb", "outputs", fmt.Sprintf("f%02d.txt", i), fmt.Sprintf(`"text":"body %d"`, i))
			})
			report(t, "put_file to distinct paths", contentionParallel, failed)
			got := mustCall(t, services[0], "workbench_list", `{"id":"wb","section":"outputs"}`)
			if entries, _ := got["entries"].([]any); len(entries) != contentionParallel {
				t.Fatalf("listed %d entries, want %d: %v", len(entries), contentionParallel, got)
			}
		})
	}
}

// TestConcurrentCreatesOfDistinctIDs: workbench_create of distinct ids all
// succeed.
func TestConcurrentCreatesOfDistinctIDs(t *testing.T) {
	for _, c := range contentionSetups {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			services := c.open(t)
			failed := race(t, services, "workbench_create", contentionParallel, func(i int) string {
				return fmt.Sprintf(`{"id":"wb-%02d"}`, i)
			})
			report(t, "create of distinct ids", contentionParallel, failed)
		})
	}
}

// TestConcurrentEditsOfDistinctFiles: edits of distinct existing files all
// succeed.
func TestConcurrentEditsOfDistinctFiles(t *testing.T) {
	for _, c := range contentionSetups {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			services := c.open(t)
			for i := range contentionParallel {
				mustCall(t, services[0], "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("f%02d.txt", i), `"text":"hello world"`))
			}
			failed := race(t, services, "workbench_edit", contentionParallel, func(i int) string {
				return editInput("wb", "outputs", fmt.Sprintf("f%02d.txt", i), "world", fmt.Sprintf("edit %d", i))
			})
			report(t, "edit of distinct files", contentionParallel, failed)
			for i := range contentionParallel {
				got := mustCall(t, services[0], "workbench_read", putInput("wb", "outputs", fmt.Sprintf("f%02d.txt", i), ""))
				if got, want := readItems(t, got, 0), fmt.Sprintf(`["hello edit %d"]`, i); got != want {
					t.Fatalf("f%02d.txt reads %s, want %s", i, got, want)
				}
			}
		})
	}
}

// TestConcurrentPutsToOnePath: a logical conflict still answers as the
// contract says. Of two create-only put_file calls to the same new path,
// racing from two replicas (or through one Service), exactly one succeeds
// and the other is AlreadyExists, and the path holds the winner's body.
// (Replaces of one generation answer Conflict "Generation":
// TestPutFileReplaceRace.)
func TestConcurrentPutsToOnePath(t *testing.T) {
	for _, c := range contentionSetups {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			services := c.open(t)
			mustCall(t, services[0], "workbench_create", `{"id":"wb"}`)
			pair := services
			if len(pair) > 2 {
				pair = pair[:2]
			}
			for round := range 4 {
				path := fmt.Sprintf("same-%d.txt", round)
				failed := race(t, pair, "workbench_put_file", 2, func(i int) string {
					return putInput("wb", "outputs", path, fmt.Sprintf(`"text":"writer %d"`, i))
				})
				if got, want := fmt.Sprint(failed), "map[AlreadyExists:1]"; got != want {
					t.Fatalf("round %d: failures %s, want %s (one winner, one AlreadyExists)", round, got, want)
				}
				got := mustCall(t, services[0], "workbench_read", putInput("wb", "outputs", path, ""))
				if items := readItems(t, got, 0); items != `["writer 0"]` && items != `["writer 1"]` {
					t.Fatalf("round %d: %s reads %s", round, path, items)
				}
			}
		})
	}
}
