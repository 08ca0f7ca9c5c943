package manifests_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/manifests"
)

var fuzzSeeds = []string{
	``,
	`null`,
	`{"b":[1,2.5,-0,"\u001f"],"a":{"y":1e21,"x":"<&>"}}`,
	`{"z":1,"é":2,"Z":3,"\ud83d\ude00":4,"\ufffd":5}`,
	`{"a":1,"a":{"b":[true,false,null]}}`,
	`[18446744073709551615,18446744073709551616,-9223372036854775808,-9223372036854775809]`,
	`[0.1,1e-7,1e15,1e16,5e-324,1.7976931348623157e308,51.248178375505404,1e-400,0e999999999999]`,
	`"\b\f\n\r\t\u0000\u007f\u2028\u2029\/"`,
	`"\ud800"`,
	"\"\xff\"",
	`[1,]`,
	`1e400`,
	` { "count" : 7 } `,
	`{"count":7,"root":"sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2","schema":"cairn.pin.v1"}`,
	`{"count":7,"extra":{"f":1.5},"note":"n","root":"sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2","schema":"cairn.pin.v1"}`,
	`{"Count":7,"root":"sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2","schema":"cairn.pin.v1"}`,
	strings.Repeat("[", manifests.MaxDepth) + strings.Repeat("]", manifests.MaxDepth),
}

// FuzzCanonicalizeJSON: no panic; errors are ErrInvalid; accepted input is
// JSON to encoding/json too; the output is valid JSON. Canonicalizing the
// output again changes nothing, except number tokens the reference parser
// does not read back exactly: each of those, and nothing else, is replaced by
// its own canonical form, and such an output fails CheckCanonical and
// DecodeStrict with ErrNotCanonical. A stable output is canonical and
// strictly decodable into an interface.
func FuzzCanonicalizeJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := manifests.CanonicalizeJSON(in)
		if err != nil {
			if !errors.Is(err, manifests.ErrInvalid) {
				t.Fatalf("CanonicalizeJSON(%q) error %v is not ErrInvalid", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("accepted %q, which encoding/json rejects", in)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not valid JSON", out)
		}
		again, err := manifests.CanonicalizeJSON(out)
		if err != nil {
			t.Fatalf("CanonicalizeJSON(%q) = %v", out, err)
		}
		var v any
		if bytes.Equal(again, out) {
			if err := manifests.CheckCanonical(out); err != nil {
				t.Fatalf("CheckCanonical(%q) = %v", out, err)
			}
			if err := manifests.DecodeStrict(out, &v); err != nil {
				t.Fatalf("DecodeStrict(%q) = %v", out, err)
			}
			return
		}
		if !onlyUnstableNumbersDiffer(t, out, again) {
			t.Fatalf("not idempotent beyond unstable numbers: %q -> %q -> %q", in, out, again)
		}
		if err := manifests.CheckCanonical(out); !errors.Is(err, manifests.ErrNotCanonical) {
			t.Fatalf("CheckCanonical(%q) = %v, want ErrNotCanonical", out, err)
		}
		if err := manifests.DecodeStrict(out, &v); !errors.Is(err, manifests.ErrNotCanonical) {
			t.Fatalf("DecodeStrict(%q) = %v, want ErrNotCanonical", out, err)
		}
	})
}

// onlyUnstableNumbersDiffer reports whether b equals a with some number
// tokens n, for which canonicalizing n alone changes it, replaced by that
// canonical form.
func onlyUnstableNumbersDiffer(t *testing.T, a, b []byte) bool {
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	for {
		ta, errA := da.Token()
		tb, errB := db.Token()
		if errA != nil || errB != nil {
			return errA == io.EOF && errB == io.EOF
		}
		na, isNum := ta.(json.Number)
		if !isNum {
			if ta != tb {
				return false
			}
			continue
		}
		nb, ok := tb.(json.Number)
		if !ok {
			return false
		}
		if na == nb {
			continue
		}
		c, err := manifests.CanonicalizeJSON([]byte(na))
		if err != nil || string(c) != string(nb) {
			t.Logf("number %s became %s, but alone canonicalizes to %s (%v)", na, nb, c, err)
			return false
		}
	}
}

// FuzzDecodeStrict: no panic; every error is one of the package's
// sentinels; whatever decodes is canonical and re-encodes to the same bytes.
func FuzzDecodeStrict(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		known := func(err error) bool {
			for _, s := range []error{manifests.ErrInvalid, manifests.ErrNotCanonical, manifests.ErrUnknownField, manifests.ErrSchema} {
				if errors.Is(err, s) {
					return true
				}
			}
			return false
		}
		canonical := manifests.CheckCanonical(in) == nil

		var p pin
		if err := manifests.Decode(in, &p); err != nil {
			if !known(err) {
				t.Fatalf("Decode(%q) = %v: not a sentinel", in, err)
			}
		} else {
			if !canonical {
				t.Fatalf("Decode accepted non-canonical %q", in)
			}
			out, err := manifests.Encode(p)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("Decode(%q) re-encodes to %q (%v)", in, out, err)
			}
		}

		var v any
		err := manifests.DecodeStrict(in, &v)
		if err != nil && !known(err) {
			t.Fatalf("DecodeStrict(%q) = %v: not a sentinel", in, err)
		}
		if (err == nil) != canonical {
			t.Fatalf("DecodeStrict(%q) into any = %v, canonical = %v", in, err, canonical)
		}
		if err == nil {
			out, err := manifests.Canonical(v)
			if err != nil || !bytes.Equal(out, in) {
				t.Fatalf("DecodeStrict(%q) re-encodes to %q (%v)", in, out, err)
			}
		}
	})
}

// FuzzCanonicalizeJSONValue: the Go values CanonicalizeJSONValue gives
// are what encoding/json with UseNumber decodes from its canonical bytes,
// and the bytes are CanonicalizeJSON's.
func FuzzCanonicalizeJSONValue(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		canon, v, err := manifests.CanonicalizeJSONValue(in)
		want, wantErr := manifests.CanonicalizeJSON(in)
		if (err == nil) != (wantErr == nil) || !bytes.Equal(canon, want) {
			t.Fatalf("CanonicalizeJSONValue(%q) = %q, %v; CanonicalizeJSON = %q, %v", in, canon, err, want, wantErr)
		}
		if err != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(canon))
		dec.UseNumber()
		var decoded any
		if err := dec.Decode(&decoded); err != nil {
			t.Fatalf("decode %q: %v", canon, err)
		}
		if !reflect.DeepEqual(v, decoded) {
			t.Fatalf("CanonicalizeJSONValue(%q) values %#v, decoding its bytes gives %#v", in, v, decoded)
		}
	})
}
