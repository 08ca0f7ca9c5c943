package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this file and the ones that use it run the cairn binary as
// separate processes, as an operator runs it: what they prove must hold
// across address spaces, not only between goroutines sharing one.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// cairnBinary builds cmd/cairn once per test binary and returns its path.
// Building takes a few seconds, so -short skips the tests that need it,
// as the other tests that run cairn as a process do.
func cairnBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in -short mode: builds the cairn binary and runs it as separate processes")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "cairn-bin-")
		if binErr != nil {
			return
		}
		gobin, err := exec.LookPath("go")
		if err != nil {
			gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
		}
		binPath = filepath.Join(binDir, "cairn")
		out, err := exec.Command(gobin, "build", "-o", binPath, "github.com/cairnstore/cairn/cmd/cairn").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build cmd/cairn: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// processEnv is the test's environment without the CAIRN_ variables, so
// that a developer's settings do not leak into the processes, plus extra.
func processEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "CAIRN_") {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// serveProc is one `cairn serve` process.
type serveProc struct {
	base   string // http://host:port
	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed once the process has been waited for
	err    error         // Wait's error, once exited is closed
}

// startServeProc runs `cairn serve args...` in dir with the environment
// processEnv(env...) and returns once its log line says where it listens.
// The process is stopped with SIGTERM (SIGKILL if it lingers) when the test
// ends, unless it has ended already.
func startServeProc(t testing.TB, bin, dir string, env []string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	cmd.Dir = dir
	cmd.Env = processEnv(env...)
	return startServeCmd(t, cmd)
}

// startServeCmd starts a prepared `cairn serve` command, as
// startServeProc does.
func startServeCmd(t testing.TB, cmd *exec.Cmd) *serveProc {
	t.Helper()
	p := &serveProc{stderr: &syncBuffer{}, exited: make(chan struct{}), cmd: cmd}
	p.cmd.Stdout = io.Discard
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })

	deadline := time.After(15 * time.Second)
	for {
		for line := range strings.SplitSeq(p.stderr.String(), "\n") {
			var l struct{ Msg, Addr string }
			if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "serving" {
				p.base = "http://" + l.Addr
				return p
			}
		}
		select {
		case <-p.exited:
			t.Fatalf("cairn serve exited (%v) before serving: %s", p.err, p.stderr.String())
		case <-deadline:
			t.Fatalf("cairn serve did not say it was serving within 15s: %s", p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// stop ends the process gracefully if it still runs.
func (p *serveProc) stop(t testing.TB) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		if p.err != nil {
			t.Errorf("cairn serve after SIGTERM: %v, want exit status 0: %s", p.err, p.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Errorf("cairn serve did not stop within 20s of SIGTERM")
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// startFakeGCSProc runs `cairn fake-gcs` as a process with one bucket and
// returns the gs:// URL it prints.
func startFakeGCSProc(t *testing.T, bin, name string) string {
	t.Helper()
	cmd := exec.Command(bin, "fake-gcs", "--addr", "127.0.0.1:0", "--bucket", name)
	cmd.Env = processEnv()
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case u := <-line:
		if !strings.HasPrefix(u, "gs://"+name+"?") {
			t.Fatalf("cairn fake-gcs printed %q", u)
		}
		return u
	case err := <-exited:
		t.Fatalf("cairn fake-gcs exited early: %v: %s", err, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("cairn fake-gcs printed no URL within 15s: %s", stderr.String())
	}
	return ""
}

// reply is one HTTP answer.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// code is the error code of an error envelope, "" for anything else.
func (r reply) code() string {
	var env struct{ Status, Code string }
	if json.Unmarshal(r.body, &env) != nil || env.Status != "error" {
		return ""
	}
	return env.Code
}

// post sends one JSON POST. Unlike postJSON it does not stop the test, so
// workers may call it, and it reports a failed exchange as an error.
func post(c *http.Client, url, body string, headers ...string) (reply, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, err
	}
	return reply{status: resp.StatusCode, header: resp.Header, body: bytes.TrimSuffix(b, []byte("\n"))}, nil
}
