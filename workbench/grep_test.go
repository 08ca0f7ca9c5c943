package workbench_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// The transcript's workbench_grep result.
const qTranscriptGrep = `{
  "files_scanned": 1,
  "matches": [
    {"line_number": 1, "path": "/agents/test/wb/wb-main/outputs/report.txt", "relative_path": "report.txt", "section": "outputs", "snippet": "Hello world"},
    {"line_number": 2, "path": "/agents/test/wb/wb-main/outputs/report.txt", "relative_path": "report.txt", "section": "outputs", "snippet": "second"}],
  "next_cursor": null, "path": "/agents/test/wb/wb-main/outputs", "pattern": "HELLO", "recursive": true,
  "relative_path": null, "section": "outputs", "status": "success", "truncated": false,
  "workbench_id": "wb-main", "workbench_path": "/agents/test/wb/wb-main"}`

// qGrep runs a grep that must succeed; extra holds more members.
func qGrep(t *testing.T, s *workbench.Service, id, pattern string, extra map[string]any) map[string]any {
	t.Helper()
	in := map[string]any{"id": id, "pattern": pattern, "recursive": true}
	for k, v := range extra {
		in[k] = v
	}
	return qMust(t, s, "workbench_grep", in)
}

// qHits renders grep matches as "relative path:line:snippet", the
// relative path taken from the workbench root.
func qHits(t *testing.T, m map[string]any) []string {
	t.Helper()
	var out []string
	for _, x := range m["matches"].([]any) {
		mm := x.(map[string]any)
		p := mm["path"].(string)
		i := strings.Index(p, "/wb/")
		rel := p[i+4:]
		rel = rel[strings.Index(rel, "/")+1:]
		out = append(out, fmt.Sprintf("%s:%s:%s", rel, qNum(mm["line_number"]), mm["snippet"]))
	}
	return out
}

func TestGrepTranscriptShape(t *testing.T) {
	s := newService(t)
	qPut(t, s, "wb-main", "outputs", "report.txt", "Hello world\nsecond hello\nthird\n")
	m := qGrep(t, s, "wb-main", "HELLO", map[string]any{"section": "outputs"})
	qShape(t, m, qTranscriptGrep)
	if got := qHits(t, m); !slices.Equal(got, []string{"outputs/report.txt:1:Hello world", "outputs/report.txt:2:second hello"}) {
		t.Fatalf("hits %v", got)
	}
	first := m["matches"].([]any)[0].(map[string]any)
	if first["section"] != "outputs" || first["relative_path"] != "report.txt" || first["path"] != "/agents/test/wb/wb-main/outputs/report.txt" {
		t.Fatalf("match %v", first)
	}
	if qNum(m["files_scanned"]) != "1" || m["pattern"] != "HELLO" || m["path"] != "/agents/test/wb/wb-main/outputs" ||
		m["workbench_path"] != "/agents/test/wb/wb-main" || m["relative_path"] != nil || m["section"] != "outputs" {
		t.Fatalf("result %v", m)
	}
	// A nested scope reports its section and relative path; a scope
	// outside the sections has section null.
	qPut(t, s, "wb-main", "outputs", "d/e.txt", "hello")
	m = qGrep(t, s, "wb-main", "hello", map[string]any{"section": "outputs", "path": "d"})
	if m["section"] != "outputs" || m["relative_path"] != "d" || m["path"] != "/agents/test/wb/wb-main/outputs/d" {
		t.Fatalf("nested scope %v", m)
	}
	m = qGrep(t, s, "wb-main", "hello", nil)
	if m["section"] != nil || m["relative_path"] != nil || m["path"] != "/agents/test/wb/wb-main" || m["recursive"] != true {
		t.Fatalf("root scope %v", m)
	}
}

