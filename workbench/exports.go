package workbench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/files"
	"github.com/cairnstore/cairn/workbench/internal/history"
	"github.com/cairnstore/cairn/workbench/internal/maintenance"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
	"github.com/cairnstore/cairn/workbench/internal/payload"
	"github.com/cairnstore/cairn/workbench/internal/publish"
	"github.com/cairnstore/cairn/workbench/internal/query"
	"github.com/cairnstore/cairn/workbench/internal/reads"
	"github.com/cairnstore/cairn/workbench/internal/snapshots"
)

// The facade: what the workbench's packages (under internal/) offer a
// caller, under this package's name. Types are aliases, so a value of
// workbench.PutFileResult is a files.PutFileResult; functions call
// through. Each name's full documentation is at its definition.

// The error codes of the envelope, as the contract spells them.
const (
	CodeAlreadyExists                   = core.CodeAlreadyExists
	CodeAmbiguousEdit                   = core.CodeAmbiguousEdit
	CodeBackendProtocolMismatch         = core.CodeBackendProtocolMismatch
	CodeCancelled                       = core.CodeCancelled
	CodeCanonicalEncodingFailed         = core.CodeCanonicalEncodingFailed
	CodeConflict                        = core.CodeConflict
	CodeForkRetentionActive             = core.CodeForkRetentionActive
	CodeInternal                        = core.CodeInternal
	CodeInvalidArguments                = core.CodeInvalidArguments
	CodeInvalidState                    = core.CodeInvalidState
	CodeInvalidUTF8                     = core.CodeInvalidUTF8
	CodeNoMatch                         = core.CodeNoMatch
	CodeNotArtifact                     = core.CodeNotArtifact
	CodeNotDirectory                    = core.CodeNotDirectory
	CodeNotFound                        = core.CodeNotFound
	CodeObjectUnavailable               = core.CodeObjectUnavailable
	CodePayloadTooLarge                 = core.CodePayloadTooLarge
	CodeReadFenceChanged                = core.CodeReadFenceChanged
	CodeResourceExhausted               = core.CodeResourceExhausted
	CodeRestoreProtocolMismatch         = core.CodeRestoreProtocolMismatch
	CodeSnapshotExpired                 = core.CodeSnapshotExpired
	CodeSnapshotNotFound                = core.CodeSnapshotNotFound
	CodeStructuredDecodeFailed          = core.CodeStructuredDecodeFailed
	CodeTimeout                         = core.CodeTimeout
	CodeUnknownOutcome                  = core.CodeUnknownOutcome
	CodeUnknownTool                     = core.CodeUnknownTool
	CodeWorkbenchCommitConflict         = core.CodeWorkbenchCommitConflict
	CodeWorkbenchCommitProtocolMismatch = core.CodeWorkbenchCommitProtocolMismatch
)

// AgentRoot returns the conventional logical root of an agent, /agents/{agentID}/wb, normalized by NormalizeLogicalRoot.
func AgentRoot(agentID string) (string, *core.Error) {
	return core.AgentRoot(agentID)
}

// Annotations are the hints a host reads before calling a tool (MCP's readOnlyHint, destructiveHint and idempotentHint).
type Annotations = core.Annotations

// CommitIdentity is the facade's stable commit identity: SHA-256 of "nokv.workbench.commit_identity.v1\0" and the workbench id, content digest URI and manifest digest URI, each u64be-length-prefixed.
func CommitIdentity(workbenchID string, contentDigestURI string, manifestDigestURI string) nokv.CommitID {
	return core.CommitIdentity(workbenchID, contentDigestURI, manifestDigestURI)
}

// ComparePaths orders stored paths as their exact-row keys order (shards.EncodePath), so a scan of the path_current family and a sort of paths agree and a cursor can be checked against either.
func ComparePaths(a []string, b []string) int {
	return core.ComparePaths(a, b)
}

// DefaultAgentID is the agent whose root a Service serves by default.
const DefaultAgentID = core.DefaultAgentID

// DefaultMaxBytes is the largest payload or whole body a tool moves.
const DefaultMaxBytes = core.DefaultMaxBytes

// DigestURI is "sha256:" and the lowercase hex SHA-256 of b.
func DigestURI(b []byte) string {
	return core.DigestURI(b)
}

