package history

import (
	"context"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The commit command's prefetch: what it will read, loaded in a few
// parallel rounds before it runs.

// commitFamilies are the families the commit command reads.
var commitFamilies = []shards.Family{
	nokv.FamilyWorkspaceCurrent, nokv.FamilyPathCurrent, nokv.FamilyPathDirectory, nokv.FamilyArtifactRevision,
	nokv.FamilyRevisionRef, nokv.FamilyCommit, nokv.FamilyCommitMember, nokv.FamilyCommitConsumer,
	nokv.FamilyWorkbenchCommitHead, nokv.FamilyOperation, nokv.FamilySecondaryIndex, nokv.FamilyChangeEvent,
}

// prefetchCommit loads, in a few parallel rounds, what the commit command
// will read of the snapshot it first runs on, instead of a round per
// shard as the command discovers them: the families' tables, then the
// workbench's path shards (one scan) and the shards of the revisions its
// files name, of the old head's commit and of the run manifest's path
// reference. It returns the shards of the revisions, the commit and its
// consumer, which the command declares as its reads (head.Command.Reads):
// an attempt on a newer snapshot, after a lost race, loads them again in
// one round, where the command would read them a round each (a retry of
// a commit of 1,000 files read 32 revision shards in 32 rounds).
func prefetchCommit(ctx context.Context, s *core.Service, sn *head.Snapshot, id string, ws nokv.WorkspaceCurrent, visible bool, observed *nokv.WorkbenchCommitHead) ([]head.ShardRef, *core.Error) {
	if err := sn.Prefetch(ctx, commitFamilies, nil); err != nil {
		return nil, core.FromError(err)
	}
	if !visible {
		return nil, nil
	}
	var parent *nokv.Commit
	if s.UsesMemberTrees(sn) && observed != nil {
		p, ok, err := readCommit(s, core.SnapshotReader(ctx, sn), observed.Commit)
		if err != nil {
			return nil, core.FromError(err)
		}
		if ok {
			parent = &p
		}
	}
	recs, werr := prefetchPaths(ctx, s, sn, id, ws, parent)
	if werr != nil {
		return nil, werr
	}
	var refs []head.ShardRef
	add := func(f shards.Family, key []byte, err error) error {
		if err != nil {
			return err
		}
		ref, err := sn.ShardOf(f, key)
		ref.Prefix = key
		refs = append(refs, ref)
		return err
	}
	seen := map[nokv.RevisionID]bool{}
	// Over a parent with a tree, the commit references only what the
	// parent's members lack, and releases the run manifest the parent
	// wrote: it reads the revisions of the files written since the
	// parent, not all of them.
	var since uint64
	if parent != nil && parent.MemberTree != nil {
		since = parent.CreatedVersion
	}
	for _, r := range recs {
		e, err := nokv.DecodePathEntry(r.Value)
		if err != nil {
			return nil, core.FromError(err)
		}
		if seen[e.Revision] || e.ModifiedVersion < since {
			continue
		}
		seen[e.Revision] = true
		k, err := nokv.ArtifactRevisionKey{Root: s.Root(), Revision: e.Revision}.Encode()
		if err := add(nokv.FamilyArtifactRevision, k, err); err != nil {
			return nil, core.FromError(err)
		}
	}
	if observed != nil {
		k, err := nokv.CommitKey{Root: s.Root(), Commit: observed.Commit}.Encode()
		if err := add(nokv.FamilyCommit, k, err); err != nil {
			return nil, core.FromError(err)
		}
		k, err = nokv.CommitConsumerKey{Root: s.Root(), Commit: observed.Commit, Kind: nokv.CommitConsumerKindWorkbenchHead, Incarnation: ws.Incarnation}.Encode()
		if err := add(nokv.FamilyCommitConsumer, k, err); err != nil {
			return nil, core.FromError(err)
		}
	}
	if err := sn.Prefetch(ctx, nil, refs); err != nil {
		return nil, core.FromError(err)
	}
	return refs, nil
}

// prefetchPaths loads workbench id's path rows the commit command will
// read, and returns them: the rows of the paths the change feed names
// since parent, when the command will read only those (commit_changes.go),
// or else every row.
func prefetchPaths(ctx context.Context, s *core.Service, sn *head.Snapshot, id string, ws nokv.WorkspaceCurrent, parent *nokv.Commit) ([]shards.Record, *core.Error) {
	if fromChanges(s.UsesTreeDigests(sn), parent, ws.Incarnation) {
		since, current := parent.CreatedVersion, sn.Sequence()
		if (current>>8)-(since>>8) < maxChangeGroups {
			if err := (&changeReader{s: s, sn: sn}).prefetch(ctx, since>>8, current>>8); err != nil {
				return nil, core.FromError(err)
			}
		}
		scan := func(prefix, after []byte, limit int) ([]shards.Record, error) {
			return sn.Scan(ctx, nokv.FamilyChangeEvent, prefix, after, limit)
		}
		keys, ok, err := changedPaths(scan, s.Root(), id, ws.Incarnation, since, current)
		if err != nil {
			return nil, core.FromError(err)
		}
		if ok {
			return prefetchKeys(ctx, sn, nokv.FamilyPathCurrent, keys)
		}
	}
	prefix, err := nokv.PathCurrentPrefix(s.Root(), ws.Incarnation, nil)
	if err != nil {
		return nil, core.FromError(err)
	}
	recs, err := sn.Scan(ctx, nokv.FamilyPathCurrent, prefix, nil, 0)
	if err != nil {
		return nil, core.FromError(err)
	}
	if len(recs) > CommitMembersLimit {
		return nil, tooManyMembers(len(recs))
	}
	return recs, nil
}

// prefetchKeys loads the shards of keys of family f in one round and
// returns the records they hold.
func prefetchKeys(ctx context.Context, sn *head.Snapshot, f shards.Family, keys [][]byte) ([]shards.Record, *core.Error) {
	refs := make([]head.ShardRef, 0, len(keys))
	for _, k := range keys {
		ref, err := sn.ShardOf(f, k)
		if err != nil {
			return nil, core.FromError(err)
		}
		ref.Prefix = k
		refs = append(refs, ref)
	}
	if err := sn.Prefetch(ctx, nil, refs); err != nil {
		return nil, core.FromError(err)
	}
	var out []shards.Record
	for _, k := range keys {
		v, ok, err := sn.Get(ctx, f, k)
		if err != nil {
			return nil, core.FromError(err)
		}
		if ok {
			out = append(out, shards.Record{Key: k, Value: v})
		}
	}
	return out, nil
}