func TestGrepPatternSets(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "f.txt", "alpha\nbeta\ngamma|delta\nALPHA beta\nx||y\n")
	seventeen := strings.Join(strings.Split("abcdefghijklmnopq", ""), "|")
	sixteen := strings.Join(strings.Split("abcdefghijklmnop", ""), "|")
	var sixteenList []any
	for _, c := range strings.Split("bcdefghijklmnopq", "") {
		sixteenList = append(sixteenList, c)
	}
	for _, tc := range []struct {
		name     string
		pattern  string
		patterns any // nil: absent
		lines    []int
		err      string
	}{
		{"one", "alpha", nil, []int{1, 4}, ""},
		{"case-insensitive", "BeTa", nil, []int{2, 4}, ""},
		{"split on bar", "alpha|gamma", nil, []int{1, 3, 4}, ""},
		{"empty pieces dropped", "|gamma|", nil, []int{3}, ""},
		{"every piece empty", "||", nil, []int{5}, ""},
		{"split with empty patterns", "beta|x", []any{}, []int{2, 4, 5}, ""},
		{"no split with patterns", "gamma|delta", []any{"zzz"}, []int{3}, ""},
		{"empty pattern and patterns", "", []any{"beta"}, []int{2, 4}, ""},
		{"pattern and patterns", "gamma", []any{"x||"}, []int{3, 5}, ""},
		{"duplicates dropped", "alpha", []any{"ALPHA", "Alpha"}, []int{1, 4}, ""},
		{"sixteen pieces", sixteen, nil, []int{1, 2, 3, 4}, ""},
		{"seventeen literals", "y", sixteenList, []int{1, 2, 3, 4, 5}, ""},
		{"no pattern at all", "", nil, nil, "grep patterns must not be empty"},
		{"no pattern, empty patterns", "", []any{}, nil, "grep patterns must not be empty"},
		{"empty member", "a", []any{"b", ""}, nil, "empty"},
		{"seventeen pieces", seventeen, nil, nil, "16"},
		{"seventeen patterns", "a", append(slices.Clone(sixteenList), "r"), nil, "patterns"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]any{"id": "w", "pattern": tc.pattern, "recursive": true}
			if tc.patterns != nil {
				in["patterns"] = tc.patterns
			}
			m, ok := qCall(t, s, "workbench_grep", in)
			if tc.err != "" {
				qErr(t, m, ok, "InvalidArguments", false)
				qMessage(t, m, tc.err)
				return
			}
			if !ok {
				t.Fatalf("failed: %v", m)
			}
			var lines []int
			for _, x := range m["matches"].([]any) {
				var n int
				fmt.Sscan(qNum(x.(map[string]any)["line_number"]), &n)
				lines = append(lines, n)
			}
			if !slices.Equal(lines, tc.lines) {
				t.Fatalf("lines %v, want %v", lines, tc.lines)
			}
			if m["pattern"] != tc.pattern {
				t.Fatalf("pattern echoed as %v", m["pattern"])
			}
		})
	}
}

func TestGrepMatching(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "u.txt", "İSTANBUL\nΟΔΟΣ\nstraße\n\u212a\nline with crlf\r\n\ntail\r")
	for _, tc := range []struct {
		pattern string
		want    []string
	}{
		// Full Unicode lowercase: İ is "i̇", so "istanbul" is not inside.
		{"i\u0307stanbul", []string{"outputs/u.txt:1:İSTANBUL"}},
		{"İSTANBUL", []string{"outputs/u.txt:1:İSTANBUL"}},
		{"istanbul", nil},
		// A word-final capital sigma lowercases to ς; a lone one to σ.
		{"ΟΔΟΣ", []string{"outputs/u.txt:2:ΟΔΟΣ"}},
		{"ος", []string{"outputs/u.txt:2:ΟΔΟΣ"}},
		{"ΟΣ", []string{"outputs/u.txt:2:ΟΔΟΣ"}},
		{"Σ", nil},
		{"σ", nil},
		// No case folding beyond lowercase.
		{"STRASSE", nil},
		{"STRAßE", []string{"outputs/u.txt:3:straße"}},
		{"k", []string{"outputs/u.txt:4:\u212a"}},
		// Lines split like str::lines: CRLF loses its CR, a last line
		// without LF keeps its CR.
		{"crlf", []string{"outputs/u.txt:5:line with crlf"}},
		{"tail", []string{"outputs/u.txt:7:tail\r"}},
		{"\r", []string{"outputs/u.txt:7:tail\r"}},
	} {
		t.Run(tc.pattern, func(t *testing.T) {
			m := qGrep(t, s, "w", tc.pattern, nil)
			if got := qHits(t, m); !slices.Equal(got, tc.want) {
				t.Fatalf("hits %q, want %q", got, tc.want)
			}
		})
	}
	// Each line is reported once however many patterns it matches.
	m := qGrep(t, s, "w", "with", map[string]any{"patterns": []any{"crlf", "line"}})
	if got := qHits(t, m); !slices.Equal(got, []string{"outputs/u.txt:5:line with crlf"}) {
		t.Fatalf("hits %q", got)
	}
}

