package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects the parser accepts,
// the limit of the Workbench reference parser. A document nested deeper is
// ErrInvalid.
const MaxDepth = 127

// CanonicalizeJSON parses one JSON document (surrounding whitespace allowed)
// and returns its canonical bytes. Duplicate object keys keep the last value.
// Input the reference parser rejects is ErrInvalid: bad syntax, invalid
// UTF-8, raw control characters or unpaired surrogate escapes in strings,
// nesting deeper than MaxDepth, numbers out of float64 range (1e400), and
// trailing data.
//
// Like the reference, it is idempotent except for floats the reference
// parser does not read back exactly (see the package documentation); run
// CheckCanonical on the result to refuse those as the reference does.
func CanonicalizeJSON(raw []byte) ([]byte, error) {
	v, err := parse(raw)
	if err != nil {
		return nil, fmt.Errorf("manifests: canonicalize: %w", err)
	}
	return appendValue(make([]byte, 0, len(raw)), &v), nil
}

// CanonicalizeJSONValue is CanonicalizeJSON that also returns the document
// as Go values, from the one parse: nil, bool, string, json.Number holding
// the number's canonical text, []any and map[string]any. They are what
// decoding the canonical bytes with encoding/json and UseNumber gives,
// without scanning the document again or copying its strings once more.
func CanonicalizeJSONValue(raw []byte) ([]byte, any, error) {
	v, err := parse(raw)
	if err != nil {
		return nil, nil, fmt.Errorf("manifests: canonicalize: %w", err)
	}
	return appendValue(make([]byte, 0, len(raw)), &v), goValue(&v), nil
}

// goValue is v as Go values; strings are shared, not copied.
func goValue(v *value) any {
	switch v.kind {
	case kindNull:
		return nil
	case kindFalse:
		return false
	case kindTrue:
		return true
	case kindNumber:
		return json.Number(v.text)
	case kindString:
		return v.text
	case kindArray:
		out := make([]any, len(v.elems))
		for i := range v.elems {
			out[i] = goValue(&v.elems[i])
		}
		return out
	case kindObject:
		out := make(map[string]any, len(v.members))
		for i := range v.members {
			out[v.members[i].key] = goValue(&v.members[i].val)
		}
		return out
	}
	panic("manifests: unknown value kind")
}

// Canonical returns the canonical bytes of v: v is marshalled with
// encoding/json and the result canonicalized, so struct field order, Go's
// HTML escaping and map order do not matter. A json.RawMessage or json.Number
// inside v keeps its exact number text (then canonicalized); a Go float64 is
// first printed by encoding/json, so an integral float64 becomes a JSON
// integer. Use Encode for cairn's own documents, which refuses Go floats.
func Canonical(v any) ([]byte, error) {
	_, b, err := canonicalValue(v)
	if err != nil {
		return nil, fmt.Errorf("manifests: canonical: %w", err)
	}
	return b, nil
}

// CheckCanonical returns nil if b is a JSON document already in canonical
// form, ErrInvalid if it is not JSON the parser accepts, and ErrNotCanonical
// if it is JSON in another form.
func CheckCanonical(b []byte) error {
	_, err := parseCanonical("check", b)
	return err
}

// canonicalValue marshals v and parses the result into the value model.
func canonicalValue(v any) (value, []byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return value{}, nil, fmt.Errorf("marshal %T: %w: %w", v, ErrInvalid, err)
	}
	val, err := parse(raw)
	if err != nil {
		return value{}, nil, fmt.Errorf("marshal %T: %w", v, err)
	}
	return val, appendValue(make([]byte, 0, len(raw)), &val), nil
}

