package gcs_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/gcs"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
)

// pages lists every page of opts and renders them for comparison.
func pages(ctx context.Context, b bucket.Bucket, opts bucket.ListOptions) ([]string, error) {
	var out []string
	for {
		p, err := b.List(ctx, opts)
		if err != nil {
			return nil, err
		}
		var keys []string
		for _, o := range p.Objects {
			keys = append(keys, o.Key)
		}
		out = append(out, fmt.Sprintf("objects %q prefixes %q more %v", keys, p.Prefixes, p.NextPageToken != ""))
		if p.NextPageToken == "" || len(out) > 200 {
			return out, nil
		}
		opts.PageToken = p.NextPageToken
	}
}

// TestListMatchesReference lists random key sets with random options and
// compares every page with bucket.ListSorted (through mem), in both of the
// adapter's setups: against the fake's own paging, and against GCS's
// paging (gcsSemantics). The options include StartAfter values inside
// folded prefixes, which the conformance suite does not reach.
func TestListMatchesReference(t *testing.T) {
	ctx := t.Context()
	srv := fakegcstest.New(t)
	r := rand.New(rand.NewPCG(7, 11))
	alphabet := []string{"a", "b", "/", "é", "-"}
	word := func(first bool) string {
		var sb strings.Builder
		for i := range 1 + r.IntN(4) {
			c := alphabet[r.IntN(len(alphabet))]
			if i == 0 && first && (c == "/" || c == "-") {
				c = "a"
			}
			sb.WriteString(c)
		}
		return sb.String()
	}

	for round := range 4 {
		prefix := []string{"", "p/"}[round%2]
		ref := mem.NewBucket()
		fake, err := fakegcstest.NewBucket(ctx, srv, prefix)
		if err != nil {
			t.Fatal(err)
		}
		defer fake.Close()
		name := fmt.Sprintf("list-gcs-%d", round)
		if err := srv.CreateBucket(name); err != nil {
			t.Fatal(err)
		}
		real, err := gcs.New(client(t, srv, &recorder{base: http.DefaultTransport, hook: gcsSemantics}), name, prefix, gcs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for range 25 {
			k := word(true)
			if r.IntN(2) == 0 {
				k += "/" + word(false)
			}
			keys = append(keys, k)
			for _, b := range []bucket.Bucket{ref, fake, real} {
				if _, err := b.Put(ctx, k, []byte(k), bucket.Unconditional); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 30 {
			opts := bucket.ListOptions{
				Prefix:    []string{"", "a", "a/", "b/", "é"}[r.IntN(5)],
				Delimiter: []string{"", "/", "/"}[r.IntN(3)],
				PageSize:  []int{1, 2, 3, 7, 0}[r.IntN(5)],
			}
			switch r.IntN(4) {
			case 1:
				opts.StartAfter = keys[r.IntN(len(keys))]
			case 2:
				opts.StartAfter = word(true) + "/" + word(false)
			case 3:
				opts.StartAfter = word(true) + "/"
			}
			want, err := pages(ctx, ref, opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range []struct {
				name string
				b    bucket.Bucket
			}{{"fake paging", fake}, {"gcs paging", real}} {
				got, err := pages(ctx, b.b, opts)
				if err != nil {
					t.Fatalf("%s: list %+v: %v", b.name, opts, err)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: keys %q, list %+v:\ngot  %q\nwant %q", b.name, keys, opts, got, want)
				}
			}
		}
	}
}

func TestListBadToken(t *testing.T) {
	b, err := fakegcstest.NewBucket(t.Context(), fakegcstest.New(t), "")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.List(t.Context(), bucket.ListOptions{PageToken: "xyz"})
	if err == nil {
		t.Fatal("list with a token the adapter did not make succeeded")
	}
}