func TestGrepBodies(t *testing.T) {
	s := newService(t)
	long := strings.Repeat("é", 250) + " needle"
	qPut(t, s, "w", "outputs", "long.txt", long+"\n")
	qPutBytes(t, s, "w", "outputs", "nul.bin", []byte("needle\x00needle\n"))
	qPutBytes(t, s, "w", "outputs", "lossy.txt", []byte("a\xe2\x82b needle\n\xff\xfe needle\n\xed\xa0\x80 needle\n\xf0\x9f\x98 needle"))
	qPut(t, s, "w", "outputs", "empty.txt", "")
	m := qGrep(t, s, "w", "NEEDLE", nil)
	want := []string{
		"outputs/long.txt:1:" + strings.Repeat("é", 240),
		"outputs/lossy.txt:1:a\uFFFDb needle",
		"outputs/lossy.txt:2:\uFFFD\uFFFD needle",
		"outputs/lossy.txt:3:\uFFFD\uFFFD\uFFFD needle",
		"outputs/lossy.txt:4:\uFFFD needle",
	}
	if got := qHits(t, m); !slices.Equal(got, want) {
		t.Fatalf("hits %q\nwant %q", got, want)
	}
	// The binary body and the empty one are read and counted.
	if qNum(m["files_scanned"]) != "4" {
		t.Fatalf("files_scanned %v", m["files_scanned"])
	}
}

func TestGrepGlob(t *testing.T) {
	s := newService(t)
	for _, p := range []string{"a.txt", "b.md", "ab.txt", "A.TXT", "dir/c.txt", "[ab].txt"} {
		qPut(t, s, "w", "outputs", p, "needle")
	}
	for _, tc := range []struct {
		glob string
		want []string
	}{
		{"*.txt", []string{"[ab].txt", "a.txt", "ab.txt", "dir/c.txt"}},
		{"?.txt", []string{"a.txt", "dir/c.txt"}},
		{"*.TXT", []string{"A.TXT"}},
		{"a*", []string{"a.txt", "ab.txt"}},
		{"*", []string{"A.TXT", "[ab].txt", "a.txt", "ab.txt", "b.md", "dir/c.txt"}},
		{"b.md", []string{"b.md"}},
		{"*b*", []string{"[ab].txt", "ab.txt", "b.md"}},
		{"[ab].txt", []string{"[ab].txt"}},
		{"*.*.*", nil},
		{"??.txt", []string{"ab.txt"}},
		{"dir", nil},
	} {
		t.Run(tc.glob, func(t *testing.T) {
			m := qGrep(t, s, "w", "needle", map[string]any{"section": "outputs", "glob": tc.glob})
			var got []string
			for _, h := range qHits(t, m) {
				got = append(got, strings.TrimSuffix(strings.TrimPrefix(h, "outputs/"), ":1:needle"))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("files %q, want %q", got, tc.want)
			}
			// Filtered files are not read.
			if qNum(m["files_scanned"]) != fmt.Sprint(len(tc.want)) {
				t.Fatalf("files_scanned %v, want %d", m["files_scanned"], len(tc.want))
			}
		})
	}
	for _, glob := range []string{"", "dir/c.txt", `a\b`} {
		m, ok := qCall(t, s, "workbench_grep", map[string]any{"id": "w", "pattern": "x", "recursive": true, "glob": glob})
		qErr(t, m, ok, "InvalidArguments", false)
	}
	// A null glob is no glob.
	m := qGrep(t, s, "w", "needle", map[string]any{"glob": nil})
	if len(m["matches"].([]any)) != 6 {
		t.Fatalf("null glob %v", m)
	}
}

