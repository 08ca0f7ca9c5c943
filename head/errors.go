package head

import "errors"

var (
	// ErrSchemaMismatch: the shard's schema marker is not the one it was
	// opened with. The store refuses to open or serve it.
	ErrSchemaMismatch = errors.New("head: schema marker mismatch")

	// ErrBadHead: the head object is malformed or names another shard.
	ErrBadHead = errors.New("head: malformed head")

	// ErrRetryable: the command did not commit within the attempt budget
	// (contention, throttling, an unreachable store). Nothing of it is
	// visible. Retrying with the same request id is safe.
	ErrRetryable = errors.New("head: not committed, retry")

	// ErrUnknownOutcome: a commit's outcome could not be learned (the head
	// could not be read after an ambiguous write). The command may have
	// committed; retrying with the same request id replays or applies it
	// exactly once.
	ErrUnknownOutcome = errors.New("head: commit outcome unknown, retry with the same request id")

	// ErrRequestReused: a request id was reused with different inputs.
	ErrRequestReused = errors.New("head: request id reused with different inputs")

	// ErrWriterRule: a new root would reference an object that is neither
	// reachable from its parent nor written by this attempt. It is a bug
	// guard: GC could have deleted such an object.
	ErrWriterRule = errors.New("head: writer rule violated")

	// ErrClosed: the store was closed.
	ErrClosed = errors.New("head: store closed")

	// errNoHead: the shard has no head yet; Open initializes it.
	errNoHead = errors.New("no head")
)
