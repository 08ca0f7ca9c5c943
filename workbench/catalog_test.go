package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The transcript's workbench_catalog result.
const qTranscriptCatalog = `{
  "catalog": {"facetable": ["artifact.producer"], "facets": [],
    "filterable": [{"fields": ["artifact.producer"], "operators": ["eq", "prefix"]}],
    "sortable": ["artifact.producer"]},
  "catalog_empty": false, "child_catalogs": [], "path": "/agents/test/wb", "status": "success"}`

const (
	qNumericOps = `["eq","ne","in","lt","lte","gt","gte","exists","not_exists"]`
	qStringOps  = `["eq","ne","in","lt","lte","gt","gte","prefix","suffix","contains","exists","not_exists"]`
	qBuiltinNum = `["generation","logical_size"]`
	qBuiltinStr = `["body_digest_uri","content_type","manifest_id","path","producer","workbench_id"]`
	qBuiltinAll = `["body_digest_uri","content_type","generation","logical_size","manifest_id","path","producer","workbench_id"]`
)

func qCatalog(t *testing.T, s *workbench.Service, input string) string {
	t.Helper()
	out, ok := s.Call(context.Background(), "workbench_catalog", []byte(input))
	if !ok {
		t.Fatalf("catalog %s failed: %s", input, out)
	}
	return string(out)
}

func TestCatalogTranscriptShape(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "wb-main", qFile("outputs/report.txt", "Hello", qStr("artifact.producer", "agent")))
	m := mustCall(t, s, "workbench_catalog", `{}`)
	qShape(t, m, qTranscriptCatalog)
}

func TestCatalogFields(t *testing.T) {
	s := newService(t)
	// Built-ins exist even in an empty root.
	builtins := `{"catalog":{"facetable":` + qBuiltinAll + `,"facets":[],"filterable":[{"fields":` + qBuiltinNum + `,"operators":` + qNumericOps +
		`},{"fields":` + qBuiltinStr + `,"operators":` + qStringOps + `}],"sortable":` + qBuiltinAll + `},"catalog_empty":false,"child_catalogs":[],"path":"/agents/test/wb","status":"success"}`
	if got := qCatalog(t, s, `{}`); got != builtins {
		t.Fatalf("empty root:\ngot  %s\nwant %s", got, builtins)
	}
	qPut(t, s, "w", "outputs", "a.txt", "x")
	if got := qCatalog(t, s, `{"include_facets":true}`); got != builtins {
		t.Fatalf("tool-written root:\ngot  %s\nwant %s", got, builtins)
	}

	workbench.SeedQueryWorkbench(t, s, "c",
		qFile("outputs/a", "1", qBool("flag", true), qFloat("ratio", 0.5), qInt("delta", -1), qNull("nul"),
			nokv.IndexField{ID: "blob", Value: nokv.BytesScalar([]byte{1, 2})},
			nokv.IndexField{ID: "ts", Value: nokv.TimestampScalar(time.Unix(1700000000, 5))},
			qStr("tag", "x")),
		qFile("outputs/b", "2", qNull("tag"), qUint("score", 3)),
	)
	numeric := `["delta","flag","generation","logical_size","nul","ratio","score","ts"]`
	strs := `["blob","body_digest_uri","content_type","manifest_id","path","producer","tag","workbench_id"]`
	all := `["blob","body_digest_uri","content_type","delta","flag","generation","logical_size","manifest_id","nul","path","producer","ratio","score","tag","ts","workbench_id"]`
	sortable := `["blob","body_digest_uri","content_type","delta","flag","generation","logical_size","manifest_id","path","producer","ratio","score","tag","ts","workbench_id"]`
	want := `{"catalog":{"facetable":` + all + `,"facets":[],"filterable":[{"fields":` + numeric + `,"operators":` + qNumericOps +
		`},{"fields":` + strs + `,"operators":` + qStringOps + `}],"sortable":` + sortable + `},"catalog_empty":false,"child_catalogs":[],"path":"/agents/test/wb/c/outputs","status":"success"}`
	if got := qCatalog(t, s, `{"id":"c","section":"outputs"}`); got != want {
		t.Fatalf("custom fields:\ngot  %s\nwant %s", got, want)
	}
	// The catalog follows the scope: another workbench has only built-ins.
	if got := qCatalog(t, s, `{"id":"w"}`); got != `{"catalog":{"facetable":`+qBuiltinAll+`,"facets":[],"filterable":[{"fields":`+qBuiltinNum+`,"operators":`+qNumericOps+
		`},{"fields":`+qBuiltinStr+`,"operators":`+qStringOps+`}],"sortable":`+qBuiltinAll+`},"catalog_empty":false,"child_catalogs":[],"path":"/agents/test/wb/w","status":"success"}` {
		t.Fatalf("workbench w: %s", got)
	}
	// field_prefix keeps the ids it starts; none left is catalog_empty.
	if got, want := qCatalog(t, s, `{"field_prefix":"p"}`), `{"catalog":{"facetable":["path","producer"],"facets":[],"filterable":[{"fields":["path","producer"],"operators":`+qStringOps+
		`}],"sortable":["path","producer"]},"catalog_empty":false,"child_catalogs":[],"path":"/agents/test/wb","status":"success"}`; got != want {
		t.Fatalf("prefix p:\ngot  %s\nwant %s", got, want)
	}
	if got, want := qCatalog(t, s, `{"field_prefix":"n"}`), `{"catalog":{"facetable":["nul"],"facets":[],"filterable":[{"fields":["nul"],"operators":`+qNumericOps+
		`}],"sortable":[]},"catalog_empty":false,"child_catalogs":[],"path":"/agents/test/wb","status":"success"}`; got != want {
		t.Fatalf("prefix n:\ngot  %s\nwant %s", got, want)
	}
	if got, want := qCatalog(t, s, `{"field_prefix":"zz"}`), `{"catalog":{"facetable":[],"facets":[],"filterable":[],"sortable":[]},"catalog_empty":true,"child_catalogs":[],"path":"/agents/test/wb","status":"success"}`; got != want {
		t.Fatalf("prefix zz:\ngot  %s\nwant %s", got, want)
	}
	if got := qCatalog(t, s, `{"field_prefix":null}`); got != qCatalog(t, s, `{"field_prefix":""}`) {
		t.Fatal("a null field_prefix differs from an empty one")
	}
	// Errors.
	m, ok := call(t, s, "workbench_catalog", `{"id":"c","section":"bogus"}`)
	qErr(t, m, ok, "InvalidArguments", false)
	m, ok = call(t, s, "workbench_catalog", `{"include_facets":"yes"}`)
	qErr(t, m, ok, "InvalidArguments", false)
}