func TestGrepScope(t *testing.T) {
	s := newService(t)
	for _, p := range []string{"r.txt", "sub/s.txt", "sub/deeper/d.txt"} {
		qPut(t, s, "w", "outputs", p, "needle")
	}
	qPut(t, s, "w", "logs", "l.txt", "needle")
	workbench.SeedQueryWorkbench(t, s, "w", qFile("top.txt", "needle"), qFile("extra/e.txt", "needle"))
	for _, tc := range []struct {
		name      string
		args      map[string]any
		recursive bool
		want      []string
	}{
		{"section", map[string]any{"section": "outputs"}, true, []string{"outputs/r.txt", "outputs/sub/deeper/d.txt", "outputs/sub/s.txt"}},
		{"section direct", map[string]any{"section": "outputs"}, false, []string{"outputs/r.txt"}},
		{"directory direct", map[string]any{"section": "outputs", "path": "sub"}, false, []string{"outputs/sub/s.txt"}},
		{"directory", map[string]any{"section": "outputs", "path": "sub"}, true, []string{"outputs/sub/deeper/d.txt", "outputs/sub/s.txt"}},
		{"exact artifact", map[string]any{"section": "outputs", "path": "sub/s.txt"}, true, []string{"outputs/sub/s.txt"}},
		{"exact artifact direct", map[string]any{"section": "outputs", "path": "sub/s.txt"}, false, []string{"outputs/sub/s.txt"}},
		{"exact artifact, path only", map[string]any{"path": "top.txt"}, false, []string{"top.txt"}},
		{"outside sections", map[string]any{"path": "extra"}, true, []string{"extra/e.txt"}},
		{"empty section", map[string]any{"section": "input"}, true, nil},
		{"empty section direct", map[string]any{"section": "input", "path": nil}, false, nil},
		{"workbench", map[string]any{"section": nil, "path": ""}, true, []string{
			"extra/e.txt", "logs/l.txt", "outputs/r.txt", "outputs/sub/deeper/d.txt", "outputs/sub/s.txt", "top.txt"}},
		{"workbench direct", nil, false, []string{"top.txt"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]any{"id": "w", "pattern": "needle", "recursive": tc.recursive}
			for k, v := range tc.args {
				in[k] = v
			}
			m := qMust(t, s, "workbench_grep", in)
			var got []string
			for _, h := range qHits(t, m) {
				got = append(got, strings.TrimSuffix(h, ":1:needle"))
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("files %q, want %q", got, tc.want)
			}
			if m["recursive"] != tc.recursive || m["next_cursor"] != nil || m["truncated"] != false {
				t.Fatalf("result %v", m)
			}
		})
	}
	for _, tc := range []struct {
		name string
		args map[string]any
		path string
	}{
		{"nested scope", map[string]any{"section": "outputs", "path": "nope"}, "/agents/test/wb/w/outputs/nope"},
		{"nested under an artifact", map[string]any{"section": "outputs", "path": "r.txt/x"}, "/agents/test/wb/w/outputs/r.txt/x"},
		{"top-level scope", map[string]any{"path": "nope"}, "/agents/test/wb/w/nope"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := map[string]any{"id": "w", "pattern": "needle", "recursive": true}
			for k, v := range tc.args {
				in[k] = v
			}
			m, ok := qCall(t, s, "workbench_grep", in)
			qErr(t, m, ok, "NotFound", false, "path")
			if m["message"] != "grep scope does not exist" || m["details"].(map[string]any)["path"] != tc.path {
				t.Fatalf("error %v", m)
			}
		})
	}
	m, ok := call(t, s, "workbench_grep", `{"id":"missing","section":"outputs","pattern":"x","recursive":true}`)
	qErr(t, m, ok, "NotFound", false, "code", "conflict", "current_generation", "path", "source")
	if p := m["details"].(map[string]any)["path"]; p != "/agents/test/wb/missing/outputs" {
		t.Fatalf("details.path %v", p)
	}
}

