package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// TestOpenAPI: the document is OpenAPI 3.1 with one path per tool whose
// request schema is the tool's own input schema, the error envelope, the
// bearer scheme and the Idempotency-Key header.
func TestOpenAPI(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{Tokens: map[string]string{"a1": "t"}}).Handler()
	got := do(h, httptest.NewRequest("GET", "/openapi.json", nil))
	if got.status != 200 {
		t.Fatalf("openapi.json: %d", got.status)
	}
	var doc struct {
		OpenAPI string `json:"openapi"`
		Paths   map[string]struct {
			Post *struct {
				Parameters []struct {
					Name, In string
				}
				RequestBody struct {
					Content map[string]struct {
						Schema json.RawMessage
					}
				} `json:"requestBody"`
				Responses map[string]any
			}
		}
		Components struct {
			Schemas         map[string]any
			SecuritySchemes map[string]struct{ Type, Scheme string } `json:"securitySchemes"`
		}
		Security []map[string][]string
	}
	if err := json.Unmarshal(got.body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	for _, tool := range workbench.Tools() {
		p, ok := doc.Paths["/v1/agents/{agent_id}/tools/"+tool]
		if !ok || p.Post == nil {
			t.Errorf("no path for %s", tool)
			continue
		}
		want, _ := workbench.InputSchema(tool)
		var a, b bytes.Buffer
		json.Compact(&a, p.Post.RequestBody.Content["application/json"].Schema)
		json.Compact(&b, want)
		if !jsonEqual(t, a.Bytes(), b.Bytes()) {
			t.Errorf("%s: request schema differs from the input schema", tool)
		}
		names := map[string]string{}
		for _, prm := range p.Post.Parameters {
			names[prm.Name] = prm.In
		}
		if names["agent_id"] != "path" || names["Idempotency-Key"] != "header" {
			t.Errorf("%s: parameters %v", tool, names)
		}
		for _, st := range []string{"200", "401", "404", "409", "413", "422", "503"} {
			if p.Post.Responses[st] == nil {
				t.Errorf("%s: no %s response", tool, st)
			}
		}
	}
	if len(doc.Paths) != len(workbench.Tools())+4 {
		t.Errorf("%d paths", len(doc.Paths))
	}
	if doc.Components.Schemas["ErrorEnvelope"] == nil {
		t.Error("no ErrorEnvelope schema")
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("security scheme %+v", s)
	}
	if len(doc.Security) != 1 {
		t.Errorf("security %v", doc.Security)
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return bytes.Equal(xs, ys)
}

// TestOpenAPIMCP: a server with an MCP endpoint documents its route, a
// POST of a JSON-RPC message for one agent, behind the same bearer
// scheme; one without the endpoint (the route answers RouteNotFound)
// does not.
func TestOpenAPIMCP(t *testing.T) {
	mcp := func(serve.CallFunc) http.Handler { return http.NotFoundHandler() }
	type operation struct {
		OperationID string `json:"operationId"`
		Parameters  []struct {
			Name, In string
			Required bool
		}
		RequestBody struct {
			Required bool
			Content  map[string]struct {
				Schema struct {
					Type       string
					Required   []string
					Properties map[string]any
				}
			}
		} `json:"requestBody"`
		Responses map[string]any
	}
	type document struct {
		Paths map[string]map[string]*operation
	}
	for _, tc := range []struct {
		name    string
		opts    serve.Options
		want    bool
		secured bool
	}{
		{"secured", serve.Options{Tokens: map[string]string{"a1": "t"}, MCP: mcp}, true, true},
		{"loopback", serve.Options{MCP: mcp}, true, false},
		{"no MCP", serve.Options{}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newServer(t, mem.NewBucket(), tc.opts).Handler()
			got := do(h, httptest.NewRequest("GET", "/openapi.json", nil))
			var doc document
			if err := json.Unmarshal(got.body, &doc); err != nil {
				t.Fatal(err)
			}
			p, ok := doc.Paths["/v1/agents/{agent_id}/mcp"]
			if ok != tc.want {
				t.Fatalf("MCP route documented %v, want %v", ok, tc.want)
			}
			if want := len(workbench.Tools()) + 4 + len(p); len(doc.Paths) != want {
				t.Errorf("%d paths, want %d", len(doc.Paths), want)
			}
			if !tc.want {
				return
			}
			post := p["post"]
			if post == nil || len(p) != 1 {
				t.Fatalf("MCP route operations %v, want only post", p)
			}
			if post.OperationID != "mcp" || len(post.Parameters) != 1 || post.Parameters[0].Name != "agent_id" || post.Parameters[0].In != "path" || !post.Parameters[0].Required {
				t.Errorf("MCP operation %+v", post)
			}
			body := post.RequestBody.Content["application/json"].Schema
			if !post.RequestBody.Required || body.Type != "object" || !slices.Equal(body.Required, []string{"jsonrpc", "method"}) || body.Properties["params"] == nil {
				t.Errorf("MCP request body %+v", post.RequestBody)
			}
			for _, st := range []string{"200", "400", "404", "413"} {
				if post.Responses[st] == nil {
					t.Errorf("MCP: no %s response", st)
				}
			}
			if (post.Responses["401"] != nil) != tc.secured {
				t.Errorf("MCP: 401 response %v, secured %v", post.Responses["401"], tc.secured)
			}
		})
	}
}

// TestOpenAPIDescriptions: each tool route carries the registry's
// description of the tool.
func TestOpenAPIDescriptions(t *testing.T) {
	h := newServer(t, mem.NewBucket(), serve.Options{}).Handler()
	got := do(h, httptest.NewRequest("GET", "/openapi.json", nil))
	var doc struct {
		Paths map[string]struct {
			Post *struct{ Description string }
		}
	}
	if err := json.Unmarshal(got.body, &doc); err != nil {
		t.Fatal(err)
	}
	for _, tool := range workbench.Tools() {
		info, _ := workbench.Tool(tool)
		p := doc.Paths["/v1/agents/{agent_id}/tools/"+tool]
		if p.Post == nil || p.Post.Description == "" || p.Post.Description != info.Description {
			t.Errorf("%s: description %+v, want %q", tool, p.Post, info.Description)
		}
	}
}
