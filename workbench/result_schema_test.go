package workbench_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The result schemas (ResultSchema, ErrorEnvelopeSchema) are checked with
// a full JSON Schema validator, draft 2020-12: the transcript's examples
// and every result variant the real tools answer must validate, and a
// result missing a required member, or carrying one the schema does not
// name, must not.

// resultSchemas holds the compiled result schemas.
type resultSchemas struct {
	tools    map[string]*jsonschema.Resolved
	envelope *jsonschema.Resolved
}

func compileResultSchemas(t *testing.T) resultSchemas {
	t.Helper()
	rs := resultSchemas{tools: map[string]*jsonschema.Resolved{}, envelope: compileSchema(t, "error envelope", workbench.ErrorEnvelopeSchema())}
	for _, tool := range workbench.Tools() {
		raw, ok := workbench.ResultSchema(tool)
		if !ok {
			t.Fatalf("ResultSchema(%q) missing", tool)
		}
		rs.tools[tool] = compileSchema(t, tool, raw)
	}
	return rs
}

func compileSchema(t *testing.T, what string, raw []byte) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("%s: schema: %v", what, err)
	}
	if s.Type != "object" {
		t.Fatalf(`%s: schema type %q, want "object"`, what, s.Type)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("%s: resolve schema: %v", what, err)
	}
	return r
}

// validate checks a result, as JSON text, against tool's result schema
// (ok) or the error envelope's.
func (rs resultSchemas) validate(tool string, out []byte, ok bool) error {
	var v any
	if err := json.Unmarshal(out, &v); err != nil {
		return err
	}
	if !ok {
		return rs.envelope.Validate(v)
	}
	return rs.tools[tool].Validate(v)
}

// readTranscript reads the reference's result transcript; outside CI a
// checkout without shared/ skips.
func readTranscript(t *testing.T) map[string]map[string]json.RawMessage {
	t.Helper()
	raw, err := os.ReadFile("../../shared/reference/workbench/result-transcript.json")
	if err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("transcript not available: %v", err)
		}
		t.Fatal(err)
	}
	var tr map[string]json.RawMessage
	if err := json.Unmarshal(raw, &tr); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]json.RawMessage{}
	for _, part := range []string{"success", "replays", "errors"} {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(tr[part], &m); err != nil {
			t.Fatalf("transcript %s: %v", part, err)
		}
		out[part] = m
	}
	return out
}

// TestResultSchemasAcceptTheTranscript: every success and replay example
// of the transcript validates against its tool's result schema, and every
// error example against the envelope's; all 18 tools have an example.
func TestResultSchemasAcceptTheTranscript(t *testing.T) {
	rs := compileResultSchemas(t)
	tr := readTranscript(t)
	for _, part := range []string{"success", "replays"} {
		for tool, ex := range tr[part] {
			if err := rs.validate(tool, ex, true); err != nil {
				t.Errorf("%s %s: %v", part, tool, err)
			}
			// Each member the schema requires is required indeed.
			for _, name := range requiredMembers(t, tool, ex) {
				if err := rs.validate(tool, without(t, ex, name), true); err == nil {
					t.Errorf("%s %s without %s validates", part, tool, name)
				}
			}
		}
	}
	for name, ex := range tr["errors"] {
		if err := rs.validate("", ex, false); err != nil {
			t.Errorf("error %s: %v", name, err)
		}
	}
	for _, tool := range workbench.Tools()[:18] {
		if tr["success"][tool] == nil {
			t.Errorf("the transcript has no success example of %s", tool)
		}
	}
}

