package history

import (
	"bytes"
	"slices"
	"sync/atomic"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// A commit of tree digests (Commit value 4) over a parent of tree
// digests of the same incarnation reads only what changed since that
// parent: the change feed names every path a publication wrote, so the
// events from the parent's commit version on name every path whose
// member may differ from the parent's. The commit reads those paths'
// entries and edits the parent's tree with them. Paths named that did
// not change cost a read and nothing else: the edit takes each path's
// current entry, so naming too many is harmless and naming too few
// would not be.
//
// The events do not say everything in two cases, and the commit then
// reads the whole workbench as before: an event of the workbench that is
// not a path's or a commit's (it was created or restored again under
// another incarnation; a restore writes its paths without an event
// each), and a gap too long to
// be worth reading (more than maxChangeEvents events, or
// maxChangeGroups groups of 256 commit versions, of the whole root). The
// restore event of the incarnation itself is no such case: the restore
// sealed the incarnation's first commit, the parent, in the same command,
// with every path it wrote.

const (
	maxChangeEvents = 20_000
	maxChangeGroups = 64
)

// CommitsFromChanges counts the commits this process built from the
// change feed rather than the whole workbench, for tests.
var CommitsFromChanges atomic.Int64

// scanFunc is Snapshot.Scan or Tx.Scan of the change-event family.
type scanFunc func(prefix, after []byte, limit int) ([]shards.Record, error)

// changedPaths returns the PathCurrent keys of the paths of workbench
// id, incarnation inc, that the change events at commit versions from
// since to current name, ascending and each once; ok is false when the
// events do not say what changed (above).
func changedPaths(scan scanFunc, root nokv.RootID, id string, inc nokv.IncarnationID, since, current uint64) (keys [][]byte, ok bool, err error) {
	if since == 0 || since > current || (current>>8)-(since>>8) >= maxChangeGroups {
		return nil, false, nil
	}
	// Every event at since or later: a publication that joined the
	// parent's group commit after the commit command shares its version.
	first, err := nokv.ChangeEventKey{Root: root, CommitVersion: since - 1, Sequence: ^uint32(0)}.Encode()
	if err != nil {
		return nil, false, err
	}
	events := 0
	for g := since >> 8; g <= current>>8; g++ {
		prefix := changeGroupPrefix(root, g)
		var after []byte
		if g == since>>8 && (since-1)>>8 == g {
			after = first
		}
		for {
			recs, err := scan(prefix, after, ChangesScanBatch)
			if err != nil {
				return nil, false, err
			}
			for _, r := range recs {
				if events++; events > maxChangeEvents {
					return nil, false, nil
				}
				ev, err := nokv.DecodeChangeEvent(r.Value)
				if err != nil {
					return nil, false, err
				}
				if ev.WorkbenchID != id {
					continue
				}
				if ev.Kind == nokv.ChangeEventKindWorkspaceRestored && ev.Incarnation == inc {
					// The restore that made the incarnation visible sealed
					// its first commit in the same command: at since, it
					// is the parent's own.
					k, err := nokv.ParseChangeEventKey(r.Key)
					if err != nil {
						return nil, false, err
					}
					if k.CommitVersion == since {
						continue
					}
				}
				switch {
				case ev.Kind.IsPath() && ev.Incarnation == inc:
					k, err := nokv.PathCurrentKey{Root: root, Incarnation: inc, Path: ev.Path}.Encode()
					if err != nil {
						return nil, false, err
					}
					keys = append(keys, k)
				case ev.Kind == nokv.ChangeEventKindWorkbenchCommitted && ev.Incarnation == inc,
					ev.Kind == nokv.ChangeEventKindSnapshotMinted, ev.Kind == nokv.ChangeEventKindSnapshotRenewed,
					ev.Kind == nokv.ChangeEventKindSnapshotRetired, ev.Kind == nokv.ChangeEventKindSnapshotReaped:
				default:
					return nil, false, nil
				}
			}
			if len(recs) < ChangesScanBatch {
				break
			}
			after = recs[len(recs)-1].Key
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	return slices.CompactFunc(keys, bytes.Equal), true, nil
}

// fromChanges reports whether a commit over parent, the commit its
// workbench's head names, may build its tree from the change feed: both
// keep tree digests, in the same incarnation.
func fromChanges(treeDigests bool, parent *nokv.Commit, inc nokv.IncarnationID) bool {
	return treeDigests && parent != nil && parent.TreeDigests && parent.SourceIncarnation == inc
}
