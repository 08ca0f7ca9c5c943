package workbench_test

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The transcript's workbench_search result (result-transcript.json,
// "success"). Its field id "artifact.producer" is a custom index field
// here, as it is in the reference's test double.
const qTranscriptSearch = `{
  "facets": [{"distinct_count": 1, "field": "artifact.producer", "truncated": false,
    "values": [{"count": 1, "value": "agent"}]}],
  "match_count": 1,
  "matches": [{"path": "/agents/test/wb/wb-main/outputs/report.txt", "relative_path": "report.txt",
    "section": "outputs", "values": {"artifact.producer": "agent"}, "workbench_id": "wb-main"}],
  "next_cursor": "search-next", "path": "/agents/test/wb/wb-main/outputs", "status": "success", "truncated": true}`

func TestSearchTranscriptShape(t *testing.T) {
	s := newService(t)
	workbench.SeedQueryWorkbench(t, s, "wb-main",
		qFile("outputs/report.txt", "Hello world\n", qStr("artifact.producer", "agent")),
		qFile("outputs/second.txt", "second\n", qStr("artifact.producer", "agent")),
	)
	m := mustCall(t, s, "workbench_search", `{"id":"wb-main","section":"outputs","fields":["artifact.producer"],"facets":["artifact.producer"],"limit":1}`)
	qShape(t, m, qTranscriptSearch)
	match := m["matches"].([]any)[0].(map[string]any)
	if match["path"] != "/agents/test/wb/wb-main/outputs/report.txt" || match["section"] != "outputs" ||
		match["relative_path"] != "report.txt" || match["workbench_id"] != "wb-main" {
		t.Fatalf("match %v", match)
	}
	if v := match["values"].(map[string]any); len(v) != 1 || v["artifact.producer"] != "agent" {
		t.Fatalf("values %v", v)
	}
	facet := m["facets"].([]any)[0].(map[string]any)
	if qNum(facet["distinct_count"]) != "1" || facet["truncated"] != false {
		t.Fatalf("facet %v", facet)
	}
	bucket := facet["values"].([]any)[0].(map[string]any)
	if bucket["value"] != "agent" || qNum(bucket["count"]) != "2" {
		t.Fatalf("facet bucket %v", bucket)
	}
	if qNum(m["match_count"]) != "2" || m["truncated"] != true || m["path"] != "/agents/test/wb/wb-main/outputs" {
		t.Fatalf("result %v", m)
	}
}

func TestSearchValuesAndDefaults(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "hello")
	// Without fields, values is {}; built-ins carry their values (producer and manifest_id null from the tools).
	m := mustCall(t, s, "workbench_search", `{"id":"w"}`)
	if v := m["matches"].([]any)[0].(map[string]any)["values"].(map[string]any); len(v) != 0 {
		t.Fatalf("values %v, want {}", v)
	}
	if facets := m["facets"].([]any); len(facets) != 0 || m["next_cursor"] != nil || m["truncated"] != false {
		t.Fatalf("result %v", m)
	}
	m = mustCall(t, s, "workbench_search", `{"id":"w","fields":["logical_size","generation","content_type","path","workbench_id","producer","manifest_id","body_digest_uri"]}`)
	v := m["matches"].([]any)[0].(map[string]any)["values"].(map[string]any)
	want := map[string]string{
		"logical_size": "5", "generation": "1", "content_type": "text/plain; charset=utf-8",
		"path": "outputs/a.txt", "workbench_id": "w", "producer": "<nil>", "manifest_id": "<nil>",
		"body_digest_uri": workbench.DigestURI([]byte("hello")),
	}
	if len(v) != len(want) {
		t.Fatalf("values %v", v)
	}
	for k, w := range want {
		if got := fmt.Sprint(v[k]); got != w {
			t.Fatalf("values[%s] = %s, want %s", k, got, w)
		}
	}
	// The default limit is 10.
	for i := range 12 {
		qPut(t, s, "many", "logs", fmt.Sprintf("%02d", i), "x")
	}
	m = mustCall(t, s, "workbench_search", `{"id":"many"}`)
	if n := len(m["matches"].([]any)); n != 10 || qNum(m["match_count"]) != "12" || m["truncated"] != true {
		t.Fatalf("default page: %d matches, %v", n, m)
	}
}

