package workbench

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/workbench/internal/core"
	"github.com/cairnstore/cairn/workbench/internal/query"
	"github.com/cairnstore/cairn/workbench/internal/reads"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Fuzz targets of what the Workbench decodes from its callers: tool
// inputs, cursors, and the bodies a structured read parses.

// fuzzService is one Service over a memory bucket, shared by the
// iterations of a fuzz target in one process, holding a few files of
// each structured format. Its body limit is small so that inputs stay
// cheap.
var fuzzService = sync.OnceValues(func() (*Service, error) {
	ctx := context.Background()
	s, err := Open(ctx, mem.NewBucket(), core.Options{AgentID: "fuzz", MaxBytes: 64 << 10, BlockSize: 4 << 10})
	if err != nil {
		return nil, err
	}
	if err := s.Store().Initialize(ctx); err != nil {
		return nil, err
	}
	for _, in := range []string{
		`{"id":"wb","section":"outputs","path":"a.txt","text":"alpha\nbeta\r\ngamma"}`,
		`{"id":"wb","section":"outputs","path":"d/b.json","text":"[1,{\"k\":\"v\"},2.5]"}`,
		`{"id":"wb","section":"outputs","path":"d/c.yaml","text":"a: [1, 2]\nb: &x {c: d}\ne: *x\n"}`,
		`{"id":"wb","section":"input","path":"big.bin","base64":"` + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("0123456789abcdef", 600))) + `"}`,
	} {
		if out, ok := s.Call(ctx, "workbench_put_file", []byte(in)); !ok {
			return nil, fmt.Errorf("seed %s: %s", in, out)
		}
	}
	return s, nil
})

// checkEnvelope checks what Service.Call answered: a JSON object whose
// status agrees with ok, and for a failure the error envelope of the
// contract with a code that is not Internal (an input must never reach a
// state the code calls impossible).
func checkEnvelope(t *testing.T, tool string, in, out []byte, ok bool) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatalf("%s %q: result is not a JSON object: %v\n%s", tool, in, err, out)
	}
	if got, want := m["status"], map[bool]string{true: "success", false: "error"}[ok]; got != want {
		t.Fatalf("%s %q: status %v with ok %v", tool, in, got, ok)
	}
	if ok {
		return
	}
	code, _ := m["code"].(string)
	_, msg := m["message"].(string)
	_, retry := m["retryable"].(bool)
	_, details := m["details"].(map[string]any)
	if code == "" || !msg || !retry || !details || len(m) != 5 {
		t.Fatalf("%s %q: malformed error envelope %s", tool, in, out)
	}
	if code == core.CodeInternal {
		t.Fatalf("%s %q: internal error %s", tool, in, out)
	}
}

// fuzzTools are the tools FuzzCall drives, indexed by the input's first
// byte: reads of every kind, and writes confined to one workbench.
var fuzzTools = []string{
	"workbench_read", "workbench_list", "workbench_grep", "workbench_search",
	"workbench_stat", "workbench_find", "workbench_put_file", "workbench_append",
	"workbench_edit", "workbench_create", "workbench_aggregate", "workbench_catalog",
}

