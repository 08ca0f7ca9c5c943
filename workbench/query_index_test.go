package workbench_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// The index-answered queries against the scan: on random workbenches
// written through put_file (creates and replaces, so index rows move and
// are deleted), random searches and aggregates must give exactly the
// scan's results, errors, cursors and facets, page after page.
func TestQueryIndexMatchesScan(t *testing.T) {
	s := newService(t)
	rng := rand.New(rand.NewPCG(8, 11))
	types := []string{"text/plain", "text/csv", "application/json", "image/png", "text/plain; charset=utf-8", "application/x-\u00e9"}
	wbs := []string{"alpha", "beta", "gamma"}
	sections := []string{"outputs", "logs", "input"}
	type file struct{ id, section, path string }
	var files []file
	bodyOf := func() string { return fmt.Sprintf("%0*d", rng.IntN(40), rng.IntN(5)) }
	for i := range 160 {
		var f file
		replace := len(files) > 0 && rng.IntN(4) == 0
		if replace {
			f = files[rng.IntN(len(files))]
		} else {
			f = file{wbs[rng.IntN(len(wbs))], sections[rng.IntN(len(sections))], fmt.Sprintf("d%d/f%03d", rng.IntN(4), i)}
			files = append(files, f)
		}
		qMust(t, s, "workbench_put_file", map[string]any{
			"id": f.id, "section": f.section, "path": f.path, "text": bodyOf(),
			"content_type": types[rng.IntN(len(types))], "replace": replace,
		})
	}
	digests := map[string]bool{}
	for _, id := range wbs {
		m := qMust(t, s, "workbench_search", map[string]any{"id": id, "fields": []string{"body_digest_uri"}, "limit": 10})
		for _, r := range m["matches"].([]any) {
			digests[r.(map[string]any)["values"].(map[string]any)["body_digest_uri"].(string)] = true
		}
	}
	var someDigests []any
	for d := range digests {
		someDigests = append(someDigests, d)
	}

	operand := func(field string) any {
		switch rng.IntN(12) {
		case 0:
			return nil
		case 1:
			return "text" // a string where a number belongs, or a rare one
		case 2:
			return 7
		}
		switch field {
		case "content_type":
			t := types[rng.IntN(len(types))]
			if rng.IntN(3) == 0 {
				return t[:rng.IntN(len(t)+1)]
			}
			return t
		case "logical_size", "generation":
			return rng.IntN(42)
		case "body_digest_uri":
			if rng.IntN(2) == 0 && len(someDigests) > 0 {
				return someDigests[rng.IntN(len(someDigests))]
			}
			return "sha256:00"
		}
		return "outputs/d1"
	}
	fields := []string{"content_type", "logical_size", "body_digest_uri", "generation", "path"}
	ops := []string{"eq", "in", "lt", "lte", "gt", "gte", "prefix", "ne", "exists", "not_exists", "suffix"}
	predicate := func() map[string]any {
		f, op := fields[rng.IntN(len(fields))], ops[rng.IntN(len(ops))]
		p := map[string]any{"field": f, "op": op}
		switch op {
		case "exists", "not_exists":
		case "in":
			var vs []any
			for range rng.IntN(4) {
				vs = append(vs, operand(f))
			}
			p["value"] = vs
		default:
			p["value"] = operand(f)
		}
		return p
	}
	scope := func(in map[string]any) {
		switch rng.IntN(3) {
		case 0:
			in["id"] = wbs[rng.IntN(len(wbs))]
		case 1:
			in["id"] = wbs[rng.IntN(len(wbs))]
			in["section"] = sections[rng.IntN(len(sections))]
			if rng.IntN(2) == 0 {
				in["path"] = fmt.Sprintf("d%d", rng.IntN(4))
			}
		}
	}
	both := func(tool string, in map[string]any) (map[string]any, bool) {
		t.Helper()
		workbench.SetQueryScanOnlyForTest(s, true)
		want, wantOK := qCall(t, s, tool, in)
		workbench.SetQueryScanOnlyForTest(s, false)
		got, gotOK := qCall(t, s, tool, in)
		if gotOK != wantOK || !reflect.DeepEqual(got, want) {
			b, _ := json.Marshal(in)
			t.Fatalf("%s %s:\nindex: %v\nscan:  %v", tool, b, got, want)
		}
		return got, gotOK
	}

	before := workbench.QueryIndexAnswersForTest(s)
	const queries = 400
	for range queries {
		in := map[string]any{}
		scope(in)
		var preds []any
		for range 1 + rng.IntN(3) {
			preds = append(preds, predicate())
		}
		in["predicates"] = preds
		if rng.IntN(2) == 0 {
			in["aggregate"] = true
		}
		if in["aggregate"] == true {
			delete(in, "aggregate")
			in["group_by"] = []string{"content_type"}
			in["measures"] = []any{
				map[string]any{"name": "n", "op": "count", "field": "path"},
				map[string]any{"name": "bytes", "op": "sum", "field": "logical_size"},
			}
			both("workbench_aggregate", in)
			continue
		}
		in["limit"] = 1 + rng.IntN(4)
		in["fields"] = []string{"content_type", "logical_size", "generation"}
		in["facets"] = []string{"content_type", "logical_size"}
		if rng.IntN(2) == 0 {
			in["sort"] = []any{map[string]any{"field": "logical_size", "direction": []string{"asc", "desc"}[rng.IntN(2)]}}
		}
		m, ok := both("workbench_search", in)
		for page := 0; ok && m["next_cursor"] != nil && page < 3; page++ {
			in["cursor"] = m["next_cursor"]
			m, ok = both("workbench_search", in)
		}
	}
	answered := workbench.QueryIndexAnswersForTest(s) - before
	t.Logf("the index answered %d of the index-side calls", answered)
	if answered < queries/4 {
		t.Fatalf("the index answered only %d calls", answered)
	}
}

