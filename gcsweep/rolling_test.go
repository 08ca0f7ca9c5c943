package gcsweep_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/workbench"
)

// liveKeys returns every object a walk of root reaches, blocks only of
// the revisions the root (or a root its holds name) references: what
// reads of that state need.
func liveKeys(t *testing.T, s *workbench.Service, root digest.Hash) map[string]bool {
	t.Helper()
	ctx := context.Background()
	refs, err := workbench.PinBlockRefs(ctx, s.Store(), root)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	err = walk.Walk(ctx, s.Store().Bucket(), s.Store().Layout(), root, refs, walk.Options{}, func(o walk.Object) error {
		keys[o.Key] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// readAt reads a file at a snapshot through s and compares its bytes.
func readAt(t *testing.T, s *workbench.Service, path, snapshot, want string) {
	t.Helper()
	var got []byte
	cursor := "null"
	for {
		in := fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q,"format":"bytes","limit":300,"at_snapshot":%s,"cursor":%s}`, path, snapshot, cursor)
		out, ok := s.Call(context.Background(), "workbench_read", []byte(in))
		if !ok {
			t.Fatalf("read %s at snapshot %s: %s", path, snapshot, out)
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
		t.Fatalf("read %s at snapshot %s: %d bytes, not the %d put", path, snapshot, len(got), len(want))
	}
}

// TestRollingSnapshotsAreReclaimed: six snapshots minted in a rolling
// pattern (mint S1, put, mint S2, retire S1, put, mint S3, retire S2, …),
// five of them retired. Each snapshot's held root carries the hold of the
// one alive when it was minted; holds keep one level, so one gc (a sweep
// and a collection of revisions) past the grace reclaims everything only
// the retired snapshots held: their roots, the objects only they reach,
// and the blocks of the five versions of the file they read. The live
// snapshot still reads its version, and the store checks.
func TestRollingSnapshotsAreReclaimed(t *testing.T) {
	ctx := context.Background()
	clk := newFakeClock()
	b := newClockBucket(mem.NewBucket(), clk, nil)
	s := openService(t, b, smallOptions("rolling"))
	layout := s.Store().Layout()
	put(t, s, "kept.txt", body(0, 2500), false)
	call(t, s, "workbench_commit", `{"id":"wb","manifest":{"run":1},"content_digest_uri":"sha256:`+fmt.Sprintf("%064x", 1)+`"}`)

	const minted = 6
	var ids []string
	var held []digest.Hash // the root each snapshot holds
	var versions []string
	for i := 1; i <= minted; i++ {
		versions = append(versions, body(i, 2500))
		put(t, s, "roll.txt", versions[i-1], i > 1)
		held = append(held, headRoot(t, b, layout))
		ids = append(ids, snapshotID(t, call(t, s, "workbench_snapshot", `{"id":"wb"}`)))
		if i > 1 {
			call(t, s, "workbench_snapshot_retire", fmt.Sprintf(`{"id":"wb","snapshot_id":%s,"reason":"rolled"}`, ids[i-2]))
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	quiesce(t, b, layout)
	s = openService(t, b, smallOptions("rolling"))

	// What only the retired snapshots read, and what the head and the
	// live snapshot read.
	headKeys := liveKeys(t, s, headRoot(t, b, layout))
	onlyRetired := map[string]bool{}
	for _, r := range held[:minted-1] {
		for k := range liveKeys(t, s, r) {
			if !headKeys[k] {
				onlyRetired[k] = true
			}
		}
	}
	retiredBlocks := 0
	for k := range onlyRetired {
		if !listAll(t, b)[k] {
			t.Fatalf("%s is not in the bucket before the gc", k)
		}
		if strings.HasPrefix(k, bodies.ArtifactsPrefix(layout)) {
			retiredBlocks++
		}
	}
	const blocksPerVersion = 3 // 2,500 bytes in blocks of 1 KiB
	if retiredBlocks != blocksPerVersion*(minted-1) {
		t.Fatalf("%d blocks only the retired snapshots read, want %d", retiredBlocks, blocksPerVersion*(minted-1))
	}

	clk.Advance(2 * time.Hour)
	rep, err := gcsweep.Sweep(ctx, b, layout, sweepOptions())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Holds != 1 {
		t.Errorf("%d held roots kept, want the live snapshot's only", rep.Holds)
	}
	col, err := s.CollectRevisions(ctx, workbench.CollectOptions{Kept: rep.Kept})
	if err != nil {
		t.Fatal(err)
	}
	if col.Collected != minted-1 || col.BlocksDeleted != retiredBlocks || col.Waiting != 0 {
		t.Errorf("collection: %+v, want the %d versions only the retired snapshots read", col, minted-1)
	}
	after := listAll(t, b)
	for k := range onlyRetired {
		if after[k] {
			t.Errorf("%s, which only retired snapshots read, survived the gc", k)
		}
	}
	for _, r := range held[:minted-1] {
		if _, err := b.Stat(ctx, layout.Root(r)); !errors.Is(err, bucket.ErrNotExist) {
			t.Errorf("the root of a retired snapshot survived: %v", err)
		}
	}

	// The live snapshot reads its version, at its own held root.
	readAt(t, s, "roll.txt", ids[minted-1], versions[minted-1])
	readBack(t, s, "roll.txt", versions[minted-1])
	readBack(t, s, "kept.txt", body(0, 2500))
	if err := head.Check(ctx, b, layout, headRoot(t, b, layout), head.CheckOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	fr, err := workbench.Fsck(ctx, b, workbench.FsckOptions{AgentID: "rolling", Bodies: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fr.Findings {
		t.Errorf("fsck: %s", f)
	}
}
