package query

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Metadata queries: the machinery workbench_search, workbench_aggregate
// and workbench_catalog share. This file reads and types a scope's rows;
// query_predicates.go holds predicates and sort keys, query_cursor.go the
// continuation tokens and the digests they are bound to.
//
// # Rows and fields
//
// A query's rows are the artifacts of its scope: every artifact of one
// workbench (id given) or of every Visible workbench under the root (id
// absent), optionally narrowed to a section[/path] prefix inside each,
// matched component by component (an exact artifact at the prefix is a
// row). Staging workbenches are never rows. A row's fields are the
// built-in fields of the artifact profile (queryBuiltins: body_digest_uri,
// content_type, generation, logical_size, manifest_id, path, producer,
// workbench_id; no "artifact." prefix) and the custom typed fields of the
// path's index projection (PathEntry.Index). A custom field whose id is a
// built-in id is shadowed by the built-in. Built-in producer and
// manifest_id yield an explicit null when unset, so they always exist.
//
// Rows come from a scan of the scope's PathCurrent rows: one scan per
// workbench yields every row with all its fields, and every artifact of
// the scope is read and filtered in memory (for a root-scoped query,
// every artifact of every visible workbench). When a predicate on an
// indexed built-in field is selective, search and aggregate read the
// rows that SecondaryIndex range names instead, and recheck each hit
// against its workspace marker and PathCurrent row at the same read
// version, as the seed prescribes (query_index.go); the results are the
// scan's.
//
// # Field types
//
// A built-in field has a fixed type (string, or unsigned for generation
// and logical_size). A custom field's type is the scalar kind its non-null
// values have across the scope; a field seen only with null values has
// type null; two different non-null kinds for one field are InvalidState.
// The built-in fields and the custom fields seen in the scope are the
// scope's catalog. A field id outside it, named by a predicate, sort key,
// projection, facet, group or measure, is refused: InvalidState "unknown
// query field", as the reference's server refuses it, rather than an
// empty or null result.
//
// # Predicates
//
// eq, ne, in, lt, lte, gt, gte, prefix, suffix, contains, exists and
// not_exists, with the artifact profile's rules: an operand must have the
// field's type or be null ("comparison value has a different scalar type",
// InvalidState); JSON numbers are unsigned when non-negative integers,
// signed when negative integers, float otherwise, so numeric types never
// mix. A row without the field matches only not_exists. ne needs the field
// present and unequal. The range operators never match a null value or a
// null operand. prefix, suffix and contains are case-sensitive tests of
// string (or bytes) fields and operands; on any other field type they are
// InvalidState.
//
// # Order
//
// Sort keys compare typed scalars as their order-preserving index
// encoding does (CompareIndexScalars); a missing value sorts before every
// value, null included, for asc, and after for desc. Rows equal on every
// key keep the stable order: workbench id, then path compared component by
// component (a path sorts before its descendants).

// The built-in fields of the artifact query profile and their types.
var queryBuiltins = map[string]nokv.IndexScalarKind{
	"body_digest_uri": nokv.IndexScalarString,
	"content_type":    nokv.IndexScalarString,
	"generation":      nokv.IndexScalarUnsigned,
	"logical_size":    nokv.IndexScalarUnsigned,
	"manifest_id":     nokv.IndexScalarString,
	"path":            nokv.IndexScalarString,
	"producer":        nokv.IndexScalarString,
	"workbench_id":    nokv.IndexScalarString,
}

// Server-side bounds of one query. Going over one is InvalidState.
const (
	queryMaxPredicates = 64
	queryMaxInValues   = 64
	queryMaxFields     = 64
	queryMaxSort       = 8
	queryMaxFacets     = 16
	queryMaxGroupBy    = 8
	queryMaxMeasures   = 16
	queryMaxBuckets    = 256
)

// queryScope is where a query looks: one workbench (id set) or every
// visible one (id empty), and a path prefix inside each.
type queryScope struct {
	id     string
	prefix []string
}

// presentation is the path a result reports for the scope: the scope's
// presentation path inside its workbench, or the logical root for a
// root-scoped query.
func (q queryScope) presentation(s *core.Service) string {
	if q.id == "" {
		return s.LogicalRoot()
	}
	return core.PresentationPath(s.LogicalRoot(), q.id, q.prefix)
}

