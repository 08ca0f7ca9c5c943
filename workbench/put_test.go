package workbench_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The golden transcript's success results of the four write tools
// (result-transcript.json, "success"): every result of these tools must
// have exactly these members, each with the JSON type shown.
const (
	transcriptCreate = `{"path":"/agents/test/wb/wb-main","sections":["input","scripts","outputs","logs","metadata"],"status":"success","workbench_id":"wb-main"}`

	transcriptPutFile = `{"content_type":"text/plain","digest_uri":"sha256:370dec1c9ba189bbfe2c658485366e2a893b5dda19bc002618fc5445687cc991",
		"generation":1,"path":"/agents/test/wb/wb-main/outputs/report.txt","relative_path":"report.txt","replace":false,
		"section":"outputs","size_bytes":19,"status":"success","workbench_id":"wb-main"}`

	transcriptAppend = `{"appended_bytes":6,"created":false,"digest":"sha256:5eef8098ed6ec0a16249fc7c12422027fc9fd75b16130cc9382cf09102014796",
		"generation":2,"path":"/agents/test/wb/wb-main/outputs/report.txt","relative_path":"report.txt","section":"outputs",
		"size_bytes":25,"status":"success","workbench_id":"wb-main"}`

	transcriptEdit = `{"generation":3,"no_change":false,"path":"/agents/test/wb/wb-main/outputs/report.txt","relative_path":"report.txt",
		"replacements":1,"section":"outputs","size_bytes":25,"status":"success","workbench_id":"wb-main"}`
)

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
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

// checkWriteShape compares a result's member names and JSON types, field
// by field, with a transcript result.
func checkWriteShape(t *testing.T, got map[string]any, transcript string) {
	t.Helper()
	var want map[string]any
	if err := jsonUnmarshal([]byte(transcript), &want); err != nil {
		t.Fatal(err)
	}
	var gk, wk []string
	for k := range got {
		gk = append(gk, k)
	}
	for k := range want {
		wk = append(wk, k)
	}
	slices.Sort(gk)
	slices.Sort(wk)
	if !slices.Equal(gk, wk) {
		t.Fatalf("members %v, want %v", gk, wk)
	}
	for k, w := range want {
		if g, wt := jsonKind(got[k]), jsonKind(w); g != wt {
			t.Errorf("%s: %s (%v), want %s", k, g, got[k], wt)
		}
	}
	if got["status"] != "success" {
		t.Errorf("status %v", got["status"])
	}
}

// wantWriteError checks an error envelope: its code, retryable flag and
// exact details (as JSON); message, when not empty, must match exactly.
func wantWriteError(t *testing.T, got map[string]any, ok bool, code string, retryable bool, details, message string) {
	t.Helper()
	if ok {
		t.Fatalf("success %v, want %s", got, code)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if want := []string{"code", "details", "message", "retryable", "status"}; !slices.Equal(keys, want) {
		t.Errorf("envelope members %v, want %v", keys, want)
	}
	if got["status"] != "error" || got["code"] != code || got["retryable"] != retryable {
		t.Fatalf("error %v, want code %s retryable %t", got, code, retryable)
	}
	var wantDetails map[string]any
	if err := jsonUnmarshal([]byte(details), &wantDetails); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got["details"], wantDetails) {
		t.Errorf("%s details %v, want %v", code, got["details"], wantDetails)
	}
	if message != "" && got["message"] != message {
		t.Errorf("%s message %q, want %q", code, got["message"], message)
	}
}

// num renders a decoded JSON number for comparison.
func num(v any) string {
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprintf("<%T %v>", v, v)
}

func putInput(id, section, path, payload string, extra ...string) string {
	members := []string{fmt.Sprintf(`"id":%q`, id), fmt.Sprintf(`"section":%q`, section), fmt.Sprintf(`"path":%q`, path)}
	if payload != "" {
		members = append(members, payload)
	}
	members = append(members, extra...)
	return "{" + strings.Join(members, ",") + "}"
}

