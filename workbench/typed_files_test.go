package workbench_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// fileStep is one call made both ways: typed on one Service, as JSON on
// its twin.
type fileStep struct {
	name  string
	typed func(context.Context, *workbench.Service) (any, error)
	tool  string
	input string
	// code is the error code the step must fail with; "" for a success.
	code string
}

// runFileSteps runs steps on two fresh Services: each step's typed result
// (or error envelope) printed with MarshalResult must equal Call's bytes
// for the same arguments on the twin, which has seen the same calls.
func runFileSteps(t *testing.T, steps []fileStep) {
	t.Helper()
	ctx := context.Background()
	typed, plain := newService(t), newService(t)
	for _, st := range steps {
		res, err := st.typed(ctx, typed)
		var got []byte
		var merr error
		if err != nil {
			var werr *workbench.Error
			if !errors.As(err, &werr) {
				t.Fatalf("%s: error %v is not a *workbench.Error", st.name, err)
			}
			if werr.Code != st.code {
				t.Fatalf("%s: code %s (%s), want %q", st.name, werr.Code, werr.Message, st.code)
			}
			got, merr = workbench.MarshalResult(werr)
		} else {
			if st.code != "" {
				t.Fatalf("%s: succeeded, want %s", st.name, st.code)
			}
			got, merr = workbench.MarshalResult(res)
		}
		if merr != nil {
			t.Fatalf("%s: %v", st.name, merr)
		}
		want, ok := plain.Call(ctx, st.tool, []byte(st.input))
		if ok != (err == nil) {
			t.Fatalf("%s: typed error %v, call ok %v: %s", st.name, err, ok, want)
		}
		if string(got) != string(want) {
			t.Fatalf("%s:\ntyped %s\ncall  %s", st.name, got, want)
		}
	}
}

// fileText returns a pointer to a payload text.
func fileText(s string) *string { return &s }

// TestPutFileTyped: Service.PutFile answers as workbench_put_file's JSON
// call does: create-only with text, with base64 and a content type, an
// empty body, replace-only, and the errors of each mode and of its input.
func TestPutFileTyped(t *testing.T) {
	put := func(in workbench.PutFileInput) func(context.Context, *workbench.Service) (any, error) {
		return func(ctx context.Context, s *workbench.Service) (any, error) { return s.PutFile(ctx, in) }
	}
	runFileSteps(t, []fileStep{
		{name: "create text", tool: "workbench_put_file",
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "a.txt", Text: fileText("hello")}),
			input: `{"id":"wb","section":"outputs","path":"a.txt","text":"hello"}`},
		{name: "create base64", tool: "workbench_put_file",
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "d/b.bin", Base64: fileText("AP8="), ContentType: fileText("image/x-test")}),
			input: `{"id":"wb","section":"outputs","path":"d/b.bin","base64":"AP8=","content_type":"image/x-test"}`},
		{name: "empty text", tool: "workbench_put_file",
			typed: put(workbench.PutFileInput{ID: "wb", Section: "logs", Path: "empty", Text: fileText("")}),
			input: `{"id":"wb","section":"logs","path":"empty","text":""}`},
		{name: "replace", tool: "workbench_put_file",
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "a.txt", Text: fileText("hello again"), Replace: true}),
			input: `{"id":"wb","section":"outputs","path":"a.txt","text":"hello again","replace":true}`},
		{name: "create existing", tool: "workbench_put_file", code: workbench.CodeAlreadyExists,
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "a.txt", Text: fileText("x")}),
			input: `{"id":"wb","section":"outputs","path":"a.txt","text":"x"}`},
		{name: "create over directory", tool: "workbench_put_file", code: workbench.CodeAlreadyExists,
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "d", Text: fileText("x")}),
			input: `{"id":"wb","section":"outputs","path":"d","text":"x"}`},
		{name: "replace missing", tool: "workbench_put_file", code: workbench.CodeNotFound,
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "nope", Text: fileText("x"), Replace: true}),
			input: `{"id":"wb","section":"outputs","path":"nope","text":"x","replace":true}`},
		{name: "text and base64", tool: "workbench_put_file", code: workbench.CodeInvalidArguments,
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "c", Text: fileText("x"), Base64: fileText("eA==")}),
			input: `{"id":"wb","section":"outputs","path":"c","text":"x","base64":"eA=="}`},
		{name: "no payload", tool: "workbench_put_file", code: workbench.CodeInvalidArguments,
			typed: put(workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "c"}),
			input: `{"id":"wb","section":"outputs","path":"c"}`},
		{name: "bad section", tool: "workbench_put_file", code: workbench.CodeInvalidArguments,
			typed: put(workbench.PutFileInput{ID: "wb", Section: "elsewhere", Path: "c", Text: fileText("x")}),
			input: `{"id":"wb","section":"elsewhere","path":"c","text":"x"}`},
	})
}

