package mcpserve

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/workbench"
)

// CallFunc runs one Workbench tool on its JSON input for the agent the
// handler serves, returning the tool's JSON result and whether it is a
// success (workbench.Service.Call's shape).
type CallFunc func(ctx context.Context, tool string, input []byte) (result []byte, ok bool)

// Options tune a handler. The zero value serves a Service opened with the
// default Options.
type Options struct {
	// MaxBytes is the body limit of the Service behind the CallFunc
	// (workbench.Options.MaxBytes; zero or less: the default). The largest
	// request body accepted is the largest tool input such a Service
	// parses, plus FramingBytes.
	MaxBytes int64
}

// FramingBytes is what a request body may hold beyond the tool input: the
// JSON-RPC envelope, the method, the tool name, _meta.
const FramingBytes = 64 << 10

// BodyLimit is the largest request body a handler reads, for a Service
// of the given body limit (Options.MaxBytes): the largest tool input
// such a Service parses, plus FramingBytes.
func BodyLimit(maxBytes int64) int64 {
	return workbench.MaxInputBytes("workbench_edit", maxBytes) + FramingBytes
}

// serverName is the serverInfo name initialize reports.
const serverName = "cairn"

// Handler serves the MCP streamable-HTTP transport for one agent root.
func Handler(call CallFunc) http.Handler {
	return NewHandler(call, Options{})
}

// NewHandler is Handler with Options. It is cheap: every handler shares
// one MCP server, and the request carries its CallFunc in its context.
func NewHandler(call CallFunc, opts Options) http.Handler {
	limit := BodyLimit(opts.MaxBytes)
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sharedServer() }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: limit,
	})
	return front{sdk: sdk, call: call, limit: limit}
}

// sharedServer is the one MCP server of the process, built on first use
// from the tool registry (workbench.Tools): registering the 18 tools
// costs about 2 ms (the SDK decodes each schema), too much to pay per
// request when a server builds a handler per agent on demand. Its tools
// find the CallFunc in the request's context (the SDK hands the HTTP
// request's context values to tool handlers).
var sharedServer = sync.OnceValue(func() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: serverName, Version: version()}, &mcp.ServerOptions{
		// Tools only: the list never changes, and the server sends no log
		// messages.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	for _, name := range workbench.Tools() {
		info, _ := workbench.Tool(name)
		server.AddTool(&mcp.Tool{
			Name:         name,
			Description:  info.Description,
			InputSchema:  info.InputSchema,
			OutputSchema: outputSchema(info.ResultSchema),
			Annotations:  annotations(info.Annotations),
		}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return callTool(ctx, req.Params.Name, req.Params.Arguments), nil
		})
	}
	server.AddReceivingMiddleware(contractOrder, unknownTools)
	return server
})

// outputSchema is a tool's outputSchema in tools/list: its structured
// content is its success result or, in a result with isError, the error
// envelope, so the schema takes either. MCP wants "type":"object" at the
// top. The SDK checks neither side against it: a tool added with a raw
// handler (Server.AddTool) answers what it answers.
func outputSchema(result json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"anyOf":[`)
	b.Write(result)
	b.WriteByte(',')
	b.Write(workbench.ErrorEnvelopeSchema())
	b.WriteString(`],"description":"The tool's success result; with isError, the error envelope.","type":"object"}`)
	return b.Bytes()
}

// annotations are a tool's behaviour hints as tools/list gives them. All
// three are given, so that a host does not fall back on MCP's defaults
// (a tool that is not read-only is destructive unless it says not).
func annotations(a workbench.Annotations) *mcp.ToolAnnotations {
	destructive := a.Destructive
	return &mcp.ToolAnnotations{
		ReadOnlyHint:    a.ReadOnly,
		DestructiveHint: &destructive,
		IdempotentHint:  a.Idempotent,
	}
}

// callKey is the context key of the request's CallFunc.
type callKey struct{}

// callTool runs one tool and frames its answer as the reference's MCP
// sidecar does: the pretty text, the result as structured content, and
// isError on a failure.
func callTool(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	if len(args) == 0 || string(args) == "null" {
		// MCP makes arguments optional; a tool without them is called with
		// none, as the command line calls a tool on empty input.
		args = json.RawMessage("{}")
	}
	var result []byte
	var ok bool
	if call, found := ctx.Value(callKey{}).(CallFunc); found {
		result, ok = call(ctx, name, args)
	} else {
		// Unreachable while the SDK passes the request's context values
		// on; the tests would fail first.
		result, _ = workbench.MarshalResult(workbench.Internal("mcpserve: the request carries no tool runner").Envelope())
	}
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, result, "", "  "); err != nil {
		// A CallFunc answers canonical JSON; anything else is a bug
		// behind it, reported as a tool error rather than a broken frame.
		result, _ = workbench.MarshalResult(workbench.Internal(fmt.Sprintf("mcpserve: %s answered a result that is not JSON: %v", name, err)).Envelope())
		pretty.Reset()
		_ = json.Indent(&pretty, result, "", "  ")
		ok = false
	}
	return &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: pretty.String()}},
		StructuredContent: json.RawMessage(result),
		IsError:           !ok,
	}
}

// contractOrder lists the tools in the registry's order (the contract's
// for its 18): the SDK lists a server's tools sorted by name. They fit in
// the SDK's one page.
func contractOrder(next mcp.MethodHandler) mcp.MethodHandler {
	order := workbench.Tools()
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
			slices.SortStableFunc(list.Tools, func(a, b *mcp.Tool) int {
				return slices.Index(order, a.Name) - slices.Index(order, b.Name)
			})
		}
		return res, err
	}
}

// unknownTools answers a tools/call of a name that is not a tool as the
// tool error UnknownTool, as the CallFunc reports it; the SDK would make
// it a JSON-RPC error.
func unknownTools(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		params, ok := req.GetParams().(*mcp.CallToolParamsRaw)
		if !ok || params == nil {
			return next(ctx, method, req)
		}
		if _, known := workbench.Tool(params.Name); known {
			return next(ctx, method, req)
		}
		return callTool(ctx, params.Name, params.Arguments), nil
	}
}

// ServerVersion is the version serverInfo reports. The binary sets it,
// before the first request, to its own version (`cairn version`); left
// empty, it is the module version from the build info.
var ServerVersion string

// version is the version serverInfo reports.
func version() string {
	if ServerVersion != "" {
		return ServerVersion
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "(devel)"
}