func TestPutFileResult(t *testing.T) {
	s := newService(t)
	body := "Hello world\nsecond\n"
	got := mustCall(t, s, "workbench_put_file", putInput("wb-main", "outputs", "report.txt", fmt.Sprintf(`"text":%q`, body)))
	checkWriteShape(t, got, transcriptPutFile)
	want := map[string]string{
		"content_type":  "text/plain; charset=utf-8",
		"digest_uri":    workbench.DigestURI([]byte(body)),
		"path":          "/agents/test/wb/wb-main/outputs/report.txt",
		"relative_path": "report.txt",
		"section":       "outputs",
		"workbench_id":  "wb-main",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %v, want %v", k, got[k], w)
		}
	}
	if num(got["generation"]) != "1" || num(got["size_bytes"]) != fmt.Sprint(len(body)) || got["replace"] != false {
		t.Errorf("generation %v size_bytes %v replace %v", got["generation"], got["size_bytes"], got["replace"])
	}

	// base64: the default type is octet-stream; a nested path; explicit types win.
	got = mustCall(t, s, "workbench_put_file", putInput("wb-main", "input", "data/raw.bin", `"base64":"AAEC/w=="`))
	checkWriteShape(t, got, transcriptPutFile)
	if got["content_type"] != "application/octet-stream" || num(got["size_bytes"]) != "4" ||
		got["digest_uri"] != workbench.DigestURI([]byte{0, 1, 2, 0xff}) || got["relative_path"] != "data/raw.bin" {
		t.Errorf("base64 result %v", got)
	}
	got = mustCall(t, s, "workbench_put_file", putInput("wb-main", "metadata", "m.json", `"text":"{}"`, `"content_type":"application/json"`))
	if got["content_type"] != "application/json" {
		t.Errorf("content_type %v", got["content_type"])
	}
	if st, ok := workbench.PathForTest(t, s, "wb-main", "metadata/m.json"); !ok || st.Entry.ContentType != "application/json" {
		t.Errorf("stored content type %+v", st.Entry)
	}
	// An empty body is a file too.
	got = mustCall(t, s, "workbench_put_file", putInput("wb-main", "logs", "empty", `"text":""`))
	if num(got["size_bytes"]) != "0" || got["digest_uri"] != workbench.DigestURI(nil) || got["replace"] != false {
		t.Errorf("empty body result %v", got)
	}
	if b := workbench.BodyForTest(t, s, "wb-main", "logs/empty"); len(b) != 0 {
		t.Errorf("empty body reads %q", b)
	}
	if b := workbench.BodyForTest(t, s, "wb-main", "outputs/report.txt"); string(b) != body {
		t.Errorf("body %q", b)
	}
	workbench.CheckReferencesForTest(t, s)
}

