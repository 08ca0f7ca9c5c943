package query

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_catalog: the field ids a query scope offers and what each
// supports (see query.go for rows and field types).
//
// Every field's operators are eq, ne, in, lt, lte, gt, gte, then prefix,
// suffix and contains for string and bytes fields, then exists and
// not_exists. filterable groups the fields that share one operator list,
// groups ordered by their operator lists compared element by element (so
// the nine-operator group of numeric fields precedes the twelve-operator
// group of string fields); fields inside a group, and in sortable and
// facetable, are in field id order. A field is sortable unless its type is
// null; every field is facetable. catalog.facets and child_catalogs are
// always empty, include_facets notwithstanding. field_prefix keeps the
// field ids that start with it (null and "" keep every field); the
// server's rules for a field id apply to it, so one longer than 128 bytes
// or holding a byte other than an ASCII letter or digit, '_', '.' or '-'
// ("a b", "p/") is the server's InvalidState; catalog_empty says no field
// is left. A
// workbench that does not exist is an empty scope whose catalog has no
// fields (catalog_empty true), not NotFound. The
// catalog is computed from one read version in one pass, so no cursor is
// involved.

func init() { core.RegisterTool("workbench_catalog", catalogTool) }

// catalogOperators returns the operators of a field of type t.
func catalogOperators(t nokv.IndexScalarKind) []string {
	ops := []string{"eq", "ne", "in", "lt", "lte", "gt", "gte"}
	if isTextScalarKind(t) {
		ops = append(ops, "prefix", "suffix", "contains")
	}
	return append(ops, "exists", "not_exists")
}

// fieldIDRune reports whether r may appear in a field id as the
// reference's server checks one: an ASCII letter or digit, '_', '.' or
// '-'.
func fieldIDRune(r rune) bool {
	return r < utf8.RuneSelf && (r == '_' || r == '.' || r == '-' ||
		'0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
}

// catalogInput is workbench_catalog's input.
type catalogInput struct {
	queryScopeInput
	FieldPrefix   string `json:"field_prefix"`
	IncludeFacets bool   `json:"include_facets"` // no effect: facets are always empty
}

func (in *catalogInput) Resolve(*core.Service) *core.Error { return in.queryScopeInput.Resolve() }

// CatalogInput is workbench_catalog's input.
type CatalogInput struct {
	// ID is the workbench whose fields are listed; nil is every visible
	// one.
	ID *string `json:"id,omitempty"`
	// Section and Path narrow the scope to a section[/path] prefix inside
	// each workbench; "" is none.
	Section string `json:"section,omitempty"`
	Path    string `json:"path,omitempty"`
	// FieldPrefix keeps the field ids that start with it; "" keeps all.
	FieldPrefix string `json:"field_prefix,omitempty"`
	// IncludeFacets has no effect: the catalog's facets are always empty.
	IncludeFacets bool `json:"include_facets,omitempty"`
}

// CatalogResult is workbench_catalog's result.
type CatalogResult struct {
	core.Success
	// Path is the scope's presentation path, the logical root when the
	// catalog spans every workbench.
	Path string `json:"path"`
	// CatalogEmpty says that no field is listed.
	CatalogEmpty bool    `json:"catalog_empty"`
	Catalog      Catalog `json:"catalog"`
	// ChildCatalogs is always empty.
	ChildCatalogs []any `json:"child_catalogs"`
}

// Catalog is the fields of a query scope and what each supports, every
// list in field id order.
type Catalog struct {
	// Filterable groups the fields by the predicate operators they take.
	Filterable []CatalogFilter `json:"filterable"`
	// Sortable holds every field whose type is not null.
	Sortable []string `json:"sortable"`
	// Facetable holds every field.
	Facetable []string `json:"facetable"`
	// Facets is always empty.
	Facets []any `json:"facets"`
}

// CatalogFilter is the fields that take one list of operators.
type CatalogFilter struct {
	Operators []string `json:"operators"`
	Fields    []string `json:"fields"`
}

func catalogTool(ctx context.Context, s *core.Service, in *catalogInput) (*CatalogResult, *core.Error) {
	scope, fieldPrefix := in.scope, in.FieldPrefix
	// The server's rules for a field id apply to the prefix: no longer
	// than one, and only the bytes one may hold.
	if len(fieldPrefix) > nokv.MaxIndexFieldIDBytes {
		return nil, core.QueryRefused(fmt.Sprintf("field_prefix of %d bytes exceeds %d bytes", len(fieldPrefix), nokv.MaxIndexFieldIDBytes))
	}
	if i := strings.IndexFunc(fieldPrefix, func(r rune) bool { return !fieldIDRune(r) }); i >= 0 {
		return nil, core.QueryRefused(fmt.Sprintf("field_prefix has unsupported byte 0x%02x at offset %d", fieldPrefix[i], i))
	}
	d, werr := loadQuery(ctx, s, scope, nil)
	if werr != nil {
		return nil, werr
	}
	var ids []string
	for id := range d.types {
		if !d.absent && strings.HasPrefix(id, fieldPrefix) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)

	type group struct {
		ops    []string
		fields []string
	}
	var groups []*group
	sortable := []string{}
	for _, id := range ids {
		t := d.types[id]
		ops := catalogOperators(t)
		i := slices.IndexFunc(groups, func(g *group) bool { return slices.Equal(g.ops, ops) })
		if i < 0 {
			groups = append(groups, &group{ops: ops})
			i = len(groups) - 1
		}
		groups[i].fields = append(groups[i].fields, id)
		if t != nokv.IndexScalarNull {
			sortable = append(sortable, id)
		}
	}
	slices.SortFunc(groups, func(a, b *group) int { return slices.Compare(a.ops, b.ops) })
	filterable := make([]CatalogFilter, len(groups))
	for i, g := range groups {
		filterable[i] = CatalogFilter{Operators: g.ops, Fields: g.fields}
	}
	facetable := append([]string{}, ids...)
	return &CatalogResult{
		Path:         scope.presentation(s),
		CatalogEmpty: len(ids) == 0,
		Catalog: Catalog{
			Filterable: filterable,
			Sortable:   sortable,
			Facetable:  facetable,
			Facets:     []any{},
		},
		ChildCatalogs: []any{},
	}, nil
}
