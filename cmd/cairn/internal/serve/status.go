package serve

import (
	"net/http"

	"github.com/cairnstore/cairn/workbench"
)

// Codes the server mints itself, for requests that never reach a tool.
// They travel in the contract's error envelope like the tools' codes.
const (
	CodeUnauthenticated      = "Unauthenticated"
	CodeUnknownAgent         = "UnknownAgent"
	CodeRouteNotFound        = "RouteNotFound"
	CodeMethodNotAllowed     = "MethodNotAllowed"
	CodeUnsupportedMedia     = "UnsupportedMediaType"
	CodeIdempotencyKeyReused = "IdempotencyKeyReused"
	CodeIdempotencyKeyInUse  = "IdempotencyKeyInUse"
	CodeShuttingDown         = "ShuttingDown"
	// CodeServerBusy: the request bodies in memory are at the server's
	// budget (Options.BodyBudget); retryable.
	CodeServerBusy = "ServerBusy"
	// CodeTooManyRequests: the client's address failed authentication
	// too often of late; retryable after Retry-After.
	CodeTooManyRequests = "TooManyRequests"
	// CodeUnimplemented is the code of the tools this version does not
	// serve (workbench.Service.Call's envelope).
	CodeUnimplemented = "Unimplemented"
	// CodeForeignHost: a server without tokens, reached at a loopback
	// address, refuses a request whose Host header is not a loopback
	// name (DNS rebinding, see loopbackNames).
	CodeForeignHost = "ForeignHost"
)

// codeStatus is the HTTP status of every error code, the tools' and the
// server's. A code's status says what kind of failure it is; whether a
// retry may help is the envelope's retryable member, echoed as a
// Retry-After header (see Status).
var codeStatus = map[string]int{
	// The request itself is wrong.
	workbench.CodeInvalidArguments: http.StatusBadRequest,
	CodeUnauthenticated:            http.StatusUnauthorized,
	CodeForeignHost:                http.StatusForbidden,
	CodeRouteNotFound:              http.StatusNotFound,
	CodeMethodNotAllowed:           http.StatusMethodNotAllowed,
	CodeUnsupportedMedia:           http.StatusUnsupportedMediaType,

	// What the request names does not exist.
	workbench.CodeUnknownTool:      http.StatusNotFound,
	CodeUnknownAgent:               http.StatusNotFound,
	workbench.CodeNotFound:         http.StatusNotFound,
	workbench.CodeSnapshotNotFound: http.StatusNotFound,
	workbench.CodeSnapshotExpired:  http.StatusGone,

	// The request conflicts with what is stored.
	workbench.CodeAlreadyExists:           http.StatusConflict,
	workbench.CodeConflict:                http.StatusConflict,
	workbench.CodeWorkbenchCommitConflict: http.StatusConflict,
	workbench.CodeNotArtifact:             http.StatusConflict,
	workbench.CodeNotDirectory:            http.StatusConflict,
	workbench.CodeReadFenceChanged:        http.StatusConflict,
	CodeIdempotencyKeyInUse:               http.StatusConflict,
	workbench.CodeForkRetentionActive:     http.StatusPreconditionFailed,

	// Too big.
	workbench.CodePayloadTooLarge:   http.StatusRequestEntityTooLarge,
	workbench.CodeResourceExhausted: http.StatusRequestEntityTooLarge,

	// Well formed, but the stored state cannot be processed as asked.
	workbench.CodeInvalidUTF8:             http.StatusUnprocessableEntity,
	workbench.CodeNoMatch:                 http.StatusUnprocessableEntity,
	workbench.CodeAmbiguousEdit:           http.StatusUnprocessableEntity,
	workbench.CodeStructuredDecodeFailed:  http.StatusUnprocessableEntity,
	workbench.CodeCanonicalEncodingFailed: http.StatusUnprocessableEntity,
	workbench.CodeInvalidState:            http.StatusUnprocessableEntity,
	CodeIdempotencyKeyReused:              http.StatusUnprocessableEntity,

	// The server or the store behind it failed.
	workbench.CodeInternal:                        http.StatusInternalServerError,
	CodeUnimplemented:                             http.StatusNotImplemented,
	workbench.CodeObjectUnavailable:               http.StatusBadGateway,
	workbench.CodeBackendProtocolMismatch:         http.StatusBadGateway,
	workbench.CodeWorkbenchCommitProtocolMismatch: http.StatusBadGateway,
	workbench.CodeRestoreProtocolMismatch:         http.StatusBadGateway,
	workbench.CodeUnknownOutcome:                  http.StatusServiceUnavailable,
	workbench.CodeCancelled:                       http.StatusServiceUnavailable,
	CodeShuttingDown:                              http.StatusServiceUnavailable,
	CodeServerBusy:                                http.StatusServiceUnavailable,
	CodeTooManyRequests:                           http.StatusTooManyRequests,
	workbench.CodeTimeout:                         http.StatusGatewayTimeout,
}

// serverSide are the statuses of failures of the server or its store:
// such a failure that is retryable answers 503, so that every client and
// proxy knows to try again.
var serverSide = map[int]bool{
	http.StatusInternalServerError: true,
	http.StatusBadGateway:          true,
}

// Status returns the HTTP status of an error envelope with code and
// retryable. A code's own status comes from a fixed table; a retryable
// failure of the server or its store (Internal, ObjectUnavailable, a
// protocol mismatch) is 503 instead. A code the table does not know (the
// envelope passes codes through) is 500, or 503 when retryable.
func Status(code string, retryable bool) int {
	st, ok := codeStatus[code]
	if !ok {
		st = http.StatusInternalServerError
	}
	if retryable && serverSide[st] {
		return http.StatusServiceUnavailable
	}
	return st
}

// knownCode reports whether code has a status of its own in the table.
func knownCode(code string) bool {
	_, ok := codeStatus[code]
	return ok
}
