package workbench

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// Metadata queries: the machinery workbench_search, workbench_aggregate
// and workbench_catalog share.
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
// Rows come from a scan of the scope's PathCurrent rows, not from the
// SecondaryIndex family: the Workbench tools attach no custom index
// fields, every built-in field lives in PathEntry itself, and one
// PathCurrent scan per workbench yields every row with all its fields. The
// cost is a scope scan per query (every artifact of the scope is read and
// filtered in memory; for a root-scoped query, every artifact of every
// visible workbench). A later change can answer selective predicates from
// SecondaryIndex rows (root | index_id | encoded value | incarnation |
// path) and recheck each hit against its workspace marker and PathCurrent
// row at the same read version, as the seed prescribes.
//
// # Field types
//
// A built-in field has a fixed type (string, or unsigned for generation
// and logical_size). A custom field's type is the scalar kind its non-null
// values have across the scope; a field seen only with null values has
// type null; two different non-null kinds for one field are InvalidState.
// A field id that is neither built-in nor seen in the scope has no type:
// no row yields it, any operand type is accepted, and every comparison
// with it is false (not_exists is true).
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
var queryBuiltins = map[string]IndexScalarKind{
	"body_digest_uri": IndexScalarString,
	"content_type":    IndexScalarString,
	"generation":      IndexScalarUnsigned,
	"logical_size":    IndexScalarUnsigned,
	"manifest_id":     IndexScalarString,
	"path":            IndexScalarString,
	"producer":        IndexScalarString,
	"workbench_id":    IndexScalarString,
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

// queryRow is one artifact of a query's scope.
type queryRow struct {
	wb   string
	path []string
	e    PathEntry
}

// value returns the row's value of field id and whether the row has it.
func (r *queryRow) value(id string) (IndexScalar, bool) {
	optional := func(p *string) IndexScalar {
		if p == nil {
			return NullScalar()
		}
		return StringScalar(*p)
	}
	switch id {
	case "body_digest_uri":
		return StringScalar(r.e.BodyDigestURI), true
	case "content_type":
		return StringScalar(r.e.ContentType), true
	case "generation":
		return UnsignedScalar(r.e.Generation), true
	case "logical_size":
		return UnsignedScalar(r.e.LogicalSize), true
	case "manifest_id":
		return optional(r.e.ManifestID), true
	case "path":
		return StringScalar(LogicalPath(r.path)), true
	case "producer":
		return optional(r.e.Producer), true
	case "workbench_id":
		return StringScalar(r.wb), true
	}
	return r.e.Index.Lookup(id)
}

// queryScope is where a query looks: one workbench (id set) or every
// visible one (id empty), and a path prefix inside each.
type queryScope struct {
	id     string
	prefix []string
}

// presentation is the path a result reports for the scope: the scope's
// presentation path inside its workbench, or the logical root for a
// root-scoped query.
func (q queryScope) presentation(s *Service) string {
	if q.id == "" {
		return s.logical
	}
	return PresentationPath(s.logical, q.id, q.prefix)
}

// parseQueryScope reads the id, section and path arguments.
func parseQueryScope(a Args) (queryScope, *Error) {
	var q queryScope
	id, hasID, werr := a.OptString("id")
	if werr != nil {
		return q, werr
	}
	if hasID {
		if q.id, werr = ParseWorkbenchID(id); werr != nil {
			return q, werr
		}
	}
	section, _, werr := a.OptString("section")
	if werr != nil {
		return q, werr
	}
	rel, _, werr := a.OptString("path")
	if werr != nil {
		return q, werr
	}
	q.prefix, werr = ScopePath(section, rel)
	return q, werr
}

// queryData is one query's rows at one read version.
type queryData struct {
	sn    *head.Snapshot
	rows  []*queryRow // in the stable order
	types map[string]IndexScalarKind
}

// loadQuery reads the rows of a scope from one pinned snapshot and types
// their fields. A missing workbench (id given) is NotFound.
func (s *Service) loadQuery(ctx context.Context, q queryScope) (*queryData, *Error) {
	var views []*view
	var sn *head.Snapshot
	if q.id != "" {
		v, werr := s.openView(ctx, q.id, nil)
		if werr != nil {
			return nil, werr
		}
		sn = v.sn
		views = []*view{v}
	} else {
		var werr *Error
		if sn, werr = s.pin(ctx); werr != nil {
			return nil, werr
		}
		if views, werr = s.visibleViews(ctx, sn); werr != nil {
			return nil, werr
		}
	}
	d := &queryData{sn: sn}
	for _, v := range views {
		werr := v.scan(ctx, q.prefix, nil, func(path []string, e PathEntry) bool {
			d.rows = append(d.rows, &queryRow{wb: v.id, path: path, e: e})
			return true
		})
		if werr != nil {
			return nil, werr
		}
		if len(q.prefix) > 0 {
			e, ok, werr := v.entry(ctx, q.prefix)
			if werr != nil {
				return nil, werr
			}
			if ok {
				d.rows = append(d.rows, &queryRow{wb: v.id, path: slices.Clone(q.prefix), e: e})
			}
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

// visibleViews returns a view of every Visible workbench of the root at
// snapshot sn, in workbench id order.
func (s *Service) visibleViews(ctx context.Context, sn *head.Snapshot) ([]*view, *Error) {
	recs, err := sn.Scan(ctx, nokv.WorkspaceCurrent, RootPrefix(s.root), nil, 0)
	if err != nil {
		return nil, FromError(err)
	}
	var out []*view
	for _, r := range recs {
		k, err := ParseWorkspaceCurrentKey(r.Key)
		if err != nil {
			return nil, FromError(err)
		}
		ws, err := DecodeWorkspaceCurrent(r.Value)
		if err != nil {
			return nil, FromError(err)
		}
		if ws.State != WorkspaceStateVisible {
			continue
		}
		out = append(out, &view{s: s, sn: sn, id: k.WorkbenchID, ws: ws})
	}
	slices.SortFunc(out, func(a, b *view) int { return strings.Compare(a.id, b.id) })
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
func compareRowIdentity(a, b *queryRow) int {
	if c := strings.Compare(a.wb, b.wb); c != 0 {
		return c
	}
	return compareComponentPaths(a.path, b.path)
}

// queryFieldTypes returns the type of every field the rows yield:
// built-ins at their fixed types, custom fields at their observed kinds.
func queryFieldTypes(rows []*queryRow) (map[string]IndexScalarKind, *Error) {
	types := make(map[string]IndexScalarKind, len(queryBuiltins))
	for id, k := range queryBuiltins {
		types[id] = k
	}
	for _, r := range rows {
		for _, f := range r.e.Index {
			if _, builtin := queryBuiltins[f.ID]; builtin {
				continue
			}
			have, seen := types[f.ID]
			switch {
			case !seen || have == IndexScalarNull:
				types[f.ID] = f.Value.Kind
			case f.Value.Kind == IndexScalarNull || f.Value.Kind == have:
			default:
				return nil, InvalidState(fmt.Sprintf("index field %s has conflicting scalar types %s and %s", f.ID, have, f.Value.Kind))
			}
		}
	}
	return types, nil
}

// queryPredicate is one parsed predicate.
type queryPredicate struct {
	field  string
	op     string
	value  IndexScalar   // every op but in, exists, not_exists
	values []IndexScalar // in
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
func queryOperand(v any) (IndexScalar, *Error) {
	switch x := v.(type) {
	case nil:
		return NullScalar(), nil
	case bool:
		return BoolScalar(x), nil
	case string:
		return StringScalar(x), nil
	case json.Number:
		return queryNumber(string(x))
	}
	return IndexScalar{}, InvalidArguments("predicate values must be scalars")
}

func queryNumber(t string) (IndexScalar, *Error) {
	if !strings.ContainsAny(t, ".eE") {
		if strings.HasPrefix(t, "-") {
			if n, err := strconv.ParseInt(t, 10, 64); err == nil && n != 0 {
				return SignedScalar(n), nil
			}
		} else if n, err := strconv.ParseUint(t, 10, 64); err == nil {
			return UnsignedScalar(n), nil
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return IndexScalar{}, InvalidArguments("predicate value " + t + " is not a finite number")
	}
	return FloatScalar(f), nil
}

// parseQueryFields reads an optional array of field ids: non-empty,
// without duplicates.
func parseQueryFields(a Args, name string) ([]string, *Error) {
	raw, ok := a[name].([]any)
	if !ok {
		if a.Has(name) {
			return nil, InvalidArguments(name + " must be an array of strings")
		}
		return nil, nil
	}
	out := make([]string, 0, len(raw))
	for _, v := range raw {
		f, ok := v.(string)
		if !ok {
			return nil, InvalidArguments(name + " must be an array of strings")
		}
		if f == "" {
			return nil, InvalidArguments(name + " must not contain empty field ids")
		}
		if slices.Contains(out, f) {
			return nil, InvalidArguments(name + " must not contain duplicate field " + f)
		}
		out = append(out, f)
	}
	return out, nil
}

// queryObjects returns the array argument name as objects (the schema has
// checked the shape).
func queryObjects(a Args, name string) ([]map[string]any, *Error) {
	raw, ok := a[name].([]any)
	if !ok {
		if a.Has(name) {
			return nil, InvalidArguments(name + " must be an array of queryObjects")
		}
		return nil, nil
	}
	out := make([]map[string]any, len(raw))
	for i, v := range raw {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, InvalidArguments(name + " must be an array of queryObjects")
		}
		out[i] = o
	}
	return out, nil
}

// parseQueryPredicates reads the predicates argument with the tool layer's
// checks (InvalidArguments): a non-empty field, a known op, no non-null
// value for exists and not_exists, a value (null allowed) for the others,
// an array for in and a scalar otherwise.
func parseQueryPredicates(a Args) ([]queryPredicate, *Error) {
	objs, werr := queryObjects(a, "predicates")
	if werr != nil {
		return nil, werr
	}
	out := make([]queryPredicate, 0, len(objs))
	for _, o := range objs {
		field, _ := o["field"].(string)
		op, _ := o["op"].(string)
		if field == "" {
			return nil, InvalidArguments("predicate field must not be empty")
		}
		if !slices.Contains(queryOps, op) {
			return nil, InvalidArguments("predicate op " + op + " is not supported")
		}
		p := queryPredicate{field: field, op: op}
		raw, present := o["value"]
		switch op {
		case "exists", "not_exists":
			if raw != nil {
				return nil, InvalidArguments(op + " predicates must not carry a value")
			}
		case "in":
			list, ok := raw.([]any)
			if !ok {
				return nil, InvalidArguments("in predicates require an array value")
			}
			p.values = make([]IndexScalar, len(list))
			for i, v := range list {
				if _, nested := v.([]any); nested {
					return nil, InvalidArguments("in predicate values must be scalars")
				}
				if p.values[i], werr = queryOperand(v); werr != nil {
					return nil, werr
				}
			}
		default:
			if !present {
				return nil, InvalidArguments(op + " predicates require a value")
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
func parseQuerySort(a Args) ([]querySort, *Error) {
	objs, werr := queryObjects(a, "sort")
	if werr != nil {
		return nil, werr
	}
	out := make([]querySort, 0, len(objs))
	for _, o := range objs {
		field, _ := o["field"].(string)
		if field == "" {
			return nil, InvalidArguments("sort field must not be empty")
		}
		if slices.ContainsFunc(out, func(s querySort) bool { return s.field == field }) {
			return nil, InvalidArguments("sort fields must be unique: " + field)
		}
		var desc bool
		switch d := o["direction"].(type) {
		case nil:
		case string:
			switch d {
			case "asc":
			case "desc":
				desc = true
			default:
				return nil, InvalidArguments("sort direction must be asc or desc")
			}
		default:
			return nil, InvalidArguments("sort direction must be asc or desc")
		}
		out = append(out, querySort{field: field, desc: desc})
	}
	return out, nil
}

// checkQueryFieldID applies the server's bound on a field id.
func checkQueryFieldID(id string) *Error {
	if len(id) > MaxIndexFieldIDBytes {
		return InvalidState(fmt.Sprintf("field id of %d bytes exceeds %d bytes", len(id), MaxIndexFieldIDBytes))
	}
	return nil
}

// checkQueryScalar applies the server's bound on an operand.
func checkQueryScalar(v IndexScalar) *Error {
	if v.Kind == IndexScalarString && len(v.Text) > MaxIndexScalarBytes {
		return InvalidState(fmt.Sprintf("query scalar of %d bytes exceeds %d bytes", len(v.Text), MaxIndexScalarBytes))
	}
	return nil
}

// queryBound refuses a list longer than the server allows.
func queryBound(what string, n, max int) *Error {
	if n > max {
		return InvalidState(fmt.Sprintf("query has %d %s, maximum is %d", n, what, max))
	}
	return nil
}

// checkPredicateBounds applies the server's bounds to predicates.
func checkPredicateBounds(preds []queryPredicate) *Error {
	if werr := queryBound("predicates", len(preds), queryMaxPredicates); werr != nil {
		return werr
	}
	for _, p := range preds {
		if werr := checkQueryFieldID(p.field); werr != nil {
			return werr
		}
		if p.op == "in" {
			if len(p.values) > queryMaxInValues {
				return InvalidState(fmt.Sprintf("in predicate has %d values, maximum is %d", len(p.values), queryMaxInValues))
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
func checkQueryFieldIDs(ids []string) *Error {
	for _, id := range ids {
		if werr := checkQueryFieldID(id); werr != nil {
			return werr
		}
	}
	return nil
}

func isTextScalarKind(k IndexScalarKind) bool { return k == IndexScalarString || k == IndexScalarBytes }

func isNumericScalarKind(k IndexScalarKind) bool {
	return k == IndexScalarSigned || k == IndexScalarUnsigned || k == IndexScalarFloat
}

// typeCheckPredicates checks the predicates against the field types of the scope.
func typeCheckPredicates(preds []queryPredicate, types map[string]IndexScalarKind) *Error {
	for _, p := range preds {
		t, known := types[p.field]
		if !known {
			continue
		}
		if p.op == "exists" || p.op == "not_exists" {
			continue
		}
		operands := p.values
		if p.op != "in" {
			operands = []IndexScalar{p.value}
		}
		for _, v := range operands {
			if v.Kind != IndexScalarNull && v.Kind != t {
				return InvalidState(fmt.Sprintf("comparison value has a different scalar type: field %s is %s, value is %s", p.field, t, v.Kind))
			}
		}
		switch p.op {
		case "prefix", "suffix", "contains":
			if !isTextScalarKind(t) {
				return InvalidState(fmt.Sprintf("operator %s is not supported for %s field %s", p.op, t, p.field))
			}
		}
	}
	return nil
}

// match reports whether row r satisfies p.
func (p *queryPredicate) match(r *queryRow) bool {
	v, ok := r.value(p.field)
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
		return CompareIndexScalars(v, p.value) == 0
	case "ne":
		return CompareIndexScalars(v, p.value) != 0
	case "in":
		return slices.ContainsFunc(p.values, func(x IndexScalar) bool { return CompareIndexScalars(v, x) == 0 })
	}
	if v.Kind == IndexScalarNull || p.value.Kind == IndexScalarNull || v.Kind != p.value.Kind {
		return false
	}
	c := CompareIndexScalars(v, p.value)
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
	case IndexScalarString:
		hay, needle = []byte(v.Text), []byte(p.value.Text)
	case IndexScalarBytes:
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
func filterQueryRows(rows []*queryRow, preds []queryPredicate) []*queryRow {
	var out []*queryRow
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
func compareOptionalScalars(a IndexScalar, aok bool, b IndexScalar, bok bool) int {
	switch {
	case !aok && !bok:
		return 0
	case !aok:
		return -1
	case !bok:
		return 1
	}
	return CompareIndexScalars(a, b)
}

// checkQuerySortable refuses a sort key on a field whose type is null.
func checkQuerySortable(field string, types map[string]IndexScalarKind) *Error {
	if t, known := types[field]; known && t == IndexScalarNull {
		return InvalidState("field " + field + " is not sortable")
	}
	return nil
}

// sortQueryRows sorts rows by the keys, then by the stable order.
func sortQueryRows(rows []*queryRow, keys []querySort) {
	slices.SortStableFunc(rows, func(a, b *queryRow) int {
		for _, k := range keys {
			av, aok := a.value(k.field)
			bv, bok := b.value(k.field)
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

// indexScalarJSON is a scalar as a result value: null, a boolean, an integer, a
// float, a timestamp as RFC 3339 text with nanoseconds in UTC, bytes as
// standard base64 text, or a string.
func indexScalarJSON(v IndexScalar) any {
	switch v.Kind {
	case IndexScalarBool:
		return v.Bool
	case IndexScalarSigned:
		return v.Signed
	case IndexScalarUnsigned:
		return v.Unsigned
	case IndexScalarFloat:
		return v.Float
	case IndexScalarTimestamp:
		return v.Time.UTC().Format(time.RFC3339Nano)
	case IndexScalarBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes)
	case IndexScalarString:
		return v.Text
	}
	return nil
}

// optionalScalarJSON is a possibly missing value as a result value, null when
// missing.
func optionalScalarJSON(v IndexScalar, ok bool) any {
	if !ok {
		return nil
	}
	return indexScalarJSON(v)
}

// queryRowLocation returns the presentation fields of a row: path, section
// and relative_path (section null and the whole path outside the
// sections).
func (s *Service) queryRowLocation(r *queryRow) (path string, section, rel any) {
	path = PresentationPath(s.logical, r.wb, r.path)
	sec, rest := SplitSection(r.path)
	if sec != "" {
		section = sec
	}
	if len(rest) > 0 {
		rel = LogicalPath(rest)
	}
	return path, section, rel
}

// Cursors are opaque to callers: base64url without padding of a small
// JSON document naming the operation (op) and the cursor version (v),
// followed by a 12-byte check, the first bytes of SHA-256 over a domain
// tag, the RootId and the document. Decoding is strict (canonical
// base64url, a valid check, a JSON document with only the cursor's own
// members), so a truncated, corrupted or edited token is "cursor is
// malformed" (InvalidState) rather than read as something else, and a
// token minted for another root never decodes. The check is not a keyed
// MAC; a forged token still has to match the caller's own query binding
// and the current fence.

const (
	queryCursorVersion  = 1
	queryCursorCheckLen = 12
	queryCursorCheckTag = "cairn.workbench.query-cursor.v1\x00"
)

func (s *Service) queryCursorCheck(doc []byte) []byte {
	h := sha256.New()
	h.Write([]byte(queryCursorCheckTag))
	h.Write(s.root[:])
	h.Write(doc)
	return h.Sum(nil)[:queryCursorCheckLen]
}

// encodeQueryCursor mints the token of cursor document v.
func (s *Service) encodeQueryCursor(v any) string {
	doc, err := json.Marshal(v)
	if err != nil {
		panic("workbench: encode cursor: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(append(doc, s.queryCursorCheck(doc)...))
}

// decodeQueryCursor checks a token minted for operation op and decodes its
// document into v: InvalidState "cursor is malformed" for anything that is
// not an intact token of this root, "cursor belongs to a different
// operation" for one of another operation.
func (s *Service) decodeQueryCursor(token, op string, v any) *Error {
	malformed := InvalidState("cursor is malformed")
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil || len(raw) <= queryCursorCheckLen {
		return malformed
	}
	doc, check := raw[:len(raw)-queryCursorCheckLen], raw[len(raw)-queryCursorCheckLen:]
	if !bytes.Equal(check, s.queryCursorCheck(doc)) {
		return malformed
	}
	var head struct {
		V  int    `json:"v"`
		Op string `json:"op"`
	}
	if json.Unmarshal(doc, &head) != nil || head.V != queryCursorVersion {
		return malformed
	}
	if head.Op != op {
		return InvalidState("cursor belongs to a different operation")
	}
	d := json.NewDecoder(bytes.NewReader(doc))
	d.DisallowUnknownFields()
	if d.Decode(v) != nil || d.More() {
		return malformed
	}
	return nil
}

// queryDigest is the hex SHA-256 of v's canonical result encoding.
func queryDigest(v any) string {
	b, err := MarshalResult(v)
	if err != nil {
		panic("workbench: digest: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// indexScalarKey is a scalar's order-preserving encoding as a map key.
func indexScalarKey(v IndexScalar) string {
	b, err := EncodeIndexScalar(v)
	if err != nil {
		// Stored and parsed scalars are valid; a float that is not finite
		// cannot reach here.
		panic("workbench: encode index scalar: " + err.Error())
	}
	return string(b)
}

// predicatesDigestForm is the predicates in a canonical form for digests.
func predicatesDigestForm(preds []queryPredicate) []any {
	out := make([]any, len(preds))
	for i, p := range preds {
		var vals []string
		switch p.op {
		case "exists", "not_exists":
			vals = []string{}
		case "in":
			vals = make([]string, len(p.values))
			for j, v := range p.values {
				vals[j] = hex.EncodeToString([]byte(indexScalarKey(v)))
			}
		default:
			vals = []string{hex.EncodeToString([]byte(indexScalarKey(p.value)))}
		}
		out[i] = map[string]any{"field": p.field, "op": p.op, "values": vals}
	}
	return out
}

func sortDigestForm(keys []querySort) []any {
	out := make([]any, len(keys))
	for i, k := range keys {
		out[i] = map[string]any{"field": k.field, "desc": k.desc}
	}
	return out
}
