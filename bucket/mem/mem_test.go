package mem_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/conformance"
	"github.com/cairnstore/cairn/conformance/conformancetest"
)

func TestConformanceRoot(t *testing.T) {
	conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
		return mem.NewBucket(), nil
	}, conformance.BucketOptions{})
}

func TestConformancePrefix(t *testing.T) {
	conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
		return mem.New(mem.NewStore(), "some/prefix/")
	}, conformance.BucketOptions{})
}

func TestConformanceWithPrefixWrapper(t *testing.T) {
	conformancetest.RunBucketSuite(t, func(context.Context) (bucket.Bucket, error) {
		return bucket.WithPrefix(mem.NewBucket(), "wrapped/")
	}, conformance.BucketOptions{})
}

func TestOpenSharesNamedStore(t *testing.T) {
	ctx := context.Background()
	name := "mem://" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + strconv.FormatInt(time.Now().UnixNano(), 10)
	a, err := bucket.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	b, err := bucket.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Put(ctx, "k", []byte("v"), bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	got, _, err := b.Get(ctx, "k")
	if err != nil || string(got) != "v" {
		t.Fatalf("replica read = %q, %v; want v", got, err)
	}
	p, err := bucket.Open(ctx, name+"/sub")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Stat(ctx, "k"); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("prefixed view sees root key: %v", err)
	}
}

func TestOpenRejects(t *testing.T) {
	for _, u := range []string{"mem://x?bogus=1", "mem:///nohost"} {
		if _, err := bucket.Open(context.Background(), u); err == nil {
			t.Errorf("Open(%q) succeeded", u)
		}
	}
}