// FuzzCall: any bytes as the input of a tool give a JSON result or the
// error envelope, never a panic and never an Internal error.
func FuzzCall(f *testing.F) {
	for i, in := range []string{
		`{"id":"wb","section":"outputs","path":"a.txt"}`,
		`{"id":"wb","section":"outputs","path":"d"}`,
		`{"id":"wb","section":"outputs","path":"d","pattern":"v","recursive":true}`,
		`{"id":"wb","section":"outputs"}`,
		`{"id":"wb"}`,
		`{"id":"wb","section":"outputs","path":"d"}`,
		`{"id":"wb","section":"outputs","path":"n.txt","text":"x"}`,
		`{"id":"wb","section":"outputs","path":"a.txt","base64":"AP8="}`,
		`{"id":"wb","section":"outputs","path":"a.txt","old_string":"beta","new_string":"b","replace_all":true}`,
		`{"id":"wb2"}`,
		`{"id":"wb","section":"outputs","path":"d/c.yaml","format":"bytes","offset":3,"limit":5}`,
		`{"id":"wb","section":"outputs","path":"d/b.json","cursor":"r:1","limit":1}`,
		`{}`, `[]`, `null`, `{"id":"wb","id":"wb"}`, "{\"id\":\"\\ud800\"}",
	} {
		f.Add(byte(i), []byte(in))
	}
	f.Fuzz(func(t *testing.T, which byte, in []byte) {
		s, err := fuzzService()
		if err != nil {
			t.Fatal(err)
		}
		tool := fuzzTools[int(which)%len(fuzzTools)]
		out, ok := s.Call(context.Background(), tool, in)
		checkEnvelope(t, tool, in, out, ok)
	})
}

// FuzzQueryCursor: a grep or search cursor that passes its check (the
// fuzzer writes the document; the test signs it for the Service's root)
// is either refused with InvalidArguments or InvalidState or continues
// the query; what decodes re-encodes to a token that decodes to the same
// cursor.
func FuzzQueryCursor(f *testing.F) {
	s0 := &Service{core.Detached(nokv.RootID{1, 2, 3}, "")}
	for _, doc := range []string{
		`{"v":1,"op":"grep","b":"x","inc":"","rev":3,"p":["outputs","a.txt"],"l":2}`,
		`{"v":1,"op":"grep","b":"x","inc":"","rev":3,"p":[],"l":-1}`,
		`{"v":1,"op":"search","q":"x","rv":"1","o":5}`,
		`{"v":1,"op":"search","q":"x","rv":"1","o":-5}`,
		`{"v":2,"op":"search"}`,
		`{"v":1,"op":"grep","b":"x","inc":"","rev":3,"p":["outputs","a.txt"],"l":2,"extra":1}`,
	} {
		f.Add(false, []byte(doc))
		f.Add(true, []byte(doc))
	}
	f.Fuzz(func(t *testing.T, search bool, doc []byte) {
		op, tool, in := "grep", "workbench_grep", `{"id":"wb","section":"outputs","pattern":"a","recursive":true,"cursor":%q}`
		var v any = new(reads.GrepCursor)
		if search {
			op, tool, in, v = "search", "workbench_search", `{"id":"wb","cursor":%q}`, new(query.SearchCursor)
		}
		token := base64.RawURLEncoding.EncodeToString(append(doc, query.QueryCursorCheck(s0.Service, doc)...))
		if query.ParseQueryCursor(s0.Service, token, op, v) == query.CursorOK {
			again := reflect.New(reflect.TypeOf(v).Elem()).Interface()
			if fault := query.ParseQueryCursor(s0.Service, query.EncodeQueryCursor(s0.Service, v), op, again); fault != query.CursorOK || !reflect.DeepEqual(again, v) {
				t.Fatalf("cursor %s decodes to %+v, re-encoded to %+v (%v)", doc, v, again, fault)
			}
		}
		s, err := fuzzService()
		if err != nil {
			t.Fatal(err)
		}
		signed := base64.RawURLEncoding.EncodeToString(append(doc, query.QueryCursorCheck(s.Service, doc)...))
		input := []byte(fmt.Sprintf(in, signed))
		out, ok := s.Call(context.Background(), tool, input)
		checkEnvelope(t, tool, input, out, ok)
	})
}

