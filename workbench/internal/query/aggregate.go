package query

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// workbench_aggregate: bounded count/sum/avg/min/max over the artifacts of
// a query scope (see query.go), filtered by predicates and grouped by up to
// eight fields.
//
// Without group_by there is exactly one group, key {}, even when nothing
// matches (count 0, every other measure null). With group_by, each
// distinct tuple of values is a group; a missing field and an explicit
// null both key as null and fall in one group. Measures: count without a
// field counts rows, with a field the rows whose value is not null; sum
// needs a numeric field and keeps its type (unsigned, signed or float;
// integer overflow is InvalidState); avg is a float or null; min and max
// need a sortable field. Measures over no values are null. Groups are in
// key order (null first) unless sort names group_by fields or measure
// names; at most limit (1 to 100, default 20) groups are returned,
// group_count is the number of groups in all (returned or not), and
// truncated says more exist than were returned. The tool layer checks
// that measures is a list of unique non-empty names, each with a known op
// and a field where the op needs one (InvalidArguments); the server's
// checks follow (InvalidState with its details): 1 to 16 measures, and no
// measure named like a group_by field (both would share one name in the
// result's sort keys).
// input_match_count and row_count are both the number of matching rows.
// There is no cursor.

func init() { core.RegisterTool("workbench_aggregate", aggregateTool) }

const (
	aggregateDefaultLimit = 20
	aggregateMaxLimit     = 100
)

// aggMeasure is one parsed measure.
type aggMeasure struct {
	name  string
	op    string
	field string // "" for a count of rows
}

var aggOps = []string{"count", "sum", "avg", "min", "max"}

// measureInput is one member of workbench_aggregate's measures.
type measureInput struct {
	Name  string  `json:"name"`
	Op    string  `json:"op"`
	Field *string `json:"field"`
}

// parseMeasures reads the measures argument: unique non-empty names, a
// known op, a field for every op but count. Their number is the server's
// to check (aggregateTool).
func parseMeasures(in []measureInput) ([]aggMeasure, *core.Error) {
	if in == nil {
		return nil, core.InvalidArguments("measures is required")
	}
	out := make([]aggMeasure, 0, len(in))
	for _, o := range in {
		name, op := o.Name, o.Op
		if name == "" {
			return nil, core.InvalidArguments("measure name must not be empty")
		}
		if slices.ContainsFunc(out, func(m aggMeasure) bool { return m.name == name }) {
			return nil, core.InvalidArguments("measure names must be unique: " + name)
		}
		if !slices.Contains(aggOps, op) {
			return nil, core.InvalidArguments("measure op " + op + " is not supported")
		}
		m := aggMeasure{name: name, op: op}
		switch f := o.Field; {
		case f == nil:
			if op != "count" {
				return nil, core.InvalidArguments("measure " + name + ": " + op + " requires a field")
			}
		case *f == "":
			return nil, core.InvalidArguments("measure " + name + ": field must not be empty")
		default:
			m.field = *f
		}
		out = append(out, m)
	}
	return out, nil
}

// aggGroup is one group: its key values (null for missing) and rows.
type aggGroup struct {
	key    []nokv.IndexScalar
	rows   []*core.QueryRow
	values []nokv.IndexScalar // one per measure; null when there is no value
}

// aggregateInput is workbench_aggregate's input.
type aggregateInput struct {
	queryScopeInput
	Predicates []PredicateInput `json:"predicates"`
	GroupBy    []string         `json:"group_by"`
	Measures   []measureInput   `json:"measures"`
	Sort       []sortInput      `json:"sort"`
	Limit      *uint64          `json:"limit"`

	preds    []queryPredicate
	groupBy  []string
	measures []aggMeasure
	keys     []querySort
	limit    uint64 // Limit or aggregateDefaultLimit
}

// AggregateInput is workbench_aggregate's input.
type AggregateInput struct {
	// ID is the workbench to aggregate over; nil is every visible one.
	ID *string `json:"id,omitempty"`
	// Section and Path narrow the scope to a section[/path] prefix inside
	// each workbench; "" is none.
	Section string `json:"section,omitempty"`
	Path    string `json:"path,omitempty"`
	// Predicates filter the rows; every one must hold.
	Predicates []Predicate `json:"predicates,omitempty"`
	// GroupBy names up to eight fields; each distinct tuple of their
	// values is a group. None: one group of every matching row.
	GroupBy []string `json:"group_by,omitempty"`
	// Measures are computed over each group: 1 to 16, names unique. The
	// member is required; an empty list is refused by the server.
	Measures []Measure `json:"measures"`
	// Sort orders the groups by group_by fields and measure names; the
	// group key orders the rest.
	Sort []SortKey `json:"sort,omitempty"`
	// Limit is the number of groups returned, 1 to 100; nil is 20.
	Limit *uint64 `json:"limit,omitempty"`
}

// Measure is one measure of an aggregate: Op (count, sum, avg, min or
// max) over Field, reported under Name.
type Measure struct {
	Name string `json:"name"`
	Op   string `json:"op"`
	// Field is the field measured; nil (only for count) counts rows.
	Field *string `json:"field,omitempty"`
}