func TestSearchPaging(t *testing.T) {
	s := newService(t)
	for i := range 25 {
		qPut(t, s, "w", "outputs", fmt.Sprintf("f%02d.txt", i), strings.Repeat("x", 25-i))
	}
	query := `"id":"w","sort":[{"field":"logical_size"}],"predicates":[{"field":"logical_size","op":"gt","value":1}]`
	var got []string
	cursor := ""
	var sizes []int
	for page := 0; ; page++ {
		in := `{` + query
		if cursor != "" {
			in += `,"cursor":"` + cursor + `"`
		}
		m := mustCall(t, s, "workbench_search", in+`}`)
		if qNum(m["match_count"]) != "24" {
			t.Fatalf("page %d: match_count %v", page, m["match_count"])
		}
		sizes = append(sizes, len(m["matches"].([]any)))
		got = append(got, qMatchPaths(m)...)
		if m["next_cursor"] == nil {
			if m["truncated"] != false {
				t.Fatalf("last page truncated: %v", m)
			}
			break
		}
		if m["truncated"] != true {
			t.Fatalf("page %d has a cursor but is not truncated", page)
		}
		cursor = m["next_cursor"].(string)
		if _, err := base64.RawURLEncoding.DecodeString(cursor); err != nil {
			t.Fatalf("cursor %q is not base64url: %v", cursor, err)
		}
	}
	if !slices.Equal(sizes, []int{10, 10, 4}) {
		t.Fatalf("page sizes %v", sizes)
	}
	var want []string
	for i := 23; i >= 0; i-- {
		want = append(want, fmt.Sprintf("w/outputs/f%02d.txt", i))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pages %v, want %v", got, want)
	}

	// The limit may change between pages; the query may not.
	first := mustCall(t, s, "workbench_search", `{`+query+`,"limit":3}`)
	c := first["next_cursor"].(string)
	m := mustCall(t, s, "workbench_search", `{`+query+`,"limit":5,"cursor":"`+c+`"}`)
	if got := qMatchPaths(m); !slices.Equal(got, want[3:8]) {
		t.Fatalf("continuation %v, want %v", got, want[3:8])
	}
	for _, tc := range []struct{ name, input, text string }{
		{"other predicates", `{"id":"w","sort":[{"field":"logical_size"}],"cursor":"` + c + `"}`, "different query"},
		{"other scope", `{"sort":[{"field":"logical_size"}],"predicates":[{"field":"logical_size","op":"gt","value":1}],"cursor":"` + c + `"}`, "different query"},
		{"other sort", `{"id":"w","sort":[{"field":"logical_size","direction":"desc"}],"predicates":[{"field":"logical_size","op":"gt","value":1}],"cursor":"` + c + `"}`, "different query"},
		{"other fields", `{` + query + `,"fields":["path"],"cursor":"` + c + `"}`, "different query"},
		{"garbage", `{` + query + `,"cursor":"not a cursor"}`, "malformed"},
		{"empty", `{` + query + `,"cursor":""}`, "malformed"},
		{"truncated", `{` + query + `,"cursor":"` + c[:len(c)-2] + `"}`, "malformed"},
		{"edited", `{` + query + `,"cursor":"` + qFlip(c) + `"}`, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, ok := call(t, s, "workbench_search", tc.input)
			qErr(t, m, ok, "InvalidState", false, "source")
			qMessage(t, m, tc.text)
		})
	}
	// A grep cursor is not a search cursor, and the reverse.
	g := mustCall(t, s, "workbench_grep", `{"id":"w","pattern":"x","recursive":true,"limit":1}`)
	m, ok := call(t, s, "workbench_search", `{"cursor":"`+g["next_cursor"].(string)+`"}`)
	qErr(t, m, ok, "InvalidState", false, "source")
	qMessage(t, m, "different operation")
	m, ok = call(t, s, "workbench_grep", `{"id":"w","pattern":"x","recursive":true,"cursor":"`+c+`"}`)
	qErr(t, m, ok, "InvalidArguments", false)
	qMessage(t, m, "different operation")
	// A cursor of another root never decodes.
	other := newServiceOn(t, mem.NewBucket(), workbench.Options{AgentID: "other"})
	qPut(t, other, "w", "outputs", "f01.txt", "xx")
	m, ok = call(t, other, "workbench_search", `{`+query+`,"cursor":"`+c+`"}`)
	qErr(t, m, ok, "InvalidState", false, "source")
	qMessage(t, m, "malformed")
}

// qFlip changes one character in the middle of a token.
func qFlip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

