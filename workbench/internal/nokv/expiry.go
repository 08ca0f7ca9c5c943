package nokv

import (
	"slices"

	"github.com/cairnstore/cairn/shards"
)

// Expiry of the rows that only serve exact retries. The engine asks a
// family's rule only when a fold rewrites the page holding a row anyway
// (shards.FamilySpec.Expire), so a row outlives its window until then;
// every rule here keeps any row it cannot decode, and reads only the
// fold's sequence, so every attempt of a fold agrees.

// expiryRules are the NoKV families that expire, by tag.
var expiryRules = map[shards.Family]shards.ExpireFunc{
	FamilyOperation:    operationExpired,
	FamilyStagedObject: stagedObjectExpired,
}

// reservedPublications are the paths whose publications belong to a
// BuildCommit or Restore operation (the seed's CommitStaging and
// RestoreStaging): an exact retry of those returns the original terminal
// result from both operation rows, so their Publish rows are kept.
var reservedPublications = [][]string{
	{"metadata", "run_manifest.json"},
	{"metadata", "restore_manifest.json"},
}

// operationExpired: a Publish operation in phase Published, with its
// result, more than at.DedupeWindow commits older (by the result's commit
// version) than the fold, expires, unless it published a reserved path.
// Such a row serves nothing but exact retries, which the engine's
// command_dedupe record answers for the same window. Every other kind and
// phase is kept: a BuildCommit or Restore operation is the replay
// authority of its command, and a Publish operation that is not Published
// (Uploading, Finalizing, Aborting, Cleaning, Quarantined; Cleaned, which
// carries no commit version) still owns or records objects for cleanup.
func operationExpired(key, value []byte, at shards.ExpiryClock) bool {
	k, err := ParseOperationKey(key)
	if err != nil || k.Kind != OperationKindPublish {
		return false
	}
	op, err := DecodePublishOperation(value)
	if err != nil || op.Phase != PublishPhasePublished || op.Result == nil {
		return false
	}
	for _, p := range reservedPublications {
		if slices.Equal(op.Path, p) {
			return false
		}
	}
	v := op.Result.CommitVersion
	return v < at.Sequence && at.Sequence-v > at.DedupeWindow
}

// stagedObjectExpired: a StagedObject row that is Uploaded and Owned
// expires at the first fold that rewrites it, whatever its age. Such a
// row is written only by the publication command that lands, in the same
// commit as the ArtifactManifest rows that name each of its blocks under
// the new revision: from then on the manifest rows own the blocks (and
// revision GC finds them there), an exact retry is answered by
// command_dedupe without reading the ledger, and nothing else reads it.
// The row carries no age to measure a window by. A row in any other
// state (a ledger still in flight, being cleaned or quarantined) is kept.
func stagedObjectExpired(_, value []byte, _ shards.ExpiryClock) bool {
	so, err := DecodeStagedObject(value)
	return err == nil && so.Provider == StagedProviderStateUploaded && so.Cleanup == StagedCleanupStateOwned
}
