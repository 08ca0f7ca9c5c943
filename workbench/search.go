package workbench

import (
	"context"
	"slices"

	"github.com/cairnstore/cairn/workbench/nokv"
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

func init() { registerTool("workbench_search", (*Service).searchTool) }

const (
	searchDefaultLimit = 10
	searchMaxLimit     = 10
)

// searchCursor is the continuation of a search: the query digest, the
// read version (root hash) of the first page and the number of matches
// already returned.
type searchCursor struct {
	V      int    `json:"v"`
	Op     string `json:"op"`
	Query  string `json:"q"`
	Read   string `json:"rv"`
	Offset int    `json:"o"`
}

// searchInput is workbench_search's input.
type searchInput struct {
	queryScopeInput
	Predicates []predicateInput `json:"predicates"`
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

func (in *searchInput) resolve(*Service) *Error {
	var werr *Error
	if werr = in.queryScopeInput.resolve(); werr != nil {
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
		return InvalidArguments("limit must be between 1 and 10")
	}
	return nil
}

func (s *Service) searchTool(ctx context.Context, in *searchInput) (map[string]any, *Error) {
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

	digest := queryDigest(map[string]any{
		"op":         "search",
		"root":       s.root.String(),
		"workbench":  scope.id,
		"prefix":     LogicalPath(scope.prefix),
		"predicates": predicatesDigestForm(preds),
		"sort":       sortDigestForm(keys),
		"fields":     fields,
		"facets":     facets,
	})
	var cur searchCursor
	if in.Cursor != nil {
		if werr := s.decodeQueryCursor(*in.Cursor, "search", &cur); werr != nil {
			return nil, werr
		}
		if cur.Offset < 0 {
			return nil, InvalidState("cursor is malformed")
		}
		if cur.Query != digest {
			return nil, InvalidState("search cursor belongs to a different query")
		}
	}

	d, werr := s.loadQuery(ctx, scope, preds)
	if werr != nil {
		return nil, werr
	}
	read := d.sn.RootHash().String()
	if in.Cursor != nil && cur.Read != read {
		return nil, ReadFenceChanged("search", "ReadVersion")
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
		return nil, InvalidState("search cursor is past the end of its result")
	}
	end := min(cur.Offset+int(in.limit), len(matches))
	page := make([]any, 0, end-cur.Offset)
	for _, r := range matches[cur.Offset:end] {
		path, section, rel := s.queryRowLocation(r)
		values := make(map[string]any, len(fields))
		for _, f := range fields {
			values[f] = optionalScalarJSON(r.value(f))
		}
		page = append(page, map[string]any{
			"workbench_id":  r.wb,
			"path":          path,
			"section":       section,
			"relative_path": rel,
			"values":        values,
		})
	}
	var next any
	if end < len(matches) {
		next = s.encodeQueryCursor(searchCursor{V: queryCursorVersion, Op: "search", Query: digest, Read: read, Offset: end})
	}
	facetResults := make([]any, len(facets))
	for i, f := range facets {
		facetResults[i] = facetOf(f, matches)
	}
	return map[string]any{
		"path":        scope.presentation(s),
		"match_count": len(matches),
		"matches":     page,
		"facets":      facetResults,
		"next_cursor": next,
		"truncated":   next != nil,
	}, nil
}

// facetOf counts the values of field over rows (rows without the field
// are not counted; an explicit null is a value): buckets by count
// descending, then value ascending, at most queryMaxBuckets of them.
func facetOf(field string, rows []*queryRow) map[string]any {
	type bucket struct {
		key   string
		value nokv.IndexScalar
		count int
	}
	index := map[string]int{}
	var buckets []bucket
	for _, r := range rows {
		v, ok := r.value(field)
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
	values := make([]any, len(buckets))
	for i, b := range buckets {
		values[i] = map[string]any{"value": indexScalarJSON(b.value), "count": b.count}
	}
	return map[string]any{
		"field":          field,
		"values":         values,
		"distinct_count": distinct,
		"truncated":      truncated,
	}
}
