package workbench_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// entryNames returns the names of a list result's entries.
func entryNames(t *testing.T, r map[string]any) []string {
	t.Helper()
	var names []string
	for _, e := range r["entries"].([]any) {
		names = append(names, e.(map[string]any)["name"].(string))
	}
	return names
}

// checkList checks a list result against the transcript's shape: the
// result's members, then each entry's, where a directory's size_bytes and
// an entry's null section (outside the sections) or null relative_path (a
// section) are null and everything else has the transcript's type.
func checkList(t *testing.T, r map[string]any, sh resultShape) {
	t.Helper()
	sh.want = shapeList
	sh.live = true
	sh.any = append(sh.any, "entries[]")
	checkShape(t, r, sh)
	entry := `{"e":` + mustMember(t, shapeList, "entries") + `}`
	for _, e := range r["entries"].([]any) {
		e := e.(map[string]any)
		var null []string
		if e["kind"] == "directory" {
			null = append(null, "e[].size_bytes")
		}
		if e["section"] == nil {
			null = append(null, "e[].section")
		}
		if e["relative_path"] == nil {
			null = append(null, "e[].relative_path")
		}
		if e["kind"] != "file" && e["kind"] != "directory" {
			t.Errorf("entry kind %v", e["kind"])
		}
		checkShape(t, map[string]any{"e": []any{e}}, resultShape{want: entry, null: null})
	}
}

// listAll pages through a listing with limit, returning every entry name
// and the number of pages.
func listAll(t *testing.T, s *workbench.Service, args string, limit int) ([]string, int) {
	t.Helper()
	var names []string
	cursor := ""
	for pages := 1; ; pages++ {
		in := fmt.Sprintf(`{%s,"limit":%d}`, args, limit)
		if cursor != "" {
			in = fmt.Sprintf(`{%s,"limit":%d,"cursor":%q}`, args, limit, cursor)
		}
		r := mustCall(t, s, "workbench_list", in)
		checkList(t, r, resultShape{any: []string{"section", "relative_path", "next_cursor"}})
		got := entryNames(t, r)
		wantMembers(t, r, map[string]any{"entry_count": len(got)})
		names = append(names, got...)
		next, _ := r["next_cursor"].(string)
		if (next != "") != (r["truncated"] == true) {
			t.Fatalf("next_cursor %v with truncated %v", r["next_cursor"], r["truncated"])
		}
		if next == "" {
			if len(got) > limit {
				t.Fatalf("page of %d entries, limit %d", len(got), limit)
			}
			return names, pages
		}
		if len(got) != limit {
			t.Fatalf("non-final page of %d entries, limit %d", len(got), limit)
		}
		cursor = next
	}
}

