package workbench_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
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
	typedCode(t, err, workbench.CodeInvalidArguments)
	_, err = s.Search(ctx, workbench.SearchInput{ID: qPtr("wb-a"), Fields: []string{"nope"}})
	typedSame(t, s, "workbench_search", `{"id":"wb-a","fields":["nope"]}`, nil, err)
	_, err = s.Search(ctx, workbench.SearchInput{ID: qPtr("wb-b"), Cursor: in.Cursor})
	typedSame(t, s, "workbench_search", `{"id":"wb-b","cursor":"`+*in.Cursor+`"}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidState)
}

func TestAggregateTyped(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	workbench.SeedQueryWorkbench(t, s, "w",
		workbench.QuerySeedFile{Path: "outputs/a", Body: []byte("12345"), Producer: qPtr("p"),
			Index: []nokv.IndexField{qInt("d", -5), qFloat("r", 0.5), qStr("k", "x")}},
		workbench.QuerySeedFile{Path: "outputs/b", Body: []byte("1"),
			Index: []nokv.IndexField{qInt("d", 2), qFloat("r", 1.5), qStr("k", "y")}},
		workbench.QuerySeedFile{Path: "logs/c", Body: []byte("123"), Index: []nokv.IndexField{qStr("k", "x")}},
	)
	// One group of every row: unsigned, signed and float measures, a
	// float sum that is integral (printed 2.0) and an avg.
	res, err := s.Aggregate(ctx, workbench.AggregateInput{ID: qPtr("w"), Measures: []workbench.Measure{
		{Name: "rows", Op: "count"}, {Name: "size", Op: "sum", Field: qPtr("logical_size")},
		{Name: "dsum", Op: "sum", Field: qPtr("d")}, {Name: "rsum", Op: "sum", Field: qPtr("r")},
		{Name: "ravg", Op: "avg", Field: qPtr("r")}, {Name: "kmax", Op: "max", Field: qPtr("k")},
	}})
	out := typedSame(t, s, "workbench_aggregate", `{"id":"w","measures":[{"name":"rows","op":"count"},{"name":"size","op":"sum","field":"logical_size"},{"name":"dsum","op":"sum","field":"d"},{"name":"rsum","op":"sum","field":"r"},{"name":"ravg","op":"avg","field":"r"},{"name":"kmax","op":"max","field":"k"}]}`, res, err)
	const wantOne = `{"group_count":1,"groups":[{"key":{},"values":{"dsum":-3,"kmax":"y","ravg":1.0,"rows":3,"rsum":2.0,"size":9}}],"input_match_count":3,"path":"/agents/test/wb/w","row_count":3,"status":"success","truncated":false}`
	if out != wantOne {
		t.Fatalf("one group:\ngot  %s\nwant %s", out, wantOne)
	}
	if g := res.Groups[0].Values; g["rows"] != uint64(3) || g["dsum"] != int64(-3) || g["rsum"] != 2.0 {
		t.Fatalf("typed values %#v", g)
	}
	// Grouped, filtered, sorted by a measure and cut by limit, over every
	// workbench: a missing value keys as null.
	limit := uint64(1)
	res, err = s.Aggregate(ctx, workbench.AggregateInput{
		Section:    "outputs",
		Predicates: []workbench.Predicate{{Field: "logical_size", Op: "in", Value: []uint64{1, 5}}},
		GroupBy:    []string{"producer"},
		Measures:   []workbench.Measure{{Name: "n", Op: "count"}, {Name: "top", Op: "max", Field: qPtr("r")}},
		Sort:       []workbench.SortKey{{Field: "top", Direction: "desc"}},
		Limit:      &limit,
	})
	out = typedSame(t, s, "workbench_aggregate", `{"section":"outputs","predicates":[{"field":"logical_size","op":"in","value":[1,5]}],"group_by":["producer"],"measures":[{"name":"n","op":"count"},{"name":"top","op":"max","field":"r"}],"sort":[{"field":"top","direction":"desc"}],"limit":1}`, res, err)
	if res.GroupCount != 2 || !res.Truncated || len(res.Groups) != 1 || res.Groups[0].Key["producer"] != nil || res.Groups[0].Values["top"] != 1.5 {
		t.Fatalf("grouped %s", out)
	}
	// Refusals: no measures member (null here, absent is the same
	// InvalidArguments), an empty list (the server's InvalidState), a
	// measure that shadows a group field.
	_, err = s.Aggregate(ctx, workbench.AggregateInput{ID: qPtr("w")})
	typedSame(t, s, "workbench_aggregate", `{"id":"w","measures":null}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidArguments)
	_, err = s.Aggregate(ctx, workbench.AggregateInput{Measures: []workbench.Measure{}})
	typedSame(t, s, "workbench_aggregate", `{"measures":[]}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidState)
	_, err = s.Aggregate(ctx, workbench.AggregateInput{GroupBy: []string{"path"}, Measures: []workbench.Measure{{Name: "path", Op: "count"}}})
	typedSame(t, s, "workbench_aggregate", `{"group_by":["path"],"measures":[{"name":"path","op":"count"}]}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidState)
}

