package conformance

// Helpers the bucket checks share: writes, reads and listings that
// wrap their errors, and comparisons against what a check expects.

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/bucket"
)

func put(ctx context.Context, b bucket.Bucket, key, body string) (bucket.Attrs, error) {
	a, err := b.Put(ctx, key, []byte(body), bucket.Unconditional)
	if err != nil {
		return a, fmt.Errorf("put %q: %w", key, err)
	}
	return a, nil
}

func wantBody(ctx context.Context, b bucket.Bucket, key, want string) (bucket.Attrs, error) {
	got, a, err := b.Get(ctx, key)
	if err != nil {
		return a, fmt.Errorf("get %q: %w", key, err)
	}
	if string(got) != want {
		return a, fmt.Errorf("get %q = %q, want %q", key, trunc(got), trunc([]byte(want)))
	}
	return a, nil
}

func wantErr(what string, err, want error) error {
	if !errors.Is(err, want) {
		return fmt.Errorf("%s: got error %v, want %v", what, err, want)
	}
	return nil
}

func wantMissing(ctx context.Context, b bucket.Bucket, key string) error {
	_, err := b.Stat(ctx, key)
	return wantErr(fmt.Sprintf("stat %q", key), err, bucket.ErrNotExist)
}

func trunc(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%s… (%d bytes)", b[:40], len(b))
	}
	return string(b)
}

func listKeys(ctx context.Context, b bucket.Bucket, opts bucket.ListOptions) ([]string, []string, error) {
	objs, prefixes, err := bucket.ListAll(ctx, b, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("list %+v: %w", opts, err)
	}
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys, prefixes, nil
}

func wantList(what string, got, want []string) error {
	if len(got) == 0 && len(want) == 0 {
		return nil
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s = %q, want %q", what, got, want)
	}
	return nil
}
