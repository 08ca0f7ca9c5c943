package core

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Error codes. The first group is minted by the tool layer itself, the
// second is reported by the storage side (cairn's engine), the third names
// conditions of cairn's own engine that the reference backend does not have.
// Any other string is a legal code too: the envelope passes codes through.
const (
	CodeInvalidArguments                = "InvalidArguments"
	CodeUnknownTool                     = "UnknownTool"
	CodeNotFound                        = "NotFound"
	CodeNotArtifact                     = "NotArtifact"
	CodePayloadTooLarge                 = "PayloadTooLarge"
	CodeInvalidUTF8                     = "InvalidUtf8"
	CodeNoMatch                         = "NoMatch"
	CodeAmbiguousEdit                   = "AmbiguousEdit"
	CodeConflict                        = "Conflict"
	CodeStructuredDecodeFailed          = "StructuredDecodeFailed"
	CodeCanonicalEncodingFailed         = "CanonicalEncodingFailed"
	CodeWorkbenchCommitConflict         = "WorkbenchCommitConflict"
	CodeWorkbenchCommitProtocolMismatch = "WorkbenchCommitProtocolMismatch"
	CodeRestoreProtocolMismatch         = "RestoreProtocolMismatch"
	CodeBackendProtocolMismatch         = "BackendProtocolMismatch"
	CodeReadFenceChanged                = "ReadFenceChanged"
	CodeResourceExhausted               = "ResourceExhausted"

	CodeAlreadyExists       = "AlreadyExists"
	CodeSnapshotNotFound    = "SnapshotNotFound"
	CodeSnapshotExpired     = "SnapshotExpired"
	CodeForkRetentionActive = "ForkRetentionActive"
	CodeInvalidState        = "InvalidState"
	CodeNotDirectory        = "NotDirectory"
	CodeObjectUnavailable   = "ObjectUnavailable"
	CodeInternal            = "Internal"

	CodeUnknownOutcome = "UnknownOutcome"
	CodeTimeout        = "Timeout"
	CodeCancelled      = "Cancelled"
)

// Source is the value of details.source in the errors cairn's storage side
// reports. The reference deployment names the layer that failed there
// ("nokv-rpc", "nokv-client", "workbench-backend"); cairn is its own
// backend, in one process, so every storage-side error carries the one
// source "cairn". Errors minted by the tool layer (InvalidArguments,
// NotFound with a path, PayloadTooLarge, ...) carry no source, as in the
// reference.
const Source = "cairn"

// Error is a Workbench error: the typed result every tool returns instead
// of a success envelope. Code, Message, Retryable and Details are the
// contract; the Go error it was mapped from, if any, is kept for Unwrap and
// logs but never serialized.
type Error struct {
	Code      string
	Message   string
	Retryable bool
	// Details holds the code's detail keys. Nil means no details and is
	// serialized as {}.
	Details map[string]any

	Cause error
}

// Error implements error.
func (e *Error) Error() string {
	return "workbench: " + e.Code + ": " + e.Message
}

// Unwrap returns the Go error the Workbench error was mapped from, or nil.
func (e *Error) Unwrap() error { return e.Cause }

// Envelope returns the error envelope: exactly the members status
// ("error"), code, message, retryable and details. Details is a fresh map,
// empty (never nil) when the error has none.
func (e *Error) Envelope() map[string]any {
	details := make(map[string]any, len(e.Details))
	maps.Copy(details, e.Details)
	return map[string]any{
		"status":    "error",
		"code":      e.Code,
		"message":   e.Message,
		"retryable": e.Retryable,
		"details":   details,
	}
}

// MarshalJSON encodes the envelope as MarshalResult does.
func (e *Error) MarshalJSON() ([]byte, error) {
	return MarshalResult(e.Envelope())
}

// With returns a copy of e whose details also hold key = value, replacing
// any earlier value of key (a grep error gets the presentation path this
// way).
func (e *Error) With(key string, value any) *Error {
	c := *e
	c.Details = make(map[string]any, len(e.Details)+1)
	maps.Copy(c.Details, e.Details)
	c.Details[key] = value
	return &c
}

func NewError(code, msg string, retryable bool, details map[string]any) *Error {
	return &Error{Code: code, Message: msg, Retryable: retryable, Details: details}
}

func SourceDetails() map[string]any { return map[string]any{"source": Source} }

