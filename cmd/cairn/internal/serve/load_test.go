package serve_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// Rates and length of TestServeLoadLoopback's phases.
const (
	loadStatRate = 200 // workbench_stat calls a second
	loadPutRate  = 100 // workbench_put_file calls a second
	loadPhase    = 2 * time.Second
)

// TestServeLoadLoopback drives a Server on a real loopback HTTP listener,
// over the memory bucket behind the latency wrapper (20 ms before every
// request, as a remote bucket answers), with an open loop: calls leave at
// a fixed rate whatever the answers' pace, so a slow server builds a queue
// rather than slowing the load. Three phases of two seconds each run
// workbench_stat alone, workbench_put_file alone (each a new small file),
// then both together. It logs, per phase and tool, the throughput and the
// p50 and p99 latencies, and from /metrics the head reads the engine made
// per request and the Pins that shared another's read, which is where
// coalescing shows: 200 stats a second against a 20 ms head read need
// far fewer than one read each. It fails on any error answer and if
// the stats did not share head reads.
//
// docs/performance.md ("cairn serve under load") has the figures.
func TestServeLoadLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode: runs about seven seconds of load")
	}
	lat := latency.New(mem.NewBucket(), latency.Options{PerRequest: 20 * time.Millisecond})
	s := serve.New(lat, serve.Options{})
	defer s.Close()
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}}
	defer client.CloseIdleConnections()
	tools := ts.URL + "/v1/agents/load/tools/"
	for _, c := range []struct{ tool, body string }{
		{"workbench_create", `{"id":"wb"}`},
		{"workbench_put_file", `{"id":"wb","section":"outputs","path":"stat/target.txt","text":"stat me\n"}`},
	} {
		if st, err := loadPost(client, tools+c.tool, c.body); err != nil || st != 200 {
			t.Fatalf("%s: %d %v", c.tool, st, err)
		}
	}

	var files atomic.Int64
	stat := loadStream{tool: "workbench_stat", rate: loadStatRate, body: func() string {
		return `{"id":"wb","section":"outputs","path":"stat/target.txt"}`
	}}
	put := loadStream{tool: "workbench_put_file", rate: loadPutRate, body: func() string {
		n := files.Add(1)
		return fmt.Sprintf(`{"id":"wb","section":"outputs","path":"put/%06d.txt","text":"file %d\n"}`, n, n)
	}}
	var report strings.Builder
	fmt.Fprintf(&report, "\nin-process server, loopback HTTP, bucket: memory + 20 ms per request; open loop, %s a phase;\nthe head columns count the whole phase, all tools together\n", loadPhase)
	fmt.Fprintf(&report, "%-6s %-18s %6s %5s %6s %9s %8s %8s %10s %10s %10s %12s\n",
		"phase", "tool", "rate/s", "sent", "errors", "done/s", "p50 ms", "p99 ms", "head reads", "coalesced", "reads/req", "head writes")
	for _, ph := range []struct {
		name    string
		streams []*loadStream
	}{
		{"stat", []*loadStream{&stat}},
		{"put", []*loadStream{&put}},
		{"mixed", []*loadStream{&stat, &put}},
	} {
		before := scrape(t, client, ts.URL)
		var wg sync.WaitGroup
		results := make([]loadResult, len(ph.streams))
		for i, st := range ph.streams {
			wg.Go(func() { results[i] = st.run(client, tools, loadPhase) })
		}
		wg.Wait()
		after := scrape(t, client, ts.URL)
		reads := after["cairn_engine_head_reads_total"] - before["cairn_engine_head_reads_total"]
		coalesced := after["cairn_engine_head_reads_coalesced_total"] - before["cairn_engine_head_reads_coalesced_total"]
		writes := after["cairn_engine_head_writes_total"] - before["cairn_engine_head_writes_total"]
		requests := 0
		for _, r := range results {
			requests += r.sent
		}
		for i, r := range results {
			fmt.Fprintf(&report, "%-6s %-18s %6d %5d %6d %9.1f %8.1f %8.1f", ph.name, ph.streams[i].tool, ph.streams[i].rate, r.sent, r.errors, r.throughput, r.p50, r.p99)
			if i == 0 {
				fmt.Fprintf(&report, " %10.0f %10.0f %10.2f %12.0f\n", reads, coalesced, reads/float64(requests), writes)
			} else {
				report.WriteString("\n")
			}
			if r.errors > 0 {
				t.Errorf("%s phase: %d of %d %s calls failed", ph.name, r.errors, r.sent, ph.streams[i].tool)
			}
		}
		if ph.name == "stat" && (coalesced == 0 || reads >= float64(requests)) {
			t.Errorf("stat phase: %v head reads, %v coalesced for %d stats: no coalescing", reads, coalesced, requests)
		}
	}
	t.Log(report.String())
}

// loadStream is one tool called at a fixed rate.
type loadStream struct {
	tool string
	rate int
	body func() string
}

// loadResult is what one stream measured in one phase.
type loadResult struct {
	sent, errors int
	throughput   float64 // answers a second, from the first call to the last answer
	p50, p99     float64 // milliseconds
}

// run calls the stream's tool at its rate for d, each call in its own
// goroutine (the loop never waits for an answer), then waits for the
// answers.
func (s *loadStream) run(client *http.Client, tools string, d time.Duration) loadResult {
	n := int(d.Seconds() * float64(s.rate))
	lats := make([]time.Duration, n)
	failed := make([]bool, n)
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(s.rate))
	defer tick.Stop()
	start := time.Now()
	for i := range n {
		<-tick.C
		body := s.body()
		wg.Go(func() {
			t0 := time.Now()
			st, err := loadPost(client, tools+s.tool, body)
			lats[i] = time.Since(t0)
			failed[i] = err != nil || st != 200
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	r := loadResult{sent: n, throughput: float64(n) / elapsed.Seconds()}
	for _, f := range failed {
		if f {
			r.errors++
		}
	}
	slices.Sort(lats)
	ms := func(p float64) float64 { return float64(lats[int(p*float64(n-1))].Microseconds()) / 1000 }
	r.p50, r.p99 = ms(0.5), ms(0.99)
	return r
}

func loadPost(client *http.Client, url, body string) (int, error) {
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// scrape reads /metrics and returns its samples without labels.
func scrape(t *testing.T, client *http.Client, base string) map[string]float64 {
	t.Helper()
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || strings.HasPrefix(name, "#") || strings.Contains(name, "{") {
			continue
		}
		if v, err := strconv.ParseFloat(value, 64); err == nil {
			m[name] = v
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cairn_engine_head_reads_total", "cairn_engine_head_reads_coalesced_total", "cairn_engine_head_writes_total"} {
		if _, ok := m[name]; !ok {
			t.Fatalf("/metrics has no %s", name)
		}
	}
	return m
}
