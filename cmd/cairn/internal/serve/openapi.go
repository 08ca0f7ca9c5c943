package serve

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/cairnstore/cairn/workbench"
)

// openAPI builds the OpenAPI 3.1 document of the server from the tool
// registry: one route per tool of workbench.Tools, with the tool's own
// description and input schema (workbench.Tool), the schema the tool
// validates with, so the document cannot drift from what the server
// accepts.
// secured says whether the server requires bearer tokens; mcp whether it
// mounts an MCP endpoint (Options.MCP), whose route is documented only
// then, since without it the route answers RouteNotFound.
func openAPI(secured, mcp bool) []byte {
	envelopeRef := map[string]any{"$ref": "#/components/schemas/ErrorEnvelope"}
	errorResponse := func(desc string) map[string]any {
		return map[string]any{
			"description": desc,
			"content":     map[string]any{"application/json": map[string]any{"schema": envelopeRef}},
		}
	}
	agentParam := map[string]any{
		"name": "agent_id", "in": "path", "required": true,
		"description": "The agent whose deployment root /agents/{agent_id}/wb the tool serves.",
		"schema":      map[string]any{"type": "string", "minLength": 1},
	}
	keyParam := map[string]any{
		"name": "Idempotency-Key", "in": "header", "required": false,
		"description": "Binds the call to a stored result: a retry with the same key, tool and input replays it byte for byte; the same key with another tool or input is refused with 422.",
		"schema":      map[string]any{"type": "string", "minLength": 1, "maxLength": MaxIdempotencyKey, "pattern": "^[\\x20-\\x7e]+$"},
	}
	reqIDParam := map[string]any{
		"name": "X-Request-Id", "in": "header", "required": false,
		"description": "Echoed in the response and the server's log line; generated when absent.",
		"schema":      map[string]any{"type": "string", "maxLength": maxRequestID},
	}

	paths := map[string]any{}
	for _, tool := range workbench.Tools() {
		info, _ := workbench.Tool(tool)
		responses := map[string]any{
			"200": map[string]any{
				"description": "The tool's success result, exactly as workbench.Service.Call returns it.",
				"content": map[string]any{"application/json": map[string]any{"schema": map[string]any{
					"type": "object", "required": []string{"status"},
					"properties": map[string]any{"status": map[string]any{"const": "success"}},
				}}},
			},
		}
		for _, st := range []int{400, 404, 409, 410, 412, 413, 415, 422, 500, 501, 502, 503, 504} {
			responses[strconv.Itoa(st)] = errorResponse(http.StatusText(st) + ": the error envelope (see docs/api.md for the codes of each status).")
		}
		if secured {
			responses["401"] = errorResponse("A missing or wrong bearer token.")
			responses["429"] = errorResponse("Too many failed authentications from this address of late; retry after Retry-After.")
		}
		op := map[string]any{
			"operationId": tool,
			"summary":     "Run " + tool + " on its JSON input.",
			"description": info.Description,
			"parameters":  []any{agentParam, keyParam, reqIDParam},
			"requestBody": map[string]any{
				"required": false,
				"content":  map[string]any{"application/json": map[string]any{"schema": info.InputSchema}},
			},
			"responses": responses,
		}
		paths["/v1/agents/{agent_id}/tools/"+tool] = map[string]any{"post": op}
	}
	if mcp {
		paths["/v1/agents/{agent_id}/mcp"] = map[string]any{"post": mcpOperation(agentParam, errorResponse, secured)}
	}
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
	paths["/healthz"] = plain("The process is alive.", "Always, while the process serves.", "application/json")
	ready := plain("Every open agent's head validates.", "The bucket answers and every open shard's head validates.", "application/json")
	ready["get"].(map[string]any)["responses"].(map[string]any)["503"] = map[string]any{"description": "The bucket or a head failed; the body lists the failures to a caller on loopback or bearing a token."}
	paths["/readyz"] = ready
	paths["/metrics"] = plain("Prometheus metrics.", "The text exposition format.", "text/plain")
	paths["/openapi.json"] = plain("This document.", "The OpenAPI 3.1 document.", "application/json")

	doc := map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "cairn Workbench API",
			"version":     "1",
			"description": "The Workbench tools of cairn, one route per tool. Each route takes the tool's JSON input and returns its result, success or error envelope, as the tool does over MCP or the command line.",
		},
		"paths": paths,
		"components": map[string]any{
			"schemas": map[string]any{"ErrorEnvelope": map[string]any{
				"type":                 "object",
				"required":             []string{"status", "code", "message", "retryable", "details"},
				"additionalProperties": false,
				"properties": map[string]any{
					"status":    map[string]any{"const": "error"},
					"code":      map[string]any{"type": "string"},
					"message":   map[string]any{"type": "string"},
					"retryable": map[string]any{"type": "boolean"},
					"details":   map[string]any{"type": "object"},
				},
			}},
			"securitySchemes": map[string]any{"bearerAuth": map[string]any{
				"type": "http", "scheme": "bearer",
				"description": "One token per agent root. A server started without tokens listens on loopback only and asks for none.",
			}},
		},
	}
	if secured {
		doc["security"] = []any{map[string]any{"bearerAuth": []any{}}}
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic("serve: marshal OpenAPI document: " + err.Error())
	}
	return out
}

// mcpOperation is the POST of the MCP endpoint: one JSON-RPC 2.0 message
// of the streamable-HTTP transport, answered with one
// application/json body (docs/api.md, section MCP). Tool errors are
// results, and requests cairn does not serve are JSON-RPC errors; only
// what the server itself refuses before the endpoint (the agent, the
// token, the body's size) is the error envelope.
func mcpOperation(agentParam map[string]any, errorResponse func(string) map[string]any, secured bool) map[string]any {
	message := map[string]any{
		"type":        "object",
		"description": "A JSON-RPC 2.0 request or notification. Methods served: initialize (or server/discover), ping, tools/list and tools/call; the tools are the tool routes above, with the same input schemas.",
		"required":    []string{"jsonrpc", "method"},
		"properties": map[string]any{
			"jsonrpc": map[string]any{"const": "2.0"},
			"id":      map[string]any{"type": []string{"string", "integer"}},
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
		"404": errorResponse("An agent this server does not serve (the error envelope)."),
		"413": map[string]any{"description": "A body longer than the largest tool input plus the JSON-RPC framing, refused unread."},
		"415": map[string]any{"description": "A body that is not application/json."},
		"503": errorResponse("The server is shutting down (the error envelope)."),
	}
	if secured {
		responses["401"] = errorResponse("A missing or wrong bearer token.")
	}
	return map[string]any{
		"operationId": "mcp",
		"summary":     "The agent's MCP endpoint (streamable HTTP, stateless, no streaming).",
		"parameters":  []any{agentParam},
		"requestBody": map[string]any{
			"required": true,
			"content":  map[string]any{"application/json": map[string]any{"schema": message}},
		},
		"responses": responses,
	}
}
