package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestMemberTrees: with Options.MemberTrees a commit keeps its members
// in a tree and writes no CommitMember row; a replacing commit that
// changed one file of 300 writes a few nodes and shares the rest; a
// restore reads the tree; a sweep keeps every node a commit reaches and
// deletes a node none does; fsck finds the store clean throughout.
func TestMemberTrees(t *testing.T) {
	ctx := context.Background()
	clock := newStoreClock()
	b := mem.NewBucketAt(clock.Now)
	s := newServiceOn(t, b, workbench.Options{MemberTrees: true})
	for i := range 300 {
		mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", fmt.Sprintf("d%d/f%03d.txt", i%7, i), fmt.Sprintf(`"text":"file %d"`, i)))
	}
	mustCall(t, s, "workbench_commit", commitInput("wb", `{"n":1}`, digest01))
	prefix := bodies.TreePrefix(s.Store().Layout(), s.Root())
	first := keySet(listKeys(t, b, prefix))
	if len(first) < 3 {
		t.Fatalf("the first commit of 300 files wrote %d tree nodes", len(first))
	}
	if rows := workbench.ScanForTest(t, s, nokv.FamilyCommitMember, nil); len(rows) != 0 {
		t.Fatalf("a commit with a member tree wrote %d CommitMember rows", len(rows))
	}
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "d3/f150.txt", `"text":"changed"`, `"replace":true`))
	mustCall(t, s, "workbench_commit", commitInput("wb", `{"n":2}`, digest01, true))
	second := keySet(listKeys(t, b, prefix))
	// Two leaves change (the file's and the run manifest's), and their
	// ancestors: the root at least.
	if added := len(second) - len(first); added < 2 || added > 6 {
		t.Fatalf("a commit that changed one file of 300 wrote %d tree nodes (the first wrote %d)", added, len(first))
	}
	commits := workbench.CommitsForTest(t, s)
	for id, c := range commits {
		if c.MemberTree == nil {
			t.Fatalf("commit %s has no member tree", id)
		}
		// The first references all 301 revisions (300 files and its run
		// manifest); the second only what its parent's members lack: the
		// changed file's and its own run manifest's.
		if want := map[bool]uint64{true: 301, false: 2}[len(c.Parents) == 0]; c.MemberTree.References != want {
			t.Fatalf("commit %s (%d parents) references %d revisions, want %d", id, len(c.Parents), c.MemberTree.References, want)
		}
		if got := workbench.MembersForTest(t, s, id, c); uint64(len(got)) != c.MemberCount {
			t.Fatalf("commit %s: %d members read, %d sealed", id, len(got), c.MemberCount)
		}
	}
	workbench.CheckCommitClosureForTest(t, s)
	workbench.FsckCleanForTest(t, s)

	// An orphan node, as a lost attempt leaves one, beside the live ones.
	orphan := []byte("not a node any commit names")
	orphanKey := prefix + digest.Sum(orphan).String()
	if _, err := b.Put(ctx, orphanKey, orphan, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	workbench.FlushCleanupForTest(s)
	clock.Advance(24 * time.Hour)
	opts := workbench.SweepOptions()
	opts.Touch = true
	if _, err := gcsweep.Sweep(ctx, b, s.Store().Layout(), opts); err != nil {
		t.Fatal(err)
	}
	after := keySet(listKeys(t, b, prefix))
	if after[orphanKey] {
		t.Fatal("the sweep kept a tree node no commit names")
	}
	for k := range second {
		if k != orphanKey && !after[k] {
			t.Fatalf("the sweep deleted %s, a node of a kept commit's tree", strings.TrimPrefix(k, prefix))
		}
	}
	workbench.FsckCleanForTest(t, s)

	// A restore of the first commit reads its tree.
	var firstID nokv.CommitID
	for id, c := range commits {
		if len(c.Parents) == 0 {
			firstID = id
		}
	}
	mustCall(t, s, "workbench_restore", restoreIn("wb", "copy", fmt.Sprintf(`"at_commit":%q`, firstID.String())))
	if got := workbench.BodyForTest(t, s, "copy", "outputs/d3/f150.txt"); string(got) != "file 150" {
		t.Fatalf("the restored file holds %q", got)
	}
	workbench.FsckCleanForTest(t, s)
}

func keySet(keys []string) map[string]bool {
	out := map[string]bool{}
	for _, k := range keys {
		out[k] = true
	}
	return out
}
