// Package serve is the HTTP server of `cairn serve`: the Workbench tools
// of many agent roots, over one bucket, for any number of stateless
// replicas. docs/api.md is its user's guide; this says what the package
// owns and where its edges are.
//
// # Agents
//
// Each agent id is its own deployment root and logical shard, served by
// its own workbench.Service, opened on the first request for it (which
// makes no bucket request) and closed once no request has used it for
// Options.IdleTimeout. A request holds its agent from authentication to
// its last byte, so an agent with a request in flight is never closed; a
// request arriving as an idle agent closes opens a fresh Service, as any
// number may serve one root.
//
// # Results and statuses
//
// A tool route answers exactly the bytes workbench.Service.Call returns.
// The status comes from the envelope's code through one table (Status),
// and a retryable envelope adds Retry-After. The server's own refusals
// (routes, methods, media types, tokens, idempotency keys) are envelopes
// too, with codes of their own.
//
// # Idempotency
//
// A call with an Idempotency-Key is bound to a record in the bucket,
// beside its agent's shard: created create-only as the claim of the one
// request that runs, replaced conditionally with the result. The tool's
// engine commands run under request ids derived from the key
// (workbench.WithRequestID), so a request that takes over the key of one
// that died after its commit replays the commit instead of applying it
// again. A key's records are never deleted by this package.
//
// # Edges
//
// Tokens are compared as SHA-256 digests in constant time; nothing logs a
// token or a body. Metrics are written by hand in the Prometheus text
// format; the engine's counters of an agent closed for idleness are kept
// so that counters never go back. The package does not listen: the
// caller (cmd/cairn) owns the listener, the loopback rule for a server
// without tokens, signals and the graceful shutdown, and closes the
// Server after the HTTP server has drained.
package serve