// A scope whose paths carry custom index fields is scanned: their types
// are inferred over the whole scope, so a conflict far from the matches
// is still InvalidState.
func TestQueryIndexCustomFieldsScan(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "w",
		workbench.QuerySeedFile{Path: "outputs/a", Body: []byte("a"), ContentType: "text/rare", Index: nil},
		qFile("outputs/b", "bb", qStr("k", "x")),
		qFile("outputs/c", "cc", qUint("k", 1)),
	)
	before := workbench.QueryIndexAnswersForTest(s)
	m, ok := call(t, s, "workbench_search", `{"id":"w","predicates":[{"field":"content_type","op":"eq","value":"text/rare"}]}`)
	qErr(t, m, ok, "InvalidState", false, qServerKeys...)
	if n := workbench.QueryIndexAnswersForTest(s) - before; n != 0 {
		t.Fatalf("the index answered %d queries", n)
	}
	// Another workbench without custom fields is answered by its index.
	qPut(t, s, "v", "outputs", "a", "x")
	mustCall(t, s, "workbench_search", `{"id":"v","predicates":[{"field":"logical_size","op":"eq","value":1}]}`)
	if n := workbench.QueryIndexAnswersForTest(s) - before; n != 1 {
		t.Fatalf("the index answered %d queries, want 1", n)
	}
}

// Index rows of a Staging workbench are dropped by the marker recheck: a
// root-scoped search never returns them.
func TestQueryIndexSkipsStaging(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryStagingWorkbench(t, s, "hidden", workbench.QuerySeedFile{Path: "outputs/a", Body: []byte("a"), ContentType: "text/rare"})
	workbench.SeedQueryWorkbench(t, s, "shown", workbench.QuerySeedFile{Path: "outputs/a", Body: []byte("a"), ContentType: "text/rare"})
	before := workbench.QueryIndexAnswersForTest(s)
	m := mustCall(t, s, "workbench_search", `{"predicates":[{"field":"content_type","op":"eq","value":"text/rare"}]}`)
	if got := qMatchPaths(m); len(got) != 1 || qNum(m["match_count"]) != "1" {
		t.Fatalf("matches %v", m)
	}
	if n := workbench.QueryIndexAnswersForTest(s) - before; n != 1 {
		t.Fatalf("the index answered %d queries, want 1", n)
	}
}