// Error is a Workbench error: the typed result every tool returns instead of a success envelope.
type Error = core.Error

// ErrorEnvelopeSchema returns the JSON schema of the error envelope every tool answers a failure with, as canonical JSON.
func ErrorEnvelopeSchema() json.RawMessage {
	return core.ErrorEnvelopeSchema()
}

// FromError maps a Go error to the Workbench error a tool returns.
func FromError(err error) *core.Error {
	return core.FromError(err)
}

// InputSchema returns the input schema of a tool as canonical JSON (keys sorted, compact), the object an MCP tools/list entry publishes, and whether the tool exists.
func InputSchema(name string) (json.RawMessage, bool) {
	return core.InputSchema(name)
}

// InputSchemasVersion is the schema marker of the embedded snapshot.
const InputSchemasVersion = core.InputSchemasVersion

// InputTooLarge reports a tool input whose raw JSON, actual bytes, is over the input limit maximum (MaxInputBytes), refused before it is parsed.
func InputTooLarge(actual uint64, maximum uint64, atLeast bool) *core.Error {
	return core.InputTooLarge(actual, maximum, atLeast)
}

// Internal reports a failure that is a defect, not a condition of the request.
func Internal(msg string) *core.Error {
	return core.Internal(msg)
}

// InvalidArguments reports input a tool refuses: a schema violation or an argument check of the tool.
func InvalidArguments(msg string) *core.Error {
	return core.InvalidArguments(msg)
}

// InvalidArgumentsf is InvalidArguments with a formatted message.
func InvalidArgumentsf(format string, args ...any) *core.Error {
	return core.InvalidArgumentsf(format, args...)
}

// IsSection reports whether s is one of the five standard sections.
func IsSection(s string) bool {
	return core.IsSection(s)
}

// LogicalPath joins components with "/": the section-joined path inside a workbench ("outputs/a.txt") that NotFound and friends report.
func LogicalPath(components []string) string {
	return core.LogicalPath(components)
}

// MarshalResult encodes a result or envelope as the reference prints it (Rust serde_json without preserve_order): compact, object keys sorted by their bytes at every level, strings escaping only '"', '\' and control characters (\b \f \n \r \t, others \u00xx), everything else raw UTF-8 including '<', '>', '&', U+2028 and U+2029.
func MarshalResult(v any) ([]byte, error) {
	return core.MarshalResult(v)
}

// MarshalResultIndent encodes like MarshalResult and lays the result out as the reference's pretty printer does (serde_json to_string_pretty): two-space indentation, ": " after keys, and empty objects and arrays as {} and [].
func MarshalResultIndent(v any) ([]byte, error) {
	return core.MarshalResultIndent(v)
}

// MaxInputBytes is the largest raw JSON input of tool that a Service whose body limit is maxBytes (Options.MaxBytes; zero or less: the default) parses.
func MaxInputBytes(tool string, maxBytes int64) int64 {
	return core.MaxInputBytes(tool, maxBytes)
}

// NormalizePath is the one path normalizer: every relative path a tool takes, every stored path and every key built from a path goes through it.
func NormalizePath(p string) ([]string, *core.Error) {
	return core.NormalizePath(p)
}

// NotFound reports a miss the tool layer decides: a replace or edit of a missing path, a stat or read that found nothing.
func NotFound(path string) *core.Error {
	return core.NotFound(path)
}

// Options configure a Service.
type Options = core.Options

// ResultSchema returns the JSON schema of a tool's success result as canonical JSON (keys sorted, compact), and whether the tool exists.
func ResultSchema(name string) (json.RawMessage, bool) {
	return core.ResultSchema(name)
}

// ResultSchemasVersion is the schema marker of the embedded result schemas.
const ResultSchemasVersion = core.ResultSchemasVersion

// RunManifestSchema is the schema string of the run-manifest envelope.
const RunManifestSchema = core.RunManifestSchema

const SectionInput = core.SectionInput

// Sections returns the five standard sections in the order workbench_create reports them: input, scripts, outputs, logs, metadata.
func Sections() []string {
	return core.Sections()
}

// Source is the value of details.source in the errors cairn's storage side reports.
const Source = core.Source

// Tool returns the description of a registered tool and whether it exists.
func Tool(name string) (core.ToolInfo, bool) {
	return core.Tool(name)
}