func TestGrepPagesAndCursor(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "hit 1\nhit 2\nmiss\nhit 3\nhit 4\nhit 5\n")
	qPut(t, s, "w", "outputs", "b.txt", "hit 6\nmiss\nhit 7\nhit 8\nmiss")
	qPut(t, s, "w", "outputs", "c.txt", "nothing here")
	all := qHits(t, qGrep(t, s, "w", "hit", nil))
	if len(all) != 8 {
		t.Fatalf("all hits %q", all)
	}
	var got []string
	var scanned []string
	cursor := any(nil)
	for page := 0; page < 10; page++ {
		m := qGrep(t, s, "w", "hit", map[string]any{"limit": 2, "cursor": cursor})
		got = append(got, qHits(t, m)...)
		scanned = append(scanned, qNum(m["files_scanned"]))
		if (m["next_cursor"] != nil) != m["truncated"] {
			t.Fatalf("truncated %v with cursor %v", m["truncated"], m["next_cursor"])
		}
		if cursor = m["next_cursor"]; cursor == nil {
			break
		}
	}
	if !slices.Equal(got, all) {
		t.Fatalf("pages %q\nwant %q", got, all)
	}
	// Pages resume inside a body (a.txt is read by three pages); the page
	// that takes b.txt's last match reads c.txt too, for one more match,
	// finds none and ends the listing.
	if want := []string{"1", "1", "2", "2"}; !slices.Equal(scanned, want) {
		t.Fatalf("files_scanned per page %v, want %v", scanned, want)
	}
	// limit may change between pages; the default is 100.
	m := qGrep(t, s, "w", "hit", map[string]any{"limit": 3})
	m = qGrep(t, s, "w", "hit", map[string]any{"cursor": m["next_cursor"]})
	if got := qHits(t, m); !slices.Equal(got, all[3:]) {
		t.Fatalf("continuation %q", got)
	}
	// A limit that ends a body's matches exactly at the last candidate
	// leaves no cursor.
	m = qGrep(t, s, "w", "hit", map[string]any{"limit": 3, "section": "outputs", "path": "b.txt"})
	if m["next_cursor"] != nil || len(m["matches"].([]any)) != 3 {
		t.Fatalf("exact limit %v", m)
	}
}

func TestGrepCursorBinding(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "x1\nx2\nx3\n")
	qPut(t, s, "v", "outputs", "a.txt", "x1\nx2\nx3\n")
	base := map[string]any{"id": "w", "pattern": "x", "recursive": true, "section": "outputs", "glob": "*.txt", "limit": 1}
	c := qMust(t, s, "workbench_grep", base)["next_cursor"].(string)
	with := func(k string, v any) map[string]any {
		m := map[string]any{}
		for kk, vv := range base {
			m[kk] = vv
		}
		m["cursor"] = c
		if k != "" {
			m[k] = v
		}
		return m
	}
	m := qMust(t, s, "workbench_grep", with("", nil))
	if got := qHits(t, m); !slices.Equal(got, []string{"outputs/a.txt:2:x2"}) {
		t.Fatalf("continuation %q", got)
	}
	// Another pattern set, glob, recursion mode, scope or workbench is
	// the tool layer's InvalidArguments with details {} (facts.md 1.2: a
	// handler-side argument check; the reference's tool layer decodes
	// grep cursors), before anything is read: a missing workbench too.
	for name, in := range map[string]map[string]any{
		"pattern":           with("pattern", "X1"),
		"patterns":          with("patterns", []any{"y"}),
		"glob":              with("glob", "a*"),
		"no glob":           with("glob", nil),
		"recursion":         with("recursive", false),
		"scope":             with("section", "logs"),
		"workbench":         with("id", "v"),
		"missing workbench": with("id", "missing"),
	} {
		t.Run(name, func(t *testing.T) {
			m, ok := qCall(t, s, "workbench_grep", in)
			qErr(t, m, ok, "InvalidArguments", false)
			qMessage(t, m, "grep cursor belongs to a different")
		})
	}
}