func TestListShapes(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "wb-main",
		workbench.SeedFile{Path: "outputs/report.txt", Body: []byte("Hello world\nsecond\nthird\n")},
		workbench.SeedFile{Path: "outputs/sub/deeper/x.txt", Body: []byte("x")},
		workbench.SeedFile{Path: "outputs/sub/y.txt", Body: []byte("y")},
	)
	// Top-level entries outside the sections, which only other clients
	// write.
	workbench.SeedFilesForTest(t, s, "wb-main",
		workbench.SeedFile{Path: "notes.md", ContentType: "text/markdown", Body: []byte("n")},
		workbench.SeedFile{Path: "extra/z.txt", ContentType: "text/plain", Body: []byte("z")},
	)
	const root = "/agents/test/wb/wb-main"

	t.Run("section", func(t *testing.T) {
		r := mustCall(t, s, "workbench_list", `{"id":"wb-main","section":"outputs"}`)
		checkList(t, r, resultShape{})
		wantMembers(t, r, map[string]any{"status": "success", "workbench_id": "wb-main", "workbench_path": root,
			"section": "outputs", "relative_path": nil, "path": root + "/outputs", "entry_count": 2,
			"next_cursor": nil, "truncated": false})
		es := r["entries"].([]any)
		wantMembers(t, es[0].(map[string]any), map[string]any{"name": "report.txt", "path": root + "/outputs/report.txt",
			"section": "outputs", "relative_path": "report.txt", "kind": "file", "size_bytes": 25, "entry_count": nil})
		wantMembers(t, es[1].(map[string]any), map[string]any{"name": "sub", "path": root + "/outputs/sub",
			"section": "outputs", "relative_path": "sub", "kind": "directory", "size_bytes": nil, "entry_count": nil})
	})
	t.Run("directory", func(t *testing.T) {
		r := mustCall(t, s, "workbench_list", `{"id":"wb-main","section":"outputs","path":"sub"}`)
		checkList(t, r, resultShape{set: map[string]string{"relative_path": "string"}})
		if got := entryNames(t, r); !slices.Equal(got, []string{"deeper", "y.txt"}) {
			t.Errorf("entries %v", got)
		}
		wantMembers(t, r, map[string]any{"relative_path": "sub", "path": root + "/outputs/sub"})
	})
	t.Run("workbench", func(t *testing.T) {
		r := mustCall(t, s, "workbench_list", `{"id":"wb-main"}`)
		checkList(t, r, resultShape{null: []string{"section"}})
		if got, w := entryNames(t, r), []string{"extra", "input", "logs", "metadata", "notes.md", "outputs", "scripts"}; !slices.Equal(got, w) {
			t.Errorf("entries %v, want %v", got, w)
		}
		wantMembers(t, r, map[string]any{"path": root, "section": nil, "relative_path": nil, "entry_count": 7})
		for _, e := range r["entries"].([]any) {
			e := e.(map[string]any)
			switch name := e["name"].(string); {
			case workbench.IsSection(name):
				wantMembers(t, e, map[string]any{"section": name, "relative_path": nil, "kind": "directory", "size_bytes": nil, "path": root + "/" + name})
			case name == "notes.md":
				wantMembers(t, e, map[string]any{"section": nil, "relative_path": "notes.md", "kind": "file", "size_bytes": 1})
			default:
				wantMembers(t, e, map[string]any{"section": nil, "relative_path": name, "kind": "directory", "size_bytes": nil})
			}
		}
	})
	t.Run("empty", func(t *testing.T) {
		s := newService(t)
		mustCall(t, s, "workbench_create", `{"id":"fresh"}`)
		r := mustCall(t, s, "workbench_list", `{"id":"fresh"}`)
		if got := entryNames(t, r); !slices.Equal(got, []string{"input", "logs", "metadata", "outputs", "scripts"}) {
			t.Errorf("entries %v", got)
		}
		for _, in := range []string{`{"id":"fresh","section":"logs"}`, `{"id":"fresh","section":"logs","path":"no/such/dir"}`} {
			r := mustCall(t, s, "workbench_list", in)
			checkList(t, r, resultShape{any: []string{"relative_path"}})
			wantMembers(t, r, map[string]any{"entry_count": 0, "entries": []any{}, "next_cursor": nil, "truncated": false})
		}
	})
	t.Run("nested path with nothing below", func(t *testing.T) {
		for _, in := range []string{`{"id":"wb-main","section":"outputs","path":"sub/nothing"}`, `{"id":"wb-main","path":"nowhere"}`} {
			r := mustCall(t, s, "workbench_list", in)
			wantMembers(t, r, map[string]any{"entry_count": 0, "entries": []any{}, "next_cursor": nil, "truncated": false})
		}
	})
	t.Run("not a directory", func(t *testing.T) {
		r, ok := call(t, s, "workbench_list", `{"id":"wb-main","section":"outputs","path":"report.txt"}`)
		wantToolError(t, r, ok, "NotDirectory", false, "an exact artifact cannot be listed as a directory",
			map[string]any{"path": "outputs/report.txt"})
		r, ok = call(t, s, "workbench_list", `{"id":"wb-main","path":"notes.md"}`)
		wantToolError(t, r, ok, "NotDirectory", false, "", map[string]any{"path": "notes.md"})
	})
	t.Run("missing workbench", func(t *testing.T) {
		r, ok := call(t, s, "workbench_list", `{"id":"nope"}`)
		wantToolError(t, r, ok, "NotFound", false, "", map[string]any{"source": "cairn", "path": "", "code": "NotFound", "conflict": nil, "current_generation": nil})
	})
	t.Run("invalid arguments", func(t *testing.T) {
		for _, in := range []string{`{"id":"wb-main","limit":0}`, `{"id":"wb-main","limit":101}`, `{"id":"wb-main","limit":1.0}`,
			`{"id":"wb-main","section":"outputs","path":"outputs"}`, `{"id":"wb-main","cursor":7}`} {
			r, ok := call(t, s, "workbench_list", in)
			wantToolError(t, r, ok, "InvalidArguments", false, "", map[string]any{})
		}
	})
}

