package core

import (
	"context"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// CommitHead returns the commit head of the workbench incarnation inc as
// the snapshot sn sees it. ok is false when the incarnation has never been
// committed. The head is keyed by incarnation, not by name, so a restored
// or reclaimed name never sees another incarnation's head.
func CommitHead(ctx context.Context, sn *head.Snapshot, root nokv.RootID, inc nokv.IncarnationID) (nokv.WorkbenchCommitHead, bool, error) {
	key, err := nokv.WorkbenchCommitHeadKey{Root: root, Incarnation: inc}.Encode()
	if err != nil {
		return nokv.WorkbenchCommitHead{}, false, err
	}
	b, ok, err := sn.Get(ctx, nokv.FamilyWorkbenchCommitHead, key)
	if err != nil || !ok {
		return nokv.WorkbenchCommitHead{}, false, err
	}
	h, err := nokv.DecodeWorkbenchCommitHead(b)
	if err != nil {
		return nokv.WorkbenchCommitHead{}, false, err
	}
	return h, true, nil
}
