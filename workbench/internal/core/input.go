package core

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Tool inputs.
//
// A tool never sees its arguments as generic JSON: once the schema has
// checked them (validateInput), they are decoded, once, into the tool's
// own input type (putFileInput, readInput, ...) with json.Unmarshal over
// their canonical text; a member of any JSON type is a jsonValue, whose
// numbers are json.Number, and a payload is stringBytes, copied once from
// the text. A member given as JSON
// null decodes exactly as an absent one (a zero value, a nil pointer);
// a pointer member tells "given" from "absent" where the tool cares, and
// jsonValue does so for a member of any type whose null is a value.
//
// Each input type's resolve then applies, in the reference's order, the
// rules the schema cannot express (workbench ids, path normalization,
// mutually exclusive members, payload decoding, defaults) and fills in the
// unexported fields the tool reads. It reads no storage, so a call with
// bad arguments fails before touching the bucket. Inputs shared by
// several tools are types of their own, embedded: targetInput and
// payloadInput here, scopeInput (stat, list) and queryScopeInput and the
// predicate and sort members (search, aggregate, catalog) beside the code
// that uses them.

// input is a tool's decoded arguments.
type input interface {
	// resolve checks what the schema cannot and fills in the resolved
	// fields; an error is the call's result.
	Resolve(s *Service) *Error
}

// DecodeInput decodes a tool's canonical arguments into its input type.
// It is json.Unmarshal, which reads the text where it is (a json.Decoder
// would first copy it into a buffer grown by doubling: 64 MiB for a
// 16 MiB payload). The schema has refused unknown members and
// checkInputType matched the type's members to the schema's; members of
// any JSON type are jsonValue, whose numbers are json.Number. The decoded
// input may share args' memory (stringBytes): args must not change while
// the input is in use.
func DecodeInput(args []byte, in any) error {
	return json.Unmarshal(args, in)
}

// CheckInputType panics unless the JSON members of input type t (its
// exported fields and those of its embedded structs) are exactly the
// properties of the tool's schema, so that decoding validated arguments
// cannot fail and no argument is silently ignored.
func CheckInputType(tool string, t reflect.Type) {
	s, ok := contract.schemas[tool]
	if !ok {
		panic("workbench: input type of unknown tool " + tool)
	}
	got := slices.Sorted(slices.Values(inputMembers(t)))
	want := slices.Sorted(maps.Keys(s.properties))
	if !slices.Equal(got, want) {
		panic(fmt.Sprintf("workbench: input type %s of %s has members %v, schema has %v", t, tool, got, want))
	}
}

func inputMembers(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		switch {
		case f.Anonymous:
			out = append(out, inputMembers(f.Type)...)
		case f.IsExported():
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue // a resolved field, not a member
			}
			if name == "" {
				panic("workbench: input field " + t.String() + "." + f.Name + " has no JSON name")
			}
			out = append(out, name)
		}
	}
	return out
}

// JSONValue is a member of any JSON type that remembers whether it was
// given: a null given is Set with a nil V, unlike an absent member. V
// holds json.Number numbers, []any arrays and map[string]any objects.
type JSONValue struct {
	Set bool
	V   any
}

// UnmarshalJSON implements json.Unmarshaler; it is called for null too.
func (v *JSONValue) UnmarshalJSON(b []byte) error {
	v.Set = true
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(&v.V)
}

// JoinedPath holds a tool's refusal of its section-joined path over the
// path limits (JoinSection's InvalidState). The reference's tool layer
// accepts such a path and its backend, which joins it, refuses it, so
// the tool layer's other argument checks come first: resolve keeps the
// refusal here and the dispatcher (registerTool) returns it once resolve
// has passed, before the tool reads anything. Every input that takes a
// section and a path embeds one, once.
type JoinedPath struct {
	Refused *Error `json:"-"`
}

// Take returns comps and err as JoinSection, WritePath or ScopePath gave
// them, except that a refusal of the joined path is kept for later and
// neither returned.
func (j *JoinedPath) Take(comps []string, err *Error) ([]string, *Error) {
	if err != nil && err.Code == CodeInvalidState {
		j.Refused = err
		return nil, nil
	}
	return comps, err
}

// joinedPathRefusal returns the refusal take kept, or nil.
func (j *JoinedPath) joinedPathRefusal() *Error { return j.Refused }

// TargetInput is the workbench id and target path of a write tool
// (put_file, append, edit).
type TargetInput struct {
	ID      string `json:"id"`
	Section string `json:"section"`
	Path    string `json:"path"`

	WorkbenchID string   `json:"-"` // the checked workbench id
	StoredPath  []string `json:"-"` // the stored path, section first (WritePath)
	JoinedPath
}

func (t *TargetInput) Resolve() *Error {
	var werr *Error
	if t.WorkbenchID, werr = ParseWorkbenchID(t.ID); werr != nil {
		return werr
	}
	t.StoredPath, werr = t.Take(WritePath(t.Section, t.Path))
	return werr
}

