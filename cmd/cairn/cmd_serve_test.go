package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
)

// syncBuffer is a buffer a running command writes while the test reads.
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

// startServe runs `cairn serve args...` in-process until the test ends
// and returns its base URL, once its log says it is serving.
func startServe(t *testing.T, args ...string) (base string, stderr *syncBuffer, stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr = &syncBuffer{}
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr}, append([]string{"serve"}, args...))
	}()
	var once sync.Once
	code := -1
	stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				t.Error("serve did not stop")
			}
		})
		return code
	}
	t.Cleanup(func() { stop() })
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for line := range strings.SplitSeq(stderr.String(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
				return "http://" + l.Addr, stderr, stop
			}
		}
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("serve never said it was serving: %s", stderr.String())
	return
}

func postJSON(t *testing.T, url, body string, headers ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSuffix(string(out), "\n") // every answer ends its line
}

// TestServeEndToEnd starts `cairn serve` with no flags in an empty
// directory, calls create, put and read over HTTP, runs the client mode
// against it and shuts it down.
func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	t.Setenv("CAIRN_TOKENS", "")
	t.Setenv("CAIRN_ADDR", "127.0.0.1:0")
	base, stderr, stop := startServe(t)
	tools := base + "/v1/agents/default/tools/"
	if st, body := postJSON(t, tools+"workbench_create", `{"id":"demo"}`); st != 200 {
		t.Fatalf("create: %d %s", st, body)
	}
	if st, body := postJSON(t, tools+"workbench_put_file", `{"id":"demo","section":"outputs","path":"hello.txt","text":"hello, cairn\n"}`); st != 200 {
		t.Fatalf("put: %d %s", st, body)
	}
	st, body := postJSON(t, tools+"workbench_read", `{"id":"demo","section":"outputs","path":"hello.txt"}`)
	if st != 200 || !strings.Contains(body, `"value":"hello, cairn"`) {
		t.Fatalf("read: %d %s", st, body)
	}
	if _, err := os.Stat(filepath.Join(dir, defaultDataDir)); err != nil {
		t.Fatalf("the embedded bucket was not created: %v", err)
	}

	// The client mode prints what the local mode prints, with its exit
	// code, on the same store.
	local := "file://" + filepath.Join(dir, defaultDataDir)
	for _, c := range []struct{ tool, input string }{
		{"workbench_read", `{"id":"demo","section":"outputs","path":"hello.txt"}`},
		{"workbench_stat", `{"id":"demo","section":"outputs","path":"hello.txt"}`},
		{"workbench_read", `{"id":"demo","section":"outputs","path":"missing.txt"}`},
		{"workbench_read", `{"id":`},
		{"workbench_commit", `{"id":"demo","manifest":{},"content_digest_uri":"x"}`},
		{"workbench_nonesuch", `{}`},
	} {
		lc, lout, lerr := runWith(t, c.input, "workbench", "--bucket", local, c.tool)
		rc, rout, rerr := runWith(t, c.input, "workbench", "--server", base, c.tool)
		if lc != rc || lout != rout {
			t.Errorf("%s %s:\nlocal  exit %d %s%s\nserver exit %d %s%s", c.tool, c.input, lc, lout, lerr, rc, rout, rerr)
		}
	}
	if code, out, _ := runWith(t, "", "workbench", "--server", base, "--idempotency-key", "k", "workbench_create"); code != exitFailed || !strings.Contains(out, "InvalidArguments") {
		t.Errorf("client with a key: exit %d %s", code, out)
	}

	if code := stop(); code != exitOK {
		t.Fatalf("serve exited %d: %s", code, stderr.String())
	}
	logs := stderr.String()
	for _, want := range []string{`"msg":"request"`, `"tool":"workbench_put_file"`, `"status":200`, `"msg":"stopped"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
	if code, _, errOut := runWith(t, "{}", "workbench", "--server", base, "workbench_list"); code != exitStore {
		t.Errorf("a stopped server: exit %d %s", code, errOut)
	}
}

// TestServeTokens: with CAIRN_TOKENS the server answers only the right
// token, and the client mode exits 3 on a refused one.
func TestServeTokens(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("CAIRN_TOKENS", "a1=secret-one-0123456789")
	base, stderr, _ := startServe(t, "--addr", "127.0.0.1:0")
	if strings.Contains(stderr.String(), "secret-one-0123456789") {
		t.Fatal("the log shows a token")
	}
	code, out, _ := runWith(t, `{"id":"wb"}`, "workbench", "--server", base, "--agent", "a1", "--token", "secret-one-0123456789", "workbench_create")
	if code != exitOK {
		t.Fatalf("right token: exit %d %s", code, out)
	}
	code, out, errOut := runWith(t, `{"id":"wb"}`, "workbench", "--server", base, "--agent", "a1", "--token", "wrong", "workbench_create")
	if code != exitStore || out != "" || !strings.Contains(errOut, "token") {
		t.Fatalf("wrong token: exit %d %q %q", code, out, errOut)
	}
	t.Setenv("CAIRN_TOKEN", "secret-one-0123456789")
	if code, out, _ := runWith(t, `{"id":"wb"}`, "workbench", "--server", base, "--agent", "a2", "workbench_create"); code != exitStore {
		t.Fatalf("an agent not served: exit %d %s", code, out)
	}
	if st, _ := postJSON(t, base+"/v1/agents/a1/tools/workbench_create", `{"id":"wb"}`); st != 401 {
		t.Fatalf("no token over HTTP: %d", st)
	}

	// The MCP endpoint is mounted behind the same tokens.
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	accept := "application/json, text/event-stream"
	if st, body := postJSON(t, base+"/v1/agents/a1/mcp", list, "Accept", accept); st != 401 {
		t.Fatalf("MCP without a token: %d %s", st, body)
	}
	st, body := postJSON(t, base+"/v1/agents/a1/mcp", list, "Accept", accept, "Authorization", "Bearer secret-one-0123456789")
	if st != 200 || !strings.Contains(body, `"workbench_restore"`) {
		t.Fatalf("MCP tools/list: %d %s", st, body)
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"workbench_list","arguments":{"id":"wb"}}}`
	st, body = postJSON(t, base+"/v1/agents/a1/mcp", call, "Accept", accept, "Authorization", "Bearer secret-one-0123456789")
	if st != 200 || !strings.Contains(body, `"structuredContent"`) || strings.Contains(body, `"isError":true`) {
		t.Fatalf("MCP tools/call: %d %s", st, body)
	}
}

