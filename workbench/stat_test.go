package workbench_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/counting"
	"github.com/cairnstore/cairn/bucket/latency"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// The contract's golden transcript results of the three read-scope tools
// (result-transcript.json, "success"). Tests compare every success result
// against these shapes: the same member names at every level, and the
// same JSON type for each member, except members the test names as null.
const (
	shapeStat = `{
  "at_snapshot": "frozen",
  "card": {"content_type": "text/plain", "digest_uri": "sha256:39bf1d4f770003e2f81ee75759c78615edccb6831dadd4c617d044350d2d73ef",
    "entry_count": null, "generation": 3, "kind": "file", "manifest_id": null, "name": "report.txt",
    "path": "/agents/test/wb/wb-main/outputs/report.txt", "producer": "test-agent", "record_count": null,
    "relative_path": "report.txt", "section": "outputs", "size_bytes": 25},
  "path": "/agents/test/wb/wb-main/outputs/report.txt", "relative_path": "report.txt", "section": "outputs",
  "status": "success", "workbench_id": "wb-main", "workbench_path": "/agents/test/wb/wb-main"}`

	shapeList = `{
  "at_snapshot": 7,
  "entries": [{"entry_count": null, "kind": "file", "name": "report.txt",
    "path": "/agents/test/wb/wb-main/outputs/report.txt", "relative_path": "report.txt", "section": "outputs", "size_bytes": 25}],
  "entry_count": 1, "next_cursor": null, "path": "/agents/test/wb/wb-main/outputs", "relative_path": null,
  "section": "outputs", "status": "success", "truncated": false, "workbench_id": "wb-main",
  "workbench_path": "/agents/test/wb/wb-main"}`

	shapeRead = `{
  "at_snapshot": 7, "bytes": null, "bytes_encoding": null, "cursor": null, "format": "structured", "generation": 3,
  "items": [{"index": 0, "value": "Hello world"}, {"index": 1, "value": "second"}, {"index": 2, "value": "third"}],
  "next_cursor": null, "path": "/agents/test/wb/wb-main/outputs/report.txt", "record_count": 3,
  "record_type": "text_lines", "relative_path": "report.txt", "section": "outputs", "status": "success",
  "total_size_bytes": 25, "truncated": false, "workbench_id": "wb-main", "workbench_path": "/agents/test/wb/wb-main"}`
)

