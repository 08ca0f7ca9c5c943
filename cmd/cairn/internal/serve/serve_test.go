package serve_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// newServer returns a Server over b and closes it after the test.
func newServer(t *testing.T, b bucket.Bucket, opts serve.Options) *serve.Server {
	t.Helper()
	s := serve.New(b, opts)
	t.Cleanup(s.Close)
	return s
}

// response is what one request got.
type response struct {
	status int
	header http.Header
	body   []byte
}

// post posts body to a tool route of h, with extra headers as name,
// value pairs.
func post(t *testing.T, h http.Handler, agent, tool, body string, headers ...string) response {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/"+agent+"/tools/"+tool, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	return do(h, req)
}

func do(h http.Handler, req *http.Request) response {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	// Every answer ends its line; the tests compare what precedes it.
	return response{status: rec.Code, header: rec.Result().Header, body: bytes.TrimSuffix(rec.Body.Bytes(), []byte("\n"))}
}

// code returns the code of an error envelope, "" for a success.
func code(t *testing.T, body []byte) string {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(body, &env); err != nil {
		t.Fatalf("body is not JSON: %v: %q", err, body)
	}
	if env["status"] == "success" {
		return ""
	}
	c, _ := env["code"].(string)
	return c
}

// calls is a sequence touching every tool: the served ones on real data,
// the unserved ones on valid input (Unimplemented), and failures.
var calls = []struct{ tool, input string }{
	{"workbench_create", `{"id":"wb1"}`},
	{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"a/b.txt","text":"one\ntwo\n"}`},
	{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"a/b.txt","text":"again"}`},
	{"workbench_append", `{"id":"wb1","section":"outputs","path":"a/b.txt","text":"three\n"}`},
	{"workbench_edit", `{"id":"wb1","section":"outputs","path":"a/b.txt","old_string":"two","new_string":"2"}`},
	{"workbench_edit", `{"id":"wb1","section":"outputs","path":"a/b.txt","old_string":"absent","new_string":"x"}`},
	{"workbench_stat", `{"id":"wb1","section":"outputs","path":"a/b.txt"}`},
	{"workbench_read", `{"id":"wb1","section":"outputs","path":"a/b.txt"}`},
	{"workbench_read", `{"id":"wb1","section":"outputs","path":"missing.txt"}`},
	{"workbench_list", `{"id":"wb1","section":"outputs"}`},
	{"workbench_grep", `{"id":"wb1","pattern":"t","recursive":true}`},
	{"workbench_search", `{"id":"wb1"}`},
	{"workbench_aggregate", `{"id":"wb1","measures":[{"op":"count","name":"n"}]}`},
	{"workbench_catalog", `{"id":"wb1"}`},
	{"workbench_find", `{}`},
	{"workbench_commit", `{}`},
	{"workbench_snapshot", `{"id":"wb1"}`},
	{"workbench_snapshot_renew", `{"id":"wb1"}`},
	{"workbench_snapshot_retire", `{"id":"wb1"}`},
	{"workbench_snapshot_list", `{"id":"wb1"}`},
	{"workbench_restore", `{"id":"wb1","destination_id":"wb2"}`},
	{"workbench_nonesuch", `{}`},
	{"workbench_read", `{"id":`},
}

