package workbench

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// The records of one root, as Fsck reads them: every record of the
// root's deployment in the families its checks use, decoded once.

// rootCheck holds the records of one root, decoded, and reports findings
// at that root.
type rootCheck struct {
	fk   *fsck
	sn   *head.Snapshot
	root nokv.RootID

	workspaces map[string]wsRow
	claims     map[nokv.IncarnationID]string
	paths      map[string]pathRow // by pathID
	dirs       map[string]dirRow  // by pathID
	revisions  map[nokv.RevisionID]revRow
	manifests  map[nokv.RevisionID][]manifestRow
	refs       []refRow
	candidates []candidateRow
	commits    map[nokv.CommitID]commitRow
	members    map[nokv.CommitID][]memberRow
	consumers  []consumerRow
	heads      []headRow
	snapshots  map[nokv.SnapshotID]snapshotRow
	aliases    []aliasRow
	holds      []historyHoldRow
	index      map[string]indexRow // by the key's bytes
}

type (
	wsRow struct {
		key []byte
		v   nokv.WorkspaceCurrent
	}
	pathRow struct {
		key []byte
		k   nokv.PathCurrentKey
		v   nokv.PathEntry
	}
	dirRow struct {
		key []byte
		k   nokv.PathDirectoryKey
	}
	revRow struct {
		key []byte
		v   nokv.ArtifactRevision
	}
	manifestRow struct {
		key []byte
		k   nokv.ArtifactManifestKey
		v   nokv.ArtifactManifestEntry
	}
	refRow struct {
		key []byte
		k   nokv.RevisionRefKey
		v   nokv.RevisionRef
	}
	candidateRow struct {
		key []byte
		k   nokv.GcCandidateKey
		v   nokv.GcCandidate
	}
	commitRow struct {
		key []byte
		v   nokv.Commit
	}
	memberRow struct {
		key []byte
		k   nokv.CommitMemberKey
		v   nokv.CommitMember
	}
	consumerRow struct {
		key []byte
		k   nokv.CommitConsumerKey
		v   nokv.CommitConsumer
	}
	headRow struct {
		key []byte
		k   nokv.WorkbenchCommitHeadKey
		v   nokv.WorkbenchCommitHead
	}
	snapshotRow struct {
		key []byte
		k   nokv.SnapshotRefKey
		v   nokv.SnapshotRef
	}
	aliasRow struct {
		key []byte
		k   nokv.SnapshotAliasKey
		v   nokv.SnapshotAlias
	}
	historyHoldRow struct {
		key []byte
		k   nokv.HistoryHoldKey
		v   nokv.HistoryHold
	}
	indexRow struct {
		key []byte
		k   nokv.SecondaryIndexKey
		v   nokv.SecondaryIndexEntry
	}
)

// pathID identifies a path of an incarnation within one root.
func pathID(inc nokv.IncarnationID, path []string) string {
	return string(inc[:]) + LogicalPath(path)
}

// finding adds a Workbench finding at this root.
func (c *rootCheck) finding(f shards.Family, key []byte, record, expected, found string) {
	c.fk.add(FsckFinding{
		Layer: "workbench", Root: c.sn.RootHash().String(),
		Family: c.fk.store.Layout().Schema().Name(f), Record: record, Key: hex.EncodeToString(key),
		Expected: expected, Found: found,
	})
}

// checkRoot loads the records of the root sn names and checks them.
func (fk *fsck) checkRoot(ctx context.Context, sn *head.Snapshot) error {
	c := &rootCheck{
		fk: fk, sn: sn, root: fk.s.root,
		workspaces: map[string]wsRow{},
		claims:     map[nokv.IncarnationID]string{},
		paths:      map[string]pathRow{},
		dirs:       map[string]dirRow{},
		revisions:  map[nokv.RevisionID]revRow{},
		manifests:  map[nokv.RevisionID][]manifestRow{},
		commits:    map[nokv.CommitID]commitRow{},
		members:    map[nokv.CommitID][]memberRow{},
		snapshots:  map[nokv.SnapshotID]snapshotRow{},
		index:      map[string]indexRow{},
	}
	complete, err := c.load(ctx)
	if err != nil {
		return err
	}
	if !complete {
		// A family could not be read (the engine layer says why): the
		// cross-checks would report what is missing as inconsistent.
		fk.incomplete = true
		return nil
	}
	c.markLiveBlocks()
	c.checkWorkspaces()
	c.checkPaths()
	c.checkRevisions()
	c.checkManifests()
	c.checkCommits()
	c.checkSnapshots()
	return c.checkBodies(ctx)
}