// putFiles writes files (stored paths under the five sections) through
// workbench_put_file, create-only, several at once so that the engine's
// group commit keeps many writes quick, and returns their generations.
// The workbench is created by the first write. A file without a content
// type gets the payload's default.
func putFiles(t testing.TB, s *workbench.Service, id string, files ...workbench.SeedFile) []uint64 {
	t.Helper()
	gens := make([]uint64, len(files))
	errs := make([]string, len(files))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i, f := range files {
		section, rel, _ := strings.Cut(f.Path, "/")
		in := map[string]any{"id": id, "section": section, "path": rel, "base64": base64.StdEncoding.EncodeToString(f.Body)}
		if f.ContentType != "" {
			in["content_type"] = f.ContentType
		}
		raw, err := json.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out, ok := s.Call(context.Background(), "workbench_put_file", raw)
			var r map[string]any
			if err := jsonUnmarshal(out, &r); err != nil || !ok {
				errs[i] = fmt.Sprintf("put %s: %s", f.Path, out)
				return
			}
			g, err := r["generation"].(json.Number).Int64()
			if err != nil {
				errs[i] = err.Error()
			}
			gens[i] = uint64(g)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	return gens
}

// replaceFile replaces a file (stored path) through workbench_put_file and
// returns the new generation.
func replaceFile(t testing.TB, s *workbench.Service, id, path string, body []byte) uint64 {
	t.Helper()
	section, rel, _ := strings.Cut(path, "/")
	in, _ := json.Marshal(map[string]any{"id": id, "section": section, "path": rel, "text": string(body), "replace": true})
	r := mustCall(t, s, "workbench_put_file", string(in))
	g, _ := r["generation"].(json.Number).Int64()
	return uint64(g)
}

// jsonType names the JSON type of a decoded value.
func jsonTypeOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// resultShape is a transcript result and the adjustments one test makes to it.
type resultShape struct {
	want string
	// live drops at_snapshot: a live read has no such member.
	live bool
	// null lists members (dotted, "[]" for array elements) that must be
	// null in the result whatever the transcript shows.
	null []string
	// set lists members that must hold a non-null value of the type
	// given ("string", "number", ...) where the transcript shows null.
	set map[string]string
	// any lists members whose value is free (a record's value).
	any []string
}

// checkShape compares a decoded result with a transcript shape.
func checkShape(t *testing.T, got map[string]any, sh resultShape) {
	t.Helper()
	var want map[string]any
	if err := jsonUnmarshal([]byte(sh.want), &want); err != nil {
		t.Fatal(err)
	}
	if sh.live {
		delete(want, "at_snapshot")
	}
	for _, p := range compareShape(got, want, "", sh) {
		t.Error(p)
	}
}

func compareShape(got, want any, at string, sh resultShape) []string {
	if slices.Contains(sh.any, at) {
		return nil
	}
	gt, wt := jsonTypeOf(got), jsonTypeOf(want)
	if slices.Contains(sh.null, at) {
		if gt != "null" {
			return []string{fmt.Sprintf("%s: %s, want null", at, gt)}
		}
		return nil
	}
	if typ, ok := sh.set[at]; ok {
		wt = typ
	}
	if gt != wt {
		return []string{fmt.Sprintf("%s: %s (%v), want %s", at, gt, got, wt)}
	}
	var probs []string
	switch w := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		if gk, wk := memberNames(g), memberNames(w); !slices.Equal(gk, wk) {
			return []string{fmt.Sprintf("%s: members %v, want %v", at, gk, wk)}
		}
		for k := range w {
			probs = append(probs, compareShape(g[k], w[k], strings.TrimPrefix(at+"."+k, "."), sh)...)
		}
	case []any:
		if len(w) == 0 {
			break
		}
		for _, e := range got.([]any) {
			probs = append(probs, compareShape(e, w[0], at+"[]", sh)...)
		}
	}
	return probs
}

func memberNames(m map[string]any) []string {
	k := make([]string, 0, len(m))
	for n := range m {
		k = append(k, n)
	}
	sort.Strings(k)
	return k
}

// wantError checks an error result: code, retryable, message (when not
// "") and exactly the detail keys and values given (nil values: any).
func wantToolError(t *testing.T, got map[string]any, ok bool, code string, retryable bool, message string, details map[string]any) {
	t.Helper()
	if ok {
		t.Fatalf("succeeded, want %s: %v", code, got)
	}
	if keys := memberNames(got); !slices.Equal(keys, []string{"code", "details", "message", "retryable", "status"}) {
		t.Errorf("error members %v", keys)
	}
	if got["status"] != "error" || got["code"] != code || got["retryable"] != retryable {
		t.Errorf("got %v, want code %s retryable %v", got, code, retryable)
	}
	if message != "" && got["message"] != message {
		t.Errorf("message %q, want %q", got["message"], message)
	}
	d, _ := got["details"].(map[string]any)
	if gk, wk := memberNames(d), memberNames(details); !slices.Equal(gk, wk) {
		t.Errorf("details %v, want keys %v", d, wk)
	}
	for k, v := range details {
		if v != nil && fmt.Sprint(d[k]) != fmt.Sprint(v) {
			t.Errorf("details.%s = %v, want %v", k, d[k], v)
		}
	}
}

// want compares result members with expected values (by their printed
// form, so json.Number 3 equals 3).
func wantMembers(t *testing.T, got map[string]any, members map[string]any) {
	t.Helper()
	for k, v := range members {
		g, present := got[k]
		if !present {
			t.Errorf("member %s missing", k)
			continue
		}
		if fmt.Sprint(g) != fmt.Sprint(v) {
			t.Errorf("%s = %v, want %v", k, g, v)
		}
	}
}

