package s3_test

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"testing"

	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/bucket/s3"
)

// listingKeys is a fixture no S3 store has trouble holding: no key is also
// a directory of other keys and none ends in "/". It still mixes byte
// orders that differ from rune order, folded prefixes at several depths,
// characters that need escaping in URLs and XML, and a 900-byte key.
func listingKeys() []string {
	keys := []string{
		"A", "a-", "a0", "a/c/d", "a/c/e", "a/x", "b/x", "b/y/z", "é", "z/é/1", "\u00ff", "\U0001F600",
		"sp ace", "plus+sign", "per%cent", "q?u#e&r=y", "tilde~", "star*", "paren(s)", "quote'\"",
	}
	for i := range 23 {
		if i%4 == 0 {
			keys = append(keys, fmt.Sprintf("p/%02d/child", i))
		} else {
			keys = append(keys, fmt.Sprintf("p/%02d", i))
		}
	}
	long := "long/" + strings.Repeat("x/", 400)
	return append(keys, long+strings.Repeat("y", 900-len(long)))
}

// listingQuirks are a store's measured deviations from S3 listings.
type listingQuirks struct {
	// repeatsPrefixes: when a page ends inside a folded prefix, the next
	// page lists that prefix again.
	repeatsPrefixes bool
	// foldsBeforeStartAfter: a folded prefix that sorts before StartAfter
	// is listed when StartAfter lies inside it.
	foldsBeforeStartAfter bool
}

// testListing writes listingKeys to a fresh S3 bucket, at the root and
// under a prefix, and to a mem bucket, and compares every listing of the
// two, page by page for the page-size bound and as a whole for content.
// mem shares bucket.ListSorted, the port's reference for listing order,
// prefixes, delimiters, start-after and paging.
//
// Where StartAfter lies inside a folded prefix (after "a/c" with delimiter
// "/" folds a/c/d into "a/", which sorts before "a/c"), the port's rule is
// the one bucket.ListOptions states, which versitygw follows: only
// prefixes greater than StartAfter are listed. (bucket.ListSorted lists
// "a/" there, so the reference's prefixes are filtered.)
func testListing(t *testing.T, client *awss3.Client, quirks listingQuirks) {
	for _, prefix := range []string{"", "some/prefix/"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			ctx := t.Context()
			name, err := createBucket(ctx, client)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s3.New(client, name, prefix, s3.Options{})
			if err != nil {
				t.Fatal(err)
			}
			ref := mem.NewBucket()
			keys := listingKeys()
			puts := map[string]bucket.Attrs{}
			for _, k := range keys {
				body := []byte("body of " + k)
				a, err := b.Put(ctx, k, body, bucket.IfAbsent())
				if err != nil {
					t.Fatal(err)
				}
				sum := md5.Sum(body)
				if got, want := a.Checksum, "md5:"+hex.EncodeToString(sum[:]); got != want {
					t.Fatalf("put %q: checksum %q, want %q", k, got, want)
				}
				if got, want := a.Version, bucket.Version(`"`+hex.EncodeToString(sum[:])+`"`); got != want {
					t.Fatalf("put %q: version %q, want the quoted ETag %q", k, got, want)
				}
				puts[k] = a
				if _, err := ref.Put(ctx, k, body, bucket.Unconditional); err != nil {
					t.Fatal(err)
				}
			}
			// Something outside the prefix must not show up.
			if prefix != "" {
				outside, err := s3.New(client, name, "", s3.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := outside.Put(ctx, "a/outside", []byte("x"), bucket.Unconditional); err != nil {
					t.Fatal(err)
				}
			}

			for _, p := range []string{"", "a", "a/", "p/", "p/0", "zz", "é"} {
				for _, delim := range []string{"", "/"} {
					for _, after := range []string{"", "a/c", "b/", "p/08", "é"} {
						for _, size := range []int{0, 4} {
							opts := bucket.ListOptions{Prefix: p, Delimiter: delim, StartAfter: after, PageSize: size}
							compareListing(t, b, ref, opts, puts, quirks)
						}
					}
				}
			}
			// Page size 1 pages through every entry one by one.
			compareListing(t, b, ref, bucket.ListOptions{PageSize: 1}, puts, quirks)
			compareListing(t, b, ref, bucket.ListOptions{Delimiter: "/", PageSize: 1}, puts, quirks)
		})
	}
}

func compareListing(t *testing.T, b, ref bucket.Bucket, opts bucket.ListOptions, puts map[string]bucket.Attrs, quirks listingQuirks) {
	t.Helper()
	ctx := t.Context()
	got, gotP := pageAll(t, b, opts)
	if quirks.repeatsPrefixes {
		gotP = slices.Compact(gotP)
	}
	want, allP, err := bucket.ListAll(ctx, ref, opts)
	if err != nil {
		t.Fatal(err)
	}
	var wantP []string
	for _, p := range allP {
		if p > opts.StartAfter || quirks.foldsBeforeStartAfter {
			wantP = append(wantP, p)
		}
	}
	keys := func(as []bucket.Attrs) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.Key)
		}
		return out
	}
	if g, w := keys(got), keys(want); !slices.Equal(g, w) {
		t.Fatalf("list %+v: objects\n got %q\nwant %q", opts, g, w)
	}
	if !slices.Equal(gotP, wantP) {
		t.Fatalf("list %+v: prefixes\n got %q\nwant %q", opts, gotP, wantP)
	}
	for _, a := range got {
		p := puts[a.Key]
		if a.Version != p.Version || a.Size != p.Size || a.Checksum != p.Checksum || a.ModTime.IsZero() {
			t.Fatalf("list %+v: attrs %+v, put gave %+v", opts, a, p)
		}
	}
}

// pageAll follows a listing, checking the page-size bound on every page.
func pageAll(t *testing.T, b bucket.Bucket, opts bucket.ListOptions) ([]bucket.Attrs, []string) {
	t.Helper()
	var objs []bucket.Attrs
	var prefixes []string
	for pages := 1; ; pages++ {
		page, err := b.List(t.Context(), opts)
		if err != nil {
			t.Fatalf("list %+v: %v", opts, err)
		}
		if n := len(page.Objects) + len(page.Prefixes); n > bucket.PageSize(opts.PageSize) {
			t.Fatalf("list %+v: page of %d entries", opts, n)
		}
		objs = append(objs, page.Objects...)
		prefixes = append(prefixes, page.Prefixes...)
		if page.NextPageToken == "" {
			return objs, prefixes
		}
		if pages > 200 {
			t.Fatalf("list %+v does not end", opts)
		}
		opts.PageToken = page.NextPageToken
	}
}