// parseCanonical parses b and checks that it is canonical.
func parseCanonical(op string, b []byte) (value, error) {
	v, err := parse(b)
	if err != nil {
		return value{}, fmt.Errorf("manifests: %s: %w", op, err)
	}
	if c := appendValue(make([]byte, 0, len(b)), &v); !bytes.Equal(c, b) {
		return value{}, fmt.Errorf("manifests: %s: bytes differ from their canonical form at offset %d: %w", op, firstDiff(c, b), ErrNotCanonical)
	}
	return v, nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// The value model: what the reference parser keeps of a document.

type kind uint8

const (
	kindNull kind = iota
	kindFalse
	kindTrue
	kindNumber
	kindString
	kindArray
	kindObject
)

type value struct {
	kind    kind
	text    string   // kindString: the string; kindNumber: canonical text
	elems   []value  // kindArray
	members []member // kindObject: sorted by key bytes, keys unique
}

type member struct {
	key string
	val value
}

// member returns the value of key in an object, or nil.
func (v *value) member(key string) *value {
	i, ok := slices.BinarySearchFunc(v.members, key, func(m member, k string) int { return strings.Compare(m.key, k) })
	if !ok {
		return nil
	}
	return &v.members[i].val
}

// parser reads one JSON document with the reference parser's rules.
type parser struct {
	b         []byte
	i         int
	remaining int // nesting budget; a container that brings it to 0 fails
	err       error
}

func parse(b []byte) (value, error) {
	p := parser{b: b, remaining: MaxDepth + 1}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return value{}, err
	}
	p.skipSpace()
	if p.i < len(p.b) {
		return value{}, p.failAt(p.i, "trailing data")
	}
	return v, nil
}

func (p *parser) fail(msg string) error { return p.failAt(p.i, msg) }

func (p *parser) failAt(off int, msg string) error {
	return fmt.Errorf("%s at offset %d: %w", msg, off, ErrInvalid)
}

func (p *parser) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) skipSpace() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) literal(word string, k kind) (value, error) {
	if !bytes.HasPrefix(p.b[p.i:], []byte(word)) {
		return value{}, p.fail("invalid literal")
	}
	p.i += len(word)
	return value{kind: k}, nil
}

func (p *parser) value() (value, error) {
	if p.i >= len(p.b) {
		return value{}, p.fail("unexpected end of input")
	}
	switch c := p.b[p.i]; {
	case c == 'n':
		return p.literal("null", kindNull)
	case c == 't':
		return p.literal("true", kindTrue)
	case c == 'f':
		return p.literal("false", kindFalse)
	case c == '"':
		s, err := p.string()
		if err != nil {
			return value{}, err
		}
		return value{kind: kindString, text: s}, nil
	case c == '[':
		return p.array()
	case c == '{':
		return p.object()
	case c == '-' || isDigit(c):
		s, err := p.number()
		if err != nil {
			return value{}, err
		}
		return value{kind: kindNumber, text: s}, nil
	default:
		return value{}, p.fail("expected a value")
	}
}

func (p *parser) enter() error {
	p.remaining--
	if p.remaining == 0 {
		return p.fail("nesting deeper than the limit")
	}
	return nil
}

func (p *parser) array() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	defer func() { p.remaining++ }()
	p.i++ // '['
	v := value{kind: kindArray}
	p.skipSpace()
	if p.peek() == ']' {
		p.i++
		return v, nil
	}
	for {
		p.skipSpace()
		e, err := p.value()
		if err != nil {
			return value{}, err
		}
		v.elems = append(v.elems, e)
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
			p.skipSpace()
			if p.peek() == ']' {
				return value{}, p.fail("trailing comma")
			}
		case ']':
			p.i++
			return v, nil
		default:
			if p.i >= len(p.b) {
				return value{}, p.fail("unexpected end of input in an array")
			}
			return value{}, p.fail("expected ',' or ']'")
		}
	}
}

func (p *parser) object() (value, error) {
	if err := p.enter(); err != nil {
		return value{}, err
	}
	defer func() { p.remaining++ }()
	p.i++ // '{'
	v := value{kind: kindObject}
	p.skipSpace()
	if p.peek() == '}' {
		p.i++
		return v, nil
	}
	for {
		p.skipSpace()
		if p.peek() != '"' {
			if p.i >= len(p.b) {
				return value{}, p.fail("unexpected end of input in an object")
			}
			if p.peek() == '}' {
				return value{}, p.fail("trailing comma")
			}
			return value{}, p.fail("expected a string key")
		}
		key, err := p.string()
		if err != nil {
			return value{}, err
		}
		p.skipSpace()
		if p.peek() != ':' {
			return value{}, p.fail("expected ':'")
		}
		p.i++
		p.skipSpace()
		val, err := p.value()
		if err != nil {
			return value{}, err
		}
		v.members = append(v.members, member{key: key, val: val})
		p.skipSpace()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			v.members = sortMembers(v.members)
			return v, nil
		default:
			if p.i >= len(p.b) {
				return value{}, p.fail("unexpected end of input in an object")
			}
			return value{}, p.fail("expected ',' or '}'")
		}
	}
}