// field_prefix: a string or null (the schema); null and "" keep every
// field; a prefix longer than a field id may be (128 bytes) is the
// server's InvalidState; one of 128 bytes keeps the id it equals.
func TestCatalogFieldPrefixRules(t *testing.T) {
	s := newService(t)
	id := strings.Repeat("f", 128)
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/a", "x", qUint(id, 1)))
	m, ok := call(t, s, "workbench_catalog", `{"field_prefix":"`+id+`f"}`)
	qErr(t, m, ok, "InvalidState", false, qServerKeys...)
	qMessage(t, m, "field_prefix")
	for _, bad := range []string{`1`, `true`, `["a"]`, `{}`} {
		m, ok := call(t, s, "workbench_catalog", `{"field_prefix":`+bad+`}`)
		qErr(t, m, ok, "InvalidArguments", false)
	}
	m = mustCall(t, s, "workbench_catalog", `{"field_prefix":"`+id+`"}`)
	if got := fmt.Sprint(m["catalog"].(map[string]any)["facetable"]); got != "["+id+"]" || m["catalog_empty"] != false {
		t.Fatalf("128-byte prefix: %v", m)
	}
	if qCatalog(t, s, `{"field_prefix":null}`) != qCatalog(t, s, `{}`) {
		t.Fatal("a null field_prefix differs from an absent one")
	}
}

// field_prefix is checked as the server checks a field id's bytes: ASCII
// letters, digits, '_', '.' and '-' only. Any other byte ("a b", "p/") is
// the server's InvalidState, as an overlong prefix is, even though no
// field would match it; a prefix of allowed bytes that matches nothing is
// an empty catalog.
func TestCatalogFieldPrefixBytes(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/a", "x", qUint("run.step-2_b", 1)))
	for _, bad := range []string{`"a b"`, `"p/"`, `"path\u0000"`, `"é"`, `"x:y"`, `"a\tb"`} {
		m, ok := call(t, s, "workbench_catalog", `{"id":"w","field_prefix":`+bad+`}`)
		qErr(t, m, ok, "InvalidState", false, qServerKeys...)
		qMessage(t, m, "field_prefix")
		// The prefix is refused before the scope is read: a missing
		// workbench answers the same.
		m, ok = call(t, s, "workbench_catalog", `{"id":"nowhere","field_prefix":`+bad+`}`)
		qErr(t, m, ok, "InvalidState", false, qServerKeys...)
	}
	for prefix, want := range map[string]string{"run.step-2_": "[run.step-2_b]", "R": "[]", "9": "[]"} {
		m := mustCall(t, s, "workbench_catalog", `{"id":"w","field_prefix":"`+prefix+`"}`)
		if got := fmt.Sprint(m["catalog"].(map[string]any)["facetable"]); got != want {
			t.Errorf("field_prefix %q: facetable %s, want %s", prefix, got, want)
		}
	}
}
