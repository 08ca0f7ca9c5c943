package core

import (
	"encoding"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cairnstore/cairn/manifests"
)

// Result encoding: the one canonical JSON form every tool result, error
// envelope and schema is printed in.

// MarshalResult encodes a result or envelope as the reference prints it
// (Rust serde_json without preserve_order): compact, object keys sorted by
// their bytes at every level, strings escaping only '"', '\' and control
// characters (\b \f \n \r \t, others \u00xx), everything else raw UTF-8
// including '<', '>', '&', U+2028 and U+2029.
//
// Values: nil (an untyped nil or nil pointer) is null; bool, string, all
// integer types; float32 and float64 print as the reference prints floats
// ("2.0", "0.1", "1e21"; NaN and infinities are an error); json.Number and
// json.RawMessage keep their value, canonicalized by the reference parser's
// rules; maps with string keys and slices or arrays of any of these
// (a nil slice is [] and a nil map {}, so an empty list never becomes
// null); []byte is a base64 string, as encoding/json does; *Error is its
// envelope; a struct is an object of its exported fields, named and
// omitted as encoding/json would (tags, omitempty, "-", embedded structs
// flattened), its keys sorted like a map's, so a typed result and the map
// of the same members print the same bytes. Anything else goes through
// encoding/json first. Invalid UTF-8 in a string is replaced by U+FFFD.
func MarshalResult(v any) ([]byte, error) {
	return appendResult(nil, reflect.ValueOf(v), 0)
}

// MarshalResultIndent encodes like MarshalResult and lays the result out
// as the reference's pretty printer does (serde_json to_string_pretty):
// two-space indentation, ": " after keys, and empty objects and arrays as
// {} and []. It is the text an MCP tool result carries.
func MarshalResultIndent(v any) ([]byte, error) {
	b, err := MarshalResult(v)
	if err != nil {
		return nil, err
	}
	return indentCanonical(b), nil
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	numberType        = reflect.TypeFor[json.Number]()
	rawMessageType    = reflect.TypeFor[json.RawMessage]()
	errorPtrType      = reflect.TypeFor[*Error]()
)

// maxResultDepth bounds nesting so that a cyclic value fails instead of
// overflowing the stack. The reference parser accepts 127 levels.
const maxResultDepth = 256

func appendResult(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	if depth > maxResultDepth {
		return nil, fmt.Errorf("workbench: marshal result: nesting deeper than %d levels", maxResultDepth)
	}
	if !v.IsValid() {
		return append(dst, "null"...), nil
	}
	t := v.Type()
	switch t {
	case numberType:
		return appendCanonicalRaw(dst, []byte(v.String()), "number")
	case rawMessageType:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendCanonicalRaw(dst, v.Bytes(), "raw message")
	case errorPtrType:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		return appendResult(dst, reflect.ValueOf(v.Interface().(*Error).Envelope()), depth+1)
	}
	switch t.Kind() {
	case reflect.Interface, reflect.Pointer:
		if v.IsNil() {
			return append(dst, "null"...), nil
		}
		if t.Kind() == reflect.Pointer && (t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType)) {
			return appendViaJSON(dst, v)
		}
		return appendResult(dst, v.Elem(), depth+1)
	}
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) {
		return appendViaJSON(dst, v)
	}
	switch t.Kind() {
	case reflect.Bool:
		return strconv.AppendBool(dst, v.Bool()), nil
	case reflect.String:
		return appendResultString(dst, v.String()), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.AppendInt(dst, v.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		f := v.Float()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("workbench: marshal result: %v is not a JSON number", f)
		}
		if t.Kind() == reflect.Float32 {
			// The shortest text of the float32, read as a float64, as
			// serde_json prints f32.
			f, _ = strconv.ParseFloat(strconv.FormatFloat(f, 'g', -1, 32), 64)
		}
		return appendResultFloat(dst, f), nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return appendViaJSON(dst, v)
		}
		keys := make([]string, 0, v.Len())
		vals := make(map[string]reflect.Value, v.Len())
		for it := v.MapRange(); it.Next(); {
			k := it.Key().String()
			keys = append(keys, k)
			vals[k] = it.Value()
		}
		slices.Sort(keys)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendResultString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = appendResult(dst, vals[k], depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case reflect.Struct:
		return appendStruct(dst, v, depth)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Kind() == reflect.Slice {
			return appendResultString(dst, base64.StdEncoding.EncodeToString(v.Bytes())), nil
		}
		dst = append(dst, '[')
		for i := range v.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendResult(dst, v.Index(i), depth+1); err != nil {
				return nil, err
			}
		}
		return append(dst, ']'), nil
	}
	return appendViaJSON(dst, v)
}

