package serve

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/workbench"
)

// openAPI builds the OpenAPI 3.1 document of the server from the tool
// registry: one route per tool of workbench.Tools, with the tool's own
// description, input schema and result schema (workbench.Tool), the
// schema the tool validates with and the one its results are tested
// against, so the document cannot drift from what the server accepts and
// answers. Both go through docBuilder.schema first.
// secured says whether the server requires bearer tokens: then every
// operation but the public probes and this document requires one. mcp
// says whether it mounts an MCP endpoint (Options.MCP), whose route is
// documented only then, since without it the route answers RouteNotFound.
func openAPI(secured, mcp bool) []byte {
	d := newDocBuilder(secured)
	paths := map[string]any{}
	d.schemas["ErrorEnvelope"] = d.schema(workbench.ErrorEnvelopeSchema())
	for _, tool := range workbench.Tools() {
		info, _ := workbench.Tool(tool)
		result := schemaName(tool) + "Result"
		d.schemas[result] = d.schema(info.ResultSchema)
		paths["/v1/agents/{agent_id}/tools/"+tool] = map[string]any{"post": d.toolOperation(info, result)}
	}
	if mcp {
		paths["/v1/agents/{agent_id}/mcp"] = map[string]any{"post": mcpOperation(d)}
	}
	maps.Copy(paths, publicPaths())
	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "cairn Workbench API",
			"version":     "1",
			"description": "The Workbench tools of cairn, one route per tool. Each route takes the tool's JSON input and returns its result, success or error envelope, as the tool does over MCP or the command line.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": d.schemas,
			"securitySchemes": map[string]any{"bearerAuth": map[string]any{
				"type": "http", "scheme": "bearer",
				"description": "One token per agent root. A server started without tokens listens on loopback only and asks for none.",
			}},
		},
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("serve: marshal OpenAPI document: " + err.Error())
	}
	return out
}

// docBuilder holds what the operations of the document share, and its
// components' schemas.
type docBuilder struct {
	schemas                     map[string]any
	secured                     bool
	agentParam, keyParam, reqID map[string]any
	envelopeRef                 map[string]any
}

func newDocBuilder(secured bool) *docBuilder {
	return &docBuilder{
		secured:     secured,
		schemas:     map[string]any{},
		envelopeRef: map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"},
		agentParam: map[string]any{
			"name": "agent_id", "in": "path", "required": true,
			"description": "The agent whose deployment root /agents/{agent_id}/wb the tool serves.",
			"schema":      map[string]any{"type": "string", "minLength": 1},
		},
		keyParam: map[string]any{
			"name": "Idempotency-Key", "in": "header", "required": false,
			"description": "Binds the call to a stored result: a retry with the same key, tool and input replays it byte for byte; the same key with another tool or input is refused with 422.",
			"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKey, "pattern": "^[\\x20-\\x7e]+$"},
		},
		reqID: map[string]any{
			"name": "X-Request-Id", "in": "header", "required": false,
			"description": "Echoed in the response and the server's log line; generated when absent.",
			"schema":      map[string]any{"type": "string", "maxLength": maxRequestID},
		},
	}
}

// errorResponse is a response whose body is the error envelope.
func (d *docBuilder) errorResponse(desc string) map[string]any {
	return map[string]any{
		"description": desc,
		"content":     map[string]any{"application/json": map[string]any{"schema": d.envelopeRef}},
	}
}

// security is an operation's security requirement: the bearer token on a
// secured server, none otherwise.
func (d *docBuilder) security() []any {
	if d.secured {
		return []any{map[string]any{"bearerAuth": []any{}}}
	}
	return []any{}
}

