package workbench_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// items returns the JSON text of a read result's items' values and checks
// their indexes run from first.
func readItems(t *testing.T, r map[string]any, first int) string {
	t.Helper()
	var vals []any
	for i, it := range r["items"].([]any) {
		it := it.(map[string]any)
		if keys := memberNames(it); !slices.Equal(keys, []string{"index", "value"}) {
			t.Errorf("item members %v", keys)
		}
		if fmt.Sprint(it["index"]) != fmt.Sprint(first+i) {
			t.Errorf("item %d has index %v, want %d", i, it["index"], first+i)
		}
		vals = append(vals, it["value"])
	}
	b, err := workbench.MarshalResult(vals)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// structuredShape is the transcript's read resultShape for a structured read;
// values are free (JSON records have any type).
var structuredShape = resultShape{want: shapeRead, live: true, any: []string{"items[].value"}}

// bytesShape is the transcript's read resultShape adjusted for a bytes read.
var bytesShape = resultShape{want: shapeRead, live: true,
	null: []string{"record_type", "record_count"},
	set:  map[string]string{"bytes": "string", "bytes_encoding": "string"}}

func TestReadStructured(t *testing.T) {
	s := newService(t)
	const report = "Hello world\nsecond\nthird\n"
	putFiles(t, s, "wb-main",
		workbench.SeedFile{Path: "outputs/report.txt", ContentType: "text/plain", Body: []byte(report)},
		workbench.SeedFile{Path: "outputs/crlf.txt", ContentType: "text/plain; charset=utf-8", Body: []byte("a\r\nb\n\nc\r\n\rd\r")},
		workbench.SeedFile{Path: "outputs/empty.txt", ContentType: "text/plain", Body: nil},
		workbench.SeedFile{Path: "outputs/arr.json", ContentType: "application/octet-stream", Body: []byte(` [1, 2.5, "x", {"b": 1, "a": [true, null]}, 1e2, 10000000000000000000] `)},
		workbench.SeedFile{Path: "outputs/obj", ContentType: "Application/JSON", Body: []byte(`{"z": 1, "a": {"k": "v"}, "z": 2}`)},
		workbench.SeedFile{Path: "outputs/scalar.JSON", ContentType: "text/plain", Body: []byte(`"just a string"`)},
		workbench.SeedFile{Path: "outputs/events.jsonl", ContentType: "text/plain; charset=utf-8", Body: []byte("{\"a\":1}\n{\"a\":2}\n")},
		workbench.SeedFile{Path: "outputs/events.ndjson", ContentType: "application/x-ndjson", Body: []byte("{\"a\":1}\n{\"a\":2}\n")},
		workbench.SeedFile{Path: "outputs/bad.json", ContentType: "application/json", Body: []byte(`{"a":`)},
		workbench.SeedFile{Path: "outputs/latin1.txt", ContentType: "text/plain", Body: []byte("caf\xe9\n")},
		workbench.SeedFile{Path: "outputs/bin.json", ContentType: "application/json", Body: []byte("[\"\xff\"]")},
	)
	const root = "/agents/test/wb/wb-main"
	read := func(path string, extra ...string) map[string]any {
		t.Helper()
		in := `{"id":"wb-main","section":"outputs","path":"` + path + `"` + strings.Join(extra, "") + `}`
		return mustCall(t, s, "workbench_read", in)
	}

	t.Run("text lines", func(t *testing.T) {
		r := read("report.txt")
		checkShape(t, r, structuredShape)
		wantMembers(t, r, map[string]any{"status": "success", "workbench_id": "wb-main", "workbench_path": root,
			"section": "outputs", "relative_path": "report.txt", "path": root + "/outputs/report.txt",
			"generation": 1, "total_size_bytes": 25, "format": "structured", "record_type": "text_lines",
			"record_count": 3, "cursor": nil, "bytes": nil, "bytes_encoding": nil, "next_cursor": nil, "truncated": false})
		if got := readItems(t, r, 0); got != `["Hello world","second","third"]` {
			t.Errorf("items %s", got)
		}
		// str::lines: "\r\n" and "\n" end lines, a lone "\r" stays.
		r = read("crlf.txt")
		if got := readItems(t, r, 0); got != `["a","b","","c","\rd\r"]` {
			t.Errorf("crlf items %s", got)
		}
		r = read("empty.txt")
		checkShape(t, r, structuredShape)
		wantMembers(t, r, map[string]any{"record_count": 0, "total_size_bytes": 0, "next_cursor": nil, "truncated": false})
		if got := readItems(t, r, 0); got != `[]` {
			t.Errorf("empty items %s", got)
		}
		// A .jsonl file written as text is text.
		r = read("events.jsonl")
		wantMembers(t, r, map[string]any{"record_type": "text_lines", "record_count": 2})
		if got := readItems(t, r, 0); got != `["{\"a\":1}","{\"a\":2}"]` {
			t.Errorf("jsonl items %s", got)
		}
	})
	t.Run("json", func(t *testing.T) {
		r := read("arr.json")
		checkShape(t, r, structuredShape)
		wantMembers(t, r, map[string]any{"record_type": "json_array", "record_count": 6})
		if got := readItems(t, r, 0); got != `[1,2.5,"x",{"a":[true,null],"b":1},100.0,10000000000000000000]` {
			t.Errorf("array items %s", got)
		}
		r = read("obj")
		wantMembers(t, r, map[string]any{"record_type": "json_object", "record_count": 1})
		if got := readItems(t, r, 0); got != `[{"a":{"k":"v"},"z":2}]` {
			t.Errorf("object items %s", got)
		}
		r = read("scalar.JSON")
		wantMembers(t, r, map[string]any{"record_type": "json_object", "record_count": 1})
		if got := readItems(t, r, 0); got != `["just a string"]` {
			t.Errorf("scalar items %s", got)
		}
	})
	t.Run("paging", func(t *testing.T) {
		r := read("arr.json", `,"limit":4`)
		checkShape(t, r, structuredShape.with("next_cursor", "string"))
		wantMembers(t, r, map[string]any{"cursor": nil, "next_cursor": "r:4", "truncated": true, "record_count": 6})
		if got := readItems(t, r, 0); got != `[1,2.5,"x",{"a":[true,null],"b":1}]` {
			t.Errorf("page 1 %s", got)
		}
		r = read("arr.json", `,"limit":4,"cursor":"r:4"`)
		checkShape(t, r, structuredShape.with("cursor", "string"))
		wantMembers(t, r, map[string]any{"cursor": "r:4", "next_cursor": nil, "truncated": false})
		if got := readItems(t, r, 4); got != `[100.0,10000000000000000000]` {
			t.Errorf("page 2 %s", got)
		}
		r = read("arr.json", `,"cursor":"r:6"`)
		wantMembers(t, r, map[string]any{"cursor": "r:6", "next_cursor": nil, "truncated": false, "record_count": 6})
		if got := readItems(t, r, 6); got != `[]` {
			t.Errorf("page at the end %s", got)
		}
		r = read("report.txt", `,"limit":1,"cursor":"r:+1"`)
		wantMembers(t, r, map[string]any{"cursor": "r:+1", "next_cursor": "r:2"})
		// A record cursor is not bound to the generation.
		replaceFile(t, s, "wb-main", "outputs/report.txt", []byte("one\ntwo\n"))
		r = read("report.txt", `,"cursor":"r:1"`)
		wantMembers(t, r, map[string]any{"generation": 2, "record_count": 2})
		if got := readItems(t, r, 1); got != `["two"]` {
			t.Errorf("after rewrite %s", got)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, tc := range []struct {
			path, extra, code, msg string
			details                map[string]any
		}{
			{"events.ndjson", "", "StructuredDecodeFailed", "", map[string]any{"path": "outputs/events.ndjson", "format": "json"}},
			{"bad.json", "", "StructuredDecodeFailed", "", map[string]any{"path": "outputs/bad.json", "format": "json"}},
			{"bin.json", "", "StructuredDecodeFailed", "", map[string]any{"path": "outputs/bin.json", "format": "json"}},
			{"latin1.txt", "", "InvalidUtf8", "structured text read requires UTF-8", map[string]any{"path": "outputs/latin1.txt"}},
			{"arr.json", `,"cursor":"r:7"`, "InvalidArguments", "cursor is past the end of the records", map[string]any{}},
			{"arr.json", `,"cursor":"b:1"`, "InvalidArguments", "cursor belongs to a different read format", map[string]any{}},
			{"arr.json", `,"cursor":"x:1"`, "InvalidArguments", "cursor has an invalid shape", map[string]any{}},
			{"arr.json", `,"cursor":"r1"`, "InvalidArguments", "cursor has an invalid shape", map[string]any{}},
			{"arr.json", `,"cursor":""`, "InvalidArguments", "cursor has an invalid shape", map[string]any{}},
			{"arr.json", `,"cursor":"r:"`, "InvalidArguments", "cursor offset is invalid", map[string]any{}},
			{"arr.json", `,"cursor":"r:-1"`, "InvalidArguments", "cursor offset is invalid", map[string]any{}},
			{"arr.json", `,"cursor":"r:1x"`, "InvalidArguments", "cursor offset is invalid", map[string]any{}},
			{"arr.json", `,"cursor":"r:18446744073709551616"`, "InvalidArguments", "cursor offset is invalid", map[string]any{}},
			{"arr.json", `,"offset":1`, "InvalidArguments", "offset is supported only for bytes reads", map[string]any{}},
			{"arr.json", `,"limit":0`, "InvalidArguments", "", map[string]any{}},
			{"arr.json", `,"limit":301`, "InvalidArguments", "", map[string]any{}},
			{"arr.json", `,"format":"jsonl"`, "InvalidArguments", "", map[string]any{}},
			{"nope.txt", "", "NotFound", "path not found: outputs/nope.txt", map[string]any{"path": "outputs/nope.txt"}},
		} {
			in := `{"id":"wb-main","section":"outputs","path":"` + tc.path + `"` + tc.extra + `}`
			r, ok := call(t, s, "workbench_read", in)
			wantToolError(t, r, ok, tc.code, false, tc.msg, tc.details)
		}
	})
	t.Run("offset zero is no offset", func(t *testing.T) {
		r := read("report.txt", `,"offset":0,"limit":1`)
		wantMembers(t, r, map[string]any{"next_cursor": "r:1"})
	})
}

// with returns a copy of sh where member must have type typ.
func (sh resultShape) with(member, typ string) resultShape {
	set := map[string]string{member: typ}
	for k, v := range sh.set {
		set[k] = v
	}
	sh.set = set
	return sh
}

func TestReadYAML(t *testing.T) {
	s := newService(t)
	cases := []struct {
		body, items string
	}{
		{"a: 1\nb: two\n", `[{"a":1,"b":"two"}]`},
		{"- 1\n- x\n- {k: v}\n", `[1,"x",{"k":"v"}]`},
		{"", `[null]`},
		{"just text", `["just text"]`},
		{"[~, null, Null, NULL, '', \"\"]", `[null,null,null,null,"",""]`},
		{"[true, True, TRUE, false, yes, no, on, off, y, n]", `[true,true,true,false,"yes","no","on","off","y","n"]`},
		{"[0, -7, +7, 0x1F, -0x10, 0o17, 0b101, 0123, -007, 1_000, 18446744073709551615, -9223372036854775808, 18446744073709551616]",
			`[0,-7,7,31,-16,15,5,"0123","-007","1_000",18446744073709551615,-9223372036854775808,1.8446744073709552e19]`},
		{"[1.5, -2., .5, 1e3, 1.0e-7, .inf, -.Inf, .NaN, +.nan, 1e400, 0.0]", `[1.5,-2.0,0.5,1000.0,1e-7,null,null,null,"+.nan","1e400",0.0]`},
		{"[2001-12-14, '1', \"2\", !!str 3, !!int \"5\", !!float 6, !!null '', !!bool true]",
			`["2001-12-14","1","2","3",5,6.0,null,true]`},
		{"1: a\ntrue: b\n~: c\n1.5: d\n", `[{"1":"a","1.5":"d","true":"b","~":"c"}]`},
		{"k: 1\nk: 2\n", `[{"k":2}]`},
		{"base: &b {x: 1}\nuse: *b\n<<: *b\n", `[{"<<":{"x":1},"base":{"x":1},"use":{"x":1}}]`},
		{"text: |\n  line1\n  line2\nfolded: >\n  a\n  b\n", `[{"folded":"a b\n","text":"line1\nline2\n"}]`},
		{"- !!seq [1]\n- !!map {a: 1}\n", `[[1],{"a":1}]`},
	}
	var files []workbench.SeedFile
	for i, c := range cases {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/c%02d.yaml", i), ContentType: "text/plain", Body: []byte(c.body)})
	}
	files = append(files,
		workbench.SeedFile{Path: "outputs/by-type", ContentType: "application/YAML", Body: []byte("- a\n")},
		workbench.SeedFile{Path: "outputs/short.YML", ContentType: "text/plain", Body: []byte("- a\n")},
		workbench.SeedFile{Path: "outputs/both.yaml", ContentType: "application/json", Body: []byte("- a\n")},
	)
	bad := []string{"a: [1\n", "a: 1\n---\nb: 2\n", "!custom 1\n", "? [a]\n: 1\n", "!!int x\n", "!!bool 1\n", "!!null x\n",
		"a: *missing\n", "\tbad: tab\n"}
	for i, b := range bad {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/bad%02d.yml", i), ContentType: "text/plain", Body: []byte(b)})
	}
	// An alias bomb expands beyond the node budget and fails instead of
	// exhausting memory.
	bomb := "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'h'; i++ {
		bomb += fmt.Sprintf("%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	files = append(files, workbench.SeedFile{Path: "outputs/bomb.yaml", ContentType: "text/yaml", Body: []byte(bomb)})
	putFiles(t, s, "wb", files...)

	for i, c := range cases {
		r := mustCall(t, s, "workbench_read", fmt.Sprintf(`{"id":"wb","section":"outputs","path":"c%02d.yaml","limit":300}`, i))
		checkShape(t, r, structuredShape)
		wantMembers(t, r, map[string]any{"record_type": "yaml_mapping"})
		if got := readItems(t, r, 0); got != c.items {
			t.Errorf("%q:\n got %s\nwant %s", c.body, got, c.items)
		}
	}
	r := mustCall(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"by-type"}`)
	wantMembers(t, r, map[string]any{"record_type": "yaml_mapping", "record_count": 1})
	r = mustCall(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"short.YML"}`)
	wantMembers(t, r, map[string]any{"record_type": "yaml_mapping", "record_count": 1})
	// JSON classification comes first.
	rr, ok := call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"both.yaml"}`)
	wantToolError(t, rr, ok, "StructuredDecodeFailed", false, "", map[string]any{"path": "outputs/both.yaml", "format": "json"})
	for i, b := range bad {
		path := fmt.Sprintf("bad%02d.yml", i)
		rr, ok := call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"`+path+`"}`)
		if ok {
			t.Errorf("%q read as %v", b, rr["items"])
			continue
		}
		wantToolError(t, rr, ok, "StructuredDecodeFailed", false, "", map[string]any{"path": "outputs/" + path, "format": "yaml"})
	}
	rr, ok = call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"bomb.yaml"}`)
	wantToolError(t, rr, ok, "StructuredDecodeFailed", false, "", map[string]any{"path": "outputs/bomb.yaml", "format": "yaml"})
}

func TestReadBytes(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{BlockSize: 5})
	body := []byte("0123456789ABCDEFGHIJ\x00\xff\xfe")
	putFiles(t, s, "wb",
		workbench.SeedFile{Path: "input/b.bin", ContentType: "application/octet-stream", Body: body},
		workbench.SeedFile{Path: "input/empty", ContentType: "application/octet-stream", Body: nil},
	)
	read := func(extra string) (map[string]any, bool) {
		return call(t, s, "workbench_read", `{"id":"wb","section":"input","path":"b.bin","format":"bytes"`+extra+`}`)
	}
	b64 := func(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

	r, ok := read("")
	if !ok {
		t.Fatal(r)
	}
	checkShape(t, r, bytesShape)
	wantMembers(t, r, map[string]any{"format": "bytes", "generation": 1, "total_size_bytes": 23, "record_type": nil,
		"record_count": nil, "cursor": nil, "bytes": b64(body), "bytes_encoding": "base64", "next_cursor": nil,
		"truncated": false, "section": "input", "relative_path": "b.bin"})
	if got := readItems(t, r, 0); got != `[]` {
		t.Errorf("items %s", got)
	}

	// Paging by cursor across block boundaries.
	var got []byte
	cursor := ""
	for pages := 0; ; pages++ {
		extra := `,"limit":7`
		if cursor != "" {
			extra += fmt.Sprintf(`,"cursor":%q`, cursor)
		}
		r, ok := read(extra)
		if !ok {
			t.Fatal(r)
		}
		part, err := base64.StdEncoding.Strict().DecodeString(r["bytes"].(string))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, part...)
		next, _ := r["next_cursor"].(string)
		if next == "" {
			if pages != 3 || r["truncated"] != false {
				t.Fatalf("%d pages, truncated %v", pages+1, r["truncated"])
			}
			break
		}
		sh := bytesShape.with("next_cursor", "string")
		sh.any = []string{"cursor"}
		checkShape(t, r, sh)
		if want := fmt.Sprintf("b:%d", len(got)); next != want || r["truncated"] != true {
			t.Fatalf("next_cursor %q truncated %v, want %q", next, r["truncated"], want)
		}
		cursor = next
	}
	if string(got) != string(body) {
		t.Fatalf("paged bytes %q", got)
	}

	for extra, wantBytes := range map[string]string{
		`,"offset":3,"limit":4`:       b64(body[3:7]),
		`,"offset":20`:                b64(body[20:]),
		`,"offset":23`:                "",
		`,"cursor":"b:23"`:            "",
		`,"offset":0,"cursor":"b:22"`: b64(body[22:]),
		`,"limit":300`:                b64(body),
	} {
		r, ok := read(extra)
		if !ok {
			t.Fatalf("%s: %v", extra, r)
		}
		wantMembers(t, r, map[string]any{"bytes": wantBytes})
	}
	r, ok = call(t, s, "workbench_read", `{"id":"wb","section":"input","path":"empty","format":"bytes"}`)
	if !ok {
		t.Fatal(r)
	}
	wantMembers(t, r, map[string]any{"bytes": "", "total_size_bytes": 0, "next_cursor": nil, "truncated": false})

	for extra, msg := range map[string]string{
		`,"offset":24`:               "byte offset is past the end of the artifact",
		`,"cursor":"b:24"`:           "byte offset is past the end of the artifact",
		`,"offset":1,"cursor":"b:2"`: "offset and cursor cannot both be given",
		`,"cursor":"r:1"`:            "cursor belongs to a different read format",
		`,"cursor":"bytes:1"`:        "cursor has an invalid shape",
		`,"cursor":"b:0x10"`:         "cursor offset is invalid",
		`,"cursor":"b: 1"`:           "cursor offset is invalid",
		`,"offset":-1`:               "",
		`,"offset":1.0`:              "",
	} {
		r, ok := read(extra)
		wantToolError(t, r, ok, "InvalidArguments", false, msg, map[string]any{})
	}
}

func TestReadIfNoneMatch(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "wb-main",
		workbench.SeedFile{Path: "outputs/report.txt", ContentType: "text/plain", Body: []byte("v1\n")},
		workbench.SeedFile{Path: "outputs/dir/x", ContentType: "text/plain", Body: []byte("x")},
	)
	replaceFile(t, s, "wb-main", "outputs/report.txt", []byte("v2\n"))
	r := mustCall(t, s, "workbench_read", `{"id":"wb-main","section":"outputs","path":"report.txt","if_none_match":2}`)
	if keys := memberNames(r); !slices.Equal(keys, []string{"generation", "not_modified", "path", "relative_path", "section", "status", "workbench_id", "workbench_path"}) {
		t.Fatalf("not-modified members %v", keys)
	}
	wantMembers(t, r, map[string]any{"not_modified": true, "generation": 2, "status": "success",
		"path": "/agents/test/wb/wb-main/outputs/report.txt", "section": "outputs", "relative_path": "report.txt",
		"workbench_id": "wb-main", "workbench_path": "/agents/test/wb/wb-main"})
	// Another generation reads normally, with no not_modified member, in
	// either format.
	r = mustCall(t, s, "workbench_read", `{"id":"wb-main","section":"outputs","path":"report.txt","if_none_match":1}`)
	checkShape(t, r, structuredShape)
	if got := readItems(t, r, 0); got != `["v2"]` {
		t.Errorf("items %s", got)
	}
	r = mustCall(t, s, "workbench_read", `{"id":"wb-main","section":"outputs","path":"report.txt","if_none_match":0,"format":"bytes"}`)
	checkShape(t, r, bytesShape)
	// A directory or a missing path is read normally, so NotFound.
	for path, logical := range map[string]string{"dir": "outputs/dir", "gone": "outputs/gone"} {
		rr, ok := call(t, s, "workbench_read", `{"id":"wb-main","section":"outputs","path":"`+path+`","if_none_match":1}`)
		wantToolError(t, rr, ok, "NotFound", false, "", map[string]any{"path": logical})
	}
}

// The not-modified check comes first: a matching if_none_match answers
// not_modified even when the cursor or offset is one the page would
// refuse; a generation that differs reads the page, and refuses them.
func TestReadNotModifiedBeforePageChecks(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/a.txt", ContentType: "text/plain", Body: []byte("v1\n")})
	for _, page := range []string{
		`"cursor":"junk"`,
		`"cursor":"b:1"`,
		`"cursor":"r:99"`,
		`"offset":3`,
		`"format":"bytes","offset":1,"cursor":"b:1"`,
		`"format":"bytes","cursor":"r:0"`,
	} {
		t.Run(page, func(t *testing.T) {
			r := mustCall(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"a.txt","if_none_match":1,`+page+`}`)
			wantMembers(t, r, map[string]any{"not_modified": true, "generation": 1})
			rr, ok := call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"a.txt","if_none_match":2,`+page+`}`)
			if ok || rr["code"] != "InvalidArguments" {
				t.Fatalf("changed generation: %v", rr)
			}
			rr, ok = call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"a.txt",`+page+`}`)
			if ok || rr["code"] != "InvalidArguments" {
				t.Fatalf("no if_none_match: %v", rr)
			}
		})
	}
}