// TestToolRoutesMatchCall runs the same calls through the HTTP routes and
// through Service.Call on two fresh buckets: every body is the same bytes,
// and every status is the one of its envelope's code.
func TestToolRoutesMatchCall(t *testing.T) {
	ctx := context.Background()
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	svc, err := workbench.Open(ctx, mem.NewBucket(), workbench.Options{AgentID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	seen := map[string]bool{}
	successes := 0
	for i, c := range calls {
		got := post(t, h, "a1", c.tool, c.input)
		want, ok := svc.Call(ctx, c.tool, []byte(c.input))
		if !bytes.Equal(got.body, want) {
			t.Fatalf("call %d %s:\nhttp %s\ncall %s", i, c.tool, got.body, want)
		}
		wantStatus := http.StatusOK
		if ok {
			successes++
		} else {
			var env struct {
				Code      string
				Retryable bool
			}
			json.Unmarshal(want, &env)
			wantStatus = serve.Status(env.Code, env.Retryable)
		}
		if got.status != wantStatus {
			t.Fatalf("call %d %s: status %d, want %d (%s)", i, c.tool, got.status, wantStatus, got.body)
		}
		if ct := got.header.Get("Content-Type"); ct != "application/json" {
			t.Fatalf("call %d: content type %q", i, ct)
		}
		seen[c.tool] = true
	}
	for _, tool := range workbench.Tools() {
		if !seen[tool] {
			t.Errorf("no call of %s", tool)
		}
	}
	if successes < 11 {
		t.Errorf("only %d calls succeeded: the sequence no longer exercises the tools", successes)
	}
}

// TestStatusesOfToolErrors checks the status of the errors a client
// meets most, end to end.
func TestStatusesOfToolErrors(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	post(t, h, "a1", "workbench_create", `{"id":"wb1"}`)
	put := `{"id":"wb1","section":"outputs","path":"x.txt","text":"x"}`
	post(t, h, "a1", "workbench_put_file", put)
	for _, c := range []struct {
		tool, input string
		status      int
		code        string
	}{
		{"workbench_read", `{"id":"wb1"`, 400, "InvalidArguments"},
		{"workbench_read", `{"id":"wb1","section":"outputs","path":"y.txt"}`, 404, "NotFound"},
		{"workbench_put_file", put, 409, "AlreadyExists"},
		{"workbench_nonesuch", `{}`, 404, "UnknownTool"},
		{"workbench_snapshot", `{"id":"wb1"}`, 422, "InvalidState"},
		{"workbench_snapshot_renew", `{"id":"wb1","name":"nonesuch"}`, 404, "SnapshotNotFound"},
		{"workbench_edit", `{"id":"wb1","section":"outputs","path":"x.txt","old_string":"q","new_string":"r"}`, 422, "NoMatch"},
	} {
		got := post(t, h, "a1", c.tool, c.input)
		if got.status != c.status || code(t, got.body) != c.code {
			t.Errorf("%s %s: %d %s, want %d %s", c.tool, c.input, got.status, got.body, c.status, c.code)
		}
	}
}

// TestRetryableErrorsSayRetryAfter: a retryable envelope carries a
// Retry-After header and a server-side one is 503.
func TestRetryableErrorsSayRetryAfter(t *testing.T) {
	if got := serve.Status(workbench.CodeObjectUnavailable, true); got != 503 {
		t.Errorf("retryable ObjectUnavailable: %d", got)
	}
	if got := serve.Status(workbench.CodeObjectUnavailable, false); got != 502 {
		t.Errorf("ObjectUnavailable: %d", got)
	}
	if got := serve.Status(workbench.CodeConflict, true); got != 409 {
		t.Errorf("Conflict: %d", got)
	}
	if got := serve.Status("SomethingNew", false); got != 500 {
		t.Errorf("unknown code: %d", got)
	}
	// A request cancelled before it ran is the retryable Cancelled.
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/a1/tools/workbench_create", strings.NewReader(`{"id":"wb1"}`)).WithContext(ctx)
	got := do(h, req)
	if got.status != 503 || code(t, got.body) != workbench.CodeCancelled || got.header.Get("Retry-After") == "" {
		t.Fatalf("cancelled: %d %v %s", got.status, got.header, got.body)
	}
}

// countingReader is an endless body that counts what is read of it.
type countingReader struct{ n int64 }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	r.n += int64(len(p))
	return len(p), nil
}

// TestBodyTooLarge: a body over the tool's input bound is 413, read no
// further than the bound (not at all when its length says so).
func TestBodyTooLarge(t *testing.T) {
	opts := serve.Options{Workbench: workbench.Options{MaxBytes: 1 << 10}}
	h := newServer(t, mem.NewBucket(), opts).Handler()
	limit := workbench.MaxInputBytes("workbench_put_file", 1<<10)

	body := &countingReader{}
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/a1/tools/workbench_put_file", io.NopCloser(body))
	req.ContentLength = -1 // chunked: the length is not known ahead
	req.Header.Set("Content-Type", "application/json")
	got := do(h, req)
	if got.status != 413 || code(t, got.body) != workbench.CodePayloadTooLarge {
		t.Fatalf("endless body: %d %s", got.status, got.body)
	}
	if body.n > limit+64<<10 {
		t.Fatalf("read %d bytes of an endless body, limit %d", body.n, limit)
	}

	body = &countingReader{}
	req = httptest.NewRequest(http.MethodPost, "/v1/agents/a1/tools/workbench_put_file", io.NopCloser(body))
	req.ContentLength = limit + 1
	got = do(h, req)
	if got.status != 413 || body.n != 0 {
		t.Fatalf("declared length over the bound: %d, read %d bytes: %s", got.status, body.n, got.body)
	}
	if !strings.Contains(string(got.body), strconv.FormatInt(limit, 10)) {
		t.Fatalf("the envelope does not name the bound: %s", got.body)
	}
}

// TestRoutesAndMethods: unknown routes, wrong methods and bodies that are
// not JSON.
func TestRoutesAndMethods(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	for _, c := range []struct {
		method, path, ctype, body string
		status                    int
		code                      string
	}{
		{"GET", "/v1/nowhere", "", "", 404, serve.CodeRouteNotFound},
		{"GET", "/v1/agents/a1/tools/workbench_read", "", "", 405, serve.CodeMethodNotAllowed},
		{"PUT", "/v1/agents/a1/tools/workbench_read", "application/json", "{}", 405, serve.CodeMethodNotAllowed},
		{"POST", "/healthz", "", "", 405, serve.CodeMethodNotAllowed},
		{"POST", "/v1/agents/a1/tools/workbench_create", "text/plain", `{"id":"x"}`, 415, serve.CodeUnsupportedMedia},
		{"POST", "/v1/agents/a1/tools/workbench_create", "application/json; charset=utf-8", `not json`, 400, workbench.CodeInvalidArguments},
		{"POST", "/v1/agents/a1/tools/workbench_create", "application/json", `[1]`, 400, workbench.CodeInvalidArguments},
		{"POST", "/v1/agents/a%2Fb/tools/workbench_create", "application/json", `{"id":"x"}`, 400, workbench.CodeInvalidArguments},
		{"POST", "/v1/agents/..%5C/mcp", "application/json", `{}`, 404, serve.CodeRouteNotFound},
	} {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		if c.ctype != "" {
			req.Header.Set("Content-Type", c.ctype)
		}
		got := do(h, req)
		if got.status != c.status || code(t, got.body) != c.code {
			t.Errorf("%s %s (%s): %d %s, want %d %s", c.method, c.path, c.ctype, got.status, got.body, c.status, c.code)
		}
		if c.status == 405 && got.header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", c.method, c.path)
		}
	}
	// A request id is echoed, or made.
	req := httptest.NewRequest("GET", "/healthz", nil)
	req.Header.Set("X-Request-Id", "req-42")
	if got := do(h, req); got.header.Get("X-Request-Id") != "req-42" {
		t.Errorf("X-Request-Id not echoed: %v", got.header)
	}
	if got := do(h, httptest.NewRequest("GET", "/healthz", nil)); len(got.header.Get("X-Request-Id")) < 16 {
		t.Errorf("no X-Request-Id made: %v", got.header)
	}
}

