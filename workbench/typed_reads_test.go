package workbench_test

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// The typed methods of the read tools (List, Stat, Read, Grep) answer
// exactly as Call does for the same arguments: the result printed by
// MarshalResult, or the error's envelope, is Call's output byte for byte.

// sameAsCall checks a typed method's answer (res, err) against Call's
// answer to input, the same arguments as JSON.
func sameAsCall(t *testing.T, s *workbench.Service, tool, input string, res any, err error) {
	t.Helper()
	want, wantOK := s.Call(context.Background(), tool, []byte(input))
	if (err == nil) != wantOK {
		t.Fatalf("%s %s: typed error %v, Call's success %v: %s", tool, input, err, wantOK, want)
	}
	var got []byte
	var merr error
	if err != nil {
		var werr *workbench.Error
		if !errors.As(err, &werr) {
			t.Fatalf("%s %s: error %v (%T) is not a *workbench.Error", tool, input, err, err)
		}
		got, merr = workbench.MarshalResult(werr)
	} else {
		got, merr = workbench.MarshalResult(res)
	}
	if merr != nil {
		t.Fatalf("%s %s: marshal: %v", tool, input, merr)
	}
	if string(got) != string(want) {
		t.Fatalf("%s %s:\ntyped %s\ncall  %s", tool, input, got, want)
	}
}

// wantCode checks that err is a *workbench.Error of code.
func wantCode(t *testing.T, err error, code string) {
	t.Helper()
	var werr *workbench.Error
	if !errors.As(err, &werr) || werr.Code != code {
		t.Fatalf("error %v, want code %s", err, code)
	}
}

// typedBench writes workbench "wb" with three files, commits it and
// mints snapshot "frozen" of it, whose id it returns.
func typedBench(t *testing.T) (*workbench.Service, uint64) {
	t.Helper()
	s, _ := snapService(t)
	putFiles(t, s, "wb",
		workbench.SeedFile{Path: "outputs/sub/list.json", Body: []byte(`[1,{"a":2.5},"x"]`)},
		workbench.SeedFile{Path: "outputs/sub/notes.txt", Body: []byte("alpha\nBeta\ngamma beta\n")})
	committedBench(t, s, "wb") // outputs/report.txt, logs/run.log
	_, id := mint(t, s, "wb", map[string]any{"name": "frozen"})
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return s, n
}

func TestListTyped(t *testing.T) {
	s, snap := typedBench(t)
	ctx := context.Background()
	const tool = "workbench_list"

	// The workbench itself: the five sections, no cursor.
	r, err := s.List(ctx, workbench.ListInput{ID: "wb"})
	sameAsCall(t, s, tool, `{"id":"wb"}`, r, err)
	if err != nil || r.EntryCount != 5 || len(r.Entries) != 5 || r.NextCursor != nil || r.Section != nil || r.AtSnapshot != nil {
		t.Fatalf("root listing: %+v, %v", r, err)
	}

	// A page of one, then its continuation.
	r, err = s.List(ctx, workbench.ListInput{ID: "wb", Section: new("outputs"), Limit: new(uint64(1))})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","limit":1}`, r, err)
	if err != nil || !r.Truncated || r.NextCursor == nil || r.Entries[0].Kind != "file" || *r.Entries[0].SizeBytes != 25 {
		t.Fatalf("first page: %+v, %v", r, err)
	}
	cursor := *r.NextCursor
	r, err = s.List(ctx, workbench.ListInput{ID: "wb", Section: new("outputs"), Limit: new(uint64(1)), Cursor: &cursor})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","limit":1,"cursor":"`+cursor+`"}`, r, err)
	if err != nil || r.Truncated || r.Entries[0].Name != "sub" || r.Entries[0].SizeBytes != nil {
		t.Fatalf("second page: %+v, %v", r, err)
	}

	// At a snapshot, by id and by name: at_snapshot is echoed.
	r, err = s.List(ctx, workbench.ListInput{ID: "wb", Section: new("outputs"), Path: "sub", AtSnapshot: snap})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"sub","at_snapshot":`+strconv.FormatUint(snap, 10)+`}`, r, err)
	if err != nil || r.AtSnapshot == nil || r.EntryCount != 2 {
		t.Fatalf("snapshot listing: %+v, %v", r, err)
	}
	r, err = s.List(ctx, workbench.ListInput{ID: "wb", AtSnapshot: "frozen"})
	sameAsCall(t, s, tool, `{"id":"wb","at_snapshot":"frozen"}`, r, err)

	// Failures: a file is not a directory; an empty cursor is no list
	// cursor; a limit of 0 is outside the schema.
	_, err = s.List(ctx, workbench.ListInput{ID: "wb", Section: new("outputs"), Path: "report.txt"})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt"}`, nil, err)
	wantCode(t, err, workbench.CodeNotDirectory)
	_, err = s.List(ctx, workbench.ListInput{ID: "wb", Cursor: new("")})
	sameAsCall(t, s, tool, `{"id":"wb","cursor":""}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidState)
	_, err = s.List(ctx, workbench.ListInput{ID: "wb", Limit: new(uint64(0))})
	sameAsCall(t, s, tool, `{"id":"wb","limit":0}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
}