// typedCode checks that err is a *workbench.Error of code.
func typedCode(t *testing.T, err error, code string) {
	t.Helper()
	var werr *workbench.Error
	if !errors.As(err, &werr) || werr.Code != code {
		t.Fatalf("error %v, want %s", err, code)
	}
}

func TestCatalogTyped(t *testing.T) {
	s := newService(t)
	ctx := context.Background()
	workbench.SeedQueryWorkbench(t, s, "w",
		qFile("outputs/a", "x", qUint("run.step", 1), qStr("run.name", "a"), qNull("run.gone")))
	// A workbench's whole catalog: numeric and string groups, a null
	// field that is not sortable.
	res, err := s.Catalog(ctx, workbench.CatalogInput{ID: qPtr("w"), IncludeFacets: true})
	out := typedSame(t, s, "workbench_catalog", `{"id":"w","include_facets":true}`, res, err)
	if res.CatalogEmpty || len(res.Catalog.Filterable) != 2 || slices.Contains(res.Catalog.Sortable, "run.gone") ||
		!slices.Contains(res.Catalog.Facetable, "run.gone") || len(res.Catalog.Facets) != 0 || len(res.ChildCatalogs) != 0 {
		t.Fatalf("catalog %s", out)
	}
	// A prefix over the root scope, and one that leaves nothing.
	res, err = s.Catalog(ctx, workbench.CatalogInput{Section: "outputs", FieldPrefix: "run.s"})
	out = typedSame(t, s, "workbench_catalog", `{"section":"outputs","field_prefix":"run.s"}`, res, err)
	if res.Path != "/agents/test/wb" || !slices.Equal(res.Catalog.Facetable, []string{"run.step"}) {
		t.Fatalf("prefix %s", out)
	}
	res, err = s.Catalog(ctx, workbench.CatalogInput{ID: qPtr("nowhere")})
	out = typedSame(t, s, "workbench_catalog", `{"id":"nowhere"}`, res, err)
	if !res.CatalogEmpty || res.Catalog.Filterable == nil {
		t.Fatalf("missing workbench %s", out)
	}
	// Refusals: a prefix byte a field id cannot hold (the server's) and a
	// bad workbench id (the tool layer's).
	_, err = s.Catalog(ctx, workbench.CatalogInput{FieldPrefix: "p/"})
	typedSame(t, s, "workbench_catalog", `{"field_prefix":"p/"}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidState)
	_, err = s.Catalog(ctx, workbench.CatalogInput{ID: qPtr("")})
	typedSame(t, s, "workbench_catalog", `{"id":""}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidArguments)
}

