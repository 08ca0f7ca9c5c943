package workbench

import (
	"context"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/history"
	"github.com/cairnstore/cairn/workbench/internal/publish"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// SetRestoreHookForTest installs fn to run after each command of a
// restore of s lands ("prepare", "copy", "final"); an error stops the
// restore there, as a crash between its commands would. nil removes it.
func SetRestoreHookForTest(s *Service, fn func(step string) error) { s.RestoreHook = fn }

// SetRestoreBatchForTest sets how many members one copy command places,
// and one cleaning command of an abort removes, and returns a function
// that restores the defaults.
func SetRestoreBatchForTest(n int) func() {
	old, oldAbort := history.RestoreBatch, history.AbortBatch
	history.RestoreBatch, history.AbortBatch = n, n
	return func() { history.RestoreBatch, history.AbortBatch = old, oldAbort }
}

// SetParallelRangesForTest sets the fewest items a restore's work on
// every core gives one range (its plan, its rows encoded ahead, its
// revisions read ahead), so that a small restore runs those paths side
// by side, and returns a function that restores the defaults.
func SetParallelRangesForTest(n int) func() {
	old, oldPreload := history.ParallelRange, publish.PreloadRange
	history.ParallelRange, publish.PreloadRange = n, n
	return func() { history.ParallelRange, publish.PreloadRange = old, oldPreload }
}

// RestoreOperationForTest returns the Restore operation whose destination
// is dst, and its id.
func RestoreOperationForTest(tb testing.TB, s *Service, dst string) (nokv.OperationID, nokv.RestoreOperation) {
	tb.Helper()
	sn, err := s.Store().Pin(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	root := s.Root()
	prefix := append(append([]byte(nil), root[:]...), uint8(nokv.OperationKindRestore))
	recs, err := sn.Scan(context.Background(), nokv.FamilyOperation, prefix, nil, 0)
	if err != nil {
		tb.Fatal(err)
	}
	for _, r := range recs {
		k, err := nokv.ParseOperationKey(r.Key)
		if err != nil {
			tb.Fatal(err)
		}
		op, err := nokv.DecodeRestoreOperation(r.Value)
		if err != nil {
			tb.Fatal(err)
		}
		if op.DestinationWorkbenchID == dst {
			return k.ID, op
		}
	}
	tb.Fatalf("no restore operation into %s", dst)
	return nokv.OperationID{}, nokv.RestoreOperation{}
}

// PutRestoreOperationForTest overwrites the Restore operation id.
func PutRestoreOperationForTest(tb testing.TB, s *Service, id nokv.OperationID, op nokv.RestoreOperation) {
	tb.Helper()
	_, err := s.Store().Do(context.Background(), head.Command{
		Namespace: s.Root(),
		Apply: func(tx *head.Tx) ([]byte, error) {
			key, err := nokv.OperationKey{Root: s.Root(), Kind: nokv.OperationKindRestore, ID: id}.Encode()
			if err != nil {
				return nil, err
			}
			return nil, core.PutRecord(tx, nokv.FamilyOperation, key, op.Encode)
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
}
