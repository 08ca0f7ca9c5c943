// Package mcpserve serves the Workbench tools of one agent root over MCP,
// the streamable-HTTP transport (a JSON-RPC request POSTed, its response
// returned as application/json). `cairn serve` mounts the handler at
// /v1/agents/{agent_id}/mcp behind its own authentication; this package
// knows nothing of agents, buckets or tokens: it is given a CallFunc that
// runs one tool for the agent it serves.
//
// # Methods
//
// initialize, ping, tools/list and tools/call. tools/list names the tools
// of the registry (workbench.Tools: the contract's 18 in its order, then
// any added with workbench.Register), each with what workbench.Tool says
// of it: the input schema the tool validates with, a one-line description
// and its annotations (readOnlyHint, destructiveHint, idempotentHint).
// tools/call hands the arguments object to the CallFunc as the bytes the
// client sent, so a number keeps its text (a snapshot id above 2^53 stays
// exact).
//
// # Results
//
// A tool's answer, success or error, is a normal tools/call result: one
// text content holding the result laid out with two-space indentation,
// structuredContent holding the result itself, and isError true when the
// tool failed. A tool error is never a JSON-RPC error: JSON-RPC errors are
// kept for requests that are not MCP (parse errors, unknown methods, bad
// params). A name that is not a tool and arguments that are not an object
// are the tool errors UnknownTool and InvalidArguments, as the CallFunc
// reports them. Absent or null arguments are {}.
//
// # State
//
// The handler is stateless: it issues no Mcp-Session-Id and keeps nothing
// between requests, so any replica can answer any request. It does not
// stream: GET and DELETE are 405. A request body longer than the largest
// tool input plus the JSON-RPC framing is refused with 413 before it is
// parsed.
//
// Every handler shares one MCP server, built on first use, and a request
// carries its handler's CallFunc in its context; building a handler per
// agent, or per request, costs a few hundred nanoseconds.
//
// The transport itself is the Go MCP SDK's (docs/dependencies.md says
// why); front.go and the two middlewares in mcpserve.go are where cairn
// departs from the SDK's defaults to match the reference.
package mcpserve
