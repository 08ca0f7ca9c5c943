package workbench

import (
	"context"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/files"
	"github.com/cairnstore/cairn/workbench/internal/history"
	"github.com/cairnstore/cairn/workbench/internal/query"
	"github.com/cairnstore/cairn/workbench/internal/reads"
	"github.com/cairnstore/cairn/workbench/internal/snapshots"
)

// Catalog runs workbench_catalog: the field ids that search and aggregate
// accept over one workbench or all of them, and their operators.
func (s *Service) Catalog(ctx context.Context, in query.CatalogInput) (*query.CatalogResult, error) {
	return core.Invoke[*query.CatalogResult](ctx, s.Service, "workbench_catalog", in)
}

// SnapshotRenew runs workbench_snapshot_renew: it extends a snapshot's
// lease to in.TTLDays from the lease clock's now; it never shortens it.
func (s *Service) SnapshotRenew(ctx context.Context, in snapshots.SnapshotRenewInput) (*snapshots.SnapshotRenewResult, error) {
	return core.Invoke[*snapshots.SnapshotRenewResult](ctx, s.Service, "workbench_snapshot_renew", in)
}

// Restore runs workbench_restore: it creates workbench in.DestinationID
// from a snapshot or a commit of workbench in.ID.
func (s *Service) Restore(ctx context.Context, in history.RestoreInput) (*history.RestoreResult, error) {
	return core.Invoke[*history.RestoreResult](ctx, s.Service, "workbench_restore", in)
}

// Aggregate runs workbench_aggregate: count, sum, avg, min and max over
// the matching artifacts of one workbench or of all of them, grouped by
// up to eight fields.
func (s *Service) Aggregate(ctx context.Context, in query.AggregateInput) (*query.AggregateResult, error) {
	return core.Invoke[*query.AggregateResult](ctx, s.Service, "workbench_aggregate", in)
}

// Search runs workbench_search: a page of the artifacts of one workbench,
// or of all of them, that match metadata predicates, with projected
// fields and facets.
func (s *Service) Search(ctx context.Context, in query.SearchInput) (*query.SearchResult, error) {
	return core.Invoke[*query.SearchResult](ctx, s.Service, "workbench_search", in)
}

// SnapshotRetire runs workbench_snapshot_retire: it ends a snapshot's
// lease and releases what it held.
func (s *Service) SnapshotRetire(ctx context.Context, in snapshots.SnapshotRetireInput) (*snapshots.SnapshotRetireResult, error) {
	return core.Invoke[*snapshots.SnapshotRetireResult](ctx, s.Service, "workbench_snapshot_retire", in)
}

// Append runs workbench_append: it appends bytes to the artifact at a
// path, creating it when it is missing.
func (s *Service) Append(ctx context.Context, in files.AppendInput) (*files.AppendResult, error) {
	return core.Invoke[*files.AppendResult](ctx, s.Service, "workbench_append", in)
}

// Read runs workbench_read: one page of a file's body, as records or as a
// byte range, or only NotModified when the file's generation is
// IfNoneMatch.
func (s *Service) Read(ctx context.Context, in reads.ReadInput) (*reads.ReadResult, error) {
	return core.Invoke[*reads.ReadResult](ctx, s.Service, "workbench_read", in)
}

// List runs workbench_list: one page of the direct children of the
// workbench, a section or a directory, live or at a snapshot.
func (s *Service) List(ctx context.Context, in reads.ListInput) (*reads.ListResult, error) {
	return core.Invoke[*reads.ListResult](ctx, s.Service, "workbench_list", in)
}

// Stat runs workbench_stat: it describes the workbench, a section, a
// directory or a file, without reading any body.
func (s *Service) Stat(ctx context.Context, in reads.StatInput) (*reads.StatResult, error) {
	return core.Invoke[*reads.StatResult](ctx, s.Service, "workbench_stat", in)
}

// SnapshotList runs workbench_snapshot_list: every snapshot of workbench
// in.ID, whatever its state, in mint order.
func (s *Service) SnapshotList(ctx context.Context, in snapshots.SnapshotListInput) (*snapshots.SnapshotListResult, error) {
	return core.Invoke[*snapshots.SnapshotListResult](ctx, s.Service, "workbench_snapshot_list", in)
}

// Snapshot runs workbench_snapshot: it mints a new snapshot of workbench
// in.ID's committed state, held under a lease.
func (s *Service) Snapshot(ctx context.Context, in snapshots.SnapshotInput) (*snapshots.SnapshotResult, error) {
	return core.Invoke[*snapshots.SnapshotResult](ctx, s.Service, "workbench_snapshot", in)
}

// PutFile runs workbench_put_file: it publishes a whole body at a path,
// creating it (the default) or replacing the artifact there (Replace).
func (s *Service) PutFile(ctx context.Context, in files.PutFileInput) (*files.PutFileResult, error) {
	return core.Invoke[*files.PutFileResult](ctx, s.Service, "workbench_put_file", in)
}

// Grep runs workbench_grep: case-insensitive literal line matching over
// the bodies of a workbench's files, one page at a time.
func (s *Service) Grep(ctx context.Context, in reads.GrepInput) (*reads.GrepResult, error) {
	return core.Invoke[*reads.GrepResult](ctx, s.Service, "workbench_grep", in)
}

// Commit runs workbench_commit: it seals workbench in.ID's tree as a
// commit, publishes its run manifest and makes it the workbench's commit
// head.
func (s *Service) Commit(ctx context.Context, in history.CommitInput) (*history.CommitResult, error) {
	return core.Invoke[*history.CommitResult](ctx, s.Service, "workbench_commit", in)
}

// Edit runs workbench_edit: it replaces an exact string in the body of
// the artifact at a path, once or (ReplaceAll) everywhere.
func (s *Service) Edit(ctx context.Context, in files.EditInput) (*files.EditResult, error) {
	return core.Invoke[*files.EditResult](ctx, s.Service, "workbench_edit", in)
}

// Find runs workbench_find: a page of the root's workbenches in id order,
// filtered by commit state and by a literal in their run manifests.
func (s *Service) Find(ctx context.Context, in history.FindInput) (*history.FindResult, error) {
	return core.Invoke[*history.FindResult](ctx, s.Service, "workbench_find", in)
}

// Create runs workbench_create: it makes sure workbench in.ID exists.
func (s *Service) Create(ctx context.Context, in files.CreateInput) (*files.CreateResult, error) {
	return core.Invoke[*files.CreateResult](ctx, s.Service, "workbench_create", in)
}
