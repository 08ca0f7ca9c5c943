package main

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
)

func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args)
	return code, out.String(), errOut.String()
}

func TestConformanceCommand(t *testing.T) {
	for _, url := range []string{"mem://conformance-cmd", "file://" + t.TempDir()} {
		t.Run(url[:4], func(t *testing.T) {
			code, out, errOut := runCmd(t, "conformance", url)
			if code != 0 {
				t.Fatalf("exit %d\n%s%s", code, out, errOut)
			}
			if !strings.Contains(out, "24 passed, 0 failed, 0 portability notes\nverdict: cairn can run on this store") {
				t.Fatalf("summary missing:\n%s", out)
			}
			b, err := bucket.Open(context.Background(), url)
			if err != nil {
				t.Fatal(err)
			}
			objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{})
			if err != nil || len(objs) != 0 {
				t.Fatalf("conformance left %d objects behind (%v)", len(objs), err)
			}
		})
	}
}

func TestConformanceRefusesUsedPrefix(t *testing.T) {
	ctx := context.Background()
	b, err := bucket.Open(ctx, "mem://conformance-used")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, "mine/keep", []byte("precious"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCmd(t, "conformance", "--prefix", "mine/", "mem://conformance-used")
	if code != exitUsage || !strings.Contains(errOut, "refusing prefix") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if got, _, err := b.Get(ctx, "mine/keep"); err != nil || string(got) != "precious" {
		t.Fatalf("the user's object changed: %q, %v", got, err)
	}
}

func TestConformanceReportsFailures(t *testing.T) {
	code, out, _ := runCmd(t, "conformance", "nope://x")
	if code == 0 {
		t.Fatalf("unknown scheme exited 0:\n%s", out)
	}
}

// TestConformanceAgainstFakeGCS: against fake-gcs-server, found through its
// URL, the fake's known gap (conditional delete, which its URL declares
// it lacks, so that cairn does not rely on it) is a portability note that
// names the gap, and the command exits 0.
func TestConformanceAgainstFakeGCS(t *testing.T) {
	srv := fakegcstest.New(t)
	if err := srv.CreateBucket("conformance"); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCmd(t, "conformance", srv.BucketURL("conformance", ""))
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"portability note conditional-delete: ", "known gap: fake-gcs-server", "conditional delete: not declared", "23 passed, 0 failed, 1 portability notes", "verdict: cairn can run"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

// wrapped is a mem bucket that breaks one rule of the port, opened by the
// conformance command through a scheme of its own.
type wrapped struct {
	bucket.Bucket
	refuseDirKeys          bool
	ignoreConditions       bool
	ignoreDeleteConditions bool
}

func (w wrapped) Delete(ctx context.Context, key string, cond bucket.Condition) error {
	if w.ignoreDeleteConditions {
		cond = bucket.Unconditional
	}
	return w.Bucket.Delete(ctx, key, cond)
}

func (w wrapped) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if w.refuseDirKeys && strings.HasSuffix(key, "/") {
		return bucket.Attrs{}, errors.New("wrapped: a key ending in / cannot hold data")
	}
	if w.ignoreConditions {
		cond = bucket.Unconditional
	}
	return w.Bucket.Put(ctx, key, body, cond)
}

func init() {
	bucket.Register("test-noslash", func(context.Context, *url.URL) (bucket.Bucket, error) {
		return wrapped{Bucket: mem.NewBucket(), refuseDirKeys: true}, nil
	})
	bucket.Register("test-nocond", func(context.Context, *url.URL) (bucket.Bucket, error) {
		return wrapped{Bucket: mem.NewBucket(), ignoreConditions: true}, nil
	})
	bucket.Register("test-nocondel", func(context.Context, *url.URL) (bucket.Bucket, error) {
		return wrapped{Bucket: mem.NewBucket(), ignoreDeleteConditions: true}, nil
	})
}

// TestConformanceGradesByReliance: a store that refuses keys ending in "/"
// (as versitygw does) fails only a check cairn does not rely on: a
// portability note, the verdict "can run" and exit 0. A store that ignores
// create-only and replace-if-version conditions cannot run cairn: exit 1.
func TestConformanceGradesByReliance(t *testing.T) {
	code, out, errOut := runCmd(t, "conformance", "test-noslash://x")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"portability note key-and-prefix-coexist: ", "23 passed, 0 failed, 1 portability notes", "verdict: cairn can run on this store"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = runCmd(t, "conformance", "test-nocond://x")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"fail      create-only-twice: ", "verdict: cairn cannot run on this store"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}

	// A store that declares conditional deletes and ignores them: gc
	// would rely on them, so it is a failure, and the report says what to
	// declare.
	code, out, errOut = runCmd(t, "conformance", "test-nocondel://x")
	if code != exitFailed {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"fail      conditional-delete: ", "conditional delete: declared but NOT honoured", "verdict: cairn cannot run on this store: 1 behaviours"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if _, out, _ = runCmd(t, "conformance", "mem://conformance-honoured"); !strings.Contains(out, "conditional delete: declared and honoured") {
		t.Fatalf("output on a store that honours conditional deletes:\n%s", out)
	}
}
