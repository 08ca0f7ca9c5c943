package maintenance

import (
	"context"
	"errors"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Which revisions a kept root still needs. A root holds the
// ArtifactManifest rows of every revision not yet collected when it was
// committed, referenced or not; its reads reach only the revisions that
// are Available and referenced there (a path, a commit, or a child that
// reused their blocks). The rows of any other revision name blocks that
// collecting it may have deleted (docs/operations.md, section 5): they
// are the state's bookkeeping, not its data. The collection keeps a
// revision a pinned or held root references (CollectRevisions), and the
// checks of a kept root (pin verify, pin copy, pin restore, fsck) demand
// only the blocks of revisions a root they check references.

// revisionRef names one revision of one deployment root.
type revisionRef struct {
	root nokv.RootID
	rev  nokv.RevisionID
}

// liveRevisions adds to live every revision that is Available and
// referenced at sn, of any deployment root the shard serves.
func liveRevisions(ctx context.Context, sn *head.Snapshot, live map[revisionRef]bool) error {
	recs, err := sn.Scan(ctx, nokv.FamilyArtifactRevision, nil, nil, 0)
	if err != nil {
		return err
	}
	for _, r := range recs {
		k, err := nokv.ParseArtifactRevisionKey(r.Key)
		if err != nil {
			return err
		}
		v, err := nokv.DecodeArtifactRevision(r.Value)
		if err != nil {
			return err
		}
		if revisionLive(v) {
			live[revisionRef{k.Root, k.Revision}] = true
		}
	}
	return nil
}

// PinBlockRefs returns the walk.Refs to walk a pinned root with, to
// verify it, copy it or check it before a restore (gcsweep.VerifyPin,
// gcsweep.CopyPin): BlockRefs, less the rows of every revision that
// neither the pinned root nor a root its holds name (one level,
// roots.Root.KeptHolds) references, whose blocks may have been collected
// and which no read of the pinned state reaches. A root whose records do
// not read (missing, damaged) makes it return BlockRefs itself: the walk
// then reports what is wrong, and every block a row names is demanded.
// An error means the bucket could not be read.
func PinBlockRefs(ctx context.Context, store *head.Store, root digest.Hash) (walk.Refs, error) {
	live := map[revisionRef]bool{}
	sn, err := store.At(ctx, root)
	if err == nil {
		err = liveRevisions(ctx, sn, live)
	}
	if err == nil {
		for _, hold := range sn.Root().KeptHolds(roots.ReachKept) {
			var at *head.Snapshot
			if at, err = store.At(ctx, hold.Root); err == nil {
				err = liveRevisions(ctx, at, live)
			}
			if err != nil {
				break
			}
		}
	}
	switch {
	case err == nil:
		return liveBlockRefs(live), nil
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, bucket.ErrNotExist) || errors.Is(err, bucket.ErrIntegrity) || !bucket.Transient(err):
		return BlockRefs, nil // the walk says what is wrong
	}
	return nil, err
}

// liveBlockRefs is BlockRefs restricted to the rows of the revisions in
// live.
func liveBlockRefs(live map[revisionRef]bool) walk.Refs {
	return func(f shards.Family, key, value []byte) ([]walk.BlockRef, error) {
		if f != nokv.FamilyArtifactManifest {
			return BlockRefs(f, key, value) // a commit's member tree
		}
		k, err := nokv.ParseArtifactManifestKey(key)
		if err != nil {
			return nil, err
		}
		if !live[revisionRef{k.Root, k.Revision}] {
			return nil, nil
		}
		return BlockRefs(f, key, value)
	}
}
