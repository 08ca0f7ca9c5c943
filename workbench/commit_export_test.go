package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/files"
	"github.com/cairnstore/cairn/workbench/internal/history"
	"github.com/cairnstore/cairn/workbench/internal/maintenance"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/tree"
)

// Test helpers of the commit tools.

// CommitAtForTest runs workbench_commit with the clock fixed at unix
// seconds (a fresh build's commit time). manifest must be canonical JSON.
func CommitAtForTest(s *Service, id, manifest, contentDigest string, replace bool, unix int64) (map[string]any, *core.Error) {
	req := history.NewCommitRequest(s.Service, id, []byte(manifest), contentDigest, replace)
	res, werr := history.Commit(context.Background(), s.Service, req, func() time.Time { return time.Unix(unix, 0) })
	if werr != nil {
		return nil, core.CommitConflict(werr)
	}
	// As Call would print it.
	res.Succeed()
	b, err := core.MarshalResult(res)
	if err != nil {
		return nil, core.FromError(err)
	}
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		return nil, core.FromError(err)
	}
	return out, nil
}

// CommitsForTest returns every Commit row of the root by id.
func CommitsForTest(tb testing.TB, s *Service) map[nokv.CommitID]nokv.Commit {
	tb.Helper()
	out := map[nokv.CommitID]nokv.Commit{}
	for _, r := range ScanForTest(tb, s, nokv.FamilyCommit, nil) {
		k, err := nokv.ParseCommitKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		c, err := nokv.DecodeCommit(r.Value)
		if err != nil {
			tb.Fatal(err)
		}
		out[k.Commit] = c
	}
	return out
}

// CheckCommitClosureForTest recomputes every seal of every commit of the
// root from its rows: the member count and digest from its CommitMember
// rows, the unique revision count and digest from its Commit
// RevisionRefs (which must be exactly the members' revisions), the
// parent count and digest from its ChildCommit consumer rows on its
// parents, and its consumer count from its CommitConsumer rows. A retired
// commit must have no member, revision or parent rows left.
func CheckCommitClosureForTest(tb testing.TB, s *Service) {
	tb.Helper()
	defer FsckCleanForTest(tb, s)
	commits := CommitsForTest(tb, s)
	consumers := map[nokv.CommitID]uint64{}
	childOf := map[nokv.CommitID][]nokv.CommitID{} // child -> parents holding a ChildCommit row
	for _, r := range ScanForTest(tb, s, nokv.FamilyCommitConsumer, nil) {
		k, err := nokv.ParseCommitConsumerKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		consumers[k.Commit]++
		if k.Kind == nokv.CommitConsumerKindChildCommit {
			childOf[k.Child] = append(childOf[k.Child], k.Commit)
		}
	}
	commitRefs := map[nokv.CommitID][]nokv.RevisionID{}
	for _, r := range ScanForTest(tb, s, nokv.FamilyRevisionRef, nil) {
		k, err := nokv.ParseRevisionRefKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		if k.Kind == nokv.ReferenceKindCommit {
			commitRefs[k.Commit] = append(commitRefs[k.Commit], k.Revision)
		}
	}
	for id, c := range commits {
		if got := consumers[id]; got != c.ConsumerCount {
			tb.Errorf("commit %s: consumer_count %d, %d consumer rows", id, c.ConsumerCount, got)
		}
		rows := MembersForTest(tb, s, id, c)
		d := core.NewMemberDigester()
		revSet := map[nokv.RevisionID]bool{}
		for _, r := range rows {
			if err := d.Add(r.Path, r.M); err != nil {
				tb.Fatal(err)
			}
			revSet[r.M.Revision] = true
		}
		refs := core.SortRevisions(commitRefs[id])
		parents := childOf[id]
		if c.State == nokv.CommitStateRetired {
			if len(rows) != 0 || len(refs) != 0 || len(parents) != 0 {
				tb.Errorf("retired commit %s keeps %d members, %d refs, %d parent consumers", id, len(rows), len(refs), len(parents))
			}
			continue
		}
		sum := d.Sum()
		if c.TreeDigests {
			var entries []tree.Entry
			for _, r := range rows {
				e, err := core.MemberTreeEntry(r.Path, r.M)
				if err != nil {
					tb.Fatal(err)
				}
				entries = append(entries, e)
			}
			var err error
			if sum, err = core.MemberTreeDigest(entries); err != nil {
				tb.Fatal(err)
			}
		}
		if uint64(len(rows)) != c.MemberCount || sum != c.MemberDigest {
			tb.Errorf("commit %s: %d member rows do not match the member seal (count %d)", id, len(rows), c.MemberCount)
		}
		members := core.SortRevisions(slices.Collect(func(yield func(nokv.RevisionID) bool) {
			for r := range revSet {
				if !yield(r) {
					return
				}
			}
		}))
		if c.MemberTree != nil {
			// Its own references, and its parent's for the rest. Flat
			// digests seal its members' revisions, tree digests its own
			// references.
			sealed := members
			if c.TreeDigests {
				sealed = refs
			}
			if uint64(len(sealed)) != c.UniqueRevisionCount || core.RevisionDigest(sealed) != c.RevisionDigest || uint64(len(refs)) != c.MemberTree.References {
				tb.Errorf("commit %s: %d member revisions, %d refs; sealed %d and %d", id, len(members), len(refs), c.UniqueRevisionCount, c.MemberTree.References)
			}
			parent := map[nokv.RevisionID]bool{}
			if len(c.Parents) > 0 {
				for _, m := range MembersForTest(tb, s, c.Parents[0], commits[c.Parents[0]]) {
					parent[m.M.Revision] = true
				}
			}
			own := map[nokv.RevisionID]bool{}
			for _, r := range refs {
				own[r] = true
			}
			for _, r := range members {
				if !own[r] && !parent[r] {
					tb.Errorf("commit %s: revision %s is neither its reference nor its parent's member", id, r)
				}
			}
		} else if !slices.Equal(refs, members) || uint64(len(refs)) != c.UniqueRevisionCount || core.RevisionDigest(refs) != c.RevisionDigest {
			tb.Errorf("commit %s: commit refs %v, member revisions %v, sealed count %d", id, refs, members, c.UniqueRevisionCount)
		}
		if !slices.Equal(parents, c.Parents) || core.ParentDigest(parents) != c.ParentDigest {
			tb.Errorf("commit %s: parent consumers %v, sealed parents %v", id, parents, c.Parents)
		}
	}
}

