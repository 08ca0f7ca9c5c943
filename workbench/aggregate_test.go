package workbench_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The transcript's workbench_aggregate result, byte for byte as the
// reference prints it (keys sorted, compact).
const qTranscriptAggregate = `{"group_count":1,"groups":[{"key":{"artifact.producer":"agent"},"values":{"artifacts":1}}],"input_match_count":1,"path":"/agents/test/wb/wb-main/outputs","row_count":1,"status":"success","truncated":false}`

func TestAggregateTranscript(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "wb-main",
		qFile("outputs/report.txt", "Hello world\n", qStr("artifact.producer", "agent")),
		qFile("logs/other.txt", "x", qStr("artifact.producer", "agent")),
	)
	out, ok := s.Call(context.Background(), "workbench_aggregate",
		[]byte(`{"id":"wb-main","section":"outputs","group_by":["artifact.producer"],"measures":[{"name":"artifacts","op":"count"}]}`))
	if !ok || string(out) != qTranscriptAggregate {
		t.Fatalf("got  %s\nwant %s", out, qTranscriptAggregate)
	}
}

// qAggregate runs an aggregate and returns its raw result text.
func qAggregate(t *testing.T, s *workbench.Service, input string) string {
	t.Helper()
	out, ok := s.Call(context.Background(), "workbench_aggregate", []byte(input))
	if !ok {
		t.Fatalf("aggregate %s failed: %s", input, out)
	}
	return string(out)
}