// ServerDetails are the details of an error that the reference's metadata
// server reports (its RPC failure mapping): the source, the wire code the
// server answered (NotFound, AlreadyExists, Conflict, InvalidArgument,
// PreconditionFailed, ...), the kind of conflict (nil when none) and the
// generation now stored (nil when not known).
func ServerDetails(wire string, conflict any, currentGeneration *uint64) map[string]any {
	d := SourceDetails()
	d["code"] = wire
	d["conflict"] = conflict
	d["current_generation"] = nil
	if currentGeneration != nil {
		d["current_generation"] = *currentGeneration
	}
	return d
}

// Errors minted by the tool layer.

// InvalidArguments reports input a tool refuses: a schema violation or an
// argument check of the tool. Not retryable; no details.
func InvalidArguments(msg string) *Error {
	return NewError(CodeInvalidArguments, msg, false, nil)
}

// InvalidArgumentsf is InvalidArguments with a formatted message.
func InvalidArgumentsf(format string, args ...any) *Error {
	return InvalidArguments(fmt.Sprintf(format, args...))
}

// UnknownTool reports a tool name that is not registered (registry.go).
func UnknownTool(tool string) *Error {
	return NewError(CodeUnknownTool, "unknown Workbench tool "+tool, false, map[string]any{"tool": tool})
}

// NotFound reports a miss the tool layer decides: a replace or edit of a
// missing path, a stat or read that found nothing. path is the
// section-joined logical path without the workbench root
// ("outputs/a.txt"; "" for the workbench itself).
func NotFound(path string) *Error {
	return NewError(CodeNotFound, "path not found: "+path, false, map[string]any{"path": path})
}

// NotArtifact reports a replace whose target is a directory or section.
func NotArtifact(path string) *Error {
	return NewError(CodeNotArtifact, "path is not an artifact: "+path, false, map[string]any{"path": path})
}

// PayloadTooLarge reports a payload or body of actual bytes over the
// maximum.
func PayloadTooLarge(actual, maximum uint64) *Error {
	return NewError(CodePayloadTooLarge,
		fmt.Sprintf("payload is %d bytes, maximum is %d", actual, maximum), false,
		map[string]any{"actual_bytes": actual, "maximum_bytes": maximum})
}

// InputTooLarge reports a tool input whose raw JSON, actual bytes, is
// over the input limit maximum (MaxInputBytes), refused before it is
// parsed. atLeast says actual is only what was read before refusing (an
// input from a pipe is not read to its end). The details keys are
// PayloadTooLarge's; the numbers count the input's JSON text, not a
// decoded payload.
func InputTooLarge(actual, maximum uint64, atLeast bool) *Error {
	what := "is"
	if atLeast {
		what = "is at least"
	}
	return NewError(CodePayloadTooLarge,
		fmt.Sprintf("tool input %s %d bytes, maximum is %d", what, actual, maximum), false,
		map[string]any{"actual_bytes": actual, "maximum_bytes": maximum})
}

// InvalidUTF8 reports an edit of a body that is not UTF-8.
func InvalidUTF8(path string) *Error {
	return NewError(CodeInvalidUTF8, path+" is not valid UTF-8", false, map[string]any{"path": path})
}

// StructuredTextNotUTF8 reports a structured read of a text body that is
// not UTF-8. Same code as InvalidUTF8, the reference's other message.
func StructuredTextNotUTF8(path string) *Error {
	return NewError(CodeInvalidUTF8, "structured text read requires UTF-8", false, map[string]any{"path": path})
}

// NoMatch reports an edit whose old_string does not occur.
func NoMatch(path string) *Error {
	return NewError(CodeNoMatch, "old_string was not found", false, map[string]any{"path": path})
}

// AmbiguousEdit reports an edit whose old_string occurs more than once
// without replace_all.
func AmbiguousEdit(matches int) *Error {
	return NewError(CodeAmbiguousEdit,
		fmt.Sprintf("old_string occurs %d times; set replace_all=true", matches), false,
		map[string]any{"matches": matches})
}

// EditConflict reports an edit whose every replace-if-generation attempt
// lost to a concurrent writer; lastErr is the last conflict's message.
// Retryable.
func EditConflict(attempts int, lastErr string) *Error {
	return NewError(CodeConflict,
		fmt.Sprintf("conditional publication conflicted after %d attempts", attempts), true,
		map[string]any{"attempts": attempts, "last_error": lastErr})
}

// StructuredDecodeFailed reports a structured read of a body classified as
// format ("json" or "yaml") that does not parse; cause is the parser's
// complaint.
func StructuredDecodeFailed(path, format string, cause error) *Error {
	name := format
	switch format {
	case "json":
		name = "JSON"
	case "yaml":
		name = "YAML"
	}
	msg := name + " decoding failed"
	if cause != nil {
		msg += ": " + cause.Error()
	}
	return NewError(CodeStructuredDecodeFailed, msg, false, map[string]any{"path": path, "format": format})
}

