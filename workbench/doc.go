// Package workbench serves the Workbench contract, the 18 agent-facing
// tools (workbench_create ... workbench_restore), on cairn's engine:
// input validation, the error envelope and result encoding, ids and paths,
// publication and reads, and the change feed (ReadChanges), which is not
// a tool. The durable records it reads and writes are
// package workbench/internal/nokv's. docs/workbench.md maps each tool to its
// families and commands.
//
// # Tools
//
// One registry (internal/core/registry.go) holds every tool: name, one-line
// description, input schema, result schema, annotations (read-only,
// destructive, idempotent) and implementation. Tools, Tool, InputSchema
// and ResultSchema read it; Call, the command line, the HTTP server, its
// OpenAPI document and MCP serve what it holds. The result schemas
// (schemas/result-schemas.json, with ErrorEnvelopeSchema) describe each
// tool's success result for clients: OpenAPI's 200 answers and MCP's
// outputSchema; the tests check every result variant against them. The
// contract's 18 come first, in its order; Register adds a tool beyond
// them, from an init function.
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
// (last duplicate key wins; 1.0 and -0 are not integers). A tool then
// gets them decoded once into its own input type, where a member given as
// JSON null is exactly like an absent one, and that type's resolve
// applies the rules the schema cannot express, before any storage is read
// (internal/core/input.go).
//
// # Errors and results
//
// Every failure is an *Error, whose Envelope is exactly
// {"status":"error","code","message","retryable","details"}, details {}
// when empty. The constructors fix each code's retryable flag and detail
// keys. Errors from cairn's engine and object store become Workbench
// errors in one place, FromError; storage-side errors carry details.source
// "cairn" (Source). Success results are typed: each tool returns its own
// result struct (CreateResult, PutFileResult, ...), which embeds Success,
// encoded by MarshalResult as the reference prints them: keys sorted,
// compact, strings escaped only where JSON requires, floats as "2.0" and
// "1e21". MarshalResultIndent gives the pretty layout of an MCP text
// result.
//
// # The typed API
//
// Every tool has a method of the same name taking its Go input and
// returning its typed result, with a *Error as the error: Create, PutFile,
// Append, Edit, List, Stat, Read, Grep, Search, Aggregate, Catalog, Find,
// Commit, Snapshot, SnapshotRenew, SnapshotRetire, SnapshotList, Restore.
// Its input goes through the path Call's does (the schema, the input's
// checks, the tool; internal/core/typed.go), so a typed call and a JSON call of the same
// arguments answer alike; a string that is not valid UTF-8, which JSON
// cannot carry, is refused. Call is the adapter the HTTP server, MCP and
// the command line use.
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
// path (JoinSection), so it has at most 63 components of its own (over
// that, the storage side's InvalidState, after the tool's other argument
// checks), and a path that repeats its section as first component is
// refused. Write tools
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
//
// # Publication
//
// workbench_put_file, workbench_append and workbench_edit make a body
// visible object first, metadata last (package publish stages the body through
// package manifests/bodies, which owns the block objects and ledgers;
// and runs the command). A call draws a fresh
// revision id and operation id; writes a staging ledger naming every block
// it may upload (bodies.StagingKey of the operation, create-only,
// canonical JSON "cairn.staging_ledger.v1"); uploads the blocks of
// Options.BlockSize bytes create-only and in parallel
// (bodies.BlockKey of the RootId, the revision and the index); and
// then runs one engine command. The command checks every predicate against
// its snapshot and writes, all at once, the ArtifactRevision, its
// ArtifactManifest rows, the PathCurrent entry, the strong references
// (RevisionRef, with a GcCandidate for a replaced revision left without
// any), one StagedObject row per block, the Publish Operation row, the
// workspace revision and a ChangeEvent. put_file and append create a
// missing workbench in the same command.
//
// After the command lands the ledger object is deleted: the StagedObject
// rows own the blocks. After a predicate failure nothing was applied and
// the blocks, then the ledger, are deleted. After any other failure
// (unknown outcome, contention, an unavailable store, a cancelled call, a
// crash) everything uploaded stays in the bucket, named by the ledger,
// until a sweep (package gcsweep, cairn gc) finds it older than its grace
// period. A publication sends its command within MaxStagingAge of its
// first upload or not at all, so that a block is named by a landing root
// well within the sweep's grace. An unknown outcome is settled by running the
// same command again with the same request id, up to three times: the
// engine replays it if it landed and applies it once if it did not.
//
// Every write is conditional on what the call observed: create-only
// (put_file replace=false), replace-if-generation (put_file replace=true,
// edit) or extend-if-generation (append). A lost check is a retryable
// Conflict with conflict "Generation". put_file reports it; edit reads
// again and re-applies its replacement (5 attempts in all); append
// observes again and retries with the blocks it already uploaded (64
// attempts in all). An append reuses the base revision's blocks and holds
// one RevisionDependency reference on each distinct owner of a reused
// block; when the new revision would depend on more than
// MaxDependencyOwners owners or be deeper than MaxDependencyDepth, it
// writes the whole body again as its own blocks instead.
//
// # Reads
//
// Every read pins one snapshot (one read of the engine's head) and sees
// one version. stat, list and read go through a view of one Visible
// workbench (internal/core/view.go); search, aggregate and catalog read the PathCurrent
// rows of their scope, not SecondaryIndex rows (package query); grep lists its
// candidates in one scan and reads their bodies a few ahead. A body is
// read whole: its manifest rows, then their blocks in parallel, each
// slice checked against its row's digest and the whole against the body
// digest. A bytes read fetches only the blocks that hold its range, each
// checked against its row. A body larger than Options.MaxBytes is ResourceExhausted before
// any block is fetched. Engine objects are immutable and cached once
// decoded, so a warm stat, list or query costs the one head read, and a
// warm read the head read and the body's blocks.
//
// Continuations never mix versions: a list or grep cursor fails
// ReadFenceChanged after any write to its workbench, a search cursor after
// any commit to the shard. Reads at a snapshot (at_snapshot) resolve the
// snapshot at the live head and run the same view code over the root the
// snapshot holds (internal/core/snapshot_view.go).
//
// # Snapshots
//
// A snapshot is an engine hold on the root its mint command pinned,
// recorded as SnapshotRef, HistoryHold and SnapshotAlias rows
// (package snapshots). Leases are judged against the root's persisted lease
// clock and ended by a reaper that waits out a clock-skew grace and any
// clock regression (snapshot_lease.go).
//
// # Packages
//
// This package is the facade: Service, Open, the typed methods (api.go)
// and aliases of the names callers use (exports.go). The work is done
// under internal/, one package per feature over one core: core (the
// Service's state, the registry, inputs, errors, results, paths, views,
// cursors), publish (staging and the publication command), files
// (create, put_file, append, edit), reads (stat, list, read, grep), query
// (search, aggregate, catalog), history (commit, find, the change feed,
// restore, retiring commits), snapshots (the four snapshot tools, leases,
// the reaper) and maintenance (fsck, the collection of revisions, what a
// sweep and a pin need). docs/packages.md says what each may import.
package workbench
