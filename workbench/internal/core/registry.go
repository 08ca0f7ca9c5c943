package core

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The tool registry.
//
// Every surface that serves or describes tools reads this one registry:
// Service.Call and ValidateInput, `cairn workbench` (its usage and its
// unknown-tool check), the HTTP routes of `cairn serve` and its metrics,
// the OpenAPI document, and MCP's tools/list and tools/call. An entry
// holds a tool's name, its one-line description, its input schema (the
// contract's, for the 18), the schema of its success result
// (result_schema.go), its behaviour annotations and its implementation.
//
// The 18 contract tools are declared in contractTools below, in the
// contract's order; each tool file installs its implementation from init
// with registerTool. A tool beyond the contract is added with Register,
// from an init function, and is then listed after the 18.

// Annotations are the hints a host reads before calling a tool (MCP's
// readOnlyHint, destructiveHint and idempotentHint). They describe the
// tool; they change nothing in how it runs.
type Annotations struct {
	// ReadOnly: the tool changes nothing a caller can observe.
	ReadOnly bool
	// Destructive: the tool may overwrite or end what exists, rather than
	// only add to it. Meaningful only when ReadOnly is false.
	Destructive bool
	// Idempotent: a repeat with the same arguments has no further effect.
	Idempotent bool
}

// ToolInfo describes one registered tool.
type ToolInfo struct {
	// Name is the tool's name: the route segment, the MCP tool name and
	// the command line's TOOL.
	Name string
	// Description is one line saying what the tool does.
	Description string
	// InputSchema is the JSON schema the tool validates its input with,
	// as canonical JSON (keys sorted, compact). It is a fresh copy.
	InputSchema json.RawMessage
	// ResultSchema is the JSON schema (draft 2020-12) of the tool's
	// success result, as canonical JSON; a failure is the error envelope
	// (ErrorEnvelopeSchema). It describes the result for clients (OpenAPI,
	// MCP's outputSchema); the tool's results are not checked against it
	// as it runs. It is a fresh copy.
	ResultSchema json.RawMessage
	// Annotations are the tool's behaviour hints.
	Annotations Annotations
}

// ToolSpec is a tool beyond the contract, for Register.
type ToolSpec struct {
	// Name: a lower-case letter, then lower-case letters, digits and
	// '_', at most 64 bytes; not a name already registered.
	Name string
	// Description: one line, not empty.
	Description string
	// InputSchema is a JSON schema the validator supports (the keywords
	// of the contract's schemas: allOf, anyOf, oneOf, type, enum,
	// required, properties, additionalProperties:false, items,
	// minLength, maxLength, the digest pattern, minimum, maximum,
	// maxItems, maxProperties) whose top level has "type":"object".
	InputSchema json.RawMessage
	// ResultSchema is the JSON schema of the tool's success result, for
	// clients only: any JSON schema whose top level has "type":"object".
	// Empty: an object whose status is "success", nothing more said.
	ResultSchema json.RawMessage
	// Annotations are the tool's behaviour hints.
	Annotations Annotations
	// Run runs the tool. input is the canonical text of arguments the
	// schema has accepted. The result must print through MarshalResult
	// as a JSON object; the Service sets its "status" member to
	// "success". An error that is a *Error is the call's error envelope;
	// any other error is mapped by FromError.
	Run func(ctx context.Context, s *Service, input json.RawMessage) (result any, err error)
}

// readOnly are the annotations of a tool that only reads.
var readOnly = Annotations{ReadOnly: true, Idempotent: true}

