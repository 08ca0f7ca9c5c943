package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
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
