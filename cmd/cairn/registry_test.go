package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// A tool registered by this test file alone: it reaches every surface of
// the binary (the command line, local and --server; the HTTP route and
// the metrics label; MCP's tools/list and tools/call; the OpenAPI
// document) with no other file changed.
const (
	registeredTool        = "test_registered"
	registeredDescription = "Answer the word it is given and the agent root that served it."
	registeredSchema      = `{"additionalProperties":false,"properties":{"word":{"maxLength":16,"type":"string"}},"required":["word"],"type":"object"}`
)

func init() {
	workbench.Register(workbench.ToolSpec{
		Name:        registeredTool,
		Description: registeredDescription,
		InputSchema: json.RawMessage(registeredSchema),
		Annotations: workbench.Annotations{Idempotent: true},
		Run: func(_ context.Context, s *workbench.Service, input json.RawMessage) (any, error) {
			var in struct{ Word string }
			if err := json.Unmarshal(input, &in); err != nil {
				return nil, err
			}
			return map[string]any{"word": in.Word, "root": s.LogicalRoot()}, nil
		},
	})
}

const (
	registeredOK      = `{"root":"/agents/a1/wb","status":"success","word":"hi"}`
	registeredInvalid = `{"code":"InvalidArguments","details":{},"message":"test_registered: $.word: has the wrong JSON type","retryable":false,"status":"error"}`
)

// TestRegisteredToolCommandLine: `cairn workbench` lists the registered
// tool in its usage, with its description, and runs it.
func TestRegisteredToolCommandLine(t *testing.T) {
	code, _, usage := runWith(t, "", "workbench")
	if code != exitUsage || !strings.Contains(usage, registeredTool) || !strings.Contains(usage, registeredDescription) {
		t.Fatalf("usage: exit %d, without %s and its description:\n%s", code, registeredTool, usage)
	}
	code, out, errOut := runWith(t, `{"word":"hi"}`, "workbench", "--bucket", "mem://registry", "--agent", "a1", registeredTool)
	if code != exitOK || out != registeredOK+"\n" {
		t.Fatalf("local: exit %d %q %s", code, out, errOut)
	}
	code, out, _ = runWith(t, `{"word":1}`, "workbench", "--bucket", "mem://registry", "--agent", "a1", registeredTool)
	if code != exitFailed || out != registeredInvalid+"\n" {
		t.Fatalf("local, invalid input: exit %d %q", code, out)
	}
}

// TestRegisteredToolServed: `cairn serve` serves the registered tool on
// its route, in its metrics, over MCP and in its OpenAPI document, and
// the client mode calls it.
func TestRegisteredToolServed(t *testing.T) {
	t.Chdir(t.TempDir())
	t.Setenv("CAIRN_TOKENS", "")
	t.Setenv("CAIRN_ADDR", "127.0.0.1:0")
	base, _, _ := startServe(t)

	// HTTP, and the client mode, which prints what the local mode does.
	route := base + "/v1/agents/a1/tools/" + registeredTool
	if st, body := postJSON(t, route, `{"word":"hi"}`); st != 200 || body != registeredOK {
		t.Fatalf("POST %s: %d %s", route, st, body)
	}
	if st, body := postJSON(t, route, `{"word":1}`); st != 400 || body != registeredInvalid {
		t.Fatalf("POST %s, invalid input: %d %s", route, st, body)
	}
	code, out, errOut := runWith(t, `{"word":"hi"}`, "workbench", "--server", base, "--agent", "a1", registeredTool)
	if code != exitOK || out != registeredOK+"\n" {
		t.Fatalf("--server: exit %d %q %s", code, out, errOut)
	}
	if metrics := getBody(t, base+"/metrics"); !strings.Contains(metrics, `cairn_http_requests_total{tool="test_registered",status="200"} 2`) {
		t.Errorf("metrics lack the tool's series:\n%s", metrics)
	}

	// MCP: listed after the 18 with its description, schema and
	// annotations; called like any tool.
	accept := "application/json, text/event-stream"
	mcpURL := base + "/v1/agents/a1/mcp"
	st, body := postJSON(t, mcpURL, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Accept", accept)
	var list struct {
		Result struct {
			Tools []struct {
				Name        string
				Description string
				InputSchema json.RawMessage
				Annotations map[string]any
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &list); st != 200 || err != nil {
		t.Fatalf("tools/list: %d %v %s", st, err, body)
	}
	var names []string
	for _, tool := range list.Result.Tools {
		names = append(names, tool.Name)
		if tool.Name != registeredTool {
			continue
		}
		if tool.Description != registeredDescription || !sameJSON(t, tool.InputSchema, []byte(registeredSchema)) {
			t.Errorf("tools/list entry %+v", tool)
		}
		want := map[string]any{"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true}
		if !mapsEqual(tool.Annotations, want) {
			t.Errorf("annotations %v, want %v", tool.Annotations, want)
		}
	}
	if want := workbench.Tools(); !slices.Equal(names, want) || names[len(names)-1] != registeredTool || len(names) != 19 {
		t.Fatalf("tools/list names %v, want %v", names, want)
	}
	st, body = postJSON(t, mcpURL, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_registered","arguments":{"word":"hi"}}}`, "Accept", accept)
	var called struct {
		Result struct {
			StructuredContent json.RawMessage
			IsError           bool
		}
	}
	if err := json.Unmarshal([]byte(body), &called); st != 200 || err != nil || called.Result.IsError || !sameJSON(t, called.Result.StructuredContent, []byte(registeredOK)) {
		t.Fatalf("tools/call: %d %v %s", st, err, body)
	}

	// OpenAPI: its route, with its description and its input schema.
	var doc struct {
		Paths map[string]struct {
			Post struct {
				Description string
				RequestBody struct {
					Content map[string]struct{ Schema json.RawMessage }
				} `json:"requestBody"`
			}
		}
	}
	if err := json.Unmarshal([]byte(getBody(t, base+"/openapi.json")), &doc); err != nil {
		t.Fatal(err)
	}
	op, ok := doc.Paths["/v1/agents/{agent_id}/tools/"+registeredTool]
	if !ok || op.Post.Description != registeredDescription || !sameJSON(t, op.Post.RequestBody.Content["application/json"].Schema, []byte(registeredSchema)) {
		t.Fatalf("OpenAPI path of %s: %v %+v", registeredTool, ok, op)
	}
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return string(b)
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

func mapsEqual(a, b map[string]any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