// ToolInfo describes one registered tool.
type ToolInfo = core.ToolInfo

// Tools returns the names of the registered tools: the contract's 18 in its order (create, put_file, append, edit, list, stat, read, grep, search, aggregate, catalog, find, commit, snapshot, snapshot_renew, snapshot_retire, snapshot_list, restore), then any tool added with Register, by name.
func Tools() []string {
	return core.Tools()
}

// UnknownTool reports a tool name that is not registered (registry.go).
func UnknownTool(tool string) *core.Error {
	return core.UnknownTool(tool)
}

// ValidateInput checks a tool's raw JSON arguments against the tool's input schema before anything else sees them, and returns the decoded arguments.
func ValidateInput(tool string, raw []byte) (map[string]any, *core.Error) {
	return core.ValidateInput(tool, raw)
}

// WithRequestID binds the engine commands of the tool calls made with the returned context to id: the n-th command such a call runs gets the engine request id "id.n" instead of a fresh one.
func WithRequestID(ctx context.Context, id string) context.Context {
	return core.WithRequestID(ctx, id)
}

// WorkbenchPath returns a workbench's presentation path, <root>/<id>.
func WorkbenchPath(root string, id string) string {
	return core.WorkbenchPath(root, id)
}

// AppendInput is workbench_append's input.
type AppendInput = files.AppendInput

// AppendResult is workbench_append's result.
type AppendResult = files.AppendResult

// CreateInput is workbench_create's input.
type CreateInput = files.CreateInput

// CreateResult is workbench_create's result.
type CreateResult = files.CreateResult

// EditInput is workbench_edit's input.
type EditInput = files.EditInput

// EditResult is workbench_edit's result.
type EditResult = files.EditResult

// PutFileInput is workbench_put_file's input.
type PutFileInput = files.PutFileInput

// PutFileResult is workbench_put_file's result.
type PutFileResult = files.PutFileResult

// Change is one event of the feed.
type Change = history.Change

// ChangesPage is one page of the change feed.
type ChangesPage = history.ChangesPage

// ChangesRequest asks for one page of the change feed.
type ChangesRequest = history.ChangesRequest

// CommitInput is workbench_commit's input.
type CommitInput = history.CommitInput

// CommitResult is workbench_commit's result.
type CommitResult = history.CommitResult

// DefaultChangesLimit is the page size when the request gives none.
const DefaultChangesLimit = history.DefaultChangesLimit

// FindInput is workbench_find's input.
type FindInput = history.FindInput

// FindResult is workbench_find's result: one page of workbenches.
type FindResult = history.FindResult

// MaxChangesLimit is the largest page a request may ask for.
const MaxChangesLimit = history.MaxChangesLimit

// MaxCommitFiles is the most files a workbench may hold when it is
// committed: past it, workbench_commit is ResourceExhausted.
const MaxCommitFiles = history.MaxCommitMembers - 1

// RestoreInput is workbench_restore's input: exactly one of AtSnapshot and AtCommit names the source.
type RestoreInput = history.RestoreInput

// RestoreKeepCurrent are the families that a restore of a pinned state (head.Store.RestoreRoot, `cairn pin restore`) keeps as they are now rather than as they were at the pin: - the snapshot rows (SnapshotRef, SnapshotAlias, HistoryHold), which describe the engine holds that such a restore keeps current, so every snapshot stays exactly as it was before the restore: held, listed, renewable and retirable, whichever side of the pin it was taken on, its frozen reads reading its own held root; - the lease clock, which must never go back; - the change feed's log (ChangeEvent), which is append-only history: a follower's position stays valid and no event it was served disappears.
var RestoreKeepCurrent = history.RestoreKeepCurrent

// RestoreResult is workbench_restore's result.
type RestoreResult = history.RestoreResult

// BlockRefFamilies are the families whose records BlockRefs reads: only ArtifactManifest rows name block objects.
var BlockRefFamilies = maintenance.BlockRefFamilies

// BlockRefs is the Workbench's walk.Refs (what the graph walker asks of a record): the block an ArtifactManifest row names, with the digest of the slice of it the row reads.
func BlockRefs(f shards.Family, key []byte, value []byte) ([]walk.BlockRef, error) {
	return maintenance.BlockRefs(f, key, value)
}

// CollectOptions tune CollectRevisions.
type CollectOptions = maintenance.CollectOptions