func TestStatCards(t *testing.T) {
	s := newService(t)
	gens := putFiles(t, s, "wb-main",
		workbench.SeedFile{Path: "outputs/report.txt", ContentType: "text/plain", Body: []byte("Hello world\nsecond\nthird\n")},
		workbench.SeedFile{Path: "outputs/deep/er/x.bin", Body: []byte{0, 1, 2}},
	)
	if gens[0] != 1 {
		t.Fatalf("generation %d", gens[0])
	}
	// Entries outside the five sections, which only other clients write.
	workbench.SeedFilesForTest(t, s, "wb-main",
		workbench.SeedFile{Path: "notes.md", ContentType: "text/markdown", Body: []byte("# n")},
		workbench.SeedFile{Path: "extra/dir/y.txt", ContentType: "text/plain", Body: []byte("y")},
	)
	const root = "/agents/test/wb/wb-main"
	dirNull := []string{"card.size_bytes", "card.generation", "card.content_type", "card.digest_uri", "card.producer", "card.manifest_id"}

	t.Run("file", func(t *testing.T) {
		r := mustCall(t, s, "workbench_stat", `{"id":"wb-main","section":"outputs","path":"report.txt"}`)
		checkShape(t, r, resultShape{want: shapeStat, live: true, null: []string{"card.producer"}})
		wantMembers(t, r, map[string]any{"status": "success", "workbench_id": "wb-main", "workbench_path": root,
			"section": "outputs", "relative_path": "report.txt", "path": root + "/outputs/report.txt"})
		wantMembers(t, r["card"].(map[string]any), map[string]any{
			"name": "report.txt", "path": root + "/outputs/report.txt", "section": "outputs",
			"relative_path": "report.txt", "kind": "file", "size_bytes": 25, "generation": 1,
			"content_type": "text/plain", "digest_uri": workbench.DigestURI([]byte("Hello world\nsecond\nthird\n")),
		})
		// Addressing the same file without a section gives the same card
		// but for its section and relative_path, which echo the request's
		// scope as the result's own do (TestReadScopeEchoesRequest).
		r2 := mustCall(t, s, "workbench_stat", `{"id":"wb-main","path":"outputs/report.txt"}`)
		c, c2 := r["card"].(map[string]any), r2["card"].(map[string]any)
		wantMembers(t, c2, map[string]any{"section": nil, "relative_path": "outputs/report.txt"})
		for k, v := range c {
			if k != "section" && k != "relative_path" && fmt.Sprint(c2[k]) != fmt.Sprint(v) {
				t.Errorf("section-less stat: card %s = %v, want %v", k, c2[k], v)
			}
		}
		if r2["path"] != r["path"] {
			t.Errorf("section-less stat: path %v, want %v", r2["path"], r["path"])
		}
	})
	t.Run("workbench", func(t *testing.T) {
		for _, in := range []string{`{"id":"wb-main"}`, `{"id":"wb-main","section":null,"path":""}`} {
			r := mustCall(t, s, "workbench_stat", in)
			checkShape(t, r, resultShape{want: shapeStat, live: true,
				null: append([]string{"section", "relative_path", "card.section", "card.relative_path"}, dirNull...)})
			wantMembers(t, r, map[string]any{"path": root})
			wantMembers(t, r["card"].(map[string]any), map[string]any{"name": "wb-main", "path": root, "kind": "directory"})
		}
	})
	t.Run("section", func(t *testing.T) {
		for _, sec := range workbench.Sections() {
			r := mustCall(t, s, "workbench_stat", `{"id":"wb-main","section":"`+sec+`"}`)
			checkShape(t, r, resultShape{want: shapeStat, live: true,
				null: append([]string{"relative_path", "card.relative_path"}, dirNull...)})
			wantMembers(t, r, map[string]any{"section": sec, "path": root + "/" + sec})
			wantMembers(t, r["card"].(map[string]any), map[string]any{"name": sec, "section": sec, "kind": "directory"})
		}
	})
	t.Run("directory", func(t *testing.T) {
		r := mustCall(t, s, "workbench_stat", `{"id":"wb-main","section":"outputs","path":"deep/er"}`)
		checkShape(t, r, resultShape{want: shapeStat, live: true, null: dirNull})
		wantMembers(t, r["card"].(map[string]any), map[string]any{"name": "er", "relative_path": "deep/er", "kind": "directory",
			"path": root + "/outputs/deep/er"})
	})
	t.Run("outside the sections", func(t *testing.T) {
		r := mustCall(t, s, "workbench_stat", `{"id":"wb-main","path":"notes.md"}`)
		checkShape(t, r, resultShape{want: shapeStat, live: true, null: []string{"section", "card.section", "card.producer"}})
		wantMembers(t, r, map[string]any{"relative_path": "notes.md", "path": root + "/notes.md"})
		wantMembers(t, r["card"].(map[string]any), map[string]any{"name": "notes.md", "kind": "file", "size_bytes": 3, "content_type": "text/markdown"})
		r = mustCall(t, s, "workbench_stat", `{"id":"wb-main","path":"extra/dir"}`)
		checkShape(t, r, resultShape{want: shapeStat, live: true, null: append([]string{"section", "card.section"}, dirNull...)})
		wantMembers(t, r["card"].(map[string]any), map[string]any{"name": "dir", "relative_path": "extra/dir", "kind": "directory"})
	})
	t.Run("not found", func(t *testing.T) {
		for in, path := range map[string]string{
			`{"id":"wb-main","section":"outputs","path":"nope.txt"}`:  "outputs/nope.txt",
			`{"id":"wb-main","section":"outputs","path":"report.tx"}`: "outputs/report.tx",
			`{"id":"wb-main","section":"outputs","path":"deep/e"}`:    "outputs/deep/e",
			`{"id":"wb-main","path":"extra/di"}`:                      "extra/di",
			`{"id":"wb-main","path":"input2"}`:                        "input2",
			`{"id":"missing"}`:                                        "",
			`{"id":"missing","section":"outputs","path":"a.txt"}`:     "outputs/a.txt",
		} {
			r, ok := call(t, s, "workbench_stat", in)
			wantToolError(t, r, ok, "NotFound", false, "path not found: "+path, map[string]any{"path": path})
		}
	})
	t.Run("invalid arguments", func(t *testing.T) {
		for _, in := range []string{
			`{"id":"wb.main"}`,
			`{"id":"wb-main","section":"outputs","path":"outputs/report.txt"}`,
			`{"id":"wb-main","section":"outputs","path":"/abs"}`,
			`{"id":"wb-main","path":"a//b"}`,
			`{"id":"wb-main","section":"other"}`,
		} {
			r, ok := call(t, s, "workbench_stat", in)
			wantToolError(t, r, ok, "InvalidArguments", false, "", map[string]any{})
		}
	})
}