// CanonicalEncodingFailed reports a value (a snapshot annotation) that
// cannot be canonically encoded.
func CanonicalEncodingFailed(msg string) *Error {
	return NewError(CodeCanonicalEncodingFailed, msg, false, nil)
}

// CommitConflict is the commit tool's remap: a Conflict from the storage
// side becomes WorkbenchCommitConflict with its message, retryable flag and
// details kept. Any other error is returned unchanged.
func CommitConflict(e *Error) *Error {
	if e == nil || e.Code != CodeConflict {
		return e
	}
	c := *e
	c.Code = CodeWorkbenchCommitConflict
	return &c
}

// CommitProtocolMismatch reports a stored commit identity that differs
// from the one the tool computed (both 64 lower-case hex). Retryable.
func CommitProtocolMismatch(expected, actual string) *Error {
	return NewError(CodeWorkbenchCommitProtocolMismatch,
		"backend returned a commit identity different from the canonical request", true,
		map[string]any{"expected_commit_id": expected, "actual_commit_id": actual})
}

// RestoreProtocolMismatch is the restore tool's remap: a
// BackendProtocolMismatch becomes RestoreProtocolMismatch with its message,
// retryable flag and details kept. Any other error is returned unchanged.
func RestoreProtocolMismatch(e *Error) *Error {
	if e == nil || e.Code != CodeBackendProtocolMismatch {
		return e
	}
	c := *e
	c.Code = CodeRestoreProtocolMismatch
	return &c
}

// BackendProtocolMismatch reports storage output that breaks the tool's
// expectations (a grep candidate cursor that did not advance, a candidate
// outside the requested scope). Retryable; details as given (nil for {}).
func BackendProtocolMismatch(msg string, details map[string]any) *Error {
	return NewError(CodeBackendProtocolMismatch, msg, true, details)
}

// GrepReadFenceChanged reports a grep body whose path or metadata changed
// between candidate enumeration and the read. Retryable. The grep tool adds
// the presentation path with With("path", ...).
func GrepReadFenceChanged() *Error {
	return NewError(CodeReadFenceChanged, "grep pages crossed an authoritative read fence", true,
		map[string]any{"operation": "grep"})
}

// GrepScanExhausted reports a grep that cannot make progress within its
// budget of resource ("bytes"): a single candidate larger than maximum.
func GrepScanExhausted(resource string, maximum uint64) *Error {
	return NewError(CodeResourceExhausted,
		fmt.Sprintf("grep exceeded its bounded %s scan budget", resource), false,
		map[string]any{"operation": "grep", "resource": resource, "maximum": maximum})
}

// Errors reported by the storage side. Those the reference's server
// decides carry details {"source": "cairn", "code": <wire code>,
// "conflict": <kind or null>, "current_generation": <generation or null>}
// (serverDetails); the others {"source": "cairn"}, as noted.

// Missing reports a NotFound the storage side decides (a workbench, a
// commit, an unknown snapshot id in a snapshot read). Not retryable. Tool
// misses with a logical path use NotFound. Server details, wire code
// NotFound.
func Missing(msg string) *Error {
	return NewError(CodeNotFound, msg, false, ServerDetails("NotFound", nil, nil))
}

// AlreadyExists reports a create-only write onto an existing path. Not
// retryable. Server details, wire code AlreadyExists.
func AlreadyExists(msg string) *Error {
	return NewError(CodeAlreadyExists, msg, false, ServerDetails("AlreadyExists", nil, nil))
}

// Conflict reports a lost conditional write: conflict names what moved
// ("Generation", "Head", "Contention", ...). currentGeneration is the
// generation now stored, or nil when not known. Retryable. Server
// details, wire code Conflict.
func Conflict(msg, conflict string, currentGeneration *uint64) *Error {
	return NewError(CodeConflict, msg, true, ServerDetails("Conflict", conflict, currentGeneration))
}

// LifecycleConflict reports a commit or restore that conflicts with what
// is stored ("workbench already has a different commit head; set
// replace=true"). Retryable, details {} as in the reference.
func LifecycleConflict(msg string) *Error {
	return NewError(CodeConflict, msg, true, nil)
}

// ReadFenceChanged reports a continuation whose view moved: operation is
// "list", "grep candidate enumeration", "search", "aggregate", "catalog",
// "find" or "workbench child enumeration"; conflict is "ReadVersion" or
// "Workspace". Retryable.
func ReadFenceChanged(operation, conflict string) *Error {
	d := SourceDetails()
	d["conflict"] = conflict
	return NewError(CodeReadFenceChanged, operation+" fence changed", true, d)
}