// CollectReport is what CollectRevisions did.
type CollectReport = maintenance.CollectReport

// CollectRevisions opens the deployment root of opts.AgentID in b and collects its due revisions (Service.CollectRevisions), folding its batches' changes once, at the end (collectEngine).
func CollectRevisions(ctx context.Context, b bucket.Bucket, opts maintenance.CollectOptions) (maintenance.CollectReport, error) {
	return maintenance.CollectRevisions(ctx, b, opts)
}

// Fsck opens the deployment root of opts.AgentID in b and checks it (see Service.Fsck).
func Fsck(ctx context.Context, b bucket.Bucket, opts maintenance.FsckOptions) (*maintenance.FsckReport, error) {
	return maintenance.Fsck(ctx, b, opts)
}

// FsckFinding is one inconsistency: where it was seen, the record (or engine object) concerned, what the other records say it should be and what was found.
type FsckFinding = maintenance.FsckFinding

// FsckOptions tune Fsck.
type FsckOptions = maintenance.FsckOptions

// FsckReport is what Fsck found, and what it covered.
type FsckReport = maintenance.FsckReport

// Layout returns the bucket layout of the logical shard that serves agent's deployment root, as Open derives it, without any I/O.
func Layout(agent string) (shards.Layout, error) {
	return maintenance.Layout(agent)
}

// PinBlockRefs returns the walk.Refs to walk a pinned root with, to verify it, copy it or check it before a restore (gcsweep.VerifyPin, gcsweep.CopyPin): BlockRefs, less the rows of every revision that neither the pinned root nor a root its holds name (one level, roots.Root.KeptHolds) references, whose blocks may have been collected and which no read of the pinned state reaches.
func PinBlockRefs(ctx context.Context, store *head.Store, root digest.Hash) (walk.Refs, error) {
	return maintenance.PinBlockRefs(ctx, store, root)
}

// ShardLayout returns the layout of logical shard id under the Workbench's schema: for a tool that walks every shard of a bucket without knowing the agents they serve.
func ShardLayout(id shards.ShardID) shards.Layout {
	return maintenance.ShardLayout(id)
}

// SweepOptions returns the options of a sweep of a Workbench shard (gcsweep.Sweep) that only the Workbench knows: the blocks its records keep, and its schema marker, so that a sweep never reads a shard of another schema with the Workbench's families (and may write its head: it touches the head first, so that its horizon reaches a grace period before now).
func SweepOptions() gcsweep.Options {
	return maintenance.SweepOptions()
}

const MaxDependencyDepth = publish.MaxDependencyDepth

// AggregateInput is workbench_aggregate's input.
type AggregateInput = query.AggregateInput

// AggregateResult is workbench_aggregate's result.
type AggregateResult = query.AggregateResult

// CatalogInput is workbench_catalog's input.
type CatalogInput = query.CatalogInput

// CatalogResult is workbench_catalog's result.
type CatalogResult = query.CatalogResult

// Measure is one measure of an aggregate: Op (count, sum, avg, min or max) over Field, reported under Name.
type Measure = query.Measure

// Predicate is one filter of a metadata query: Field compared by Op (eq, ne, in, lt, lte, gt, gte, prefix, suffix, contains, exists, not_exists) with Value.
type Predicate = query.Predicate

// SearchInput is workbench_search's input.
type SearchInput = query.SearchInput

// SearchResult is workbench_search's result: one page of matches.
type SearchResult = query.SearchResult

// SortKey is one sort key of a metadata query.
type SortKey = query.SortKey

// GrepInput is workbench_grep's input.
type GrepInput = reads.GrepInput

// GrepResult is workbench_grep's result: one page of matching lines.
type GrepResult = reads.GrepResult

// ListInput is workbench_list's input.
type ListInput = reads.ListInput

// ListResult is workbench_list's result: one page of a directory's direct children.
type ListResult = reads.ListResult

// ReadInput is workbench_read's input.
type ReadInput = reads.ReadInput

// ReadResult is workbench_read's result: the file's generation and either NotModified or one page of its body.
type ReadResult = reads.ReadResult

// StatInput is workbench_stat's input.
type StatInput = reads.StatInput

// StatResult is workbench_stat's result.
type StatResult = reads.StatResult