// toolOperation is the POST of one tool's route: its input, its typed
// success result (components.schemas[result]) and the error envelope for
// every status a tool error maps to.
func (d *docBuilder) toolOperation(info workbench.ToolInfo, result string) map[string]any {
	responses := map[string]any{
		"200": map[string]any{
			"description": "The tool's success result, exactly as workbench.Service.Call returns it.",
			"content": map[string]any{"application/json": map[string]any{
				"schema": map[string]any{"$ref": "#/components/schemas/" + result},
			}},
		},
	}
	for _, st := range []int{400, 404, 409, 410, 412, 413, 415, 422, 500, 501, 502, 503, 504} {
		responses[strconv.Itoa(st)] = d.errorResponse(http.StatusText(st) + ": the error envelope (see docs/api.md for the codes of each status).")
	}
	if d.secured {
		responses["401"] = d.errorResponse("A missing or wrong bearer token.")
		responses["429"] = d.errorResponse("Too many failed authentications from this address of late; retry after Retry-After.")
	}
	return map[string]any{
		"operationId": info.Name,
		"summary":     "Run " + info.Name + " on its JSON input.",
		"description": info.Description,
		"parameters":  []any{d.agentParam, d.keyParam, d.reqID},
		"security":    d.security(),
		"requestBody": map[string]any{
			"required": false,
			"content":  map[string]any{"application/json": map[string]any{"schema": d.schema(info.InputSchema)}},
		},
		"responses": responses,
	}
}

// publicPaths are the routes every caller may GET, token or not.
func publicPaths() map[string]any {
	plain := func(summary, desc, ctype string) map[string]any {
		return map[string]any{"get": map[string]any{
			"summary":  summary,
			"security": []any{},
			"responses": map[string]any{"200": map[string]any{
				"description": desc,
				"content":     map[string]any{ctype: map[string]any{}},
			}},
		}}
	}
	ready := plain("Every open agent's head validates.", "The bucket answers and every open shard's head validates.", "application/json")
	ready["get"].(map[string]any)["responses"].(map[string]any)["503"] = map[string]any{"description": "The bucket or a head failed; the body lists the failures to a caller on loopback or bearing a token."}
	return map[string]any{
		"/healthz":      plain("The process is alive.", "Always, while the process serves.", "application/json"),
		"/readyz":       ready,
		"/metrics":      plain("Prometheus metrics.", "The text exposition format.", "text/plain"),
		"/openapi.json": plain("This document.", "The OpenAPI 3.1 document.", "application/json"),
	}
}