// FsckCleanForTest fails tb on any finding of Fsck at the Service's
// root, bodies read whole.
func FsckCleanForTest(tb testing.TB, s *Service) {
	tb.Helper()
	rep, err := maintenance.FsckService(context.Background(), s.Service, maintenance.FsckOptions{Bodies: true})
	if err != nil {
		tb.Fatal(err)
	}
	for _, f := range rep.Findings {
		tb.Errorf("fsck: %s", f)
	}
}

// OverwriteForTest replaces the artifact at path (which may be a reserved
// path such as metadata/run_manifest.json) with body, as a replace-only
// publication: the way a test tampers with a run manifest.
func OverwriteForTest(tb testing.TB, s *Service, id, path string, body []byte) {
	tb.Helper()
	if _, werr := files.PutFile(context.Background(), s.Service, id, strings.Split(path, "/"), body, "application/json", true); werr != nil {
		tb.Fatal(werr)
	}
}

// StageWorkbenchForTest writes a Staging marker for workbench id, as a
// restore in progress does.
func StageWorkbenchForTest(tb testing.TB, s *Service, id string) {
	tb.Helper()
	ctx := context.Background()
	_, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest([]byte("test.stage"), []byte(id)),
		Apply: func(tx *head.Tx) ([]byte, error) {
			ws := nokv.WorkspaceCurrent{
				Incarnation: nokv.NewIncarnationID(), WorkspaceRevision: 1, State: nokv.WorkspaceStateStaging,
				Owner:          &nokv.OperationRef{Kind: nokv.OperationKindRestore, ID: nokv.NewOperationID(time.Now())},
				CreatedVersion: tx.Sequence(), ModifiedVersion: tx.Sequence(),
			}
			return nil, s.PutWorkspace(tx, id, ws)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// SetMaxCommitMembersForTest lowers the file bound of a commit until the
// test ends.
func SetMaxCommitMembersForTest(tb testing.TB, n int) {
	old := history.CommitMembersLimit
	history.CommitMembersLimit = n
	tb.Cleanup(func() { history.CommitMembersLimit = old })
}

// MemberForTest is one member of a commit.
type MemberForTest struct {
	Path []string
	M    nokv.CommitMember
}

// MembersForTest returns the members of commit id (record c), from its
// rows or its member tree; none for a retired commit with a tree.
func MembersForTest(tb testing.TB, s *Service, id nokv.CommitID, c nokv.Commit) []MemberForTest {
	tb.Helper()
	ctx := context.Background()
	var out []MemberForTest
	for _, r := range ScanForTest(tb, s, nokv.FamilyCommitMember, nokv.CommitMemberPrefix(s.Root(), id)) {
		k, err := nokv.ParseCommitMemberKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		m, err := nokv.DecodeCommitMember(r.Value)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, MemberForTest{k.Path, m})
	}
	if c.MemberTree == nil || c.State == nokv.CommitStateRetired {
		return out
	}
	sn, err := s.Store().Pin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	err = s.CommitMembers(ctx, sn, id, c, func(p []string, m nokv.CommitMember) error {
		out = append(out, MemberForTest{p, m})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// AllMembersForTest counts the members of every commit, rows and trees.
func AllMembersForTest(tb testing.TB, s *Service) int {
	tb.Helper()
	n := 0
	for id, c := range CommitsForTest(tb, s) {
		n += len(MembersForTest(tb, s, id, c))
	}
	return n
}

// CommitsFromChangesForTest returns how many commits the process built
// from the change feed since its parent rather than the whole workbench.
func CommitsFromChangesForTest() int64 { return history.CommitsFromChanges.Load() }

// LiveMembersForTest returns the members a commit of workbench
// incarnation inc would freeze now: its PathCurrent rows, by path.
func LiveMembersForTest(tb testing.TB, s *Service, inc nokv.IncarnationID) map[string]nokv.CommitMember {
	tb.Helper()
	out := map[string]nokv.CommitMember{}
	for _, r := range ScanForTest(tb, s, nokv.FamilyPathCurrent, nil) {
		k, err := nokv.ParsePathCurrentKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		if k.Incarnation != inc {
			continue
		}
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			tb.Fatal(err)
		}
		out[core.LogicalPath(k.Path)] = nokv.MemberOf(e)
	}
	return out
}
