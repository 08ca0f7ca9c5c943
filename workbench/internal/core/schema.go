package core

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
)

// inputSchemasJSON is the contract's frozen snapshot of the 18 tools' input
// schemas, kept byte for byte as published.
//
//go:embed schemas/input-schemas.json
var inputSchemasJSON []byte

// InputSchemasVersion is the schema marker of the embedded snapshot.
const InputSchemasVersion = "nokv.workbench.mcp_input_schemas.v1"

// ValidateInput checks a tool's raw JSON arguments against the tool's
// input schema before anything else sees them, and returns the decoded
// arguments. An unknown tool is UnknownTool. Anything else that fails is
// InvalidArguments with message "<tool>: <location>: <reason>" (for example
// "workbench_list: $.limit: number is below minimum") and no details:
//
//   - raw must be one JSON document the reference parser accepts (strict
//     syntax, UTF-8, no unpaired surrogate escapes, at most 127 levels,
//     numbers within float64 range, nothing but whitespace after it);
//     otherwise the reason is "$: arguments are not valid JSON". An object
//     key given twice keeps its last value.
//   - The schema is then checked with the reference validator's subset and
//     order: allOf, anyOf, oneOf, type, enum, required, properties with
//     additionalProperties:false (object members visited in key byte
//     order), items, then minLength/maxLength (counted in Unicode scalar
//     values), pattern (only ^sha256:[0-9a-f]{64}$), minimum/maximum
//     (compared as float64), maxItems and maxProperties. The first failure
//     is reported. "integer" is a number written without fraction or
//     exponent within [-2^63, 2^64), except "-0": 1.0, 1e2 and -0 are not
//     integers. Locations are "$", "$.field", "$.field[2]".
//
// Numbers in the result are json.Number holding the reference parser's
// canonical text: an integer as plain decimal, anything else with a '.' or
// an exponent ("1.0", "1e21"). Other values are string, bool, nil,
// []any and map[string]any.
func ValidateInput(tool string, raw []byte) (map[string]any, *Error) {
	obj, _, werr := validateInput(tool, raw)
	if werr != nil {
		return nil, werr
	}
	return obj, nil
}

// validateInput is ValidateInput returning the arguments both decoded and
// in canonical form, the text a tool decodes its typed input from.
func validateInput(tool string, raw []byte) (map[string]any, []byte, *Error) {
	t, ok := registry.lookup(tool)
	if !ok {
		return nil, nil, UnknownTool(tool)
	}
	s := t.schema
	canon, v, err := canonicalArguments(raw)
	if err != nil {
		return nil, nil, InvalidArguments(tool + ": $: arguments are not valid JSON")
	}
	if msg := s.validate(v, "$"); msg != "" {
		return nil, nil, InvalidArguments(tool + ": " + msg)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		// Every tool schema requires an object (Register refuses one
		// that does not); this is unreachable.
		return nil, nil, InvalidArguments(tool + ": $: has the wrong JSON type")
	}
	return obj, canon, nil
}

// DecodeArguments parses raw with the reference parser's rules (by way of
// its canonical form) into Go values with json.Number numbers.
func DecodeArguments(raw []byte) (any, error) {
	_, v, err := canonicalArguments(raw)
	return v, err
}

// canonicalArguments returns raw's canonical form by the reference
// parser's rules and its value as Go values with json.Number numbers,
// both from one parse: a tool input carrying a 90 MiB payload is scanned
// and its strings copied once less than by decoding the canonical form.
func canonicalArguments(raw []byte) ([]byte, any, error) {
	return manifests.CanonicalizeJSONValue(raw)
}

// The validator.

// contract is the embedded snapshot, compiled once.
var contract = mustLoadContract(inputSchemasJSON)

type toolContract struct {
	schemas map[string]*schemaNode
	raw     map[string][]byte // canonical JSON of each tool's schema
}

// schemaNode is one compiled schema object. Only the keywords the
// validator supports exist; loading fails on any other.
type schemaNode struct {
	allOf, anyOf, oneOf []*schemaNode
	types               []string // nil: no type keyword
	enum                []any
	hasEnum             bool
	required            []string
	properties          map[string]*schemaNode // nil: no properties keyword
	closed              bool                   // additionalProperties: false
	items               *schemaNode
	minLength           *uint64
	maxLength           *uint64
	pattern             string
	minimum             *float64
	maximum             *float64
	maxItems            *uint64
	maxProperties       *uint64
}

// digestPattern is the one pattern the validator supports.
const digestPattern = "^sha256:[0-9a-f]{64}$"

func mustLoadContract(b []byte) toolContract {
	c, err := loadContract(b)
	if err != nil {
		panic(err)
	}
	return c
}