// SnapshotNotFound reports a snapshot id or name that resolves to nothing.
func SnapshotNotFound(msg string) *Error {
	return NewError(CodeSnapshotNotFound, msg, false, SourceDetails())
}

// SnapshotExpired reports a snapshot that is expired or reaped. Server
// details, wire code SnapshotExpired.
func SnapshotExpired(msg string) *Error {
	return NewError(CodeSnapshotExpired, msg, false, ServerDetails("SnapshotExpired", nil, nil))
}

// ForkRetentionActive reports a retirement of a snapshot that a restore
// still consumes. Server details: the reference's server refuses it as
// PreconditionFailed with conflict SnapshotLifecycle.
func ForkRetentionActive(msg string) *Error {
	return NewError(CodeForkRetentionActive, msg, false, ServerDetails("PreconditionFailed", "SnapshotLifecycle", nil))
}

// InvalidState reports a request the stored state or the storage side's
// own validation refuses (a foreign cursor, an invalid content type, a
// retired snapshot's renewal). Not retryable.
func InvalidState(msg string) *Error {
	return NewError(CodeInvalidState, msg, false, SourceDetails())
}

// QueryRefused reports a query the server's own validation refuses (a
// bound exceeded, an unknown field, an operand of another type): the
// reference's server answers InvalidArgument, which the tools report as
// InvalidState. Not retryable; server details.
func QueryRefused(msg string) *Error {
	return NewError(CodeInvalidState, msg, false, ServerDetails("InvalidArgument", nil, nil))
}

// UnknownQueryField reports a field id that the scope's catalog does not
// hold, in a predicate, sort key, projection, facet, group or measure.
func UnknownQueryField(id string) *Error {
	return QueryRefused("unknown query field " + id)
}

// Uncommitted reports a snapshot of a workbench without a commit head: the
// one InvalidState whose details name the workbench instead of the source.
func Uncommitted(workbenchID string) *Error {
	return NewError(CodeInvalidState, "only a committed workbench can be snapshotted", false,
		map[string]any{"workbench_id": workbenchID})
}

// NotDirectory reports a list of a path that is an exact artifact. Details
// hold the logical path only.
func NotDirectory(path string) *Error {
	return NewError(CodeNotDirectory, "an exact artifact cannot be listed as a directory", false,
		map[string]any{"path": path})
}

// ResourceExhausted reports work beyond a storage-side bound (an artifact
// over the maximum size, an enumeration beyond its page budget). Not
// retryable.
func ResourceExhausted(msg string) *Error {
	return NewError(CodeResourceExhausted, msg, false, SourceDetails())
}

// ArtifactTooLarge reports an artifact body of size bytes over the
// limit, maximum: a read, grep or edit of a stored body, or an append
// whose result would be that large. ResourceExhausted, as the reference's
// backend refuses an artifact bigger than its max_artifact_bytes.
func ArtifactTooLarge(size uint64, maximum int64) *Error {
	return ResourceExhausted(fmt.Sprintf("artifact of %d bytes exceeds the %d-byte limit", size, maximum))
}

// ObjectUnavailable reports an object-store failure.
func ObjectUnavailable(msg string, retryable bool) *Error {
	return NewError(CodeObjectUnavailable, msg, retryable, SourceDetails())
}

// Internal reports a failure that is a defect, not a condition of the
// request. Not retryable.
func Internal(msg string) *Error {
	return NewError(CodeInternal, msg, false, SourceDetails())
}

// refused is the error of a request the object store refused for good
// (bucket.Permanent): an object-store failure, as the reference reports
// its object store's, not retryable, its message naming the cause so
// that an operator knows what to fix.
func refused(err error) *Error {
	var why string
	switch {
	case errors.Is(err, bucket.ErrDenied):
		why = "denied access (missing or rejected credentials, or no permission)"
	case errors.Is(err, bucket.ErrNoSpace):
		why = "has no space left (a full disk or an exhausted quota)"
	case errors.Is(err, bucket.ErrNoBucket):
		why = "has no such bucket"
	default:
		why = "refused the request"
	}
	return ObjectUnavailable("the object store "+why+"; the request was not applied, and retrying will not help until that is fixed ("+err.Error()+")", false)
}