// TestTypedRefusesInvalidUTF8: a typed input whose string is not UTF-8,
// which JSON cannot carry, is InvalidArguments naming the member, and
// nothing is written (JSON encoding would have stored U+FFFD instead).
func TestTypedRefusesInvalidUTF8(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	bad := "a\xffb"
	calls := []struct {
		name, member string
		run          func() error
	}{
		{"put text", "text", func() error {
			_, err := s.PutFile(ctx, workbench.PutFileInput{ID: "wb", Section: "outputs", Path: "a.txt", Text: &bad})
			return err
		}},
		{"put path", "path", func() error {
			_, err := s.PutFile(ctx, workbench.PutFileInput{ID: "wb", Section: "outputs", Path: bad, Text: fileText("x")})
			return err
		}},
		{"append text", "text", func() error {
			_, err := s.Append(ctx, workbench.AppendInput{ID: "wb", Section: "outputs", Path: "a.txt", Text: &bad})
			return err
		}},
		{"edit new_string", "new_string", func() error {
			_, err := s.Edit(ctx, workbench.EditInput{ID: "wb", Section: "outputs", Path: "a.txt", OldString: "a", NewString: bad})
			return err
		}},
		{"create id", "id", func() error {
			_, err := s.Create(ctx, workbench.CreateInput{ID: bad})
			return err
		}},
		{"grep's second pattern", "patterns[1]", func() error {
			_, err := s.Grep(ctx, workbench.GrepInput{ID: "wb", Patterns: []string{"ok", bad}, Recursive: true})
			return err
		}},
	}
	for _, c := range calls {
		var werr *workbench.Error
		if err := c.run(); !errors.As(err, &werr) || werr.Code != workbench.CodeInvalidArguments {
			t.Fatalf("%s: %v, want InvalidArguments", c.name, err)
		}
		if want := ": $." + c.member + ": "; !strings.Contains(werr.Message, want) {
			t.Fatalf("%s: message %q does not name %q", c.name, werr.Message, c.member)
		}
	}
	if m, ok := call(t, s, "workbench_stat", `{"id":"wb"}`); ok || m["code"] != workbench.CodeNotFound {
		t.Fatalf("the refused calls wrote something: stat %v", m)
	}
}

// TestAppendTyped: Service.Append answers as workbench_append's JSON call
// does: creating the path, extending it with base64 and with an explicit
// content type, and refusing a directory, a reserved path and a bad
// content type.
func TestAppendTyped(t *testing.T) {
	app := func(in workbench.AppendInput) func(context.Context, *workbench.Service) (any, error) {
		return func(ctx context.Context, s *workbench.Service) (any, error) { return s.Append(ctx, in) }
	}
	runFileSteps(t, []fileStep{
		{name: "create", tool: "workbench_append",
			typed: app(workbench.AppendInput{ID: "wb", Section: "logs", Path: "run/a.log", Text: fileText("one\n")}),
			input: `{"id":"wb","section":"logs","path":"run/a.log","text":"one\n"}`},
		{name: "extend base64", tool: "workbench_append",
			typed: app(workbench.AppendInput{ID: "wb", Section: "logs", Path: "run/a.log", Base64: fileText("AP8=")}),
			input: `{"id":"wb","section":"logs","path":"run/a.log","base64":"AP8="}`},
		{name: "extend with content type", tool: "workbench_append",
			typed: app(workbench.AppendInput{ID: "wb", Section: "logs", Path: "run/a.log", Text: fileText("two\n"), ContentType: fileText("text/x-log")}),
			input: `{"id":"wb","section":"logs","path":"run/a.log","text":"two\n","content_type":"text/x-log"}`},
		{name: "empty delta", tool: "workbench_append",
			typed: app(workbench.AppendInput{ID: "wb", Section: "logs", Path: "run/a.log", Text: fileText("")}),
			input: `{"id":"wb","section":"logs","path":"run/a.log","text":""}`},
		{name: "directory", tool: "workbench_append", code: workbench.CodeNotArtifact,
			typed: app(workbench.AppendInput{ID: "wb", Section: "logs", Path: "run", Text: fileText("x")}),
			input: `{"id":"wb","section":"logs","path":"run","text":"x"}`},
		{name: "reserved", tool: "workbench_append", code: workbench.CodeInvalidArguments,
			typed: app(workbench.AppendInput{ID: "wb", Section: "metadata", Path: "run_manifest.json", Text: fileText("x")}),
			input: `{"id":"wb","section":"metadata","path":"run_manifest.json","text":"x"}`},
		{name: "empty content type", tool: "workbench_append", code: workbench.CodeInvalidState,
			typed: app(workbench.AppendInput{ID: "wb", Section: "logs", Path: "b.log", Text: fileText("x"), ContentType: fileText("")}),
			input: `{"id":"wb","section":"logs","path":"b.log","text":"x","content_type":""}`},
	})
}

