package serve_test

import (
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// TestMemoryGauges: /metrics says what the caches every agent shares hold
// and their budgets, as configured, and the live heap beside them.
func TestMemoryGauges(t *testing.T) {
	var opts serve.Options
	opts.Workbench.Engine.CacheBytes = 64 << 20
	opts.Workbench.BlockCacheBytes = 8 << 20
	h := newServer(t, mem.NewBucket(), opts).Handler()
	for _, agent := range []string{"a1", "a2"} {
		post(t, h, agent, "workbench_create", `{"id":"wb"}`)
		post(t, h, agent, "workbench_put_file", `{"id":"wb","section":"outputs","path":"x.txt","text":"x"}`)
		post(t, h, agent, "workbench_read", `{"id":"wb","section":"outputs","path":"x.txt"}`)
	}
	m := metricsText(t, h)
	for series, want := range map[string]float64{
		`cairn_cache_budget_bytes{cache="engine"}`: 64 << 20,
		`cairn_cache_budget_bytes{cache="blocks"}`: 8 << 20,
	} {
		if got := metricValue(t, m, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}
	if live := metricValue(t, m, `go_gc_heap_live_bytes`); live <= 0 {
		t.Errorf("go_gc_heap_live_bytes = %v", live)
	}
	if held := metricValue(t, m, `cairn_cache_bytes{cache="engine"}`); held <= 0 || held > 64<<20 {
		t.Errorf("the engine cache holds %v bytes, want some and at most its budget", held)
	}
	if held := metricValue(t, m, `cairn_cache_bytes{cache="blocks"}`); held < 0 || held > 8<<20 {
		t.Errorf("the block cache holds %v bytes", held)
	}
}