func TestGrepFence(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "x1\nx2\nx3\n")
	first := qGrep(t, s, "w", "x", map[string]any{"limit": 1})
	c := first["next_cursor"]
	// A write to another workbench does not move this one's fence.
	qPut(t, s, "v", "outputs", "a.txt", "x")
	m := qGrep(t, s, "w", "x", map[string]any{"limit": 1, "cursor": c})
	if got := qHits(t, m); !slices.Equal(got, []string{"outputs/a.txt:2:x2"}) {
		t.Fatalf("continuation %q", got)
	}
	// A write to this workbench does, even outside the grep's scope.
	qPut(t, s, "w", "logs", "new.txt", "x")
	for _, cur := range []any{c, m["next_cursor"]} {
		m, ok := qCall(t, s, "workbench_grep", map[string]any{"id": "w", "pattern": "x", "recursive": true, "limit": 1, "cursor": cur})
		qErr(t, m, ok, "ReadFenceChanged", true, "source", "conflict", "path")
		d := m["details"].(map[string]any)
		if d["conflict"] != "Workspace" || d["path"] != "/agents/test/wb/w" || m["message"] != "grep candidate enumeration fence changed" {
			t.Fatalf("fence error %v", m)
		}
	}
	// A fresh call sees the new state.
	if got := qHits(t, qGrep(t, s, "w", "x", nil)); len(got) != 4 {
		t.Fatalf("fresh call %q", got)
	}
}

func TestGrepWorkBounds(t *testing.T) {
	s := newService(t)
	for i := range 5 {
		qPut(t, s, "w", "outputs", fmt.Sprintf("%d.txt", i), "x")
	}
	workbench.SetGrepBoundsForTest(t, 2, 1<<20)
	var scanned []string
	var got []string
	cursor := any(nil)
	for range 10 {
		m := qGrep(t, s, "w", "x", map[string]any{"cursor": cursor})
		scanned = append(scanned, qNum(m["files_scanned"]))
		got = append(got, qHits(t, m)...)
		if cursor = m["next_cursor"]; cursor == nil {
			break
		}
		if m["truncated"] != true {
			t.Fatalf("bounded page not truncated: %v", m)
		}
	}
	if !slices.Equal(scanned, []string{"2", "2", "1"}) || len(got) != 5 {
		t.Fatalf("files per page %v, hits %q", scanned, got)
	}

	// The byte bound: a page ends before a body that would pass it, and a
	// body over it on its own fails.
	s = newService(t)
	for i, body := range []string{"x234", "x234", "x234", strings.Repeat("x", 20)} {
		qPut(t, s, "w", "outputs", fmt.Sprintf("%d.txt", i), body)
	}
	workbench.SetGrepBoundsForTest(t, 100, 10)
	m := qGrep(t, s, "w", "x", nil)
	if qNum(m["files_scanned"]) != "2" || m["next_cursor"] == nil {
		t.Fatalf("first page %v", m)
	}
	m = qGrep(t, s, "w", "x", map[string]any{"cursor": m["next_cursor"]})
	if qNum(m["files_scanned"]) != "1" || m["next_cursor"] == nil {
		t.Fatalf("second page %v", m)
	}
	e, ok := qCall(t, s, "workbench_grep", map[string]any{"id": "w", "pattern": "x", "recursive": true, "cursor": m["next_cursor"]})
	qErr(t, e, ok, "ResourceExhausted", false, "operation", "resource", "maximum", "path")
	d := e["details"].(map[string]any)
	if d["operation"] != "grep" || d["resource"] != "bytes" || qNum(d["maximum"]) != "10" || d["path"] != "/agents/test/wb/w" {
		t.Fatalf("exhausted %v", e)
	}
}

func TestGrepArtifactOverMaximum(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: 16})
	workbench.SeedQueryWorkbench(t, s, "w", qFile("outputs/big.txt", strings.Repeat("x", 17)), qFile("outputs/a.txt", "x"))
	m, ok := call(t, s, "workbench_grep", `{"id":"w","section":"outputs","pattern":"x","recursive":true}`)
	qErr(t, m, ok, "ResourceExhausted", false, "source", "path")
	// A glob that skips the big body avoids it.
	m = mustCall(t, s, "workbench_grep", `{"id":"w","section":"outputs","pattern":"x","recursive":true,"glob":"a*"}`)
	if len(m["matches"].([]any)) != 1 {
		t.Fatalf("matches %v", m)
	}
}