// SnapshotInput is workbench_snapshot's input.
type SnapshotInput = snapshots.SnapshotInput

// SnapshotListInput is workbench_snapshot_list's input.
type SnapshotListInput = snapshots.SnapshotListInput

// SnapshotListResult is workbench_snapshot_list's result.
type SnapshotListResult = snapshots.SnapshotListResult

// SnapshotRenewInput is workbench_snapshot_renew's input: exactly one of SnapshotID and Name selects the snapshot.
type SnapshotRenewInput = snapshots.SnapshotRenewInput

// SnapshotRenewResult is workbench_snapshot_renew's result.
type SnapshotRenewResult = snapshots.SnapshotRenewResult

// SnapshotResult is workbench_snapshot's result.
type SnapshotResult = snapshots.SnapshotResult

// SnapshotRetireInput is workbench_snapshot_retire's input: exactly one of SnapshotID and Name selects the snapshot.
type SnapshotRetireInput = snapshots.SnapshotRetireInput

// SnapshotRetireResult is workbench_snapshot_retire's result.
type SnapshotRetireResult = snapshots.SnapshotRetireResult

// ReadBudget bounds the memory whole-body reads hold at once, across the
// Services given it (Options.ReadBudget).
type ReadBudget = core.ReadBudget

// NewReadBudget returns a read budget of bytes.
func NewReadBudget(bytes int64) *ReadBudget { return core.NewReadBudget(bytes) }

// TreeCache is a cache of decoded member tree nodes that Services of
// several agents may share (Options.TreeCache).
type TreeCache = core.TreeCache

// NewTreeCache returns a tree cache of budget bytes (0: the default;
// negative: none kept).
func NewTreeCache(budget int64) *TreeCache { return core.NewTreeCache(budget) }

// DefaultTreeCacheBytes is the default budget of a tree cache.
const DefaultTreeCacheBytes = core.DefaultTreeCacheBytes

// DefaultReadBudget is the read budget of a Service given none.
const DefaultReadBudget = core.DefaultReadBudget

// HoldUntilAnswered returns a context under which a tool's whole-body reads keep their read-budget charge until answered is called, not only until the tool returns: a server calls answered once it has written the answer.
func HoldUntilAnswered(ctx context.Context) (context.Context, func()) {
	return core.HoldUntilAnswered(ctx)
}

// ReadPayloadInput reads the raw JSON input of put_file or append from r, dropping the bytes of a top-level text member once they decode past maxBytes; call the tool on the input returned, under WithOversizedText(ctx, oversize), and its answer is the whole input's.
func ReadPayloadInput(r io.Reader, maxBytes int64, sizeHint int) (input []byte, oversize int64, err error) {
	return payload.Read(r, maxBytes, sizeHint)
}

// WithOversizedText returns ctx for calling a tool on an input from ReadPayloadInput whose text of size bytes was dropped.
func WithOversizedText(ctx context.Context, size int64) context.Context {
	return core.WithOversizedText(ctx, size)
}

// ValueFormatForTest makes every Service the process opens from now on
// without a ValueFormat create new shards in value format v (0: this
// cairn's own), as a cairn of that format would.
func ValueFormatForTest(v int) { core.TestValueFormat = v }

// TestValueFormat returns the value format ValueFormatForTest set, or 0.
func TestValueFormat() int { return core.TestValueFormat }

// ValueFormatFromEnvForTest calls ValueFormatForTest with the value of
// CAIRN_TEST_VALUE_FORMAT, when set: a test binary's TestMain runs its
// whole suite against shards of an older value format.
func ValueFormatFromEnvForTest() error {
	e := os.Getenv("CAIRN_TEST_VALUE_FORMAT")
	if e == "" {
		return nil
	}
	v, err := strconv.Atoi(e)
	if err != nil || v < core.OldestValueFormat || v > ValueFormat {
		return fmt.Errorf("CAIRN_TEST_VALUE_FORMAT=%q: a value format from %d to %d", e, core.OldestValueFormat, ValueFormat)
	}
	ValueFormatForTest(v)
	return nil
}

// ValueFormat is the value format this cairn creates shards in; it also
// opens, and writes in their own format, shards of the five before.
const ValueFormat = nokv.ValueFormatVersion

// OldestValueFormat is the oldest value format this cairn opens and
// creates.
const OldestValueFormat = core.OldestValueFormat
