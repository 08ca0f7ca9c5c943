package workbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/workbench"
)

// typedSame checks that a typed method's answer (res, err) prints the
// bytes Call answers for input, result or error envelope alike, and
// returns those bytes.
func typedSame(t *testing.T, s *workbench.Service, tool, input string, res any, err error) string {
	t.Helper()
	want, ok := s.Call(context.Background(), tool, []byte(input))
	var got []byte
	if err != nil {
		var werr *workbench.Error
		if !errors.As(err, &werr) {
			t.Fatalf("%s %s: error %T %v is not a *workbench.Error", tool, input, err, err)
		}
		if ok {
			t.Fatalf("%s %s: typed error %v, Call succeeded: %s", tool, input, err, want)
		}
		got, err = workbench.MarshalResult(werr)
	} else {
		got, err = workbench.MarshalResult(res)
	}
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s %s:\ntyped %s\ncall  %s", tool, input, got, want)
	}
	return string(got)
}

func qRawNull() json.RawMessage { return json.RawMessage("null") }

func TestSearchTyped(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	workbench.SeedQueryWorkbench(t, s, "wb-a",
		qFile("outputs/report.txt", "one\n", qStr("producer.name", "agent"), qFloat("score", 2), qUint("rank", 3)),
		qFile("outputs/second.txt", "two\n", qStr("producer.name", "agent"), qFloat("score", 0.1)),
		qFile("logs/run.log", "three\n", qNull("producer.name")),
		qFile("notes.txt", "four\n"),
	)
	workbench.SeedQueryWorkbench(t, s, "wb-b", qFile("outputs/x.txt", "five\n", qStr("producer.name", "tool")))

	// A first page of a workbench's section, with projections, a sort and
	// facets: a cursor follows.
	in := workbench.SearchInput{
		ID: qPtr("wb-a"), Section: "outputs",
		Predicates: []workbench.Predicate{{Field: "producer.name", Op: "eq", Value: "agent"}},
		Sort:       []workbench.SortKey{{Field: "score", Direction: "desc"}},
		Fields:     []string{"score", "rank", "path"},
		Facets:     []string{"producer.name", "score"},
		Limit:      new(uint64),
	}
	*in.Limit = 1
	res, err := s.Search(ctx, in)
	out := typedSame(t, s, "workbench_search", `{"id":"wb-a","section":"outputs","predicates":[{"field":"producer.name","op":"eq","value":"agent"}],"sort":[{"field":"score","direction":"desc"}],"fields":["score","rank","path"],"facets":["producer.name","score"],"limit":1}`, res, err)
	if res.NextCursor == nil || !res.Truncated || res.MatchCount != 2 || len(res.Matches) != 1 ||
		res.Matches[0].Values["score"] != 2.0 || *res.Matches[0].Section != "outputs" || *res.Matches[0].RelativePath != "report.txt" {
		t.Fatalf("first page %s", out)
	}
	// The next page, from the typed result's cursor: the last one.
	in.Cursor = res.NextCursor
	res, err = s.Search(ctx, in)
	out = typedSame(t, s, "workbench_search", `{"id":"wb-a","section":"outputs","predicates":[{"field":"producer.name","op":"eq","value":"agent"}],"sort":[{"field":"score","direction":"desc"}],"fields":["score","rank","path"],"facets":["producer.name","score"],"limit":1,"cursor":"`+*in.Cursor+`"}`, res, err)
	if res.NextCursor != nil || res.Truncated || res.Matches[0].Values["rank"] != nil {
		t.Fatalf("second page %s", out)
	}
	// Every workbench, an explicit null operand (not the same as none),
	// and a file outside the sections: section and relative path null.
	res, err = s.Search(ctx, workbench.SearchInput{Predicates: []workbench.Predicate{{Field: "producer.name", Op: "ne", Value: qRawNull()}}})
	out = typedSame(t, s, "workbench_search", `{"predicates":[{"field":"producer.name","op":"ne","value":null}]}`, res, err)
	if res.MatchCount != 3 || res.Path != "/agents/test/wb" {
		t.Fatalf("root scope %s", out)
	}
	res, err = s.Search(ctx, workbench.SearchInput{ID: qPtr("wb-a"), Path: "notes.txt"})
	out = typedSame(t, s, "workbench_search", `{"id":"wb-a","path":"notes.txt"}`, res, err)
	if res.MatchCount != 1 || res.Matches[0].Section != nil || *res.Matches[0].RelativePath != "notes.txt" {
		t.Fatalf("outside the sections %s", out)
	}
	// Failures: the same envelopes as Call's. eq without a value is the
	// tool layer's; an unknown field is the server's; a cursor of another
	// query is refused.
	_, err = s.Search(ctx, workbench.SearchInput{Predicates: []workbench.Predicate{{Field: "score", Op: "eq"}}})
	typedSame(t, s, "workbench_search", `{"predicates":[{"field":"score","op":"eq"}]}`, nil, err)
	_, err = s.Search(ctx, workbench.SearchInput{ID: qPtr("wb-a"), Fields: []string{"nope"}})
	typedSame(t, s, "workbench_search", `{"id":"wb-a","fields":["nope"]}`, nil, err)
	_, err = s.Search(ctx, workbench.SearchInput{ID: qPtr("wb-b"), Cursor: in.Cursor})
	typedSame(t, s, "workbench_search", `{"id":"wb-b","cursor":"`+*in.Cursor+`"}`, nil, err)
	var werr *workbench.Error
	if !errors.As(err, &werr) || werr.Code != workbench.CodeInvalidState {
		t.Fatalf("foreign cursor: %v, want InvalidState", err)
	}
}
