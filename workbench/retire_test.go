package workbench

import (
	"context"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/files"
	"github.com/cairnstore/cairn/workbench/internal/history"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// dropHeadForTest removes workbench id's commit head and its consumer row,
// with the commit's count and epoch, as a future head removal would: the
// way a test makes a commit unconsumed.
func dropHeadForTest(t *testing.T, s *Service, id string) {
	t.Helper()
	ctx := context.Background()
	_, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(), RequestID: s.RequestID(), Digest: head.Digest([]byte("test.drop_head"), []byte(id)),
		Apply: func(tx *head.Tx) ([]byte, error) {
			ws, _, werr := s.Workspace(ctx, core.TxReader(tx), id)
			if werr != nil {
				return nil, werr
			}
			hk, _ := nokv.WorkbenchCommitHeadKey{Root: s.Root(), Incarnation: ws.Incarnation}.Encode()
			v, _, err := tx.Get(nokv.FamilyWorkbenchCommitHead, hk)
			if err != nil {
				return nil, err
			}
			h, err := nokv.DecodeWorkbenchCommitHead(v)
			if err != nil {
				return nil, err
			}
			ck, _ := nokv.CommitKey{Root: s.Root(), Commit: h.Commit}.Encode()
			cv, _, err := tx.Get(nokv.FamilyCommit, ck)
			if err != nil {
				return nil, err
			}
			c, err := nokv.DecodeCommit(cv)
			if err != nil {
				return nil, err
			}
			c.ConsumerCount--
			c.ConsumerEpoch++
			c.LastZeroConsumerVersion = tx.Sequence()
			consumer, _ := nokv.CommitConsumerKey{Root: s.Root(), Commit: h.Commit, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: ws.Incarnation}.Encode()
			if err := tx.Delete(nokv.FamilyCommitConsumer, consumer); err != nil {
				return nil, err
			}
			if err := tx.Delete(nokv.FamilyWorkbenchCommitHead, hk); err != nil {
				return nil, err
			}
			return nil, core.PutRecord(tx, nokv.FamilyCommit, ck, c.Encode)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestRetireCommit(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), core.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, p := range [][]string{{"a.txt"}, {"b.txt"}, {"c", "d.txt"}} {
		if _, werr := files.PutFile(ctx, s.Service, "wb", append([]string{"outputs"}, p...), []byte(p[0]), "text/plain", false); werr != nil {
			t.Fatal(werr)
		}
	}
	digest := "sha256:" + strings.Repeat("01", 32)
	first, werr := CommitAtForTest(s, "wb", `{"n":1}`, digest, false, 1700000000)
	if werr != nil {
		t.Fatal(werr)
	}
	second, werr := CommitAtForTest(s, "wb", `{"n":2}`, digest, true, 1700000001)
	if werr != nil {
		t.Fatal(werr)
	}
	a, _ := nokv.ParseCommitID(first["commit_identity"].(string))
	b, _ := nokv.ParseCommitID(second["commit_identity"].(string))
	dropHeadForTest(t, s, "wb")
	commits := CommitsForTest(t, s)
	if commits[a].ConsumerCount != 1 || commits[b].ConsumerCount != 0 {
		t.Fatalf("consumers: a %d, b %d", commits[a].ConsumerCount, commits[b].ConsumerCount)
	}

	// a is still its child's parent; b's epoch must be the observed one.
	if werr := history.RetireCommit(ctx, s.Service, a, commits[a].ConsumerEpoch); werr == nil || werr.Code != core.CodeInvalidState {
		t.Fatalf("retiring a consumed commit: %v", werr)
	}
	if werr := history.RetireCommit(ctx, s.Service, b, commits[b].ConsumerEpoch-1); werr == nil || werr.Code != core.CodeConflict || !werr.Retryable {
		t.Fatalf("retiring at a stale epoch: %v", werr)
	}
	if got := CommitsForTest(t, s); got[a].State != nokv.CommitStateSealed || got[b].State != nokv.CommitStateSealed {
		t.Fatal("a refused retirement changed a commit")
	}

	// Two batches of one row, then a crash: the commit stays Retiring with
	// its cursor, and nothing can consume it any more.
	if werr := history.RetireCommitBatches(ctx, s.Service, b, commits[b].ConsumerEpoch, 1, 2); werr != nil {
		t.Fatal(werr)
	}
	if got := CommitsForTest(t, s)[b]; got.State != nokv.CommitStateRetiring {
		t.Fatalf("b is %v", got.State)
	}
	op := retireOperationForTest(t, s, b)
	members, revisions, parents := uint64(2), uint64(0), uint64(0)
	if t := commits[b].MemberTree; t != nil {
		// A tree has no rows to release; b references only what its
		// parent lacks, then releases its parent.
		members, revisions = 0, min(2, t.References)
		parents = 2 - revisions
	}
	if op.Phase != nokv.CommitRetirePhaseReleasing || op.MembersReleased != members || op.RevisionsReleased != revisions || op.ParentsReleased != parents {
		t.Fatalf("cursor %+v", op)
	}
	if _, werr := CommitAtForTest(s, "wb", `{"n":3}`, digest, true, 1700000002); werr != nil {
		t.Fatalf("a commit on the headless workbench: %v", werr)
	}

	// Resumed, with any epoch: the claim is already made.
	if werr := history.RetireCommitBatches(ctx, s.Service, b, 0, 1, -1); werr != nil {
		t.Fatal(werr)
	}
	op = retireOperationForTest(t, s, b)
	got := CommitsForTest(t, s)
	wantMembers, wantRefs := got[b].MemberCount, got[b].UniqueRevisionCount
	if got[b].MemberTree != nil {
		wantMembers, wantRefs = 0, got[b].MemberTree.References
	}
	if got[b].State != nokv.CommitStateRetired || op.Phase != nokv.CommitRetirePhaseComplete || op.CompletedVersion == 0 ||
		op.MembersReleased != wantMembers || op.RevisionsReleased != wantRefs || op.ParentsReleased != 1 {
		t.Fatalf("b %+v, operation %+v", got[b], op)
	}
	if got[a].ConsumerCount != 0 || got[a].LastZeroConsumerVersion == 0 {
		t.Fatalf("a after its child retired: %+v", got[a])
	}
	if werr := history.RetireCommit(ctx, s.Service, a, got[a].ConsumerEpoch); werr != nil {
		t.Fatal(werr)
	}
	if werr := history.RetireCommit(ctx, s.Service, a, 0); werr != nil {
		t.Fatalf("retiring a retired commit again: %v", werr)
	}
	CheckCommitClosureForTest(t, s)
	CheckReferencesForTest(t, s)
	// Retirement keeps the build operations: an exact retry replays.
	again, werr := CommitAtForTest(s, "wb", `{"n":1}`, digest, false, 1700000009)
	if werr != nil || again["idempotent_replay"] != true || again["envelope_digest_uri"] != first["envelope_digest_uri"] {
		t.Fatalf("replay after retirement: %v %v", again, werr)
	}
}

func retireOperationForTest(t *testing.T, s *Service, c nokv.CommitID) nokv.CommitRetireOperation {
	t.Helper()
	key, _ := nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindCommitRetire, ID: core.CommitRetireOperationID(s.Root(), c)}.Encode()
	sn, werr := s.Pin(context.Background())
	if werr != nil {
		t.Fatal(werr)
	}
	v, ok, err := sn.Get(context.Background(), nokv.FamilyOperation, key)
	if err != nil || !ok {
		t.Fatalf("retire operation: %v %v", ok, err)
	}
	op, err := nokv.DecodeCommitRetireOperation(v)
	if err != nil {
		t.Fatal(err)
	}
	return op
}
