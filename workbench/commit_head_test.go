package workbench

import (
	"context"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestCommitHeadReader writes a WorkbenchCommitHead row with one engine
// command and reads it back through commitHead: absent before, the exact
// row after, and absent for another incarnation of the same root.
func TestCommitHeadReader(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), core.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Store().Initialize(ctx); err != nil {
		t.Fatal(err)
	}
	inc, other := nokv.NewIncarnationID(), nokv.NewIncarnationID()
	sn, werr := s.Pin(ctx)
	if werr != nil {
		t.Fatal(werr)
	}
	if _, ok, err := core.CommitHead(ctx, sn, s.Root(), inc); err != nil || ok {
		t.Fatalf("before: ok=%v err=%v", ok, err)
	}
	want := nokv.WorkbenchCommitHead{Commit: nokv.CommitID{1, 2, 3}, HeadGeneration: 4}
	_, err = s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest([]byte("test.commit_head")),
		Apply: func(tx *head.Tx) ([]byte, error) {
			key, err := nokv.WorkbenchCommitHeadKey{Root: s.Root(), Incarnation: inc}.Encode()
			if err != nil {
				return nil, err
			}
			return nil, core.PutRecord(tx, nokv.FamilyWorkbenchCommitHead, key, want.Encode)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if sn, werr = s.Pin(ctx); werr != nil {
		t.Fatal(werr)
	}
	got, ok, err := core.CommitHead(ctx, sn, s.Root(), inc)
	if err != nil || !ok || got != want {
		t.Fatalf("after: %+v ok=%v err=%v", got, ok, err)
	}
	if _, ok, err := core.CommitHead(ctx, sn, s.Root(), other); err != nil || ok {
		t.Fatalf("other incarnation: ok=%v err=%v", ok, err)
	}
}