// AggregateResult is workbench_aggregate's result.
type AggregateResult struct {
	core.Success
	// Path is the scope's presentation path, the logical root when the
	// aggregate spans every workbench.
	Path string `json:"path"`
	// InputMatchCount and RowCount are both the number of matching rows.
	InputMatchCount int `json:"input_match_count"`
	RowCount        int `json:"row_count"`
	// GroupCount is the number of groups, returned or not.
	GroupCount int              `json:"group_count"`
	Groups     []AggregateGroup `json:"groups"`
	// Truncated says that more groups exist than Groups holds.
	Truncated bool `json:"truncated"`
}

// AggregateGroup is one group of an aggregate.
type AggregateGroup struct {
	// Key maps each group_by field to the group's value of it (null for
	// missing or null); {} without group_by.
	Key map[string]any `json:"key"`
	// Values maps each measure's name to its value: an unsigned, signed
	// or float number, a scalar for min and max, or null over no values.
	Values map[string]any `json:"values"`
}

func (in *aggregateInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if werr = in.queryScopeInput.Resolve(); werr != nil {
		return werr
	}
	if in.preds, werr = parseQueryPredicates(in.Predicates); werr != nil {
		return werr
	}
	if in.groupBy, werr = parseQueryFields("group_by", in.GroupBy); werr != nil {
		return werr
	}
	if in.measures, werr = parseMeasures(in.Measures); werr != nil {
		return werr
	}
	if in.keys, werr = parseQuerySort(in.Sort); werr != nil {
		return werr
	}
	in.limit = aggregateDefaultLimit
	if in.Limit != nil {
		in.limit = *in.Limit
	}
	if in.limit < 1 || in.limit > aggregateMaxLimit {
		return core.InvalidArguments("limit must be between 1 and 100")
	}
	return nil
}

func aggregateTool(ctx context.Context, s *core.Service, in *aggregateInput) (*AggregateResult, *core.Error) {
	scope, preds, groupBy, measures, keys, limit := in.scope, in.preds, in.groupBy, in.measures, in.keys, in.limit
	// The storage side's bounds.
	if werr := checkPredicateBounds(preds); werr != nil {
		return nil, werr
	}
	if werr := queryBound("group_by fields", len(groupBy), queryMaxGroupBy); werr != nil {
		return nil, werr
	}
	if len(measures) == 0 {
		return nil, core.QueryRefused(fmt.Sprintf("query has no measures, it needs 1 to %d", queryMaxMeasures))
	}
	if werr := queryBound("measures", len(measures), queryMaxMeasures); werr != nil {
		return nil, werr
	}
	if werr := queryBound("sort fields", len(keys), queryMaxSort); werr != nil {
		return nil, werr
	}
	if werr := checkQueryFieldIDs(groupBy); werr != nil {
		return nil, werr
	}
	for _, m := range measures {
		if werr := checkQueryFieldID(m.field); werr != nil {
			return nil, werr
		}
		// One name in the result's keys and sort fields.
		if slices.Contains(groupBy, m.name) {
			return nil, core.QueryRefused("measure " + m.name + " shadows a group_by field")
		}
	}
	for _, k := range keys {
		if !slices.Contains(groupBy, k.field) && !slices.ContainsFunc(measures, func(m aggMeasure) bool { return m.name == k.field }) {
			return nil, core.QueryRefused("aggregate sort field " + k.field + " is neither a group_by field nor a measure name")
		}
	}

	d, werr := loadQuery(ctx, s, scope, preds)
	if werr != nil {
		return nil, werr
	}
	if werr := typeCheckPredicates(preds, d.types); werr != nil {
		return nil, werr
	}
	if werr := checkQueryFieldsKnown(groupBy, d.types); werr != nil {
		return nil, werr
	}
	for _, m := range measures {
		if m.field == "" {
			continue
		}
		t, known := d.types[m.field]
		if !known {
			return nil, core.UnknownQueryField(m.field)
		}
		switch m.op {
		case "sum", "avg":
			if !isNumericScalarKind(t) {
				return nil, core.QueryRefused(fmt.Sprintf("measure %s: %s requires a numeric field, %s is %s", m.name, m.op, m.field, t))
			}
		case "min", "max":
			if t == nokv.IndexScalarNull {
				return nil, core.QueryRefused(fmt.Sprintf("measure %s: %s requires a sortable field, %s is not sortable", m.name, m.op, m.field))
			}
		}
	}

	matches := filterQueryRows(d.rows, preds)
	groups := groupQueryRows(matches, groupBy)
	for _, g := range groups {
		g.values = make([]nokv.IndexScalar, len(measures))
		for i, m := range measures {
			v, werr := aggMeasureValue(m, g.rows)
			if werr != nil {
				return nil, werr
			}
			g.values[i] = v
		}
	}
	sortAggGroups(groups, keys, groupBy, measures)
	groupCount := len(groups)
	truncated := groupCount > int(limit)
	if truncated {
		groups = groups[:limit]
	}
	out := make([]AggregateGroup, len(groups))
	for i, g := range groups {
		key := make(map[string]any, len(groupBy))
		for j, f := range groupBy {
			key[f] = indexScalarJSON(g.key[j])
		}
		values := make(map[string]any, len(measures))
		for j, m := range measures {
			values[m.name] = indexScalarJSON(g.values[j])
		}
		out[i] = AggregateGroup{Key: key, Values: values}
	}
	return &AggregateResult{
		Path:            scope.presentation(s),
		InputMatchCount: len(matches),
		RowCount:        len(matches),
		GroupCount:      groupCount,
		Groups:          out,
		Truncated:       truncated,
	}, nil
}