func TestSearchCursorFence(t *testing.T) {
	s := newService(t)
	for i := range 3 {
		qPut(t, s, "w", "outputs", fmt.Sprintf("%d.txt", i), "x")
	}
	in := `{"id":"w","limit":2}`
	first := mustCall(t, s, "workbench_search", in)
	c := first["next_cursor"].(string)
	// A continuation at the same read version works, any number of times.
	for range 2 {
		m := mustCall(t, s, "workbench_search", `{"id":"w","limit":2,"cursor":"`+c+`"}`)
		if got := qMatchPaths(m); !slices.Equal(got, []string{"w/outputs/2.txt"}) {
			t.Fatalf("continuation %v", got)
		}
	}
	// A commit anywhere in the shard, even to another workbench, moves the
	// read version: the continuation fails closed and is retryable.
	qPut(t, s, "elsewhere", "logs", "x", "y")
	m, ok := call(t, s, "workbench_search", `{"id":"w","limit":2,"cursor":"`+c+`"}`)
	qErr(t, m, ok, "ReadFenceChanged", true, "source", "conflict")
	if d := m["details"].(map[string]any); d["conflict"] != "ReadVersion" || m["message"] != "search fence changed" {
		t.Fatalf("fence error %v", m)
	}
	// A fresh call starts over at the new version.
	m = mustCall(t, s, "workbench_search", in)
	if got := qMatchPaths(m); !slices.Equal(got, []string{"w/outputs/0.txt", "w/outputs/1.txt"}) {
		t.Fatalf("fresh call %v", got)
	}
}

func TestSearchFacets(t *testing.T) {
	s := newService(t)
	var files []workbench.QuerySeedFile
	for i := range 300 {
		idx := []nokv.IndexField{qUint("n", uint64(i))}
		switch {
		case i < 5:
			idx = append(idx, qStr("kind", "b"))
		case i < 10:
			idx = append(idx, qStr("kind", "a"))
		case i < 12:
			idx = append(idx, qStr("kind", "c"))
		case i < 13:
			idx = append(idx, qNull("kind"))
		}
		files = append(files, workbench.QuerySeedFile{Path: fmt.Sprintf("outputs/%03d", i), Body: []byte("x"), Index: idx,
			Producer: map[bool]*string{true: qPtr("p"), false: nil}[i%2 == 0]})
	}
	workbench.SeedQueryWorkbench(t, s, "w", files...)
	m := mustCall(t, s, "workbench_search", `{"id":"w","limit":1,"facets":["kind","n","producer"]}`)
	facets := m["facets"].([]any)
	if len(facets) != 3 {
		t.Fatalf("facets %v", facets)
	}
	render := func(f any) string {
		ff := f.(map[string]any)
		var parts []string
		for _, b := range ff["values"].([]any) {
			bb := b.(map[string]any)
			parts = append(parts, fmt.Sprintf("%v=%s", bb["value"], qNum(bb["count"])))
		}
		if len(parts) > 3 {
			parts = append(parts[:3], fmt.Sprintf("...(%d)", len(parts)))
		}
		return fmt.Sprintf("%s distinct=%s truncated=%v [%s]", ff["field"], qNum(ff["distinct_count"]), ff["truncated"], strings.Join(parts, " "))
	}
	for i, want := range []string{
		// Count descending, then value ascending; rows without the field
		// are not counted, an explicit null is.
		"kind distinct=4 truncated=false [a=5 b=5 c=2 ...(4)]",
		// More than 256 distinct values: 256 buckets, truncated.
		"n distinct=300 truncated=true [0=1 1=1 2=1 ...(256)]",
		"producer distinct=2 truncated=false [<nil>=150 p=150]",
	} {
		if got := render(facets[i]); got != want {
			t.Fatalf("facet %d: %s, want %s", i, got, want)
		}
	}
	last := facets[0].(map[string]any)["values"].([]any)[3].(map[string]any)
	if last["value"] != nil || qNum(last["count"]) != "1" {
		t.Fatalf("null bucket %v", last)
	}
	// Facets count every match, not only the page, and follow the
	// predicates.
	m = mustCall(t, s, "workbench_search", `{"id":"w","limit":1,"facets":["kind"],"predicates":[{"field":"n","op":"lt","value":7}]}`)
	if got := render(m["facets"].([]any)[0]); got != "kind distinct=2 truncated=false [b=5 a=2]" {
		t.Fatalf("filtered facet %s", got)
	}
}
