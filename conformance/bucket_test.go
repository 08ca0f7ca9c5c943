package conformance_test

import (
	"context"
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
}

func (b *broken) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
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
				if got := results[name]; got != conformance.Fail {
					t.Errorf("check %s = %q, want fail", name, got)
				}
			}
		})
	}
}

func TestKnownGapIsNeverAPass(t *testing.T) {
	var got []conformance.Outcome
	failed := conformance.RunBucket(t.Context(), func(context.Context) (bucket.Bucket, error) {
		return &broken{Bucket: mem.NewBucket(), ignoreConditions: true}, nil
	}, conformance.BucketOptions{KnownGaps: map[string]string{"create-only-twice": "declared for the test"}},
		func(o conformance.Outcome) { got = append(got, o) })
	if failed == 0 {
		t.Fatal("no failures reported for a bucket that ignores conditions")
	}
	for _, o := range got {
		if o.Name == "create-only-twice" {
			if o.Result != conformance.KnownGap || !strings.Contains(o.Detail, "declared for the test") {
				t.Fatalf("declared gap reported as %+v", o)
			}
			return
		}
	}
	t.Fatal("create-only-twice not reported")
}
