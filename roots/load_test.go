package roots_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

func one[V any](V) int64 { return 1 }

// TestLoad: a miss decodes verified bytes and caches the result; bytes
// under another hash and malformed bytes fail and are not cached.
func TestLoad(t *testing.T) {
	ctx := context.Background()
	table, root := unhex(t, goldenTable), unhex(t, goldenRoot)
	serve := func(b []byte) func(context.Context) ([]byte, error) {
		return func(context.Context) ([]byte, error) { return b, nil }
	}
	tables := shards.NewCache(10, one[*roots.Table])
	tbl, err := roots.LoadTable(ctx, tables, schema, digest.Sum(table), serve(table))
	if err != nil || !tablesEqual(tbl, goldenTableValue()) {
		t.Fatalf("LoadTable = %+v, %v; want the golden table", tbl, err)
	}
	rs := shards.NewCache(10, one[*roots.Root])
	r, err := roots.LoadRoot(ctx, rs, schema, digest.Sum(root), serve(root))
	if err != nil || !rootsEqual(r, goldenRootValue()) {
		t.Fatalf("LoadRoot = %+v, %v; want the golden root", r, err)
	}
	if _, err := roots.LoadRoot(ctx, rs, schema, fill(0x01), serve(root)); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("LoadRoot of bytes under another hash: %v, want ErrIntegrity", err)
	}
	bad := bytes.Clone(table)
	bad[0] = 'X'
	if _, err := roots.LoadTable(ctx, tables, schema, digest.Sum(bad), serve(bad)); !errors.Is(err, roots.ErrMalformed) || errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("LoadTable of a bad magic: %v, want only ErrMalformed", err)
	}
	if got, want := tables.Stats().Entries+rs.Stats().Entries, 2; got != want {
		t.Fatalf("cached %d values, want %d (only the good ones)", got, want)
	}
}
