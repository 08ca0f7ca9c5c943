package serve_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/cairnstore/cairn/cmd/cairn/internal/mcpserve"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// TestBodyBudget: while one request's body holds the whole body budget,
// another is refused with 503 ServerBusy, retryable, after BodyWait; once
// the first is done, the second goes through.
func TestBodyBudget(t *testing.T) {
	mount := func(call serve.CallFunc) http.Handler { return mcpserve.Handler(mcpserve.CallFunc(call)) }
	s := newServer(t, mem.NewBucket(), serve.Options{BodyBudget: 1 << 20, BodyWait: 50 * time.Millisecond, MCP: mount})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	url := srv.URL + "/v1/agents/a/tools/workbench_put_file"

	// The first body declares 1 MiB and sends it slowly.
	pr, pw := io.Pipe()
	defer pw.Close()
	first := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, pr)
		req.ContentLength = 1 << 20
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	prefix := `{"id":"w","section":"outputs","path":"a.txt","text":"`
	body := prefix + strings.Repeat("x", 1<<20-len(prefix)-2) + `"}`
	pw.Write([]byte(body[:1000]))

	// Once the first request holds the large bodies' share of the budget
	// (a put of 300 KiB finds no room: it is refused, retryable), a small
	// body still goes through.
	busy := func(tool, in string) (int, string, string) {
		resp, err := http.Post(srv.URL+"/v1/agents/a/tools/"+tool, "application/json", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(out), resp.Header.Get("Retry-After")
	}
	large := `{"id":"w","section":"outputs","path":"c.txt","text":"` + strings.Repeat("c", 300<<10) + `"}`
	for deadline := time.Now().Add(10 * time.Second); ; {
		if st, _, _ := busy("workbench_put_file", large); st == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first request never held the body budget")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, out, retry := busy("workbench_put_file", large); st != http.StatusServiceUnavailable || !strings.Contains(out, `"ServerBusy"`) || retry == "" {
		t.Fatalf("second large body while the budget is held: %d %s (Retry-After %q)", st, out, retry)
	}
	if st, out, _ := busy("workbench_stat", `{"id":"w"}`); st == http.StatusServiceUnavailable { // 404: there is no workbench w
		t.Fatalf("a small body while the large ones' share is held: %d %s", st, out)
	}
	// An MCP body is charged to the same budget: a large one is refused,
	// a small one goes through.
	mcp := func(args string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/agents/a/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_put_file","arguments":`+args+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(out)
	}
	if st, out := mcp(large); st != http.StatusServiceUnavailable || !strings.Contains(out, `"ServerBusy"`) {
		t.Fatalf("a large MCP body while the budget is held: %d %.200s", st, out)
	}
	if st, out := mcp(`{"id":"w","section":"outputs","path":"m.txt","text":"m"}`); st != http.StatusOK {
		t.Fatalf("a small MCP body while the large ones' share is held: %d %.200s", st, out)
	}
	pw.Write([]byte(body[1000:]))
	pw.Close()
	if st := <-first; st != http.StatusOK {
		t.Fatalf("first request: %d", st)
	}
	// The first gives its share back once its answer is written, a moment
	// after the client has it.
	for deadline := time.Now().Add(60 * time.Second); metricValue(t, metricsText(t, s.Handler()), "cairn_request_body_bytes_held") != 0; {
		if time.Now().After(deadline) {
			t.Fatal("the first request never gave its share of the budget back")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, out, _ := busy("workbench_put_file", large); st != http.StatusOK {
		t.Fatalf("second body once the budget is free: %d %s", st, out)
	}
	if v := metricValue(t, metricsText(t, s.Handler()), "cairn_server_busy_total"); v < 2 {
		t.Errorf("cairn_server_busy_total %v, want the refusals counted", v)
	}
}

// TestSmallBodiesDoNotQueueBehindLarge: while a large body waits for
// room in the body budget, a small call does not wait behind it; the
// large one goes through once room is made.
func TestSmallBodiesDoNotQueueBehindLarge(t *testing.T) {
	s := newServer(t, mem.NewBucket(), serve.Options{BodyBudget: 1 << 20, BodyWait: 5 * time.Minute})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	url := srv.URL + "/v1/agents/a/tools/workbench_put_file"
	metric := func(name string) float64 { return metricValue(t, metricsText(t, s.Handler()), name) }
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(60 * time.Second); !ok(); {
			if time.Now().After(deadline) {
				t.Fatal(what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	put := func(r io.Reader, n int64, done chan<- int) {
		req, _ := http.NewRequest(http.MethodPost, url, r)
		req.ContentLength = n
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		resp.Body.Close()
		done <- resp.StatusCode
	}
	body := func(path string, n int) string {
		prefix := `{"id":"w","section":"outputs","path":"` + path + `","text":"`
		return prefix + strings.Repeat("x", n-len(prefix)-2) + `"}`
	}

	// The first holds the large bodies' share; the second waits for it.
	pr, pw := io.Pipe()
	defer pw.Close()
	first, second := make(chan int, 1), make(chan int, 1)
	firstBody := body("a.txt", 1<<20)
	go put(pr, int64(len(firstBody)), first)
	pw.Write([]byte(firstBody[:1000]))
	waitFor("the first body never held the budget", func() bool { return metric("cairn_request_body_bytes_held") > 0 })
	secondBody := body("b.txt", 300<<10)
	go put(strings.NewReader(secondBody), int64(len(secondBody)), second)
	waitFor("the second body never waited", func() bool { return metric("cairn_request_bodies_waiting") == 1 })

	client := &http.Client{Timeout: 30 * time.Second}
	resp, err := client.Post(srv.URL+"/v1/agents/a/tools/workbench_stat", "application/json", strings.NewReader(`{"id":"w"}`))
	if err != nil {
		t.Fatalf("a small call while a large body waits: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout { // 404: there is no workbench w
		t.Fatalf("a small call while a large body waits: %d", resp.StatusCode)
	}
	select {
	case st := <-second:
		t.Fatalf("the waiting body answered %d while the budget was held", st)
	default:
	}
	pw.Write([]byte(firstBody[1000:]))
	pw.Close()
	if st := <-first; st != http.StatusOK {
		t.Fatalf("first body: %d", st)
	}
	if st := <-second; st != http.StatusOK {
		t.Fatalf("second body once room was made: %d", st)
	}
}

// TestFailedAuthenticationIsRateLimited: an address that fails
// authentication DefaultAuthFailBurst times is refused 429 with
// Retry-After, even with the right token, and another address is not.
func TestFailedAuthenticationIsRateLimited(t *testing.T) {
	const token = "token-of-a1-0123456789"
	h := newServer(t, mem.NewBucket(), serve.Options{Tokens: map[string]string{"a1": token}}).Handler()
	call := func(addr, tok string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/v1/agents/a1/tools/workbench_list", strings.NewReader(`{"id":"w","section":"input"}`))
		req.RemoteAddr = addr + ":4000"
		req.Header.Set("Authorization", "Bearer "+tok)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	for i := range serve.DefaultAuthFailBurst {
		if w := call("192.0.2.1", "wrong-token-0123456789"); w.Code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, w.Code)
		}
	}
	w := call("192.0.2.1", token)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "TooManyRequests") {
		t.Fatalf("right token after the burst: %d %s (Retry-After %q)", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	if w := call("192.0.2.2", token); w.Code == http.StatusTooManyRequests {
		t.Fatalf("another address is limited too: %d", w.Code)
	}
}

// TestReadyDetailsOnlyForTrustedCallers: on a server with tokens, /readyz
// tells its failures and open agents to loopback and to token holders,
// and only its status to anyone else.
func TestReadyDetailsOnlyForTrustedCallers(t *testing.T) {
	const token = "token-of-a1-0123456789"
	h := newServer(t, mem.NewBucket(), serve.Options{Tokens: map[string]string{"a1": token}}).Handler()
	ready := func(addr, tok string) map[string]any {
		req := httptest.NewRequest(http.MethodGet, "/readyz", nil)
		req.RemoteAddr = addr + ":4000"
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var m map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	if m := ready("192.0.2.1", ""); m["open_agents"] != nil || m["status"] != "ready" {
		t.Errorf("a stranger sees %v", m)
	}
	if m := ready("192.0.2.1", token); m["open_agents"] == nil {
		t.Errorf("a token holder sees %v", m)
	}
	if m := ready("127.0.0.1", ""); m["open_agents"] == nil {
		t.Errorf("loopback sees %v", m)
	}
}

// TestConnLimitClosesIdleConnections: at the bound, a new connection
// closes the longest-idle kept-alive one instead of waiting for it.
func TestConnLimitClosesIdleConnections(t *testing.T) {
	limit := serve.NewConnLimit(2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), ConnState: limit.ConnState}
	go hs.Serve(limit.Listener(ln))
	defer hs.Close()

	// Two clients, each with a kept-alive connection left idle.
	var idle []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		idle = append(idle, c)
	}
	// A third is served at once (well within a second), not after them.
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	resp, err := client.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatalf("a third client at the bound: %v", err)
	}
	resp.Body.Close()
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("the third client waited %v", d)
	}
	if n := limit.Open(); n > 2 {
		t.Errorf("%d connections open, bound 2", n)
	}
	// The idle connection closed for it reads EOF.
	closed := 0
	for _, c := range idle {
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed == 0 {
		t.Error("no idle connection was closed")
	}
}

// TestAnswerToAClientThatNeverReads: a client that asks for a large
// answer and never reads it is cut off once the request's deadline and
// the write timeout have passed: the handler returns (its log line is
// written) instead of holding the answer for ever.
func TestAnswerToAClientThatNeverReads(t *testing.T) {
	var logs syncBuffer
	b := mem.NewBucket()
	big := strings.Repeat("y", 12<<20)
	if r := post(t, newServer(t, b, serve.Options{}).Handler(), "a", "workbench_put_file", `{"id":"w","section":"outputs","path":"big.txt","text":"`+big+`"}`); r.status != http.StatusOK {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	s := newServer(t, b, serve.Options{
		RequestTimeout: 3 * time.Second, WriteTimeout: 300 * time.Millisecond,
		Log: slog.New(slog.NewJSONHandler(&logs, nil)),
	})
	srv := httptest.NewUnstartedServer(s.Handler())
	srv.Start()
	defer srv.Close()
	_, c := readWithoutReading(t, srv.Listener.Addr().String())
	defer c.Close() // before the server's Close, which waits for the handler
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "workbench_read") {
		if time.Now().After(deadline) {
			t.Fatal("the read's handler is still writing to a client that does not read")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// It answered (the read did not run out of time) and was cut off.
	if !strings.Contains(logs.String(), `"status":200`) {
		t.Fatalf("the read did not answer: %s", logs.String())
	}
}

// TestAnswerBudget: while a client that does not read holds the whole
// answer budget, another read of a large answer is refused 503
// ServerBusy, and a small answer still goes out.
func TestAnswerBudget(t *testing.T) {
	b := mem.NewBucket()
	big := strings.Repeat("y", 12<<20) // more than the kernel buffers a connection that is not read
	if r := post(t, newServer(t, b, serve.Options{}).Handler(), "a", "workbench_put_file", `{"id":"w","section":"outputs","path":"big.txt","text":"`+big+`"}`); r.status != http.StatusOK {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	s := newServer(t, b, serve.Options{AnswerBudget: 1 << 20, BodyWait: 50 * time.Millisecond})
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	in, c := readWithoutReading(t, srv.Listener.Addr().String())
	defer c.Close() // before the server's Close, which waits for the handler

	// Once its answer is being written it holds the whole budget, and
	// another large answer is refused.
	for deadline := time.Now().Add(60 * time.Second); metricValue(t, metricsText(t, s.Handler()), "cairn_answer_bytes_in_flight") < 1<<20; {
		if time.Now().After(deadline) {
			t.Fatal("the answer to the client that does not read never held the budget")
		}
		time.Sleep(20 * time.Millisecond)
	}
	resp, err := http.Post(srv.URL+"/v1/agents/a/tools/workbench_read", "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(out), "ServerBusy") {
		t.Fatalf("a second large answer: %d %.200s", resp.StatusCode, out)
	}
	resp, err = http.Post(srv.URL+"/v1/agents/a/tools/workbench_stat", "application/json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a small answer: %d", resp.StatusCode)
	}
}

// readWithoutReading asks the server at addr for agent a's outputs/big.txt
// (a structured read: the whole file as one record) on a connection with
// a small receive buffer, and never reads the answer, which soon backs up
// in the kernel. It returns the read's input and the connection.
func readWithoutReading(t *testing.T, addr string) (string, net.Conn) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetReadBuffer(4 << 10)
	}
	in := `{"id":"w","section":"outputs","path":"big.txt"}`
	fmt.Fprintf(c, "POST /v1/agents/a/tools/workbench_read HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(in), in)
	return in, c
}

// TestReadChargeLastsUntilAnswered: a read's charge to the read budget
// is held until its answer is written, not only until the tool returns.
// While a client that does not read holds the whole budget, another large
// read waits for room and runs out of time without building its answer;
// once that client goes, the budget is free and the read succeeds.
func TestReadChargeLastsUntilAnswered(t *testing.T) {
	b := mem.NewBucket()
	big := strings.Repeat("y", 12<<20)
	if r := post(t, newServer(t, b, serve.Options{}).Handler(), "a", "workbench_put_file", `{"id":"w","section":"outputs","path":"big.txt","text":"`+big+`"}`); r.status != http.StatusOK {
		t.Fatalf("put: %d %s", r.status, r.body)
	}
	opts := serve.Options{RequestTimeout: 2 * time.Second, WriteTimeout: 5 * time.Minute}
	opts.Workbench.ReadBudget = workbench.NewReadBudget(40 << 20) // one 12 MiB read is charged 36 MiB
	s := newServer(t, b, opts)
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	in, c := readWithoutReading(t, srv.Listener.Addr().String())
	defer c.Close()
	held := func() float64 { return metricValue(t, metricsText(t, s.Handler()), "cairn_read_budget_bytes_held") }
	for deadline := time.Now().Add(60 * time.Second); held() < 36<<20; {
		if time.Now().After(deadline) {
			t.Fatal("the read of the client that does not read never held the budget")
		}
		time.Sleep(20 * time.Millisecond)
	}
	read := func() (int, string) {
		resp, err := http.Post(srv.URL+"/v1/agents/a/tools/workbench_read", "application/json", strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, 200))
		return resp.StatusCode, string(out)
	}
	// The tool returned long ago; its answer is still unwritten.
	if st, out := read(); st != http.StatusGatewayTimeout || !strings.Contains(out, `"code":"Timeout"`) {
		t.Fatalf("a read while the budget is held: %d %s", st, out)
	}
	c.Close()
	for deadline := time.Now().Add(60 * time.Second); held() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the budget is still held after the client left: %v bytes", held())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st, out := read(); st != http.StatusOK {
		t.Fatalf("a read once the budget is free: %d %s", st, out)
	}
}

// TestLogLevels: probes log at debug, a 5xx at warn with its code, its
// message and the request id.
func TestLogLevels(t *testing.T) {
	var logs syncBuffer
	b := fault.New(mem.NewBucket())
	b.Inject(fault.Rule{Fault: fault.FailBefore(bucket.ErrUnavailable)}) // the store is down: a 503
	s := newServer(t, b, serve.Options{Log: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	h := s.Handler()
	do(h, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/a/tools/workbench_create", strings.NewReader(`{"id":"w"}`))
	req.Header.Set("X-Request-Id", "req-42")
	do(h, req)
	var healthz, create map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch m["route"] {
		case "GET /healthz", "/healthz":
			healthz = m
		}
		if m["tool"] == "workbench_create" {
			create = m
		}
	}
	if healthz == nil || healthz["level"] != "DEBUG" {
		t.Errorf("healthz logged %v", healthz)
	}
	if create == nil {
		t.Fatalf("no line for the create: %s", logs.String())
	}
	if create["status"] != float64(http.StatusServiceUnavailable) || create["level"] != "WARN" || create["code"] == nil ||
		!strings.Contains(fmt.Sprint(create["error"]), "unavailable") || create["request_id"] != "req-42" {
		t.Errorf("a create on a store that is down logged %v", create)
	}
}

// syncBuffer is a bytes.Buffer safe for a logger and a test to share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestMCPCallsCountedPerTool: an MCP tools/call is logged and counted under
// the tool it ran, not as an anonymous request.
func TestMCPCallsCountedPerTool(t *testing.T) {
	var logs syncBuffer
	mount := func(call serve.CallFunc) http.Handler { return mcpserve.Handler(mcpserve.CallFunc(call)) }
	s := newServer(t, mem.NewBucket(), serve.Options{MCP: mount, Log: slog.New(slog.NewJSONHandler(&logs, nil))})
	h := s.Handler()
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/a/mcp",
		strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_create","arguments":{"id":"w"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if r := do(h, req); r.status != http.StatusOK || !strings.Contains(string(r.body), `"workbench_id":"w"`) {
		t.Fatalf("tools/call: %d %s", r.status, r.body)
	}
	if v := metricValue(t, metricsText(t, h), `cairn_http_requests_total{tool="workbench_create",status="200"}`); v != 1 {
		t.Errorf("MCP workbench_create counted %v times", v)
	}
	if !strings.Contains(logs.String(), `"route":"/v1/agents/{agent_id}/mcp","agent":"a","tool":"workbench_create"`) {
		t.Errorf("the MCP call's log line does not name its tool: %s", logs.String())
	}
}

// TestAnswersEndTheirLine: every answer, success or error, ends with a
// newline, so that one printed by curl ends its line.
func TestAnswersEndTheirLine(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	for _, body := range []string{`{"id":"w"}`, `{"id":""}`} {
		req := httptest.NewRequest(http.MethodPost, "/v1/agents/a/tools/workbench_create", strings.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if b := w.Body.String(); !strings.HasSuffix(b, "}\n") || w.Header().Get("Content-Length") != strconv.Itoa(len(b)) {
			t.Errorf("%s: %q, Content-Length %s", body, b, w.Header().Get("Content-Length"))
		}
	}
}

// TestOversizedTextOverHTTP: a put whose text passes the payload limit
// gets the answer the tool gives its whole input, whether the server
// drops the text as it arrives (no Idempotency-Key) or reads it whole (a
// keyed call); a put whose escaped text is longer than the limit but
// decodes within it is written.
func TestOversizedTextOverHTTP(t *testing.T) {
	const maxBytes = 1 << 10
	opts := serve.Options{}
	opts.Workbench.MaxBytes = maxBytes
	b := mem.NewBucket()
	h := newServer(t, b, opts).Handler()
	if r := post(t, h, "a", "workbench_create", `{"id":"w"}`); r.status != http.StatusOK {
		t.Fatalf("create: %d %s", r.status, r.body)
	}
	in := `{"id":"w","section":"outputs","path":"a.txt","text":"` + strings.Repeat("z", 3*maxBytes) + `"}`
	want := `{"code":"PayloadTooLarge","details":{"actual_bytes":3072,"maximum_bytes":1024},"message":"payload is 3072 bytes, maximum is 1024","retryable":false,"status":"error"}`
	for _, headers := range [][]string{nil, {"Idempotency-Key", "k-oversized"}} {
		r := post(t, h, "a", "workbench_put_file", in, headers...)
		if r.status != http.StatusRequestEntityTooLarge || strings.TrimSpace(string(r.body)) != want {
			t.Errorf("headers %v: %d %s", headers, r.status, r.body)
		}
	}
	escaped := `{"id":"w","section":"outputs","path":"b.txt","text":"` + strings.Repeat(`\u00e9`, maxBytes/2) + `"}`
	if r := post(t, h, "a", "workbench_put_file", escaped); r.status != http.StatusOK || !strings.Contains(string(r.body), `"size_bytes":1024`) {
		t.Errorf("an escaped text within the limit: %d %s", r.status, r.body)
	}
	if r := post(t, h, "a", "workbench_put_file", `{"id":"w","section":"outputs","path":"c.txt","text":"`+strings.Repeat("z", 3*maxBytes)+`\ud800"}`); r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "not valid JSON") {
		t.Errorf("an oversized text that is not a valid string: %d %s", r.status, r.body)
	}
}
