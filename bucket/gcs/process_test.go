package gcs_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

// TestConformanceSeparateProcess builds the cairn binary, runs
// `cairn fake-gcs` as its own process on a loopback port with one bucket
// per check, and runs the bucket suite through bucket.Open on the printed
// gs:// URLs, at the bucket root and under a prefix. It then stops the
// server with SIGTERM and expects exit status 0.
func TestConformanceSeparateProcess(t *testing.T) {
	if testing.Short() && os.Getenv("CAIRN_REQUIRE_SERVERS") != "1" {
		t.Skip("skipped in -short mode: builds the cairn binary and runs it as a separate fake-gcs process")
	}
	bin := buildCairn(t)

	checks := len(conformance.BucketChecks())
	args := []string{"fake-gcs", "--addr", "127.0.0.1:0"}
	for i := range 2 * checks {
		args = append(args, "--bucket", fmt.Sprintf("check-%02d", i))
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waited := false
	t.Cleanup(func() {
		if !waited {
			cmd.Process.Kill() // the test failed before stopping it
			<-exited
		}
	})

	urls := make(chan []string, 1)
	go func() {
		var got []string
		sc := bufio.NewScanner(stdout)
		for len(got) < 2*checks && sc.Scan() {
			got = append(got, sc.Text())
		}
		urls <- got
	}()
	var lines []string
	select {
	case lines = <-urls:
	case err := <-exited:
		waited = true
		t.Fatalf("cairn fake-gcs exited early: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("cairn fake-gcs printed no bucket URLs within 30s")
	}
	if len(lines) != 2*checks {
		t.Fatalf("cairn fake-gcs printed %d lines, want %d", len(lines), 2*checks)
	}
	waitHealthy(t, lines[0])

	var next atomic.Int64
	for _, prefix := range prefixes {
		t.Run("prefix="+prefix, func(t *testing.T) {
			conformancetest.RunBucketSuite(t, func(ctx context.Context) (bucket.Bucket, error) {
				i := int(next.Add(1)) - 1
				if i >= len(lines) {
					return nil, errors.New("more checks than buckets")
				}
				u, err := url.Parse(lines[i])
				if err != nil {
					return nil, err
				}
				if u.Scheme != "gs" || u.Query().Get("endpoint") == "" || u.Query().Get("emulator") != "fake-gcs-server" {
					return nil, fmt.Errorf("printed URL %q is not gs://NAME?endpoint=…&emulator=fake-gcs-server", lines[i])
				}
				u.Path = "/" + prefix
				return bucket.Open(ctx, u.String())
			}, conformance.BucketOptions{})
		})
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		waited = true
		if err != nil {
			t.Fatalf("cairn fake-gcs after SIGTERM: %v, want exit status 0", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("cairn fake-gcs did not exit within 15s of SIGTERM")
	}
}

// buildCairn builds the cairn command into a temporary directory.
func buildCairn(t *testing.T) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	bin := filepath.Join(t.TempDir(), "cairn")
	out, err := exec.Command(gobin, "build", "-o", bin, "github.com/cairnstore/cairn/cmd/cairn").CombinedOutput()
	if err != nil {
		t.Fatalf("go build cmd/cairn: %v\n%s", err, out)
	}
	return bin
}

// waitHealthy waits for the fake behind a printed gs:// URL to answer its
// health check.
func waitHealthy(t *testing.T, gsURL string) {
	t.Helper()
	u, err := url.Parse(gsURL)
	if err != nil {
		t.Fatal(err)
	}
	health := strings.TrimRight(u.Query().Get("endpoint"), "/") + "/_internal/healthcheck"
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get(health)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not healthy within 10s (last: %v)", health, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
