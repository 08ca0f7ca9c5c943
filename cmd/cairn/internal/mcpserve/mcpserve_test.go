package mcpserve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/mcpserve"
	"github.com/cairnstore/cairn/workbench"
)

// openService opens a Workbench Service for agent "mcp" on b.
func openService(t *testing.T, b bucket.Bucket) *workbench.Service {
	t.Helper()
	s, err := workbench.Open(context.Background(), b, workbench.Options{AgentID: "mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// serve starts the MCP handler over call on loopback.
func serve(t *testing.T, call mcpserve.CallFunc) string {
	t.Helper()
	srv := httptest.NewServer(mcpserve.Handler(call))
	t.Cleanup(srv.Close)
	return srv.URL
}

// response is one HTTP answer to a JSON-RPC request.
type response struct {
	status int
	header http.Header
	body   []byte
}

// post sends one JSON-RPC message as an MCP client does.
func post(t *testing.T, url, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

// rpcAnswer is a JSON-RPC response, its result kept raw.
type rpcAnswer struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// rpc posts a request and returns its JSON-RPC answer; the HTTP status
// must be 200.
func rpc(t *testing.T, url, body string) rpcAnswer {
	t.Helper()
	r := post(t, url, body)
	if r.status != http.StatusOK {
		t.Fatalf("POST %s: status %d: %s", body, r.status, r.body)
	}
	var a rpcAnswer
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatalf("answer %s: %v", r.body, err)
	}
	return a
}

// toolResult is a tools/call result, structuredContent kept raw.
type toolResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent"`
	IsError           *bool           `json:"isError"`
}

// callTool runs one tools/call and returns its result; a JSON-RPC error
// fails the test.
func callTool(t *testing.T, url, tool, args string) toolResult {
	t.Helper()
	a := rpc(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":%q,"arguments":%s}}`, tool, args))
	if a.Error != nil {
		t.Fatalf("%s: JSON-RPC error %d %s", tool, a.Error.Code, a.Error.Message)
	}
	var r toolResult
	if err := json.Unmarshal(a.Result, &r); err != nil {
		t.Fatalf("%s: result %s: %v", tool, a.Result, err)
	}
	return r
}

// canonical is the canonical text of a JSON value, so two encodings of
// one value compare equal.
func canonical(t *testing.T, raw []byte) string {
	t.Helper()
	b, err := workbench.MarshalResult(json.RawMessage(raw))
	if err != nil {
		t.Fatalf("canonical %s: %v", raw, err)
	}
	return string(b)
}

// checkFramed checks that r frames want (a CallFunc result) as the
// reference does: one text content with the pretty form, the result as
// structured content, isError exactly when the call failed.
func checkFramed(t *testing.T, r toolResult, want []byte, ok bool) {
	t.Helper()
	pretty, err := workbench.MarshalResultIndent(json.RawMessage(want))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("content = %+v, want one text", r.Content)
	}
	if got := r.Content[0].Text; got != string(pretty) {
		t.Errorf("text =\n%s\nwant\n%s", got, pretty)
	}
	if got, want := canonical(t, r.StructuredContent), canonical(t, want); got != want {
		t.Errorf("structuredContent = %s, want %s", got, want)
	}
	if ok && r.IsError != nil {
		t.Errorf("a success carries isError %v, want it absent", *r.IsError)
	}
	if !ok && (r.IsError == nil || !*r.IsError) {
		t.Errorf("an error result has isError %v, want true", r.IsError)
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}`

func TestInitializeIsStateless(t *testing.T) {
	url := serve(t, openService(t, mem.NewBucket()).Call)
	r := post(t, url, initialize)
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if id := r.header.Get("Mcp-Session-Id"); id != "" {
		t.Errorf("Mcp-Session-Id = %q, want none (stateless)", id)
	}
	var a struct {
		Result struct {
			ProtocolVersion string `json:"protocolVersion"`
			ServerInfo      struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.Unmarshal(r.body, &a); err != nil {
		t.Fatal(err)
	}
	if got, want := a.Result.ProtocolVersion, "2025-03-26"; got != want {
		t.Errorf("protocolVersion = %q, want %q", got, want)
	}
	if got, want := a.Result.ServerInfo.Name, "cairn"; got != want {
		t.Errorf("serverInfo.name = %q, want %q", got, want)
	}
	if _, ok := a.Result.Capabilities["tools"]; !ok {
		t.Errorf("capabilities %v lack tools", a.Result.Capabilities)
	}
	// A version the server does not speak gets one it does, which it then
	// echoes.
	var other struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	a2 := rpc(t, url, strings.Replace(initialize, "2025-03-26", "1999-01-01", 1))
	if err := json.Unmarshal(a2.Result, &other); err != nil || other.ProtocolVersion == "" || other.ProtocolVersion == "1999-01-01" {
		t.Errorf("initialize with an unknown version: %s", a2.Result)
	}
	offered := other.ProtocolVersion
	if err := json.Unmarshal(rpc(t, url, strings.Replace(initialize, "2025-03-26", offered, 1)).Result, &other); err != nil || other.ProtocolVersion != offered {
		t.Errorf("initialize with %q answers %q (%v), want it echoed", offered, other.ProtocolVersion, err)
	}
	if a := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); a.Error != nil || canonical(t, a.Result) != "{}" {
		t.Errorf("ping = %s %+v, want {}", a.Result, a.Error)
	}
}

func TestToolsListIsTheContract(t *testing.T) {
	url := serve(t, openService(t, mem.NewBucket()).Call)
	a := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
		NextCursor string `json:"nextCursor"`
	}
	if err := json.Unmarshal(a.Result, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
		want, ok := workbench.InputSchema(tool.Name)
		if !ok {
			t.Errorf("tools/list names %q, not a tool", tool.Name)
			continue
		}
		if got := canonical(t, tool.InputSchema); got != string(want) {
			t.Errorf("%s: inputSchema =\n%s\nwant\n%s", tool.Name, got, want)
		}
		if strings.TrimSpace(tool.Description) == "" || strings.Contains(tool.Description, "\n") {
			t.Errorf("%s: description %q, want one non-empty line", tool.Name, tool.Description)
		}
	}
	if want := workbench.Tools(); !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
	if list.NextCursor != "" {
		t.Errorf("nextCursor = %q, want one page", list.NextCursor)
	}
}

// TestToolsListOutputSchema: every tool in tools/list has an
// outputSchema, an object schema that takes the tool's success result
// (workbench.ResultSchema) or the error envelope; what tools/call answers
// as structured content validates against it, success or error, and a
// result missing a member does not.
func TestToolsListOutputSchema(t *testing.T) {
	url := serve(t, openService(t, mem.NewBucket()).Call)
	a := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name         string          `json:"name"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(a.Result, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(workbench.Tools()) {
		t.Fatalf("%d tools listed, want %d", len(list.Tools), len(workbench.Tools()))
	}
	schemas := map[string]*jsonschema.Resolved{}
	for _, tool := range list.Tools {
		var s struct {
			Type  string            `json:"type"`
			AnyOf []json.RawMessage `json:"anyOf"`
		}
		if err := json.Unmarshal(tool.OutputSchema, &s); err != nil || s.Type != "object" || len(s.AnyOf) != 2 {
			t.Errorf("%s: outputSchema %s", tool.Name, tool.OutputSchema)
			continue
		}
		result, _ := workbench.ResultSchema(tool.Name)
		if canonical(t, s.AnyOf[0]) != string(result) || canonical(t, s.AnyOf[1]) != string(workbench.ErrorEnvelopeSchema()) {
			t.Errorf("%s: outputSchema takes %s", tool.Name, tool.OutputSchema)
		}
		var js jsonschema.Schema
		if err := json.Unmarshal(tool.OutputSchema, &js); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		r, err := js.Resolve(nil)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		schemas[tool.Name] = r
	}
	validate := func(tool string, raw []byte) error {
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		return schemas[tool].Validate(v)
	}
	for _, c := range []struct{ tool, args string }{
		{"workbench_create", `{"id":"wb"}`},
		{"workbench_create", `{"id":"not an id"}`},
		{"workbench_list", `{"id":"wb"}`},
		{"workbench_list", `{"id":"ghost"}`},
		{"workbench_snapshot_list", `{"id":"wb"}`},
		{"workbench_read", `{"id":"wb","section":"outputs","path":"missing"}`},
	} {
		r := callTool(t, url, c.tool, c.args)
		if err := validate(c.tool, r.StructuredContent); err != nil {
			t.Errorf("%s %s: %v\n%s", c.tool, c.args, err, r.StructuredContent)
		}
	}
	r := callTool(t, url, "workbench_create", `{"id":"wb"}`)
	var m map[string]any
	if err := json.Unmarshal(r.StructuredContent, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "sections")
	b, _ := json.Marshal(m)
	if err := validate("workbench_create", b); err == nil {
		t.Errorf("a create result without sections validates: %s", b)
	}
}

// TestToolsListAnnotations: each tool's description and annotations are
// the registry's, all three hints given, so that a host does not fall
// back on MCP's defaults (destructive unless said otherwise).
func TestToolsListAnnotations(t *testing.T) {
	url := serve(t, openService(t, mem.NewBucket()).Call)
	a := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Annotations json.RawMessage `json:"annotations"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(a.Result, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(workbench.Tools()) {
		t.Fatalf("%d tools listed, want %d", len(list.Tools), len(workbench.Tools()))
	}
	got := map[string]string{}
	for _, tool := range list.Tools {
		info, _ := workbench.Tool(tool.Name)
		if tool.Description != info.Description {
			t.Errorf("%s: description %q, want the registry's %q", tool.Name, tool.Description, info.Description)
		}
		h := info.Annotations
		want := fmt.Sprintf(`{"destructiveHint":%v,"idempotentHint":%v,"readOnlyHint":%v}`, h.Destructive, h.Idempotent, h.ReadOnly)
		if got[tool.Name] = canonical(t, tool.Annotations); got[tool.Name] != want {
			t.Errorf("%s: annotations %s, want %s", tool.Name, got[tool.Name], want)
		}
	}
	for name, want := range map[string]string{
		"workbench_read":            `{"destructiveHint":false,"idempotentHint":true,"readOnlyHint":true}`,
		"workbench_put_file":        `{"destructiveHint":true,"idempotentHint":false,"readOnlyHint":false}`,
		"workbench_snapshot_retire": `{"destructiveHint":true,"idempotentHint":true,"readOnlyHint":false}`,
	} {
		if got[name] != want {
			t.Errorf("%s: annotations %s, want %s", name, got[name], want)
		}
	}
}

func TestToolsCallIsServiceCall(t *testing.T) {
	b := mem.NewBucket()
	url := serve(t, openService(t, b).Call)
	direct := openService(t, b) // a second replica on the same root

	steps := []struct{ tool, args string }{
		{"workbench_create", `{"id":"wb1"}`},
		{"workbench_put_file", `{"id":"wb1","section":"outputs","path":"notes/a.json","text":"{\"n\":1,\"s\":\"<&>\"}"}`},
	}
	for _, s := range steps {
		r := callTool(t, url, s.tool, s.args)
		if r.IsError != nil {
			t.Fatalf("%s: %s", s.tool, r.Content[0].Text)
		}
	}
	for _, read := range []struct{ tool, args string }{
		{"workbench_read", `{"id":"wb1","section":"outputs","path":"notes/a.json"}`},
		{"workbench_read", `{"id":"wb1","section":"outputs","path":"notes/a.json","format":"bytes"}`},
		{"workbench_stat", `{"id":"wb1","section":"outputs","path":"notes"}`},
		{"workbench_list", `{"id":"wb1","section":"outputs"}`},
	} {
		want, ok := direct.Call(context.Background(), read.tool, []byte(read.args))
		if !ok {
			t.Fatalf("%s %s directly: %s", read.tool, read.args, want)
		}
		checkFramed(t, callTool(t, url, read.tool, read.args), want, true)
	}
}

func TestToolErrorIsAResult(t *testing.T) {
	s := openService(t, mem.NewBucket())
	url := serve(t, s.Call)
	for _, c := range []struct {
		name, tool, args, code string
	}{
		{"missing workbench", "workbench_read", `{"id":"nope","section":"outputs","path":"a"}`, ""},
		{"schema violation", "workbench_list", `{"id":"wb1","section":"outputs","limit":0}`, "InvalidArguments"},
		{"arguments an array", "workbench_create", `[1,2]`, "InvalidArguments"},
		{"arguments a string", "workbench_create", `"wb1"`, "InvalidArguments"},
		{"arguments absent", "workbench_create", `null`, "InvalidArguments"}, // {} lacks the required id
		{"unknown tool", "workbench_nope", `{}`, "UnknownTool"},
		{"unknown tool, bad arguments", "rm -rf", `[]`, "UnknownTool"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := callTool(t, url, c.tool, c.args)
			input := c.args
			if input == "null" {
				input = "{}"
			}
			want, ok := s.Call(context.Background(), c.tool, []byte(input))
			if ok {
				t.Fatalf("%s %s succeeds directly: %s", c.tool, c.args, want)
			}
			checkFramed(t, r, want, false)
			var env struct {
				Status, Code string
				Retryable    *bool
				Details      map[string]any
			}
			if err := json.Unmarshal(r.StructuredContent, &env); err != nil {
				t.Fatal(err)
			}
			if env.Status != "error" || env.Code == "" || env.Retryable == nil || env.Details == nil {
				t.Errorf("structuredContent %s is not the error envelope", r.StructuredContent)
			}
			if c.code != "" && env.Code != c.code {
				t.Errorf("code = %s, want %s", env.Code, c.code)
			}
		})
	}
}

// echo is a CallFunc that records its input and answers it as the result.
type echo struct {
	mu     sync.Mutex
	inputs []string
}

func (e *echo) call(_ context.Context, tool string, input []byte) ([]byte, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.inputs = append(e.inputs, string(input))
	return input, true
}

func TestArgumentsReachTheToolUnchanged(t *testing.T) {
	e := &echo{}
	url := serve(t, e.call)
	args := []string{
		`{"id":"wb1","snapshot_id":18446744073709551615,"n":9007199254740993,"f":1.50,"e":1E+2,"s":"\u00e9<"}`,
		"{ \"id\" : \"wb1\",\n \"deep\": {\"n\": [12345678901234567890123]} }",
		`{}`,
	}
	for _, a := range args {
		r := callTool(t, url, "workbench_snapshot_renew", a)
		// The echoed result is the input: its numbers keep their text on
		// the way back too.
		for _, n := range []string{"18446744073709551615", "9007199254740993", "12345678901234567890123"} {
			if strings.Contains(a, n) && !bytes.Contains(r.StructuredContent, []byte(n)) {
				t.Errorf("structuredContent %s lost %s", r.StructuredContent, n)
			}
		}
	}
	callTool(t, url, "workbench_create", `null`)
	r := post(t, url, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"workbench_create"}}`)
	if r.status != http.StatusOK {
		t.Fatalf("call without arguments: %d %s", r.status, r.body)
	}
	want := append(args, `{}`, `{}`)
	if !reflect.DeepEqual(e.inputs, want) {
		t.Errorf("inputs =\n%q\nwant\n%q", e.inputs, want)
	}
}

func TestPrettyTextIsTheReferenceLayout(t *testing.T) {
	// Canonical, as Service.Call answers: U+2028 and <>& are raw.
	result := "{\"a\":[],\"b\":{},\"c\":[1,{\"d\":\"x\\n\\\"<>&\u2028\"}],\"e\":18446744073709551615,\"f\":2.0,\"status\":\"success\"}"
	url := serve(t, func(context.Context, string, []byte) ([]byte, bool) { return []byte(result), true })
	checkFramed(t, callTool(t, url, "workbench_stat", `{}`), []byte(result), true)
}

func TestReplicasNeedNoSession(t *testing.T) {
	b := mem.NewBucket()
	one := serve(t, openService(t, b).Call)
	two := serve(t, openService(t, b).Call)
	if a := rpc(t, one, initialize); a.Error != nil {
		t.Fatal(a.Error.Message)
	}
	// The next requests go to the other replica, and to the first again,
	// as a load balancer may send them.
	if r := callTool(t, two, "workbench_create", `{"id":"wb1"}`); r.IsError != nil {
		t.Fatal(r.Content[0].Text)
	}
	if r := callTool(t, one, "workbench_put_file", `{"id":"wb1","section":"outputs","path":"a.txt","text":"hi"}`); r.IsError != nil {
		t.Fatal(r.Content[0].Text)
	}
}

func TestProtocolErrors(t *testing.T) {
	e := &echo{}
	url := serve(t, e.call)
	for _, c := range []struct {
		name, body string
		status     int
		id         string
		code       int
	}{
		{"parse error", `{"jsonrpc":"2.0","id":1,"method":`, http.StatusBadRequest, "null", -32700},
		{"not JSON-RPC 2.0", `{"id":1,"method":"ping"}`, http.StatusBadRequest, "null", -32600},
		{"method a number", `{"jsonrpc":"2.0","id":1,"method":7}`, http.StatusBadRequest, "null", -32600},
		{"id an object", `{"jsonrpc":"2.0","id":{},"method":"ping"}`, http.StatusBadRequest, "null", -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":"a","method":"files/delete"}`, http.StatusOK, `"a"`, -32601},
		{"resources are not served", `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`, http.StatusOK, "2", -32601},
		{"tools/call without params", `{"jsonrpc":"2.0","id":3,"method":"tools/call"}`, http.StatusOK, "3", -32602},
		{"tools/call params an array", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":["workbench_create"]}`, http.StatusOK, "4", -32602},
		{"tools/call name a number", `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":5}}`, http.StatusOK, "5", -32602},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := post(t, url, c.body)
			if r.status != c.status {
				t.Errorf("status = %d, want %d", r.status, c.status)
			}
			var a rpcAnswer
			if err := json.Unmarshal(r.body, &a); err != nil {
				t.Fatalf("body %s: %v", r.body, err)
			}
			if a.Error == nil || a.Error.Code != c.code || string(a.ID) != c.id {
				t.Errorf("answer %s, want JSON-RPC error %d for id %s", r.body, c.code, c.id)
			}
		})
	}
	if len(e.inputs) != 0 {
		t.Errorf("a refused request ran a tool: %q", e.inputs)
	}
	t.Run("GET", func(t *testing.T) {
		resp, err := http.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got, want := resp.StatusCode, http.StatusMethodNotAllowed; got != want {
			t.Errorf("GET status = %d, want %d", got, want)
		}
	})
}

func TestBodyIsBounded(t *testing.T) {
	e := &echo{}
	opts := mcpserve.Options{MaxBytes: 1024}
	srv := httptest.NewServer(mcpserve.NewHandler(e.call, opts))
	defer srv.Close()
	limit := workbench.MaxInputBytes("workbench_edit", opts.MaxBytes) + mcpserve.FramingBytes
	frame := func(text string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_put_file","arguments":{"text":%q}}}`, text)
	}
	overhead := int64(len(frame("")))
	if r := post(t, srv.URL, frame(strings.Repeat("a", int(limit-overhead)))); r.status != http.StatusOK {
		t.Errorf("a body of exactly %d bytes: status %d, want 200", limit, r.status)
	}
	if r := post(t, srv.URL, frame(strings.Repeat("a", int(limit-overhead)+1))); r.status != http.StatusRequestEntityTooLarge {
		t.Errorf("a body of %d bytes: status %d, want 413", limit+1, r.status)
	}
	if got := len(e.inputs); got != 1 {
		t.Errorf("the tool ran %d times, want once (the oversized body never reaches it)", got)
	}
}

// TestSDKClient drives the handler with the SDK's own client, as an MCP
// host would.
func TestSDKClient(t *testing.T) {
	// The client's newest protocol discovers the server statelessly; the
	// older ones initialize.
	for _, version := range []string{"", "2025-11-25", "2025-03-26"} {
		t.Run("version "+version, func(t *testing.T) { testSDKClient(t, version) })
	}
}

func testSDKClient(t *testing.T, version string) {
	s := openService(t, mem.NewBucket())
	url := serve(t, s.Call)
	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if version != "" {
		if got := cs.InitializeResult().ProtocolVersion; got != version {
			t.Errorf("negotiated protocol version %q, want %q", got, version)
		}
	}
	t.Logf("protocol version %s, server %+v", cs.InitializeResult().ProtocolVersion, cs.InitializeResult().ServerInfo)

	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if want := workbench.Tools(); !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}

	call := func(tool, args string) *mcp.CallToolResult {
		t.Helper()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return r
	}
	if r := call("workbench_create", `{"id":"wb1"}`); r.IsError {
		t.Fatalf("create: %+v", r.Content)
	}
	if r := call("workbench_put_file", `{"id":"wb1","section":"outputs","path":"a.txt","text":"hello"}`); r.IsError {
		t.Fatalf("put_file: %+v", r.Content)
	}
	read := `{"id":"wb1","section":"outputs","path":"a.txt"}`
	want, _ := s.Call(ctx, "workbench_read", []byte(read))
	pretty, _ := workbench.MarshalResultIndent(json.RawMessage(want))
	r := call("workbench_read", read)
	if r.IsError || len(r.Content) != 1 {
		t.Fatalf("read: %+v", r)
	}
	if got := r.Content[0].(*mcp.TextContent).Text; got != string(pretty) {
		t.Errorf("read text =\n%s\nwant\n%s", got, pretty)
	}
	r = call("workbench_nope", `{}`)
	if !r.IsError {
		t.Errorf("an unknown tool is not an error result: %+v", r)
	}
	if got := r.Content[0].(*mcp.TextContent).Text; !strings.Contains(got, `"code": "UnknownTool"`) {
		t.Errorf("unknown tool text = %s", got)
	}
}

// BenchmarkNewHandler measures building a handler, for a server that
// builds one per agent on demand.
func BenchmarkNewHandler(b *testing.B) {
	call := (&echo{}).call
	for b.Loop() {
		mcpserve.Handler(call)
	}
}

// TestHandlersKeepTheirCallFuncs runs two handlers, as for two agents, at
// once: every handler shares one MCP server, and each call must still
// reach its own handler's CallFunc.
func TestHandlersKeepTheirCallFuncs(t *testing.T) {
	urls := map[string]string{}
	for _, who := range []string{"a", "b"} {
		urls[who] = serve(t, func(_ context.Context, tool string, input []byte) ([]byte, bool) {
			return fmt.Appendf(nil, `{"input":%s,"status":"success","who":%q}`, input, who), true
		})
	}
	var wg sync.WaitGroup
	for i := range 40 {
		who := []string{"a", "b"}[i%2]
		wg.Go(func() {
			if i%4 == 0 {
				checkListOrder(t, urls[who])
			}
			r := callTool(t, urls[who], "workbench_stat", fmt.Sprintf(`{"i":%d}`, i))
			var got struct {
				Input struct{ I int }
				Who   string
			}
			if err := json.Unmarshal(r.StructuredContent, &got); err != nil {
				t.Error(err)
				return
			}
			if got.Who != who || got.Input.I != i {
				t.Errorf("call %d to %s reached %s with input %d", i, who, got.Who, got.Input.I)
			}
		})
	}
	wg.Wait()
}

// TestLoopbackRefusesForeignHost pins the SDK's guard against DNS
// rebinding that docs/api.md describes: on a loopback address, a Host
// that is not a loopback name is 403 and runs nothing.
func TestLoopbackRefusesForeignHost(t *testing.T) {
	e := &echo{}
	url := serve(t, e.call)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"workbench_create","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "cairn.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got, want := resp.StatusCode, http.StatusForbidden; got != want {
		t.Errorf("status = %d, want %d", got, want)
	}
	if len(e.inputs) != 0 {
		t.Errorf("the tool ran: %q", e.inputs)
	}
}

// checkListOrder checks that tools/list names the 18 tools in order.
func checkListOrder(t *testing.T, url string) {
	a := rpc(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	var list struct{ Tools []struct{ Name string } }
	if err := json.Unmarshal(a.Result, &list); err != nil {
		t.Error(err)
		return
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if want := workbench.Tools(); !reflect.DeepEqual(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}
}

// TestResultNotJSONIsAToolError: a CallFunc that answers something other
// than JSON is a bug behind it; the client still gets a well-formed tool
// error, not a broken frame.
func TestResultNotJSONIsAToolError(t *testing.T) {
	url := serve(t, func(context.Context, string, []byte) ([]byte, bool) { return []byte("{oops"), true })
	r := callTool(t, url, "workbench_create", `{"id":"wb1"}`)
	var env struct{ Status, Code string }
	if err := json.Unmarshal(r.StructuredContent, &env); err != nil {
		t.Fatal(err)
	}
	if r.IsError == nil || !*r.IsError || env.Status != "error" || env.Code != "Internal" {
		t.Errorf("result %s (isError %v), want an Internal error", r.StructuredContent, r.IsError)
	}
}