// Default content types of a payload.
const (
	TextContentType   = "text/plain; charset=utf-8"
	BinaryContentType = "application/octet-stream"
)

// PayloadInput is the payload of put_file and append: exactly one of text
// (its UTF-8 bytes) and base64 (RFC 4648 standard alphabet, canonical
// padding, no whitespace, zero trailing bits), at most MaxBytes decoded,
// and its content type.
type PayloadInput struct {
	Text        *stringBytes `json:"text"`
	Base64      *stringBytes `json:"base64"`
	ContentType *string      `json:"content_type"`

	Body []byte `json:"-"`
	// contentType is content_type when given, else the payload's
	// default: TextContentType for text, BinaryContentType for base64.
	ResolvedContentType string `json:"-"`
	// oversize is the decoded size of a text payload too large to be
	// parsed, emptied from the input (oversize.go); 0 for none.
	oversize int64
}

// Resolve decodes the payload and checks the explicit content type as the
// storage side checks it (1 to 255 bytes, no NUL; InvalidState
// otherwise).
func (p *PayloadInput) Resolve(maxBytes int64) *Error {
	p.ResolvedContentType = TextContentType
	switch {
	case p.Text != nil && p.Base64 != nil:
		return InvalidArguments("text and base64 are mutually exclusive")
	case p.Text == nil && p.Base64 == nil:
		return InvalidArguments("exactly one of text or base64 is required")
	case p.Text != nil:
		p.Body = *p.Text
	default:
		var err error
		if p.Body, err = decodeBase64Payload(*p.Base64); err != nil {
			return InvalidArguments("base64 payload is invalid: " + err.Error())
		}
		p.ResolvedContentType = BinaryContentType
	}
	if p.Text != nil && p.oversize > maxBytes {
		return PayloadTooLarge(uint64(p.oversize), uint64(maxBytes))
	}
	if int64(len(p.Body)) > maxBytes {
		return PayloadTooLarge(uint64(len(p.Body)), uint64(maxBytes))
	}
	if ct := p.ContentType; ct != nil {
		if *ct == "" || len(*ct) > nokv.MaxContentTypeBytes || strings.IndexByte(*ct, 0) >= 0 {
			return InvalidState(fmt.Sprintf("content type of %d bytes is invalid: want 1 to %d bytes without NUL", len(*ct), nokv.MaxContentTypeBytes))
		}
		// A content type is served back in headers (Content-Type), where CR
		// and LF would end the header and other control bytes are invalid.
		// NUL keeps the reference's InvalidState, above.
		if i := controlByte(*ct); i >= 0 {
			return InvalidArgumentsf("content_type has the control character 0x%02x at byte %d", (*ct)[i], i)
		}
		p.ResolvedContentType = *ct
	}
	return nil
}

// controlByte returns the index of the first C0 control or DEL byte in s,
// or -1.
func controlByte(s string) int {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] == 0x7f {
			return i
		}
	}
	return -1
}

// decodeBase64Payload decodes standard base64 strictly: padding required,
// no line breaks or other bytes outside the alphabet, and no non-zero bits
// after the last encoded byte.
func decodeBase64Payload(s []byte) ([]byte, error) {
	// The standard decoder skips '\r' and '\n'; the payload rule does not.
	if i := bytes.IndexAny(s, "\r\n"); i >= 0 {
		return nil, fmt.Errorf("invalid byte 0x%02x at offset %d", s[i], i)
	}
	enc := base64.StdEncoding.Strict()
	b := make([]byte, enc.DecodedLen(len(s)))
	n, err := enc.Decode(b, s)
	if err != nil {
		return nil, err
	}
	return b[:n], nil
}

// stringBytes is a JSON string member decoded to the bytes of its UTF-8
// text, without a Go string between. A payload (text, base64) of
// sharedPayload bytes or more that holds no escape is the arguments'
// canonical text itself (which holds only valid UTF-8), not a copy; any
// other is copied once. A 90 MiB payload is then allocated three times
// while a tool input is parsed (the request body, the parsed value, the
// canonical text), not four.
type stringBytes []byte

// sharedPayload is the smallest payload kept as a slice of the arguments:
// a smaller one is copied, so that a small body kept for long (in a block
// cache) does not keep the whole input with it.
const sharedPayload = 64 << 10

// UnmarshalJSON implements json.Unmarshaler. b is a JSON string: the
// schema checked the member's type. json.Unmarshal hands b as a slice of
// the document it was given, and DecodeInput gives it canonical text
// that nothing changes afterwards, so b is kept, not copied. Its
// capacity is cut to its length, so that an append to the payload
// copies rather than writing over the text after it.
func (p *stringBytes) UnmarshalJSON(b []byte) error {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' && bytes.IndexByte(b, '\\') < 0 {
		if len(b) < sharedPayload {
			*p = bytes.Clone(b[1 : len(b)-1])
			return nil
		}
		*p = b[1 : len(b)-1 : len(b)-1]
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	*p = []byte(s)
	return nil
}
