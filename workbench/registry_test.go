package workbench_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
)

// The tools this test binary registers beyond the contract: test_echo
// answers what it was given, and test_alpha, registered after it, lists
// before it (registered tools list by name).
var registeredForTest = []string{"test_alpha", "test_echo"}

const echoSchema = `{"type":"object","additionalProperties":false,"required":["text"],
	"properties":{"text":{"type":"string","maxLength":8},"n":{"type":"integer","minimum":0}}}`

func init() {
	workbench.Register(workbench.ToolSpec{
		Name:        "test_echo",
		Description: "Echo the text it is given, with the agent root of the Service that ran it.",
		InputSchema: json.RawMessage(echoSchema),
		Annotations: workbench.Annotations{ReadOnly: true, Idempotent: true},
		Run:         runEcho,
	})
	workbench.Register(workbench.ToolSpec{
		Name:        "test_alpha",
		Description: "Count one, whatever the input.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: workbench.Annotations{Destructive: true},
		Run: func(context.Context, *workbench.Service, json.RawMessage) (any, error) {
			return struct {
				Count int `json:"count"`
			}{1}, nil
		},
	})
}

func runEcho(ctx context.Context, s *workbench.Service, input json.RawMessage) (any, error) {
	var in struct {
		Text string
		N    *int
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	switch in.Text {
	case "notfound":
		return nil, workbench.NotFound("echo/" + in.Text)
	case "plain":
		return nil, errors.New("boom")
	case "cancel":
		return nil, fmt.Errorf("echo: %w", context.Canceled)
	case "scalar":
		return 42, nil
	case "nilerr":
		var werr *workbench.Error
		return map[string]any{"echo": in.Text}, werr
	}
	return map[string]any{
		"echo":   in.Text,
		"n":      in.N,
		"input":  string(input),
		"root":   s.LogicalRoot(),
		"status": "overridden",
	}, nil
}

// TestRegisteredToolCall: a registered tool runs through Service.Call as
// the contract's do: its input checked by its own schema first, with the
// validator's messages, its result printed by MarshalResult with status
// success, its *Error the envelope and other errors mapped by FromError.
func TestRegisteredToolCall(t *testing.T) {
	s := newService(t)
	out, ok := s.Call(context.Background(), "test_echo", []byte(` { "text" : "hi", "n" : 3 } `))
	want := `{"echo":"hi","input":"{\"n\":3,\"text\":\"hi\"}","n":3,"root":"/agents/test/wb","status":"success"}`
	if !ok || string(out) != want {
		t.Fatalf("test_echo = %v %s, want %s", ok, out, want)
	}
	if out, ok := s.Call(context.Background(), "test_alpha", []byte(`{"anything":[1,2]}`)); !ok || string(out) != `{"count":1,"status":"success"}` {
		t.Fatalf("test_alpha = %v %s", ok, out)
	}
	if out, ok := s.Call(context.Background(), "test_echo", []byte(`{"text":"nilerr"}`)); !ok || string(out) != `{"echo":"nilerr","status":"success"}` {
		t.Fatalf("a nil *Error as error = %v %s", ok, out)
	}

	for _, c := range []struct{ input, code, message string }{
		{`{"text":"123456789"}`, "InvalidArguments", "test_echo: $.text: string is longer than maxLength"},
		{`{}`, "InvalidArguments", "test_echo: $: missing required field text"},
		{`{"text":"a","x":1}`, "InvalidArguments", "test_echo: $: unknown field x"},
		{`{"text":"a","n":1.5}`, "InvalidArguments", "test_echo: $.n: has the wrong JSON type"},
		{`{"text":"a","n":-1}`, "InvalidArguments", "test_echo: $.n: number is below minimum"},
		{`[`, "InvalidArguments", "test_echo: $: arguments are not valid JSON"},
		{`{"text":"notfound"}`, "NotFound", "path not found: echo/notfound"},
		{`{"text":"plain"}`, "Internal", "internal error: boom"},
		{`{"text":"cancel"}`, "Cancelled", "the request was cancelled"},
		{`{"text":"scalar"}`, "Internal", "test_echo: the result is not a JSON object"},
	} {
		r, ok := call(t, s, "test_echo", c.input)
		if ok || r["status"] != "error" || r["code"] != c.code || r["message"] != c.message {
			t.Errorf("test_echo %s = %v %v, want %s %q", c.input, ok, r, c.code, c.message)
		}
	}
	if _, werr := workbench.ValidateInput("test_echo", []byte(`{"text":"a","x":1}`)); werr == nil || werr.Message != "test_echo: $: unknown field x" {
		t.Fatalf("ValidateInput = %v", werr)
	}
	if got, werr := workbench.ValidateInput("test_echo", []byte(`{"text":"a"}`)); werr != nil || got["text"] != "a" {
		t.Fatalf("ValidateInput = %v %v", got, werr)
	}
}

// TestRegisteredToolInputLimit: a registered tool's input is bounded
// before it is parsed, as a contract tool's, by MaxInputBytes.
func TestRegisteredToolInputLimit(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{MaxBytes: 1})
	limit := workbench.MaxInputBytes("test_echo", 1)
	r, ok := call(t, s, "test_echo", `{"text":"a"}`+strings.Repeat(" ", int(limit)))
	details, _ := r["details"].(map[string]any)
	if ok || r["code"] != "PayloadTooLarge" || fmt.Sprint(details["maximum_bytes"]) != fmt.Sprint(limit) {
		t.Fatalf("an input over the limit = %v %v", ok, r)
	}
}

