package workbench

import (
	"context"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_create: get-or-create. A workbench that exists and is Visible
// is left as it is and reported exactly as a fresh creation is, so an exact
// retry returns an identical result; when a pinned snapshot already shows
// it, nothing is committed. Otherwise one command writes a Visible
// WorkspaceCurrent with a fresh, never reused incarnation (revision 1,
// created and modified at the commit version), its
// WorkspaceIncarnationClaim and a WorkspaceCreated event. A marker left
// Retired by an abandoned restore is replaced by a new incarnation; a
// Staging marker (a restore in progress) is a retryable Conflict.
func init() { registerTool("workbench_create", (*Service).createTool) }

// createInput is workbench_create's input.
type createInput struct {
	ID string `json:"id"`

	id string // the checked workbench id
}

func (in *createInput) resolve(*Service) *Error {
	var werr *Error
	in.id, werr = ParseWorkbenchID(in.ID)
	return werr
}

// CreateInput is workbench_create's input.
type CreateInput struct {
	ID string `json:"id"`
}

// CreateResult is workbench_create's result.
type CreateResult struct {
	Success
	WorkbenchID string   `json:"workbench_id"`
	Path        string   `json:"path"`     // the workbench's presentation path
	Sections    []string `json:"sections"` // the five standard sections
}

func (s *Service) createTool(ctx context.Context, in *createInput) (*CreateResult, *Error) {
	if werr := s.createWorkbench(ctx, in.id); werr != nil {
		return nil, werr
	}
	return &CreateResult{WorkbenchID: in.id, Path: WorkbenchPath(s.logical, in.id), Sections: Sections()}, nil
}

// createWorkbench makes sure workbench id exists and is Visible.
func (s *Service) createWorkbench(ctx context.Context, id string) *Error {
	// An existing workbench needs no commit at all.
	sn, werr := s.pinForWrite(ctx)
	if werr != nil {
		return werr
	}
	ws, ok, werr := s.workspace(ctx, snapshotReader(ctx, sn), id)
	if werr != nil {
		return werr
	}
	if ok && ws.State == nokv.WorkspaceStateVisible {
		return nil
	}
	inc := nokv.NewIncarnationID()
	reqID, digest := s.commandIdentity(ctx, head.Digest([]byte("cairn.workbench.create.v1"), []byte(id), inc[:]))
	_, err := s.store.Do(ctx, head.Command{
		Namespace: s.root,
		RequestID: reqID,
		Digest:    digest,
		Apply: func(tx *head.Tx) ([]byte, error) {
			ws, ok, werr := s.workspace(tx.Context(), txReader(tx), id)
			if werr != nil {
				return nil, werr
			}
			switch {
			case ok && ws.State == nokv.WorkspaceStateVisible:
				return wire.NewWriter(nil).U64(ws.CreatedVersion).Bytes(), nil
			case ok && ws.State == nokv.WorkspaceStateStaging:
				return nil, workspaceBusy(id)
			}
			ws, err := s.createWorkspace(tx, id, inc)
			if err != nil {
				return nil, err
			}
			return wire.NewWriter(nil).U64(ws.CreatedVersion).Bytes(), nil
		},
	})
	// A predicate failure (pubReject) carries its *Error, which FromError
	// returns as it is.
	return FromError(err)
}

// The workbench marker and the change feed, written by creation and by
// the publication command.
