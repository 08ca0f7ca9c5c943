package reads

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/workbench/internal/nokv"

	"go.yaml.in/yaml/v3"
)

func init() {
	core.RegisterTool("workbench_read", readTool)
}

// Read limits.
const (
	// defaultReadLimit is the page size, in records or bytes, when the
	// caller gives none.
	defaultReadLimit = 100
)

// Record types of a structured read.
const (
	recordJSONArray  = "json_array"
	recordJSONObject = "json_object"
	recordYAML       = "yaml_mapping"
	recordTextLines  = "text_lines"
)

// readInput is workbench_read's input.
type readInput struct {
	ID          string         `json:"id"`
	Section     string         `json:"section"`
	Path        string         `json:"path"`
	AtSnapshot  core.JSONValue `json:"at_snapshot"` // as scopeInput.AtSnapshot
	Format      *string        `json:"format"`
	Limit       *uint64        `json:"limit"`
	Offset      uint64         `json:"offset"`
	Cursor      *string        `json:"cursor"`
	IfNoneMatch *uint64        `json:"if_none_match"`

	scope  core.ReadScope
	format string // "structured" (the default) or "bytes"
	limit  uint64 // Limit or defaultReadLimit
	start  uint64 // the page's first record or byte: offset or cursor
	core.JoinedPath
	// pageErr is what is wrong with offset and cursor, held back until
	// the body is found and its size checked (and after the not-modified
	// check), as the reference checks them when it slices the body.
	pageErr *core.Error
}

// ReadInput is workbench_read's input.
type ReadInput struct {
	ID      string `json:"id"`
	Section string `json:"section"` // one of the five sections
	Path    string `json:"path"`    // the file's path below Section
	// AtSnapshot selects a snapshot by id (a non-negative integer) or by
	// name (a non-empty string); nil reads the live workbench.
	AtSnapshot any `json:"at_snapshot,omitempty"`
	// Format is "structured" (records) or "bytes" (a base64 byte range);
	// nil is "structured".
	Format *string `json:"format,omitempty"`
	// Limit counts records, or bytes for a bytes read, 1 to 300; nil is
	// 100.
	Limit *uint64 `json:"limit,omitempty"`
	// Offset is a bytes read's first byte; 0 is the start.
	Offset uint64 `json:"offset,omitempty"`
	// Cursor continues from a page's NextCursor ("r:<n>" or "b:<n>").
	Cursor *string `json:"cursor,omitempty"`
	// IfNoneMatch is a generation: when the file's equals it, the result
	// says NotModified and carries no page.
	IfNoneMatch *uint64 `json:"if_none_match,omitempty"`
}

// ReadResult is workbench_read's result: the file's generation and
// either NotModified or one page of its body.
type ReadResult struct {
	core.Success
	core.ScopeHeader
	// AtSnapshot echoes the request's snapshot selector, a json.Number
	// id or a string name; nil (absent from the JSON) for a live read.
	AtSnapshot any    `json:"at_snapshot,omitempty"`
	Generation uint64 `json:"generation"`
	// NotModified is true when the generation matched IfNoneMatch; the
	// JSON has the member only then.
	NotModified bool `json:"not_modified,omitempty"`
	// ReadPage is the page read, nil when NotModified.
	*ReadPage
}

// ReadPage is one page of a file's body. A structured page has
// RecordType, RecordCount and Items; a bytes page has Bytes and
// BytesEncoding, and no items.
type ReadPage struct {
	TotalSizeBytes uint64 `json:"total_size_bytes"`
	Format         string `json:"format"` // "structured" or "bytes"
	// RecordType is "json_array", "json_object", "yaml_mapping" or
	// "text_lines"; nil for bytes.
	RecordType  *string `json:"record_type"`
	RecordCount *uint64 `json:"record_count"` // every record; nil for bytes
	// Cursor echoes the request's cursor, nil when none was given.
	Cursor *string    `json:"cursor"`
	Items  []ReadItem `json:"items"`
	// Bytes is the byte range in standard padded base64; nil for
	// structured.
	Bytes         *string `json:"bytes"`
	BytesEncoding *string `json:"bytes_encoding"` // "base64"; nil for structured
	// NextCursor continues the read; nil when this page ends the body.
	NextCursor *string `json:"next_cursor"`
	// Truncated says that more follows (NextCursor is set).
	Truncated bool `json:"truncated"`
}

