package query

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The conditions of a query (see query.go for their rules): predicates and
// sort keys as the tools' inputs give them, their tool-layer and
// storage-side checks, and how rows meet and order by them.

// queryPredicate is one parsed predicate.
type queryPredicate struct {
	field  string
	op     string
	value  nokv.IndexScalar   // every op but in, exists, not_exists
	values []nokv.IndexScalar // in
}

// queryOps are the predicate operators.
var queryOps = []string{"eq", "ne", "in", "lt", "lte", "gt", "gte", "prefix", "suffix", "contains", "exists", "not_exists"}

// querySort is one sort key.
type querySort struct {
	field string
	desc  bool
}

// queryOperand converts a predicate operand: null, a boolean, a number
// (unsigned when a non-negative integer, signed when a negative integer,
// float otherwise) or a string.
func queryOperand(v any) (nokv.IndexScalar, *core.Error) {
	switch x := v.(type) {
	case nil:
		return nokv.NullScalar(), nil
	case bool:
		return nokv.BoolScalar(x), nil
	case string:
		return nokv.StringScalar(x), nil
	case json.Number:
		return queryNumber(string(x))
	}
	return nokv.IndexScalar{}, core.InvalidArguments("predicate values must be scalars")
}

func queryNumber(t string) (nokv.IndexScalar, *core.Error) {
	if !strings.ContainsAny(t, ".eE") {
		if strings.HasPrefix(t, "-") {
			if n, err := strconv.ParseInt(t, 10, 64); err == nil && n != 0 {
				return nokv.SignedScalar(n), nil
			}
		} else if n, err := strconv.ParseUint(t, 10, 64); err == nil {
			return nokv.UnsignedScalar(n), nil
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return nokv.IndexScalar{}, core.InvalidArguments("predicate value " + t + " is not a finite number")
	}
	return nokv.FloatScalar(f), nil
}

// PredicateInput is one member of a query tool's predicates.
type PredicateInput struct {
	Field string         `json:"field"`
	Op    string         `json:"op"`
	Value core.JSONValue `json:"value"`
}

// sortInput is one member of a query tool's sort.
type sortInput struct {
	Field     string  `json:"field"`
	Direction *string `json:"direction"`
}

// parseQueryFields checks an optional list of field ids, the argument
// name: non-empty, without duplicates.
func parseQueryFields(name string, ids []string) ([]string, *core.Error) {
	if ids == nil {
		return nil, nil
	}
	out := make([]string, 0, len(ids))
	for _, f := range ids {
		if f == "" {
			return nil, core.InvalidArguments(name + " must not contain empty field ids")
		}
		if slices.Contains(out, f) {
			return nil, core.InvalidArguments(name + " must not contain duplicate field " + f)
		}
		out = append(out, f)
	}
	return out, nil
}

// parseQueryPredicates reads the predicates argument with the tool layer's
// checks (InvalidArguments): a non-empty field, a known op, no non-null
// value for exists and not_exists, a value (null allowed) for the others,
// an array for in and a scalar otherwise.
func parseQueryPredicates(in []PredicateInput) ([]queryPredicate, *core.Error) {
	out := make([]queryPredicate, 0, len(in))
	for _, o := range in {
		field, op := o.Field, o.Op
		if field == "" {
			return nil, core.InvalidArguments("predicate field must not be empty")
		}
		if !slices.Contains(queryOps, op) {
			return nil, core.InvalidArguments("predicate op " + op + " is not supported")
		}
		p := queryPredicate{field: field, op: op}
		raw := o.Value.V
		var werr *core.Error
		switch op {
		case "exists", "not_exists":
			if raw != nil {
				return nil, core.InvalidArguments(op + " predicates must not carry a value")
			}
		case "in":
			list, ok := raw.([]any)
			if !ok {
				return nil, core.InvalidArguments("in predicates require an array value")
			}
			p.values = make([]nokv.IndexScalar, len(list))
			for i, v := range list {
				if _, nested := v.([]any); nested {
					return nil, core.InvalidArguments("in predicate values must be scalars")
				}
				if p.values[i], werr = queryOperand(v); werr != nil {
					return nil, werr
				}
			}
		default:
			if !o.Value.Set {
				return nil, core.InvalidArguments(op + " predicates require a value")
			}
			if p.value, werr = queryOperand(raw); werr != nil {
				return nil, werr
			}
		}
		out = append(out, p)
	}
	return out, nil
}

// parseQuerySort reads the sort argument: unique non-empty fields, direction
// asc (default) or desc.
func parseQuerySort(in []sortInput) ([]querySort, *core.Error) {
	out := make([]querySort, 0, len(in))
	for _, o := range in {
		field := o.Field
		if field == "" {
			return nil, core.InvalidArguments("sort field must not be empty")
		}
		if slices.ContainsFunc(out, func(s querySort) bool { return s.field == field }) {
			return nil, core.InvalidArguments("sort fields must be unique: " + field)
		}
		var desc bool
		if d := o.Direction; d != nil {
			switch *d {
			case "asc":
			case "desc":
				desc = true
			default:
				return nil, core.InvalidArguments("sort direction must be asc or desc")
			}
		}
		out = append(out, querySort{field: field, desc: desc})
	}
	return out, nil
}

// checkQueryFieldID applies the server's bound on a field id.
func checkQueryFieldID(id string) *core.Error {
	if len(id) > nokv.MaxIndexFieldIDBytes {
		return core.QueryRefused(fmt.Sprintf("field id of %d bytes exceeds %d bytes", len(id), nokv.MaxIndexFieldIDBytes))
	}
	return nil
}

// checkQueryScalar applies the server's bound on an operand.
func checkQueryScalar(v nokv.IndexScalar) *core.Error {
	if v.Kind == nokv.IndexScalarString && len(v.Text) > nokv.MaxIndexScalarBytes {
		return core.QueryRefused(fmt.Sprintf("query scalar of %d bytes exceeds %d bytes", len(v.Text), nokv.MaxIndexScalarBytes))
	}
	return nil
}

// queryBound refuses a list longer than the server allows.
func queryBound(what string, n, max int) *core.Error {
	if n > max {
		return core.QueryRefused(fmt.Sprintf("query has %d %s, maximum is %d", n, what, max))
	}
	return nil
}

// checkPredicateBounds applies the server's bounds to predicates.
func checkPredicateBounds(preds []queryPredicate) *core.Error {
	if werr := queryBound("predicates", len(preds), queryMaxPredicates); werr != nil {
		return werr
	}
	for _, p := range preds {
		if werr := checkQueryFieldID(p.field); werr != nil {
			return werr
		}
		if p.op == "in" {
			if len(p.values) > queryMaxInValues {
				return core.QueryRefused(fmt.Sprintf("in predicate has %d values, maximum is %d", len(p.values), queryMaxInValues))
			}
			for _, v := range p.values {
				if werr := checkQueryScalar(v); werr != nil {
					return werr
				}
			}
		} else if werr := checkQueryScalar(p.value); werr != nil {
			return werr
		}
	}
	return nil
}

// checkQueryFieldIDs applies the field id bound to a list.
func checkQueryFieldIDs(ids []string) *core.Error {
	for _, id := range ids {
		if werr := checkQueryFieldID(id); werr != nil {
			return werr
		}
	}
	return nil
}

func isTextScalarKind(k nokv.IndexScalarKind) bool {
	return k == nokv.IndexScalarString || k == nokv.IndexScalarBytes
}

func isNumericScalarKind(k nokv.IndexScalarKind) bool {
	return k == nokv.IndexScalarSigned || k == nokv.IndexScalarUnsigned || k == nokv.IndexScalarFloat
}

// checkQueryFieldsKnown refuses any of ids that the scope's catalog
// (types) does not hold.
func checkQueryFieldsKnown(ids []string, types map[string]nokv.IndexScalarKind) *core.Error {
	for _, id := range ids {
		if _, known := types[id]; !known {
			return core.UnknownQueryField(id)
		}
	}
	return nil
}

// typeCheckPredicates checks the predicates against the field types of the
// scope: the field must be known, an operand of its type or null, and a
// text operator on a text field.
func typeCheckPredicates(preds []queryPredicate, types map[string]nokv.IndexScalarKind) *core.Error {
	for _, p := range preds {
		t, known := types[p.field]
		if !known {
			return core.UnknownQueryField(p.field)
		}
		if p.op == "exists" || p.op == "not_exists" {
			continue
		}
		operands := p.values
		if p.op != "in" {
			operands = []nokv.IndexScalar{p.value}
		}
		for _, v := range operands {
			if v.Kind != nokv.IndexScalarNull && v.Kind != t {
				return core.QueryRefused(fmt.Sprintf("comparison value has a different scalar type: field %s is %s, value is %s", p.field, t, v.Kind))
			}
		}
		switch p.op {
		case "prefix", "suffix", "contains":
			if !isTextScalarKind(t) {
				return core.QueryRefused(fmt.Sprintf("operator %s is not supported for %s field %s", p.op, t, p.field))
			}
		}
	}
	return nil
}

// match reports whether row r satisfies p.
func (p *queryPredicate) match(r *core.QueryRow) bool {
	v, ok := r.Value(p.field)
	switch p.op {
	case "exists":
		return ok
	case "not_exists":
		return !ok
	}
	if !ok {
		return false
	}
	switch p.op {
	case "eq":
		return nokv.CompareIndexScalars(v, p.value) == 0
	case "ne":
		return nokv.CompareIndexScalars(v, p.value) != 0
	case "in":
		return slices.ContainsFunc(p.values, func(x nokv.IndexScalar) bool { return nokv.CompareIndexScalars(v, x) == 0 })
	}
	if v.Kind == nokv.IndexScalarNull || p.value.Kind == nokv.IndexScalarNull || v.Kind != p.value.Kind {
		return false
	}
	c := nokv.CompareIndexScalars(v, p.value)
	switch p.op {
	case "lt":
		return c < 0
	case "lte":
		return c <= 0
	case "gt":
		return c > 0
	case "gte":
		return c >= 0
	}
	var hay, needle []byte
	switch v.Kind {
	case nokv.IndexScalarString:
		hay, needle = []byte(v.Text), []byte(p.value.Text)
	case nokv.IndexScalarBytes:
		hay, needle = v.Bytes, p.value.Bytes
	default:
		return false
	}
	switch p.op {
	case "prefix":
		return bytes.HasPrefix(hay, needle)
	case "suffix":
		return bytes.HasSuffix(hay, needle)
	case "contains":
		return bytes.Contains(hay, needle)
	}
	return false
}

// filterQueryRows returns the rows that satisfy every predicate, in order.
func filterQueryRows(rows []*core.QueryRow, preds []queryPredicate) []*core.QueryRow {
	var out []*core.QueryRow
	for _, r := range rows {
		ok := true
		for i := range preds {
			if !preds[i].match(r) {
				ok = false
				break
			}
		}
		if ok {
			out = append(out, r)
		}
	}
	return out
}

// compareOptionalScalars orders possibly missing scalars: missing first.
func compareOptionalScalars(a nokv.IndexScalar, aok bool, b nokv.IndexScalar, bok bool) int {
	switch {
	case !aok && !bok:
		return 0
	case !aok:
		return -1
	case !bok:
		return 1
	}
	return nokv.CompareIndexScalars(a, b)
}

// checkQuerySortable refuses a sort key on a field the scope does not
// know or whose type is null.
func checkQuerySortable(field string, types map[string]nokv.IndexScalarKind) *core.Error {
	t, known := types[field]
	if !known {
		return core.UnknownQueryField(field)
	}
	if t == nokv.IndexScalarNull {
		return core.QueryRefused("field " + field + " is not sortable")
	}
	return nil
}

// sortQueryRows sorts rows by the keys, then by the stable order.
func sortQueryRows(rows []*core.QueryRow, keys []querySort) {
	slices.SortStableFunc(rows, func(a, b *core.QueryRow) int {
		for _, k := range keys {
			av, aok := a.Value(k.field)
			bv, bok := b.Value(k.field)
			c := compareOptionalScalars(av, aok, bv, bok)
			if k.desc {
				c = -c
			}
			if c != 0 {
				return c
			}
		}
		return compareRowIdentity(a, b)
	})
}
