package head

import (
	"errors"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/roots/walk"
	"github.com/cairnstore/cairn/shards"
)

// kindOf is a sentinel that is also another: errors.Is finds both.
type kindOf struct {
	msg    string
	parent error
}

func (e *kindOf) Error() string { return e.msg }
func (e *kindOf) Unwrap() error { return e.parent }

var (
	// ErrSchemaMismatch: the shard's schema marker is not the one it was
	// opened with. The store refuses to open or serve it.
	ErrSchemaMismatch = errors.New("head: schema marker mismatch")

	// ErrBadHead: the head object is malformed or names another shard.
	ErrBadHead = errors.New("head: malformed head")

	// ErrOldFormat: the head is of a format an earlier cairn wrote
	// ("cairn.head.v1"). It is also ErrBadHead: the shard is refused, never
	// read as empty or overwritten.
	ErrOldFormat error = &kindOf{"head: head of an older format", errors.Join(ErrBadHead, shards.ErrFormatVersion)}

	// ErrHeadRolledBack: the head read has a lower sequence than a head
	// this Store has already seen (an operator restored an older head
	// object, or the store lost writes). Serving it would undo commits
	// that were reported applied, and a commit on it would fork the
	// shard's history, so it is refused. It is also bucket.ErrIntegrity.
	ErrHeadRolledBack error = &kindOf{"head: head went back in sequence", bucket.ErrIntegrity}

	// ErrNoHead: the shard has no head. A read cannot tell a shard never
	// written from one whose head was lost, so it fails with ErrNoHead and
	// writes nothing; the first commit initializes a shard that holds
	// nothing (its genesis head, create-only), never one with objects.
	ErrNoHead = errors.New("head: shard has no head")

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

	// ErrInconsistent: an object that exists, hashes to its name and
	// decodes disagrees with the reference that named it (its size, record
	// or shard count, family, sequence, or a page's place in its index).
	// A verifying walk (walk.Options.Verify) and Check report it.
	ErrInconsistent = walk.ErrInconsistent
)