// FromError maps a Go error to the Workbench error a tool returns. It is
// the one place where cairn's internal errors become Workbench errors:
//
//   - nil is nil; an *Error anywhere in the chain is returned unchanged.
//   - head.ErrUnknownOutcome, and bucket.ErrAmbiguous on its own: the change
//     may or may not have been applied. UnknownOutcome, retryable.
//   - a permanent refusal of the store (bucket.Permanent: ErrDenied,
//     ErrNoSpace, ErrNoBucket, ErrInvalidKey, ErrUnsupported): the
//     request took no effect and another try will not help until an
//     operator acts. ObjectUnavailable, not retryable, with a message that
//     names the cause (see refused).
//   - head.ErrRetryable: the engine gave up within its attempt budget and
//     nothing is visible. ObjectUnavailable (retryable) when the store was
//     unavailable, throttled or ambiguous along the way; otherwise the
//     attempts lost to concurrent writers, which is a Conflict with
//     conflict "Contention", retryable, as the reference reports conflicts
//     that outlast its retries.
//   - context.DeadlineExceeded: Timeout; context.Canceled: Cancelled; both
//     retryable. The engine returns them only for a change it did not
//     apply: once a head write is sent it learns the outcome before it
//     answers, whatever the caller's context does.
//   - bucket.ErrThrottled, bucket.ErrUnavailable: ObjectUnavailable,
//     retryable; bucket.ErrNotExist (an object the metadata references is
//     gone): ObjectUnavailable, not retryable.
//   - bucket.ErrIntegrity (also manifests' and shards' ErrIntegrity):
//     InvalidState, as the reference reports integrity failures; a head
//     that went back in sequence (head.ErrHeadRolledBack) says so.
//   - head.ErrRequestReused, head.ErrSchemaMismatch, head.ErrBadHead:
//     InvalidState.
//   - head.ErrClosed: Internal, retryable (another process may serve).
//   - anything else: Internal, not retryable, with the Go error's text.
//
// Every mapped error carries details {"source": "cairn"} and keeps err for
// Unwrap.
func FromError(err error) *Error {
	if err == nil {
		return nil
	}
	if we, ok := errors.AsType[*Error](err); ok {
		return we
	}
	var e *Error
	switch {
	case errors.Is(err, head.ErrUnknownOutcome):
		e = NewError(CodeUnknownOutcome, "the outcome of the change is unknown; it may have been applied", true, SourceDetails())
	case bucket.Permanent(err):
		e = refused(err)
	case errors.Is(err, head.ErrRetryable):
		if errors.Is(err, bucket.ErrThrottled) || errors.Is(err, bucket.ErrUnavailable) || errors.Is(err, bucket.ErrAmbiguous) {
			e = ObjectUnavailable("the object store is unavailable; the change was not applied", true)
		} else {
			e = Conflict("concurrent writers kept the change from committing; it was not applied", "Contention", nil)
		}
	case errors.Is(err, context.DeadlineExceeded):
		e = NewError(CodeTimeout, "the request deadline expired", true, SourceDetails())
	case errors.Is(err, context.Canceled):
		e = NewError(CodeCancelled, "the request was cancelled", true, SourceDetails())
	case errors.Is(err, bucket.ErrAmbiguous):
		e = NewError(CodeUnknownOutcome, "the outcome of an object write is unknown", true, SourceDetails())
	case errors.Is(err, bucket.ErrThrottled):
		e = ObjectUnavailable("the object store throttled the request", true)
	case errors.Is(err, bucket.ErrUnavailable):
		e = ObjectUnavailable("the object store is unavailable", true)
	case errors.Is(err, head.ErrNoHead):
		e = ObjectUnavailable("the deployment's head is lost: objects are stored but no head names them; every call is refused until an operator runs cairn recover", false)
	case errors.Is(err, bucket.ErrNotExist):
		e = ObjectUnavailable("a stored object is missing", false)
	case errors.Is(err, head.ErrHeadRolledBack):
		e = InvalidState("the store's head went back to an older state than this replica has served; it is refused until an operator restores the newest head")
	case errors.Is(err, bucket.ErrIntegrity):
		e = InvalidState("stored data failed an integrity check")
	case errors.Is(err, head.ErrRequestReused):
		e = InvalidState("a request id was reused with different inputs")
	case errors.Is(err, head.ErrSchemaMismatch), errors.Is(err, head.ErrBadHead):
		e = InvalidState(fmt.Sprintf("the store was written in another format than this version's (%s format %d, value format %d, head %s or %s); open it with the version that wrote it",
			nokv.SchemaID, nokv.FormatVersion, nokv.ValueFormatVersion, head.HeadFormatV2, head.HeadFormat))
	case errors.Is(err, head.ErrClosed):
		e = NewError(CodeInternal, "the store is closed", true, SourceDetails())
	default:
		e = Internal("internal error: " + err.Error())
	}
	e.Cause = err
	return e
}
