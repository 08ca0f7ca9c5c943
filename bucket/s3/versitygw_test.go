package s3_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/s3"
)

const versitygwInstall = "GOBIN=$PWD/.bin go install github.com/versity/versitygw/cmd/versitygw@v1.8.0 (at the module root), or set CAIRN_VERSITYGW to the binary"

// versitygwBinary finds the versitygw binary: $CAIRN_VERSITYGW, else
// .bin/versitygw at the module root. It fails the test if the binary is
// missing and CAIRN_REQUIRE_SERVERS=1, and skips it otherwise.
func versitygwBinary(t *testing.T) string {
	t.Helper()
	require := os.Getenv("CAIRN_REQUIRE_SERVERS") == "1"
	if p := os.Getenv("CAIRN_VERSITYGW"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("CAIRN_VERSITYGW=%s: %v", p, err)
		}
		return p
	}
	root, err := moduleRoot()
	if err == nil {
		p := filepath.Join(root, ".bin", "versitygw")
		if _, err = os.Stat(p); err == nil {
			return p
		}
	}
	if require {
		t.Fatalf("versitygw not found (%v) and CAIRN_REQUIRE_SERVERS=1; install it: %s", err, versitygwInstall)
	}
	t.Skipf("versitygw not found (%v); install it: %s", err, versitygwInstall)
	return ""
}

// moduleRoot is the nearest directory above the working directory that
// holds go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// syncBuffer collects a process's output for failure messages.
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

// vgw is the versitygw server the package's tests share. The first test
// that needs it starts it; TestMain kills it after the last test.
var vgw struct {
	once     sync.Once
	endpoint string
	err      error
	cmd      *exec.Cmd
	exited   chan error
	dir      string
	out      syncBuffer
}

// versitygwEndpoint returns the endpoint of the shared versitygw server,
// starting it if needed.
func versitygwEndpoint(t *testing.T) string {
	t.Helper()
	// The test command starts one server for the whole run and names it
	// here (with the test credentials); otherwise the tests start their own.
	if ep := os.Getenv("CAIRN_S3_ENDPOINT"); ep != "" {
		return ep
	}
	bin := versitygwBinary(t)
	vgw.once.Do(func() { vgw.endpoint, vgw.err = startVersitygw(bin) })
	if vgw.err != nil {
		t.Fatal(vgw.err)
	}
	return vgw.endpoint
}

// startVersitygw runs versitygw over a fresh directory on a loopback port
// and waits until it answers HTTP.
func startVersitygw(bin string) (string, error) {
	dir, err := os.MkdirTemp("", "cairn-versitygw-")
	if err != nil {
		return "", err
	}
	vgw.dir = dir
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(bin, "--port", addr, "--quiet", "posix", dir)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+testAccessKey, "ROOT_SECRET_KEY="+testSecretKey)
	cmd.Stdout, cmd.Stderr = &vgw.out, &vgw.out
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start versitygw: %w", err)
	}
	vgw.cmd = cmd
	vgw.exited = make(chan error, 1)
	go func() { vgw.exited <- cmd.Wait() }()

	endpoint := "http://" + addr
	hc := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		// Any HTTP answer (an unsigned request gets 403) means it is up.
		resp, err := hc.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return endpoint, nil
		}
		select {
		case werr := <-vgw.exited:
			vgw.exited <- werr
			return "", fmt.Errorf("versitygw exited before answering: %v\n%s", werr, vgw.out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("versitygw did not answer on %s within 20s: %v\n%s", addr, err, vgw.out.String())
		}
	}
}

// stopVersitygw kills the shared server, if one was started, by its
// process group, and removes its directory.
func stopVersitygw() error {
	var err error
	if vgw.cmd != nil {
		if kerr := killServer(vgw.cmd); kerr != nil {
			err = fmt.Errorf("kill versitygw (pid %d): %w", vgw.cmd.Process.Pid, kerr)
		}
		<-vgw.exited
	}
	if vgw.dir != "" {
		err = errors.Join(err, os.RemoveAll(vgw.dir))
	}
	return err
}

// versitygwGaps are the port behaviours versitygw v1.8.0 (posix) is
// measured not to honour.
var versitygwGaps = map[string]string{
	"key-and-prefix-coexist": "versitygw's posix backend keeps objects as files and directories, so a key cannot also " +
		"be a directory of other keys (a beside a/b: 409 ExistingObjectIsDirectory / ObjectParentIsFile) and a key " +
		"ending in / must be empty (400 DirectoryObjectContainsData); cairn's own key layout has neither",
}

func TestVersitygwConformance(t *testing.T) {
	endpoint := versitygwEndpoint(t)
	runConformance(t, newClient(endpoint, nil, 0), versitygwGaps, s3.Options{})
}

func TestVersitygwListing(t *testing.T) {
	endpoint := versitygwEndpoint(t)
	testListing(t, newClient(endpoint, nil, 0), listingQuirks{})
}

// TestVersitygwConditionalDelete checks what the conformance suite's
// conditional-delete check covers before the step versitygw fails: a stale
// ETag is refused and the object kept, the current one deletes.
func TestVersitygwConditionalDelete(t *testing.T) {
	ctx := t.Context()
	client := newClient(versitygwEndpoint(t), nil, 0)
	name, err := createBucket(ctx, client)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3.New(client, name, "", s3.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a1, err := b.Put(ctx, "cd", []byte("one"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := b.Put(ctx, "cd", []byte("two"), bucket.Unconditional)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Delete(ctx, "cd", bucket.IfVersion(a1.Version)); !errors.Is(err, bucket.ErrPrecondition) {
		t.Fatalf("delete with a stale version: %v, want ErrPrecondition", err)
	}
	if body, _, err := b.Get(ctx, "cd"); err != nil || string(body) != "two" {
		t.Fatalf("after a refused delete: get = %q, %v; want \"two\"", body, err)
	}
	if err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version)); err != nil {
		t.Fatalf("delete with the current version: %v", err)
	}
	if _, err := b.Stat(ctx, "cd"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("stat after delete: %v, want ErrNotExist", err)
	}
}