func TestRegisteredToolInfo(t *testing.T) {
	info, ok := workbench.Tool("test_echo")
	if !ok {
		t.Fatal("test_echo is not registered")
	}
	schema, err := json.Marshal(json.RawMessage(echoSchema)) // compact, as encoding/json compacts a raw message
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(schema, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(info.InputSchema, &b); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(a) != fmt.Sprint(b) || info.Description == "" || info.Annotations != (workbench.Annotations{ReadOnly: true, Idempotent: true}) {
		t.Fatalf("Tool(test_echo) = %+v", info)
	}
	// The schema is published canonical: keys sorted, compact.
	if got, want := string(info.InputSchema), `{"additionalProperties":false,"properties":{"n":{"minimum":0,"type":"integer"},"text":{"maxLength":8,"type":"string"}},"required":["text"],"type":"object"}`; got != want {
		t.Fatalf("schema %s, want %s", got, want)
	}
	info.InputSchema[0] = 'x'
	if again, _ := workbench.InputSchema("test_echo"); again[0] != '{' {
		t.Fatal("Tool returned shared storage")
	}
	// Without a result schema of its own, the result is described as an
	// object whose status is "success".
	if got, want := string(info.ResultSchema), `{"properties":{"status":{"const":"success","type":"string"}},"required":["status"],"type":"object"}`; got != want {
		t.Fatalf("result schema %s, want %s", got, want)
	}
	if _, ok := workbench.Tool("test_nonesuch"); ok {
		t.Fatal("Tool of an unregistered name exists")
	}
	r, ok := call(t, newService(t), "test_nonesuch", `{}`)
	if ok || r["code"] != "UnknownTool" {
		t.Fatalf("an unregistered name = %v", r)
	}
}

// TestRegisterRefuses: a spec the registry cannot serve panics with the
// reason and registers nothing; so does a name already registered.
func TestRegisterRefuses(t *testing.T) {
	ok := workbench.ToolSpec{
		Name:        "test_refused",
		Description: "A tool that is never registered.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Run:         func(context.Context, *workbench.Service, json.RawMessage) (any, error) { return nil, nil },
	}
	with := func(f func(*workbench.ToolSpec)) workbench.ToolSpec {
		s := ok
		f(&s)
		return s
	}
	before := workbench.Tools()
	for _, c := range []struct {
		spec workbench.ToolSpec
		want string
	}{
		{with(func(s *workbench.ToolSpec) { s.Name = "" }), "the name must be"},
		{with(func(s *workbench.ToolSpec) { s.Name = "Test_upper" }), "the name must be"},
		{with(func(s *workbench.ToolSpec) { s.Name = "test-dash" }), "the name must be"},
		{with(func(s *workbench.ToolSpec) { s.Name = "1test" }), "the name must be"},
		{with(func(s *workbench.ToolSpec) { s.Name = "t" + strings.Repeat("x", 64) }), "the name must be"},
		{with(func(s *workbench.ToolSpec) { s.Description = "" }), "one line"},
		{with(func(s *workbench.ToolSpec) { s.Description = "two\nlines" }), "one line"},
		{with(func(s *workbench.ToolSpec) { s.Run = nil }), "Run is nil"},
		{with(func(s *workbench.ToolSpec) { s.InputSchema = nil }), "not JSON"},
		{with(func(s *workbench.ToolSpec) { s.InputSchema = json.RawMessage(`{"type":`) }), "not JSON"},
		{with(func(s *workbench.ToolSpec) { s.InputSchema = json.RawMessage(`[]`) }), `"type":"object"`},
		{with(func(s *workbench.ToolSpec) { s.InputSchema = json.RawMessage(`{}`) }), `"type":"object"`},
		{with(func(s *workbench.ToolSpec) { s.InputSchema = json.RawMessage(`{"type":"string"}`) }), `"type":"object"`},
		{with(func(s *workbench.ToolSpec) { s.InputSchema = json.RawMessage(`{"type":["object"]}`) }), `"type":"object"`},
		{with(func(s *workbench.ToolSpec) {
			s.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","format":"uri"}}}`)
		}), `unsupported keyword "format"`},
		{with(func(s *workbench.ToolSpec) {
			s.InputSchema = json.RawMessage(`{"type":"object","properties":{"a":{"pattern":"^a$"}}}`)
		}), "unsupported pattern"},
		{with(func(s *workbench.ToolSpec) {
			s.InputSchema = json.RawMessage(`{"type":"object","additionalProperties":true}`)
		}), "only additionalProperties false"},
		{with(func(s *workbench.ToolSpec) { s.ResultSchema = json.RawMessage(`{"type":`) }), "result schema: not JSON"},
		{with(func(s *workbench.ToolSpec) { s.ResultSchema = json.RawMessage(`{"type":"array"}`) }), `result schema: not an object with "type":"object"`},
		{with(func(s *workbench.ToolSpec) { s.Name = "workbench_list" }), "a tool of that name is registered"},
		{with(func(s *workbench.ToolSpec) { s.Name = "test_echo" }), "a tool of that name is registered"},
	} {
		msg := registerPanic(c.spec)
		if !strings.HasPrefix(msg, fmt.Sprintf("workbench: register tool %q: ", c.spec.Name)) || !strings.Contains(msg, c.want) {
			t.Errorf("Register(%q, %s) panicked %q, want %q", c.spec.Name, c.spec.InputSchema, msg, c.want)
		}
	}
	if after := workbench.Tools(); !slices.Equal(after, before) {
		t.Fatalf("refused registrations changed the tools: %v, then %v", before, after)
	}
	if info, _ := workbench.Tool("workbench_list"); info.Annotations != (workbench.Annotations{ReadOnly: true, Idempotent: true}) {
		t.Fatalf("a refused duplicate changed workbench_list: %+v", info)
	}
}

// registerPanic registers spec and returns what it panicked with, "" if
// it did not.
func registerPanic(spec workbench.ToolSpec) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = fmt.Sprint(r)
		}
	}()
	workbench.Register(spec)
	return ""
}

