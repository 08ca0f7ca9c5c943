// Package fakegcstest starts fake-gcs-server for a test and opens cairn
// buckets on it. Buckets are opened through bucket/gcs by the URL the
// fake gives (fakegcs.Server.BucketURL), which declares the fake, so
// they report its known gap as any program's would. Only _test files
// import this package.
package fakegcstest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/conformance/fakegcs"

	// Registers gs:// for bucket.Open.
	_ "github.com/cairnstore/cairn/bucket/gcs"
)

// New starts a fake in memory for a test and stops it when the test ends.
func New(t testing.TB) *fakegcs.Server {
	t.Helper()
	s, err := fakegcs.Start(fakegcs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("fakegcs: close: %v", err)
		}
	})
	return s
}

// OpenBucket creates the bucket name on srv unless it exists and opens it
// under prefix ("" or ending in "/") through its URL. The bucket has its
// own client: close it.
func OpenBucket(ctx context.Context, srv *fakegcs.Server, name, prefix string) (bucket.Bucket, error) {
	if err := srv.CreateBucket(name); err != nil {
		return nil, err
	}
	return bucket.Open(ctx, srv.BucketURL(name, prefix))
}

var seq atomic.Uint64

// NewBucket creates a bucket with a fresh name on srv and opens it under
// prefix: an empty bucket for each test or check.
func NewBucket(ctx context.Context, srv *fakegcs.Server, prefix string) (bucket.Bucket, error) {
	return OpenBucket(ctx, srv, fmt.Sprintf("cairn-%d", seq.Add(1)), prefix)
}