// scan reads every record of family f in the root and hands each to fn,
// counting them. A record fn cannot decode is a finding. It reports false
// when the family could not be read.
func (c *rootCheck) scan(ctx context.Context, f shards.Family, fn func(key, value []byte) error) (bool, error) {
	recs, err := c.sn.Scan(ctx, f, nokv.RootPrefix(c.root), nil, 0)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		c.finding(f, nil, "every record", "a readable family", err.Error())
		return false, nil
	}
	c.fk.rep.Records[c.fk.store.Layout().Schema().Name(f)] += len(recs)
	for _, r := range recs {
		if err := fn(r.Key, r.Value); err != nil {
			c.finding(f, r.Key, "record", "a record that decodes", err.Error())
		}
	}
	return true, nil
}

// load reads the families the checks use.
func (c *rootCheck) load(ctx context.Context) (bool, error) {
	type family struct {
		f  shards.Family
		fn func(key, value []byte) error
	}
	fams := []family{
		{nokv.FamilyWorkspaceCurrent, func(key, value []byte) error {
			k, err := nokv.ParseWorkspaceCurrentKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeWorkspaceCurrent(value)
			if err != nil {
				return err
			}
			c.workspaces[k.WorkbenchID] = wsRow{key, v}
			return nil
		}},
		{nokv.FamilyWorkspaceIncarnationClaim, func(key, value []byte) error {
			k, err := nokv.ParseWorkspaceIncarnationClaimKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeWorkspaceIncarnationClaim(value)
			if err != nil {
				return err
			}
			c.claims[k.Incarnation] = v.WorkbenchID
			return nil
		}},
		{nokv.FamilyPathCurrent, func(key, value []byte) error {
			k, err := nokv.ParsePathCurrentKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodePathEntry(value)
			if err != nil {
				return err
			}
			c.paths[pathID(k.Incarnation, k.Path)] = pathRow{key, k, v}
			return nil
		}},
		{nokv.FamilyPathDirectory, func(key, value []byte) error {
			k, err := nokv.ParsePathDirectoryKey(key)
			if err != nil {
				return err
			}
			if _, err := nokv.DecodePathDirectory(value); err != nil {
				return err
			}
			c.dirs[pathID(k.Incarnation, k.Path)] = dirRow{key, k}
			return nil
		}},
		{nokv.FamilyArtifactRevision, func(key, value []byte) error {
			k, err := nokv.ParseArtifactRevisionKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeArtifactRevision(value)
			if err != nil {
				return err
			}
			c.revisions[k.Revision] = revRow{key, v}
			return nil
		}},
		{nokv.FamilyArtifactManifest, func(key, value []byte) error {
			k, err := nokv.ParseArtifactManifestKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeArtifactManifestEntry(value)
			if err != nil {
				return err
			}
			c.manifests[k.Revision] = append(c.manifests[k.Revision], manifestRow{key, k, v})
			return nil
		}},
		{nokv.FamilyRevisionRef, func(key, value []byte) error {
			k, err := nokv.ParseRevisionRefKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeRevisionRef(value)
			if err != nil {
				return err
			}
			c.refs = append(c.refs, refRow{key, k, v})
			return nil
		}},
		{nokv.FamilyGcCandidate, func(key, value []byte) error {
			k, err := nokv.ParseGcCandidateKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeGcCandidate(value)
			if err != nil {
				return err
			}
			c.candidates = append(c.candidates, candidateRow{key, k, v})
			return nil
		}},
		{nokv.FamilyCommit, func(key, value []byte) error {
			k, err := nokv.ParseCommitKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeCommit(value)
			if err != nil {
				return err
			}
			c.commits[k.Commit] = commitRow{key, v}
			return nil
		}},
		{nokv.FamilyCommitMember, func(key, value []byte) error {
			k, err := nokv.ParseCommitMemberKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeCommitMember(value)
			if err != nil {
				return err
			}
			c.members[k.Commit] = append(c.members[k.Commit], memberRow{key, k, v})
			return nil
		}},
		{nokv.FamilyCommitConsumer, func(key, value []byte) error {
			k, err := nokv.ParseCommitConsumerKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeCommitConsumer(value)
			if err != nil {
				return err
			}
			c.consumers = append(c.consumers, consumerRow{key, k, v})
			return nil
		}},
		{nokv.FamilyWorkbenchCommitHead, func(key, value []byte) error {
			k, err := nokv.ParseWorkbenchCommitHeadKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeWorkbenchCommitHead(value)
			if err != nil {
				return err
			}
			c.heads = append(c.heads, headRow{key, k, v})
			return nil
		}},
		{nokv.FamilySnapshotRef, func(key, value []byte) error {
			k, err := nokv.ParseSnapshotRefKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeSnapshotRef(value)
			if err != nil {
				return err
			}
			if _, dup := c.snapshots[k.Snapshot]; dup {
				return fmt.Errorf("snapshot id %s is taken twice", k.Snapshot)
			}
			c.snapshots[k.Snapshot] = snapshotRow{key, k, v}
			return nil
		}},
		{nokv.FamilySnapshotAlias, func(key, value []byte) error {
			k, err := nokv.ParseSnapshotAliasKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeSnapshotAlias(value)
			if err != nil {
				return err
			}
			c.aliases = append(c.aliases, aliasRow{key, k, v})
			return nil
		}},
		{nokv.FamilyHistoryHold, func(key, value []byte) error {
			k, err := nokv.ParseHistoryHoldKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeHistoryHold(value)
			if err != nil {
				return err
			}
			c.holds = append(c.holds, historyHoldRow{key, k, v})
			return nil
		}},
		{nokv.FamilySecondaryIndex, func(key, value []byte) error {
			k, err := nokv.ParseSecondaryIndexKey(key)
			if err != nil {
				return err
			}
			v, err := nokv.DecodeSecondaryIndexEntry(value)
			if err != nil {
				return err
			}
			c.index[string(key)] = indexRow{key, k, v}
			return nil
		}},
	}
	// Families no check reads yet still have to decode.
	fams = append(fams,
		family{nokv.FamilyOperation, func(key, value []byte) error {
			k, err := nokv.ParseOperationKey(key)
			if err != nil {
				return err
			}
			switch k.Kind {
			case nokv.OperationKindPublish:
				_, err = nokv.DecodePublishOperation(value)
			case nokv.OperationKindBuildCommit:
				_, err = nokv.DecodeBuildCommitOperation(value)
			case nokv.OperationKindCommitRetire:
				_, err = nokv.DecodeCommitRetireOperation(value)
			}
			// Restore and Gc operations have no codec here yet; their
			// keys parsed.
			return err
		}},
		family{nokv.FamilyStagedObject, func(key, value []byte) error {
			if _, err := nokv.ParseStagedObjectKey(key); err != nil {
				return err
			}
			_, err := nokv.DecodeStagedObject(value)
			return err
		}},
		family{nokv.FamilyChangeEvent, func(key, value []byte) error {
			if _, err := nokv.ParseChangeEventKey(key); err != nil {
				return err
			}
			_, err := nokv.DecodeChangeEvent(value)
			return err
		}},
		family{nokv.FamilyLeaseClock, func(key, value []byte) error {
			if _, err := nokv.ParseLeaseClockKey(key); err != nil {
				return err
			}
			_, err := nokv.DecodeLeaseClock(value)
			return err
		}},
	)
	complete := true
	for _, f := range fams {
		ok, err := c.scan(ctx, f.f, f.fn)
		if err != nil {
			return false, err
		}
		complete = complete && ok
	}
	// Manifest rows in index order (a scan returns them so; sorting makes
	// the check independent of that).
	for _, rows := range c.manifests {
		slices.SortFunc(rows, func(a, b manifestRow) int { return cmpU64(a.k.ObjectIndex, b.k.ObjectIndex) })
	}
	return complete, nil
}

// revisionLive reports whether a root's reads can reach revision v: it is
// Available and referenced. Only a live revision's blocks must exist.
func revisionLive(v nokv.ArtifactRevision) bool {
	return v.State == nokv.RevisionStateAvailable && v.StrongReferenceCount > 0
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// markLiveBlocks notes the blocks the manifest rows of live revisions
// name: those Available with a reference at this root. A revision no
// reference reaches may be collected (its blocks deleted) while this
// root, held or pinned, still holds its rows; no read at this root can
// reach it. One being collected (Deleting, Quarantined) may have lost its
// blocks, and a collected one (Deleted) has no rows left. Rows without a
// revision count as live; checkManifests reports them.
func (c *rootCheck) markLiveBlocks() {
	for rev, rows := range c.manifests {
		if r, ok := c.revisions[rev]; ok && !revisionLive(r.v) {
			continue
		}
		for _, r := range rows {
			if r.v.Inline == nil {
				c.fk.liveBlocks[r.v.ObjectKey] = true
			}
		}
	}
}