// TestServeUsage: a public address without tokens is refused, exit 2,
// as are bad flags and configs.
func TestServeUsage(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("CAIRN_TOKENS", "")
	t.Setenv("CAIRN_ADDR", "")
	t.Setenv("CAIRN_CONFIG", "")
	code, _, errOut := runCmd(t, "serve", "--addr", "0.0.0.0:0")
	if code != exitUsage || !strings.Contains(errOut, "refusing to listen on 0.0.0.0:0 without bearer tokens") {
		t.Fatalf("public address without tokens: exit %d %s", code, errOut)
	}
	if _, err := os.Stat(defaultDataDir); err == nil {
		t.Fatal("a refused serve created the embedded bucket")
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("agents:\n  - id: a1\n"), 0o600)
	unknown := filepath.Join(t.TempDir(), "unknown.yaml")
	os.WriteFile(unknown, []byte("listen: x\n"), 0o600)
	for _, args := range [][]string{
		{"serve", "--config", bad},
		{"serve", "--config", unknown},
		{"serve", "--addr", "nowhere"},
		{"serve", "--addr", ""},
		{"serve", "extra"},
		{"serve", "--idle-timeout", "-1s"},
		{"serve", "--cache-mib", "-1"},
		{"serve", "--commit-interval", "2562047h"},
		{"serve", "--commit-interval", "2m"},
		{"serve", "--commit-interval", "1m"},
		{"serve", "--commit-interval", "30s", "--request-timeout", "30s"},
		{"serve", "--body-budget-mib", "9223372036854775807"},
		{"serve", "--body-budget-mib", "0"},
		{"serve", "--body-rate-mib", "-1"},
		{"serve", "--body-rate-mib", "1073741825"},
		{"serve", "--max-conns", "0"},
		{"serve", "--gc-interval", "-1s"},
		{"serve", "--gc-interval", "10ms"},
		{"serve", "--gc-interval", "9000h"},
		{"serve", "--memory-limit-mib", "1073741825"},
		{"serve", "--gc-percent", "0"},
		{"serve", "--gc-percent", "10001"},
		{"serve", "--commit-interval", "-1s"},
		{"serve", "--value-format", "1"},
		{"serve", "--value-format", "8"},
		{"bench", "--value-format", "1"},
		{"workbench", "--server", "ftp://x", "workbench_list"},
		{"workbench", "--server", "http://x", "--bucket", "mem://x", "workbench_list"},
		{"workbench", "--token", "t", "workbench_list"},
		{"workbench", "--server", "http://127.0.0.1:1", "--agent", "a/b", "workbench_list"},
	} {
		if code, _, errOut := runCmd(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d %s", args, code, errOut)
		}
	}
	// A config with agents and tokens lets a public address serve.
	good := filepath.Join(t.TempDir(), "good.yaml")
	os.WriteFile(good, []byte("addr: 0.0.0.0:0\nidle_timeout: 1m\nagents:\n  - id: a1\n    token: token-one-0123456789\n"), 0o600)
	startServe(t, "--config", good)
}