func TestPutFileCreateOnlyAndReplaceOnly(t *testing.T) {
	s := newService(t)
	put := func(path, text string, replace bool) (map[string]any, bool) {
		return call(t, s, "workbench_put_file", putInput("wb", "outputs", path, fmt.Sprintf(`"text":%q`, text), fmt.Sprintf(`"replace":%t`, replace)))
	}
	// replace=true never creates.
	got, ok := put("a.txt", "one", true)
	wantWriteError(t, got, ok, "NotFound", false, `{"path":"outputs/a.txt"}`, "")
	if _, found := workbench.PathForTest(t, s, "wb", "outputs/a.txt"); found {
		t.Fatal("replace=true created the path")
	}
	got, ok = put("a.txt", "one", false)
	if !ok || num(got["generation"]) != "1" {
		t.Fatalf("create: %v", got)
	}
	// replace=false never replaces.
	got, ok = put("a.txt", "two", false)
	wantWriteError(t, got, ok, "AlreadyExists", false, `{"code":"AlreadyExists","conflict":null,"current_generation":null,"source":"cairn"}`, "outputs/a.txt already exists")
	got, ok = put("a.txt", "three", true)
	if !ok || num(got["generation"]) != "2" || got["replace"] != true {
		t.Fatalf("replace: %v", got)
	}
	if b := workbench.BodyForTest(t, s, "wb", "outputs/a.txt"); string(b) != "three" {
		t.Fatalf("body %q", b)
	}
	// Directories and files stay apart.
	if _, ok := put("dir/x/leaf", "x", false); !ok {
		t.Fatal("nested create failed")
	}
	got, ok = put("dir", "x", true)
	wantWriteError(t, got, ok, "NotArtifact", false, `{"path":"outputs/dir"}`, "")
	got, ok = put("dir/x", "x", false)
	wantWriteError(t, got, ok, "AlreadyExists", false, `{"code":"AlreadyExists","conflict":null,"current_generation":null,"source":"cairn"}`, "outputs/dir/x already exists as a directory")
	got, ok = put("a.txt/below", "x", false)
	wantWriteError(t, got, ok, "NotDirectory", false, `{"path":"outputs/a.txt"}`, "")
	got, ok = put("dir/x/leaf/deeper/still", "x", false)
	wantWriteError(t, got, ok, "NotDirectory", false, `{"path":"outputs/dir/x/leaf"}`, "")
	// A replace of a path in a workbench that does not exist is NotFound
	// and creates nothing.
	got, ok = call(t, s, "workbench_put_file", putInput("nowhere", "outputs", "a.txt", `"text":"x"`, `"replace":true`))
	wantWriteError(t, got, ok, "NotFound", false, `{"path":"outputs/a.txt"}`, "")
	workbench.CheckReferencesForTest(t, s)
}

func TestPutFileCreatesTheWorkbench(t *testing.T) {
	s := newService(t)
	mustCall(t, s, "workbench_put_file", putInput("fresh", "outputs", "a.txt", `"text":"x"`))
	got := mustCall(t, s, "workbench_create", `{"id":"fresh"}`)
	if got["path"] != "/agents/test/wb/fresh" {
		t.Fatalf("create after put_file: %v", got)
	}
	if b := workbench.BodyForTest(t, s, "fresh", "outputs/a.txt"); string(b) != "x" {
		t.Fatalf("body %q", b)
	}
}

