package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/cmd/cairn/internal/serve"
	"github.com/cairnstore/cairn/workbench"
)

// TestOpenAPI: the document is OpenAPI 3.1 with one path per tool whose
// request schema is the tool's own input schema (as generators take it),
// whose success answer is the tool's typed result schema, and whose
// errors are the error envelope; the bearer scheme, required by each tool
// operation on a secured server; the Idempotency-Key header.
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
				Responses map[string]struct {
					Content map[string]struct {
						Schema struct {
							Ref string `json:"$ref"`
						}
					}
				}
				Security []map[string][]string
			}
		}
		Components struct {
			Schemas         map[string]json.RawMessage
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
		if got := asValidated(t, p.Post.RequestBody.Content["application/json"].Schema, doc.Components.Schemas); !jsonEqual(t, got, want) {
			t.Errorf("%s: request schema differs from the input schema:\n%s\n%s", tool, got, want)
		}
		ref := p.Post.Responses["200"].Content["application/json"].Schema.Ref
		name := strings.TrimPrefix(ref, "#/components/schemas/")
		result, _ := workbench.ResultSchema(tool)
		if !strings.HasSuffix(name, "Result") || doc.Components.Schemas[name] == nil || !jsonEqual(t, asValidated(t, doc.Components.Schemas[name], doc.Components.Schemas), result) {
			t.Errorf("%s: 200 answers %q, not the result schema", tool, ref)
		}
		for st, r := range p.Post.Responses {
			if st != "200" && r.Content["application/json"].Schema.Ref != "#/components/schemas/ErrorEnvelope" {
				t.Errorf("%s: %s answers %+v, not the error envelope", tool, st, r)
			}
		}
		if len(p.Post.Security) != 1 || p.Post.Security[0]["bearerAuth"] == nil {
			t.Errorf("%s: security %v", tool, p.Post.Security)
		}
		names := map[string]string{}
		for _, prm := range p.Post.Parameters {
			names[prm.Name] = prm.In
		}
		if names["agent_id"] != "path" || names["Idempotency-Key"] != "header" {
			t.Errorf("%s: parameters %v", tool, names)
		}
		for _, st := range []string{"200", "401", "404", "409", "413", "422", "503"} {
			if _, ok := p.Post.Responses[st]; !ok {
				t.Errorf("%s: no %s response", tool, st)
			}
		}
	}
	if len(doc.Paths) != len(workbench.Tools())+4 {
		t.Errorf("%d paths", len(doc.Paths))
	}
	if !jsonEqual(t, doc.Components.Schemas["ErrorEnvelope"], workbench.ErrorEnvelopeSchema()) {
		t.Error("ErrorEnvelope is not the envelope's schema")
	}
	if s := doc.Components.SecuritySchemes["bearerAuth"]; s.Type != "http" || s.Scheme != "bearer" {
		t.Errorf("security scheme %+v", s)
	}
	if doc.Security != nil {
		t.Errorf("document-wide security %v: it is each operation's", doc.Security)
	}
	if bad := typeArrays(got.body); len(bad) > 0 {
		t.Errorf("type arrays of several types, which generators refuse: %v", bad)
	}
}

// asValidated undoes what the document changes in a schema for code
// generators (docs/api.md): a $ref to components is replaced by what it
// names, "format":"uint64" and "double" go, and an anyOf of bare types
// becomes a type array again.
func asValidated(t *testing.T, raw []byte, components map[string]json.RawMessage) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	var undo func(v any) any
	undo = func(v any) any {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				x[i] = undo(e)
			}
		case map[string]any:
			if ref, ok := x["$ref"].(string); ok {
				return undo(decode(t, components[strings.TrimPrefix(ref, "#/components/schemas/")]))
			}
			for k, e := range x {
				x[k] = undo(e)
			}
			if x["format"] == "uint64" || x["format"] == "double" {
				delete(x, "format")
			}
			alts, _ := x["anyOf"].([]any)
			var types []any
			for _, a := range alts {
				if m, ok := a.(map[string]any); ok && len(m) == 1 && m["type"] != nil && m["type"] != "null" {
					types = append(types, m["type"])
				}
			}
			if len(types) > 1 && len(types) == len(alts) {
				delete(x, "anyOf")
				x["type"] = types
			}
		}
		return v
	}
	b, err := json.Marshal(undo(v))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// typeArrays lists the type arrays in a JSON document that name more than
// one type besides "null".
func typeArrays(doc []byte) []string {
	var v any
	if json.Unmarshal(doc, &v) != nil {
		return []string{"not JSON"}
	}
	var bad []string
	var walk func(at string, v any)
	walk = func(at string, v any) {
		switch x := v.(type) {
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s[%d]", at, i), e)
			}
		case map[string]any:
			if types, ok := x["type"].([]any); ok && len(slices.DeleteFunc(types, func(t any) bool { return t == "null" })) > 1 {
				bad = append(bad, at)
			}
			for k, e := range x {
				walk(at+"."+k, e)
			}
		}
	}
	walk("$", v)
	return bad
}

// TestOpenAPISecurity: on a secured server each tool operation (and the
// MCP one) requires the bearer token and the probes, metrics and this
// document require none; on a loopback server without tokens nothing
// does, and no operation documents 401.
func TestOpenAPISecurity(t *testing.T) {
	mcp := func(serve.CallFunc) http.Handler { return http.NotFoundHandler() }
	for _, secured := range []bool{true, false} {
		opts := serve.Options{MCP: mcp}
		if secured {
			opts.Tokens = map[string]string{"a1": "t"}
		}
		h := newServer(t, mem.NewBucket(), opts).Handler()
		got := do(h, httptest.NewRequest("GET", "/openapi.json", nil))
		var doc struct {
			Security any
			Paths    map[string]map[string]struct {
				Security  *[]map[string][]string
				Responses map[string]any
			}
		}
		if err := json.Unmarshal(got.body, &doc); err != nil {
			t.Fatal(err)
		}
		if doc.Security != nil {
			t.Errorf("secured %v: document-wide security %v", secured, doc.Security)
		}
		for path, ops := range doc.Paths {
			for method, op := range ops {
				public := !strings.HasPrefix(path, "/v1/")
				if op.Security == nil {
					t.Errorf("secured %v: %s %s has no security requirement", secured, method, path)
					continue
				}
				if want := secured && !public; (len(*op.Security) == 1) != want {
					t.Errorf("secured %v: %s %s security %v", secured, method, path, *op.Security)
				}
				if (op.Responses["401"] != nil) != (secured && !public) {
					t.Errorf("secured %v: %s %s documents 401: %v", secured, method, path, op.Responses["401"] != nil)
				}
			}
		}
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
