package core

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/cairnstore/cairn/head"
)

// boundKey is the context key of a request id bound with WithRequestID.
type boundKey struct{}

// bound is a request id bound to the calls made with one context; n counts
// the engine commands they ran, so that each gets its own id.
type bound struct {
	id string
	n  atomic.Uint64
}

// WithRequestID binds the engine commands of the tool calls made with the
// returned context to id: the n-th command such a call runs gets the
// engine request id "id.n" instead of a fresh one. A second call with the
// same id (in this process or another, on the same bucket) then runs the
// same request ids, and the engine replays the result of every command
// the first one committed instead of applying it again (head.Command's
// RequestID; records are kept for head.Options.DedupeWindow commits).
//
// The caller vouches that the calls are one request: the same tool, the
// same input. The command digests of bound calls are derived from the
// request ids alone, since a retried call stages its body under fresh
// random ids and its own digest would differ; so nothing but the caller
// tells two inputs apart. An HTTP server binds an Idempotency-Key this
// way after checking that the input matches the one stored for the key.
//
// A call answers a retry with a replayed result only when it reaches its
// commands again. Checks a tool makes before its first command see the
// state the earlier call left: a create-only put whose first try landed
// answers AlreadyExists on the retry, not its success; it never writes
// twice.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, boundKey{}, &bound{id: id})
}

// CommandIdentity returns the request id and digest of the next engine
// command of a call made with ctx: a fresh request id and the command's
// own digest, or, under WithRequestID, the bound ids in order and a digest
// derived from them.
func (s *Service) CommandIdentity(ctx context.Context, digest [32]byte) (string, [32]byte) {
	b, ok := ctx.Value(boundKey{}).(*bound)
	if !ok {
		return s.RequestID(), digest
	}
	id := b.id + "." + strconv.FormatUint(b.n.Add(1), 10)
	return id, head.Digest([]byte("cairn.workbench.bound.v1"), []byte(id))
}