// appendStruct writes struct v as an object of its fields (structFields),
// in key order.
func appendStruct(dst []byte, v reflect.Value, depth int) ([]byte, error) {
	dst = append(dst, '{')
	n := 0
	for _, f := range structFields(v.Type()) {
		fv, ok := fieldByIndex(v, f.index)
		if !ok || (f.omitEmpty && omitted(fv)) {
			continue
		}
		if n > 0 {
			dst = append(dst, ',')
		}
		n++
		dst = appendResultString(dst, f.name)
		dst = append(dst, ':')
		var err error
		if dst, err = appendResult(dst, fv, depth+1); err != nil {
			return nil, err
		}
	}
	return append(dst, '}'), nil
}

// omitted reports whether omitempty leaves v out, as encoding/json
// decides: false, 0, a nil pointer or interface, an empty array, map,
// slice or string (never a struct).
func omitted(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() == 0
	case reflect.Bool:
		return !v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() == 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() == 0
	case reflect.Float32, reflect.Float64:
		return v.Float() == 0
	case reflect.Interface, reflect.Pointer:
		return v.IsNil()
	}
	return false
}

// fieldByIndex is v.FieldByIndex that reports false, rather than
// panicking, when it passes through a nil embedded pointer.
func fieldByIndex(v reflect.Value, index []int) (reflect.Value, bool) {
	for i, x := range index {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, true
}

// resultField is one member a struct type prints.
type resultField struct {
	name      string
	index     []int
	omitEmpty bool
}

var structFieldCache sync.Map // reflect.Type → []resultField

// structFields lists the members struct type t prints, sorted by name:
// each exported field under its json tag's name (or its own), without
// those tagged "-"; the fields of an untagged embedded struct are
// promoted, a shallower field winning over a deeper one of the same name
// (two at the same depth cancel, as in encoding/json).
func structFields(t reflect.Type) []resultField {
	if fs, ok := structFieldCache.Load(t); ok {
		return fs.([]resultField)
	}
	type candidate struct {
		resultField
		depth  int
		tagged bool
	}
	byName := map[string][]candidate{}
	var walk func(t reflect.Type, index []int, depth int)
	walk = func(t reflect.Type, index []int, depth int) {
		for i := range t.NumField() {
			sf := t.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(index), i)
			ft := sf.Type
			if sf.Anonymous && name == "" {
				if ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if ft.Kind() == reflect.Struct {
					walk(ft, idx, depth+1)
					continue
				}
			}
			if !sf.IsExported() {
				continue
			}
			tagged := name != ""
			if name == "" {
				name = sf.Name
			}
			byName[name] = append(byName[name], candidate{resultField{name, idx, strings.Contains(","+opts+",", ",omitempty,")}, depth, tagged})
		}
	}
	walk(t, nil, 0)
	var out []resultField
	for _, cs := range byName {
		slices.SortFunc(cs, func(a, b candidate) int {
			if a.depth != b.depth {
				return a.depth - b.depth
			}
			if a.tagged != b.tagged {
				if a.tagged {
					return -1
				}
				return 1
			}
			return 0
		})
		if len(cs) > 1 && cs[0].depth == cs[1].depth && cs[0].tagged == cs[1].tagged {
			continue // ambiguous: encoding/json drops it
		}
		out = append(out, cs[0].resultField)
	}
	slices.SortFunc(out, func(a, b resultField) int { return strings.Compare(a.name, b.name) })
	structFieldCache.Store(t, out)
	return out
}