// contractTools are the contract's 18 tools in its order, with their
// descriptions and annotations. docs/workbench.md, section 1, says why
// each writer is annotated as it is.
var contractTools = []struct {
	name, description string
	annotations       Annotations
}{
	{"workbench_create", "Create a workbench with its five standard sections; repeating the same create succeeds.",
		Annotations{Idempotent: true}},
	{"workbench_put_file", "Write a whole file: create-only by default, replace-only with replace=true (never an upsert).",
		Annotations{Destructive: true}},
	{"workbench_append", "Append bytes to a file, creating it if missing; returns the new size and generation and the digest of the appended bytes.",
		Annotations{}},
	{"workbench_edit", "Replace an exact UTF-8 string in a text file (one match required unless replace_all=true); an identical result writes nothing.",
		Annotations{Destructive: true}},
	{"workbench_list", "List one directory level, a page at a time with a cursor, live or at a snapshot.",
		readOnly},
	{"workbench_stat", "Describe a file or directory (kind, size, generation, digest, content type) without reading its body, live or at a snapshot.",
		readOnly},
	{"workbench_read", "Read a file as structured JSON/YAML/text records or as base64 byte ranges; if_none_match skips an unchanged generation.",
		readOnly},
	{"workbench_grep", "Search file bodies for up to 16 case-insensitive literal patterns (not regular expressions), optionally filtered by a basename glob.",
		readOnly},
	{"workbench_search", "Query file metadata with predicates, sorting, projected fields and facets, in one workbench or across all of them.",
		readOnly},
	{"workbench_aggregate", "Count, sum, average, min or max file metadata, grouped, filtered and sorted, with a bounded number of groups.",
		readOnly},
	{"workbench_catalog", "List the metadata field ids and the query operators that search and aggregate accept.",
		readOnly},
	{"workbench_find", "Find workbenches by their committed state and by literal values in their run manifest.",
		readOnly},
	{"workbench_commit", "Commit a workbench's run manifest under a deterministic identity; an exact retry replays, a different head needs replace=true.",
		Annotations{Idempotent: true}},
	{"workbench_snapshot", "Take a leased point-in-time snapshot of a committed workbench, optionally named and annotated (7-day default lease, 90 days at most).",
		Annotations{}},
	{"workbench_snapshot_renew", "Extend a live snapshot's lease, by id or name; a lease is never shortened.",
		Annotations{}},
	{"workbench_snapshot_retire", "Retire a snapshot; the first success reports retired=true and a repeat reports retired=false.",
		Annotations{Destructive: true, Idempotent: true}},
	{"workbench_snapshot_list", "List snapshots with their state (alive, expired, retired or reaped), names, annotations and lease times.",
		readOnly},
	{"workbench_restore", "Restore paths of a snapshot into a new workbench, leaving the source unchanged; an exact retry converges.",
		Annotations{Idempotent: true}},
}

// contractToolNames are contractTools' names, in order.
func contractToolNames() []string {
	names := make([]string, len(contractTools))
	for i, t := range contractTools {
		names[i] = t.name
	}
	return names
}

// registeredTool is one entry of the registry.
type registeredTool struct {
	info   ToolInfo // InputSchema canonical; copied out by Tool
	schema *schemaNode
	run    tool // nil until the tool's implementation is installed
}

// registry holds every tool: the contract's 18 first, in its order, then
// the others by name.
var registry = newRegistry()

type toolRegistry struct {
	mu     sync.RWMutex
	order  []*registeredTool
	byName map[string]*registeredTool
}

func newRegistry() *toolRegistry {
	r := &toolRegistry{byName: map[string]*registeredTool{}}
	for _, t := range contractTools {
		e := &registeredTool{
			info: ToolInfo{
				Name: t.name, Description: t.description, Annotations: t.annotations,
				InputSchema: contract.raw[t.name], ResultSchema: resultSchemas.tools[t.name],
			},
			schema: contract.schemas[t.name],
		}
		r.order = append(r.order, e)
		r.byName[t.name] = e
	}
	return r
}

// lookup returns the entry of a tool.
func (r *toolRegistry) lookup(name string) (*registeredTool, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.byName[name]
	return e, ok
}

// implementation returns a tool's implementation, nil if none is
// installed.
func (r *toolRegistry) implementation(name string) tool {
	r.mu.RLock()
	defer r.mu.RUnlock()
	if e, ok := r.byName[name]; ok {
		return e.run
	}
	return nil
}

// install sets the implementation of a contract tool; a tool outside the
// registry, or installed twice, panics.
func (r *toolRegistry) install(name string, run tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.byName[name]
	if !ok {
		panic("workbench: implementation of unknown tool " + name)
	}
	if e.run != nil {
		panic("workbench: tool registered twice: " + name)
	}
	e.run = run
}

// Tools returns the names of the registered tools: the contract's 18 in
// its order (create, put_file, append, edit, list, stat, read, grep,
// search, aggregate, catalog, find, commit, snapshot, snapshot_renew,
// snapshot_retire, snapshot_list, restore), then any tool added with
// Register, by name. The result is a fresh copy.
func Tools() []string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	names := make([]string, len(registry.order))
	for i, e := range registry.order {
		names[i] = e.info.Name
	}
	return names
}

// Tool returns the description of a registered tool and whether it
// exists.
func Tool(name string) (ToolInfo, bool) {
	e, ok := registry.lookup(name)
	if !ok {
		return ToolInfo{}, false
	}
	info := e.info
	info.InputSchema = slices.Clone(info.InputSchema)
	info.ResultSchema = slices.Clone(info.ResultSchema)
	return info, true
}