// A file written at a section's name or at a name that also has
// descendants (possible in the store, though not through the write tools)
// is a file to stat.
func TestStatFileWins(t *testing.T) {
	s := newService(t)
	workbench.SeedFilesForTest(t, s, "wb",
		workbench.SeedFile{Path: "outputs", ContentType: "text/plain", Body: []byte("x")},
		workbench.SeedFile{Path: "logs/d", ContentType: "text/plain", Body: []byte("yy")},
		workbench.SeedFile{Path: "logs/d/e", ContentType: "text/plain", Body: []byte("z")},
	)
	r := mustCall(t, s, "workbench_stat", `{"id":"wb","section":"outputs"}`)
	wantMembers(t, r["card"].(map[string]any), map[string]any{"kind": "file", "size_bytes": 1, "name": "outputs"})
	r = mustCall(t, s, "workbench_stat", `{"id":"wb","section":"logs","path":"d"}`)
	wantMembers(t, r["card"].(map[string]any), map[string]any{"kind": "file", "size_bytes": 2})
}

// Request costs of a warm Service: a stat, a list and a read reuse the
// cached root, tables and shard objects and cost one head read each, plus
// the body's blocks for a read.
func TestReadScopeRequestCounts(t *testing.T) {
	// Every request waits a little, so that requests sent together
	// overlap and count as one round.
	cb := counting.New(latency.New(mem.NewBucket(), latency.Options{PerRequest: 3 * time.Millisecond}))
	// Without the cache of small blocks, so that a warm read shows its
	// block requests; with it, the read below is the head only.
	s := newServiceOn(t, cb, workbench.Options{BlockSize: 8, BlockCacheBytes: -1})
	body := []byte(strings.Repeat("0123456789abcdef\n", 3)) // 51 bytes: 7 blocks of 8
	putFiles(t, s, "wb",
		workbench.SeedFile{Path: "outputs/a.txt", ContentType: "text/plain", Body: body},
		workbench.SeedFile{Path: "outputs/d/b.txt", ContentType: "text/plain", Body: []byte("b")},
	)
	ctx := context.Background()
	for _, tc := range []struct {
		tool, input  string
		want, rounds int64
	}{
		{"workbench_stat", `{"id":"wb","section":"outputs","path":"a.txt"}`, 1, 1},
		{"workbench_stat", `{"id":"wb","section":"outputs","path":"d"}`, 1, 1},
		{"workbench_stat", `{"id":"wb"}`, 1, 1},
		{"workbench_list", `{"id":"wb"}`, 1, 1},
		{"workbench_list", `{"id":"wb","section":"outputs"}`, 1, 1},
		// The head, then the seven blocks in parallel.
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt"}`, 1 + 7, 2},
		// A byte range fetches only the blocks that hold it.
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt","format":"bytes","offset":3,"limit":2}`, 1 + 1, 2},
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt","format":"bytes","offset":6,"limit":4}`, 1 + 2, 2},
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt","if_none_match":1}`, 1, 1},
	} {
		// The first call warms the caches; the second is measured.
		if out, ok := s.Call(ctx, tc.tool, []byte(tc.input)); !ok {
			t.Fatalf("%s %s: %s", tc.tool, tc.input, out)
		}
		cb.Reset()
		if out, ok := s.Call(ctx, tc.tool, []byte(tc.input)); !ok {
			t.Fatalf("%s %s: %s", tc.tool, tc.input, out)
		}
		st := cb.Snapshot()
		if got := st.Total().Requests; got != tc.want || st.Get.Requests != tc.want {
			t.Errorf("warm %s %s: %d requests (%+v), want %d GETs", tc.tool, tc.input, got, st, tc.want)
		}
		if st.Rounds != tc.rounds {
			t.Errorf("warm %s %s: %d rounds, want %d", tc.tool, tc.input, st.Rounds, tc.rounds)
		}
		t.Logf("warm %s %s: %d requests, %d rounds", tc.tool, tc.input, st.Total().Requests, st.Rounds)
	}

	// With the cache of small blocks (the default), a warm read is the
	// head only.
	cached := newServiceOn(t, cb, workbench.Options{BlockSize: 8})
	read := `{"id":"wb","section":"outputs","path":"a.txt"}`
	for range 2 { // the first warms the caches
		cb.Reset()
		if out, ok := cached.Call(ctx, "workbench_read", []byte(read)); !ok {
			t.Fatalf("read: %s", out)
		}
	}
	if got := cb.Snapshot().Total().Requests; got != 1 {
		t.Errorf("warm read with the block cache: %d requests, want 1", got)
	}

	// Right after its own write a Service has what it wrote cached: the
	// next stat and list are one request each.
	replaceFile(t, s, "wb", "outputs/d/b.txt", []byte("bb"))
	for _, in := range []string{`{"id":"wb","section":"outputs","path":"d/b.txt"}`, `{"id":"wb","section":"outputs"}`} {
		tool := "workbench_stat"
		if !strings.Contains(in, "path") {
			tool = "workbench_list"
		}
		cb.Reset()
		if out, ok := s.Call(ctx, tool, []byte(in)); !ok {
			t.Fatalf("%s: %s", tool, out)
		}
		if got := cb.Snapshot().Total().Requests; got != 1 {
			t.Errorf("%s after a write: %d requests, want 1", tool, got)
		}
	}

	// A Service that has served one request on the same bucket loads
	// what each tool needs once.
	cold := newServiceOn(t, cb, workbench.Options{BlockSize: 8})
	for _, tc := range []struct{ tool, input string }{
		{"workbench_stat", `{"id":"wb","section":"outputs","path":"a.txt"}`},
		{"workbench_list", `{"id":"wb","section":"outputs"}`},
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt"}`},
	} {
		cb.Reset()
		if out, ok := cold.Call(ctx, tc.tool, []byte(tc.input)); !ok {
			t.Fatalf("%s: %s", tc.tool, out)
		}
		st := cb.Snapshot()
		t.Logf("cold %s %s: %d requests, %d rounds", tc.tool, tc.input, st.Total().Requests, st.Rounds)
	}
}

