// Package workbench serves the Workbench contract, the 18 agent-facing
// tools (workbench_create ... workbench_restore), on cairn's engine. This
// file describes the foundation every tool shares: input validation, the
// error envelope and result encoding, and ids and paths.
//
// # Validation
//
// A tool call's arguments are checked against the contract's frozen input
// schemas (schemas/input-schemas.json, embedded byte for byte) before the
// tool runs: ValidateInput. The validator is the reference's small subset
// of JSON Schema, in the reference's order and with its messages, so a
// schema failure is always InvalidArguments "<tool>: $.<field>: <reason>"
// with details {}, and a tool never sees schema-invalid input. An unknown
// tool is UnknownTool. Arguments are parsed by the reference parser's rules
// (last duplicate key wins; 1.0 and -0 are not integers). The Args
// accessors then apply the tools' shared argument rules: a member given as
// JSON null is exactly like an absent one.
//
// # Errors and results
//
// Every failure is an *Error, whose Envelope is exactly
// {"status":"error","code","message","retryable","details"}, details {}
// when empty. The constructors fix each code's retryable flag and detail
// keys. Errors from cairn's engine and object store become Workbench
// errors in one place, FromError; storage-side errors carry details.source
// "cairn" (Source). Success results are maps built by the tools, encoded by
// MarshalResult as the reference prints them: keys sorted, compact,
// strings escaped only where JSON requires, floats as "2.0" and "1e21".
// MarshalResultIndent gives the pretty layout of an MCP text result.
//
// # Ids and paths
//
// A workbench id is 1 to 128 bytes of ASCII letters, digits, '_' and '-',
// starting with a letter or digit (ParseWorkbenchID). Every relative path
// passes through one normalizer, NormalizePath, which rejects rather than
// repairs: no leading '/', no empty, "." or ".." component, no backslash or
// NUL, at most 4096 bytes and 64 components, UTF-8, and nothing rewritten.
// Tool paths are relative to one of the five sections (input, scripts,
// outputs, logs, metadata); the stored path is the section followed by the
// path (JoinSection), so it has at most 63 components of its own, and a path
// that repeats its section as first component is refused. Write tools
// cannot address metadata/run_manifest.json or
// metadata/restore_manifest.json (WritePath). Entries outside the sections
// are readable with section null (SplitSection).
//
// Returned paths are presentation paths, <root>/<id>/<section>/<path>,
// under the deployment's logical root (by convention /agents/{agent_id}/wb,
// NormalizeLogicalRoot). The root only shapes returned paths and manifest
// envelopes; it is never part of a storage key.
//
// Paths order as their storage keys do (ComparePaths, the order of
// shards.EncodePath): component by component as bytes, a shorter
// component first ("a/x" before "a-b/x"), and a directory's descendants
// before the directory's own exact path.
package workbench
