package storesuite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	awss3 "github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/file"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/bucket/s3"
	"github.com/cairnstore/cairn/conformance/conformancetest"
	"github.com/cairnstore/cairn/conformance/fakegcs/fakegcstest"
	"github.com/cairnstore/cairn/conformance/storesuite"
	"github.com/cairnstore/cairn/head"
)

// TestStoreMem runs every scenario over bucket/mem, the replicas sharing
// one bucket value.
func TestStoreMem(t *testing.T) {
	conformancetest.RunStoreSuite(t, func(*testing.T) bucket.Bucket { return mem.NewBucket() }, storesuite.Options{})
}

// TestStoreMemPrefix runs the mixed scenario with the shard under a
// bucket prefix, each replica holding its own view of one memory store.
func TestStoreMemPrefix(t *testing.T) {
	stores := map[bucket.Bucket]*mem.Store{}
	conformancetest.RunStoreSuite(t, func(t *testing.T) bucket.Bucket {
		st := mem.NewStore()
		b, err := mem.New(st, "some/prefix/")
		if err != nil {
			t.Fatal(err)
		}
		stores[b] = st
		return b
	}, storesuite.Options{
		Scenarios: []string{"mixed"},
		Replica: func(shared bucket.Bucket, _ int) (bucket.Bucket, error) {
			return mem.New(stores[shared], "some/prefix/")
		},
	})
}

// TestStoreMemNoGroupCommit runs the mixed scenario with every command
// committing on its own, in its caller's goroutine.
func TestStoreMemNoGroupCommit(t *testing.T) {
	conformancetest.RunStoreSuite(t, func(*testing.T) bucket.Bucket { return mem.NewBucket() },
		storesuite.Options{Scenarios: []string{"mixed"}, Ops: 25, Head: head.Options{NoGroupCommit: true}})
}

// TestStoreMemIntents runs every scenario with the appends as data
// commands and intents on, the head's writes paced: replicas carry each
// other's appends, and every fault must still leave a linearizable
// history with no lost or repeated append.
func TestStoreMemIntents(t *testing.T) {
	conformancetest.RunStoreSuite(t, func(*testing.T) bucket.Bucket { return mem.NewBucket() },
		storesuite.Options{Head: head.Options{Intents: true, MinCommitInterval: 20 * time.Millisecond}})
}

// TestStoreMemDedupeWindow runs the mixed scenario with dedupe records
// expiring after 128 commits and folds every few commits, so that folds
// drop records while clients still retry (a run makes about 150
// commits): a client retries at once, well within the window, so no
// append may apply twice. (With a window of 32, a retry delayed on a
// loaded machine came after the window and applied again, as the window
// allows.)
func TestStoreMemDedupeWindow(t *testing.T) {
	conformancetest.RunStoreSuite(t, func(*testing.T) bucket.Bucket { return mem.NewBucket() },
		storesuite.Options{Scenarios: []string{"mixed"}, Head: head.Options{DedupeWindow: 128, MaxDeltas: 2}})
}

