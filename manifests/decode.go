package manifests

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"

	"github.com/cairnstore/cairn/bucket/digest"
)

// SchemaKey is the top-level member that names a document's schema.
const SchemaKey = "schema"

// Document is a versioned document type. Schema returns the exact string its
// top-level "schema" member holds, for example
// "nokv.workbench.restore_manifest.v2". Every version is its own Go type;
// a reader that knows several versions tries each type's Decode. (The Go
// field that holds the member cannot be named Schema; SchemaName with the
// tag `json:"schema"` is the convention.)
type Document interface {
	Schema() string
}

// Encode returns the canonical bytes of one of cairn's own documents.
//
// It marshals doc with encoding/json and canonicalizes the result, so the
// order of struct fields does not matter. It refuses Go floating-point values
// anywhere in doc (float32, float64, also inside interfaces and maps) with
// ErrFloat: encoding/json prints them in a form the reference parser may read
// back as a different float or as an integer, so their bytes are not stable.
// cairn's documents hold integers; caller-supplied JSON (a Workbench run
// manifest's "manifest") is carried as json.RawMessage or json.Number, whose
// number text is canonicalized as the reference does. Values whose type
// implements json.Marshaler or encoding.TextMarshaler are not inspected.
//
// Encode never returns bytes that its readers would refuse: if the canonical
// bytes hold a float the canonical parser does not read back exactly (see
// the package documentation), the result is ErrNotCanonical.
//
// If doc is a Document, its encoded top-level "schema" member must equal
// doc.Schema() (ErrSchema otherwise), so a document cannot be written with a
// missing or wrong version.
func Encode(doc any) ([]byte, error) {
	// Marshal first: it rejects cyclic values, which the float walk could
	// not finish.
	v, b, err := canonicalValue(doc)
	if err != nil {
		return nil, fmt.Errorf("manifests: encode: %w", err)
	}
	if path, ok := findFloat(reflect.ValueOf(doc), ""); ok {
		return nil, fmt.Errorf("manifests: encode %T: value at %q: %w", doc, path, ErrFloat)
	}
	if again, err := CanonicalizeJSON(b); err != nil || !bytes.Equal(again, b) {
		return nil, fmt.Errorf("manifests: encode %T: a number at offset %d does not read back as itself: %w", doc, firstDiff(again, b), ErrNotCanonical)
	}
	if d, ok := doc.(Document); ok {
		if err := checkSchema(&v, d.Schema()); err != nil {
			return nil, fmt.Errorf("manifests: encode %T: %w", doc, err)
		}
	}
	return b, nil
}

// DecodeStrict decodes b into v, which must be a non-nil pointer. It accepts
// only bytes that
//
//   - are one canonical JSON document (else ErrInvalid or ErrNotCanonical;
//     trailing data is ErrInvalid);
//   - name no member the type of *v lacks (ErrUnknownField);
//   - fit that type (ErrInvalid for a value of the wrong type);
//   - re-encode through that type to exactly b: a member the type writes but
//     b lacks is ErrInvalid, a member whose name matches a field only
//     case-insensitively or that the type omits when encoding (a zero value
//     under omitempty) is ErrUnknownField, any other difference is
//     ErrNotCanonical.
//
// Numbers decode into interface values as json.Number. *v is set only on
// success; on error it is unchanged.
func DecodeStrict(b []byte, v any) error {
	root, err := parseCanonical("decode", b)
	if err != nil {
		return err
	}
	return decodeInto("decode", b, &root, v)
}

// Decode is DecodeStrict for a Document: it also requires the top-level
// "schema" member to equal doc.Schema() exactly, checked before any field,
// so a document of an unknown version is reported as ErrSchema rather than
// as an unknown field.
func Decode(b []byte, doc Document) error {
	root, err := parseCanonical("decode", b)
	if err != nil {
		return err
	}
	if err := checkSchema(&root, doc.Schema()); err != nil {
		return fmt.Errorf("manifests: decode %T: %w", doc, err)
	}
	return decodeInto("decode", b, &root, doc)
}

// DecodeVerified checks that b hashes to want (ErrIntegrity otherwise) and
// then decodes it as Decode does. It is how an immutable document fetched by
// its hash is read.
func DecodeVerified(b []byte, want digest.Hash, doc Document) error {
	if err := digest.Verify(b, want); err != nil {
		return err
	}
	return Decode(b, doc)
}