// TestColdStartRequestCounts: a new process, from workbench.Open through
// its first request, with nothing cached. Open does no I/O. The first
// stat of a file is the head, the root, the tables (workspace_current,
// path_current, path_directory) and the shards (the workbench's marker
// and the shards of the file's directory, which the path families' shard
// key lets it name before it knows the incarnation): 4 rounds; the schema gate's system
// table and shard ride along in the last two. The first read adds the
// artifact_manifest table to the tables' round, then the manifest's shard
// and the blocks.
func TestColdStartRequestCounts(t *testing.T) {
	store := mem.NewStore()
	wb, _ := mem.New(store, "")
	w := newServiceOn(t, wb, workbench.Options{BlockSize: 8})
	putFiles(t, w, "wb",
		workbench.SeedFile{Path: "outputs/a.txt", ContentType: "text/plain", Body: []byte(strings.Repeat("0123456789abcdef\n", 3))},
		workbench.SeedFile{Path: "outputs/d/b.txt", ContentType: "text/plain", Body: []byte("b")},
	)
	ctx := context.Background()
	for _, tc := range []struct {
		tool, input string
		rounds      int64 // at most
	}{
		{"workbench_stat", `{"id":"wb","section":"outputs","path":"a.txt"}`, 4},
		{"workbench_stat", `{"id":"wb"}`, 4},
		{"workbench_stat", `{"id":"nope"}`, 4},
		{"workbench_stat", `{"id":"wb","section":"outputs","path":"d"}`, 4},     // the directory's row rides with the file's shard
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt"}`, 6}, // + the manifest's shard, + the blocks
		{"workbench_list", `{"id":"wb","section":"outputs"}`, 4},                // one shard of path_current and of path_directory
	} {
		mb, _ := mem.New(store, "")
		cb := counting.New(latency.New(mb, latency.Options{PerRequest: 3 * time.Millisecond}))
		s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test", BlockSize: 8})
		if err != nil {
			t.Fatal(err)
		}
		if n := cb.Snapshot().Total().Requests; n != 0 {
			t.Fatalf("workbench.Open made %d requests, want none", n)
		}
		out, _ := s.Call(ctx, tc.tool, []byte(tc.input))
		st := cb.Snapshot()
		t.Logf("new process, Open + first %s %s: %d requests in %d rounds (%s)", tc.tool, tc.input, st.Total().Requests, st.Rounds, out[:min(len(out), 40)])
		if st.Rounds > tc.rounds {
			t.Errorf("Open + first %s %s: %d rounds, want at most %d", tc.tool, tc.input, st.Rounds, tc.rounds)
		}
		if st.Put.Requests+st.Delete.Requests != 0 {
			t.Errorf("a read wrote: %+v", st)
		}
		s.Close()
	}
}