// ReadItem is one record of a structured page.
type ReadItem struct {
	Index uint64 `json:"index"` // the record's position in the whole body
	// Value is the record as a decoded JSON value (nil, bool,
	// json.Number, float64, string, []any or map[string]any).
	Value any `json:"value"`
}

func (in *readInput) Resolve(*core.Service) *core.Error {
	id, werr := core.ParseWorkbenchID(in.ID)
	if werr != nil {
		return werr
	}
	if in.Path == "" {
		return core.InvalidArguments("path is required")
	}
	comps, werr := in.Take(core.JoinSection(in.Section, in.Path))
	if werr != nil {
		return werr
	}
	if werr := core.CheckAtSnapshot(in.AtSnapshot.V); werr != nil {
		return werr
	}
	in.scope = core.ReadScope{ID: id, Comps: comps, Section: in.Section, Rel: in.Path, At: in.AtSnapshot.V}
	in.format = "structured"
	if in.Format != nil {
		in.format = *in.Format
	}
	in.limit = defaultReadLimit
	if in.Limit != nil {
		in.limit = *in.Limit
	}
	if in.limit == 0 {
		return core.InvalidArguments("limit must be positive")
	}
	in.pageErr = in.resolvePage()
	return nil
}

// resolvePage checks offset and cursor against the format and sets start.
func (in *readInput) resolvePage() *core.Error {
	var werr *core.Error
	switch in.format {
	case "structured":
		if in.Offset != 0 {
			return core.InvalidArguments("offset is supported only for bytes reads")
		}
		if in.Cursor != nil {
			if in.start, werr = core.ParseReadCursor(*in.Cursor, "r"); werr != nil {
				return werr
			}
		}
	case "bytes":
		in.start = in.Offset
		if in.Cursor != nil {
			if in.Offset != 0 {
				return core.InvalidArguments("offset and cursor cannot both be given")
			}
			if in.start, werr = core.ParseReadCursor(*in.Cursor, "b"); werr != nil {
				return werr
			}
		}
	default:
		return core.InvalidArgumentsf("unknown read format %s", in.format)
	}
	return nil
}