// FuzzListCursor: any token is a list cursor or "malformed", never a
// panic; a body that passes its check either decodes to a cursor whose
// encoding is the token, or is refused.
func FuzzListCursor(f *testing.F) {
	root := nokv.RootID{9, 8, 7}
	good := core.ListCursor{Scope: [16]byte{1}, View: core.CursorSnapshot, Incarnation: nokv.IncarnationID{2}, Fence: 77, Anchor: "report.txt"}.Encode(root)
	raw, _ := base64.RawURLEncoding.DecodeString(good)
	body := raw[:len(raw)-core.ListCursorCheck]
	f.Add(body, good)
	f.Add(body[:len(body)-3], good[:len(good)-1])
	f.Add([]byte{core.ListCursorVersion}, "")
	f.Fuzz(func(t *testing.T, body []byte, token string) {
		if c, werr := core.DecodeListCursor(root, token); werr == nil && c.Encode(root) != token {
			t.Fatalf("token %q decodes to %+v, which encodes as %q", token, c, c.Encode(root))
		}
		signed := base64.RawURLEncoding.EncodeToString(append(body, core.CursorCheck(root, body)...))
		c, werr := core.DecodeListCursor(root, signed)
		if werr != nil {
			if werr.Code != core.CodeInvalidState {
				t.Fatalf("error %v is not InvalidState", werr)
			}
			return
		}
		if got := c.Encode(root); got != signed {
			t.Fatalf("cursor %x decodes to %+v, which encodes as %q", body, c, got)
		}
	})
}

// FuzzReadCursor: a read cursor parses to an offset of its kind or is
// InvalidArguments; the cursor minted for that offset parses back to it.
func FuzzReadCursor(f *testing.F) {
	for _, s := range []string{"r:0", "b:18446744073709551615", "r:+7", "r:007", "b:", "x:1", "r:-1", "r1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, kind := range []string{"r", "b"} {
			n, werr := core.ParseReadCursor(s, kind)
			if werr != nil {
				if werr.Code != core.CodeInvalidArguments {
					t.Fatalf("parseReadCursor(%q, %s): %v", s, kind, werr)
				}
				continue
			}
			if back, werr := core.ParseReadCursor(core.ReadCursor(kind, n), kind); werr != nil || back != n {
				t.Fatalf("cursor %q: %d, re-minted %q parses to %d, %v", s, n, core.ReadCursor(kind, n), back, werr)
			}
		}
	})
}

// FuzzStructuredRecords: any body read as JSON, YAML or text lines gives
// records the result encoder accepts, or StructuredDecodeFailed
// (InvalidUtf8 for text that is not UTF-8); never a panic.
func FuzzStructuredRecords(f *testing.F) {
	for _, c := range []struct {
		format byte
		body   string
	}{
		{0, `[1, 2.5, "x", {"b": 1, "a": [true, null]}, 1e2, 10000000000000000000]`},
		{0, `{"z": 1, "z": 2}`},
		{0, `{"a":`},
		{1, "a: [1, 2]\nb: &x {c: d}\ne: *x\n"},
		{1, "- 0x1f\n- 0o17\n- .inf\n- !!str 4\n- 0123\n- ~\n- 1e400\n"},
		{1, "a: &a [*a]\n"},
		{1, "--- 1\n--- 2\n"},
		{1, "? [a]\n: b\n"},
		{1, "a: !!binary aGk=\n"},
		{2, "line\r\nline\n\r"},
		{2, "caf\xe9"},
	} {
		f.Add(c.format, []byte(c.body))
	}
	paths := []string{"f.json", "f.yaml", "f.txt"}
	f.Fuzz(func(t *testing.T, format byte, body []byte) {
		logical := paths[int(format)%len(paths)]
		kind, records, werr := reads.StructuredRecords(logical, "", body)
		if werr != nil {
			if werr.Code != core.CodeStructuredDecodeFailed && werr.Code != core.CodeInvalidUTF8 {
				t.Fatalf("%s %q: %v", logical, body, werr)
			}
			return
		}
		if kind == "" {
			t.Fatalf("%s %q: no record type", logical, body)
		}
		if _, err := core.MarshalResult(records); err != nil {
			t.Fatalf("%s %q: records do not encode: %v", logical, body, err)
		}
	})
}
