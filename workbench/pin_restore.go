package workbench

import (
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// RestoreKeepCurrent are the families that a restore of a pinned state
// (head.Store.RestoreRoot, `cairn pin restore`) keeps as they are now
// rather than as they were at the pin: the snapshot rows (SnapshotRef,
// SnapshotAlias, HistoryHold), which describe the engine holds that such
// a restore keeps current, and the lease clock, which must never go
// back. So every snapshot stays exactly as it was before the restore:
// held, listed, renewable and retirable, whichever side of the pin it
// was taken on; its frozen reads read its own held root.
var RestoreKeepCurrent = []shards.Family{
	nokv.FamilySnapshotRef, nokv.FamilySnapshotAlias, nokv.FamilyHistoryHold, nokv.FamilyLeaseClock,
}