// mustMember returns the JSON text of one member of a JSON object.
func mustMember(t *testing.T, doc, name string) string {
	t.Helper()
	var m map[string]any
	if err := jsonUnmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	b, err := workbench.MarshalResult(m[name])
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// At the workbench root the sections merge with other top-level names in
// component byte order; a file at a section's name replaces the section,
// and a file at a name with descendants replaces the directory. Paging
// with any limit gives the same sequence.
func TestListOrderAndPriority(t *testing.T) {
	s := newService(t)
	workbench.SeedFilesForTest(t, s, "wb",
		workbench.SeedFile{Path: "a", ContentType: "text/plain", Body: []byte("a")},
		workbench.SeedFile{Path: "inputs/x", ContentType: "text/plain", Body: []byte("x")},
		workbench.SeedFile{Path: "logs", ContentType: "text/plain", Body: []byte("log")},
		workbench.SeedFile{Path: "zzz/q", ContentType: "text/plain", Body: []byte("q")},
		workbench.SeedFile{Path: "outputs/a-b/x", ContentType: "text/plain", Body: []byte("1")},
		workbench.SeedFile{Path: "outputs/a/x", ContentType: "text/plain", Body: []byte("2")},
		workbench.SeedFile{Path: "outputs/a", ContentType: "text/plain", Body: []byte("33")},
		workbench.SeedFile{Path: "outputs/ab", ContentType: "text/plain", Body: []byte("4")},
		workbench.SeedFile{Path: "outputs/B", ContentType: "text/plain", Body: []byte("5")},
		workbench.SeedFile{Path: "outputs/é", ContentType: "text/plain", Body: []byte("6")},
	)
	rootWant := []string{"a", "input", "inputs", "logs", "metadata", "outputs", "scripts", "zzz"}
	outWant := []string{"B", "a", "a-b", "ab", "é"}
	for _, limit := range []int{1, 2, 3, 100} {
		got, _ := listAll(t, s, `"id":"wb"`, limit)
		if !slices.Equal(got, rootWant) {
			t.Errorf("limit %d: root %v, want %v", limit, got, rootWant)
		}
		got, _ = listAll(t, s, `"id":"wb","section":"outputs"`, limit)
		if !slices.Equal(got, outWant) {
			t.Errorf("limit %d: outputs %v, want %v", limit, got, outWant)
		}
	}
	r := mustCall(t, s, "workbench_list", `{"id":"wb"}`)
	for _, e := range r["entries"].([]any) {
		e := e.(map[string]any)
		switch e["name"] {
		case "logs":
			wantMembers(t, e, map[string]any{"kind": "file", "size_bytes": 3, "section": "logs", "relative_path": nil})
		case "input", "metadata":
			wantMembers(t, e, map[string]any{"kind": "directory", "section": e["name"]})
		case "inputs", "zzz":
			wantMembers(t, e, map[string]any{"kind": "directory", "section": nil, "relative_path": e["name"]})
		}
	}
	r = mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs"}`)
	a := r["entries"].([]any)[1].(map[string]any)
	wantMembers(t, a, map[string]any{"name": "a", "kind": "file", "size_bytes": 2})
	// The file at "outputs/a" hides nothing below it from a listing of
	// its own path: it is a file, so it is not a directory.
	rr, ok := call(t, s, "workbench_list", `{"id":"wb","section":"outputs","path":"a"}`)
	wantToolError(t, rr, ok, "NotDirectory", false, "", map[string]any{"path": "outputs/a"})
	// The section itself is a file here.
	rr, ok = call(t, s, "workbench_list", `{"id":"wb","section":"logs"}`)
	wantToolError(t, rr, ok, "NotDirectory", false, "", map[string]any{"path": "logs"})
}

func TestListPaging(t *testing.T) {
	// Hundreds of writes load this listing; the engine's after-commit
	// check (which other tests keep on) would dominate the run time.
	s, err := workbench.Open(context.Background(), mem.NewBucket(), workbench.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var files []workbench.SeedFile
	var names []string
	for i := range 250 {
		name := fmt.Sprintf("f%03d.txt", i)
		if i%10 == 0 {
			// Some children are directories with a subtree.
			name = fmt.Sprintf("f%03d", i)
			files = append(files, workbench.SeedFile{Path: "outputs/" + name + "/in/deep.txt", Body: []byte("d")})
			files = append(files, workbench.SeedFile{Path: "outputs/" + name + "/z.txt", Body: []byte("z")})
		} else {
			files = append(files, workbench.SeedFile{Path: "outputs/" + name, Body: []byte(name)})
		}
		names = append(names, name)
	}
	// A sibling section with many rows must not leak into the listing.
	for i := range 60 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("logs/l%03d", i), Body: []byte("l")})
	}
	putFiles(t, s, "wb", files...)

	got, pages := listAll(t, s, `"id":"wb","section":"outputs"`, 100)
	if !slices.Equal(got, names) || pages != 3 {
		t.Fatalf("%d pages, %d names; first %v", pages, len(got), got[:min(5, len(got))])
	}
	// Default limit is 100.
	r := mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs"}`)
	wantMembers(t, r, map[string]any{"entry_count": 100, "truncated": true})
	for _, limit := range []int{1, 7, 99} {
		got, pages := listAll(t, s, `"id":"wb","section":"outputs"`, limit)
		if !slices.Equal(got, names) || pages != (250+limit-1)/limit {
			t.Errorf("limit %d: %d pages, %d names", limit, pages, len(got))
		}
	}
	// A page that ends exactly at the last child has no cursor.
	r = mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs","path":"f000"}`)
	wantMembers(t, r, map[string]any{"entry_count": 2, "next_cursor": nil, "truncated": false})
	r = mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs","path":"f000","limit":2}`)
	wantMembers(t, r, map[string]any{"entry_count": 2, "next_cursor": nil, "truncated": false})
}

