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
	"github.com/cairnstore/cairn/conformance/fakegcs"
)

func TestOpenRefusesBadURLs(t *testing.T) {
	for _, u := range []string{
		"gs://b?region=x",                         // unknown parameter
		"gs://b?endpoint=http://127.0.0.1:1&x=1",  // unknown beside a known one
		"gs://b?endpoint=a&endpoint=b",            // given twice
		"gs://b?endpoint=ftp://127.0.0.1:1",       // not http(s)
		"gs://b?endpoint=127.0.0.1:4443",          // no scheme
		"gs://b?endpoint=http://127.0.0.1:1/?x=1", // a query in the endpoint
		"gs:///prefix",                            // no bucket
	} {
		b, err := bucket.Open(t.Context(), u)
		if err == nil {
			b.Close()
			t.Errorf("open %q succeeded", u)
		}
	}
}

// TestOpenProbesFakeServer: a URL whose endpoint answers fake-gcs-server's
// health check opens a bucket with the fake's known gap; the bucket works.
func TestOpenProbesFakeServer(t *testing.T) {
	srv := fakegcs.New(t)
	if err := srv.CreateBucket("probed"); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, prefix := range []string{"", "deep/er/"} {
		u := srv.BucketURL("probed", prefix)
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
		body, g, err := b.Get(ctx, "k")
		if err != nil || string(body) != prefix || g.Version != a.Version || g.Key != "k" {
			t.Fatalf("get: %q %+v %v", body, g, err)
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// The prefix really is a prefix of object names.
	objs, _, err := bucket.ListAll(ctx, mustOpen(t, srv.BucketURL("probed", "")), bucket.ListOptions{})
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

// TestOpenProbesOtherServer: an endpoint that is not fake-gcs-server (its
// health check is not a 200) opens a bucket with conditional delete and
// no known gaps, after exactly one request: the probe.
func TestOpenProbesOtherServer(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path)
		mu.Unlock()
		http.NotFound(w, r)
	}))
	defer ts.Close()
	b, err := bucket.Open(t.Context(), "gs://real/p/?endpoint="+url.QueryEscape(ts.URL))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	caps := b.Capabilities()
	if !caps.ConditionalDelete || len(caps.KnownGaps) != 0 {
		t.Errorf("capabilities %+v, want conditional delete and no gaps", caps)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "GET /_internal/healthcheck" {
		t.Errorf("requests at open: %q, want one health check", seen)
	}
}

func TestOpenUnreachableEndpoint(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	b, err := bucket.Open(t.Context(), "gs://b?endpoint=http://"+addr)
	if !errors.Is(err, bucket.ErrUnavailable) {
		if b != nil {
			b.Close()
		}
		t.Fatalf("open with a closed endpoint: %v, want ErrUnavailable", err)
	}
}

// TestOpenEmulatorHost: without an endpoint, STORAGE_EMULATOR_HOST is
// used (as the Go client does) and probed like an endpoint.
func TestOpenEmulatorHost(t *testing.T) {
	srv := fakegcs.New(t)
	if err := srv.CreateBucket("emulated"); err != nil {
		t.Fatal(err)
	}
	t.Setenv("STORAGE_EMULATOR_HOST", strings.TrimPrefix(srv.URL(), "http://"))
	b := mustOpen(t, "gs://emulated/x/")
	if b.Capabilities().ConditionalDelete {
		t.Error("emulator host not probed as fake-gcs-server")
	}
	if _, err := b.Put(t.Context(), "k", []byte("v"), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	if body, _, err := b.Get(t.Context(), "k"); err != nil || string(body) != "v" {
		t.Fatalf("get through the emulator host: %q %v", body, err)
	}
}