// TestReadOfStoreWithoutHead: a deployment never written reads as empty
// (NotFound, an empty catalog) and the reads write nothing; the first
// write creates the store.
func TestReadOfStoreWithoutHead(t *testing.T) {
	ctx := context.Background()
	cb := counting.New(mem.NewBucket())
	s, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, tc := range []struct{ tool, input string }{
		{"workbench_stat", `{"id":"wb"}`},
		{"workbench_list", `{"id":"wb"}`},
	} {
		r, ok := call(t, s, tc.tool, tc.input)
		if ok || r["code"] != "NotFound" {
			t.Fatalf("%s of a store never written: %v", tc.tool, r)
		}
	}
	if r, ok := call(t, s, "workbench_catalog", `{}`); !ok {
		t.Fatalf("workbench_catalog of a store never written: %v", r)
	}
	if st := cb.Snapshot(); st.Put.Requests+st.Delete.Requests != 0 {
		t.Fatalf("reads of a store never written wrote: %+v", st)
	}
	mustCall(t, s, "workbench_create", `{"id":"wb"}`)
	mustCall(t, s, "workbench_stat", `{"id":"wb"}`)
}

// TestLostHeadIsNotEmpty: a store whose head object is deleted while its
// other objects remain is never taken for an empty one: reads fail with
// a non-retryable ObjectUnavailable, writes fail the same way, and
// nothing is written (no new genesis head over the lost state).
func TestLostHeadIsNotEmpty(t *testing.T) {
	ctx := context.Background()
	mb := mem.NewBucket()
	s := newServiceOn(t, mb, workbench.Options{})
	mustCall(t, s, "workbench_create", `{"id":"wb"}`)
	mustCall(t, s, "workbench_put_file", `{"id":"wb","section":"outputs","path":"a.txt","text":"a"}`)
	if err := mb.Delete(ctx, s.Store().Layout().Head(), bucket.IfAbsent()); err == nil {
		t.Fatal("delete with IfAbsent succeeded")
	}
	if err := mb.Delete(ctx, s.Store().Layout().Head(), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	cb := counting.New(mb)
	r, err := workbench.Open(ctx, cb, workbench.Options{AgentID: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, tc := range []struct{ tool, input string }{
		{"workbench_stat", `{"id":"wb"}`},
		{"workbench_read", `{"id":"wb","section":"outputs","path":"a.txt"}`},
		{"workbench_put_file", `{"id":"wb","section":"outputs","path":"b.txt","text":"b"}`},
		{"workbench_create", `{"id":"wb2"}`},
	} {
		res, ok := call(t, r, tc.tool, tc.input)
		if ok || res["code"] != "ObjectUnavailable" || res["retryable"] != false {
			t.Fatalf("%s with a lost head: %v", tc.tool, res)
		}
	}
	if st := cb.Snapshot(); st.Put.Requests+st.Delete.Requests != 0 {
		t.Fatalf("calls on a store with a lost head wrote: %+v", st)
	}
}

// at_snapshot on the read tools: an empty name is InvalidArguments; a
// snapshot that resolves to nothing is NotFound with the server's details,
// as the reference's read paths report the server's miss (SnapshotNotFound
// belongs to the snapshot tools' own lookups).
func TestReadToolsAtUnknownSnapshot(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/a.txt", ContentType: "text/plain", Body: []byte("a")})
	for _, tool := range []string{"workbench_stat", "workbench_list", "workbench_read"} {
		for _, at := range []string{`7`, `"frozen"`} {
			t.Run(tool+" "+at, func(t *testing.T) {
				r, ok := call(t, s, tool, `{"id":"wb","section":"outputs","path":"a.txt","at_snapshot":`+at+`}`)
				if ok || r["code"] != "NotFound" || r["retryable"] != false {
					t.Fatalf("got %v, want NotFound", r)
				}
				d := r["details"].(map[string]any)
				if d["code"] != "NotFound" || d["source"] != workbench.Source {
					t.Fatalf("details %v", d)
				}
			})
		}
		t.Run(tool+" empty name", func(t *testing.T) {
			r, ok := call(t, s, tool, `{"id":"wb","section":"outputs","path":"a.txt","at_snapshot":""}`)
			wantToolError(t, r, ok, "InvalidArguments", false, "", map[string]any{})
		})
	}
}

// With section null, stat, list and grep echo the request's scope:
// section null and relative_path the path as given, even when its first
// component names a section; stat's card echoes it too (it describes the
// path asked about), while the presentation path, list entries and grep
// matches are those of the stored path. With a section, both are echoed
// as given.
func TestReadScopeEchoesRequest(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "wb", workbench.SeedFile{Path: "outputs/dir/a.txt", ContentType: "text/plain", Body: []byte("hit\n")})
	for _, tc := range []struct {
		tool, args string
		section    any
		rel        any
		path       string
	}{
		{"workbench_stat", `"path":"outputs/dir/a.txt"`, nil, "outputs/dir/a.txt", "/agents/test/wb/wb/outputs/dir/a.txt"},
		{"workbench_stat", `"section":null,"path":"outputs"`, nil, "outputs", "/agents/test/wb/wb/outputs"},
		{"workbench_stat", `"section":"outputs","path":"dir"`, "outputs", "dir", "/agents/test/wb/wb/outputs/dir"},
		{"workbench_list", `"path":"outputs/dir"`, nil, "outputs/dir", "/agents/test/wb/wb/outputs/dir"},
		{"workbench_list", `"path":"outputs"`, nil, "outputs", "/agents/test/wb/wb/outputs"},
		{"workbench_list", `"section":"outputs"`, "outputs", nil, "/agents/test/wb/wb/outputs"},
		{"workbench_grep", `"path":"outputs/dir","pattern":"hit","recursive":true`, nil, "outputs/dir", "/agents/test/wb/wb/outputs/dir"},
		{"workbench_grep", `"section":null,"path":"outputs","pattern":"hit","recursive":true`, nil, "outputs", "/agents/test/wb/wb/outputs"},
		{"workbench_grep", `"section":"outputs","pattern":"hit","recursive":true`, "outputs", nil, "/agents/test/wb/wb/outputs"},
	} {
		t.Run(tc.tool+" "+tc.args, func(t *testing.T) {
			r := mustCall(t, s, tc.tool, `{"id":"wb",`+tc.args+`}`)
			if r["section"] != tc.section || r["relative_path"] != tc.rel || r["path"] != tc.path {
				t.Fatalf("section %v relative_path %v path %v, want %v %v %s", r["section"], r["relative_path"], r["path"], tc.section, tc.rel, tc.path)
			}
		})
	}
	// The card agrees with the result's own scope; matches project the
	// stored path.
	r := mustCall(t, s, "workbench_stat", `{"id":"wb","path":"outputs/dir/a.txt"}`)
	if c := r["card"].(map[string]any); c["section"] != nil || c["relative_path"] != "outputs/dir/a.txt" || c["name"] != "a.txt" {
		t.Fatalf("card %v", c)
	}
	r = mustCall(t, s, "workbench_stat", `{"id":"wb","section":"outputs","path":"dir/a.txt"}`)
	if c := r["card"].(map[string]any); c["section"] != "outputs" || c["relative_path"] != "dir/a.txt" || c["name"] != "a.txt" {
		t.Fatalf("card %v", c)
	}
	r = mustCall(t, s, "workbench_grep", `{"id":"wb","path":"outputs","pattern":"hit","recursive":true}`)
	if m := r["matches"].([]any)[0].(map[string]any); m["section"] != "outputs" || m["relative_path"] != "dir/a.txt" {
		t.Fatalf("match %v", m)
	}
}

// A section's name given as path, without section, is a plain path
// (facts.md section 4, the resolution order): an artifact there, else a
// directory when something lies below it, else NotFound with the path.
// Only a section named as section, without a path, is the section card,
// and that even when the section is empty.
func TestStatSectionNameAsPath(t *testing.T) {
	s := newService(t)
	putFiles(t, s, "w", workbench.SeedFile{Path: "outputs/a.txt", ContentType: "text/plain", Body: []byte("a")})
	for _, in := range []string{`{"id":"w","path":"logs"}`, `{"id":"w","section":null,"path":"logs"}`} {
		r, ok := call(t, s, "workbench_stat", in)
		wantToolError(t, r, ok, "NotFound", false, "path not found: logs", map[string]any{"path": "logs"})
	}
	r := mustCall(t, s, "workbench_stat", `{"id":"w","section":"logs"}`)
	wantMembers(t, r["card"].(map[string]any), map[string]any{"name": "logs", "section": "logs", "relative_path": nil, "kind": "directory"})

	// With something below it, the path is a directory, shown as asked.
	r = mustCall(t, s, "workbench_stat", `{"id":"w","path":"outputs"}`)
	wantMembers(t, r, map[string]any{"section": nil, "relative_path": "outputs", "path": "/agents/test/wb/w/outputs"})
	wantMembers(t, r["card"].(map[string]any), map[string]any{"name": "outputs", "section": nil, "relative_path": "outputs",
		"kind": "directory", "path": "/agents/test/wb/w/outputs", "size_bytes": nil, "generation": nil})
}