// requiredMembers are the members a tool's result schema requires at the
// top level of out: for workbench_read, those of the answer out is (a
// page, or not modified).
func requiredMembers(t *testing.T, tool string, out []byte) []string {
	t.Helper()
	raw, _ := workbench.ResultSchema(tool)
	var s struct {
		Required []string
		OneOf    []struct{ Required []string }
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	names := s.Required
	for _, alt := range s.OneOf {
		if !slices.ContainsFunc(alt.Required, func(name string) bool { return m[name] == nil }) {
			names = append(names, alt.Required...)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// without returns the JSON object out without its member name.
func without(t *testing.T, out []byte, name string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, name)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// with returns the JSON object out with member name set to value.
func with(t *testing.T, out []byte, name, value string) []byte {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	m[name] = json.RawMessage(value)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestResultSchemasRefuse: a schema that is too loose is caught. Taking
// the transcript's examples, a result without a required member, with a
// member no schema names, or with a member of the wrong type, fails; so
// does a success result against the envelope's schema and an envelope
// against a result schema.
func TestResultSchemasRefuse(t *testing.T) {
	rs := compileResultSchemas(t)
	tr := readTranscript(t)
	for tool, ex := range tr["success"] {
		if req := requiredMembers(t, tool, ex); len(req) < 2 {
			t.Errorf("%s: the schema requires %v", tool, req)
		}
		for _, bad := range []struct {
			what string
			out  []byte
		}{
			{"without status", without(t, ex, "status")},
			{"an unknown member", with(t, ex, "zz_unknown", `1`)},
			{"status error", with(t, ex, "status", `"error"`)},
			{"path a number", with(t, ex, "path", `7`)},
		} {
			if bad.what == "path a number" && tool == "workbench_restore" {
				bad.out = with(t, ex, "restore_manifest", `7`)
			}
			if err := rs.validate(tool, bad.out, true); err == nil {
				t.Errorf("%s with %s validates", tool, bad.what)
			}
		}
		if err := rs.validate(tool, ex, false); err == nil {
			t.Errorf("%s: a success result validates as an error envelope", tool)
		}
	}
	for name, ex := range tr["errors"] {
		if err := rs.validate("workbench_create", ex, true); err == nil {
			t.Errorf("error %s validates as a create result", name)
		}
		if err := rs.validate("", without(t, ex, "retryable"), false); err == nil {
			t.Errorf("error %s without retryable validates", name)
		}
	}
	// Values the contract fixes.
	read := tr["success"]["workbench_read"]
	for _, bad := range [][]byte{
		with(t, read, "format", `"lines"`),
		with(t, read, "not_modified", `true`),
		with(t, tr["success"]["workbench_put_file"], "digest_uri", `"sha256:00"`),
		with(t, tr["success"]["workbench_snapshot"], "state", `"gone"`),
		with(t, tr["success"]["workbench_restore"], "operation_id", `"x"`),
	} {
		if err := rs.validate(toolOf(t, tr, bad), bad, true); err == nil {
			t.Errorf("validates: %s", bad)
		}
	}
}

// toolOf finds the tool whose transcript example out was made from, by
// its member names.
func toolOf(t *testing.T, tr map[string]map[string]json.RawMessage, out []byte) string {
	t.Helper()
	keys := func(b []byte) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "not_modified")
		k := make([]string, 0, len(m))
		for name := range m {
			k = append(k, name)
		}
		slices.Sort(k)
		return strings.Join(k, ",")
	}
	for tool, ex := range tr["success"] {
		if keys(ex) == keys(out) {
			return tool
		}
	}
	t.Fatalf("no tool for %s", out)
	return ""
}

// schemaTour calls tools on a real Service and validates every answer
// against its schema, remembering which tools answered a success.
type schemaTour struct {
	t   *testing.T
	s   *workbench.Service
	rs  resultSchemas
	got map[string][][]byte // successes, by tool
}

// call runs one tool, validates its answer, and returns it decoded; ok is
// the answer wanted.
func (tour *schemaTour) call(tool, input string, ok bool) map[string]any {
	t := tour.t
	t.Helper()
	out, gotOK := tour.s.Call(t.Context(), tool, []byte(input))
	if gotOK != ok {
		t.Fatalf("%s %s: ok %v, want %v: %s", tool, input, gotOK, ok, out)
	}
	if err := tour.rs.validate(tool, out, ok); err != nil {
		t.Errorf("%s %s: %v\n%s", tool, input, err, out)
	}
	if ok {
		tour.got[tool] = append(tour.got[tool], out)
	}
	var m map[string]any
	if err := jsonUnmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func (tour *schemaTour) ok(tool, input string) map[string]any { return tour.call(tool, input, true) }

// TestResultSchemasOfRealResults runs every tool through a Service, in
// the variants its result has (a file read as records and as bytes, and
// not modified; a list page with and without a cursor, live and at a
// snapshot; a commit and its replay; a snapshot alive, renewed, retired,
// expired and reaped; restores from a snapshot and from a commit, and a
// replay; errors), and validates each answer against its schema. Then,
// for one real result of each tool, a copy without a required member, or
// with an unknown one, must fail.
func TestResultSchemasOfRealResults(t *testing.T) {
	s, clk := snapService(t)
	tour := &schemaTour{t: t, s: s, rs: compileResultSchemas(t), got: map[string][][]byte{}}
	tourFiles(tour)
	tourReads(tour)
	tourQueries(tour)
	tourHistory(tour, clk)
	for _, tool := range workbench.Tools()[:18] {
		outs := tour.got[tool]
		if len(outs) == 0 {
			t.Errorf("%s: no success result validated", tool)
			continue
		}
		for _, out := range outs {
			for _, name := range requiredMembers(t, tool, out) {
				if err := tour.rs.validate(tool, without(t, out, name), true); err == nil {
					t.Errorf("%s without %s validates: %s", tool, name, out)
				}
			}
		}
		if err := tour.rs.validate(tool, with(t, outs[0], "zz_unknown", `null`), true); err == nil {
			t.Errorf("%s with an unknown member validates", tool)
		}
	}
}

func tourFiles(tour *schemaTour) {
	tour.ok("workbench_create", `{"id":"wb"}`)
	tour.ok("workbench_create", `{"id":"wb"}`)
	tour.ok("workbench_put_file", `{"id":"wb","section":"outputs","path":"report.txt","text":"Hello world\nsecond\n"}`)
	tour.ok("workbench_put_file", `{"id":"wb","section":"outputs","path":"report.txt","text":"Hello world\nsecond\nthird\n","replace":true}`)
	tour.ok("workbench_put_file", `{"id":"wb","section":"input","path":"data/rows.json","text":"[{\"a\":1},{\"a\":2.5},null,\"x\",[true]]"}`)
	tour.ok("workbench_put_file", `{"id":"wb","section":"input","path":"conf.yaml","text":"a: 1\nb: [x, y]\n"}`)
	tour.ok("workbench_put_file", `{"id":"wb","section":"input","path":"one.json","text":"{\"k\":\"v\"}","content_type":"application/json"}`)
	tour.ok("workbench_put_file", `{"id":"wb","section":"scripts","path":"blob.bin","base64":"AAECAwQFBgcICQ=="}`)
	tour.ok("workbench_append", `{"id":"wb","section":"logs","path":"run.log","text":"started\n"}`)
	tour.ok("workbench_append", `{"id":"wb","section":"logs","path":"run.log","base64":"ZG9uZQo="}`)
	tour.ok("workbench_edit", `{"id":"wb","section":"outputs","path":"report.txt","old_string":"world","new_string":"there"}`)
	tour.ok("workbench_edit", `{"id":"wb","section":"outputs","path":"report.txt","old_string":"there","new_string":"there"}`)
	tour.ok("workbench_edit", `{"id":"wb","section":"logs","path":"run.log","old_string":"e","new_string":"E","replace_all":true}`)
	tour.call("workbench_put_file", `{"id":"wb","section":"outputs","path":"report.txt","text":"again"}`, false)
	tour.call("workbench_edit", `{"id":"wb","section":"outputs","path":"report.txt","old_string":"absent","new_string":"x"}`, false)
	tour.call("workbench_create", `{"id":"not an id"}`, false)
}

func tourReads(tour *schemaTour) {
	t := tour.t
	tour.ok("workbench_list", `{"id":"wb"}`)
	page := tour.ok("workbench_list", `{"id":"wb","section":"input","limit":1}`)
	cursor, _ := page["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("list page without a cursor: %v", page)
	}
	tour.ok("workbench_list", `{"id":"wb","section":"input","limit":1,"cursor":`+js(cursor)+`}`)
	tour.ok("workbench_list", `{"id":"wb","section":"input","path":"data"}`)
	tour.call("workbench_list", `{"id":"wb","section":"outputs","path":"report.txt"}`, false)
	for _, in := range []string{
		`{"id":"wb"}`, `{"id":"wb","section":"outputs"}`, `{"id":"wb","section":"input","path":"data"}`,
		`{"id":"wb","section":"outputs","path":"report.txt"}`,
	} {
		tour.ok("workbench_stat", in)
	}
	tour.call("workbench_stat", `{"id":"wb","section":"outputs","path":"missing"}`, false)
	for _, in := range []string{
		`{"id":"wb","section":"outputs","path":"report.txt","limit":1}`,
		`{"id":"wb","section":"outputs","path":"report.txt","cursor":"r:1"}`,
		`{"id":"wb","section":"input","path":"data/rows.json"}`,
		`{"id":"wb","section":"input","path":"conf.yaml"}`,
		`{"id":"wb","section":"input","path":"one.json"}`,
		`{"id":"wb","section":"scripts","path":"blob.bin","format":"bytes","limit":4}`,
		`{"id":"wb","section":"scripts","path":"blob.bin","format":"bytes","cursor":"b:8"}`,
	} {
		tour.ok("workbench_read", in)
	}
	gen := tour.ok("workbench_stat", `{"id":"wb","section":"outputs","path":"report.txt"}`)["card"].(map[string]any)["generation"]
	nm := tour.ok("workbench_read", `{"id":"wb","section":"outputs","path":"report.txt","if_none_match":`+js(gen)+`}`)
	if nm["not_modified"] != true {
		t.Fatalf("read if_none_match: %v", nm)
	}
	tour.call("workbench_read", `{"id":"wb","section":"outputs","path":"report.txt","cursor":"b:1"}`, false)
	tour.ok("workbench_grep", `{"id":"wb","pattern":"e","recursive":true}`)
	g := tour.ok("workbench_grep", `{"id":"wb","section":"outputs","pattern":"hello|third","recursive":false,"glob":"*.txt","limit":1}`)
	cursor, _ = g["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("grep page without a cursor: %v", g)
	}
	tour.ok("workbench_grep", `{"id":"wb","section":"outputs","pattern":"hello|third","recursive":false,"glob":"*.txt","limit":1,"cursor":`+js(cursor)+`}`)
}

func tourQueries(tour *schemaTour) {
	t := tour.t
	// Index fields of every scalar type, a null, and a file outside the
	// five sections.
	workbench.SeedQueryWorkbench(t, tour.s, "q",
		workbench.QuerySeedFile{Path: "outputs/a.txt", Body: []byte("alpha"),
			Index: []nokv.IndexField{qUint("score", 10), qInt("delta", -3), qFloat("ratio", 0.5), qStr("tag", "x"), qBool("flag", true)}},
		workbench.QuerySeedFile{Path: "outputs/b.json", Body: []byte("{}"), ContentType: "application/json",
			Index: []nokv.IndexField{qUint("score", 20), qInt("delta", 4), qFloat("ratio", 1.25), qStr("tag", "y"), qBool("flag", false)}},
		workbench.QuerySeedFile{Path: "logs/run.log", Body: []byte("0123456789"), Index: []nokv.IndexField{qNull("tag")}},
		workbench.QuerySeedFile{Path: "other/x.bin", Body: []byte("xyz"), ContentType: "application/octet-stream"},
	)
	fields := `"fields":["score","delta","ratio","tag","flag","producer","logical_size"]`
	s := tour.ok("workbench_search", `{"id":"q",`+fields+`,"facets":["tag","flag","ratio"],"limit":2}`)
	cursor, _ := s["next_cursor"].(string)
	if cursor == "" {
		t.Fatalf("search page without a cursor: %v", s)
	}
	tour.ok("workbench_search", `{"id":"q",`+fields+`,"facets":["tag","flag","ratio"],"limit":2,"cursor":`+js(cursor)+`}`)
	tour.ok("workbench_search", `{"predicates":[{"field":"tag","op":"in","value":["x","y"]}],"sort":[{"field":"score","direction":"desc"}]}`)
	tour.ok("workbench_search", `{"id":"q","section":"outputs"}`)
	measures := `"measures":[{"name":"n","op":"count"},{"name":"sum","op":"sum","field":"score"},{"name":"avg","op":"avg","field":"ratio"},` +
		`{"name":"lo","op":"min","field":"delta"},{"name":"hi","op":"max","field":"tag"}]`
	tour.ok("workbench_aggregate", `{"id":"q","group_by":["tag"],`+measures+`}`)
	tour.ok("workbench_aggregate", `{"id":"q","group_by":["flag","tag"],`+measures+`,"limit":1}`)
	tour.ok("workbench_aggregate", `{`+measures+`}`)
	tour.ok("workbench_aggregate", `{"id":"q","predicates":[{"field":"score","op":"gt","value":1000}],`+measures+`}`)
	tour.call("workbench_aggregate", `{"measures":[{"name":"s","op":"sum","field":"tag"}]}`, false)
	tour.ok("workbench_catalog", `{}`)
	tour.ok("workbench_catalog", `{"id":"q","field_prefix":"s","include_facets":true}`)
	tour.ok("workbench_catalog", `{"id":"wb","section":"outputs","field_prefix":"zz"}`)
}

func tourHistory(tour *schemaTour, clk *fakeClock) {
	t := tour.t
	commit := `{"id":"wb","manifest":{"task":"tour","steps":3},"content_digest_uri":"` + digest.Sum([]byte("tour")).URI() + `"}`
	tour.ok("workbench_commit", commit)
	if r := tour.ok("workbench_commit", commit); r["idempotent_replay"] != true {
		t.Fatalf("commit replay: %v", r)
	}
	tour.call("workbench_commit", `{"id":"wb","manifest":{},"content_digest_uri":"`+digest0+`"}`, false)
	c := tour.ok("workbench_commit", `{"id":"wb","manifest":{"task":"tour","steps":4},"content_digest_uri":"`+digest0+`","replace":true}`)
	tour.ok("workbench_create", `{"id":"empty"}`)
	tour.ok("workbench_find", `{}`)
	tour.ok("workbench_find", `{"include_manifest":true,"committed":true}`)
	tour.ok("workbench_find", `{"manifest_pattern":"TOUR"}`)
	f := tour.ok("workbench_find", `{"committed":false,"limit":1}`)
	if cursor, _ := f["next_cursor"].(string); cursor != "" {
		tour.ok("workbench_find", `{"committed":false,"limit":1,"cursor":`+js(cursor)+`}`)
	}

	named := tour.ok("workbench_snapshot", `{"id":"wb","name":"before","ttl_days":3,"reason":"tour","metadata":{"suite":"schemas","n":[1,{"x":null}]}}`)
	tour.ok("workbench_snapshot", `{"id":"wb"}`) // default lease: expiry_warning
	short := tour.ok("workbench_snapshot", `{"id":"wb","name":"short","ttl_days":1}`)
	tour.ok("workbench_snapshot_renew", `{"id":"wb","name":"before","ttl_days":5}`)
	tour.ok("workbench_snapshot_renew", `{"id":"wb","snapshot_id":`+js(named["snapshot_id"])+`,"ttl_days":1}`)
	tour.call("workbench_snapshot", `{"id":"empty"}`, false)
	tour.ok("workbench_list", `{"id":"wb","section":"outputs","at_snapshot":"before"}`)
	tour.ok("workbench_list", `{"id":"wb","at_snapshot":`+js(named["snapshot_id"])+`,"limit":1}`)
	tour.ok("workbench_stat", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":"before"}`)
	tour.ok("workbench_read", `{"id":"wb","section":"outputs","path":"report.txt","at_snapshot":"before"}`)

	tour.ok("workbench_restore", `{"id":"wb","destination_id":"from-snap","at_snapshot":"before"}`)
	if r := tour.ok("workbench_restore", `{"id":"wb","destination_id":"from-snap","at_snapshot":"before"}`); r["idempotent_replay"] != true {
		t.Fatalf("restore replay: %v", r)
	}
	tour.ok("workbench_restore", `{"id":"wb","destination_id":"from-commit","at_commit":`+js(c["commit_identity"])+`}`)
	tour.call("workbench_restore", `{"id":"wb","destination_id":"wb","at_snapshot":"before"}`, false)

	tour.ok("workbench_snapshot_retire", `{"id":"wb","name":"before","reason":"done"}`)
	tour.ok("workbench_snapshot_retire", `{"id":"wb","name":"before"}`) // already retired
	tour.ok("workbench_snapshot_list", `{"id":"wb"}`)
	// A day and a half on, short is expired; past the grace, reaped.
	clk.advance(day + 30*time.Second)
	if st := snapshotStates(tour.ok("workbench_snapshot_list", `{"id":"wb"}`)); st[js(short["snapshot_id"])] != "expired" {
		t.Errorf("snapshot states %v", st)
	}
	clk.advance(time.Minute)
	if st := snapshotStates(tour.ok("workbench_snapshot_list", `{"id":"wb"}`)); st[js(short["snapshot_id"])] != "reaped" {
		t.Errorf("snapshot states %v", st)
	}
	tour.ok("workbench_snapshot_list", `{"id":"empty"}`)
	tour.call("workbench_snapshot_retire", `{"id":"wb","snapshot_id":1}`, false)
}

// snapshotStates maps the snapshot ids of a snapshot_list result to their
// states.
func snapshotStates(list map[string]any) map[string]string {
	states := map[string]string{}
	for _, e := range list["snapshots"].([]any) {
		m := e.(map[string]any)
		states[js(m["snapshot_id"])] = m["state"].(string)
	}
	return states
}

// optionalMembers are the only result members the contract lets a result
// leave out: at_snapshot for a live read, expiry_warning when ttl_days
// was given.
var optionalMembers = []string{"at_snapshot", "expiry_warning"}

// TestResultSchemasRequireEveryMember: in every object of every result
// schema (nested ones too), each property is required but for
// optionalMembers, and no other member is allowed; so a schema that
// forgets a required member fails here, whatever the results seen.
func TestResultSchemasRequireEveryMember(t *testing.T) {
	check := func(tool, at string, s map[string]any) {
		props, _ := s["properties"].(map[string]any)
		if props == nil {
			return
		}
		var req []string
		for _, r := range s["required"].([]any) {
			req = append(req, r.(string))
		}
		for name := range props {
			if !slices.Contains(req, name) && !slices.Contains(optionalMembers, name) {
				t.Errorf("%s %s: %s is not required", tool, at, name)
			}
		}
		if s["additionalProperties"] != false {
			t.Errorf("%s %s: other members are allowed", tool, at)
		}
	}
	for _, tool := range workbench.Tools()[:18] {
		raw, _ := workbench.ResultSchema(tool)
		var v any
		if err := json.Unmarshal(raw, &v); err != nil {
			t.Fatal(err)
		}
		walkSchemas(v, "$", func(at string, s map[string]any) { check(tool, at, s) })
	}
}

// walkSchemas calls f on every schema object within v.
func walkSchemas(v any, at string, f func(at string, s map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		f(at, x)
		for k, sub := range x {
			switch k {
			case "properties":
				for name, p := range sub.(map[string]any) {
					walkSchemas(p, at+"."+name, f)
				}
			case "items", "additionalProperties":
				walkSchemas(sub, at+"[]", f)
			case "anyOf", "oneOf", "allOf":
				for _, alt := range sub.([]any) {
					walkSchemas(alt, at, f)
				}
			}
		}
	}
}