func TestPutFileArgumentErrors(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: 8})
	cases := []struct {
		name, input, code, details, message string
	}{
		{"both payloads", putInput("wb", "outputs", "a", `"text":"x"`, `"base64":"eA=="`), "InvalidArguments", `{}`, "text and base64 are mutually exclusive"},
		{"no payload", putInput("wb", "outputs", "a", ""), "InvalidArguments", `{}`, "exactly one of text or base64 is required"},
		{"too large", putInput("wb", "outputs", "a", `"text":"123456789"`), "PayloadTooLarge", `{"actual_bytes":9,"maximum_bytes":8}`, ""},
		{"too large base64", putInput("wb", "outputs", "a", `"base64":"MTIzNDU2Nzg5"`), "PayloadTooLarge", `{"actual_bytes":9,"maximum_bytes":8}`, ""},
		{"duplicated section", putInput("wb", "outputs", "outputs/a", `"text":"x"`), "InvalidArguments", `{}`, "path is relative to section outputs; remove the duplicated section prefix"},
		{"run manifest", putInput("wb", "metadata", "run_manifest.json", `"text":"x"`), "InvalidArguments", `{}`, ""},
		{"restore manifest", putInput("wb", "metadata", "restore_manifest.json", `"text":"x"`), "InvalidArguments", `{}`, ""},
		{"absolute path", putInput("wb", "outputs", "/a", `"text":"x"`), "InvalidArguments", `{}`, ""},
		{"dot dot", putInput("wb", "outputs", "a/../b", `"text":"x"`), "InvalidArguments", `{}`, ""},
		{"bad id", putInput("w.b", "outputs", "a", `"text":"x"`), "InvalidArguments", `{}`, "workbench id contains invalid byte 0x2e at offset 1"},
		{"empty content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":""`), "InvalidState", `{"source":"cairn"}`, ""},
		{"long content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"`+strings.Repeat("t", 256)+`"`), "InvalidState", `{"source":"cairn"}`, ""},
		{"NUL content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"text/\u0000"`), "InvalidState", `{"source":"cairn"}`, ""},
		{"unknown member", putInput("wb", "outputs", "a", `"text":"x"`, `"mode":1`), "InvalidArguments", `{}`, ""},
		// A content type is served in headers: control bytes would break them.
		{"CRLF content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"text/plain\r\nX-Injected: 1"`), "InvalidArguments", `{}`, "content_type has the control character 0x0d at byte 10"},
		{"LF content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"text/plain\n"`), "InvalidArguments", `{}`, "content_type has the control character 0x0a at byte 10"},
		{"tab content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"text/plain;\tq=1"`), "InvalidArguments", `{}`, "content_type has the control character 0x09 at byte 11"},
		{"ESC content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"\u001btext"`), "InvalidArguments", `{}`, "content_type has the control character 0x1b at byte 0"},
		{"DEL content type", putInput("wb", "outputs", "a", `"text":"x"`, `"content_type":"text/\u007f"`), "InvalidArguments", `{}`, "content_type has the control character 0x7f at byte 5"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := call(t, s, "workbench_put_file", c.input)
			wantWriteError(t, got, ok, c.code, false, c.details, c.message)
		})
	}
	// Nothing of that was written.
	if recs := workbench.ScanForTest(t, s, nokv.FamilyPathCurrent, nil); len(recs) != 0 {
		t.Fatalf("%d paths after refused writes", len(recs))
	}
	// The limits themselves are fine.
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "max", `"text":"12345678"`, `"content_type":"`+strings.Repeat("t", 255)+`"`))
}

func TestPutFileBase64IsStrict(t *testing.T) {
	s := newService(t)
	for _, bad := range []string{"QQ", "QQ=", "QR==", "QQ==\n", "Q\nQ==", "QQ==\r\n", " QQ==", "Q Q==", "-_8=", "QQ==QQ==", "QUJD=", "*"} {
		got, ok := call(t, s, "workbench_put_file", putInput("wb", "outputs", "b", fmt.Sprintf(`"base64":%q`, bad)))
		wantWriteError(t, got, ok, "InvalidArguments", false, `{}`, "")
		if msg, _ := got["message"].(string); !strings.HasPrefix(msg, "base64 payload is invalid: ") {
			t.Errorf("%q: message %q", bad, msg)
		}
	}
	for i, good := range []string{"", "QQ==", "QUI=", "QUJD", "+/8="} {
		want, _ := base64.StdEncoding.DecodeString(good)
		path := fmt.Sprintf("g%d", i)
		got := mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", path, fmt.Sprintf(`"base64":%q`, good)))
		if got["digest_uri"] != workbench.DigestURI(want) {
			t.Errorf("%q: digest %v", good, got["digest_uri"])
		}
	}
}