// appendViaJSON encodes v with encoding/json and canonicalizes the result.
func appendViaJSON(dst []byte, v reflect.Value) ([]byte, error) {
	raw, err := json.Marshal(v.Interface())
	if err != nil {
		return nil, fmt.Errorf("workbench: marshal result: %w", err)
	}
	return appendCanonicalRaw(dst, raw, v.Type().String())
}

func appendCanonicalRaw(dst, raw []byte, what string) ([]byte, error) {
	c, err := manifests.CanonicalizeJSON(raw)
	if err != nil {
		return nil, fmt.Errorf("workbench: marshal result: %s %q: %w", what, raw, err)
	}
	if what == "number" && (len(c) == 0 || (c[0] != '-' && (c[0] < '0' || c[0] > '9'))) {
		return nil, fmt.Errorf("workbench: marshal result: json.Number %q is not a number", raw)
	}
	return append(dst, c...), nil
}

const lowerHex = "0123456789abcdef"

// appendResultString writes s as a JSON string with the reference's
// escaping.
func appendResultString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && n == 1 {
				dst = append(dst, "\uFFFD"...)
			} else {
				dst = append(dst, s[i:i+n]...)
			}
			i += n
			continue
		}
		switch {
		case c == '"':
			dst = append(dst, '\\', '"')
		case c == '\\':
			dst = append(dst, '\\', '\\')
		case c == '\b':
			dst = append(dst, '\\', 'b')
		case c == '\f':
			dst = append(dst, '\\', 'f')
		case c == '\n':
			dst = append(dst, '\\', 'n')
		case c == '\r':
			dst = append(dst, '\\', 'r')
		case c == '\t':
			dst = append(dst, '\\', 't')
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
		default:
			dst = append(dst, c)
		}
		i++
	}
	return append(dst, '"')
}

// appendResultFloat writes a finite float64 as the reference prints it:
// the shortest digits that read back to f, in plain decimal when the
// exponent of the first digit is in [-5, 15] (with ".0" when integral:
// "1.0", "0.00001", "-0.0"), else as d[.ddd]eX with a sign on the exponent
// only when negative ("1e16", "1.5e-7").
func appendResultFloat(dst []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expText, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(expText)
	n := len(digits)
	switch {
	case e < -5 || e > 15:
		dst = append(dst, digits[0])
		if n > 1 {
			dst = append(dst, '.')
			dst = append(dst, digits[1:]...)
		}
		dst = append(dst, 'e')
		return strconv.AppendInt(dst, int64(e), 10)
	case n <= e+1:
		dst = append(dst, digits...)
		for range e + 1 - n {
			dst = append(dst, '0')
		}
		return append(dst, ".0"...)
	case e >= 0:
		dst = append(dst, digits[:e+1]...)
		dst = append(dst, '.')
		return append(dst, digits[e+1:]...)
	default:
		dst = append(dst, "0."...)
		for range -e - 1 {
			dst = append(dst, '0')
		}
		return append(dst, digits...)
	}
}

// indentCanonical lays out compact canonical JSON (no whitespace outside
// strings) as serde_json's pretty printer does.
func indentCanonical(b []byte) []byte {
	out := make([]byte, 0, len(b)*2)
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for range depth {
			out = append(out, ' ', ' ')
		}
	}
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '"':
			j := i + 1
			for ; j < len(b); j++ {
				if b[j] == '\\' {
					j++
				} else if b[j] == '"' {
					break
				}
			}
			out = append(out, b[i:j+1]...)
			i = j
		case '{', '[':
			if i+1 < len(b) && (b[i+1] == '}' || b[i+1] == ']') {
				out = append(out, c, b[i+1])
				i++
				continue
			}
			out = append(out, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, ',')
			newline()
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	return out
}