// readTool serves workbench_read: one page of an artifact's body, shaped as
// records (format "structured", the default) or as a base64 byte range
// (format "bytes"). A structured read fetches and checks the whole body;
// a bytes read fetches only the blocks that hold its range (bodyRange),
// each checked against its manifest row. The size limit applies to small
// ranges too, from the stored size, as the reference's backend checks it.
//
// The path is checked before anything is read: it must be non-empty
// ("path is required"). The page's arguments are checked once the body
// is found and its size checked, as the reference checks them when it
// slices the fetched body: offset other than 0 is for bytes reads only; a
// bytes read takes a non-zero offset or a cursor, not both; cursors are
// "r:<n>" (structured) or "b:<n>" (bytes), see parseReadCursor. limit
// counts records, or bytes for a bytes read (default 100).
//
// if_none_match short-circuits: when the path is an artifact whose
// generation equals it, the result is only the header, not_modified true
// and the generation, and no body is fetched. That check comes first: an
// offset or cursor the page would refuse does not stop a not-modified
// answer. Otherwise the read proceeds as if it were not given.
//
// A path that is not an artifact (missing, a directory or a section), or
// a workbench that does not exist, is NotFound with the logical path,
// whatever the offset or cursor. A body larger than the Service's
// MaxBytes is then ResourceExhausted before any block is fetched (the
// stored size is known), so PayloadTooLarge, the reference tool layer's
// check of a fetched body, never arises here. A record cursor past the
// record count, or a byte offset past the size, is InvalidArguments; one
// exactly at the end gives an empty page. The
// result has the same members in both formats: items is [] and
// record_type and record_count are null for bytes; bytes and
// bytes_encoding are null for structured; at_snapshot only when given.
func readTool(ctx context.Context, s *core.Service, in *readInput) (*ReadResult, *core.Error) {
	sc, format, limit, start := in.scope, in.format, in.limit, in.start
	v, e, werr := openFile(ctx, s, sc)
	if werr != nil {
		return nil, werr
	}
	res := &ReadResult{ScopeHeader: s.Header(sc), AtSnapshot: sc.At, Generation: e.Generation}
	if in.IfNoneMatch != nil && e.Generation == *in.IfNoneMatch {
		res.NotModified = true
		return res, nil
	}
	if int64(e.LogicalSize) > s.Opts.MaxBytes {
		return nil, core.ArtifactTooLarge(e.LogicalSize, s.Opts.MaxBytes)
	}
	if in.pageErr != nil {
		return nil, in.pageErr
	}
	page := &ReadPage{TotalSizeBytes: e.LogicalSize, Format: format, Cursor: in.Cursor}
	var next string
	if format == "bytes" {
		size := e.LogicalSize
		if start > size {
			return nil, core.InvalidArguments("byte offset is past the end of the artifact")
		}
		end := start + min(limit, size-start)
		body, werr := v.BodyRange(ctx, e, start, end)
		if werr != nil {
			return nil, werr
		}
		if end < size {
			next = core.ReadCursor("b", end)
		}
		encoded, encoding := base64.StdEncoding.EncodeToString(body), "base64"
		page.Items = []ReadItem{}
		page.Bytes, page.BytesEncoding = &encoded, &encoding
	} else {
		release, werr := s.HoldRead(ctx, e.LogicalSize)
		if werr != nil {
			return nil, werr
		}
		defer release()
		body, werr := v.Body(ctx, e)
		if werr != nil {
			return nil, werr
		}
		recordType, records, werr := StructuredRecords(sc.Logical(), e.ContentType, body)
		if werr != nil {
			return nil, werr
		}
		count := uint64(len(records))
		if start > count {
			return nil, core.InvalidArguments("cursor is past the end of the records")
		}
		end := start + min(limit, count-start)
		if end < count {
			next = core.ReadCursor("r", end)
		}
		page.Items = make([]ReadItem, 0, end-start)
		for i := start; i < end; i++ {
			page.Items = append(page.Items, ReadItem{Index: i, Value: records[i]})
		}
		page.RecordType, page.RecordCount = &recordType, &count
	}
	if next != "" {
		page.NextCursor, page.Truncated = &next, true
	}
	res.ReadPage = page
	return res, nil
}

// openFile opens a view of sc and reads its file's entry: NotFound when
// there is none.
func openFile(ctx context.Context, s *core.Service, sc core.ReadScope) (*core.View, nokv.PathEntry, *core.Error) {
	v, werr := s.OpenScopeView(ctx, sc, core.EntryReads(sc.Comps, nokv.FamilyArtifactManifest))
	if werr != nil {
		return nil, nokv.PathEntry{}, werr
	}
	e, ok, werr := v.Entry(ctx, sc.Comps)
	if werr != nil {
		return nil, nokv.PathEntry{}, werr
	}
	if !ok {
		return nil, nokv.PathEntry{}, core.NotFound(sc.Logical())
	}
	return v, e, nil
}