// queryScopeInput is the id (null: every visible workbench), section and
// path (null and "" alike mean absent) of a query tool's input.
type queryScopeInput struct {
	ID      *string `json:"id"`
	Section string  `json:"section"`
	Path    string  `json:"path"`

	scope queryScope
	core.JoinedPath
}

func (in *queryScopeInput) Resolve() *core.Error {
	if in.ID != nil {
		id, werr := core.ParseWorkbenchID(*in.ID)
		if werr != nil {
			return werr
		}
		in.scope.id = id
	}
	var werr *core.Error
	in.scope.prefix, werr = in.Take(core.ScopePath(in.Section, in.Path))
	return werr
}

// queryData is one query's rows at one read version.
type queryData struct {
	sn    *head.Snapshot
	rows  []*core.QueryRow // in the stable order
	types map[string]nokv.IndexScalarKind
	// absent says the scope's workbench (id given) does not exist: the
	// scope is empty, and its catalog has no fields at all.
	absent bool
}

// loadQuery reads the rows of a scope from one pinned snapshot and types
// their fields. A missing workbench (id given) is an empty scope, as in
// the reference: no rows, only the built-in fields (and in the catalog
// none). When an index
// can answer one of preds, the rows are only those its range names
// (query_index.go): a superset of the rows that satisfy preds, which the
// caller still applies.
func loadQuery(ctx context.Context, s *core.Service, q queryScope, preds []queryPredicate) (*queryData, *core.Error) {
	var views []*core.View
	var sn *head.Snapshot
	absent := false
	plan, indexable, err := planQueryIndex(s.Root(), preds)
	if err != nil {
		return nil, core.FromError(err)
	}
	indexable = indexable && !s.QueryScanOnly
	if q.id != "" {
		var reads core.ViewReads
		if indexable {
			// The index's table comes in the marker's round.
			reads.Fams = []shards.Family{nokv.FamilySecondaryIndex}
		}
		v, werr := s.OpenViewFor(ctx, q.id, nil, reads)
		switch {
		case werr == nil:
			sn = v.Sn
			views = []*core.View{v}
		case werr.Code == core.CodeNotFound:
			if sn, werr = s.Pin(ctx); werr != nil {
				return nil, werr
			}
			absent = true
		default:
			return nil, werr
		}
	} else {
		var werr *core.Error
		if sn, werr = s.Pin(ctx); werr != nil {
			return nil, werr
		}
		if views, werr = VisibleViews(ctx, s, sn); werr != nil {
			return nil, werr
		}
	}
	d := &queryData{sn: sn, absent: absent}
	indexed := false
	if indexable && len(views) > 0 {
		var werr *core.Error
		if d.rows, indexed, werr = indexedRows(ctx, s, sn, views, q, plan); werr != nil {
			return nil, werr
		}
	}
	if !indexed {
		var werr *core.Error
		if d.rows, werr = scanQueryRows(ctx, views, q); werr != nil {
			return nil, werr
		}
	}
	slices.SortStableFunc(d.rows, compareRowIdentity)
	types, werr := queryFieldTypes(d.rows)
	if werr != nil {
		return nil, werr
	}
	d.types = types
	return d, nil
}

// scanQueryRows reads every row of scope q from the PathCurrent rows of
// views.
func scanQueryRows(ctx context.Context, views []*core.View, q queryScope) ([]*core.QueryRow, *core.Error) {
	var rows []*core.QueryRow
	for _, v := range views {
		werr := v.Scan(ctx, q.prefix, nil, func(path []string, e nokv.PathEntry) bool {
			rows = append(rows, &core.QueryRow{Wb: v.ID, Path: path, E: e})
			return true
		})
		if werr != nil {
			return nil, werr
		}
		if len(q.prefix) > 0 {
			e, ok, werr := v.Entry(ctx, q.prefix)
			if werr != nil {
				return nil, werr
			}
			if ok {
				rows = append(rows, &core.QueryRow{Wb: v.ID, Path: slices.Clone(q.prefix), E: e})
			}
		}
	}
	return rows, nil
}

