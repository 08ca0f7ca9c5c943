package core

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"
)

// Typed results and methods.
//
// A tool's implementation returns its result as a Go value: a struct of
// the tool's own (PutFileResult, ...) that embeds Success, or, for the
// tools not typed yet, a map. MarshalResult prints a struct exactly as
// the map of the same members, so Call's bytes are the contract's either
// way (the transcript and golden tests pin them).
//
// A typed method (Service.Create, ...) takes the tool's input as a Go
// struct and returns its typed result, with a *Error as the error. Its
// input goes through what Call's does (the tool's schema, then its
// checks, then the tool), so that a typed call and a JSON call of the
// same arguments answer alike; the result does not go through JSON.

// Success is the status member every successful result carries. Typed
// results embed it; the dispatcher sets it.
type Success struct {
	Status string `json:"status"`
}

func (s *Success) Succeed() { s.Status = "success" }

// succeeder is a typed result: a pointer to a struct that embeds Success.
type succeeder interface{ Succeed() }

// succeeded sets the status member of a tool's result.
func succeeded(tool string, res any) (any, *Error) {
	switch r := res.(type) {
	case map[string]any:
		r["status"] = "success"
		return r, nil
	case succeeder:
		r.Succeed()
		return r, nil
	}
	return nil, Internal(fmt.Sprintf("%s: a result of type %T", tool, res))
}

// Invoke runs tool on the typed input in, as Call runs it on in's JSON,
// and returns the tool's typed result R.
func Invoke[R any](ctx context.Context, s *Service, tool string, in any) (R, error) {
	var zero R
	if werr := checkUTF8(tool, "$", reflect.ValueOf(in)); werr != nil {
		return zero, werr
	}
	var raw bytes.Buffer
	enc := json.NewEncoder(&raw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(in); err != nil {
		return zero, InvalidArguments(fmt.Sprintf("%s: encode input: %v", tool, err))
	}
	res, werr := s.Dispatch(ctx, tool, bytes.TrimSuffix(raw.Bytes(), []byte("\n")))
	if werr != nil {
		return zero, werr
	}
	r, ok := res.(R)
	if !ok {
		return zero, Internal(fmt.Sprintf("%s: a result of type %T, want %T", tool, res, zero))
	}
	return r, nil
}

// checkUTF8 refuses a typed input with a string that is not valid UTF-8,
// wherever it sits (a field, a pointer's target, an element, a map key or
// value): JSON text cannot carry such a string, and encoding it would
// replace the bad bytes with U+FFFD, so the tool would store or look up
// other text than the caller's. A JSON call cannot send one either. The
// error names the member as the schema's errors do:
// "<tool>: $.<member>: is not valid UTF-8".
func checkUTF8(tool, at string, v reflect.Value) *Error {
	switch v.Kind() {
	case reflect.String:
		if !utf8.ValidString(v.String()) {
			return InvalidArguments(fmt.Sprintf("%s: %s: is not valid UTF-8", tool, at))
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			return checkUTF8(tool, at, v.Elem())
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = f.Name
			}
			if werr := checkUTF8(tool, at+"."+name, v.Field(i)); werr != nil {
				return werr
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // bytes travel as base64
		}
		for i := range v.Len() {
			if werr := checkUTF8(tool, fmt.Sprintf("%s[%d]", at, i), v.Index(i)); werr != nil {
				return werr
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			k := it.Key()
			if k.Kind() == reflect.String && !utf8.ValidString(k.String()) {
				return InvalidArguments(fmt.Sprintf("%s: %s: a key is not valid UTF-8", tool, at))
			}
			if werr := checkUTF8(tool, fmt.Sprintf("%s.%v", at, k), it.Value()); werr != nil {
				return werr
			}
		}
	}
	return nil
}
