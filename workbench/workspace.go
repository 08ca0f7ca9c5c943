package workbench

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// txReader reads through a command's transaction.
func txReader(tx *head.Tx) func(shards.Family, []byte) ([]byte, bool, error) {
	return tx.Get
}

// createWorkspace writes a new Visible workspace marker of incarnation inc
// for workbench id, its incarnation claim and its WorkspaceCreated event.
func (s *Service) createWorkspace(tx *head.Tx, id string, inc nokv.IncarnationID) (nokv.WorkspaceCurrent, error) {
	claimKey, err := nokv.WorkspaceIncarnationClaimKey{Root: s.root, Incarnation: inc}.Encode()
	if err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	if err := txAbsent(tx, nokv.FamilyWorkspaceIncarnationClaim, claimKey, "workspace incarnation "+inc.String()+" is already claimed"); err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	claim, err := nokv.WorkspaceIncarnationClaim{WorkbenchID: id}.Encode()
	if err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	if err := tx.Put(nokv.FamilyWorkspaceIncarnationClaim, claimKey, claim); err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	ws := nokv.WorkspaceCurrent{
		Incarnation:       inc,
		WorkspaceRevision: 1,
		State:             nokv.WorkspaceStateVisible,
		CreatedVersion:    tx.Sequence(),
		ModifiedVersion:   tx.Sequence(),
	}
	if err := s.putWorkspace(tx, id, ws); err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	return ws, writeChangeEvent(tx, s.root, nokv.ChangeEvent{WorkbenchID: id, Incarnation: inc, Kind: nokv.ChangeEventKindWorkspaceCreated})
}

func (s *Service) putWorkspace(tx *head.Tx, id string, ws nokv.WorkspaceCurrent) error {
	key, err := nokv.WorkspaceCurrentKey{Root: s.root, WorkbenchID: id}.Encode()
	if err != nil {
		return err
	}
	return putRecord(tx, nokv.FamilyWorkspaceCurrent, key, ws.Encode)
}

// workspaceBusy reports a workbench whose marker is Staging: a restore is
// building it.
func workspaceBusy(id string) *Error {
	return Conflict(fmt.Sprintf("workbench %s is being restored and cannot be written yet", id), "Workspace", nil)
}

// writeChangeEvent appends ev to the change feed at the command's commit
// version, after the events earlier commands of the same commit wrote.
func writeChangeEvent(tx *head.Tx, root nokv.RootID, ev nokv.ChangeEvent) error {
	last, ok, err := tx.Last(nokv.FamilyChangeEvent, nokv.ChangeEventVersionPrefix(root, tx.Sequence()))
	if err != nil {
		return err
	}
	var next uint32
	if ok {
		k, err := nokv.ParseChangeEventKey(last.Key)
		if err != nil {
			return err
		}
		next = k.Sequence + 1
	}
	key, err := nokv.ChangeEventKey{Root: root, CommitVersion: tx.Sequence(), Sequence: next}.Encode()
	if err != nil {
		return err
	}
	return putRecord(tx, nokv.FamilyChangeEvent, key, ev.Encode)
}

// sortRevisions sorts revision ids ascending and drops duplicates.
func sortRevisions(ids []nokv.RevisionID) []nokv.RevisionID {
	slices.SortFunc(ids, func(a, b nokv.RevisionID) int { return bytes.Compare(a[:], b[:]) })
	return slices.Compact(ids)
}

// FileLocation is where a write tool's artifact is: the members every
// write result (put_file, append, edit) starts with.
type FileLocation struct {
	WorkbenchID  string `json:"workbench_id"`
	Path         string `json:"path"`          // the presentation path
	Section      string `json:"section"`       // the path's section
	RelativePath string `json:"relative_path"` // the path within Section
}

// txAbsent checks that key holds no record of family f; a fresh id that is
// taken is Internal with message msg, and nothing is applied.
func txAbsent(tx *head.Tx, f shards.Family, key []byte, msg string) error {
	if _, taken, err := tx.Get(f, key); err != nil {
		return err
	} else if taken {
		return reject(Internal(msg))
	}
	return nil
}

// pubReject is a predicate failure of a publication command: nothing was
// applied.
type pubReject struct {
	e     *Error
	stale bool // the blocks were older than the attempt's floor
}

func (r *pubReject) Error() string { return r.e.Error() }

func (r *pubReject) Unwrap() error { return r.e }

func reject(e *Error) error { return &pubReject{e: e} }