// groupQueryRows partitions rows by their group_by values. Without group_by
// there is one group holding every row, even none.
func groupQueryRows(rows []*core.QueryRow, groupBy []string) []*aggGroup {
	if len(groupBy) == 0 {
		return []*aggGroup{{rows: rows}}
	}
	index := map[string]*aggGroup{}
	var out []*aggGroup
	for _, r := range rows {
		key := make([]nokv.IndexScalar, len(groupBy))
		var id strings.Builder
		for i, f := range groupBy {
			v, ok := r.Value(f)
			if !ok {
				v = nokv.NullScalar()
			}
			key[i] = v
			id.WriteString(indexScalarKey(v))
		}
		g := index[id.String()]
		if g == nil {
			g = &aggGroup{key: key}
			index[id.String()] = g
			out = append(out, g)
		}
		g.rows = append(g.rows, r)
	}
	return out
}

// compareGroupKeys orders group keys component by component.
func compareGroupKeys(a, b []nokv.IndexScalar) int {
	for i := range a {
		if c := nokv.CompareIndexScalars(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

// sortAggGroups orders groups by the sort keys, then by key.
func sortAggGroups(groups []*aggGroup, keys []querySort, groupBy []string, measures []aggMeasure) {
	slices.SortStableFunc(groups, func(a, b *aggGroup) int {
		for _, k := range keys {
			var c int
			if i := slices.Index(groupBy, k.field); i >= 0 {
				c = nokv.CompareIndexScalars(a.key[i], b.key[i])
			} else {
				i := slices.IndexFunc(measures, func(m aggMeasure) bool { return m.name == k.field })
				c = nokv.CompareIndexScalars(a.values[i], b.values[i])
			}
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return compareGroupKeys(a.key, b.key)
	})
}

// aggMeasureValue computes one measure over a group's rows.
func aggMeasureValue(m aggMeasure, rows []*core.QueryRow) (nokv.IndexScalar, *core.Error) {
	if m.op == "count" && m.field == "" {
		return nokv.UnsignedScalar(uint64(len(rows))), nil
	}
	var vals []nokv.IndexScalar
	for _, r := range rows {
		if v, ok := r.Value(m.field); ok && v.Kind != nokv.IndexScalarNull {
			vals = append(vals, v)
		}
	}
	switch m.op {
	case "count":
		return nokv.UnsignedScalar(uint64(len(vals))), nil
	case "min", "max":
		if len(vals) == 0 {
			return nokv.NullScalar(), nil
		}
		best := vals[0]
		for _, v := range vals[1:] {
			c := nokv.CompareIndexScalars(v, best)
			if (m.op == "min" && c < 0) || (m.op == "max" && c > 0) {
				best = v
			}
		}
		return best, nil
	}
	if len(vals) == 0 {
		return nokv.NullScalar(), nil
	}
	// sum and avg over one numeric kind (field types are consistent).
	var (
		u     uint64
		i     int64
		f     float64
		total float64
	)
	overflow := func() (nokv.IndexScalar, *core.Error) {
		return nokv.IndexScalar{}, core.QueryRefused(fmt.Sprintf("measure %s: sum of %s overflows", m.name, m.field))
	}
	kind := vals[0].Kind
	for _, v := range vals {
		switch v.Kind {
		case nokv.IndexScalarUnsigned:
			if u > math.MaxUint64-v.Unsigned {
				if m.op == "sum" {
					return overflow()
				}
			}
			u += v.Unsigned
			total += float64(v.Unsigned)
		case nokv.IndexScalarSigned:
			if (v.Signed > 0 && i > math.MaxInt64-v.Signed) || (v.Signed < 0 && i < math.MinInt64-v.Signed) {
				if m.op == "sum" {
					return overflow()
				}
			}
			i += v.Signed
			total += float64(v.Signed)
		case nokv.IndexScalarFloat:
			f += v.Float
			total += v.Float
		}
	}
	if m.op == "avg" {
		return nokv.FloatScalar(total / float64(len(vals))), nil
	}
	switch kind {
	case nokv.IndexScalarUnsigned:
		return nokv.UnsignedScalar(u), nil
	case nokv.IndexScalarSigned:
		return nokv.SignedScalar(i), nil
	}
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nokv.IndexScalar{}, core.QueryRefused(fmt.Sprintf("measure %s: sum of %s is not finite", m.name, m.field))
	}
	return nokv.FloatScalar(f), nil
}