// TestContractToolAnnotations: the read-only tools are exactly the ones
// that only look (list, stat, read, grep, search, aggregate, catalog,
// find, snapshot_list), and docs/workbench.md's annotation table says
// what the registry holds, for each of the 18 in the contract's order.
// Every tool has a one-line description.
func TestContractToolAnnotations(t *testing.T) {
	readers := []string{"workbench_list", "workbench_stat", "workbench_read", "workbench_grep",
		"workbench_search", "workbench_aggregate", "workbench_catalog", "workbench_find", "workbench_snapshot_list"}
	var contract []string
	for _, name := range workbench.Tools() {
		if slices.Contains(registeredForTest, name) {
			continue
		}
		contract = append(contract, name)
		info, _ := workbench.Tool(name)
		if info.Annotations.ReadOnly != slices.Contains(readers, name) {
			t.Errorf("%s: ReadOnly %v", name, info.Annotations.ReadOnly)
		}
		if info.Annotations.ReadOnly && (info.Annotations.Destructive || !info.Annotations.Idempotent) {
			t.Errorf("%s: a read-only tool is %+v", name, info.Annotations)
		}
		if info.Description == "" || strings.ContainsAny(info.Description, "\r\n") {
			t.Errorf("%s: description %q", name, info.Description)
		}
	}
	if len(contract) != 18 {
		t.Fatalf("%d contract tools", len(contract))
	}

	rows := docsTable(t, "../docs/workbench.md", "### Registry and annotations")
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "no"
	}
	var names []string
	for _, row := range rows {
		if len(row) < 4 {
			t.Fatalf("docs row %v", row)
		}
		name := strings.Trim(row[0], "`")
		names = append(names, name)
		info, ok := workbench.Tool(name)
		if !ok {
			t.Errorf("docs name %s, not a tool", name)
			continue
		}
		a := info.Annotations
		if got, want := row[1:4], []string{yes(a.ReadOnly), yes(a.Destructive), yes(a.Idempotent)}; !slices.Equal(got, want) {
			t.Errorf("docs say %s is read-only, destructive, idempotent %v; the registry %v", name, got, want)
		}
	}
	if !slices.Equal(names, contract) {
		t.Fatalf("docs table lists %v, want %v", names, contract)
	}
}

// docsTable returns the cells of the first Markdown table under heading
// in file, header and separator rows left out.
func docsTable(t *testing.T, file, heading string) [][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	in, table := false, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case !in:
			in = line == heading || strings.HasPrefix(line, heading+" ")
		case strings.HasPrefix(line, "|"):
			table = true
			var cells []string
			for _, c := range strings.Split(strings.Trim(line, "|"), "|") {
				cells = append(cells, strings.TrimSpace(c))
			}
			rows = append(rows, cells)
		case table || strings.HasPrefix(line, "#"):
			if len(rows) < 2 {
				t.Fatalf("%s: no table under %q", file, heading)
			}
			return rows[2:]
		}
	}
	t.Fatalf("%s: no table under %q", file, heading)
	return nil
}
