package gcs_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
)

func TestOpenRefusesBadURLs(t *testing.T) {
	t.Setenv("STORAGE_EMULATOR_HOST", "")
	for _, u := range []string{
		"gs://b?region=x",                                   // unknown parameter
		"gs://b?endpoint=http://127.0.0.1:1&x=1",            // unknown beside a known one
		"gs://b?endpoint=a&endpoint=b",                      // given twice
		"gs://b?endpoint=ftp://127.0.0.1:1",                 // not http(s)
		"gs://b?endpoint=127.0.0.1:4443",                    // no scheme
		"gs://b?endpoint=http://127.0.0.1:1/?x=1",           // a query in the endpoint
		"gs:///prefix",                                      // no bucket
		"gs://b?endpoint=http://127.0.0.1:1&emulator=minio", // an unknown emulator
		"gs://b?endpoint=http://127.0.0.1:1&emulator=fake-gcs-server&emulator=fake-gcs-server", // given twice
		"gs://b?emulator=fake-gcs-server", // no endpoint, no STORAGE_EMULATOR_HOST
	} {
		b, err := bucket.Open(t.Context(), u)
		if err == nil {
			b.Close()
			t.Errorf("open %q succeeded", u)
		}
	}
}

// TestOpenEmulatorParam: a URL that declares fake-gcs-server opens a
// bucket with the fake's known gap; the bucket works.
func TestOpenEmulatorParam(t *testing.T) {
	srv := fakegcstest.New(t)
	if err := srv.CreateBucket("declared"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, prefix := range []string{"", "deep/er/"} {
		u := srv.BucketURL("declared", prefix)
		if !strings.Contains(u, "emulator=fake-gcs-server") {
			t.Fatalf("BucketURL %q does not declare the fake", u)
		}
		b, err := bucket.Open(ctx, u)
		if err != nil {
			t.Fatal(err)
		}
		caps := b.Capabilities()
		if caps.ConditionalDelete || caps.KnownGaps["conditional-delete"] == "" {
			t.Errorf("open %q: capabilities %+v, want the fake's gap", u, caps)
		}
		a, err := b.Put(ctx, "k", []byte(prefix), bucket.IfAbsent())
		if err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(ctx, "k", bucket.IfVersion(a.Version)); !errors.Is(err, bucket.ErrUnsupported) {
			t.Errorf("conditional delete on the declared fake: %v, want ErrUnsupported", err)
		}
		body, g, err := b.Get(ctx, "k")
		if err != nil || string(body) != prefix || g.Version != a.Version || g.Key != "k" {
			t.Fatalf("get: %q %+v %v", body, g, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The prefix really is a prefix of object names.
	objs, _, err := bucket.ListAll(ctx, mustOpen(t, srv.BucketURL("declared", "")), bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range objs {
		keys = append(keys, o.Key)
	}
	if got, want := strings.Join(keys, " "), "deep/er/k k"; got != want {
		t.Fatalf("keys %q, want %q", got, want)
	}
}

func mustOpen(t *testing.T, u string) bucket.Bucket {
	t.Helper()
	b, err := bucket.Open(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// TestOpenSendsNothing: opening a URL with an endpoint sends no request,
// and without the emulator parameter the bucket claims conditional delete
// and no known gaps, whatever the server is.
func TestOpenSendsNothing(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer ts.Close()
	srv := fakegcstest.New(t)
	for _, ep := range []string{ts.URL, srv.URL()} {
		b, err := bucket.Open(t.Context(), "gs://real/p/?endpoint="+url.QueryEscape(ep))
		if err != nil {
			t.Fatal(err)
		}
		caps := b.Capabilities()
		if !caps.ConditionalDelete || len(caps.KnownGaps) != 0 {
			t.Errorf("endpoint %s: capabilities %+v, want conditional delete and no gaps", ep, caps)
		}
		b.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 0 {
		t.Errorf("requests at open: %q, want none", seen)
	}
}

// TestOpenUnreachableEndpoint: an endpoint nobody listens on opens (Open
// sends nothing), and the first read fails with ErrUnavailable.
func TestOpenUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b := mustOpen(t, "gs://b?endpoint=http://"+addr)
	if _, err := b.Stat(t.Context(), "k"); !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("stat with a closed endpoint: %v, want ErrUnavailable", err)
	}
}

// TestOpenEmulatorHost: without an endpoint, STORAGE_EMULATOR_HOST is
// used (as the Go client does), and the emulator parameter declares it.
func TestOpenEmulatorHost(t *testing.T) {
	srv := fakegcstest.New(t)
	if err := srv.CreateBucket("emulated"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	if mustOpen(t, "gs://emulated/y/").Capabilities().ConditionalDelete != true {
		t.Error("an undeclared emulator host lost conditional delete")
	}
	b := mustOpen(t, "gs://emulated/x/?emulator=fake-gcs-server")
	if b.Capabilities().ConditionalDelete {
		t.Error("emulator=fake-gcs-server with STORAGE_EMULATOR_HOST: conditional delete still claimed")
	}
	if _, err := b.Put(t.Context(), "k", []byte("v"), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if body, _, err := b.Get(t.Context(), "k"); err != nil || string(body) != "v" {
		t.Fatalf("get through the emulator host: %q %v", body, err)
	}
}