// InputSchema returns the input schema of a tool as canonical JSON (keys
// sorted, compact), the object an MCP tools/list entry publishes, and
// whether the tool exists.
func InputSchema(name string) (json.RawMessage, bool) {
	info, ok := Tool(name)
	return info.InputSchema, ok
}

// maxToolName bounds a registered tool's name.
const maxToolName = 64

// Register adds a tool beyond the contract. It is meant for init
// functions: the surfaces read the registry as they start (`cairn serve`
// builds its MCP server on the first MCP request), so a tool registered
// later may be missing from them. Register panics on a spec it cannot
// serve (a bad name, an empty or multi-line description, a schema that
// is not JSON, not a "type":"object" schema or uses a keyword the
// validator does not support, a result schema given that is not a
// "type":"object" schema, a nil Run) and on a name already
// registered, the contract's included; nothing is registered then.
func Register(spec ToolSpec) {
	e, err := compileSpec(spec)
	if err != nil {
		panic(err)
	}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if _, dup := registry.byName[spec.Name]; dup {
		panic(fmt.Sprintf("workbench: register tool %q: a tool of that name is registered", spec.Name))
	}
	registry.byName[spec.Name] = e
	n := len(contractTools)
	i, _ := slices.BinarySearchFunc(registry.order[n:], spec.Name, func(t *registeredTool, name string) int {
		return strings.Compare(t.info.Name, name)
	})
	registry.order = slices.Insert(registry.order, n+i, e)
}

// compileSpec checks a ToolSpec and builds its registry entry.
func compileSpec(spec ToolSpec) (*registeredTool, error) {
	fail := func(format string, a ...any) error {
		return fmt.Errorf("workbench: register tool %q: "+format, append([]any{spec.Name}, a...)...)
	}
	if !validToolName(spec.Name) {
		return nil, fail("the name must be a lower-case letter, then lower-case letters, digits and '_', at most %d bytes", maxToolName)
	}
	if spec.Description == "" || strings.ContainsAny(spec.Description, "\r\n") {
		return nil, fail("the description must be one line, not empty")
	}
	if spec.Run == nil {
		return nil, fail("Run is nil")
	}
	v, err := DecodeArguments(spec.InputSchema)
	if err != nil {
		return nil, fail("input schema is not JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok || obj["type"] != "object" {
		return nil, fail(`input schema must be an object with "type":"object"`)
	}
	node, err := compileSchema(v, spec.Name)
	if err != nil {
		return nil, fail("input schema: %v", err)
	}
	raw, err := MarshalResult(v)
	if err != nil {
		return nil, fail("input schema: %v", err)
	}
	result := genericResultSchema
	if len(spec.ResultSchema) > 0 {
		if result, err = objectSchema(spec.ResultSchema); err != nil {
			return nil, fail("result schema: %v", err)
		}
	}
	name, run := spec.Name, spec.Run
	return &registeredTool{
		info:   ToolInfo{Name: name, Description: spec.Description, InputSchema: raw, ResultSchema: result, Annotations: spec.Annotations},
		schema: node,
		run: func(ctx context.Context, s *Service, args []byte) (any, *Error) {
			res, err := run(ctx, s, json.RawMessage(args))
			if werr := FromError(err); werr != nil {
				return nil, werr
			}
			obj, werr := resultObject(name, res)
			if werr != nil {
				return nil, werr
			}
			return succeeded(name, obj)
		},
	}, nil
}

// validToolName reports whether name is a lower-case letter followed by
// lower-case letters, digits and '_', at most maxToolName bytes: a safe
// route segment, MCP tool name and command-line argument.
func validToolName(name string) bool {
	if name == "" || len(name) > maxToolName || name[0] < 'a' || name[0] > 'z' {
		return false
	}
	for _, c := range []byte(name) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return false
		}
	}
	return true
}

// resultObject turns a registered tool's result into the object Call
// prints: its members as canonical JSON, to which Call adds status.
func resultObject(tool string, res any) (map[string]any, *Error) {
	b, err := MarshalResult(res)
	if err != nil {
		return nil, Internal(tool + ": marshal result: " + err.Error())
	}
	var members map[string]json.RawMessage
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &members) != nil {
		return nil, Internal(tool + ": the result is not a JSON object")
	}
	obj := make(map[string]any, len(members))
	for k, m := range members {
		obj[k] = m
	}
	return obj, nil
}
