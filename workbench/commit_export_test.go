package workbench

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Test helpers of the commit tools.

// CommitAtForTest runs workbench_commit with the clock fixed at unix
// seconds (a fresh build's commit time). manifest must be canonical JSON.
func CommitAtForTest(s *Service, id, manifest, contentDigest string, replace bool, unix int64) (map[string]any, *Error) {
	req := s.newCommitRequest(id, []byte(manifest), contentDigest, replace)
	res, werr := s.commit(context.Background(), req, func() time.Time { return time.Unix(unix, 0) })
	if werr != nil {
		return nil, CommitConflict(werr)
	}
	// As Call would print it.
	res.succeed()
	b, err := MarshalResult(res)
	if err != nil {
		return nil, FromError(err)
	}
	var out map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&out); err != nil {
		return nil, FromError(err)
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
		rows := ScanForTest(tb, s, nokv.FamilyCommitMember, nokv.CommitMemberPrefix(s.root, id))
		d := newMemberDigester()
		revSet := map[nokv.RevisionID]bool{}
		for _, r := range rows {
			k, err := nokv.ParseCommitMemberKey(r.Key)
			if err != nil {
				tb.Fatal(err)
			}
			m, err := nokv.DecodeCommitMember(r.Value)
			if err != nil {
				tb.Fatal(err)
			}
			if err := d.add(k.Path, m); err != nil {
				tb.Fatal(err)
			}
			revSet[m.Revision] = true
		}
		refs := sortRevisions(commitRefs[id])
		parents := childOf[id]
		if c.State == nokv.CommitStateRetired {
			if len(rows) != 0 || len(refs) != 0 || len(parents) != 0 {
				tb.Errorf("retired commit %s keeps %d members, %d refs, %d parent consumers", id, len(rows), len(refs), len(parents))
			}
			continue
		}
		if uint64(len(rows)) != c.MemberCount || d.sum() != c.MemberDigest {
			tb.Errorf("commit %s: %d member rows do not match the member seal (count %d)", id, len(rows), c.MemberCount)
		}
		members := sortRevisions(slices.Collect(func(yield func(nokv.RevisionID) bool) {
			for r := range revSet {
				if !yield(r) {
					return
				}
			}
		}))
		if !slices.Equal(refs, members) || uint64(len(refs)) != c.UniqueRevisionCount || revisionDigest(refs) != c.RevisionDigest {
			tb.Errorf("commit %s: commit refs %v, member revisions %v, sealed count %d", id, refs, members, c.UniqueRevisionCount)
		}
		if !slices.Equal(parents, c.Parents) || parentDigest(parents) != c.ParentDigest {
			tb.Errorf("commit %s: parent consumers %v, sealed parents %v", id, parents, c.Parents)
		}
	}
}

// FsckCleanForTest fails tb on any finding of Fsck at the Service's
// root, bodies read whole.
func FsckCleanForTest(tb testing.TB, s *Service) {
	tb.Helper()
	rep, err := s.Fsck(context.Background(), FsckOptions{Bodies: true})
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
	if _, werr := s.putFile(context.Background(), id, strings.Split(path, "/"), body, "application/json", true); werr != nil {
		tb.Fatal(werr)
	}
}

// StageWorkbenchForTest writes a Staging marker for workbench id, as a
// restore in progress does.
func StageWorkbenchForTest(tb testing.TB, s *Service, id string) {
	tb.Helper()
	ctx := context.Background()
	_, err := s.store.Do(ctx, head.Command{
		Namespace: s.root,
		RequestID: s.requestID(),
		Digest:    head.Digest([]byte("test.stage"), []byte(id)),
		Apply: func(tx *head.Tx) ([]byte, error) {
			ws := nokv.WorkspaceCurrent{
				Incarnation: nokv.NewIncarnationID(), WorkspaceRevision: 1, State: nokv.WorkspaceStateStaging,
				Owner:          &nokv.OperationRef{Kind: nokv.OperationKindRestore, ID: nokv.NewOperationID()},
				CreatedVersion: tx.Sequence(), ModifiedVersion: tx.Sequence(),
			}
			return nil, s.putWorkspace(tx, id, ws)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// SetMaxCommitMembersForTest lowers the file bound of a commit until the
// test ends.
func SetMaxCommitMembersForTest(tb testing.TB, n int) {
	old := maxCommitMembers
	maxCommitMembers = n
	tb.Cleanup(func() { maxCommitMembers = old })
}