func checkSchema(root *value, want string) error {
	if root.kind != kindObject {
		return fmt.Errorf("document is not an object: %w", ErrSchema)
	}
	s := root.member(SchemaKey)
	switch {
	case s == nil:
		return fmt.Errorf("no %q member, want %q: %w", SchemaKey, want, ErrSchema)
	case s.kind != kindString:
		return fmt.Errorf("%q is not a string, want %q: %w", SchemaKey, want, ErrSchema)
	case s.text != want:
		return fmt.Errorf("%q is %q, want %q: %w", SchemaKey, s.text, want, ErrSchema)
	}
	return nil
}

func decodeInto(op string, b []byte, root *value, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("manifests: %s: target must be a non-nil pointer, not %T", op, v)
	}
	fresh := reflect.New(rv.Elem().Type())
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(fresh.Interface()); err != nil {
		// Tell an unknown member from a value of the wrong type without
		// reading the error text: decode again allowing unknown members.
		probe := reflect.New(rv.Elem().Type())
		lenient := json.NewDecoder(bytes.NewReader(b))
		lenient.UseNumber()
		if lenient.Decode(probe.Interface()) == nil {
			return fmt.Errorf("manifests: %s %T: %w: %w", op, v, ErrUnknownField, err)
		}
		return fmt.Errorf("manifests: %s %T: %w: %w", op, v, ErrInvalid, err)
	}
	out, _, err := canonicalValue(fresh.Interface())
	if err != nil {
		return fmt.Errorf("manifests: %s %T: re-encode: %w", op, v, err)
	}
	if err := roundTrip("", root, &out); err != nil {
		return fmt.Errorf("manifests: %s %T: %w", op, v, err)
	}
	rv.Elem().Set(fresh.Elem())
	return nil
}

// roundTrip compares the document read (in) with its re-encoding (out) and
// reports the first difference.
func roundTrip(path string, in, out *value) error {
	if in.kind == kindObject && out.kind == kindObject {
		i, j := 0, 0
		for i < len(in.members) || j < len(out.members) {
			switch {
			case j == len(out.members) || (i < len(in.members) && in.members[i].key < out.members[j].key):
				return fmt.Errorf("member %q: not written back by the type: %w", path+"/"+in.members[i].key, ErrUnknownField)
			case i == len(in.members) || out.members[j].key < in.members[i].key:
				return fmt.Errorf("member %q: missing: %w", path+"/"+out.members[j].key, ErrInvalid)
			default:
				if err := roundTrip(path+"/"+in.members[i].key, &in.members[i].val, &out.members[j].val); err != nil {
					return err
				}
				i++
				j++
			}
		}
		return nil
	}
	if in.kind == kindArray && out.kind == kindArray && len(in.elems) == len(out.elems) {
		for k := range in.elems {
			if err := roundTrip(path+"/"+strconv.Itoa(k), &in.elems[k], &out.elems[k]); err != nil {
				return err
			}
		}
		return nil
	}
	if in.kind != out.kind || in.text != out.text || in.kind == kindArray || in.kind == kindObject {
		return fmt.Errorf("value at %q: does not re-encode to the bytes read: %w", path, ErrNotCanonical)
	}
	return nil
}

var (
	jsonMarshalerType = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// findFloat reports the path of the first Go floating-point value in v.
func findFloat(v reflect.Value, path string) (string, bool) {
	if !v.IsValid() {
		return "", false
	}
	t := v.Type()
	if t.Implements(jsonMarshalerType) || t.Implements(textMarshalerType) ||
		reflect.PointerTo(t).Implements(jsonMarshalerType) || reflect.PointerTo(t).Implements(textMarshalerType) {
		return "", false
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return path, true
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return "", false
		}
		return findFloat(v.Elem(), path)
	case reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			if f.Tag.Get("json") == "-" {
				continue
			}
			if p, ok := findFloat(v.Field(i), path+"/"+f.Name); ok {
				return p, true
			}
		}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "", false
		}
		for i := 0; i < v.Len(); i++ {
			if p, ok := findFloat(v.Index(i), path+"/"+strconv.Itoa(i)); ok {
				return p, true
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			if p, ok := findFloat(it.Value(), path+"/"+keyString(it.Key())); ok {
				return p, true
			}
		}
	}
	return "", false
}

// keyString renders a map key for an error path without calling Interface,
// which panics on values reached through unexported fields.
func keyString(k reflect.Value) string {
	switch k.Kind() {
	case reflect.String:
		return k.String()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(k.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return strconv.FormatUint(k.Uint(), 10)
	}
	return k.Type().String()
}