func TestAggregateMeasures(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w",
		workbench.QuerySeedFile{Path: "outputs/a", Body: []byte("12345"), Producer: qPtr("p"),
			Index: []nokv.IndexField{qInt("d", -5), qFloat("r", 0.5), qStr("k", "x"), qUint("u", 7)}},
		workbench.QuerySeedFile{Path: "outputs/b", Body: []byte("1"),
			Index: []nokv.IndexField{qInt("d", 2), qFloat("r", 1.5), qStr("k", "y"), qNull("u")}},
		workbench.QuerySeedFile{Path: "logs/c", Body: []byte("123"), Producer: qPtr("q"),
			Index: []nokv.IndexField{qStr("k", "x")}},
	)
	for _, tc := range []struct{ name, input, want string }{
		{"every measure, one group", `{"id":"w","measures":[
			{"name":"rows","op":"count"},{"name":"producers","op":"count","field":"producer"},
			{"name":"size","op":"sum","field":"logical_size"},{"name":"avg_size","op":"avg","field":"logical_size"},
			{"name":"min_size","op":"min","field":"logical_size"},{"name":"max_size","op":"max","field":"logical_size"},
			{"name":"dsum","op":"sum","field":"d"},{"name":"rsum","op":"sum","field":"r"},{"name":"ravg","op":"avg","field":"r"},
			{"name":"kmin","op":"min","field":"k"},{"name":"kmax","op":"max","field":"k"},
			{"name":"usum","op":"sum","field":"u"},{"name":"ucount","op":"count","field":"u"}]}`,
			`{"group_count":1,"groups":[{"key":{},"values":{"avg_size":3.0,"dsum":-3,"kmax":"y","kmin":"x","max_size":5,"min_size":1,"producers":2,"ravg":1.0,"rows":3,"rsum":2.0,"size":9,"ucount":1,"usum":7}}],"input_match_count":3,"path":"/agents/test/wb/w","row_count":3,"status":"success","truncated":false}`},
		{"no match still one group", `{"id":"w","predicates":[{"field":"logical_size","op":"gt","value":100}],"measures":[
			{"name":"n","op":"count"},{"name":"s","op":"sum","field":"logical_size"},{"name":"a","op":"avg","field":"logical_size"},{"name":"m","op":"min","field":"path"}]}`,
			`{"group_count":1,"groups":[{"key":{},"values":{"a":null,"m":null,"n":0,"s":null}}],"input_match_count":0,"path":"/agents/test/wb/w","row_count":0,"status":"success","truncated":false}`},
		{"no match with group_by has no groups", `{"id":"w","group_by":["k"],"predicates":[{"field":"logical_size","op":"gt","value":100}],"measures":[{"name":"n","op":"count"}]}`,
			`{"group_count":0,"groups":[],"input_match_count":0,"path":"/agents/test/wb/w","row_count":0,"status":"success","truncated":false}`},
		{"group by with null and missing keys", `{"id":"w","group_by":["producer","u"],"measures":[{"name":"n","op":"count"}]}`,
			`{"group_count":3,"groups":[{"key":{"producer":null,"u":null},"values":{"n":1}},{"key":{"producer":"p","u":7},"values":{"n":1}},{"key":{"producer":"q","u":null},"values":{"n":1}}],"input_match_count":3,"path":"/agents/test/wb/w","row_count":3,"status":"success","truncated":false}`},
		{"sort by measure desc", `{"id":"w","group_by":["k"],"measures":[{"name":"n","op":"count"},{"name":"size","op":"sum","field":"logical_size"}],"sort":[{"field":"size","direction":"desc"}]}`,
			`{"group_count":2,"groups":[{"key":{"k":"x"},"values":{"n":2,"size":8}},{"key":{"k":"y"},"values":{"n":1,"size":1}}],"input_match_count":3,"path":"/agents/test/wb/w","row_count":3,"status":"success","truncated":false}`},
		{"sort by group field desc, limit", `{"id":"w","group_by":["path"],"measures":[{"name":"n","op":"count"}],"sort":[{"field":"path","direction":"desc"}],"limit":2}`,
			`{"group_count":3,"groups":[{"key":{"path":"outputs/b"},"values":{"n":1}},{"key":{"path":"outputs/a"},"values":{"n":1}}],"input_match_count":3,"path":"/agents/test/wb/w","row_count":3,"status":"success","truncated":true}`},
		{"root scope section", `{"section":"logs","group_by":["workbench_id"],"measures":[{"name":"n","op":"count"}]}`,
			`{"group_count":1,"groups":[{"key":{"workbench_id":"w"},"values":{"n":1}}],"input_match_count":1,"path":"/agents/test/wb","row_count":1,"status":"success","truncated":false}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := qAggregate(t, s, tc.input); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestAggregateLimits(t *testing.T) {
	s := newService(t)
	for i := range 30 {
		qPut(t, s, "w", "outputs", fmt.Sprintf("%02d", i), strings.Repeat("x", i%25))
	}
	// Default limit 20 groups; group_count is the number of groups in
	// all, returned or not.
	m := mustCall(t, s, "workbench_aggregate", `{"group_by":["logical_size"],"measures":[{"name":"n","op":"count"}]}`)
	groups := m["groups"].([]any)
	if len(groups) != 20 || qNum(m["group_count"]) != "25" || m["truncated"] != true || qNum(m["input_match_count"]) != "30" {
		t.Fatalf("default page %v", m)
	}
	// Groups are in key order by default.
	for i, g := range groups {
		if k := qNum(g.(map[string]any)["key"].(map[string]any)["logical_size"]); k != fmt.Sprint(i) {
			t.Fatalf("group %d has key %s", i, k)
		}
	}
	m = mustCall(t, s, "workbench_aggregate", `{"group_by":["logical_size"],"measures":[{"name":"n","op":"count"}],"limit":100}`)
	if qNum(m["group_count"]) != "25" || m["truncated"] != false {
		t.Fatalf("full page %v", m)
	}
	// Ties on the sort key keep key order.
	m = mustCall(t, s, "workbench_aggregate", `{"group_by":["logical_size"],"measures":[{"name":"n","op":"count"}],"sort":[{"field":"n","direction":"desc"}],"limit":6}`)
	var keys []string
	for _, g := range m["groups"].([]any) {
		keys = append(keys, qNum(g.(map[string]any)["key"].(map[string]any)["logical_size"]))
	}
	if got := strings.Join(keys, ","); got != "0,1,2,3,4,5" {
		t.Fatalf("keys %s", got)
	}
}

func TestAggregateErrors(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/a", "x", qNull("z"), qUint("n", 1)),
		qFile("outputs/b", "y", qUint("n", 1<<63)), qFile("outputs/c", "z", qUint("n", 1<<63)))
	many := func(n int, f func(int) string) string {
		var parts []string
		for i := range n {
			parts = append(parts, f(i))
		}
		return strings.Join(parts, ",")
	}
	for _, tc := range []struct{ name, input, code, text string }{
		{"missing measures", `{}`, "InvalidArguments", "measures"},
		{"empty measure name", `{"measures":[{"name":"","op":"count"}]}`, "InvalidArguments", "name"},
		{"duplicate measure", `{"measures":[{"name":"a","op":"count"},{"name":"a","op":"sum","field":"logical_size"}]}`, "InvalidArguments", "unique"},
		{"sum without field", `{"measures":[{"name":"a","op":"sum"}]}`, "InvalidArguments", "requires a field"},
		{"min with null field", `{"measures":[{"name":"a","op":"min","field":null}]}`, "InvalidArguments", "requires a field"},
		{"empty measure field", `{"measures":[{"name":"a","op":"count","field":""}]}`, "InvalidArguments", "field"},
		{"unknown measure op", `{"measures":[{"name":"a","op":"median","field":"n"}]}`, "InvalidArguments", "op"},
		{"duplicate group_by", `{"group_by":["path","path"],"measures":[{"name":"c","op":"count"}]}`, "InvalidArguments", "duplicate"},
		{"empty group_by", `{"group_by":[""],"measures":[{"name":"c","op":"count"}]}`, "InvalidArguments", "group_by"},
		{"limit over", `{"measures":[{"name":"c","op":"count"}],"limit":101}`, "InvalidArguments", "limit"},
		{"17 measures", `{"measures":[` + many(17, func(i int) string { return fmt.Sprintf(`{"name":"m%d","op":"count"}`, i) }) + `]}`, "InvalidState", "measures"},
		{"9 group_by", `{"group_by":[` + many(9, func(i int) string { return fmt.Sprintf(`"g%d"`, i) }) + `],"measures":[{"name":"c","op":"count"}]}`, "InvalidState", "group_by"},
		{"sort by other field", `{"group_by":["path"],"measures":[{"name":"n","op":"count"}],"sort":[{"field":"logical_size"}]}`, "InvalidState", "logical_size"},
		{"sum of string", `{"measures":[{"name":"s","op":"sum","field":"content_type"}]}`, "InvalidState", "numeric"},
		{"avg of string", `{"measures":[{"name":"s","op":"avg","field":"path"}]}`, "InvalidState", "numeric"},
		{"min of null type", `{"measures":[{"name":"s","op":"min","field":"z"}]}`, "InvalidState", "sortable"},
		{"sum overflows", `{"measures":[{"name":"s","op":"sum","field":"n"}]}`, "InvalidState", "overflows"},
		{"predicate type", `{"measures":[{"name":"c","op":"count"}],"predicates":[{"field":"n","op":"eq","value":"1"}]}`, "InvalidState", "comparison value has a different scalar type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := call(t, s, "workbench_aggregate", tc.input)
			if tc.code == "InvalidArguments" {
				qErr(t, m, ok, tc.code, false)
			} else {
				qErr(t, m, ok, tc.code, false, qServerKeys...)
			}
			qMessage(t, m, tc.text)
		})
	}
	// avg of the same field does not overflow: it is a float.
	if got := qAggregate(t, s, `{"measures":[{"name":"a","op":"avg","field":"n"}],"predicates":[{"field":"n","op":"gt","value":1}]}`); !strings.Contains(got, `"a":9.223372036854776e18`) {
		t.Fatalf("avg %s", got)
	}
}

// An empty measures list, or a measure named like a group_by field, is
// refused by the reference's server, not its tool layer (facts.md 2: the
// tool layer checks only that measures is an array of unique, non-empty
// names with a field where needed; the server bounds measures to 1..16
// and refuses a result id that shadows a group field): InvalidState with
// the server's details, after the tool layer's own checks and before any
// row is read, a missing workbench too.
func TestAggregateMeasureNames(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/a", "x"))
	for _, tc := range []struct{ name, input, text string }{
		{"empty measures", `{"measures":[]}`, "measures"},
		{"empty measures with group_by", `{"group_by":["path"],"measures":[]}`, "measures"},
		{"empty measures, missing workbench", `{"id":"nowhere","measures":[]}`, "measures"},
		{"measure named like a group field", `{"group_by":["path"],"measures":[{"name":"path","op":"count"}]}`, "path"},
		{"measure named like its own group field", `{"group_by":["content_type","logical_size"],"measures":[{"name":"logical_size","op":"max","field":"logical_size"}]}`, "logical_size"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := call(t, s, "workbench_aggregate", tc.input)
			qErr(t, m, ok, "InvalidState", false, qServerKeys...)
			qMessage(t, m, tc.text)
		})
	}
	// The tool layer's checks come first.
	for _, in := range []string{
		`{"group_by":["path","path"],"measures":[]}`,
		`{"group_by":["path"],"measures":[{"name":"path","op":"count"},{"name":"path","op":"count"}]}`,
		`{"measures":[{"name":"","op":"count"}],"group_by":[""]}`,
	} {
		m, ok := call(t, s, "workbench_aggregate", in)
		qErr(t, m, ok, "InvalidArguments", false)
	}
}
