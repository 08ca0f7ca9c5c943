package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
)

func TestValidateKey(t *testing.T) {
	good := []string{"a", "a/b", "a//b", "/lead", "trail/", "é", strings.Repeat("x", bucket.MaxKeyLen), "a/./b", "...", "\x00"}
	for _, k := range good {
		if err := bucket.ValidateKey(k); err != nil {
			t.Errorf("ValidateKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{"", strings.Repeat("x", bucket.MaxKeyLen+1), "\xff", "a\nb", "a\rb", ".", ".."}
	for _, k := range bad {
		if err := bucket.ValidateKey(k); !errors.Is(err, bucket.ErrInvalidKey) {
			t.Errorf("ValidateKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestJoinKeyCountsPrefix(t *testing.T) {
	prefix := strings.Repeat("p", 24) + "/"
	if _, err := bucket.JoinKey(prefix, strings.Repeat("k", bucket.MaxKeyLen-len(prefix))); err != nil {
		t.Fatalf("key filling the limit exactly: %v", err)
	}
	if _, err := bucket.JoinKey(prefix, strings.Repeat("k", bucket.MaxKeyLen-len(prefix)+1)); !errors.Is(err, bucket.ErrInvalidKey) {
		t.Fatalf("key one byte over with prefix: %v, want ErrInvalidKey", err)
	}
}

func TestNormalizePrefix(t *testing.T) {
	for in, want := range map[string]string{"": "", "/": "", "/a": "a/", "a/b/": "a/b/", "//a//": "a/"} {
		got, err := bucket.NormalizePrefix(in)
		if err != nil || got != want {
			t.Errorf("NormalizePrefix(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := bucket.NormalizePrefix("/a\nb"); err == nil {
		t.Error("NormalizePrefix accepted a newline")
	}
}

var registerRuns int

func TestRegisterTwicePanics(t *testing.T) {
	open := func(context.Context, *url.URL) (bucket.Bucket, error) { return nil, nil }
	// A scheme of its own per run: registrations outlive the test (-count).
	registerRuns++
	scheme := fmt.Sprintf("test-dup-%d", registerRuns)
	bucket.Register(scheme, open)
	defer func() {
		if recover() == nil {
			t.Fatal("second Register of one scheme did not panic")
		}
	}()
	bucket.Register(scheme, open)
}

func TestOpenErrors(t *testing.T) {
	for _, u := range []string{"nowhere", "unknown-scheme://x", "://bad"} {
		if _, err := bucket.Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}

func TestQuery(t *testing.T) {
	u, _ := url.Parse("x://b?endpoint=e&region=r")
	q, err := bucket.Query(u, "endpoint", "region")
	if err != nil || q["endpoint"] != "e" || q["region"] != "r" {
		t.Fatalf("Query = %v, %v", q, err)
	}
	u, _ = url.Parse("x://b?endpoint=e&bogus=1")
	if _, err := bucket.Query(u, "endpoint"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("unknown parameter: %v", err)
	}
	u, _ = url.Parse("x://b?endpoint=e&endpoint=f")
	if _, err := bucket.Query(u, "endpoint"); err == nil {
		t.Fatal("repeated parameter accepted")
	}
}

func TestConditionZeroIsUnconditional(t *testing.T) {
	var c bucket.Condition
	if !c.IsUnconditional() || c != bucket.Unconditional {
		t.Fatal("zero Condition is not Unconditional")
	}
	if v, ok := bucket.IfVersion("7").Version(); !ok || v != "7" {
		t.Fatalf("IfVersion(7).Version() = %q, %v", v, ok)
	}
	if !bucket.IfAbsent().IsAbsent() {
		t.Fatal("IfAbsent is not absent")
	}
}

func attrs(keys ...string) []bucket.Attrs {
	out := make([]bucket.Attrs, len(keys))
	for i, k := range keys {
		out[i] = bucket.Attrs{Key: k}
	}
	return out
}

// TestListSortedPagesAcrossFoldedPrefix pins the page-token rule: a page
// that ends on a folded prefix continues after every key under it, and a
// page that ends on a key that looks like a prefix does not skip its
// children.
func TestListSortedPagesAcrossFoldedPrefix(t *testing.T) {
	all := attrs("a/", "a/1", "a/2", "b", "c/x", "c/y", "d")
	var got []string
	opts := bucket.ListOptions{Delimiter: "/", PageSize: 1}
	for range 10 {
		p, err := bucket.ListSorted(all, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Objects {
			got = append(got, o.Key)
		}
		got = append(got, p.Prefixes...)
		if p.NextPageToken == "" {
			break
		}
		opts.PageToken = p.NextPageToken
	}
	if want := "a/ b c/ d"; strings.Join(got, " ") != want {
		t.Fatalf("pages = %q, want %q", strings.Join(got, " "), want)
	}

	got = nil
	opts = bucket.ListOptions{Prefix: "a/", Delimiter: "/", PageSize: 1}
	for range 10 {
		p, err := bucket.ListSorted(all, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range p.Objects {
			got = append(got, o.Key)
		}
		if p.NextPageToken == "" {
			break
		}
		opts.PageToken = p.NextPageToken
	}
	if want := "a/ a/1 a/2"; strings.Join(got, " ") != want {
		t.Fatalf("pages under a/ = %q, want %q", strings.Join(got, " "), want)
	}
	if _, err := bucket.ListSorted(all, bucket.ListOptions{PageToken: "xbad"}); err == nil {
		t.Fatal("bad page token accepted")
	}
}
