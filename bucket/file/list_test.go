package file_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/bucket/mem"
)

// TestListMatchesMem: the file bucket walks its directories in key order
// and stops when a page is full; every listing, paged at odd sizes, with
// and without a delimiter, from several start points, gives what the
// memory bucket gives for the same keys. The keys mix segments that sort
// around "/" ("a-b", "a.b", "a/b", "a0"), an object beside a directory of
// the same name's neighbours, escaped characters and depths.
func TestListMatchesMem(t *testing.T) {
	ctx := t.Context()
	fb, err := file.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mb := mem.NewBucket()
	r := rand.New(rand.NewPCG(1, 2))
	segs := []string{"a", "a-b", "a.b", "a0", "b", "b c", "b%2F", "ab", "a~", "z"}
	keys := map[string]bool{}
	for len(keys) < 400 {
		depth := 1 + r.IntN(4)
		var k string
		for i := range depth {
			if i > 0 {
				k += "/"
			}
			k += segs[r.IntN(len(segs))]
		}
		keys[k] = true
	}
	// A key cannot also be a directory in the file bucket ("a" beside
	// "a/b"): keep those that do not clash, as a store's keys never do.
	var kept []string
	for k := range keys {
		clash := false
		for o := range keys {
			if len(o) > len(k) && o[:len(k)+1] == k+"/" {
				clash = true
				break
			}
		}
		if !clash {
			kept = append(kept, k)
		}
	}
	slices.Sort(kept)
	for _, k := range kept {
		for _, b := range []bucket.Bucket{fb, mb} {
			if _, err := b.Put(ctx, k, []byte(k), bucket.Unconditional); err != nil {
				t.Fatalf("put %q: %v", k, err)
			}
		}
	}
	t.Logf("%d keys", len(kept))
	for _, prefix := range []string{"", "a", "a/", "a-b/", "b", "zz"} {
		for _, delim := range []string{"", "/"} {
			for _, size := range []int{1, 7, 1000} {
				for _, start := range []string{"", "a/a", "a0", "b c/z"} {
					opts := bucket.ListOptions{Prefix: prefix, Delimiter: delim, PageSize: size, StartAfter: start}
					got, want := listAll(t, fb, opts), listAll(t, mb, opts)
					if !slices.Equal(got, want) {
						t.Fatalf("%+v:\nfile %q\nmem  %q", opts, got, want)
					}
				}
			}
		}
	}
}

// listAll pages through a listing and returns its entries, prefixes
// marked, and each page's size.
func listAll(t *testing.T, b bucket.Bucket, opts bucket.ListOptions) []string {
	t.Helper()
	var out []string
	for {
		page, err := b.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			out = append(out, o.Key)
		}
		for _, p := range page.Prefixes {
			out = append(out, "prefix "+p)
		}
		out = append(out, fmt.Sprintf("-- %d", len(page.Objects)+len(page.Prefixes)))
		if page.NextPageToken == "" {
			return out
		}
		opts.PageToken = page.NextPageToken
	}
}

// BenchmarkListAll lists every key of a store laid out as a shard's
// objects are (family directories of 256 shard directories of objects
// named by hash), in pages of the default size: a sweep's or a check's
// walk of the whole bucket. CAIRN_LIST_KEYS sets the key count (default
// 20,000).
func BenchmarkListAll(b *testing.B) {
	n := 20_000
	if v := os.Getenv("CAIRN_LIST_KEYS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	ctx := b.Context()
	fb, err := file.New(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range n {
		k := fmt.Sprintf("shards/5a5a/objects/family%d/%02x/%016x%016x", i%8, r.IntN(256), r.Uint64(), r.Uint64())
		if _, err := fb.Put(ctx, k, []byte("x"), bucket.Unconditional); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		objs, _, err := bucket.ListAll(ctx, fb, bucket.ListOptions{})
		if err != nil || len(objs) != n {
			b.Fatalf("%d keys listed: %v", len(objs), err)
		}
	}
	b.ReportMetric(float64(n), "keys")
}

// TestUsageMatchesListing: Usage counts what a whole listing lists, and
// the same bytes, without the adapter's own files (locks, a temporary
// file left by an interrupted write) or foreign ones.
func TestUsageMatchesListing(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	fb, err := file.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 300 {
		key := fmt.Sprintf("p%d/q%d/k%d", r.IntN(5), r.IntN(7), i)
		if i%10 == 0 {
			key = fmt.Sprintf("top%d", i)
		}
		if _, err := fb.Put(ctx, key, make([]byte, r.IntN(3000)), bucket.Unconditional); err != nil {
			t.Fatal(err)
		}
		if i%17 == 0 {
			if err := fb.Delete(ctx, key, bucket.Unconditional); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, name := range []string{".tmp-left", "README", "dp0/stray"} {
		if err := os.WriteFile(dir+"/"+name, make([]byte, 5000), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	objs, _, err := bucket.ListAll(ctx, fb, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, o := range objs {
		want += o.Size
	}
	n, got, err := fb.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != len(objs) || got != want {
		t.Fatalf("Usage: %d objects, %d bytes; the listing: %d objects, %d bytes", n, got, len(objs), want)
	}
	if n < 250 {
		t.Fatalf("only %d objects listed", n)
	}
}