// StructuredRecords shapes a body into records. Classification looks at
// the lower-cased content type and the lower-cased logical path:
//
//  1. a content type containing "json" or a path ending ".json": one JSON
//     document (the reference parser's rules, as tool input); an array is
//     json_array with a record per element, anything else json_object
//     with one record;
//  2. else a content type containing "yaml" or a path ending ".yaml" or
//     ".yml": one YAML document (decodeYAML); a sequence gives a record
//     per element, anything else one record, yaml_mapping either way;
//  3. else text_lines: the body must be UTF-8 (InvalidUtf8 otherwise) and
//     each line is a record (textLines).
//
// A JSON or YAML body that does not parse is StructuredDecodeFailed with
// the logical path and the format.
func StructuredRecords(logical, contentType string, body []byte) (string, []any, *core.Error) {
	ct := strings.ToLower(contentType)
	p := strings.ToLower(logical)
	switch {
	case strings.Contains(ct, "json") || strings.HasSuffix(p, ".json"):
		doc, err := core.DecodeArguments(body)
		if err != nil {
			return "", nil, core.StructuredDecodeFailed(logical, "json", err)
		}
		if arr, ok := doc.([]any); ok {
			return recordJSONArray, arr, nil
		}
		return recordJSONObject, []any{doc}, nil
	case strings.Contains(ct, "yaml") || strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml"):
		doc, err := decodeYAML(body)
		if err != nil {
			return "", nil, core.StructuredDecodeFailed(logical, "yaml", err)
		}
		if arr, ok := doc.([]any); ok {
			return recordYAML, arr, nil
		}
		return recordYAML, []any{doc}, nil
	}
	if !utf8.Valid(body) {
		return "", nil, core.StructuredTextNotUTF8(logical)
	}
	return recordTextLines, textLines(string(body)), nil
}

// textLines splits text as Rust's str::lines does: at each "\n", dropping
// one "\r" right before it; a final line ending adds no empty line, an
// empty text has no lines, and a lone "\r" at the very end (no "\n"
// after it) stays part of the last line.
func textLines(s string) []any {
	out := []any{}
	for s != "" {
		line, rest, found := strings.Cut(s, "\n")
		if found {
			line = strings.TrimSuffix(line, "\r")
		}
		out = append(out, line)
		s = rest
	}
	return out
}

// YAML.
//
// decodeYAML reads a structured YAML body into the values a JSON document
// would give (nil, bool, json.Number, float64, string, []any,
// map[string]any), following the YAML 1.2 core schema as the reference
// implementation's YAML reader resolves it. The parser is go.yaml.in/yaml/v3;
// scalar resolution is done here, not by that library's YAML 1.1-leaning
// resolver:
//
//   - exactly one document; an empty body is one null record; a second
//     document is an error;
//   - quoted and block scalars, and scalars tagged !!str, are strings
//     (the parser drops a bare "!" tag, so "! 4" reads as plain 4);
//   - plain scalars: "", "~", null, Null, NULL are null; true/True/TRUE
//     and false/False/FALSE are booleans; integers are decimal with an
//     optional sign, or 0x/0o/0b with an optional sign, within 64 bits,
//     where a decimal with a leading zero ("0123") is a string; floats are
//     decimal with optional fraction and exponent, finite, and .inf,
//     -.inf, .nan in their three spellings (an infinite or NaN float
//     becomes null, as JSON has no such number); an integer too large for
//     64 bits reads as a float; anything else is a string, timestamps
//     included;
//   - explicit tags !!null, !!bool, !!int, !!float, !!str, !!seq and !!map
//     are honoured; any other tag is an error;
//   - mapping keys are the text of scalar keys (so `1: x` has key "1"); a
//     collection as a key is an error; a repeated key keeps its last
//     value; "<<" is an ordinary key (no merge);
//   - aliases are expanded, within bounds on what the expansion may
//     produce, so that a small body cannot expand without limit ("billion
//     laughs"): nesting depth (128), nodes produced (1,000,000), nodes
//     produced through aliases (100,000), and bytes of scalar and key
//     text produced (the body's own size or 16 MiB, whichever is more; a
//     body without aliases never produces more text than it holds). A
//     body past a bound is StructuredDecodeFailed, never a result of
//     unbounded size.
func decodeYAML(body []byte) (any, error) {
	dec := yaml.NewDecoder(bytes.NewReader(body))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, errors.New("a YAML body must hold exactly one document")
	}
	c := &yamlConverter{nodes: yamlMaxNodes, aliasNodes: yamlMaxAliasNodes, bytes: max(len(body), yamlMaxBytes)}
	return c.value(&doc, 0)
}

