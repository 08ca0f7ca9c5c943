package serve_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// BenchmarkPutFileHTTPOpenLoop posts put_file calls through a real HTTP
// server over a bucket that answers every request after 20 ms, at a fixed
// rate whatever the answers' pace (open loop: a slow server builds a
// queue instead of slowing the load), and reports the latency
// percentiles a client sees. Run it with a fixed count, for example
// -benchtime=1000x; the rate is 200 calls a second.
func BenchmarkPutFileHTTPOpenLoop(b *testing.B) {
	const rate = 200
	lat := latency.New(mem.NewBucket(), latency.Options{PerRequest: 20 * time.Millisecond})
	s := serve.New(lat, serve.Options{})
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	url := ts.URL + "/v1/agents/bench/tools/"
	post := func(tool, body string) (int, error) {
		resp, err := http.Post(url+tool, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	if st, err := post("workbench_create", `{"id":"wb"}`); err != nil || st != 200 {
		b.Fatalf("create: %d %v", st, err)
	}

	lats := make([]time.Duration, b.N)
	failed := make([]bool, b.N)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / rate)
	defer tick.Stop()
	b.ResetTimer()
	for i := range b.N {
		<-tick.C
		wg.Go(func() {
			start := time.Now()
			st, err := post("workbench_put_file", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"f/%06d.txt","text":"file %d\n"}`, i, i))
			lats[i] = time.Since(start)
			failed[i] = err != nil || st != 200
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(lats)
	pct := func(p float64) float64 { return float64(lats[int(p*float64(len(lats)-1))].Microseconds()) / 1000 }
	b.ReportMetric(pct(0.5), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(lats[len(lats)-1].Microseconds())/1000, "max-ms")
	errs := 0
	for _, f := range failed {
		if f {
			errs++
		}
	}
	b.ReportMetric(float64(errs), "errors")
}
