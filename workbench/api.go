package workbench

import "context"

// Catalog runs workbench_catalog: the field ids that search and aggregate
// accept over one workbench or all of them, and their operators.
func (s *Service) Catalog(ctx context.Context, in CatalogInput) (*CatalogResult, error) {
	return invoke[*CatalogResult](ctx, s, "workbench_catalog", in)
}

// SnapshotRenew runs workbench_snapshot_renew: it extends a snapshot's
// lease to in.TTLDays from the lease clock's now; it never shortens it.
func (s *Service) SnapshotRenew(ctx context.Context, in SnapshotRenewInput) (*SnapshotRenewResult, error) {
	return invoke[*SnapshotRenewResult](ctx, s, "workbench_snapshot_renew", in)
}

// Restore runs workbench_restore: it creates workbench in.DestinationID
// from a snapshot or a commit of workbench in.ID.
func (s *Service) Restore(ctx context.Context, in RestoreInput) (*RestoreResult, error) {
	return invoke[*RestoreResult](ctx, s, "workbench_restore", in)
}

// Aggregate runs workbench_aggregate: count, sum, avg, min and max over
// the matching artifacts of one workbench or of all of them, grouped by
// up to eight fields.
func (s *Service) Aggregate(ctx context.Context, in AggregateInput) (*AggregateResult, error) {
	return invoke[*AggregateResult](ctx, s, "workbench_aggregate", in)
}

// Search runs workbench_search: a page of the artifacts of one workbench,
// or of all of them, that match metadata predicates, with projected
// fields and facets.
func (s *Service) Search(ctx context.Context, in SearchInput) (*SearchResult, error) {
	return invoke[*SearchResult](ctx, s, "workbench_search", in)
}

// SnapshotRetire runs workbench_snapshot_retire: it ends a snapshot's
// lease and releases what it held.
func (s *Service) SnapshotRetire(ctx context.Context, in SnapshotRetireInput) (*SnapshotRetireResult, error) {
	return invoke[*SnapshotRetireResult](ctx, s, "workbench_snapshot_retire", in)
}

// Append runs workbench_append: it appends bytes to the artifact at a
// path, creating it when it is missing.
func (s *Service) Append(ctx context.Context, in AppendInput) (*AppendResult, error) {
	return invoke[*AppendResult](ctx, s, "workbench_append", in)
}

// Read runs workbench_read: one page of a file's body, as records or as a
// byte range, or only NotModified when the file's generation is
// IfNoneMatch.
func (s *Service) Read(ctx context.Context, in ReadInput) (*ReadResult, error) {
	return invoke[*ReadResult](ctx, s, "workbench_read", in)
}

// List runs workbench_list: one page of the direct children of the
// workbench, a section or a directory, live or at a snapshot.
func (s *Service) List(ctx context.Context, in ListInput) (*ListResult, error) {
	return invoke[*ListResult](ctx, s, "workbench_list", in)
}

// Stat runs workbench_stat: it describes the workbench, a section, a
// directory or a file, without reading any body.
func (s *Service) Stat(ctx context.Context, in StatInput) (*StatResult, error) {
	return invoke[*StatResult](ctx, s, "workbench_stat", in)
}

// SnapshotList runs workbench_snapshot_list: every snapshot of workbench
// in.ID, whatever its state, in mint order.
func (s *Service) SnapshotList(ctx context.Context, in SnapshotListInput) (*SnapshotListResult, error) {
	return invoke[*SnapshotListResult](ctx, s, "workbench_snapshot_list", in)
}

// Snapshot runs workbench_snapshot: it mints a new snapshot of workbench
// in.ID's committed state, held under a lease.
func (s *Service) Snapshot(ctx context.Context, in SnapshotInput) (*SnapshotResult, error) {
	return invoke[*SnapshotResult](ctx, s, "workbench_snapshot", in)
}

// PutFile runs workbench_put_file: it publishes a whole body at a path,
// creating it (the default) or replacing the artifact there (Replace).
func (s *Service) PutFile(ctx context.Context, in PutFileInput) (*PutFileResult, error) {
	return invoke[*PutFileResult](ctx, s, "workbench_put_file", in)
}

// Grep runs workbench_grep: case-insensitive literal line matching over
// the bodies of a workbench's files, one page at a time.
func (s *Service) Grep(ctx context.Context, in GrepInput) (*GrepResult, error) {
	return invoke[*GrepResult](ctx, s, "workbench_grep", in)
}

// Commit runs workbench_commit: it seals workbench in.ID's tree as a
// commit, publishes its run manifest and makes it the workbench's commit
// head.
func (s *Service) Commit(ctx context.Context, in CommitInput) (*CommitResult, error) {
	return invoke[*CommitResult](ctx, s, "workbench_commit", in)
}

// Edit runs workbench_edit: it replaces an exact string in the body of
// the artifact at a path, once or (ReplaceAll) everywhere.
func (s *Service) Edit(ctx context.Context, in EditInput) (*EditResult, error) {
	return invoke[*EditResult](ctx, s, "workbench_edit", in)
}

// Find runs workbench_find: a page of the root's workbenches in id order,
// filtered by commit state and by a literal in their run manifests.
func (s *Service) Find(ctx context.Context, in FindInput) (*FindResult, error) {
	return invoke[*FindResult](ctx, s, "workbench_find", in)
}

// Create runs workbench_create: it makes sure workbench in.ID exists.
func (s *Service) Create(ctx context.Context, in CreateInput) (*CreateResult, error) {
	return invoke[*CreateResult](ctx, s, "workbench_create", in)
}