const (
	yamlMaxDepth      = 128
	yamlMaxNodes      = 1_000_000
	yamlMaxAliasNodes = 100_000
	yamlMaxBytes      = 16 << 20
)

// yamlConverter turns nodes into values within what is left of its
// budgets: nodes, nodes reached through an alias, and bytes of scalar and
// key text.
type yamlConverter struct {
	nodes, aliasNodes, bytes int
	// inAlias counts the aliases being expanded on the current path.
	inAlias int
}

// spend charges one node and text bytes of scalar or key text.
func (c *yamlConverter) spend(text int) error {
	if c.nodes--; c.nodes < 0 {
		return fmt.Errorf("YAML expands to more than %d nodes", yamlMaxNodes)
	}
	if c.inAlias > 0 {
		if c.aliasNodes--; c.aliasNodes < 0 {
			return fmt.Errorf("YAML aliases expand to more than %d nodes", yamlMaxAliasNodes)
		}
	}
	if c.bytes -= text; c.bytes < 0 {
		return errors.New("YAML expands to more text than the body's size or 16 MiB")
	}
	return nil
}

func (c *yamlConverter) value(n *yaml.Node, depth int) (any, error) {
	if depth > yamlMaxDepth {
		return nil, fmt.Errorf("YAML nesting deeper than %d levels", yamlMaxDepth)
	}
	text := 0
	if n.Kind == yaml.ScalarNode {
		text = len(n.Value)
	}
	if err := c.spend(text); err != nil {
		return nil, err
	}
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			return nil, nil
		}
		return c.value(n.Content[0], depth)
	case yaml.AliasNode:
		if n.Alias == nil {
			return nil, fmt.Errorf("line %d: unknown YAML alias", n.Line)
		}
		c.inAlias++
		v, err := c.value(n.Alias, depth+1)
		c.inAlias--
		return v, err
	case yaml.SequenceNode:
		if err := yamlCheckTag(n, "!!seq"); err != nil {
			return nil, err
		}
		out := make([]any, 0, len(n.Content))
		for _, e := range n.Content {
			v, err := c.value(e, depth+1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		return out, nil
	case yaml.MappingNode:
		if err := yamlCheckTag(n, "!!map"); err != nil {
			return nil, err
		}
		out := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, err := yamlKey(n.Content[i])
			if err != nil {
				return nil, err
			}
			if err := c.spend(len(k)); err != nil {
				return nil, err
			}
			v, err := c.value(n.Content[i+1], depth+1)
			if err != nil {
				return nil, err
			}
			out[k] = v
		}
		return out, nil
	case yaml.ScalarNode:
		return yamlScalar(n)
	}
	return nil, fmt.Errorf("line %d: unexpected YAML node", n.Line)
}

// yamlExplicitTag returns the node's explicit tag in short form, or "".
func yamlExplicitTag(n *yaml.Node) string {
	if n.Style&yaml.TaggedStyle == 0 {
		return ""
	}
	t := n.Tag
	if rest, ok := strings.CutPrefix(t, "tag:yaml.org,2002:"); ok {
		t = "!!" + rest
	}
	return t
}

func yamlCheckTag(n *yaml.Node, want string) error {
	if t := yamlExplicitTag(n); t != "" && t != want && t != "!" {
		return fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, t)
	}
	return nil
}