// schemaName is a tool's name as a schema name: workbench_snapshot_renew
// is WorkbenchSnapshotRenew.
func schemaName(tool string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(tool, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// schema is a registry schema as the document gives it, changed only in
// what code generators need and validation ignores:
//
//   - a type array of several types besides "null" ("type":["string",
//     "integer"]) becomes an anyOf of one schema per type, which the
//     generators take where they refuse the array; a type and null alone
//     (["string","null"]) stays, the 3.1 form of a nullable value;
//   - an integer with a minimum of 0 or more gets "format":"uint64",
//     without which generators type it as a signed 64-bit integer, too
//     small for a snapshot id; a number gets "format":"double";
//   - a subschema with a title moves to components.schemas under its
//     title, and a $ref takes its place, so that generated code names its
//     type (the title of two such subschemas names one schema).
//
// None changes what the schema accepts.
func (d *docBuilder) schema(raw json.RawMessage) any {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		panic("serve: a registry schema is not JSON: " + err.Error())
	}
	return d.hoist(forGenerators(v), true)
}

// forGenerators makes the first two changes of schema to v and to each of
// its subschemas.
func forGenerators(v any) any {
	x, ok := v.(map[string]any)
	if !ok {
		return v
	}
	mapSubschemas(x, forGenerators)
	var types []any
	switch t := x["type"].(type) {
	case string:
		types = []any{t}
	case []any:
		types = t
	}
	if len(slices.DeleteFunc(slices.Clone(types), func(t any) bool { return t == "null" })) > 1 {
		delete(x, "type")
		alts := make([]any, len(types))
		for i, t := range types {
			alts[i] = forGenerators(map[string]any{"type": t})
		}
		if other, ok := x["anyOf"]; ok {
			// Both must hold: the schema's own anyOf, and one of the types.
			x["allOf"] = append(slices.Clone(asList(x["allOf"])), map[string]any{"anyOf": other})
		}
		x["anyOf"] = alts
		types = nil
	}
	if min, ok := x["minimum"].(float64); ok && min >= 0 && x["format"] == nil && slices.Contains(types, "integer") {
		x["format"] = "uint64"
	}
	if x["format"] == nil && slices.Contains(types, "number") {
		x["format"] = "double"
	}
	return x
}

// hoist moves the titled subschemas of v to the document's components
// (the third change of schema); v itself stays where it is.
func (d *docBuilder) hoist(v any, root bool) any {
	x, ok := v.(map[string]any)
	if !ok {
		return v
	}
	mapSubschemas(x, func(sub any) any { return d.hoist(sub, false) })
	title, ok := x["title"].(string)
	if !ok || root {
		return x
	}
	if prev, dup := d.schemas[title]; dup && !reflect.DeepEqual(prev, x) {
		panic("serve: two different schemas are titled " + title)
	}
	d.schemas[title] = x
	return map[string]any{"$ref": "#/components/schemas/" + title}
}

// mapSubschemas replaces each subschema of the schema object x with f's
// answer for it.
func mapSubschemas(x map[string]any, f func(any) any) {
	for k, sub := range x {
		switch k {
		case "properties", "patternProperties", "$defs":
			if m, ok := sub.(map[string]any); ok {
				for name, p := range m {
					m[name] = f(p)
				}
			}
		case "items", "additionalProperties", "not", "contains", "if", "then", "else", "propertyNames":
			x[k] = f(sub)
		case "allOf", "anyOf", "oneOf", "prefixItems":
			if l, ok := sub.([]any); ok {
				for i := range l {
					l[i] = f(l[i])
				}
			}
		}
	}
}

// mcpOperation is the POST of the MCP endpoint: one JSON-RPC 2.0 message
// of the streamable-HTTP transport, answered with one
// application/json body (docs/api.md, section MCP). Tool errors are
// results, and requests cairn does not serve are JSON-RPC errors; only
// what the server itself refuses before the endpoint (the agent, the
// token, the body's size) is the error envelope.
func mcpOperation(d *docBuilder) map[string]any {
	message := map[string]any{
		"type":        "object",
		"description": "A JSON-RPC 2.0 request or notification. Methods served: initialize (or server/discover), ping, tools/list and tools/call; the tools are the tool routes above, with the same input schemas.",
		"required":    []string{"jsonrpc", "method"},
		"properties": map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"id":      map[string]any{"anyOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "integer"}}},
			"method":  map[string]any{"type": "string"},
			"params":  map[string]any{"type": "object"},
		},
	}
	jsonRPC := func(desc string) map[string]any {
		return map[string]any{
			"description": desc,
			"content":     map[string]any{"application/json": map[string]any{"schema": map[string]any{"type": "object"}}},
		}
	}
	responses := map[string]any{
		"200": jsonRPC("The JSON-RPC response. A tool's answer, success or error, is a tools/call result (isError true for an error); a method not served or bad params is a JSON-RPC error."),
		"202": map[string]any{"description": "A notification or a response, accepted; no body."},
		"400": jsonRPC("A body that is not JSON (-32700) or not a JSON-RPC 2.0 message (-32600), a request without the transport's Accept header, or an agent id that cannot form a root (the error envelope)."),
		"404": d.errorResponse("An agent this server does not serve (the error envelope)."),
		"413": map[string]any{"description": "A body longer than the largest tool input plus the JSON-RPC framing, refused unread."},
		"415": map[string]any{"description": "A body that is not application/json."},
		"503": d.errorResponse("The server is shutting down (the error envelope)."),
	}
	if d.secured {
		responses["401"] = d.errorResponse("A missing or wrong bearer token.")
	}
	return map[string]any{
		"operationId": "mcp",
		"summary":     "The agent's MCP endpoint (streamable HTTP, stateless, no streaming).",
		"parameters":  []any{d.agentParam},
		"security":    d.security(),
		"requestBody": map[string]any{
			"required": true,
			"content":  map[string]any{"application/json": map[string]any{"schema": message}},
		},
		"responses": responses,
	}
}

// asList is v as a JSON array, nil when it is none.
func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
