package maintenance

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
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

	// manifestDigests is the manifest digest each revision's rows hash
	// to (or why they do not encode), taken when they are loaded
	// (sealManifests).
	manifestDigests map[nokv.RevisionID]string

	// Restores in flight (not Complete or Cleaned): the commits they will
	// seal, whose Commit references come first, and, in a shard whose
	// restores copy in key order (nokv.KeyOrderedRestoreFrom), the
	// destination incarnations whose rows are placed family by family.
	restoringCommits map[nokv.CommitID]bool
	restoringIncs    map[nokv.IncarnationID]bool
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
	return string(inc[:]) + core.LogicalPath(path)
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
		fk: fk, sn: sn, root: fk.s.Root(),
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

		manifestDigests:  map[nokv.RevisionID]string{},
		restoringCommits: map[nokv.CommitID]bool{},
		restoringIncs:    map[nokv.IncarnationID]bool{},
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
	if err := c.loadTrees(ctx); err != nil {
		return err
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

// loadTrees reads the members of every commit that keeps them in a
// member tree, as the rows they stand for. A tree that cannot be read is
// a finding (the engine layer's walk names the node).
func (c *rootCheck) loadTrees(ctx context.Context) error {
	for _, id := range sortedCommits(c.commits) {
		cm := c.commits[id]
		if cm.v.MemberTree == nil || cm.v.State == nokv.CommitStateRetired {
			continue
		}
		var rows []memberRow
		err := c.fk.s.CommitMembers(ctx, c.sn, id, cm.v, func(path []string, m nokv.CommitMember) error {
			k := nokv.CommitMemberKey{Root: c.root, Commit: id, Path: path}
			key, err := k.Encode()
			rows = append(rows, memberRow{key, k, m})
			return err
		})
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case err != nil:
			c.finding(nokv.FamilyCommit, cm.key, "commit "+id.String(), "a member tree that reads", err.Error())
			continue
		}
		c.members[id] = append(c.members[id], rows...)
		// They are CommitMember records, stored in a tree.
		c.fk.rep.Records[c.fk.store.Layout().Schema().Name(nokv.FamilyCommitMember)] += len(rows)
	}
	return nil
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
	complete := true
	for _, f := range c.families() {
		ok, err := c.scan(ctx, f.f, f.fn)
		if err != nil {
			return false, err
		}
		complete = complete && ok
		if f.f == nokv.FamilyArtifactManifest {
			c.sealManifests()
		}
	}
	return complete, nil
}

// sealManifests puts each revision's manifest rows in index order (a
// scan returns them so; sorting makes the checks independent of that)
// and takes their digest. Unless FsckOptions.Bodies reads the bodies, the
// rows then drop their inline bytes, before the next family is read:
// they are most of a workbench of small files.
func (c *rootCheck) sealManifests() {
	for rev, rows := range c.manifests {
		slices.SortFunc(rows, func(a, b manifestRow) int { return cmpU64(a.k.ObjectIndex, b.k.ObjectIndex) })
		c.manifestDigests[rev] = manifestDigest(rows)
		if c.fk.opts.Bodies {
			continue
		}
		for i := range rows {
			if rows[i].v.Inline != nil {
				rows[i].v.Inline = []byte{} // still inline, for the checks that ask
			}
		}
	}
}

// checkedFamily is a family load reads, with what it does with each
// record.
type checkedFamily struct {
	f  shards.Family
	fn func(key, value []byte) error
}

// rows returns the record reader of a family whose key parse decodes and
// whose value decode decodes: keep receives both with the key's bytes.
func rows[K, V any](parse func([]byte) (K, error), decode func([]byte) (V, error), keep func(key []byte, k K, v V) error) func(key, value []byte) error {
	return func(key, value []byte) error {
		k, err := parse(key)
		if err != nil {
			return err
		}
		v, err := decode(value)
		if err != nil {
			return err
		}
		// The key's own bytes: a record's key shares its shard object's
		// memory, which a kept row would otherwise keep whole.
		return keep(bytes.Clone(key), k, v)
	}
}