// yamlKey returns a mapping key's text.
func yamlKey(n *yaml.Node) (string, error) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind != yaml.ScalarNode {
		return "", fmt.Errorf("line %d: a YAML mapping key must be a scalar", n.Line)
	}
	return n.Value, nil
}

// yamlScalar resolves one scalar.
func yamlScalar(n *yaml.Node) (any, error) {
	tag := yamlExplicitTag(n)
	quoted := n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0
	switch {
	case tag == "!!str" || tag == "!" || (tag == "" && quoted):
		return n.Value, nil
	case tag == "":
		return resolvePlainYAML(n.Value), nil
	}
	v := resolvePlainYAML(n.Value)
	ok := false
	switch tag {
	case "!!null":
		ok = v == nil
	case "!!bool":
		_, ok = v.(bool)
	case "!!int":
		_, ok = v.(json.Number)
	case "!!float":
		switch x := v.(type) {
		case json.Number:
			ok = true
			if f, err := strconv.ParseFloat(string(x), 64); err == nil {
				v = f
			}
		case float64:
			ok = true
		case nil:
			ok = isNonFiniteYAML(n.Value)
		}
	default:
		return nil, fmt.Errorf("line %d: unsupported YAML tag %s", n.Line, tag)
	}
	if !ok {
		return nil, fmt.Errorf("line %d: %q is not a valid %s", n.Line, n.Value, tag)
	}
	return v, nil
}

func isNonFiniteYAML(s string) bool {
	switch s {
	case ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", ".nan", ".NaN", ".NAN":
		return true
	}
	return false
}

// resolvePlainYAML resolves a plain scalar by the core schema (see
// decodeYAML): nil, a bool, an integer as a json.Number, a float64, or
// the string itself.
func resolvePlainYAML(s string) any {
	switch s {
	case "", "~", "null", "Null", "NULL":
		return nil
	case "true", "True", "TRUE":
		return true
	case "false", "False", "FALSE":
		return false
	}
	if isNonFiniteYAML(s) {
		return nil
	}
	if n, ok := yamlInt(s); ok {
		return n
	}
	if yamlLeadingZero(s) {
		return s
	}
	if yamlFloatSyntax(s) {
		f, err := strconv.ParseFloat(s, 64)
		if err == nil && !math.IsInf(f, 0) {
			return f
		}
	}
	return s
}

// yamlInt parses a core-schema integer within 64 bits.
func yamlInt(s string) (json.Number, bool) {
	neg := false
	body := s
	switch {
	case strings.HasPrefix(body, "+"):
		body = body[1:]
	case strings.HasPrefix(body, "-"):
		neg, body = true, body[1:]
	}
	base := 10
	for _, p := range []struct {
		prefix string
		base   int
	}{{"0x", 16}, {"0o", 8}, {"0b", 2}} {
		if rest, ok := strings.CutPrefix(body, p.prefix); ok {
			body, base = rest, p.base
			break
		}
	}
	if body == "" || strings.ContainsAny(body, "+-_") {
		return "", false
	}
	if base == 10 && yamlLeadingZero(s) {
		return "", false
	}
	u, err := strconv.ParseUint(body, base, 64)
	if err != nil {
		return "", false
	}
	if !neg {
		return json.Number(strconv.FormatUint(u, 10)), true
	}
	if u > 1<<63 {
		return "", false
	}
	return json.Number(strconv.FormatInt(int64(-u), 10)), true
}

// yamlLeadingZero reports a decimal with a leading zero ("0123", "-007"),
// which the core schema reads as a string.
func yamlLeadingZero(s string) bool {
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if len(s) < 2 || s[0] != '0' {
		return false
	}
	for i := 1; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// yamlFloatSyntax reports whether s is [+-]?(digits[.digits?]|.digits)
// with an optional exponent.
func yamlFloatSyntax(s string) bool {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	n := digits()
	if i < len(s) && s[i] == '.' {
		i++
		n += digits()
	}
	if n == 0 {
		return false
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
