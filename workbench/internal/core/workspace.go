package core

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TxReader reads through a command's transaction.
func TxReader(tx *head.Tx) func(shards.Family, []byte) ([]byte, bool, error) {
	return tx.Get
}

// CreateWorkspace writes a new Visible workspace marker of incarnation inc
// for workbench id, its incarnation claim and its WorkspaceCreated event.
func (s *Service) CreateWorkspace(tx *head.Tx, id string, inc nokv.IncarnationID) (nokv.WorkspaceCurrent, error) {
	claimKey, err := nokv.WorkspaceIncarnationClaimKey{Root: s.root, Incarnation: inc}.Encode()
	if err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	if err := TxAbsent(tx, nokv.FamilyWorkspaceIncarnationClaim, claimKey, "workspace incarnation "+inc.String()+" is already claimed"); err != nil {
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
	if err := s.PutWorkspace(tx, id, ws); err != nil {
		return nokv.WorkspaceCurrent{}, err
	}
	return ws, WriteChangeEvent(tx, s.root, nokv.ChangeEvent{WorkbenchID: id, Incarnation: inc, Kind: nokv.ChangeEventKindWorkspaceCreated})
}

func (s *Service) PutWorkspace(tx *head.Tx, id string, ws nokv.WorkspaceCurrent) error {
	key, err := nokv.WorkspaceCurrentKey{Root: s.root, WorkbenchID: id}.Encode()
	if err != nil {
		return err
	}
	return PutRecord(tx, nokv.FamilyWorkspaceCurrent, key, ws.Encode)
}

// WorkspaceBusy reports a workbench whose marker is Staging: a restore is
// building it.
func WorkspaceBusy(id string) *Error {
	return Conflict(fmt.Sprintf("workbench %s is being restored and cannot be written yet", id), "Workspace", nil)
}

// WriteChangeEvent appends ev to the change feed at the command's commit
// version, after the events earlier commands of the same commit wrote.
func WriteChangeEvent(tx *head.Tx, root nokv.RootID, ev nokv.ChangeEvent) error {
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
	return PutRecord(tx, nokv.FamilyChangeEvent, key, ev.Encode)
}

// SortRevisions sorts revision ids ascending and drops duplicates.
func SortRevisions(ids []nokv.RevisionID) []nokv.RevisionID {
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

// TxAbsent checks that key holds no record of family f; a fresh id that is
// taken is Internal with message msg, and nothing is applied.
func TxAbsent(tx *head.Tx, f shards.Family, key []byte, msg string) error {
	if _, taken, err := tx.Get(f, key); err != nil {
		return err
	} else if taken {
		return Reject(Internal(msg))
	}
	return nil
}

// PubReject is a predicate failure of a publication command: nothing was
// applied.
type PubReject struct {
	E     *Error
	Stale bool // the blocks were older than the attempt's floor
}

func (r *PubReject) Error() string { return r.E.Error() }

func (r *PubReject) Unwrap() error { return r.E }

func Reject(e *Error) error { return &PubReject{E: e} }