// TestNonCanonicalPathsAre400: a path with a "." or ".." segment, or an
// empty one, is refused with 400 (InvalidArguments, details {path}), not
// redirected to its cleaned form as Go's ServeMux would (307): an agent id
// ".." cannot form a root (docs/api.md), and a redirect would send the
// call, and its token, to another route or agent. Nothing is created.
func TestNonCanonicalPathsAre400(t *testing.T) {
	for _, opts := range []serve.Options{{}, {Tokens: map[string]string{"a1": "t"}}} {
		b := mem.NewBucket()
		h := newServer(t, b, opts).Handler()
		for _, p := range []string{
			"/v1/agents/../tools/workbench_create",
			"/v1/agents/./tools/workbench_create",
			"/v1/agents/a2/../a1/tools/workbench_create",
			"/v1/agents//tools/workbench_create",
			"/v1/agents/a1/tools/../tools/workbench_create",
			"/v1/agents/../mcp",
			"/v1/agents/a1/./mcp",
			"/./healthz",
			"//openapi.json",
		} {
			req := httptest.NewRequest("POST", p, strings.NewReader(`{"id":"wb"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer t")
			got := do(h, req)
			if got.status != 400 || code(t, got.body) != workbench.CodeInvalidArguments || got.header.Get("Location") != "" {
				t.Errorf("POST %s: %d %s (Location %q), want 400 InvalidArguments", p, got.status, got.body, got.header.Get("Location"))
			}
			var env struct{ Details map[string]any }
			if err := json.Unmarshal(got.body, &env); err != nil || env.Details["path"] != p {
				t.Errorf("POST %s: details %v, want path", p, env.Details)
			}
		}
		// The canonical forms still route.
		if got := post(t, h, "a1", "workbench_create", `{"id":"wb"}`, "Authorization", "Bearer t"); got.status != 200 {
			t.Fatalf("create: %d %s", got.status, got.body)
		}
		if got := do(h, httptest.NewRequest("GET", "/healthz", nil)); got.status != 200 {
			t.Fatalf("healthz: %d %s", got.status, got.body)
		}
	}
}

// TestIdleAgentsClose: an agent's engine closes after the idle period,
// not while a request holds it, and opens again on the next request.
func TestIdleAgentsClose(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{IdleTimeout: 50 * time.Millisecond}).Handler()
	if got := post(t, h, "a1", "workbench_create", `{"id":"wb1"}`); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	if n := openAgents(t, h); n != 1 {
		t.Fatalf("open agents after a call: %d", n)
	}
	deadline := time.Now().Add(5 * time.Second)
	for openAgents(t, h) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle agent was never closed")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := post(t, h, "a1", "workbench_stat", `{"id":"wb1"}`); got.status != 200 {
		t.Fatalf("stat after the close: %d %s", got.status, got.body)
	}
}

// openAgents reads cairn_open_agents from /metrics.
func openAgents(t *testing.T, h http.Handler) int {
	t.Helper()
	m := metricsText(t, h)
	for line := range strings.SplitSeq(m, "\n") {
		if v, ok := strings.CutPrefix(line, "cairn_open_agents "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no cairn_open_agents in:\n%s", m)
	return 0
}

func metricsText(t *testing.T, h http.Handler) string {
	t.Helper()
	got := do(h, httptest.NewRequest("GET", "/metrics", nil))
	if got.status != 200 || !strings.HasPrefix(got.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %d %v", got.status, got.header)
	}
	return string(got.body)
}

// TestBusyAgentStaysOpen: an agent whose request outlasts the idle period
// is not closed under it.
func TestBusyAgentStaysOpen(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	h := newServer(t, fb, serve.Options{IdleTimeout: 20 * time.Millisecond}).Handler()
	if got := post(t, h, "a1", "workbench_create", `{"id":"wb1"}`); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fb.Inject(fault.Rule{Op: fault.OpPut, Fault: fault.Hook(func(_ context.Context, _ fault.Op, key string) error {
		if strings.HasSuffix(key, "/head") {
			once.Do(func() { close(reached) })
			<-release
		}
		return nil
	})})
	done := make(chan response, 1)
	go func() {
		done <- post(t, h, "a1", "workbench_put_file", `{"id":"wb1","section":"outputs","path":"x.txt","text":"x"}`)
	}()
	<-reached
	time.Sleep(100 * time.Millisecond) // five idle periods
	if n := openAgents(t, h); n != 1 {
		t.Fatalf("the busy agent was closed: %d open", n)
	}
	close(release)
	if got := <-done; got.status != 200 {
		t.Fatalf("put: %d %s", got.status, got.body)
	}
}

// TestRequestDeadline: a request that outlives --request-timeout ends
// with the retryable Timeout, 504.
func TestRequestDeadline(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	h := newServer(t, fb, serve.Options{RequestTimeout: 50 * time.Millisecond}).Handler()
	if got := post(t, h, "a1", "workbench_create", `{"id":"wb1"}`); got.status != 200 {
		t.Fatalf("create: %d %s", got.status, got.body)
	}
	fb.Inject(fault.Rule{Op: fault.OpGet, Fault: fault.Hook(func(ctx context.Context, _ fault.Op, _ string) error {
		<-ctx.Done()
		return ctx.Err()
	})})
	got := post(t, h, "a1", "workbench_stat", `{"id":"wb1"}`)
	if got.status != http.StatusGatewayTimeout || code(t, got.body) != workbench.CodeTimeout || got.header.Get("Retry-After") == "" {
		t.Fatalf("stat past the deadline: %d %v %s", got.status, got.header, got.body)
	}
}

// TestSlowBodyMeetsDeadline: a client that stops sending its body halfway
// is answered Timeout once the request's deadline passes.
func TestSlowBodyMeetsDeadline(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{RequestTimeout: 100 * time.Millisecond})
	ts := httptest.NewServer(s.Handler())
	defer ts.Close()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/agents/a1/tools/workbench_create HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"id\":")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusGatewayTimeout || code(t, body) != workbench.CodeTimeout {
		t.Fatalf("stalled body: %d %s", resp.StatusCode, body)
	}
}

// TestForeignHostRefused: a server without tokens, reached at its
// loopback address under a Host that is not a loopback name (a page of
// another site whose name was made to resolve to 127.0.0.1), answers
// 403 ForeignHost on every route and runs nothing; under a loopback name
// it serves, and a server with tokens serves any Host (the token is its
// guard).
func TestForeignHostRefused(t *testing.T) {
	b := mem.NewBucket()
	tokenless := httptest.NewServer(newServer(t, b, serve.Options{}).Handler())
	defer tokenless.Close()
	withTokens := httptest.NewServer(newServer(t, mem.NewBucket(), serve.Options{Tokens: map[string]string{"a1": "secret"}}).Handler())
	defer withTokens.Close()
	port := tokenless.Listener.Addr().(*net.TCPAddr).Port
	send := func(ts *httptest.Server, method, path, host, body string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer secret")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, bytes.TrimSuffix(got, []byte("\n"))
	}
	create := `{"id":"wb1"}`
	for _, host := range []string{"cairn.example.com", fmt.Sprintf("cairn.example.com:%d", port), "127.0.0.1.example.com", "10.0.0.1"} {
		for _, route := range []struct{ method, path, body string }{
			{http.MethodPost, "/v1/agents/a1/tools/workbench_create", create},
			{http.MethodGet, "/metrics", ""},
			{http.MethodGet, "/readyz", ""},
			{http.MethodPost, "/v1/agents/a1/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		} {
			status, body := send(tokenless, route.method, route.path, host, route.body)
			if status != http.StatusForbidden || code(t, body) != serve.CodeForeignHost {
				t.Errorf("Host %s, %s %s: %d %s, want 403 %s", host, route.method, route.path, status, body, serve.CodeForeignHost)
			}
		}
	}
	if status, body := send(tokenless, http.MethodPost, "/v1/agents/a1/tools/workbench_stat", "127.0.0.1", create); status != http.StatusNotFound {
		t.Fatalf("the refused create ran: stat answered %d %s", status, body)
	}
	for _, host := range []string{fmt.Sprintf("localhost:%d", port), fmt.Sprintf("127.0.0.1:%d", port), fmt.Sprintf("[::1]:%d", port), "LOCALHOST"} {
		if status, body := send(tokenless, http.MethodGet, "/metrics", host, ""); status != http.StatusOK {
			t.Errorf("Host %s: %d %s, want 200", host, status, body)
		}
	}
	if status, body := send(tokenless, http.MethodPost, "/v1/agents/a1/tools/workbench_create", "localhost", create); status != http.StatusOK {
		t.Errorf("create at localhost: %d %s", status, body)
	}
	if status, body := send(withTokens, http.MethodPost, "/v1/agents/a1/tools/workbench_create", "cairn.example.com", create); status != http.StatusOK {
		t.Errorf("a server with tokens, Host cairn.example.com: %d %s", status, body)
	}
	// HTTP/1.0 without a Host (a script, not a browser) is served.
	conn, err := net.Dial("tcp", tokenless.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /healthz HTTP/1.0\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("HTTP/1.0 without a Host: %d, want 200", resp.StatusCode)
	}
}