// TestPutFileCreateRace: writers racing a create-only write of one path,
// in one Service and across replicas over one store: exactly one wins, the
// others get AlreadyExists, and the stored body is the winner's.
func TestPutFileCreateRace(t *testing.T) {
	// Bodies in blocks, so that the losers have staged objects to discard.
	store, services := newReplicas(t, 3, workbench.Options{InlineMax: -1})
	const perService = 5
	type result struct {
		m    map[string]any
		ok   bool
		text string
	}
	results := make(chan result, len(services)*perService)
	var wg sync.WaitGroup
	for i, s := range services {
		for j := range perService {
			wg.Add(1)
			go func() {
				defer wg.Done()
				text := fmt.Sprintf("writer %d/%d", i, j)
				m, ok := call(t, s, "workbench_put_file", putInput("race", "outputs", "one.txt", fmt.Sprintf(`"text":%q`, text)))
				results <- result{m, ok, text}
			}()
		}
	}
	wg.Wait()
	close(results)
	var winners []string
	for r := range results {
		if r.ok {
			winners = append(winners, r.text)
			continue
		}
		wantWriteError(t, r.m, r.ok, "AlreadyExists", false, `{"code":"AlreadyExists","conflict":null,"current_generation":null,"source":"cairn"}`, "")
	}
	if len(winners) != 1 {
		t.Fatalf("%d winners: %v", len(winners), winners)
	}
	for _, s := range services {
		if b := workbench.BodyForTest(t, s, "race", "outputs/one.txt"); string(b) != winners[0] {
			t.Fatalf("body %q, winner %q", b, winners[0])
		}
	}
	workbench.CheckReferencesForTest(t, services[0])
	// The losers' staged objects are gone: only the winner's block and,
	// once the background cleanup ran, no ledger remain.
	for _, s := range services {
		workbench.FlushCleanupForTest(s)
	}
	b, _ := mem.New(store, "")
	if keys := listKeys(t, b, bodies.ArtifactsPrefix(services[0].Store().Layout())); len(keys) != 1 {
		t.Fatalf("blocks left: %v", keys)
	}
	if keys := listKeys(t, b, bodies.StagingPrefix(services[0].Store().Layout())); len(keys) != 0 {
		t.Fatalf("ledgers left: %v", keys)
	}
}

// TestPutFileReplaceRace: replaces racing on one path serialize: each
// winner gets its own generation, each loser a retryable Conflict, and
// the final generation counts the winners.
func TestPutFileReplaceRace(t *testing.T) {
	_, services := newReplicas(t, 2, workbench.Options{})
	mustCall(t, services[0], "workbench_put_file", putInput("race", "outputs", "r.txt", `"text":"base"`))
	var mu sync.Mutex
	gens := map[string]string{}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			text := fmt.Sprintf("replace %d", i)
			m, ok := call(t, services[i%2], "workbench_put_file", putInput("race", "outputs", "r.txt", fmt.Sprintf(`"text":%q`, text), `"replace":true`))
			if !ok {
				if m["code"] != "Conflict" || m["retryable"] != true {
					t.Errorf("replace %d: %v", i, m)
				}
				d, _ := m["details"].(map[string]any)
				if d["conflict"] != "Generation" || d["source"] != "cairn" || jsonKind(d["current_generation"]) != "number" {
					t.Errorf("replace %d: details %v", i, d)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			g := num(m["generation"])
			if prev, dup := gens[g]; dup {
				t.Errorf("generation %s given to %q and %q", g, prev, text)
			}
			gens[g] = text
		}()
	}
	wg.Wait()
	if len(gens) == 0 {
		t.Fatal("no replace won")
	}
	st, _ := workbench.PathForTest(t, services[1], "race", "outputs/r.txt")
	if got, want := st.Entry.Generation, uint64(1+len(gens)); got != want {
		t.Fatalf("generation %d after %d winning replaces, want %d", got, len(gens), want)
	}
	if b := workbench.BodyForTest(t, services[1], "race", "outputs/r.txt"); string(b) != gens[fmt.Sprint(st.Entry.Generation)] {
		t.Fatalf("body %q, last winner %q", b, gens[fmt.Sprint(st.Entry.Generation)])
	}
	workbench.CheckReferencesForTest(t, services[0])
}

// listKeys lists every key under prefix.
func listKeys(t *testing.T, b bucket.Bucket, prefix string) []string {
	t.Helper()
	var keys []string
	opts := bucket.ListOptions{Prefix: prefix}
	for {
		page, err := b.List(t.Context(), opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			keys = append(keys, o.Key)
		}
		if page.NextPageToken == "" {
			return keys
		}
		opts.PageToken = page.NextPageToken
	}
}
