package query

import (
	"context"
	"slices"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_search: metadata predicates, sort, projection and facets over
// the artifacts of one workbench or of the whole root (see query.go for
// rows, fields, predicates and order).
//
// A result holds one page of at most limit (1 to 10, default 10) matches,
// match_count (the matches of every page), the facets of every match, and
// next_cursor. The cursor is bound to the query (scope, predicates, sort,
// fields and facets, but not limit) and to the read version of the first
// page: every page reads the same rows, so a continuation after any commit
// to the shard fails with ReadFenceChanged (retryable) instead of mixing
// versions, and the caller starts over without a cursor.
//
// Every page re-reads the scope's rows (a PathCurrent scan, or the
// SecondaryIndex range of a selective predicate; see query.go) and
// filters, sorts and counts them in memory.

func init() { core.RegisterTool("workbench_search", searchTool) }

const (
	searchDefaultLimit = 10
	searchMaxLimit     = 10
)

// SearchCursor is the continuation of a search: the query digest, the
// read version (root hash) of the first page and the number of matches
// already returned.
type SearchCursor struct {
	V      int    `json:"v"`
	Op     string `json:"op"`
	Query  string `json:"q"`
	Read   string `json:"rv"`
	Offset int    `json:"o"`
}

// searchInput is workbench_search's input.
type searchInput struct {
	queryScopeInput
	Predicates []PredicateInput `json:"predicates"`
	Sort       []sortInput      `json:"sort"`
	Fields     []string         `json:"fields"`
	Facets     []string         `json:"facets"`
	Limit      *uint64          `json:"limit"`
	Cursor     *string          `json:"cursor"`

	preds          []queryPredicate
	keys           []querySort
	fields, facets []string
	limit          uint64 // Limit or searchDefaultLimit
}

// SearchInput is workbench_search's input.
type SearchInput struct {
	// ID is the workbench to search; nil searches every visible one.
	ID *string `json:"id,omitempty"`
	// Section and Path narrow the scope to a section[/path] prefix inside
	// each workbench; "" is none.
	Section string `json:"section,omitempty"`
	Path    string `json:"path,omitempty"`
	// Predicates filter the rows; every one must hold.
	Predicates []Predicate `json:"predicates,omitempty"`
	// Sort orders the matches; rows equal on every key keep workbench id,
	// then path order.
	Sort []SortKey `json:"sort,omitempty"`
	// Fields are projected into each match's Values.
	Fields []string `json:"fields,omitempty"`
	// Facets are counted over every match.
	Facets []string `json:"facets,omitempty"`
	// Limit is the page size, 1 to 10; nil is 10.
	Limit *uint64 `json:"limit,omitempty"`
	// Cursor continues the search a page's NextCursor came from; nil
	// starts at the first match.
	Cursor *string `json:"cursor,omitempty"`
}

// Predicate is one filter of a metadata query: Field compared by Op (eq,
// ne, in, lt, lte, gt, gte, prefix, suffix, contains, exists,
// not_exists) with Value.
type Predicate struct {
	Field string `json:"field"`
	Op    string `json:"op"`
	// Value is the operand: a string, number or bool, a list of them for
	// in, nothing (nil) for exists and not_exists. A null operand, which
	// differs from none, is json.RawMessage("null").
	Value any `json:"value,omitempty"`
}

// SortKey is one sort key of a metadata query.
type SortKey struct {
	Field string `json:"field"`
	// Direction is "asc" or "desc"; "" is asc.
	Direction string `json:"direction,omitempty"`
}

// SearchResult is workbench_search's result: one page of matches.
type SearchResult struct {
	core.Success
	// Path is the scope's presentation path, the logical root when the
	// search spans every workbench.
	Path string `json:"path"`
	// MatchCount is the number of matches of every page.
	MatchCount int           `json:"match_count"`
	Matches    []SearchMatch `json:"matches"`
	// Facets holds one facet per requested facet field, over every match.
	Facets []Facet `json:"facets"`
	// NextCursor continues the search; nil when this page is the last.
	NextCursor *string `json:"next_cursor"`
	// Truncated says that more matches follow (NextCursor is set).
	Truncated bool `json:"truncated"`
}

// SearchMatch is one artifact a search matched.
type SearchMatch struct {
	WorkbenchID string `json:"workbench_id"`
	Path        string `json:"path"` // its presentation path
	// Section is its section, nil outside the five; RelativePath is its
	// path inside the section (the whole path outside them), nil for none.
	Section      *string `json:"section"`
	RelativePath *string `json:"relative_path"`
	// Values maps each projected field to the artifact's value, null
	// when it has none.
	Values map[string]any `json:"values"`
}

// Facet counts the values one field takes over a search's matches.
type Facet struct {
	Field string `json:"field"`
	// Values are the most frequent values, by count descending then value,
	// at most 256 of them.
	Values []FacetValue `json:"values"`
	// DistinctCount is the number of distinct values, counted or not.
	DistinctCount int `json:"distinct_count"`
	// Truncated says that Values holds fewer than DistinctCount.
	Truncated bool `json:"truncated"`
}

// FacetValue is one value of a facet and the number of matches with it.
type FacetValue struct {
	Value any `json:"value"`
	Count int `json:"count"`
}

func (in *searchInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if werr = in.queryScopeInput.Resolve(); werr != nil {
		return werr
	}
	if in.preds, werr = parseQueryPredicates(in.Predicates); werr != nil {
		return werr
	}
	if in.keys, werr = parseQuerySort(in.Sort); werr != nil {
		return werr
	}
	if in.fields, werr = parseQueryFields("fields", in.Fields); werr != nil {
		return werr
	}
	if in.facets, werr = parseQueryFields("facets", in.Facets); werr != nil {
		return werr
	}
	in.limit = searchDefaultLimit
	if in.Limit != nil {
		in.limit = *in.Limit
	}
	if in.limit < 1 || in.limit > searchMaxLimit {
		return core.InvalidArguments("limit must be between 1 and 10")
	}
	return nil
}

func searchTool(ctx context.Context, s *core.Service, in *searchInput) (*SearchResult, *core.Error) {
	scope, preds, keys, fields, facets := in.scope, in.preds, in.keys, in.fields, in.facets
	// The storage side's bounds.
	if werr := checkPredicateBounds(preds); werr != nil {
		return nil, werr
	}
	if werr := queryBound("projected fields", len(fields), queryMaxFields); werr != nil {
		return nil, werr
	}
	if werr := queryBound("sort fields", len(keys), queryMaxSort); werr != nil {
		return nil, werr
	}
	if werr := queryBound("facet fields", len(facets), queryMaxFacets); werr != nil {
		return nil, werr
	}
	for _, ids := range [][]string{fields, facets} {
		if werr := checkQueryFieldIDs(ids); werr != nil {
			return nil, werr
		}
	}
	for _, k := range keys {
		if werr := checkQueryFieldID(k.field); werr != nil {
			return nil, werr
		}
	}

	digest := QueryDigest(map[string]any{
		"op":         "search",
		"root":       s.Root().String(),
		"workbench":  scope.id,
		"prefix":     core.LogicalPath(scope.prefix),
		"predicates": predicatesDigestForm(preds),
		"sort":       sortDigestForm(keys),
		"fields":     fields,
		"facets":     facets,
	})
	var cur SearchCursor
	if in.Cursor != nil {
		if werr := DecodeQueryCursor(s, *in.Cursor, "search", &cur); werr != nil {
			return nil, werr
		}
		if cur.Offset < 0 {
			return nil, core.InvalidState("cursor is malformed")
		}
		if cur.Query != digest {
			return nil, core.InvalidState("search cursor belongs to a different query")
		}
	}

	d, werr := loadQuery(ctx, s, scope, preds)
	if werr != nil {
		return nil, werr
	}
	read := d.sn.RootHash().String()
	if in.Cursor != nil && cur.Read != read {
		return nil, core.ReadFenceChanged("search", "ReadVersion")
	}
	if werr := typeCheckPredicates(preds, d.types); werr != nil {
		return nil, werr
	}
	for _, k := range keys {
		if werr := checkQuerySortable(k.field, d.types); werr != nil {
			return nil, werr
		}
	}
	for _, ids := range [][]string{fields, facets} {
		if werr := checkQueryFieldsKnown(ids, d.types); werr != nil {
			return nil, werr
		}
	}

	matches := filterQueryRows(d.rows, preds)
	sortQueryRows(matches, keys)
	if cur.Offset > len(matches) {
		return nil, core.InvalidState("search cursor is past the end of its result")
	}
	end := min(cur.Offset+int(in.limit), len(matches))
	page := make([]SearchMatch, 0, end-cur.Offset)
	for _, r := range matches[cur.Offset:end] {
		path, section, rel := queryRowLocation(s, r)
		values := make(map[string]any, len(fields))
		for _, f := range fields {
			values[f] = optionalScalarJSON(r.Value(f))
		}
		page = append(page, SearchMatch{
			WorkbenchID:  r.Wb,
			Path:         path,
			Section:      section,
			RelativePath: rel,
			Values:       values,
		})
	}
	var next *string
	if end < len(matches) {
		cur := EncodeQueryCursor(s, SearchCursor{V: QueryCursorVersion, Op: "search", Query: digest, Read: read, Offset: end})
		next = &cur
	}
	facetResults := make([]Facet, len(facets))
	for i, f := range facets {
		facetResults[i] = facetOf(f, matches)
	}
	return &SearchResult{
		Path:       scope.presentation(s),
		MatchCount: len(matches),
		Matches:    page,
		Facets:     facetResults,
		NextCursor: next,
		Truncated:  next != nil,
	}, nil
}

// facetOf counts the values of field over rows (rows without the field
// are not counted; an explicit null is a value): buckets by count
// descending, then value ascending, at most queryMaxBuckets of them.
func facetOf(field string, rows []*core.QueryRow) Facet {
	type bucket struct {
		key   string
		value nokv.IndexScalar
		count int
	}
	index := map[string]int{}
	var buckets []bucket
	for _, r := range rows {
		v, ok := r.Value(field)
		if !ok {
			continue
		}
		k := indexScalarKey(v)
		if i, seen := index[k]; seen {
			buckets[i].count++
			continue
		}
		index[k] = len(buckets)
		buckets = append(buckets, bucket{key: k, value: v, count: 1})
	}
	slices.SortFunc(buckets, func(a, b bucket) int {
		if a.count != b.count {
			return b.count - a.count
		}
		return nokv.CompareIndexScalars(a.value, b.value)
	})
	distinct := len(buckets)
	truncated := distinct > queryMaxBuckets
	if truncated {
		buckets = buckets[:queryMaxBuckets]
	}
	values := make([]FacetValue, len(buckets))
	for i, b := range buckets {
		values[i] = FacetValue{Value: indexScalarJSON(b.value), Count: b.count}
	}
	return Facet{Field: field, Values: values, DistinctCount: distinct, Truncated: truncated}
}
