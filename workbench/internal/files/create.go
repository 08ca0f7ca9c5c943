package files

import (
	"context"

	"github.com/cairnstore/cairn/workbench/internal/core"

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
func init() { core.RegisterTool("workbench_create", createTool) }

// createInput is workbench_create's input.
type CreateArgs struct {
	ID string `json:"id"`

	id string // the checked workbench id
}

func (in *CreateArgs) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	in.id, werr = core.ParseWorkbenchID(in.ID)
	return werr
}

// CreateInput is workbench_create's input.
type CreateInput struct {
	ID string `json:"id"`
}

// CreateResult is workbench_create's result.
type CreateResult struct {
	core.Success
	WorkbenchID string   `json:"workbench_id"`
	Path        string   `json:"path"`     // the workbench's presentation path
	Sections    []string `json:"sections"` // the five standard sections
}

func createTool(ctx context.Context, s *core.Service, in *CreateArgs) (*CreateResult, *core.Error) {
	if werr := createWorkbench(ctx, s, in.id); werr != nil {
		return nil, werr
	}
	return &CreateResult{WorkbenchID: in.id, Path: core.WorkbenchPath(s.LogicalRoot(), in.id), Sections: core.Sections()}, nil
}

// createWorkbench makes sure workbench id exists and is Visible.
func createWorkbench(ctx context.Context, s *core.Service, id string) *core.Error {
	// An existing workbench needs no commit at all.
	sn, werr := s.PinForWrite(ctx)
	if werr != nil {
		return werr
	}
	ws, ok, werr := s.Workspace(ctx, core.SnapshotReader(ctx, sn), id)
	if werr != nil {
		return werr
	}
	if ok && ws.State == nokv.WorkspaceStateVisible {
		return nil
	}
	inc := nokv.NewIncarnationID()
	reqID, digest := s.CommandIdentity(ctx, head.Digest([]byte("cairn.workbench.create.v1"), []byte(id), inc[:]))
	_, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: reqID,
		Digest:    digest,
		Apply: func(tx *head.Tx) ([]byte, error) {
			ws, ok, werr := s.Workspace(tx.Context(), core.TxReader(tx), id)
			if werr != nil {
				return nil, werr
			}
			switch {
			case ok && ws.State == nokv.WorkspaceStateVisible:
				return wire.NewWriter(nil).U64(ws.CreatedVersion).Bytes(), nil
			case ok && ws.State == nokv.WorkspaceStateStaging:
				return nil, core.WorkspaceBusy(id)
			}
			ws, err := s.CreateWorkspace(tx, id, inc)
			if err != nil {
				return nil, err
			}
			return wire.NewWriter(nil).U64(ws.CreatedVersion).Bytes(), nil
		},
	})
	// A predicate failure (pubReject) carries its *Error, which FromError
	// returns as it is.
	return core.FromError(err)
}

// The workbench marker and the change feed, written by creation and by
// the publication command.
