package gcsweep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench"
)

// smallOptions tune a Service so that a few files give every kind of
// object: pages of 256 bytes, objects up to 160 bytes inline in their
// table, a fold every four deltas, blocks of 1 KiB and bodies up to 256
// bytes inline in their row.
func smallOptions(agent string) workbench.Options {
	return workbench.Options{
		AgentID:      agent,
		BlockSize:    1 << 10,
		InlineMax:    256,
		CleanupDelay: time.Millisecond,
		Engine: head.Options{
			PageBytes:   256,
			InlineBytes: 160,
			MaxDeltas:   4,
			MergeBytes:  -1,
			Check:       true,
		},
	}
}

func openService(t testing.TB, b bucket.Bucket, opts workbench.Options) *workbench.Service {
	t.Helper()
	s, err := workbench.Open(context.Background(), b, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.Store().Initialize(context.Background()); err != nil {
		t.Fatal(err)
	}
	return s
}

func put(t testing.TB, s *workbench.Service, path, body string, replace bool) {
	t.Helper()
	in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"text":%q,"replace":%t}`, path, body, replace)
	if out, ok := s.Call(context.Background(), "workbench_put_file", []byte(in)); !ok {
		t.Fatalf("put %s: %s", path, out)
	}
}

// readBack reads a file through s, 300 bytes at a time, and compares
// its bytes.
func readBack(t testing.TB, s *workbench.Service, path, want string) {
	t.Helper()
	var got []byte
	cursor := "null"
	for {
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"format":"bytes","limit":300,"cursor":%s}`, path, cursor)
		out, ok := s.Call(context.Background(), "workbench_read", []byte(in))
		if !ok {
			t.Fatalf("read %s: %s", path, out)
		}
		var r struct {
			Bytes []byte          `json:"bytes"`
			Next  json.RawMessage `json:"next_cursor"`
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatal(err)
		}
		got = append(got, r.Bytes...)
		if string(r.Next) == "null" {
			break
		}
		cursor = string(r.Next)
	}
	if string(got) != want {
		t.Fatalf("read %s: %d bytes, not the %d put", path, len(got), len(want))
	}
}

// body returns a text body of n bytes, distinct for seed.
func body(seed, n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		fmt.Fprintf(&sb, "line %d of body %d\n", sb.Len(), seed)
	}
	return sb.String()[:n]
}

// recorder records the keys of every Get.
type recorder struct {
	bucket.Bucket
	mu   sync.Mutex
	gets map[string]bool
}

func (r *recorder) Get(ctx context.Context, key string) ([]byte, bucket.Attrs, error) {
	r.mu.Lock()
	r.gets[key] = true
	r.mu.Unlock()
	return r.Bucket.Get(ctx, key)
}