// TestEditTyped: Service.Edit answers as workbench_edit's JSON call does:
// one replacement, every occurrence, an edit that changes nothing, and the
// errors of a missing path, no match, several matches and a missing
// workbench.
func TestEditTyped(t *testing.T) {
	edit := func(in workbench.EditInput) func(context.Context, *workbench.Service) (any, error) {
		return func(ctx context.Context, s *workbench.Service) (any, error) { return s.Edit(ctx, in) }
	}
	seed := workbench.PutFileInput{ID: "wb", Section: "scripts", Path: "e.py", Text: fileText("a = 1\nb = 1\nc = 2\n")}
	runFileSteps(t, []fileStep{
		{name: "seed", tool: "workbench_put_file",
			typed: func(ctx context.Context, s *workbench.Service) (any, error) { return s.PutFile(ctx, seed) },
			input: `{"id":"wb","section":"scripts","path":"e.py","text":"a = 1\nb = 1\nc = 2\n"}`},
		{name: "once", tool: "workbench_edit",
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "e.py", OldString: "c = 2", NewString: "c = 3"}),
			input: `{"id":"wb","section":"scripts","path":"e.py","old_string":"c = 2","new_string":"c = 3"}`},
		{name: "all", tool: "workbench_edit",
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "e.py", OldString: "= 1", NewString: "= 10", ReplaceAll: true}),
			input: `{"id":"wb","section":"scripts","path":"e.py","old_string":"= 1","new_string":"= 10","replace_all":true}`},
		{name: "no change", tool: "workbench_edit",
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "e.py", OldString: "a", NewString: "a"}),
			input: `{"id":"wb","section":"scripts","path":"e.py","old_string":"a","new_string":"a"}`},
		{name: "ambiguous", tool: "workbench_edit", code: workbench.CodeAmbiguousEdit,
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "e.py", OldString: "= 10", NewString: "= 1"}),
			input: `{"id":"wb","section":"scripts","path":"e.py","old_string":"= 10","new_string":"= 1"}`},
		{name: "no match", tool: "workbench_edit", code: workbench.CodeNoMatch,
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "e.py", OldString: "zz", NewString: "y"}),
			input: `{"id":"wb","section":"scripts","path":"e.py","old_string":"zz","new_string":"y"}`},
		{name: "missing path", tool: "workbench_edit", code: workbench.CodeNotFound,
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "f.py", OldString: "a", NewString: "b"}),
			input: `{"id":"wb","section":"scripts","path":"f.py","old_string":"a","new_string":"b"}`},
		{name: "missing workbench", tool: "workbench_edit", code: workbench.CodeNotFound,
			typed: edit(workbench.EditInput{ID: "other", Section: "scripts", Path: "e.py", OldString: "a", NewString: "b"}),
			input: `{"id":"other","section":"scripts","path":"e.py","old_string":"a","new_string":"b"}`},
		{name: "empty old_string", tool: "workbench_edit", code: workbench.CodeInvalidArguments,
			typed: edit(workbench.EditInput{ID: "wb", Section: "scripts", Path: "e.py", NewString: "b"}),
			input: `{"id":"wb","section":"scripts","path":"e.py","old_string":"","new_string":"b"}`},
	})
}
