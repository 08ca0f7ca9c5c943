package core

import (
	"context"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Directory rows (nokv.FamilyPathDirectory, format 10).
//
// A directory is a path with at least one artifact below it. Its
// path_directory row is written by the command that places the first
// artifact below it (placeDirectories, a step of every publication that
// creates a path), together with the rows of every ancestor that lacks
// one, so the rows are complete: every directory of the workbench has
// one. A row sits in the shard of its parent directory, the shard that
// holds the parent's files in path_current, so a direct-child listing
// reads one shard of each family, and "is this a directory" is a point
// read instead of a scan of every shard.
//
// Rows are never removed: no Workbench tool removes an artifact. A tool
// that will (a delete, or a restore that drops paths) must delete the row
// of each directory it leaves empty in the same command; until then a
// directory whose last artifact went would still be listed and stat'ed
// as an empty directory.

// DirKey is the path_directory key of dir in incarnation inc.
func DirKey(root nokv.RootID, inc nokv.IncarnationID, dir []string) ([]byte, error) {
	return nokv.PathDirectoryKey{Root: root, Incarnation: inc, Path: dir}.Encode()
}

// DirShards returns the path_current and path_directory shards of the
// entries directly in dir: its files and its subdirectories' rows.
func DirShards(root nokv.RootID, dir []string) ([2]head.ShardRef, error) {
	sk, err := nokv.PathCurrentShardKey(root, dir)
	if err != nil {
		return [2]head.ShardRef{}, err
	}
	return [2]head.ShardRef{
		{Family: nokv.FamilyPathCurrent, Index: shards.HashShardKey(nokv.FamilyPathCurrent, sk)},
		{Family: nokv.FamilyPathDirectory, Index: shards.HashShardKey(nokv.FamilyPathDirectory, sk)},
	}, nil
}

// IsDirectory reports whether dir (at least one component) is a
// directory of the view's workbench: whether it has a path_directory row.
func (v *View) IsDirectory(ctx context.Context, dir []string) (bool, *Error) {
	k, err := DirKey(v.S.root, v.Ws.Incarnation, dir)
	if err != nil {
		return false, FromError(err)
	}
	_, ok, err := v.Sn.Get(ctx, nokv.FamilyPathDirectory, k)
	if err != nil {
		return false, FromError(err)
	}
	return ok, nil
}

// TxIsDirectory is isDirectory inside an engine command.
func TxIsDirectory(tx *head.Tx, root nokv.RootID, inc nokv.IncarnationID, dir []string) (bool, error) {
	k, err := DirKey(root, inc, dir)
	if err != nil {
		return false, err
	}
	_, ok, err := tx.Get(nokv.FamilyPathDirectory, k)
	return ok, err
}

// PlaceDirectories writes the path_directory rows of the ancestors of
// path that lack one, at commit version seq. Rows are complete, so the
// deepest ancestor that has a row has all of its own: the walk goes up
// from the parent and stops there.
func PlaceDirectories(tx *head.Tx, root nokv.RootID, inc nokv.IncarnationID, path []string, seq uint64) error {
	for n := len(path) - 1; n > 0; n-- {
		k, err := DirKey(root, inc, path[:n])
		if err != nil {
			return err
		}
		_, ok, err := tx.Get(nokv.FamilyPathDirectory, k)
		if err != nil || ok {
			return err
		}
		if err := PutRecord(tx, nokv.FamilyPathDirectory, k, nokv.PathDirectory{CreatedVersion: seq}.Encode); err != nil {
			return err
		}
	}
	return nil
}
