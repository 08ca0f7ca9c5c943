package workbench_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench"
)

// newService opens a Service for agent "test" over a fresh memory bucket,
// with the engine's strict Check after every commit.
func newService(t testing.TB) *workbench.Service {
	t.Helper()
	return newServiceOn(t, mem.NewBucket(), workbench.Options{})
}

// newServiceOn opens a Service over b and initializes its store; several
// on one bucket are replicas.
func newServiceOn(t testing.TB, b bucket.Bucket, opts workbench.Options) *workbench.Service {
	t.Helper()
	if opts.AgentID == "" {
		opts.AgentID = "test"
	}
	opts.Engine.Check = true
	s, err := workbench.Open(context.Background(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// Open does no I/O and a read of a store without a head fails; tests
	// begin from an initialized deployment, as after its first write.
	if err := s.Store().Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

// newReplicas opens n Services over one shared memory store: replicas of
// one deployment that share only the bucket.
func newReplicas(t testing.TB, n int, opts workbench.Options) (*mem.Store, []*workbench.Service) {
	t.Helper()
	store := mem.NewStore()
	services := make([]*workbench.Service, n)
	for i := range services {
		b, err := mem.New(store, "")
		if err != nil {
			t.Fatal(err)
		}
		services[i] = newServiceOn(t, b, opts)
	}
	return store, services
}

// call runs a tool and returns its decoded result and success flag.
func call(t testing.TB, s *workbench.Service, tool, input string) (map[string]any, bool) {
	t.Helper()
	out, ok := s.Call(context.Background(), tool, []byte(input))
	var m map[string]any
	if err := jsonUnmarshal(out, &m); err != nil {
		t.Fatalf("%s: result is not JSON: %v\n%s", tool, err, out)
	}
	return m, ok
}

// mustCall runs a tool that must succeed.
func mustCall(t testing.TB, s *workbench.Service, tool, input string) map[string]any {
	t.Helper()
	m, ok := call(t, s, tool, input)
	if !ok {
		t.Fatalf("%s %s failed: %v", tool, input, m)
	}
	return m
}

var _ = head.Options{}

// storeClock is a store's clock (mem.NewBucketAt) that tests move on:
// the real time plus an offset.
type storeClock struct{ offset atomic.Int64 }

func newStoreClock() *storeClock { return &storeClock{} }

// Now is the store's time.
func (c *storeClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the store's clock on by d.
func (c *storeClock) Advance(d time.Duration) { c.offset.Add(int64(d)) }