// TestServeShutdownFinishesInFlight: a put whose head write is under way
// when the server is told to stop still lands and is answered.
func TestServeShutdownFinishesInFlight(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	srv := serve.New(fb, serve.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1/agents/a1/tools/"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan int, 1)
	go func() {
		served <- serveOn(ctx, ln, srv, slog.New(slog.DiscardHandler), "mem://", 20*time.Second, conns{max: defaultMaxConns, idle: defaultConnIdle}, nil)
	}()
	if st, body := postJSON(t, base+"workbench_create", `{"id":"wb"}`); st != 200 {
		t.Fatalf("create: %d %s", st, body)
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
	type result struct {
		status int
		body   string
	}
	put := make(chan result, 1)
	go func() {
		// Not postJSON: a goroutine may not end the test.
		resp, err := http.Post(base+"workbench_put_file", "application/json", strings.NewReader(`{"id":"wb","section":"outputs","path":"late.txt","text":"landed"}`))
		if err != nil {
			put <- result{-1, err.Error()}
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		put <- result{resp.StatusCode, string(body)}
	}()
	<-reached
	cancel() // SIGTERM
	// The listener closes at once; the put is still held.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the server still accepts connections after shutdown began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case r := <-put:
		t.Fatalf("the put was answered before its head write: %d %s", r.status, r.body)
	default:
	}
	close(release)
	r := <-put
	if r.status != 200 {
		t.Fatalf("in-flight put: %d %s", r.status, r.body)
	}
	if code := <-served; code != exitOK {
		t.Fatalf("serveOn: %d", code)
	}
	svc, err := workbench.Open(context.Background(), fb, workbench.Options{AgentID: "a1"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	out, ok := svc.Call(context.Background(), "workbench_read", []byte(`{"id":"wb","section":"outputs","path":"late.txt"}`))
	if !ok || !strings.Contains(string(out), "landed") {
		t.Fatalf("after shutdown: %s", out)
	}
}

// TestServeShutdownPastGraceSettlesInFlight: a keyed put whose head write
// is still under way when the shutdown's grace runs out loses its
// connection, but the server does not stop (nor close the engine) before
// the put has settled: its idempotency record holds its true outcome, and
// a retry with the key on a new server replays the success.
func TestServeShutdownPastGraceSettlesInFlight(t *testing.T) {
	fb := fault.New(mem.NewBucket())
	srv := serve.New(fb, serve.Options{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String() + "/v1/agents/a1/tools/"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan int, 1)
	go func() {
		served <- serveOn(ctx, ln, srv, slog.New(slog.DiscardHandler), "mem://", 50*time.Millisecond, conns{max: defaultMaxConns, idle: defaultConnIdle}, nil)
	}()
	if st, body := postJSON(t, base+"workbench_create", `{"id":"wb"}`); st != 200 {
		t.Fatalf("create: %d %s", st, body)
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
	const input = `{"id":"wb","section":"outputs","path":"late.txt","text":"landed"}`
	cut := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, base+"workbench_put_file", strings.NewReader(input))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "k1")
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %d", resp.StatusCode)
		}
		cut <- err
	}()
	<-reached
	cancel() // SIGTERM; the grace runs out while the head write is held
	if err := <-cut; err == nil || strings.HasPrefix(err.Error(), "answered") {
		t.Fatalf("the put was answered past the grace: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // room for a server that would not wait to stop
	select {
	case code := <-served:
		t.Fatalf("the server stopped (%d) while a put it took was settling", code)
	default:
	}
	close(release)
	if code := <-served; code != exitOK {
		t.Fatalf("serveOn: %d", code)
	}
	again := serve.New(fb, serve.Options{})
	defer again.Close()
	req := httptest.NewRequest(http.MethodPost, "/v1/agents/a1/tools/workbench_put_file", strings.NewReader(input))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	rec := httptest.NewRecorder()
	again.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 || rec.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("retry with the key: %d replayed=%q %s, want the stored success", rec.Code, rec.Header().Get("Idempotent-Replayed"), rec.Body)
	}
}

// TestWarnBudgets: serve's default caches and budgets fit its default
// heap limit without a warning; caches and budgets past the limit are
// warned of.
func TestWarnBudgets(t *testing.T) {
	if os.Getenv("GOMEMLIMIT") != "" {
		t.Skip("GOMEMLIMIT is set: the flag's limit is not used")
	}
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	defaults := defaultServeCacheMiB + int(bodies.DefaultCacheBytes+serve.DefaultBodyBudget+serve.DefaultAnswerBudget+workbench.DefaultReadBudget)>>20
	warnBudgets(log, defaultMemoryLimitMiB, defaults)
	if out.Len() != 0 {
		t.Fatalf("the defaults (%d MiB under a %d MiB limit) warned: %s", defaults, defaultMemoryLimitMiB, out.String())
	}
	warnBudgets(log, defaultMemoryLimitMiB, 2048)
	if !strings.Contains(out.String(), "level=WARN") || !strings.Contains(out.String(), "budgets_mib=2048") {
		t.Fatalf("budgets past the limit: %q", out.String())
	}
}