// sortMembers orders members by the bytes of their keys and keeps, for a
// key given more than once, the last value.
func sortMembers(ms []member) []member {
	slices.SortStableFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
	out := ms[:0]
	for i := range ms {
		if i+1 < len(ms) && ms[i+1].key == ms[i].key {
			continue // a later duplicate wins
		}
		out = append(out, ms[i])
	}
	return out
}

// string parses the string at p.i (which holds '"') and returns its value.
func (p *parser) string() (string, error) {
	p.i++ // '"'
	var sb strings.Builder
	start := p.i
	for {
		if p.i >= len(p.b) {
			return "", p.fail("unexpected end of input in a string")
		}
		c := p.b[p.i]
		switch {
		case c == '"':
			sb.Write(p.b[start:p.i])
			p.i++
			return sb.String(), nil
		case c == '\\':
			sb.Write(p.b[start:p.i])
			if err := p.escape(&sb); err != nil {
				return "", err
			}
			start = p.i
		case c < 0x20:
			return "", p.fail("control character in a string")
		case c < utf8.RuneSelf:
			p.i++
		default:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				return "", p.fail("invalid UTF-8")
			}
			p.i += size
		}
	}
}

// escape parses the escape at p.i (which holds '\\') into sb.
func (p *parser) escape(sb *strings.Builder) error {
	p.i++ // '\\'
	if p.i >= len(p.b) {
		return p.fail("unexpected end of input in a string")
	}
	c := p.b[p.i]
	p.i++
	switch c {
	case '"', '\\', '/':
		sb.WriteByte(c)
	case 'b':
		sb.WriteByte('\b')
	case 'f':
		sb.WriteByte('\f')
	case 'n':
		sb.WriteByte('\n')
	case 'r':
		sb.WriteByte('\r')
	case 't':
		sb.WriteByte('\t')
	case 'u':
		r1, err := p.hex4()
		if err != nil {
			return err
		}
		switch {
		case r1 >= 0xDC00 && r1 <= 0xDFFF:
			return p.fail("unpaired surrogate escape")
		case r1 >= 0xD800 && r1 <= 0xDBFF:
			if p.peek() != '\\' || p.i+1 >= len(p.b) || p.b[p.i+1] != 'u' {
				return p.fail("unpaired surrogate escape")
			}
			p.i += 2
			r2, err := p.hex4()
			if err != nil {
				return err
			}
			if r2 < 0xDC00 || r2 > 0xDFFF {
				return p.fail("unpaired surrogate escape")
			}
			sb.WriteRune(((r1 - 0xD800) << 10) + (r2 - 0xDC00) + 0x10000)
		default:
			sb.WriteRune(r1)
		}
	default:
		return p.failAt(p.i-1, "invalid escape")
	}
	return nil
}

func (p *parser) hex4() (rune, error) {
	if p.i+4 > len(p.b) {
		return 0, p.fail("unexpected end of input in a string")
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		var d byte
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return 0, p.fail("invalid escape")
		}
		r = r<<4 | rune(d)
	}
	p.i += 4
	return r, nil
}

// Emitting canonical bytes.

func appendValue(dst []byte, v *value) []byte {
	switch v.kind {
	case kindNull:
		return append(dst, "null"...)
	case kindFalse:
		return append(dst, "false"...)
	case kindTrue:
		return append(dst, "true"...)
	case kindNumber:
		return append(dst, v.text...)
	case kindString:
		return appendString(dst, v.text)
	case kindArray:
		dst = append(dst, '[')
		for i := range v.elems {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, &v.elems[i])
		}
		return append(dst, ']')
	case kindObject:
		dst = append(dst, '{')
		for i := range v.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, v.members[i].key)
			dst = append(dst, ':')
			dst = appendValue(dst, &v.members[i].val)
		}
		return append(dst, '}')
	}
	panic("manifests: unknown value kind")
}

const hexDigits = "0123456789abcdef"

// appendString writes s quoted, escaping only '"', '\\' and U+0000-U+001F.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
