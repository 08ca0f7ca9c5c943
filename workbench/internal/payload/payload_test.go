package payload

import (
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/manifests"
)

// FuzzEmptyOversizedText: the look at a raw input never panics, and when
// it settles one, the reference parser either refuses the input or reads
// a text member of exactly the size it found, and the reduced input
// differs from the raw one only in that member, now "".
func FuzzEmptyOversizedText(f *testing.F) {
	for _, s := range []string{
		`{"id":"w","text":"` + strings.Repeat("z", 40) + `"}`,
		`{"text":"\u00e9\ud83d\ude00\n` + strings.Repeat("y", 30) + `","id":"w"}`,
		`{"text":`, `{"text"`, `{"a":[{"text":"x"}],"text":"` + strings.Repeat("z", 40) + `"}`,
		`{"text":"` + strings.Repeat("z", 40) + `\ud800"}`,
		` {"a" : 1 , "text" : "` + strings.Repeat("z", 40) + `" } x`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		const maxBytes = 16
		reduced, size, ok := EmptyOversizedText(raw, maxBytes)
		if !ok {
			return
		}
		if size <= maxBytes {
			t.Fatalf("settled %q with size %d, within the limit", raw, size)
		}
		_, v, err := manifests.CanonicalizeJSONValue(raw)
		if err == nil {
			obj, isObj := v.(map[string]any)
			text, isText := obj["text"].(string)
			if !isObj || !isText || int64(len(text)) != size {
				t.Fatalf("settled %q with size %d; the parser reads %#v", raw, size, v)
			}
			_, rv, rerr := manifests.CanonicalizeJSONValue(reduced)
			if rerr != nil {
				t.Fatalf("the input parses but its reduced form %q does not: %v", reduced, rerr)
			}
			obj["text"] = ""
			if rv.(map[string]any)["text"] != "" || len(rv.(map[string]any)) != len(obj) {
				t.Fatalf("reduced %q reads %#v, want %#v", reduced, rv, obj)
			}
		} else if _, _, rerr := manifests.CanonicalizeJSONValue(reduced); rerr == nil {
			t.Fatalf("the input %q is refused (%v) but its reduced form %q parses", raw, err, reduced)
		}
	})
}

// FuzzRead: read in pieces of any size, the input comes back
// as the whole input would parse, or with its last text member emptied
// and that text's decoded size, past the limit; an input the parser
// refuses comes back refused.
func FuzzRead(f *testing.F) {
	big := strings.Repeat("z", 20)
	for _, s := range []string{
		`{"id":"w","text":"` + big + `"}`,
		`{"text":"` + big + `","text":"a"}`,
		`{"text":"a","t\u0065xt":"` + big + `\u00e9\ud83d\ude00"}`,
		`{"x":{"text":"` + big + `"},"text":"` + big + "é😀" + `"}`,
		`{"text":"` + big + `\ud800"}`, `{"text":"` + big, `["text","` + big + `"]`,
		`{"text":"` + big + "\xed\xa0\x80" + `"}`,
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, raw []byte, piece uint8) {
		const maxBytes = 8
		n := int(piece)%17 + 1
		reduced, oversize, err := Read(&pieces{raw, n}, maxBytes, len(raw))
		if err != nil {
			t.Fatal(err)
		}
		_, want, werr := manifests.CanonicalizeJSONValue(raw)
		_, got, gerr := manifests.CanonicalizeJSONValue(reduced)
		if werr != nil {
			if gerr == nil {
				t.Fatalf("%q is refused (%v); read in pieces of %d it is %q, which parses", raw, werr, n, reduced)
			}
			return
		}
		if gerr != nil {
			t.Fatalf("%q parses; read in pieces of %d it is %q, which does not: %v", raw, n, reduced, gerr)
		}
		if oversize > 0 {
			obj, _ := want.(map[string]any)
			text, ok := obj["text"].(string)
			if !ok || int64(len(text)) != oversize || oversize <= maxBytes {
				t.Fatalf("%q read with oversize %d; its text is %#v", raw, oversize, obj["text"])
			}
			obj["text"] = ""
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q read in pieces of %d (oversize %d) as %q: %#v, want %#v", raw, n, oversize, reduced, got, want)
		}
	})
}

// pieces reads its bytes n at a time.
type pieces struct {
	b []byte
	n int
}

func (p *pieces) Read(b []byte) (int, error) {
	if len(p.b) == 0 {
		return 0, io.EOF
	}
	k := copy(b[:min(len(b), p.n)], p.b)
	p.b = p.b[k:]
	return k, nil
}

// BenchmarkRead reads a put_file input of 90 MiB whose text
// passes the 16 MiB limit, as cairn serve reads such a body, and reports
// what it keeps.
func BenchmarkRead(b *testing.B) {
	in := []byte(`{"id":"w","section":"outputs","path":"a.txt","text":"` + strings.Repeat("z", 90<<20) + `"}`)
	b.SetBytes(int64(len(in)))
	var kept int
	for b.Loop() {
		reduced, oversize, err := Read(&pieces{in, 256 << 10}, 16<<20, len(in))
		if err != nil || oversize == 0 {
			b.Fatal(err, oversize)
		}
		kept = len(reduced)
	}
	b.ReportMetric(float64(kept), "kept-B")
}
