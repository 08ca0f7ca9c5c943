package conformance_test

import (
	"context"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance"
)

// broken wraps a bucket and breaks one rule of the port, to prove the
// suite notices.
type broken struct {
	bucket.Bucket
	ignoreConditions bool
	reverseList      bool
	sameVersion      bool
	refuseDirKeys    bool // refuses keys ending in "/", as stores keeping keys as files do
}

func (b *broken) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if b.refuseDirKeys && strings.HasSuffix(key, "/") {
		return bucket.Attrs{}, errors.New("broken: a key ending in / cannot hold data")
	}
	if b.ignoreConditions {
		cond = bucket.Unconditional
	}
	a, err := b.Bucket.Put(ctx, key, body, cond)
	if b.sameVersion && err == nil {
		a.Version = "constant"
	}
	return a, err
}

func (b *broken) List(ctx context.Context, opts bucket.ListOptions) (bucket.ListPage, error) {
	p, err := b.Bucket.List(ctx, opts)
	if b.reverseList {
		sort.Slice(p.Objects, func(i, j int) bool { return p.Objects[i].Key > p.Objects[j].Key })
	}
	return p, err
}

func TestSuiteCatchesBrokenBuckets(t *testing.T) {
	cases := []struct {
		name     string
		b        broken
		mustFail []string
	}{
		{"ignores conditions", broken{ignoreConditions: true}, []string{"create-only-twice", "replace-if-version", "concurrent-create", "concurrent-replace", "missing-keys"}},
		{"unsorted list", broken{reverseList: true}, []string{"list-order", "list-prefix"}},
		{"constant version", broken{sameVersion: true}, []string{"overwrite", "replace-if-version", "delete-recreate", "versions-consistent"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			results := map[string]conformance.Result{}
			conformance.RunBucket(t.Context(), func(context.Context) (bucket.Bucket, error) {
				b := c.b
				b.Bucket = mem.NewBucket()
				return &b, nil
			}, conformance.BucketOptions{}, func(o conformance.Outcome) { results[o.Name] = o.Result })
			for _, name := range c.mustFail {
				if got := results[name]; got == conformance.Pass || got == "" {
					t.Errorf("check %s = %q, want a failure or a note", name, got)
				}
			}
		})
	}
}

func runBroken(t *testing.T, b broken, opts conformance.BucketOptions) (conformance.Summary, map[string]conformance.Outcome) {
	t.Helper()
	got := map[string]conformance.Outcome{}
	sum := conformance.RunBucket(t.Context(), func(context.Context) (bucket.Bucket, error) {
		b := b
		b.Bucket = mem.NewBucket()
		return &b, nil
	}, opts, func(o conformance.Outcome) { got[o.Name] = o })
	return sum, got
}

// TestUnusedPropertyIsAPortabilityNote: a store that refuses keys ending in
// "/" fails key-and-prefix-coexist, which cairn never needs: the failure
// is a note, never a pass, and cairn can run on the store.
func TestUnusedPropertyIsAPortabilityNote(t *testing.T) {
	sum, got := runBroken(t, broken{refuseDirKeys: true}, conformance.BucketOptions{})
	o := got["key-and-prefix-coexist"]
	if o.Result != conformance.Note || !strings.Contains(o.Detail, "cairn does not rely on it") {
		t.Fatalf("key-and-prefix-coexist = %+v, want a portability note", o)
	}
	if sum.Failed != 0 || sum.Notes != 1 || !sum.CanRun() {
		t.Fatalf("summary %v, want no failure, one note, can run", sum)
	}
	if v := sum.Verdict(); !strings.Contains(v, "can run") || strings.Contains(v, "cannot") {
		t.Fatalf("verdict %q", v)
	}
}

// TestReliedOnPropertyFails: a store that ignores create-only and
// replace-if-version conditions fails checks cairn relies on, so cairn
// cannot run on it; a known gap declared for such a check changes nothing.
func TestReliedOnPropertyFails(t *testing.T) {
	sum, got := runBroken(t, broken{ignoreConditions: true}, conformance.BucketOptions{KnownGaps: map[string]string{"create-only-twice": "declared for the test"}})
	o := got["create-only-twice"]
	if o.Result != conformance.Fail || o.Gap != "declared for the test" {
		t.Fatalf("create-only-twice = %+v, want a failure that carries the declared gap", o)
	}
	if sum.CanRun() || !strings.Contains(sum.Verdict(), "cannot run") {
		t.Fatalf("summary %v, verdict %q: want cannot run", sum, sum.Verdict())
	}
}

// TestEveryCheckSaysWhy: each check is graded, and the grade is explained.
func TestEveryCheckSaysWhy(t *testing.T) {
	for _, c := range conformance.BucketChecks() {
		if c.Why == "" {
			t.Errorf("check %s does not say why cairn relies on it or not", c.Name)
		}
	}
}