func loadContract(b []byte) (toolContract, error) {
	v, err := DecodeArguments(b)
	if err != nil {
		return toolContract{}, fmt.Errorf("workbench: load input schemas: %w", err)
	}
	top, ok := v.(map[string]any)
	if !ok {
		return toolContract{}, fmt.Errorf("workbench: load input schemas: not an object")
	}
	if top["schema"] != InputSchemasVersion {
		return toolContract{}, fmt.Errorf("workbench: load input schemas: schema marker %v, want %s", top["schema"], InputSchemasVersion)
	}
	tools, ok := top["inputSchemas"].(map[string]any)
	if !ok {
		return toolContract{}, fmt.Errorf("workbench: load input schemas: inputSchemas is not an object")
	}
	if got := slices.Sorted(maps.Keys(tools)); !slices.Equal(got, slices.Sorted(slices.Values(contractToolNames()))) {
		return toolContract{}, fmt.Errorf("workbench: load input schemas: tools %v, want the 18 Workbench tools", got)
	}
	c := toolContract{schemas: map[string]*schemaNode{}, raw: map[string][]byte{}}
	for name, s := range tools {
		n, err := compileSchema(s, name)
		if err != nil {
			return toolContract{}, fmt.Errorf("workbench: load input schemas: %w", err)
		}
		raw, err := MarshalResult(s)
		if err != nil {
			return toolContract{}, fmt.Errorf("workbench: load input schemas: %s: %w", name, err)
		}
		c.schemas[name] = n
		c.raw[name] = raw
	}
	return c, nil
}

func compileSchema(v any, at string) (*schemaNode, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: schema is not an object", at)
	}
	n := &schemaNode{}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		val := obj[k]
		var err error
		switch k {
		case "allOf", "anyOf", "oneOf":
			var list []*schemaNode
			list, err = compileSchemaList(val, at+"."+k)
			switch k {
			case "allOf":
				n.allOf = list
			case "anyOf":
				n.anyOf = list
			default:
				n.oneOf = list
			}
		case "type":
			n.types, err = compileTypes(val, at)
		case "enum":
			list, ok := val.([]any)
			if !ok {
				err = fmt.Errorf("%s: enum is not an array", at)
			}
			n.enum, n.hasEnum = list, true
		case "required":
			list, ok := val.([]any)
			if !ok {
				err = fmt.Errorf("%s: required is not an array", at)
			}
			for _, f := range list {
				s, ok := f.(string)
				if !ok {
					err = fmt.Errorf("%s: required field is not a string", at)
					break
				}
				n.required = append(n.required, s)
			}
		case "properties":
			props, ok := val.(map[string]any)
			if !ok {
				err = fmt.Errorf("%s: properties is not an object", at)
				break
			}
			n.properties = map[string]*schemaNode{}
			for name, p := range props {
				if n.properties[name], err = compileSchema(p, at+"."+name); err != nil {
					break
				}
			}
		case "additionalProperties":
			if val != false {
				err = fmt.Errorf("%s: only additionalProperties false is supported", at)
			}
			n.closed = true
		case "items":
			n.items, err = compileSchema(val, at+"[]")
		case "minLength":
			n.minLength, err = schemaCount(val, at, k)
		case "maxLength":
			n.maxLength, err = schemaCount(val, at, k)
		case "maxItems":
			n.maxItems, err = schemaCount(val, at, k)
		case "maxProperties":
			n.maxProperties, err = schemaCount(val, at, k)
		case "minimum":
			n.minimum, err = schemaBound(val, at, k)
		case "maximum":
			n.maximum, err = schemaBound(val, at, k)
		case "pattern":
			if val != digestPattern {
				err = fmt.Errorf("%s: unsupported pattern %v", at, val)
			}
			n.pattern = digestPattern
		default:
			err = fmt.Errorf("%s: unsupported keyword %q", at, k)
		}
		if err != nil {
			return nil, err
		}
	}
	return n, nil
}

func compileSchemaList(v any, at string) ([]*schemaNode, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s: not an array", at)
	}
	out := make([]*schemaNode, len(list))
	for i, s := range list {
		var err error
		if out[i], err = compileSchema(s, fmt.Sprintf("%s[%d]", at, i)); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func compileTypes(v any, at string) ([]string, error) {
	var names []any
	switch t := v.(type) {
	case string:
		names = []any{t}
	case []any:
		names = t
	default:
		return nil, fmt.Errorf("%s: type is neither a string nor an array", at)
	}
	out := make([]string, 0, len(names))
	for _, t := range names {
		switch t {
		case "null", "boolean", "object", "array", "string", "number", "integer":
			out = append(out, t.(string))
		default:
			return nil, fmt.Errorf("%s: unsupported type %v", at, t)
		}
	}
	return out, nil
}

func schemaCount(v any, at, k string) (*uint64, error) {
	if n, ok := v.(json.Number); ok {
		if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
			return &u, nil
		}
	}
	return nil, fmt.Errorf("%s: %s is not a non-negative integer", at, k)
}