func TestListCursors(t *testing.T) {
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{})
	var files []workbench.SeedFile
	for i := range 5 {
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("outputs/f%d", i), Body: []byte("x")})
		files = append(files, workbench.SeedFile{Path: fmt.Sprintf("logs/f%d", i), Body: []byte("x")})
	}
	putFiles(t, s, "wb", files...)
	putFiles(t, s, "other", files...)
	page := func(args string) string {
		t.Helper()
		r := mustCall(t, s, "workbench_list", `{`+args+`,"limit":2}`)
		c, ok := r["next_cursor"].(string)
		if !ok {
			t.Fatalf("no cursor: %v", r)
		}
		if _, err := base64.RawURLEncoding.Strict().DecodeString(c); err != nil || strings.ContainsAny(c, "=+/") {
			t.Fatalf("cursor %q is not base64url without padding", c)
		}
		return c
	}
	c := page(`"id":"wb","section":"outputs"`)
	next := func(args, cursor string) (map[string]any, bool) {
		return call(t, s, "workbench_list", fmt.Sprintf(`{%s,"limit":2,"cursor":%q}`, args, cursor))
	}
	if r, ok := next(`"id":"wb","section":"outputs"`, c); !ok || !slices.Equal(entryNames(t, r), []string{"f2", "f3"}) {
		t.Fatalf("continuation: %v", r)
	}
	// A null cursor is no cursor.
	if r := mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs","limit":2,"cursor":null}`); !slices.Equal(entryNames(t, r), []string{"f0", "f1"}) {
		t.Fatalf("null cursor: %v", r)
	}

	const foreign = "list cursor belongs to a different workbench, prefix, or read view"
	for _, args := range []string{
		`"id":"other","section":"outputs"`,
		`"id":"wb","section":"logs"`,
		`"id":"wb"`,
		`"id":"wb","section":"outputs","path":"f1"`,
		`"id":"wb","path":"logs"`,
	} {
		r, ok := next(args, c)
		wantToolError(t, r, ok, "InvalidState", false, foreign, map[string]any{"source": "cairn"})
	}
	// The same listing addressed without a section is the same prefix.
	if r, ok := next(`"id":"wb","path":"outputs"`, c); !ok || !slices.Equal(entryNames(t, r), []string{"f2", "f3"}) {
		t.Fatalf("section-less continuation: %v", r)
	}

	// Tampering, truncation and garbage are malformed.
	raw, _ := base64.RawURLEncoding.DecodeString(c)
	flipped := append([]byte(nil), raw...)
	flipped[len(flipped)-20] ^= 1
	for _, bad := range []string{"", "x", "!!!", c[:len(c)-1], c + "A", base64.RawURLEncoding.EncodeToString(flipped),
		base64.URLEncoding.EncodeToString(raw), base64.RawStdEncoding.EncodeToString(raw) + "+/"} {
		r, ok := next(`"id":"wb","section":"outputs"`, bad)
		wantToolError(t, r, ok, "InvalidState", false, "list cursor is malformed", map[string]any{"source": "cairn"})
	}
	// Another agent's cursor (another RootId) does not verify.
	s2 := newServiceOn(t, b, workbench.Options{AgentID: "someone-else"})
	putFiles(t, s2, "wb", files...)
	r2 := mustCall(t, s2, "workbench_list", `{"id":"wb","section":"outputs","limit":2}`)
	r, ok := next(`"id":"wb","section":"outputs"`, r2["next_cursor"].(string))
	wantToolError(t, r, ok, "InvalidState", false, "list cursor is malformed", map[string]any{"source": "cairn"})

	// Any write to the workbench fences the continuation off, even one
	// outside the listed prefix; a write elsewhere, or a refused write,
	// does not.
	putFiles(t, s, "other", workbench.SeedFile{Path: "logs/new", Body: []byte("n")})
	if rr, ok := call(t, s, "workbench_put_file", `{"id":"wb","section":"logs","path":"f0","text":"again"}`); ok {
		t.Fatalf("create-only write over an existing file succeeded: %v", rr)
	}
	if _, ok := next(`"id":"wb","section":"outputs"`, c); !ok {
		t.Fatal("a write to another workbench, or a refused one, fenced the continuation")
	}
	for _, write := range []func(){
		func() { putFiles(t, s, "wb", workbench.SeedFile{Path: "logs/new", Body: []byte("n")}) },
		func() { replaceFile(t, s, "wb", "outputs/f0", []byte("changed")) },
		func() {
			mustCall(t, s, "workbench_append", `{"id":"wb","section":"outputs","path":"f4","text":"more"}`)
		},
	} {
		c := page(`"id":"wb","section":"outputs"`)
		write()
		r, ok := next(`"id":"wb","section":"outputs"`, c)
		wantToolError(t, r, ok, "ReadFenceChanged", true, "list fence changed", map[string]any{"source": "cairn", "conflict": "Workspace"})
	}
	// A fresh listing works and mints a cursor for the new revision.
	c = page(`"id":"wb","section":"outputs"`)
	if _, ok := next(`"id":"wb","section":"outputs"`, c); !ok {
		t.Fatal("fresh cursor refused")
	}
	// A replica sees the same fence: its continuation of a page read here
	// succeeds.
	replica := newServiceOn(t, b, workbench.Options{})
	out := mustCall(t, replica, "workbench_list", fmt.Sprintf(`{"id":"wb","section":"outputs","limit":2,"cursor":%q}`, c))
	if !slices.Equal(entryNames(t, out), []string{"f2", "f3"}) {
		t.Fatalf("replica continuation %v", out)
	}
}

