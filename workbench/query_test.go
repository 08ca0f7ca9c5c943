package workbench_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Helpers of the query and grep tests (search, aggregate, catalog, grep).

// qCall runs a tool on the JSON encoding of in.
func qCall(t testing.TB, s *workbench.Service, tool string, in map[string]any) (map[string]any, bool) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return call(t, s, tool, string(b))
}

// qMust runs a tool that must succeed.
func qMust(t testing.TB, s *workbench.Service, tool string, in map[string]any) map[string]any {
	t.Helper()
	m, ok := qCall(t, s, tool, in)
	if !ok {
		t.Fatalf("%s %v failed: %v", tool, in, m)
	}
	return m
}

// qPut writes a text file through workbench_put_file (create-only).
func qPut(t testing.TB, s *workbench.Service, id, section, path, text string) {
	t.Helper()
	qMust(t, s, "workbench_put_file", map[string]any{"id": id, "section": section, "path": path, "text": text})
}

// qPutBytes writes a binary file through workbench_put_file.
func qPutBytes(t testing.TB, s *workbench.Service, id, section, path string, body []byte) {
	t.Helper()
	qMust(t, s, "workbench_put_file", map[string]any{"id": id, "section": section, "path": path, "base64": body})
}

// qFile is a seeded artifact at a stored path with a text body.
func qFile(path, body string, index ...nokv.IndexField) workbench.QuerySeedFile {
	return workbench.QuerySeedFile{Path: path, Body: []byte(body), Index: index}
}

func qStr(id, v string) nokv.IndexField {
	return nokv.IndexField{ID: id, Value: nokv.StringScalar(v)}
}

func qUint(id string, v uint64) nokv.IndexField {
	return nokv.IndexField{ID: id, Value: nokv.UnsignedScalar(v)}
}

func qInt(id string, v int64) nokv.IndexField {
	return nokv.IndexField{ID: id, Value: nokv.SignedScalar(v)}
}

func qFloat(id string, v float64) nokv.IndexField {
	return nokv.IndexField{ID: id, Value: nokv.FloatScalar(v)}
}

func qBool(id string, v bool) nokv.IndexField {
	return nokv.IndexField{ID: id, Value: nokv.BoolScalar(v)}
}

func qNull(id string) nokv.IndexField {
	return nokv.IndexField{ID: id, Value: nokv.NullScalar()}
}

func qPtr(s string) *string { return &s }

// qShape checks that got has the shape of the transcript result want: the
// same member names at every level and the same JSON type for each; every
// element of an array has the shape of want's first element.
func qShape(t testing.TB, got map[string]any, want string) {
	t.Helper()
	var w map[string]any
	if err := jsonUnmarshal([]byte(want), &w); err != nil {
		t.Fatalf("transcript shape: %v", err)
	}
	if errs := qShapeDiff(got, w, "$"); len(errs) > 0 {
		t.Fatalf("result does not have the transcript's shape:\n%s\ngot: %v", strings.Join(errs, "\n"), got)
	}
}