// The body is found before the page is read from the arguments, as the
// reference's tool layer fetches it first and checks offset and cursor
// when it slices it (facts.md 3: "the whole body is always fetched and
// then sliced"; 1.2: read's NotFound when the backend returns nothing;
// 2: the backend's size check before reading). So a missing path, a
// missing workbench or a directory is NotFound {path}, and a body over
// the limit ResourceExhausted, whatever offset or cursor comes with it.
func TestReadMissingBeforePageChecks(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{})
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/dir/a.txt", ContentType: "text/plain", Body: []byte("v1\n")},
		workbench.SeedFile{Path: "outputs/big.txt", ContentType: "text/plain", Body: []byte("0123456789")})
	small := newServiceOn(t, b, workbench.Options{MaxBytes: 4})
	for _, page := range []string{
		`"cursor":"junk"`,
		`"cursor":"b:1"`,
		`"cursor":"r:-1"`,
		`"offset":3`,
		`"format":"bytes","offset":1,"cursor":"b:1"`,
		`"format":"bytes","cursor":"r:0"`,
		`"format":"bytes","cursor":""`,
	} {
		t.Run(page, func(t *testing.T) {
			for in, logical := range map[string]string{
				`{"id":"wb","section":"outputs","path":"gone.txt",`:   "outputs/gone.txt",
				`{"id":"wb","section":"outputs","path":"dir",`:        "outputs/dir",
				`{"id":"wb","section":"logs","path":"x",`:             "logs/x",
				`{"id":"nowhere","section":"outputs","path":"a.txt",`: "outputs/a.txt",
			} {
				r, ok := call(t, s, "workbench_read", in+page+`}`)
				wantToolError(t, r, ok, "NotFound", false, "path not found: "+logical, map[string]any{"path": logical})
			}
			r, ok := call(t, small, "workbench_read", `{"id":"wb","section":"outputs","path":"big.txt",`+page+`}`)
			wantToolError(t, r, ok, "ResourceExhausted", false, "", map[string]any{"source": "cairn"})
			// Found and within the limit, the page's arguments are checked.
			r, ok = call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"dir/a.txt",`+page+`}`)
			wantToolError(t, r, ok, "InvalidArguments", false, "", map[string]any{})
		})
	}
}

func TestReadErrors(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{})
	putFiles(t, s, "wb",
		workbench.SeedFile{Path: "outputs/big.txt", ContentType: "text/plain", Body: []byte("0123456789")},
		workbench.SeedFile{Path: "outputs/small.txt", ContentType: "text/plain", Body: []byte("0123")},
		workbench.SeedFile{Path: "outputs/dir/x", ContentType: "text/plain", Body: []byte("x")},
	)
	for in, path := range map[string]string{
		`{"id":"wb","section":"outputs","path":"dir"}`:          "outputs/dir",
		`{"id":"wb","section":"outputs","path":"dir/y"}`:        "outputs/dir/y",
		`{"id":"missing","section":"outputs","path":"big.txt"}`: "outputs/big.txt",
	} {
		r, ok := call(t, s, "workbench_read", in)
		wantToolError(t, r, ok, "NotFound", false, "path not found: "+path, map[string]any{"path": path})
	}
	for in, msg := range map[string]string{
		`{"id":"wb","section":"outputs","path":""}`:                "path is required",
		`{"id":"wb","section":"outputs","path":"outputs/big.txt"}`: "path is relative to section outputs; remove the duplicated section prefix",
		`{"id":"wb","section":"outputs"}`:                          "",
		`{"id":"wb","path":"big.txt"}`:                             "",
		`{"id":"wb","section":null,"path":"big.txt"}`:              "",
		`{"id":"wb","section":"outputs","path":null}`:              "",
	} {
		r, ok := call(t, s, "workbench_read", in)
		wantToolError(t, r, ok, "InvalidArguments", false, msg, map[string]any{})
	}
	// A body over the reader's limit is refused before it is fetched,
	// whatever the page asks for.
	small := newServiceOn(t, b, workbench.Options{MaxBytes: 4})
	for _, format := range []string{"structured", "bytes"} {
		r, ok := call(t, small, "workbench_read", `{"id":"wb","section":"outputs","path":"big.txt","limit":1,"format":"`+format+`"}`)
		wantToolError(t, r, ok, "ResourceExhausted", false, "artifact of 10 bytes exceeds the 4-byte limit", map[string]any{"source": "cairn"})
	}
	r := mustCall(t, small, "workbench_read", `{"id":"wb","section":"outputs","path":"small.txt","format":"bytes"}`)
	wantMembers(t, r, map[string]any{"total_size_bytes": 4})
	// The cheap paths still work on the big file.
	mustCall(t, small, "workbench_stat", `{"id":"wb","section":"outputs","path":"big.txt"}`)
	mustCall(t, small, "workbench_read", `{"id":"wb","section":"outputs","path":"big.txt","if_none_match":1}`)
}

// yamlLaughs is a "billion laughs" body: nine levels of aliases, each
// naming the level below nine times, 9^9 (387,420,489) scalars expanded
// from a few hundred bytes.
func yamlLaughs() string {
	body := `a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]` + "\n"
	for c := 'b'; c <= 'i'; c++ {
		p := string(c - 1)
		body += fmt.Sprintf("%c: &%c [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", c, c, p, p, p, p, p, p, p, p, p)
	}
	return body
}

// yamlRepeat is a body of about 36 KB whose aliases name one 20 KB
// string 4,000 times: few nodes, 80 MB of text once expanded.
func yamlRepeat() string {
	var b strings.Builder
	b.WriteString("s: &s \"" + strings.Repeat("x", 20<<10) + "\"\nl: [")
	for i := range 4000 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("*s")
	}
	b.WriteString("]\n")
	return b.String()
}

// A YAML body's expansion is bounded in nodes, in nodes reached through
// aliases and in bytes of text, so a small body that expands without
// bound is StructuredDecodeFailed, quickly, instead of a result of
// unbounded size or an exhausted memory. BenchmarkReadYAMLBomb measures
// the memory a refusal costs.
func TestReadYAMLBounded(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "wb",
		workbench.SeedFile{Path: "outputs/laughs.yaml", ContentType: "text/yaml", Body: []byte(yamlLaughs())},
		workbench.SeedFile{Path: "outputs/repeat.yaml", ContentType: "text/yaml", Body: []byte(yamlRepeat())},
		// Anchors used as configuration files use them still read.
		workbench.SeedFile{Path: "outputs/anchors.yaml", ContentType: "text/yaml", Body: []byte(
			"base: &base {image: x, replicas: 2}\nweb: {<<: *base, port: 80}\nworker: *base\nlist: [*base, *base]\n")},
	)
	for _, path := range []string{"laughs.yaml", "repeat.yaml"} {
		t.Run(path, func(t *testing.T) {
			start := time.Now()
			r, ok := call(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"`+path+`"}`)
			wantToolError(t, r, ok, "StructuredDecodeFailed", false, "", map[string]any{"path": "outputs/" + path, "format": "yaml"})
			// Generous: the refusal takes milliseconds; without the bounds
			// it took minutes or ran out of memory.
			if d := time.Since(start); d > 10*time.Second {
				t.Fatalf("refusal took %v", d)
			}
		})
	}
	r := mustCall(t, s, "workbench_read", `{"id":"wb","section":"outputs","path":"anchors.yaml"}`)
	want := `[{"base":{"image":"x","replicas":2},"list":[{"image":"x","replicas":2},{"image":"x","replicas":2}],"web":{"<<":{"image":"x","replicas":2},"port":80},"worker":{"image":"x","replicas":2}}]`
	if got := readItems(t, r, 0); got != want {
		t.Fatalf("anchors:\n got %s\nwant %s", got, want)
	}
}

// BenchmarkReadYAMLBomb reads the two expanding bodies of
// TestReadYAMLBounded and reports the bytes a refusal allocates
// (alloc-MiB/op, from runtime.ReadMemStats: an upper bound on the heap it
// can grow by). It fails past 64 MiB.
func BenchmarkReadYAMLBomb(b *testing.B) {
	for name, body := range map[string]string{"laughs": yamlLaughs(), "repeat": yamlRepeat()} {
		b.Run(name, func(b *testing.B) {
			s := newService(b)
			putFiles(b, s, "wb", workbench.SeedFile{Path: "outputs/bomb.yaml", ContentType: "text/yaml", Body: []byte(body)})
			in := []byte(`{"id":"wb","section":"outputs","path":"bomb.yaml"}`)
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				if _, ok := s.Call(context.Background(), "workbench_read", in); ok {
					b.Fatal("the bomb was read")
				}
			}
			runtime.ReadMemStats(&after)
			perOp := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N) / (1 << 20)
			b.ReportMetric(perOp, "alloc-MiB/op")
			if perOp > 64 {
				b.Fatalf("a refusal allocates %.1f MiB, want under 64 MiB", perOp)
			}
		})
	}
}
