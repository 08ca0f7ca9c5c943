package gcs_test

import (
	"context"
	"fmt"
	"hash/crc32"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/gcs"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
)

var prefixes = []string{"", "some/prefix/"}

// TestConformance runs the bucket suite in-process against fake-gcs-server,
// a fresh GCS bucket per check, at the bucket's root and under a prefix.
// The fake's known gap (conditional delete) comes from Capabilities.
func TestConformance(t *testing.T) {
	srv := fakegcstest.New(t)
	for _, prefix := range prefixes {
		t.Run("prefix="+prefix, func(t *testing.T) {
			conformancetest.RunBucketSuite(t, func(ctx context.Context) (bucket.Bucket, error) {
				return fakegcstest.NewBucket(ctx, srv, prefix)
			}, conformance.BucketOptions{})
		})
	}
}

// TestConformanceGCSPaths runs the suite with the adapter configured for
// real GCS (ConditionalDelete, GCS's paging) against the fake behind
// gcsSemantics, which honours delete preconditions and pages listings as
// GCS does. No known gaps are declared or reported.
func TestConformanceGCSPaths(t *testing.T) {
	srv := fakegcstest.New(t)
	var seq atomic.Int64
	for _, prefix := range prefixes {
		t.Run("prefix="+prefix, func(t *testing.T) {
			conformancetest.RunBucketSuite(t, func(ctx context.Context) (bucket.Bucket, error) {
				name := fmt.Sprintf("gcs-paths-%d", seq.Add(1))
				if err := srv.CreateBucket(name); err != nil {
					return nil, err
				}
				r := &recorder{base: http.DefaultTransport, hook: gcsSemantics}
				b, err := gcs.New(client(t, srv, r), name, prefix, gcs.Options{})
				if err != nil {
					return nil, err
				}
				if caps := b.Capabilities(); !caps.ConditionalDelete || len(caps.KnownGaps) != 0 {
					return nil, fmt.Errorf("capabilities %+v, want conditional delete and no gaps", caps)
				}
				return b, nil
			}, conformance.BucketOptions{})
		})
	}
}

// TestAttrsAgree: Put, Get, Stat and List report the same attributes for
// one object, modification time and checksum included.
func TestAttrsAgree(t *testing.T) {
	ctx := t.Context()
	b, err := fakegcstest.NewBucket(ctx, fakegcstest.New(t), "p/")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	body := []byte("some bytes")
	p, err := b.Put(ctx, "k", body, bucket.IfAbsent())
	if err != nil {
		t.Fatal(err)
	}
	got, g, err := b.Get(ctx, "k")
	if err != nil || string(got) != string(body) {
		t.Fatalf("get: %q %v", got, err)
	}
	s, err := b.Stat(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	page, err := b.List(ctx, bucket.ListOptions{})
	if err != nil || len(page.Objects) != 1 {
		t.Fatalf("list: %+v %v", page, err)
	}
	// CRC32C (Castagnoli) of "some bytes".
	want := bucket.Attrs{Key: "k", Size: int64(len(body)), Version: p.Version, ModTime: p.ModTime, Checksum: fmt.Sprintf("crc32c:%08x", crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))}
	for _, x := range []struct {
		op string
		a  bucket.Attrs
	}{{"put", p}, {"get", g}, {"stat", s}, {"list", page.Objects[0]}} {
		if !x.a.ModTime.Equal(want.ModTime) || x.a.ModTime.Location() != time.UTC {
			t.Errorf("%s: mod time %v, want %v in UTC", x.op, x.a.ModTime, want.ModTime)
		}
		x.a.ModTime = want.ModTime
		if x.a != want {
			t.Errorf("%s: attrs %+v, want %+v", x.op, x.a, want)
		}
	}
	if d := time.Since(p.ModTime); d < 0 || d > time.Minute {
		t.Errorf("mod time %v is not the server's recent clock", p.ModTime)
	}
}
