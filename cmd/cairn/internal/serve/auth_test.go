package serve_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
)

// TestBearerTokens: each configured agent answers only its own token;
// an agent not configured is 404.
func TestBearerTokens(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{Tokens: map[string]string{"a1": "tok-one", "a2": "tok-two"}})
	h := s.Handler()
	if !s.Authenticated() {
		t.Fatal("a server with tokens says it is not authenticated")
	}
	create := `{"id":"wb1"}`
	for _, c := range []struct {
		name, agent, auth string
		status            int
		challenge         string
	}{
		{"no header", "a1", "", 401, `Bearer realm="cairn"`},
		{"wrong token", "a1", "Bearer nope", 401, `Bearer realm="cairn", error="invalid_token"`},
		{"another agent's token", "a1", "Bearer tok-two", 401, `Bearer realm="cairn", error="invalid_token"`},
		{"a prefix of the token", "a1", "Bearer tok-on", 401, `Bearer realm="cairn", error="invalid_token"`},
		{"basic scheme", "a1", "Basic dG9rLW9uZQ==", 401, `Bearer realm="cairn"`},
		{"right token", "a1", "Bearer tok-one", 200, ""},
		{"scheme in lower case", "a2", "bearer tok-two", 200, ""},
		{"agent not configured", "a3", "Bearer tok-one", 404, ""},
	} {
		var got response
		if c.auth == "" {
			got = post(t, h, c.agent, "workbench_create", create)
		} else {
			got = post(t, h, c.agent, "workbench_create", create, "Authorization", c.auth)
		}
		if got.status != c.status || got.header.Get("WWW-Authenticate") != c.challenge {
			t.Errorf("%s: %d %q %s, want %d %q", c.name, got.status, got.header.Get("WWW-Authenticate"), got.body, c.status, c.challenge)
		}
		if c.status == 401 && code(t, got.body) != serve.CodeUnauthenticated {
			t.Errorf("%s: %s", c.name, got.body)
		}
		if c.status == 404 && code(t, got.body) != serve.CodeUnknownAgent {
			t.Errorf("%s: %s", c.name, got.body)
		}
	}
	// The operational routes ask for no token.
	for _, path := range []string{"/healthz", "/readyz", "/metrics", "/openapi.json"} {
		if got := do(h, httptest.NewRequest("GET", path, nil)); got.status != 200 {
			t.Errorf("%s: %d", path, got.status)
		}
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7070": true, "localhost:0": true, "[::1]:80": true, "127.9.9.9:1": true,
		"0.0.0.0:7070": false, ":7070": false, "[::]:7070": false, "10.0.0.1:80": false, "example.com:80": false,
	} {
		got, err := serve.Loopback(addr)
		if err != nil || got != want {
			t.Errorf("Loopback(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := serve.Loopback("no-port"); err == nil {
		t.Error("an address without a port is accepted")
	}
}

func TestParseTokens(t *testing.T) {
	got, err := serve.ParseTokens(" a1=token-one-0123456789, a2=t=2-0123456789abcdef ,")
	if err != nil || len(got) != 2 || got["a1"] != "token-one-0123456789" || got["a2"] != "t=2-0123456789abcdef" {
		t.Fatalf("ParseTokens: %v, %v", got, err)
	}
	for _, bad := range []string{"a1", "=t", "a1=", "a1=x0123456789abcdef,a1=y0123456789abcdef", "a1=xshort"} {
		if _, err := serve.ParseTokens(bad); err == nil {
			t.Errorf("ParseTokens(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "x") && strings.Contains(bad, "=x") {
			t.Errorf("the error shows a token: %v", err)
		}
	}
}

// TestReadyHealthMetrics: healthz answers; readyz validates the heads of
// the open agents and fails when the bucket does; the metrics name every
// family and count the calls.
func TestReadyHealthMetrics(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	h := newServer(t, fb, serve.Options{}).Handler()
	if got := do(h, httptest.NewRequest("GET", "/healthz", nil)); got.status != 200 {
		t.Fatalf("healthz: %d", got.status)
	}
	if got := do(h, httptest.NewRequest("GET", "/readyz", nil)); got.status != 200 {
		t.Fatalf("readyz with no agent: %d %s", got.status, got.body)
	}
	post(t, h, "a1", "workbench_create", `{"id":"wb1"}`)
	post(t, h, "a1", "workbench_put_file", `{"id":"wb1","section":"outputs","path":"x.txt","text":"x"}`)
	post(t, h, "a1", "workbench_read", `{"id":"wb1","section":"outputs","path":"x.txt"}`)
	post(t, h, "a1", "workbench_read", `{"id":"wb1","section":"outputs","path":"x.txt"}`)
	got := do(h, httptest.NewRequest("GET", "/readyz", nil))
	if got.status != 200 || !strings.Contains(string(got.body), `"open_agents":1`) {
		t.Fatalf("readyz: %d %s", got.status, got.body)
	}

	m := metricsText(t, h)
	for _, want := range []string{
		`cairn_http_requests_total{tool="workbench_read",status="200"} 2`,
		`cairn_http_requests_total{tool="workbench_create",status="200"} 1`,
		`cairn_http_request_duration_seconds_bucket{tool="workbench_read",status="200",le="+Inf"} 2`,
		`cairn_http_request_duration_seconds_count{tool="workbench_put_file",status="200"} 1`,
		`cairn_open_agents 1`,
		`# TYPE cairn_bucket_requests_total counter`,
		`# TYPE cairn_engine_cache_hit_ratio gauge`,
		`cairn_engine_intents_published_total`,
		`cairn_idempotent_replays_total 0`,
		`# TYPE cairn_engine_group_commit_size histogram`,
		`cairn_engine_group_commit_size_bucket{le="+Inf"}`,
		`cairn_engine_cas_conflicts_total 0`,
		`cairn_engine_head_reads_coalesced_total`,
		`cairn_build_info{version="(devel)",goversion="go`,
		`# TYPE go_goroutines gauge`,
		`# TYPE process_resident_memory_bytes gauge`,
		`# TYPE process_open_fds gauge`,
		`# TYPE process_cpu_seconds_total counter`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if puts := metricValue(t, m, `cairn_bucket_requests_total{op="put"}`); puts < 3 {
		t.Errorf("bucket puts counted: %v", puts)
	}
	if n := metricValue(t, m, `cairn_engine_head_writes_total`); n < 2 {
		t.Errorf("head writes counted: %v", n)
	}
	if n := metricValue(t, m, `cairn_engine_group_commit_size_sum`); n < 2 {
		t.Errorf("commands counted: %v", n)
	}
	if n := metricValue(t, m, `cairn_engine_group_commit_size_bucket{le="4096"}`); n != metricValue(t, m, `cairn_engine_group_commit_size_count`) {
		t.Errorf("the size buckets do not add up to the count: %v", n)
	}

	// A bucket that fails makes the server unready.
	fb.Inject(fault.Rule{Op: fault.OpGet | fault.OpList, Fault: fault.FailBefore(bucket.ErrUnavailable)})
	got = do(h, httptest.NewRequest("GET", "/readyz", nil))
	if got.status != http.StatusServiceUnavailable || !strings.Contains(string(got.body), "agent a1") {
		t.Fatalf("readyz with a failing bucket: %d %s", got.status, got.body)
	}
}

func metricValue(t *testing.T, text, series string) float64 {
	t.Helper()
	for line := range strings.SplitSeq(text, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			var f float64
			if _, err := fmt.Sscan(v, &f); err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	t.Fatalf("no series %s", series)
	return 0
}