func TestFindTyped(t *testing.T) {
	s, commits := findRig(t)
	ctx := context.Background()
	// The committed ones with their manifests, one a page: a verified
	// match, then its continuation from the typed cursor.
	yes, one := true, uint64(1)
	in := workbench.FindInput{Committed: &yes, IncludeManifest: true, Limit: &one}
	res, err := s.Find(ctx, in)
	out := typedSame(t, s, "workbench_find", `{"committed":true,"include_manifest":true,"limit":1}`, res, err)
	if len(res.Matches) != 1 || res.NextCursor == nil || !res.Truncated {
		t.Fatalf("first page %s", out)
	}
	m := res.Matches[0]
	if m.WorkbenchID != "wb-a" || !m.CommitIdentityVerified || m.CommitIdentity == nil || *m.CommitIdentity != commits["wb-a"]["commit_identity"] ||
		m.ManifestSummary == nil || !slices.Equal(m.ManifestSummary.ManifestKeys, []string{"model", "task"}) ||
		string(m.ManifestSummary.ManifestTask) != `"ptycho"` || m.Manifest == nil || *m.ManifestGeneration != 1 {
		t.Fatalf("first match %s", out)
	}
	in.Cursor = res.NextCursor
	res, err = s.Find(ctx, in)
	out = typedSame(t, s, "workbench_find", `{"committed":true,"include_manifest":true,"limit":1,"cursor":"`+*in.Cursor+`"}`, res, err)
	if len(res.Matches) != 1 || res.Matches[0].WorkbenchID != "wb-c" || res.NextCursor != nil {
		t.Fatalf("second page %s", out)
	}
	// Without manifests every manifest member is null; an empty pattern
	// (not the same as none) keeps only the workbenches with a manifest.
	res, err = s.Find(ctx, workbench.FindInput{})
	out = typedSame(t, s, "workbench_find", `{}`, res, err)
	if res.MatchCount != 3 || res.Matches[1].Committed || res.Matches[1].ManifestPath != nil || res.Matches[0].ManifestSummary != nil {
		t.Fatalf("all %s", out)
	}
	no := false
	res, err = s.Find(ctx, workbench.FindInput{Committed: &no, ManifestPattern: qPtr("")})
	out = typedSame(t, s, "workbench_find", `{"committed":false,"manifest_pattern":""}`, res, err)
	if res.MatchCount != 0 || res.EntryCount != 3 {
		t.Fatalf("empty pattern %s", out)
	}
	// A stored envelope that does not verify: summary and manifest shown,
	// digests and identity null; one that is not an object: no summary.
	workbench.OverwriteForTest(t, s, "wb-a", "metadata/run_manifest.json", []byte(`{"manifest":{"task":7},"schema":null}`))
	res, err = s.Find(ctx, workbench.FindInput{IncludeManifest: true, Limit: &one})
	out = typedSame(t, s, "workbench_find", `{"include_manifest":true,"limit":1}`, res, err)
	if m := res.Matches[0]; m.CommitIdentityVerified || m.CommitIdentity != nil || m.EnvelopeDigestURI != nil ||
		m.ManifestSummary == nil || string(m.ManifestSummary.ManifestTask) != "7" || m.ManifestSummary.WorkbenchID != nil {
		t.Fatalf("unverified %s", out)
	}
	workbench.OverwriteForTest(t, s, "wb-a", "metadata/run_manifest.json", []byte(`[1]`))
	res, err = s.Find(ctx, workbench.FindInput{ManifestPattern: qPtr("1"), Limit: &one})
	out = typedSame(t, s, "workbench_find", `{"manifest_pattern":"1","limit":1}`, res, err)
	if m := res.Matches[0]; m.ManifestSummary != nil || m.Manifest != nil || m.ManifestSizeBytes == nil || *m.ManifestSizeBytes != 3 {
		t.Fatalf("not an object %s", out)
	}
	// Refusals: a cursor of another committed filter, a limit over 100.
	_, err = s.Find(ctx, workbench.FindInput{Cursor: in.Cursor})
	typedSame(t, s, "workbench_find", `{"cursor":"`+*in.Cursor+`"}`, nil, err)
	typedCode(t, err, workbench.CodeInvalidState)
	over := uint64(101)
	_, err = s.Find(ctx, workbench.FindInput{Limit: &over})
	typedSame(t, s, "workbench_find", `{"limit":101}`, nil, err)
}