// decodeOnly is the record reader of a family no check reads yet, whose
// records must still decode.
func decodeOnly[K, V any](parse func([]byte) (K, error), decode func([]byte) (V, error)) func(key, value []byte) error {
	return rows(parse, decode, func([]byte, K, V) error { return nil })
}

// families lists what load reads: each family a check reads, into the
// maps and lists of c, then the families whose records only have to
// decode.
func (c *rootCheck) families() []checkedFamily {
	return []checkedFamily{
		{nokv.FamilyWorkspaceCurrent, rows(nokv.ParseWorkspaceCurrentKey, nokv.DecodeWorkspaceCurrent,
			func(key []byte, k nokv.WorkspaceCurrentKey, v nokv.WorkspaceCurrent) error {
				c.workspaces[k.WorkbenchID] = wsRow{key, v}
				return nil
			})},
		{nokv.FamilyWorkspaceIncarnationClaim, rows(nokv.ParseWorkspaceIncarnationClaimKey, nokv.DecodeWorkspaceIncarnationClaim,
			func(_ []byte, k nokv.WorkspaceIncarnationClaimKey, v nokv.WorkspaceIncarnationClaim) error {
				c.claims[k.Incarnation] = v.WorkbenchID
				return nil
			})},
		{nokv.FamilyPathCurrent, rows(nokv.ParsePathCurrentKey, nokv.DecodePathEntry,
			func(key []byte, k nokv.PathCurrentKey, v nokv.PathEntry) error {
				c.paths[pathID(k.Incarnation, k.Path)] = pathRow{key, k, v}
				return nil
			})},
		{nokv.FamilyPathDirectory, rows(nokv.ParsePathDirectoryKey, nokv.DecodePathDirectory,
			func(key []byte, k nokv.PathDirectoryKey, _ nokv.PathDirectory) error {
				c.dirs[pathID(k.Incarnation, k.Path)] = dirRow{key, k}
				return nil
			})},
		{nokv.FamilyArtifactRevision, rows(nokv.ParseArtifactRevisionKey, nokv.DecodeArtifactRevision,
			func(key []byte, k nokv.ArtifactRevisionKey, v nokv.ArtifactRevision) error {
				c.revisions[k.Revision] = revRow{key, v}
				return nil
			})},
		{nokv.FamilyArtifactManifest, rows(nokv.ParseArtifactManifestKey, nokv.DecodeArtifactManifestEntry,
			func(key []byte, k nokv.ArtifactManifestKey, v nokv.ArtifactManifestEntry) error {
				c.manifests[k.Revision] = append(c.manifests[k.Revision], manifestRow{key, k, v})
				return nil
			})},
		{nokv.FamilyRevisionRef, rows(nokv.ParseRevisionRefKey, nokv.DecodeRevisionRef,
			func(key []byte, k nokv.RevisionRefKey, v nokv.RevisionRef) error {
				c.refs = append(c.refs, refRow{key, k, v})
				return nil
			})},
		{nokv.FamilyGcCandidate, rows(nokv.ParseGcCandidateKey, nokv.DecodeGcCandidate,
			func(key []byte, k nokv.GcCandidateKey, v nokv.GcCandidate) error {
				c.candidates = append(c.candidates, candidateRow{key, k, v})
				return nil
			})},
		{nokv.FamilyCommit, rows(nokv.ParseCommitKey, nokv.DecodeCommit,
			func(key []byte, k nokv.CommitKey, v nokv.Commit) error {
				c.commits[k.Commit] = commitRow{key, v}
				return nil
			})},
		{nokv.FamilyCommitMember, rows(nokv.ParseCommitMemberKey, nokv.DecodeCommitMember,
			func(key []byte, k nokv.CommitMemberKey, v nokv.CommitMember) error {
				c.members[k.Commit] = append(c.members[k.Commit], memberRow{key, k, v})
				return nil
			})},
		{nokv.FamilyCommitConsumer, rows(nokv.ParseCommitConsumerKey, nokv.DecodeCommitConsumer,
			func(key []byte, k nokv.CommitConsumerKey, v nokv.CommitConsumer) error {
				c.consumers = append(c.consumers, consumerRow{key, k, v})
				return nil
			})},
		{nokv.FamilyWorkbenchCommitHead, rows(nokv.ParseWorkbenchCommitHeadKey, nokv.DecodeWorkbenchCommitHead,
			func(key []byte, k nokv.WorkbenchCommitHeadKey, v nokv.WorkbenchCommitHead) error {
				c.heads = append(c.heads, headRow{key, k, v})
				return nil
			})},
		{nokv.FamilySnapshotRef, rows(nokv.ParseSnapshotRefKey, nokv.DecodeSnapshotRef,
			func(key []byte, k nokv.SnapshotRefKey, v nokv.SnapshotRef) error {
				if _, dup := c.snapshots[k.Snapshot]; dup {
					return fmt.Errorf("snapshot id %s is taken twice", k.Snapshot)
				}
				c.snapshots[k.Snapshot] = snapshotRow{key, k, v}
				return nil
			})},
		{nokv.FamilySnapshotAlias, rows(nokv.ParseSnapshotAliasKey, nokv.DecodeSnapshotAlias,
			func(key []byte, k nokv.SnapshotAliasKey, v nokv.SnapshotAlias) error {
				c.aliases = append(c.aliases, aliasRow{key, k, v})
				return nil
			})},
		{nokv.FamilyHistoryHold, rows(nokv.ParseHistoryHoldKey, nokv.DecodeHistoryHold,
			func(key []byte, k nokv.HistoryHoldKey, v nokv.HistoryHold) error {
				c.holds = append(c.holds, historyHoldRow{key, k, v})
				return nil
			})},
		{nokv.FamilySecondaryIndex, rows(nokv.ParseSecondaryIndexKey, nokv.DecodeSecondaryIndexEntry,
			func(key []byte, k nokv.SecondaryIndexKey, v nokv.SecondaryIndexEntry) error {
				c.index[string(key)] = indexRow{key, k, v}
				return nil
			})},
		{nokv.FamilyOperation, c.operation},
		// Families no check reads yet still have to decode.
		{nokv.FamilyStagedObject, decodeOnly(nokv.ParseStagedObjectKey, nokv.DecodeStagedObject)},
		{nokv.FamilyChangeEvent, decodeOnly(nokv.ParseChangeEventKey, nokv.DecodeChangeEvent)},
		{nokv.FamilyLeaseClock, decodeOnly(nokv.ParseLeaseClockKey, nokv.DecodeLeaseClock)},
	}
}

// operation decodes an Operation record by its kind and notes the
// restores in flight. Gc operations have no codec here yet: their keys
// parse.
func (c *rootCheck) operation(key, value []byte) error {
	k, err := nokv.ParseOperationKey(key)
	if err != nil {
		return err
	}
	switch k.Kind {
	case nokv.OperationKindRestore:
		op, err := nokv.DecodeRestoreOperation(value)
		if err != nil || op.Phase == nokv.RestorePhaseComplete || op.Phase == nokv.RestorePhaseCleaned {
			return err
		}
		c.restoringCommits[op.DestinationCommit] = true
		if c.sn.Marker().ValueFormatVersion >= nokv.KeyOrderedRestoreFrom {
			c.restoringIncs[op.DestinationIncarnation] = true
		}
	case nokv.OperationKindPublish:
		_, err = nokv.DecodePublishOperation(value)
	case nokv.OperationKindBuildCommit:
		_, err = nokv.DecodeBuildCommitOperation(value)
	case nokv.OperationKindCommitRetire:
		_, err = nokv.DecodeCommitRetireOperation(value)
	}
	return err
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
