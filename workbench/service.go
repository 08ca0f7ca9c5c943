package workbench

import (
	"context"
	"encoding/json"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/history"
	"github.com/cairnstore/cairn/workbench/internal/maintenance"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/reads"
	"github.com/cairnstore/cairn/workbench/internal/snapshots"

	// The tools' packages register their tools and commands from init.
	_ "github.com/cairnstore/cairn/workbench/internal/files"
	_ "github.com/cairnstore/cairn/workbench/internal/publish"
	_ "github.com/cairnstore/cairn/workbench/internal/query"
)

// Service serves the Workbench tools of one agent's deployment root over
// one bucket. Any number of Services, in one process or many, may serve
// the same root from the same bucket. Its methods are the typed tools
// (api.go), Call for JSON, and the operations beyond the contract below;
// the embedded core Service holds its state.
type Service struct {
	*core.Service
}

// Open opens the Workbench deployment root of opts.AgentID in b.
func Open(ctx context.Context, b bucket.Bucket, opts Options) (*Service, error) {
	c, err := core.Open(ctx, b, opts)
	if err != nil {
		return nil, err
	}
	return &Service{c}, nil
}

// Fsck checks the Service's deployment root (see the package function
// Fsck, which opens the Service itself).
func (s *Service) Fsck(ctx context.Context, opts FsckOptions) (*FsckReport, error) {
	return maintenance.FsckService(ctx, s.Service, opts)
}

// CollectRevisions collects the unreferenced revisions of the Service's
// deployment root (see the package function CollectRevisions).
func (s *Service) CollectRevisions(ctx context.Context, opts CollectOptions) (CollectReport, error) {
	return maintenance.CollectServiceRevisions(ctx, s.Service, opts)
}

// ReadChanges reads one page of the deployment root's change feed.
func (s *Service) ReadChanges(ctx context.Context, req ChangesRequest) (ChangesPage, error) {
	return history.ReadChanges(ctx, s.Service, req)
}

// Reap ends the snapshots whose lease has run out, at most
// Options.ReapBatch of them, and reports how many it ended.
func (s *Service) Reap(ctx context.Context) (int, error) {
	return snapshots.Reap(ctx, s.Service)
}

// RetireCommit retires a commit that no workbench, snapshot or restore
// still needs, if its retention epoch is still expectedEpoch.
func (s *Service) RetireCommit(ctx context.Context, commit nokv.CommitID, expectedEpoch uint64) *Error {
	return history.RetireCommit(ctx, s.Service, commit, expectedEpoch)
}

// AbortRestore abandons the restore in progress into workbench dst.
func (s *Service) AbortRestore(ctx context.Context, dst string) error {
	return history.AbortRestore(ctx, s.Service, dst)
}

// Inspect reads workbench id's state beyond what the tools report: its
// lifecycle state, the restore filling it, its last commit.
func (s *Service) Inspect(ctx context.Context, id string) (*WorkbenchView, error) {
	v, werr := history.InspectWorkbench(ctx, s.Service, id)
	if werr != nil {
		return nil, werr
	}
	return v, nil
}

// CommitMembersPage reads one page of the members of one of workbench
// id's commits (commit in hex; empty: its last), in path order, after
// cursor (a page's NextCursor; empty: from the first), at most limit (1
// to MaxMembersLimit).
func (s *Service) CommitMembersPage(ctx context.Context, id, commit, cursor string, limit int) (*MembersPage, error) {
	p, werr := history.CommitMembersPage(ctx, s.Service, id, commit, cursor, limit)
	if werr != nil {
		return nil, werr
	}
	return p, nil
}

// ReadBody reads the leading bytes of one file's body (in.Max of them;
// 0: all), with its stat card, through one validated head.
func (s *Service) ReadBody(ctx context.Context, in BodyInput) (*Body, error) {
	b, werr := reads.ReadBody(ctx, s.Service, in)
	if werr != nil {
		return nil, werr
	}
	return b, nil
}

// BodyInput and Body are ReadBody's input and result.
type (
	BodyInput = reads.BodyInput
	Body      = reads.Body
)

// WorkbenchView, RestoreView, CommitView, MemberView and MembersPage are
// what Inspect and CommitMembersPage return.
type (
	WorkbenchView = history.WorkbenchView
	RestoreView   = history.RestoreView
	CommitView    = history.CommitView
	MemberView    = history.MemberView
	MembersPage   = history.MembersPage
)

// ListEntry, StatCard, SnapshotInfo and FindMatch are parts of the
// tools' results.
type (
	ListEntry    = core.ListEntry
	StatCard     = core.StatCard
	SnapshotInfo = snapshots.SnapshotInfo
	FindMatch    = history.FindMatch
)

// MaxMembersLimit is the largest page CommitMembersPage reads.
const MaxMembersLimit = history.MaxMembersLimit

// ToolSpec is a tool beyond the contract, for Register. Its members are
// core.ToolSpec's, with Run taking this package's Service.
type ToolSpec struct {
	Name        string
	Description string
	InputSchema json.RawMessage
	// ResultSchema describes the success result to clients; empty: an
	// object whose status is "success".
	ResultSchema json.RawMessage
	Annotations  Annotations
	Run          func(ctx context.Context, s *Service, input json.RawMessage) (result any, err error)
}

// Register adds a tool beyond the contract to the registry that every
// surface reads (Call, the command line, HTTP, OpenAPI, MCP). Call it
// from an init function; a name already registered, or a spec the
// registry refuses, panics.
func Register(spec ToolSpec) {
	c := core.ToolSpec{
		Name:         spec.Name,
		Description:  spec.Description,
		InputSchema:  spec.InputSchema,
		ResultSchema: spec.ResultSchema,
		Annotations:  spec.Annotations,
	}
	if run := spec.Run; run != nil { // nil is refused by the registry
		c.Run = func(ctx context.Context, s *core.Service, input json.RawMessage) (any, error) {
			return run(ctx, &Service{s}, input)
		}
	}
	core.Register(c)
}
