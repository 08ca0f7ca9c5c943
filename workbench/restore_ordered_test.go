package workbench_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestKeyOrderedRestorePlacesPrefixes stops a restore of 60 files after
// its second copy command of 16 members and looks at what it placed. In
// a shard of value format 7 the destination commit's references and the
// destination's index rows are each a prefix of their family's key order
// (so the copy commands write each page of those families about once);
// in format 6, where a command places its members whole, they are not.
// Resumed in commands of another size, the restore completes with every
// count right; in format 7 its commit's members are in a tree edited from
// the source commit's, not in rows.
func TestKeyOrderedRestorePlacesPrefixes(t *testing.T) {
	defer workbench.SetRestoreBatchForTest(16)()
	for _, format := range []int{6, 7} {
		t.Run(fmt.Sprint("value-format-", format), func(t *testing.T) {
			s := newServiceOn(t, mem.NewBucket(), workbench.Options{ValueFormat: format})
			mustCall(t, s, "workbench_create", `{"id":"src"}`)
			// Written across the directories in turn, with sizes and
			// bodies in another order again.
			for i := range 60 {
				putText(t, s, "src", fmt.Sprintf("d%d/f%02d.txt", i%4, i), fmt.Sprint(i*37%60, "-", i))
			}
			commit := mustCall(t, s, "workbench_commit", commitInput("src", `{"task":"ordered"}`, digestAA))["commit_identity"].(string)
			steps := 0
			workbench.SetRestoreHookForTest(s, func(string) error {
				if steps++; steps == 3 { // prepare, copy, copy
					return errors.New("stop after the second copy command")
				}
				return nil
			})
			if _, ok := call(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit))); ok {
				t.Fatal("the restore did not stop")
			}
			workbench.SetRestoreHookForTest(s, nil)

			incs := map[string]nokv.IncarnationID{}
			for _, r := range workbench.ScanForTest(t, s, nokv.FamilyWorkspaceCurrent, nil) {
				k, err := nokv.ParseWorkspaceCurrentKey(r.Key)
				if err != nil {
					t.Fatal(err)
				}
				ws, err := nokv.DecodeWorkspaceCurrent(r.Value)
				if err != nil {
					t.Fatal(err)
				}
				incs[k.WorkbenchID] = ws.Incarnation
			}
			src, dst := incs["src"], incs["dst"]
			copied := func(path []string) bool { return path[0] != "metadata" }

			// The index rows: the source's (the manifests aside) under the
			// destination's incarnation, in key order, against the
			// destination's.
			var want, got [][]byte
			for _, r := range workbench.ScanForTest(t, s, nokv.FamilySecondaryIndex, nil) {
				k, err := nokv.ParseSecondaryIndexKey(r.Key)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case k.Incarnation == dst:
					got = append(got, r.Key)
				case k.Incarnation == src && copied(k.Path):
					k.Incarnation = dst
					b, err := k.Encode()
					if err != nil {
						t.Fatal(err)
					}
					want = append(want, b)
				}
			}
			slices.SortFunc(want, bytes.Compare)
			indexPrefix := isPrefix(got, want, bytes.Equal)

			// The destination commit's references against the revisions
			// of the source's paths.
			var revs, refs []nokv.RevisionID
			for _, r := range workbench.ScanForTest(t, s, nokv.FamilyRevisionRef, nil) {
				k, err := nokv.ParseRevisionRefKey(r.Key)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case k.Kind == nokv.ReferenceKindPath && k.Incarnation == src && copied(k.Path):
					revs = append(revs, k.Revision)
				case k.Kind == nokv.ReferenceKindCommit && k.Commit.String() != commit:
					refs = append(refs, k.Revision)
				}
			}
			slices.SortFunc(revs, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) })
			refPrefix := isPrefix(refs, revs, func(a, b nokv.RevisionID) bool { return a == b })

			t.Logf("%d of %d index rows placed, a prefix: %v; %d of %d commit references, a prefix: %v",
				len(got), len(want), indexPrefix, len(refs), len(revs), refPrefix)
			if len(got) == 0 || len(got) >= len(want) || len(refs) == 0 || len(refs) >= len(revs) {
				t.Fatal("the stopped restore should have placed some rows of each family, not all")
			}
			if ordered := format >= 7; indexPrefix != ordered || refPrefix != ordered {
				t.Fatalf("value format %d: index rows a prefix %v, commit references %v; want %v", format, indexPrefix, refPrefix, ordered)
			}
			// Either way the stopped restore resumes and completes, here
			// in commands of another size.
			defer workbench.SetRestoreBatchForTest(7)()
			mustCall(t, s, "workbench_restore", restoreIn("src", "dst", fmt.Sprintf(`"at_commit":%q`, commit)))
			if n := len(treeOf(t, s, "dst")); n != 62 {
				t.Fatalf("the restore holds %d files, want 62", n)
			}
			workbench.CheckReferencesForTest(t, s)
			workbench.FsckCleanForTest(t, s)
			// In format 7 the destination commit keeps its members in a
			// tree (the source's with the two manifests edited in), and
			// there are no member rows.
			var srcTree, dstTree *nokv.MemberTree
			for id, c := range workbench.CommitsForTest(t, s) {
				if id.String() == commit {
					srcTree = c.MemberTree
				} else {
					dstTree = c.MemberTree
				}
			}
			rows := len(workbench.ScanForTest(t, s, nokv.FamilyCommitMember, nil))
			if format >= 7 && (dstTree == nil || srcTree == nil || rows != 0) || format < 7 && (dstTree != nil || rows != 62) {
				t.Fatalf("value format %d: destination tree %v, source tree %v, %d member rows", format, dstTree, srcTree, rows)
			}
			// The restored workbench commits on from its commit (in format
			// 7 from what changed since, over the shared tree).
			putText(t, s, "dst", "d9/new.txt", "after the restore")
			before := workbench.CommitsFromChangesForTest()
			mustCall(t, s, "workbench_commit", commitInput("dst", `{"task":"after"}`, digestAA, true))
			if fromChanges := workbench.CommitsFromChangesForTest() - before; (fromChanges == 1) != (format >= 7) {
				t.Fatalf("value format %d: %d commits built from the changes", format, fromChanges)
			}
			workbench.FsckCleanForTest(t, s)
			workbench.CheckCommitClosureForTest(t, s)
		})
	}
}

// isPrefix reports whether got is want's first len(got) elements.
func isPrefix[T any](got, want []T, eq func(a, b T) bool) bool {
	return len(got) <= len(want) && slices.EqualFunc(got, want[:len(got)], eq)
}