// TestStoreFile runs every scenario over bucket/file, each replica opening
// the directory itself, so that the conditional writes are arbitrated by
// the file locks, as between processes.
func TestStoreFile(t *testing.T) {
	dirs := map[bucket.Bucket]string{}
	conformancetest.RunStoreSuite(t, func(t *testing.T) bucket.Bucket {
		dir := t.TempDir()
		b, err := file.New(dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		dirs[b] = dir
		return b
	}, storesuite.Options{
		Ops: 12,
		Replica: func(shared bucket.Bucket, _ int) (bucket.Bucket, error) {
			return file.New(dirs[shared])
		},
	})
}

// unconditionalHead breaks the head's CAS: a put conditional on a version
// is sent unconditionally, so racing replicas overwrite each other's
// commits.
type unconditionalHead struct{ bucket.Bucket }

func (b unconditionalHead) Put(ctx context.Context, key string, body []byte, cond bucket.Condition) (bucket.Attrs, error) {
	if _, ok := cond.Version(); ok && strings.HasSuffix(key, "/head") {
		cond = bucket.Unconditional
	}
	return b.Bucket.Put(ctx, key, body, cond)
}

// staleHead breaks read-after-write: a get of the head sometimes answers
// with a head it served earlier, so a replica pins an old state.
type staleHead struct {
	bucket.Bucket
	mu   sync.Mutex
	rng  *rand.Rand
	seen []staleEntry
}

type staleEntry struct {
	body  []byte
	attrs bucket.Attrs
}

func (b *staleHead) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	body, attrs, err := b.Bucket.Get(ctx, key)
	if err != nil || !strings.HasSuffix(key, "/head") {
		return body, attrs, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n := len(b.seen); n > 0 && b.seen[n-1].attrs.Version != attrs.Version && b.rng.IntN(3) == 0 {
		old := b.seen[max(0, n-1-b.rng.IntN(4))]
		return old.body, old.attrs, nil
	}
	if n := len(b.seen); n == 0 || b.seen[n-1].attrs.Version != attrs.Version {
		b.seen = append(b.seen, staleEntry{body, attrs})
	}
	return body, attrs, nil
}

// TestStoreSuiteCatchesBrokenStores proves the suite can fail: over a
// bucket whose head CAS is unconditional it finds lost updates, and over
// one that serves stale heads it finds non-linearizable histories or the
// engine refusing a head older than one it saw (head.ErrHeadRolledBack),
// whichever the interleaving gives.
func TestStoreSuiteCatchesBrokenStores(t *testing.T) {
	cases := []struct {
		name   string
		bucket func(seed uint64) bucket.Bucket
		caught func(r *storesuite.Report) bool
	}{
		{"unconditional head put", func(uint64) bucket.Bucket { return unconditionalHead{mem.NewBucket()} },
			func(r *storesuite.Report) bool { return r.LostAcks > 0 || r.Violations > 0 }},
		{"stale head reads", func(seed uint64) bucket.Bucket {
			return &staleHead{Bucket: mem.NewBucket(), rng: rand.New(rand.NewPCG(seed, 7))}
		}, func(r *storesuite.Report) bool {
			return r.Violations > 0 || r.Errors["append:head-rolled-back"]+r.Errors["read:head-rolled-back"] > 0
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			caught := 0
			const seeds = 3
			for seed := uint64(1); seed <= seeds; seed++ {
				r, err := storesuite.Run(t.Context(), c.bucket(seed), "no-faults", storesuite.Options{
					Seed: seed, Ops: 30, CheckTimeout: 10 * time.Second,
				})
				if err != nil {
					t.Fatal(err)
				}
				t.Log(r.String())
				if c.caught(r) {
					caught++
				}
			}
			if caught == 0 {
				t.Fatalf("the suite passed a broken store on all %d seeds", seeds)
			}
			t.Logf("caught on %d of %d seeds", caught, seeds)
		})
	}
}

// remoteStoreOptions sizes the suite for stores reached over HTTP, where
// every request costs about a millisecond (several under the race
// detector) and Check reads the whole graph after each commit.
var remoteStoreOptions = storesuite.Options{Ops: 6, Keys: 2}

// TestStoreFakeGCS runs the suite against bucket/gcs over an in-process
// fake-gcs-server.
func TestStoreFakeGCS(t *testing.T) {
	srv := fakegcstest.New(t)
	opts := remoteStoreOptions
	// Every scenario costs several seconds on the fake under the race
	// detector; the mixed one injects what these inject.
	const mixed = "covered by the mixed scenario; alone it costs seconds more on the fake under the race detector"
	opts.Skip = map[string]string{"lost-cas-response": mixed, "throttling": mixed, "transient-5xx": mixed}
	conformancetest.RunStoreSuite(t, func(t *testing.T) bucket.Bucket {
		b, err := fakegcstest.NewBucket(t.Context(), srv, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}, opts)
}

// TestStoreS3 runs the suite against bucket/s3 over the S3-compatible
// server at CAIRN_S3_ENDPOINT (versitygw in CI), with the credentials and
// region of AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION.
func TestStoreS3(t *testing.T) {
	endpoint := os.Getenv("CAIRN_S3_ENDPOINT")
	if endpoint == "" {
		if os.Getenv("CAIRN_REQUIRE_SERVERS") == "1" {
			t.Fatal("CAIRN_S3_ENDPOINT is not set and CAIRN_REQUIRE_SERVERS=1: start an S3-compatible server (versitygw) and set CAIRN_S3_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_REGION")
		}
		t.Skip("CAIRN_S3_ENDPOINT is not set: no S3-compatible server to run the store suite against")
	}
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	client := awss3.NewFromConfig(cfg, func(o *awss3.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.UsePathStyle = true
	})
	prefix := fmt.Sprintf("cairn-store-%d", time.Now().UnixNano())
	var n int
	conformancetest.RunStoreSuite(t, func(t *testing.T) bucket.Bucket {
		n++
		name := fmt.Sprintf("%s-%d", prefix, n)
		if _, err := client.CreateBucket(t.Context(), &awss3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatalf("create bucket %s: %v", name, err)
		}
		b, err := s3.New(client, name, "", s3.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, remoteStoreOptions)
}