func schemaBound(v any, at, k string) (*float64, error) {
	if n, ok := v.(json.Number); ok {
		if f, ok := numberFloat(n); ok {
			return &f, nil
		}
	}
	return nil, fmt.Errorf("%s: %s is not a number", at, k)
}

// validate returns "" if v satisfies n, else the reference validator's
// message for the first failure, prefixed with its location.
func (n *schemaNode) validate(v any, at string) string {
	for _, s := range n.allOf {
		if msg := s.validate(v, at); msg != "" {
			return msg
		}
	}
	if n.anyOf != nil {
		if !slices.ContainsFunc(n.anyOf, func(s *schemaNode) bool { return s.validate(v, at) == "" }) {
			return at + ": does not match any accepted shape"
		}
	}
	if n.oneOf != nil {
		matched := 0
		for _, s := range n.oneOf {
			if s.validate(v, at) == "" {
				matched++
			}
		}
		if matched != 1 {
			return fmt.Sprintf("%s: must match exactly one accepted shape, matched %d", at, matched)
		}
	}
	if n.types != nil && !slices.ContainsFunc(n.types, func(t string) bool { return hasJSONType(v, t) }) {
		return at + ": has the wrong JSON type"
	}
	if n.hasEnum && !slices.ContainsFunc(n.enum, func(e any) bool { return jsonEqual(e, v) }) {
		return at + ": value is outside the accepted enum"
	}
	obj, isObj := v.(map[string]any)
	if n.required != nil {
		if !isObj {
			return at + ": required fields need an object"
		}
		for _, f := range n.required {
			if _, ok := obj[f]; !ok {
				return at + ": missing required field " + f
			}
		}
	}
	if n.properties != nil && isObj {
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			if p, ok := n.properties[k]; ok {
				if msg := p.validate(obj[k], at+"."+k); msg != "" {
					return msg
				}
			} else if n.closed {
				return at + ": unknown field " + k
			}
		}
	}
	arr, isArr := v.([]any)
	if n.items != nil && isArr {
		for i, e := range arr {
			if msg := n.items.validate(e, fmt.Sprintf("%s[%d]", at, i)); msg != "" {
				return msg
			}
		}
	}
	return n.validateBounds(v, at)
}

func (n *schemaNode) validateBounds(v any, at string) string {
	switch x := v.(type) {
	case string:
		count := uint64(utf8.RuneCountInString(x))
		if n.minLength != nil && count < *n.minLength {
			return at + ": string is shorter than minLength"
		}
		if n.maxLength != nil && count > *n.maxLength {
			return at + ": string is longer than maxLength"
		}
		if n.pattern != "" && !digest.ValidURI(x) {
			return at + ": string does not match required pattern"
		}
	case json.Number:
		f, _ := numberFloat(x)
		if n.minimum != nil && f < *n.minimum {
			return at + ": number is below minimum"
		}
		if n.maximum != nil && f > *n.maximum {
			return at + ": number is above maximum"
		}
	case []any:
		if n.maxItems != nil && uint64(len(x)) > *n.maxItems {
			return at + ": array exceeds maxItems"
		}
	case map[string]any:
		if n.maxProperties != nil && uint64(len(x)) > *n.maxProperties {
			return at + ": object exceeds maxProperties"
		}
	}
	return ""
}

// isInteger reports whether a canonical number is an integer in the
// reference's sense: canonical text prints integers in [-2^63, 2^64) as
// plain decimal and every other number with a '.' or an exponent.
func isInteger(n json.Number) bool {
	return !strings.ContainsAny(string(n), ".eE")
}

// numberFloat returns a canonical number as float64, as the reference's
// as_f64 does (integers convert with rounding to nearest; float text is the
// shortest form of the reference's float and reads back exactly).
func numberFloat(n json.Number) (float64, bool) {
	s := string(n)
	if isInteger(n) {
		if strings.HasPrefix(s, "-") {
			i, err := strconv.ParseInt(s, 10, 64)
			return float64(i), err == nil
		}
		u, err := strconv.ParseUint(s, 10, 64)
		return float64(u), err == nil
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func hasJSONType(v any, t string) bool {
	switch t {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		return ok && isInteger(n)
	}
	return false
}

// jsonEqual is JSON value equality as the reference defines it: numbers
// are equal when both are integers with the same value or both are floats
// with the same value; an integer never equals a float.
func jsonEqual(a, b any) bool {
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool, string:
		return a == b
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || isInteger(x) != isInteger(y) {
			return false
		}
		if isInteger(x) {
			return x == y
		}
		fx, _ := numberFloat(x)
		fy, _ := numberFloat(y)
		return fx == fy
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && maps.EqualFunc(x, y, jsonEqual)
	}
	return false
}