func TestStatTyped(t *testing.T) {
	s, _ := typedBench(t)
	ctx := context.Background()
	const tool = "workbench_stat"

	// A file: the artifact members are set.
	r, err := s.Stat(ctx, workbench.StatInput{ID: "wb", Section: new("outputs"), Path: "report.txt"})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt"}`, r, err)
	c := r.Card
	if err != nil || c.Kind != "file" || c.Generation == nil || *c.SizeBytes != 25 || c.DigestURI == nil || c.Producer != nil || c.EntryCount != nil {
		t.Fatalf("file card: %+v, %v", c, err)
	}

	// The workbench, a section and a directory: every artifact member nil.
	for _, tc := range []struct {
		in   workbench.StatInput
		json string
	}{
		{workbench.StatInput{ID: "wb"}, `{"id":"wb"}`},
		{workbench.StatInput{ID: "wb", Section: new("metadata")}, `{"id":"wb","section":"metadata"}`},
		{workbench.StatInput{ID: "wb", Path: "outputs/sub"}, `{"id":"wb","path":"outputs/sub"}`},
		{workbench.StatInput{ID: "wb", Section: new("outputs"), Path: "sub", AtSnapshot: "frozen"}, `{"id":"wb","section":"outputs","path":"sub","at_snapshot":"frozen"}`},
	} {
		r, err := s.Stat(ctx, tc.in)
		sameAsCall(t, s, tool, tc.json, r, err)
		if c := r.Card; err != nil || c.Kind != "directory" || c.SizeBytes != nil || c.Generation != nil || c.ContentType != nil {
			t.Fatalf("%s: card %+v, %v", tc.json, c, err)
		}
	}

	// Failures: nothing there; a bad workbench id; an empty snapshot name.
	_, err = s.Stat(ctx, workbench.StatInput{ID: "wb", Section: new("outputs"), Path: "missing"})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"missing"}`, nil, err)
	wantCode(t, err, workbench.CodeNotFound)
	_, err = s.Stat(ctx, workbench.StatInput{ID: "no/slash"})
	sameAsCall(t, s, tool, `{"id":"no/slash"}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
	_, err = s.Stat(ctx, workbench.StatInput{ID: "wb", AtSnapshot: ""})
	sameAsCall(t, s, tool, `{"id":"wb","at_snapshot":""}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
}

func TestReadTyped(t *testing.T) {
	s, snap := typedBench(t)
	ctx := context.Background()
	const tool = "workbench_read"

	// Text lines, a page of two, then the rest.
	r, err := s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "report.txt", Limit: new(uint64(2))})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt","limit":2}`, r, err)
	if err != nil || r.ReadPage == nil || *r.RecordType != "text_lines" || *r.RecordCount != 3 || len(r.Items) != 2 || r.Bytes != nil || !r.Truncated {
		t.Fatalf("first page: %+v, %v", r, err)
	}
	cursor := *r.NextCursor
	r, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "report.txt", Cursor: &cursor})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt","cursor":"`+cursor+`"}`, r, err)
	if err != nil || *r.Cursor != cursor || len(r.Items) != 1 || r.Items[0].Index != 2 || r.Items[0].Value != "third" || r.NextCursor != nil {
		t.Fatalf("second page: %+v, %v", r, err)
	}

	// A JSON array at a snapshot: a record per element, numbers as given.
	r, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "sub/list.json", AtSnapshot: snap})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"sub/list.json","at_snapshot":`+strconv.FormatUint(snap, 10)+`}`, r, err)
	if err != nil || *r.RecordType != "json_array" || len(r.Items) != 3 {
		t.Fatalf("json read: %+v, %v", r, err)
	}

	// A byte range.
	r, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "report.txt", Format: new("bytes"), Offset: 6, Limit: new(uint64(5))})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt","format":"bytes","offset":6,"limit":5}`, r, err)
	if err != nil || r.Bytes == nil || *r.BytesEncoding != "base64" || r.RecordType != nil || r.Items == nil || *r.NextCursor != "b:11" {
		t.Fatalf("bytes read: %+v, %v", r, err)
	}
	if b, _ := base64.StdEncoding.DecodeString(*r.Bytes); string(b) != "world" {
		t.Fatalf("bytes read: %q", b)
	}

	// if_none_match: the file's generation is not modified and carries no
	// page; another generation reads as usual.
	gen := r.Generation
	r, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "report.txt", IfNoneMatch: &gen})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt","if_none_match":`+strconv.FormatUint(gen, 10)+`}`, r, err)
	if err != nil || !r.NotModified || r.ReadPage != nil || r.Generation != gen {
		t.Fatalf("not modified: %+v, %v", r, err)
	}
	other := gen + 1
	r, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "report.txt", IfNoneMatch: &other})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt","if_none_match":`+strconv.FormatUint(other, 10)+`}`, r, err)
	if err != nil || r.NotModified || r.ReadPage == nil {
		t.Fatalf("modified: %+v, %v", r, err)
	}

	// Failures: a bytes cursor on a structured read; a missing file; no path.
	_, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "report.txt", Cursor: new("b:1")})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"report.txt","cursor":"b:1"}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
	_, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs", Path: "sub"})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":"sub"}`, nil, err)
	wantCode(t, err, workbench.CodeNotFound)
	_, err = s.Read(ctx, workbench.ReadInput{ID: "wb", Section: "outputs"})
	sameAsCall(t, s, tool, `{"id":"wb","section":"outputs","path":""}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
}