func TestGrepArgumentErrors(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "x")
	for _, in := range []string{
		`{"id":"w","pattern":"x"}`,
		`{"id":"w","recursive":true}`,
		`{"pattern":"x","recursive":true}`,
		`{"id":"w","pattern":"x","recursive":true,"limit":0}`,
		`{"id":"w","pattern":"x","recursive":true,"limit":301}`,
		`{"id":"a.b","pattern":"x","recursive":true}`,
		`{"id":"w","pattern":"x","recursive":true,"section":"outputs","path":"outputs/a.txt"}`,
		`{"id":"w","pattern":"x","recursive":true,"path":"../a"}`,
	} {
		m, ok := call(t, s, "workbench_grep", in)
		qErr(t, m, ok, "InvalidArguments", false)
	}
	// A valid result is JSON with exactly the contract's members.
	m := qGrep(t, s, "w", "x", nil)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b, _ := json.Marshal(keys)
	if string(b) != `["files_scanned","matches","next_cursor","path","pattern","recursive","relative_path","section","status","truncated","workbench_id","workbench_path"]` {
		t.Fatalf("keys %s", b)
	}
}

// A page is truncated, with a cursor, only when one more match exists: the
// scan goes on past the limit for it, as the reference's does (limit + 1).
func TestGrepTruncatedOnlyWhenMoreMatch(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "hit 1\nhit 2\n")
	qPut(t, s, "w", "outputs", "b.txt", "nothing\n")
	qPut(t, s, "w", "outputs", "c.txt", "nothing either\n")
	m := qGrep(t, s, "w", "hit", map[string]any{"limit": 2})
	if got := qHits(t, m); len(got) != 2 || m["truncated"] != false || m["next_cursor"] != nil {
		t.Fatalf("limit reached with nothing after: %v", m)
	}
	if got, want := qNum(m["files_scanned"]), "3"; got != want {
		t.Fatalf("files_scanned %s, want %s", got, want)
	}
	// One more match, two files on: truncated, and the cursor resumes at it.
	qPut(t, s, "w", "outputs", "d.txt", "a last hit\n")
	m = qGrep(t, s, "w", "hit", map[string]any{"limit": 2})
	if m["truncated"] != true || m["next_cursor"] == nil {
		t.Fatalf("one more match: %v", m)
	}
	m = qGrep(t, s, "w", "hit", map[string]any{"limit": 2, "cursor": m["next_cursor"]})
	if got := qHits(t, m); !slices.Equal(got, []string{"outputs/d.txt:1:a last hit"}) || m["truncated"] != false || m["next_cursor"] != nil {
		t.Fatalf("continuation %q: %v", got, m)
	}
}

// A grep cursor that does not decode is the tool layer's InvalidArguments
// with details {} (no path), checked before anything is read, as is one
// that decodes but belongs to another query (TestGrepCursorBinding).
func TestGrepMalformedCursor(t *testing.T) {
	s := newService(t)
	qPut(t, s, "w", "outputs", "a.txt", "x1\nx2\n")
	qPut(t, s, "w", "outputs", "b.json", `{"a":1}`)
	c := qGrep(t, s, "w", "x", map[string]any{"limit": 1})["next_cursor"].(string)
	searchCursor := qMust(t, s, "workbench_search", map[string]any{"id": "w", "limit": 1})["next_cursor"].(string)
	for name, cur := range map[string]string{
		"not base64":     "!!",
		"empty":          "",
		"edited":         qFlip(c),
		"truncated":      c[:len(c)-2],
		"search cursor":  searchCursor,
		"read cursor":    "r:1",
		"missing wb too": "!!",
	} {
		t.Run(name, func(t *testing.T) {
			id := "w"
			if name == "missing wb too" {
				id = "missing"
			}
			m, ok := qCall(t, s, "workbench_grep", map[string]any{"id": id, "pattern": "x", "recursive": true, "cursor": cur})
			qErr(t, m, ok, "InvalidArguments", false)
		})
	}
}
