package history

import (
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// RestoreKeepCurrent are the families that a restore of a pinned state
// (head.Store.RestoreRoot, `cairn pin restore`) keeps as they are now
// rather than as they were at the pin:
//
//   - the snapshot rows (SnapshotRef, SnapshotAlias, HistoryHold), which
//     describe the engine holds that such a restore keeps current, so
//     every snapshot stays exactly as it was before the restore: held,
//     listed, renewable and retirable, whichever side of the pin it was
//     taken on, its frozen reads reading its own held root;
//   - the lease clock, which must never go back;
//   - the change feed's log (ChangeEvent), which is append-only history:
//     a follower's position stays valid and no event it was served
//     disappears. The restore itself writes no events.
var RestoreKeepCurrent = []shards.Family{
	nokv.FamilySnapshotRef, nokv.FamilySnapshotAlias, nokv.FamilyHistoryHold, nokv.FamilyLeaseClock,
	nokv.FamilyChangeEvent,
}