// VisibleViews returns a view of every Visible workbench of the root at
// snapshot sn, in workbench id order.
func VisibleViews(ctx context.Context, s *core.Service, sn *head.Snapshot) ([]*core.View, *core.Error) {
	recs, err := sn.Scan(ctx, nokv.FamilyWorkspaceCurrent, nokv.RootPrefix(s.Root()), nil, 0)
	if err != nil {
		return nil, core.FromError(err)
	}
	var out []*core.View
	for _, r := range recs {
		k, err := nokv.ParseWorkspaceCurrentKey(r.Key)
		if err != nil {
			return nil, core.FromError(err)
		}
		ws, err := nokv.DecodeWorkspaceCurrent(r.Value)
		if err != nil {
			return nil, core.FromError(err)
		}
		if ws.State != nokv.WorkspaceStateVisible {
			continue
		}
		out = append(out, &core.View{S: s, Sn: sn, ID: k.WorkbenchID, Ws: ws})
	}
	slices.SortFunc(out, func(a, b *core.View) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// compareComponentPaths orders paths component by component as bytes, a
// path before its descendants.
func compareComponentPaths(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if c := strings.Compare(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

// compareRowIdentity is the stable tie-break: workbench id, then path.
func compareRowIdentity(a, b *core.QueryRow) int {
	if c := strings.Compare(a.Wb, b.Wb); c != 0 {
		return c
	}
	return compareComponentPaths(a.Path, b.Path)
}

// queryFieldTypes returns the type of every field the rows yield:
// built-ins at their fixed types, custom fields at their observed kinds.
func queryFieldTypes(rows []*core.QueryRow) (map[string]nokv.IndexScalarKind, *core.Error) {
	types := make(map[string]nokv.IndexScalarKind, len(queryBuiltins))
	for id, k := range queryBuiltins {
		types[id] = k
	}
	for _, r := range rows {
		for _, f := range r.E.Index {
			if _, builtin := queryBuiltins[f.ID]; builtin {
				continue
			}
			have, seen := types[f.ID]
			switch {
			case !seen || have == nokv.IndexScalarNull:
				types[f.ID] = f.Value.Kind
			case f.Value.Kind == nokv.IndexScalarNull || f.Value.Kind == have:
			default:
				return nil, core.QueryRefused(fmt.Sprintf("index field %s has conflicting scalar types %s and %s", f.ID, have, f.Value.Kind))
			}
		}
	}
	return types, nil
}

// indexScalarJSON is a scalar as a result value: null, a boolean, an integer, a
// float, a timestamp as RFC 3339 text with nanoseconds in UTC, bytes as
// standard base64 text, or a string.
func indexScalarJSON(v nokv.IndexScalar) any {
	switch v.Kind {
	case nokv.IndexScalarBool:
		return v.Bool
	case nokv.IndexScalarSigned:
		return v.Signed
	case nokv.IndexScalarUnsigned:
		return v.Unsigned
	case nokv.IndexScalarFloat:
		return v.Float
	case nokv.IndexScalarTimestamp:
		return v.Time.UTC().Format(time.RFC3339Nano)
	case nokv.IndexScalarBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case nokv.IndexScalarString:
		return v.Text
	}
	return nil
}

// optionalScalarJSON is a possibly missing value as a result value, null when
// missing.
func optionalScalarJSON(v nokv.IndexScalar, ok bool) any {
	if !ok {
		return nil
	}
	return indexScalarJSON(v)
}

// queryRowLocation returns the presentation fields of a row: path, section
// and relative_path (section nil and the whole path outside the
// sections; relative_path nil when nothing follows the section).
func queryRowLocation(s *core.Service, r *core.QueryRow) (path string, section, rel *string) {
	path = core.PresentationPath(s.LogicalRoot(), r.Wb, r.Path)
	sec, rest := core.SplitSection(r.Path)
	if sec != "" {
		section = &sec
	}
	if len(rest) > 0 {
		p := core.LogicalPath(rest)
		rel = &p
	}
	return path, section, rel
}

// indexScalarKey is a scalar's order-preserving encoding as a map key.
func indexScalarKey(v nokv.IndexScalar) string {
	b, err := nokv.EncodeIndexScalar(v)
	if err != nil {
		// Stored and parsed scalars are valid; a float that is not finite
		// cannot reach here.
		panic("workbench: encode index scalar: " + err.Error())
	}
	return string(b)
}