// A directory's shard may also hold the rows of a deeper directory whose
// shard key hashes to the same index: the listing skips them, the
// subtree of the child they lie under with one seek, and still lists that
// child and everything after it.
func TestListSkipsDeeperRowsInTheSameShard(t *testing.T) {
	s := newService(t)
	want := workbench.PathShardForTest(t, s, "outputs/p")
	deep := ""
	for i := 0; deep == "" && i < 100000; i++ {
		if d := fmt.Sprintf("outputs/p/m/d%d", i); workbench.PathShardForTest(t, s, d) == want {
			deep = d
		}
	}
	if deep == "" {
		t.Fatal("no directory shares the shard")
	}
	workbench.SeedFilesForTest(t, s, "wb",
		workbench.SeedFile{Path: "outputs/p/a.txt", Body: []byte("a")},
		workbench.SeedFile{Path: deep + "/x.txt", Body: []byte("x")},
		workbench.SeedFile{Path: deep + "/y.txt", Body: []byte("y")},
		workbench.SeedFile{Path: "outputs/p/m", Body: []byte("m")}, // a file at the directory's name
		workbench.SeedFile{Path: "outputs/p/z.txt", Body: []byte("z")},
	)
	for _, limit := range []int{1, 2, 100} {
		names, _ := listAll(t, s, `"id":"wb","section":"outputs","path":"p"`, limit)
		if got, want := strings.Join(names, ","), "a.txt,m,z.txt"; got != want {
			t.Fatalf("limit %d: %s, want %s", limit, got, want)
		}
	}
	r := mustCall(t, s, "workbench_list", `{"id":"wb","section":"outputs","path":"p"}`)
	if kind := r["entries"].([]any)[1].(map[string]any)["kind"]; kind != "file" {
		t.Fatalf("m is a %v, want the file", kind)
	}
}