func TestGrepTyped(t *testing.T) {
	s, _ := typedBench(t)
	ctx := context.Background()
	const tool = "workbench_grep"

	// The whole workbench, one match a page.
	r, err := s.Grep(ctx, workbench.GrepInput{ID: "wb", Pattern: "BETA", Recursive: true, Limit: new(uint64(1))})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"BETA","recursive":true,"limit":1}`, r, err)
	if err != nil || len(r.Matches) != 1 || r.Matches[0].LineNumber != 2 || r.Matches[0].Snippet != "Beta" || !r.Truncated || r.Section != nil {
		t.Fatalf("first page: %+v, %v", r, err)
	}
	cursor := *r.NextCursor
	r, err = s.Grep(ctx, workbench.GrepInput{ID: "wb", Pattern: "BETA", Recursive: true, Limit: new(uint64(1)), Cursor: &cursor})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"BETA","recursive":true,"limit":1,"cursor":"`+cursor+`"}`, r, err)
	if err != nil || len(r.Matches) != 1 || r.Matches[0].LineNumber != 3 || r.NextCursor != nil {
		t.Fatalf("second page: %+v, %v", r, err)
	}

	// A section, not recursive, two patterns and a glob: report.txt only.
	r, err = s.Grep(ctx, workbench.GrepInput{ID: "wb", Pattern: "hello", Patterns: []string{"THIRD"}, Section: new("outputs"), Glob: new("*.txt")})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"hello","patterns":["THIRD"],"recursive":false,"section":"outputs","glob":"*.txt"}`, r, err)
	if err != nil || len(r.Matches) != 2 || r.FilesScanned != 1 || *r.Matches[0].Section != "outputs" || *r.Matches[0].RelativePath != "report.txt" {
		t.Fatalf("section grep: %+v, %v", r, err)
	}

	// Failures: a missing scope (details.path); no pattern at all; a glob
	// with a '/'; a cursor of another pattern set.
	_, err = s.Grep(ctx, workbench.GrepInput{ID: "wb", Pattern: "x", Recursive: true, Section: new("outputs"), Path: "nowhere"})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"x","recursive":true,"section":"outputs","path":"nowhere"}`, nil, err)
	wantCode(t, err, workbench.CodeNotFound)
	_, err = s.Grep(ctx, workbench.GrepInput{ID: "wb", Recursive: true})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"","recursive":true}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
	_, err = s.Grep(ctx, workbench.GrepInput{ID: "wb", Pattern: "x", Glob: new("a/b")})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"x","recursive":false,"glob":"a/b"}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
	_, err = s.Grep(ctx, workbench.GrepInput{ID: "wb", Pattern: "gamma", Recursive: true, Cursor: &cursor})
	sameAsCall(t, s, tool, `{"id":"wb","pattern":"gamma","recursive":true,"cursor":"`+cursor+`"}`, nil, err)
	wantCode(t, err, workbench.CodeInvalidArguments)
}
