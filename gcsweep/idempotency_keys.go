package gcsweep

import (
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// IdempotencyPrefix returns "idempotency/{lsid}/", under which an HTTP
// server keeps the stored results of requests made with an idempotency
// key, and which a sweep expires after Options.IdempotencyRetention. It
// lies outside the shard's prefix: a shard with no head is empty only if
// nothing is stored under its prefix, and a keyed read may come before
// the first write.
func IdempotencyPrefix(l shards.Layout) string { return "idempotency/" + l.ID().String() + "/" }

// IdempotencyKey returns the key of the stored result of the requests
// whose key, hashed with the agent's id, is h.
func IdempotencyKey(l shards.Layout, h digest.Hash) string { return IdempotencyPrefix(l) + h.String() }
