package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
)

// Exit codes. Each means one thing whichever command returns it, so a
// script can tell a wrong command line from a store it cannot reach from
// an answer it does not like.
const (
	exitOK = 0
	// exitFailed: the command ran and its answer is a failure: a tool
	// answered with an error envelope, an import refused files or stopped,
	// a bucket fails a behaviour cairn relies on, fsck found an
	// inconsistency.
	exitFailed = 1
	// exitUsage: the command line is wrong (an unknown command, flag or
	// tool, a missing or empty argument, a malformed bucket URL). Nothing
	// was done.
	exitUsage = 2
	// exitStore: the bucket cannot be used: it does not exist, cannot be
	// reached, or refuses cairn's credentials. Nothing was done.
	exitStore = 3
)

// defaultDataDir is the embedded local-file bucket's directory, relative
// to the working directory.
const defaultDataDir = "cairn-data"

// probePrefix is a prefix no cairn key starts with: listing it costs one
// small request and finds nothing.
const probePrefix = "cairn-probe/"

// openBucket opens the bucket at url, or the embedded local-file bucket in
// ./cairn-data when url is empty, and returns the URL it opened. Only the
// embedded bucket is created if missing: a URL names a bucket that must
// exist. It lists an empty prefix once, so that a bucket that does not
// exist, cannot be reached or refuses the credentials is found before any
// work. The exit code goes with the error: exitUsage for a URL that names
// no bucket, exitStore for a bucket that cannot be used.
func openBucket(ctx context.Context, url string) (bucket.Bucket, string, int, error) {
	var b bucket.Bucket
	var err error
	if url == "" {
		dir, aerr := filepath.Abs(defaultDataDir)
		if aerr != nil {
			return nil, "", exitUsage, aerr
		}
		url = "file://" + filepath.ToSlash(dir)
		b, err = file.Create(dir)
	} else {
		b, err = bucket.Open(ctx, url)
	}
	if err != nil {
		code := exitUsage
		if storeError(err) {
			code = exitStore
		}
		return nil, url, code, fmt.Errorf("open bucket: %w", err)
	}
	if _, err := b.List(ctx, bucket.ListOptions{Prefix: probePrefix, PageSize: 1}); err != nil {
		b.Close()
		return nil, url, exitStore, fmt.Errorf("open bucket %s: %w", url, err)
	}
	return b, url, exitOK, nil
}

// storeError reports whether err says the store, rather than the URL
// naming it, is the problem.
func storeError(err error) bool {
	for _, target := range []error{bucket.ErrNoBucket, bucket.ErrDenied, bucket.ErrUnavailable, bucket.ErrThrottled} {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