func headRoot(t testing.TB, b bucket.Bucket, layout shards.Layout) digest.Hash {
	t.Helper()
	h, _, err := head.ReadHead(context.Background(), b, layout, head.Marker{})
	if err != nil {
		t.Fatal(err)
	}
	root, err := digest.Parse(h.Root)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// walkKeys walks root and returns the keys of engine objects and of
// blocks it reports, by kind.
func walkKeys(t testing.TB, b bucket.Bucket, layout shards.Layout, root digest.Hash, verify bool) (engine, blocks map[string]bool, kinds map[walk.Kind]int) {
	t.Helper()
	engine, blocks, kinds = map[string]bool{}, map[string]bool{}, map[walk.Kind]int{}
	err := walk.Walk(context.Background(), b, layout, root, workbench.BlockRefs,
		walk.Options{Verify: verify, RefFamilies: workbench.BlockRefFamilies},
		func(o walk.Object) error {
			set := engine
			if o.Kind == walk.KindBlock {
				set = blocks
			}
			if set[o.Key] {
				return fmt.Errorf("%s reported twice", o.Key)
			}
			set[o.Key] = true
			kinds[o.Kind]++
			return nil
		})
	if err != nil {
		t.Fatal(err)
	}
	return engine, blocks, kinds
}

// TestWalkFindsWhatCheckReads: on a small Workbench store with every
// kind of object and a held root, walk.Walk with the Workbench's Refs
// (as the sweep and pin verify walk) reports exactly the engine objects
// a strict head.Check fetches (a verifying walk without Refs), whether
// it verifies or not, and exactly the blocks of the bodies that are not
// inline; a store of inline bodies only has no block.
func TestWalkFindsWhatCheckReads(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := openService(t, b, smallOptions("walk"))
	layout := s.Store().Layout()
	for i := range 12 {
		put(t, s, fmt.Sprintf("small/%02d.txt", i), body(i, 40), false)
	}
	_, blocks, _ := walkKeys(t, b, layout, headRoot(t, b, layout), false)
	if len(blocks) != 0 {
		t.Fatalf("inline bodies only: walk found blocks %v", slices.Sorted(maps.Keys(blocks)))
	}
	// A held root: the state before the large bodies.
	if _, err := s.Store().Do(ctx, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("test-snapshot", tx.Snapshot().RootHash())
	}}); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		put(t, s, fmt.Sprintf("large/%02d.txt", i), body(100+i, 2500), false)
	}
	put(t, s, "large/00.txt", body(200, 1500), true) // the old revision's blocks stay referenced
	put(t, s, "small/00.txt", body(300, 40), true)

	root := headRoot(t, b, layout)
	rec := &recorder{Bucket: b, gets: map[string]bool{}}
	if err := head.Check(ctx, rec, layout, root, head.CheckOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	for _, verify := range []bool{false, true} {
		engine, blocks, kinds := walkKeys(t, b, layout, root, verify)
		if !maps.Equal(engine, rec.gets) {
			t.Errorf("verify %v: walk and Check differ:\nonly walk: %v\nonly Check: %v", verify, minus(engine, rec.gets), minus(rec.gets, engine))
		}
		for _, k := range []walk.Kind{walk.KindRoot, walk.KindTable, walk.KindDelta, walk.KindShard, walk.KindIndex, walk.KindPage} {
			if kinds[k] == 0 {
				t.Errorf("verify %v: no %s reached; the store should have every kind (%v)", verify, k, kinds)
			}
		}
		listed, _, err := bucket.ListAll(ctx, b, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(layout)})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, o := range listed {
			want[o.Key] = true
		}
		// 2,500 bytes in 1 KiB blocks: 3 blocks each, 6 files, and 2 for
		// the replacement of 1,500 bytes.
		if len(want) != 6*3+2 || !maps.Equal(blocks, want) {
			t.Errorf("verify %v: blocks walked %d, stored %d:\nonly walk: %v\nonly stored: %v", verify, len(blocks), len(want), minus(blocks, want), minus(want, blocks))
		}
	}
}

// TestWalkReportsMissingAndCorrupt: a missing block and a corrupt delta segment
// end a walk with their errors, or, with OnError, are reported and the
// walk goes on.
func TestWalkReportsMissingAndCorrupt(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	s := openService(t, b, smallOptions("walk"))
	layout := s.Store().Layout()
	put(t, s, "large.txt", body(1, 2500), false)
	put(t, s, "small.txt", body(2, 20), false)
	root := headRoot(t, b, layout)
	engine, blocks, _ := walkKeys(t, b, layout, root, true)

	var block string
	for k := range blocks {
		block = k
	}
	if err := b.Delete(ctx, block, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	err := walk.Walk(ctx, b, layout, root, workbench.BlockRefs, walk.Options{Verify: true}, func(walk.Object) error { return nil })
	if !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("walk with a missing block: %v", err)
	}
	// Without Verify a block is not fetched: the walk cannot see it.
	if err := walk.Walk(ctx, b, layout, root, workbench.BlockRefs, walk.Options{}, func(walk.Object) error { return nil }); err != nil {
		t.Fatalf("walk without verify: %v", err)
	}

	// Corrupt the newest delta segment (small.txt's, which names no
	// block): one byte flipped.
	rb, _, err := b.Get(ctx, layout.Root(root))
	if err != nil {
		t.Fatal(err)
	}
	r, err := roots.DecodeRoot(layout.Schema(), rb, root)
	if err != nil {
		t.Fatal(err)
	}
	delta := layout.Delta(r.Deltas[0].Ref.Hash)
	if !engine[delta] {
		t.Fatalf("the walk did not reach %s", delta)
	}
	tb, _, err := b.Get(ctx, delta)
	if err != nil {
		t.Fatal(err)
	}
	tb[len(tb)-1] ^= 1
	if err := b.Delete(ctx, delta, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Put(ctx, delta, tb, bucket.IfAbsent()); err != nil {
		t.Fatal(err)
	}
	var failed []string
	err = walk.Walk(ctx, b, layout, root, workbench.BlockRefs, walk.Options{Verify: true,
		OnError: func(o walk.Object, err error) error {
			failed = append(failed, o.Key)
			return nil
		}}, func(walk.Object) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(failed)
	if want := []string{block, delta}; slices.Compare(failed, sortedCopy(want)) != 0 {
		t.Fatalf("OnError told of %v, want %v", failed, sortedCopy(want))
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

func minus(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}
