package fakegcs_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/storage"
	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/conformance/fakegcs"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
)

func TestBucketAndURL(t *testing.T) {
	ctx := t.Context()
	srv := fakegcstest.New(t)
	if !strings.HasPrefix(srv.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %q, want http://127.0.0.1:PORT", srv.URL())
	}
	b, err := fakegcstest.OpenBucket(ctx, srv, "shared", "in/")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	a, err := b.Put(ctx, "k", []byte("v"), bucket.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if b.Capabilities().ConditionalDelete {
		t.Error("a bucket on the fake claims conditional delete")
	}

	u := srv.BucketURL("shared", "in/")
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "gs" || pu.Host != "shared" || pu.Path != "/in/" || pu.Query().Get("endpoint") != srv.URL() || pu.Query().Get("emulator") != "fake-gcs-server" {
		t.Fatalf("BucketURL = %q (%v)", u, err)
	}
	ob, err := bucket.Open(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer ob.Close()
	if caps := ob.Capabilities(); caps.ConditionalDelete || caps.KnownGaps["conditional-delete"] == "" {
		t.Errorf("bucket opened by BucketURL: capabilities %+v, want the fake's gap", caps)
	}
	body, g, err := ob.Get(ctx, "k")
	if err != nil || string(body) != "v" || g.Version != a.Version {
		t.Fatalf("get through the URL: %q %+v %v", body, g, err)
	}
	if got := srv.BucketURL("shared", ""); strings.Contains(got, "shared/") {
		t.Errorf("BucketURL at the root = %q, want no path", got)
	}

	// Fresh buckets are empty and distinct.
	f1, err := fakegcstest.NewBucket(ctx, srv, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f1.Close()
	f2, err := fakegcstest.NewBucket(ctx, srv, "")
	if err != nil {
		t.Fatal(err)
	}
	defer f2.Close()
	if _, err := f1.Put(ctx, "only-in-f1", nil, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if objs, _, err := bucket.ListAll(ctx, f2, bucket.ListOptions{}); err != nil || len(objs) != 0 {
		t.Fatalf("second fresh bucket: %v objects, %v", len(objs), err)
	}
}

func TestAddressMustBeLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", ":0", "example.com:0", "nonsense"} {
		if s, err := fakegcs.Start(fakegcs.Options{Addr: addr}); err == nil {
			s.Close()
			t.Errorf("start on %q succeeded", addr)
		}
	}
	s, err := fakegcs.Start(fakegcs.Options{Addr: "localhost:0"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
}

func TestBadBucketName(t *testing.T) {
	srv := fakegcstest.New(t)
	for _, name := range []string{"", "ab", "Upper", "with/slash", "-dash", strings.Repeat("x", 64)} {
		if err := srv.CreateBucket(name); err == nil {
			t.Errorf("create bucket %q succeeded", name)
		}
	}
}

// TestDirPersists: with Dir, objects outlive the server.
func TestDirPersists(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "store")
	s1, err := fakegcs.Start(fakegcs.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	b1, err := fakegcstest.OpenBucket(ctx, s1, "kept", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b1.Close()
	a, err := b1.Put(ctx, "dir/obj", []byte("durable"), bucket.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := fakegcs.Start(fakegcs.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	b2, err := fakegcstest.OpenBucket(ctx, s2, "kept", "")
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	body, g, err := b2.Get(ctx, "dir/obj")
	if err != nil || string(body) != "durable" || g.Version != a.Version {
		t.Fatalf("after restart: %q %+v %v, want the same object and version %s", body, g, err, a.Version)
	}
}

// TestXMLReads: the server's public host is its own address, so the Go
// client's default XML reads (as used with STORAGE_EMULATOR_HOST by other
// programs) work too.
func TestXMLReads(t *testing.T) {
	ctx := t.Context()
	srv := fakegcstest.New(t)
	if err := srv.CreateBucket("xml"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	c, err := storage.NewClient(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w := c.Bucket("xml").Object("o").NewWriter(ctx)
	w.ChunkSize = 0
	if _, err := io.WriteString(w, "via xml"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := c.Bucket("xml").Object("o").NewReader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	body, err := io.ReadAll(r)
	if err != nil || string(body) != "via xml" {
		t.Fatalf("xml read: %q %v", body, err)
	}
}

// TestServe: Serve prints one URL per bucket, serves them, and returns nil
// when its context ends.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- fakegcs.Serve(ctx, fakegcs.Options{}, []string{"one", "two"}, pw)
		pw.Close()
	}()
	sc := bufio.NewScanner(pr)
	var lines []string
	for len(lines) < 2 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	go io.Copy(io.Discard, pr)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "gs://one?endpoint=") || !strings.HasPrefix(lines[1], "gs://two?endpoint=") {
		t.Fatalf("printed %q", lines)
	}
	for _, u := range lines {
		b, err := bucket.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Put(ctx, "k", []byte(u), bucket.IfAbsent()); err != nil {
			t.Fatal(err)
		}
		b.Close()
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not return after cancel")
	}
	b, err := bucket.Open(t.Context(), lines[0])
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := b.Stat(t.Context(), "k"); !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("stat after Serve returned: %v, want ErrUnavailable", err)
	}
}

func TestServeBadBucket(t *testing.T) {
	if err := fakegcs.Serve(t.Context(), fakegcs.Options{}, []string{"Bad Name"}, io.Discard); err == nil {
		t.Fatal("serve with a bad bucket name succeeded")
	}
}