func qShapeDiff(got, want any, at string) []string {
	if gt, wt := jsonKind(got), jsonKind(want); gt != wt {
		return []string{fmt.Sprintf("%s: got %s, transcript has %s", at, gt, wt)}
	}
	var errs []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		for k := range w {
			if _, ok := g[k]; !ok {
				errs = append(errs, fmt.Sprintf("%s: missing member %q", at, k))
			}
		}
		for k := range g {
			if _, ok := w[k]; !ok {
				errs = append(errs, fmt.Sprintf("%s: extra member %q", at, k))
			}
		}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				errs = append(errs, qShapeDiff(gv, wv, at+"."+k)...)
			}
		}
	case []any:
		g := got.([]any)
		if len(w) > 0 {
			if len(g) == 0 {
				errs = append(errs, at+": empty array, transcript has elements")
			}
			for i, gv := range g {
				errs = append(errs, qShapeDiff(gv, w[0], fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	}
	sort.Strings(errs)
	return errs
}

// qErr checks an error envelope: code, retryable, and exactly the detail
// keys named.
func qErr(t testing.TB, got map[string]any, ok bool, code string, retryable bool, detailKeys ...string) {
	t.Helper()
	if ok {
		t.Fatalf("success, want %s: %v", code, got)
	}
	if got["status"] != "error" || got["code"] != code || got["retryable"] != retryable {
		t.Fatalf("got %v, want code %s retryable %v", got, code, retryable)
	}
	details, _ := got["details"].(map[string]any)
	var keys []string
	for k := range details {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := slices.Clone(detailKeys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Fatalf("details keys %v, want %v (%v)", keys, want, got)
	}
	if msg, _ := got["message"].(string); msg == "" {
		t.Fatalf("empty message: %v", got)
	}
}

// qServerKeys are the detail keys of an error the reference's server
// decides (its RPC failure mapping).
var qServerKeys = []string{"code", "conflict", "current_generation", "source"}

// qMessage checks that an error's message contains text.
func qMessage(t testing.TB, got map[string]any, text string) {
	t.Helper()
	if msg, _ := got["message"].(string); !strings.Contains(msg, text) {
		t.Fatalf("message %q does not contain %q", msg, text)
	}
}

// qMatchPaths returns the workbench_id:path of each search match, path
// relative to the logical root.
func qMatchPaths(m map[string]any) []string {
	var out []string
	for _, x := range m["matches"].([]any) {
		mm := x.(map[string]any)
		out = append(out, strings.TrimPrefix(mm["path"].(string), "/agents/test/wb/"))
	}
	return out
}

// qNum reads a JSON number result as its text.
func qNum(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

// qPredicateService seeds the rows the predicate tests query.
func qPredicateService(t *testing.T) *workbench.Service {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "wb",
		workbench.QuerySeedFile{Path: "outputs/a.txt", Body: []byte("alpha"), Producer: qPtr("p1"),
			Index: []nokv.IndexField{qUint("score", 10), qInt("delta", -3), qFloat("ratio", 0.5), qStr("tag", "x"), qBool("flag", true)}},
		workbench.QuerySeedFile{Path: "outputs/b.json", Body: []byte("{}"), ContentType: "application/json",
			Index: []nokv.IndexField{qUint("score", 20), qInt("delta", 4), qFloat("ratio", 1.25), qStr("tag", "y"), qBool("flag", false)}},
		workbench.QuerySeedFile{Path: "logs/run.log", Body: []byte("0123456789"), Producer: qPtr("p2"), ManifestID: qPtr("m1"),
			Index: []nokv.IndexField{qNull("tag")}},
		workbench.QuerySeedFile{Path: "other/x.bin", Body: []byte("xyz"), ContentType: "application/octet-stream"},
	)
	return s
}

func TestQueryPredicates(t *testing.T) {
	s := qPredicateService(t)
	all := []string{"wb/logs/run.log", "wb/other/x.bin", "wb/outputs/a.txt", "wb/outputs/b.json"}
	for _, tc := range []struct {
		name  string
		preds string
		want  []string
	}{
		{"none", `[]`, all},
		{"eq string", `[{"field":"content_type","op":"eq","value":"application/json"}]`, []string{"wb/outputs/b.json"}},
		{"eq unsigned", `[{"field":"logical_size","op":"eq","value":5}]`, []string{"wb/outputs/a.txt"}},
		{"eq workbench", `[{"field":"workbench_id","op":"eq","value":"wb"}]`, all},
		{"eq null producer", `[{"field":"producer","op":"eq","value":null}]`, []string{"wb/other/x.bin", "wb/outputs/b.json"}},
		{"ne producer", `[{"field":"producer","op":"ne","value":"p1"}]`, []string{"wb/logs/run.log", "wb/other/x.bin", "wb/outputs/b.json"}},
		{"ne missing custom", `[{"field":"score","op":"ne","value":10}]`, []string{"wb/outputs/b.json"}},
		{"in", `[{"field":"logical_size","op":"in","value":[2,10,99]}]`, []string{"wb/logs/run.log", "wb/outputs/b.json"}},
		{"in empty", `[{"field":"logical_size","op":"in","value":[]}]`, nil},
		{"lt", `[{"field":"logical_size","op":"lt","value":5}]`, []string{"wb/other/x.bin", "wb/outputs/b.json"}},
		{"lte", `[{"field":"logical_size","op":"lte","value":5}]`, []string{"wb/other/x.bin", "wb/outputs/a.txt", "wb/outputs/b.json"}},
		{"gt", `[{"field":"logical_size","op":"gt","value":5}]`, []string{"wb/logs/run.log"}},
		{"gte", `[{"field":"logical_size","op":"gte","value":5}]`, []string{"wb/logs/run.log", "wb/outputs/a.txt"}},
		{"gt string", `[{"field":"path","op":"gt","value":"outputs"}]`, []string{"wb/outputs/a.txt", "wb/outputs/b.json"}},
		{"prefix", `[{"field":"path","op":"prefix","value":"outputs/"}]`, []string{"wb/outputs/a.txt", "wb/outputs/b.json"}},
		{"prefix is case-sensitive", `[{"field":"path","op":"prefix","value":"OUTPUTS/"}]`, nil},
		{"suffix", `[{"field":"path","op":"suffix","value":".json"}]`, []string{"wb/outputs/b.json"}},
		{"contains", `[{"field":"content_type","op":"contains","value":"octet"}]`, []string{"wb/other/x.bin"}},
		{"contains digest", `[{"field":"body_digest_uri","op":"contains","value":"sha256:"}]`, all},
		{"exists custom", `[{"field":"score","op":"exists"}]`, []string{"wb/outputs/a.txt", "wb/outputs/b.json"}},
		{"exists explicit null", `[{"field":"tag","op":"exists","value":null}]`, []string{"wb/logs/run.log", "wb/outputs/a.txt", "wb/outputs/b.json"}},
		{"exists null builtin", `[{"field":"manifest_id","op":"exists"}]`, all},
		{"not_exists", `[{"field":"score","op":"not_exists"}]`, []string{"wb/logs/run.log", "wb/other/x.bin"}},
		{"not_exists builtin", `[{"field":"producer","op":"not_exists"}]`, nil},
		{"eq manifest_id", `[{"field":"manifest_id","op":"eq","value":"m1"}]`, []string{"wb/logs/run.log"}},
		{"signed", `[{"field":"delta","op":"lt","value":-1}]`, []string{"wb/outputs/a.txt"}},
		{"signed eq", `[{"field":"delta","op":"eq","value":-3}]`, []string{"wb/outputs/a.txt"}},
		{"float", `[{"field":"ratio","op":"gte","value":0.75}]`, []string{"wb/outputs/b.json"}},
		{"float integral", `[{"field":"ratio","op":"lt","value":1.0}]`, []string{"wb/outputs/a.txt"}},
		{"bool", `[{"field":"flag","op":"eq","value":true}]`, []string{"wb/outputs/a.txt"}},
		{"range with null operand", `[{"field":"producer","op":"gt","value":null}]`, nil},
		{"range over null value", `[{"field":"tag","op":"lt","value":"z"}]`, []string{"wb/outputs/a.txt", "wb/outputs/b.json"}},
		{"eq null custom", `[{"field":"tag","op":"eq","value":null}]`, []string{"wb/logs/run.log"}},
		{"and", `[{"field":"path","op":"prefix","value":"outputs/"},{"field":"score","op":"gt","value":15}]`, []string{"wb/outputs/b.json"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := call(t, s, "workbench_search", `{"limit":10,"predicates":`+tc.preds+`}`)
			if !ok {
				t.Fatalf("failed: %v", m)
			}
			if got := qMatchPaths(m); !slices.Equal(got, tc.want) {
				t.Fatalf("matches %v, want %v", got, tc.want)
			}
			if got, want := qNum(m["match_count"]), fmt.Sprint(len(tc.want)); got != want {
				t.Fatalf("match_count %s, want %s", got, want)
			}
		})
	}
}

func TestQueryArgumentErrors(t *testing.T) {
	s := qPredicateService(t)
	long := strings.Repeat("f", 129)
	many := func(n int, f func(i int) string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = f(i)
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
	for _, tc := range []struct {
		name, input, code, text string
	}{
		// The tool layer's argument checks.
		{"empty field", `{"predicates":[{"field":"","op":"eq","value":1}]}`, "InvalidArguments", "field"},
		{"exists with value", `{"predicates":[{"field":"score","op":"exists","value":1}]}`, "InvalidArguments", "exists"},
		{"not_exists with value", `{"predicates":[{"field":"score","op":"not_exists","value":"x"}]}`, "InvalidArguments", "not_exists"},
		{"eq without value", `{"predicates":[{"field":"score","op":"eq"}]}`, "InvalidArguments", "value"},
		{"in without array", `{"predicates":[{"field":"score","op":"in","value":1}]}`, "InvalidArguments", "array"},
		{"in with null", `{"predicates":[{"field":"score","op":"in","value":null}]}`, "InvalidArguments", "array"},
		{"eq with array", `{"predicates":[{"field":"score","op":"eq","value":[1]}]}`, "InvalidArguments", "scalar"},
		{"object value", `{"predicates":[{"field":"score","op":"eq","value":{"a":1}}]}`, "InvalidArguments", "value"},
		{"unknown op", `{"predicates":[{"field":"score","op":"like","value":"a"}]}`, "InvalidArguments", "op"},
		{"empty projected field", `{"fields":[""]}`, "InvalidArguments", "fields"},
		{"duplicate projected field", `{"fields":["path","path"]}`, "InvalidArguments", "duplicate"},
		{"duplicate facet", `{"facets":["path","path"]}`, "InvalidArguments", "duplicate"},
		{"empty facet", `{"facets":[""]}`, "InvalidArguments", "facets"},
		{"duplicate sort", `{"sort":[{"field":"path"},{"field":"path","direction":"desc"}]}`, "InvalidArguments", "unique"},
		{"empty sort field", `{"sort":[{"field":""}]}`, "InvalidArguments", "sort"},
		{"bad direction", `{"sort":[{"field":"path","direction":"up"}]}`, "InvalidArguments", "direction"},
		{"bad id", `{"id":"a.b"}`, "InvalidArguments", "workbench id"},
		{"bad section", `{"section":"nope"}`, "InvalidArguments", "section"},
		{"bad path", `{"path":"a//b"}`, "InvalidArguments", "empty"},
		{"limit zero", `{"limit":0}`, "InvalidArguments", "limit"},
		{"limit over", `{"limit":11}`, "InvalidArguments", "limit"},
		// The storage side's bounds.
		{"65 predicates", `{"predicates":` + many(65, func(int) string { return `{"field":"score","op":"exists"}` }) + `}`, "InvalidState", "predicates"},
		{"65 in values", `{"predicates":[{"field":"score","op":"in","value":` + many(65, func(i int) string { return fmt.Sprint(i) }) + `}]}`, "InvalidState", "in"},
		{"65 fields", `{"fields":` + many(65, func(i int) string { return fmt.Sprintf(`"f%d"`, i) }) + `}`, "InvalidState", "fields"},
		{"9 sort fields", `{"sort":` + many(9, func(i int) string { return fmt.Sprintf(`{"field":"f%d"}`, i) }) + `}`, "InvalidState", "sort"},
		{"17 facets", `{"facets":` + many(17, func(i int) string { return fmt.Sprintf(`"f%d"`, i) }) + `}`, "InvalidState", "facet"},
		{"long field id", `{"predicates":[{"field":"` + long + `","op":"exists"}]}`, "InvalidState", "128"},
		{"long projected id", `{"fields":["` + long + `"]}`, "InvalidState", "128"},
		{"long scalar", `{"predicates":[{"field":"path","op":"eq","value":"` + strings.Repeat("x", 64<<10+1) + `"}]}`, "InvalidState", "65536"},
		// The type rules.
		{"float against unsigned", `{"predicates":[{"field":"logical_size","op":"gt","value":1.5}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"negative against unsigned", `{"predicates":[{"field":"logical_size","op":"gt","value":-1}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"number against string", `{"predicates":[{"field":"content_type","op":"eq","value":5}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"string against unsigned", `{"predicates":[{"field":"generation","op":"eq","value":"1"}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"unsigned against signed", `{"predicates":[{"field":"delta","op":"eq","value":3}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"integral float against unsigned", `{"predicates":[{"field":"score","op":"eq","value":10.0}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"bool against string", `{"predicates":[{"field":"tag","op":"eq","value":true}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"mixed in", `{"predicates":[{"field":"logical_size","op":"in","value":[1,"a"]}]}`, "InvalidState", "comparison value has a different scalar type"},
		{"prefix on unsigned", `{"predicates":[{"field":"generation","op":"prefix","value":1}]}`, "InvalidState", "prefix"},
		{"contains on bool", `{"predicates":[{"field":"flag","op":"contains","value":true}]}`, "InvalidState", "contains"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := call(t, s, "workbench_search", tc.input)
			if tc.code == "InvalidArguments" {
				qErr(t, m, ok, tc.code, false)
			} else {
				qErr(t, m, ok, tc.code, false, qServerKeys...)
			}
			qMessage(t, m, tc.text)
		})
	}
}

func TestQueryTypeConflictsAndNullTypes(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "a", qFile("outputs/x", "1", qUint("n", 1), qNull("z")))
	workbench.SeedQueryWorkbench(t, s, "b", qFile("outputs/y", "2", qNull("z")))
	// A field seen only as null has type null: not sortable, and only a
	// null operand compares with it.
	m, ok := call(t, s, "workbench_search", `{"sort":[{"field":"z"}]}`)
	qErr(t, m, ok, "InvalidState", false, qServerKeys...)
	qMessage(t, m, "sortable")
	m, ok = call(t, s, "workbench_search", `{"predicates":[{"field":"z","op":"eq","value":1}]}`)
	qErr(t, m, ok, "InvalidState", false, qServerKeys...)
	m = mustCall(t, s, "workbench_search", `{"predicates":[{"field":"z","op":"eq","value":null}]}`)
	if got := qMatchPaths(m); !slices.Equal(got, []string{"a/outputs/x", "b/outputs/y"}) {
		t.Fatalf("matches %v", got)
	}
	// Two kinds for one field across the scope are a storage-side error,
	// in every query tool; one workbench alone is fine.
	workbench.SeedQueryWorkbench(t, s, "c", qFile("outputs/w", "3", qStr("n", "one")))
	for _, tool := range []string{"workbench_search", "workbench_catalog"} {
		m, ok := call(t, s, tool, `{}`)
		qErr(t, m, ok, "InvalidState", false, qServerKeys...)
		qMessage(t, m, "conflicting scalar types")
	}
	m, ok = call(t, s, "workbench_aggregate", `{"measures":[{"name":"n","op":"count"}]}`)
	qErr(t, m, ok, "InvalidState", false, qServerKeys...)
	mustCall(t, s, "workbench_search", `{"id":"c","predicates":[{"field":"n","op":"eq","value":"one"}]}`)
}

func TestQueryScope(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "wb2",
		qFile("outputs/dir/x.txt", "x"),
		qFile("outputs/dir2/y.txt", "y"),
		qFile("outputs/dir-b/z.txt", "z"),
		qFile("logs/l.txt", "l"),
	)
	workbench.SeedQueryWorkbench(t, s, "wb1", qFile("outputs/dir/a.txt", "a"), qFile("top.txt", "t"))
	workbench.SeedQueryStagingWorkbench(t, s, "wb0", qFile("outputs/dir/hidden.txt", "h"))
	for _, tc := range []struct {
		name, input, path string
		want              []string
	}{
		{"root", `{}`, "/agents/test/wb", []string{
			"wb1/outputs/dir/a.txt", "wb1/top.txt",
			"wb2/logs/l.txt", "wb2/outputs/dir/x.txt", "wb2/outputs/dir-b/z.txt", "wb2/outputs/dir2/y.txt"}},
		{"root section", `{"section":"outputs"}`, "/agents/test/wb", []string{
			"wb1/outputs/dir/a.txt", "wb2/outputs/dir/x.txt", "wb2/outputs/dir-b/z.txt", "wb2/outputs/dir2/y.txt"}},
		{"root section path", `{"section":"outputs","path":"dir"}`, "/agents/test/wb", []string{
			"wb1/outputs/dir/a.txt", "wb2/outputs/dir/x.txt"}},
		{"root null id", `{"id":null,"path":"top.txt"}`, "/agents/test/wb", []string{"wb1/top.txt"}},
		{"workbench", `{"id":"wb2"}`, "/agents/test/wb/wb2", []string{
			"wb2/logs/l.txt", "wb2/outputs/dir/x.txt", "wb2/outputs/dir-b/z.txt", "wb2/outputs/dir2/y.txt"}},
		{"section", `{"id":"wb2","section":"outputs"}`, "/agents/test/wb/wb2/outputs", []string{
			"wb2/outputs/dir/x.txt", "wb2/outputs/dir-b/z.txt", "wb2/outputs/dir2/y.txt"}},
		{"component prefix", `{"id":"wb2","section":"outputs","path":"dir"}`, "/agents/test/wb/wb2/outputs/dir", []string{
			"wb2/outputs/dir/x.txt"}},
		{"exact artifact", `{"id":"wb2","section":"outputs","path":"dir/x.txt"}`, "/agents/test/wb/wb2/outputs/dir/x.txt", []string{
			"wb2/outputs/dir/x.txt"}},
		{"no artifacts", `{"id":"wb2","section":"input"}`, "/agents/test/wb/wb2/input", nil},
		{"path only", `{"id":"wb2","path":"logs"}`, "/agents/test/wb/wb2/logs", []string{"wb2/logs/l.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mustCall(t, s, "workbench_search", tc.input)
			if got := qMatchPaths(m); !slices.Equal(got, tc.want) {
				t.Fatalf("matches %v, want %v", got, tc.want)
			}
			if m["path"] != tc.path {
				t.Fatalf("path %v, want %s", m["path"], tc.path)
			}
			agg := mustCall(t, s, "workbench_aggregate", strings.TrimSuffix(tc.input, "}")+qComma(tc.input)+`"measures":[{"name":"n","op":"count"}]}`)
			if agg["path"] != tc.path || qNum(agg["input_match_count"]) != fmt.Sprint(len(tc.want)) {
				t.Fatalf("aggregate %v, want path %s and %d rows", agg, tc.path, len(tc.want))
			}
		})
	}
	// A staging workbench is invisible even by id; so is a missing one:
	// both are empty scopes, not NotFound (TestQueryMissingWorkbenchIsEmpty).
	for _, id := range []string{"wb0", "nope"} {
		m := mustCall(t, s, "workbench_search", `{"id":"`+id+`"}`)
		if qNum(m["match_count"]) != "0" {
			t.Fatalf("search of %s: %v", id, m)
		}
		m = mustCall(t, s, "workbench_catalog", `{"id":"`+id+`"}`)
		if m["catalog_empty"] != true {
			t.Fatalf("catalog of %s: %v", id, m)
		}
	}
	// Hits outside the sections have section null and the whole path as
	// relative_path.
	m := mustCall(t, s, "workbench_search", `{"id":"wb1"}`)
	top := m["matches"].([]any)[1].(map[string]any)
	if top["section"] != nil || top["relative_path"] != "top.txt" || top["workbench_id"] != "wb1" {
		t.Fatalf("top-level hit %v", top)
	}
	in := m["matches"].([]any)[0].(map[string]any)
	if in["section"] != "outputs" || in["relative_path"] != "dir/a.txt" || in["path"] != "/agents/test/wb/wb1/outputs/dir/a.txt" {
		t.Fatalf("section hit %v", in)
	}
}

// qComma is "," when a JSON object literal has members.
func qComma(obj string) string {
	if strings.TrimSpace(obj) == "{}" {
		return ""
	}
	return ","
}

func TestQuerySortOrder(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "b",
		qFile("outputs/a-b/x", "1", qUint("rank", 2)),
		qFile("outputs/a/x", "22", qUint("rank", 2)),
		qFile("outputs/m", "333"),
		qFile("outputs/n", "4444", qUint("rank", 1)),
	)
	workbench.SeedQueryWorkbench(t, s, "a", qFile("outputs/z", "55555", qUint("rank", 2)))
	for _, tc := range []struct {
		sort string
		want []string
	}{
		// The stable order: workbench id, then path component by
		// component ("a" before "a-b").
		{`[]`, []string{"a/outputs/z", "b/outputs/a/x", "b/outputs/a-b/x", "b/outputs/m", "b/outputs/n"}},
		// Missing values first for asc, last for desc; ties keep the
		// stable order in both directions.
		{`[{"field":"rank"}]`, []string{"b/outputs/m", "b/outputs/n", "a/outputs/z", "b/outputs/a/x", "b/outputs/a-b/x"}},
		{`[{"field":"rank","direction":"desc"}]`, []string{"a/outputs/z", "b/outputs/a/x", "b/outputs/a-b/x", "b/outputs/n", "b/outputs/m"}},
		{`[{"field":"logical_size","direction":"desc"}]`, []string{"a/outputs/z", "b/outputs/n", "b/outputs/m", "b/outputs/a/x", "b/outputs/a-b/x"}},
		{`[{"field":"rank","direction":"desc"},{"field":"logical_size"}]`, []string{"b/outputs/a-b/x", "b/outputs/a/x", "a/outputs/z", "b/outputs/n", "b/outputs/m"}},
		{`[{"field":"path","direction":"desc"}]`, []string{"a/outputs/z", "b/outputs/n", "b/outputs/m", "b/outputs/a/x", "b/outputs/a-b/x"}},
	} {
		t.Run(tc.sort, func(t *testing.T) {
			m := mustCall(t, s, "workbench_search", `{"sort":`+tc.sort+`}`)
			if got := qMatchPaths(m); !slices.Equal(got, tc.want) {
				t.Fatalf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// A field id outside the scope's catalog is refused wherever a query
// names it, as the reference's server refuses it: InvalidState "unknown
// query field" with the server's details, never an empty or null result.
func TestQueryUnknownFields(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/a", "x", qUint("n", 1)))
	for _, tc := range []struct{ tool, input string }{
		{"workbench_search", `{"predicates":[{"field":"nope","op":"eq","value":1}]}`},
		{"workbench_search", `{"predicates":[{"field":"nope","op":"not_exists"}]}`},
		{"workbench_search", `{"sort":[{"field":"nope"}]}`},
		{"workbench_search", `{"fields":["n","nope"]}`},
		{"workbench_search", `{"facets":["nope"]}`},
		{"workbench_search", `{"id":"w","fields":["artifact.producer"]}`},
		{"workbench_aggregate", `{"group_by":["nope"],"measures":[{"name":"c","op":"count"}]}`},
		{"workbench_aggregate", `{"measures":[{"name":"c","op":"count","field":"nope"}]}`},
		{"workbench_aggregate", `{"measures":[{"name":"s","op":"sum","field":"nope"}]}`},
		{"workbench_aggregate", `{"predicates":[{"field":"nope","op":"exists"}],"measures":[{"name":"c","op":"count"}]}`},
		// A missing workbench is an empty scope: only the built-ins.
		{"workbench_search", `{"id":"missing","fields":["n"]}`},
	} {
		t.Run(tc.tool+" "+tc.input, func(t *testing.T) {
			m, ok := call(t, s, tc.tool, tc.input)
			qErr(t, m, ok, "InvalidState", false, qServerKeys...)
			if msg, _ := m["message"].(string); !strings.HasPrefix(msg, "unknown query field ") {
				t.Fatalf("message %q", msg)
			}
			if d := m["details"].(map[string]any); d["code"] != "InvalidArgument" || d["conflict"] != nil || d["current_generation"] != nil {
				t.Fatalf("details %v", d)
			}
		})
	}
	// Known fields, custom and built-in, still work.
	mustCall(t, s, "workbench_search", `{"fields":["n","path"],"facets":["n"],"sort":[{"field":"n"}],"predicates":[{"field":"n","op":"exists"}]}`)
}

// A workbench that does not exist is an empty scope for the query tools,
// as in the reference: search finds nothing, aggregate has its one empty
// group, the catalog is empty. Not NotFound.
func TestQueryMissingWorkbenchIsEmpty(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/a", "x"))
	for _, id := range []string{"missing", "never-written"} {
		got := qSearch(t, s, `{"id":"`+id+`","section":"outputs","predicates":[{"field":"logical_size","op":"gt","value":0}],"fields":["path"],"facets":["content_type"]}`)
		want := `{"facets":[{"distinct_count":0,"field":"content_type","truncated":false,"values":[]}],"match_count":0,"matches":[],"next_cursor":null,"path":"/agents/test/wb/` + id + `/outputs","status":"success","truncated":false}`
		if got != want {
			t.Fatalf("search:\ngot  %s\nwant %s", got, want)
		}
		got = qAggregate(t, s, `{"id":"`+id+`","measures":[{"name":"n","op":"count"},{"name":"s","op":"sum","field":"logical_size"}]}`)
		want = `{"group_count":1,"groups":[{"key":{},"values":{"n":0,"s":null}}],"input_match_count":0,"path":"/agents/test/wb/` + id + `","row_count":0,"status":"success","truncated":false}`
		if got != want {
			t.Fatalf("aggregate:\ngot  %s\nwant %s", got, want)
		}
		got = qCatalog(t, s, `{"id":"`+id+`"}`)
		want = `{"catalog":{"facetable":[],"facets":[],"filterable":[],"sortable":[]},"catalog_empty":true,"child_catalogs":[],"path":"/agents/test/wb/` + id + `","status":"success"}`
		if got != want {
			t.Fatalf("catalog:\ngot  %s\nwant %s", got, want)
		}
	}
}

// qSearch runs a search and returns its raw result text.
func qSearch(t *testing.T, s *workbench.Service, input string) string {
	t.Helper()
	out, ok := s.Call(context.Background(), "workbench_search", []byte(input))
	if !ok {
		t.Fatalf("search %s failed: %s", input, out)
	}
	return string(out)
}