// Every tool that creates a path leaves the directories above it listed:
// put_file and append (creating) write the rows of the ancestors that
// lack one; a replace, an append to an existing file and an edit create
// none and list the same.
func TestListDirectoriesOfWrittenPaths(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a/b/c.txt", `"text":"c"`))
	mustCall(t, s, "workbench_append", appendInput("wb", "outputs", "a/x/y/z.txt", `"text":"z"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a/b/d.txt", `"text":"d"`))
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "a/b/c.txt", `"text":"cc"`, `"replace":true`))
	mustCall(t, s, "workbench_append", appendInput("wb", "outputs", "a/x/y/z.txt", `"text":"zz"`))
	mustCall(t, s, "workbench_edit", editInput("wb", "outputs", "a/b/d.txt", "d", "e"))
	for dir, want := range map[string]string{
		"":      "a",
		"a":     "b,x",
		"a/b":   "c.txt,d.txt",
		"a/x":   "y",
		"a/x/y": "z.txt",
	} {
		names, _ := listAll(t, s, fmt.Sprintf(`"id":"wb","section":"outputs","path":%q`, dir), 100)
		if got := strings.Join(names, ","); got != want {
			t.Errorf("list outputs/%s: %s, want %s", dir, got, want)
		}
	}
	for _, dir := range []string{"a", "a/b", "a/x", "a/x/y"} {
		r := mustCall(t, s, "workbench_stat", fmt.Sprintf(`{"id":"wb","section":"outputs","path":%q}`, dir))
		if kind := r["card"].(map[string]any)["kind"]; kind != "directory" {
			t.Errorf("stat outputs/%s: %v, want a directory", dir, kind)
		}
	}
	// A directory is no file to create, and nothing is created under a
	// file.
	if r, ok := call(t, s, "workbench_put_file", putInput("wb", "outputs", "a/x", `"text":"no"`)); ok || r["code"] != "AlreadyExists" {
		t.Errorf("put over a directory: %v", r)
	}
	if r, ok := call(t, s, "workbench_put_file", putInput("wb", "outputs", "a/b/c.txt/n", `"text":"no"`)); ok || r["code"] != "NotDirectory" {
		t.Errorf("put under a file: %v", r)
	}
}
