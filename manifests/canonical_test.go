package manifests_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/manifests"
)

func canon(t *testing.T, in string) string {
	t.Helper()
	out, err := manifests.CanonicalizeJSON([]byte(in))
	if err != nil {
		t.Fatalf("CanonicalizeJSON(%q): %v", in, err)
	}
	return string(out)
}

// TestEscapeControlCharacters: every U+0000-U+001F, given escaped in the
// input, comes out as its short escape or as \u00xx in lower-case hex.
func TestEscapeControlCharacters(t *testing.T) {
	var in strings.Builder
	in.WriteByte('"')
	for c := 0; c < 0x20; c++ {
		fmt.Fprintf(&in, `\u%04X`, c) // upper-case hex in, lower-case out
	}
	in.WriteByte('"')
	want := `"\u0000\u0001\u0002\u0003\u0004\u0005\u0006\u0007\b\t\n\u000b\f\r\u000e\u000f` +
		`\u0010\u0011\u0012\u0013\u0014\u0015\u0016\u0017\u0018\u0019\u001a\u001b\u001c\u001d\u001e\u001f"`
	if got := canon(t, in.String()); got != want {
		t.Errorf("control characters:\n got %s\nwant %s", got, want)
	}
	// The short escapes in the input are kept as short escapes.
	if got, want := canon(t, `"\b\f\n\r\t"`), `"\b\f\n\r\t"`; got != want {
		t.Errorf("short escapes: got %s, want %s", got, want)
	}
}

// TestEscapeOnlyWhatMustBe: quote and backslash are escaped; '/', '<', '>',
// '&', DEL, U+2028, U+2029 and all non-ASCII are raw, whether the input
// spelled them raw or escaped.
func TestEscapeOnlyWhatMustBe(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`"\""`, `"\""`},
		{`"\\"`, `"\\"`},
		{`"a\/b"`, `"a/b"`},
		{`"a/b"`, `"a/b"`},
		{`"\u003c\u003e\u0026"`, `"<>&"`},
		{`"<>&"`, `"<>&"`},
		{`"\u007f"`, "\"\x7f\""},
		{`"\u2028\u2029"`, "\"\u2028\u2029\""},
		{"\"\u2028\u2029\"", "\"\u2028\u2029\""},
		{`"\u00e9\u00E9"`, `"éé"`},
		{`"é"`, `"é"`},
		{`"\ud83d\ude00"`, `"😀"`},
		{`"\uD83D\uDE00"`, `"😀"`},
		{`"😀"`, `"😀"`},
		{`"\ufffd"`, "\"\uFFFD\""},
		{`"日本語"`, `"日本語"`},
		{`"\u0041"`, `"A"`},
	} {
		if got := canon(t, c.in); got != c.want {
			t.Errorf("CanonicalizeJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// TestKeyOrder: keys sort by the bytes of their UTF-8 encoding. Upper case
// sorts before lower case, ASCII before non-ASCII, and U+FFFD (EF BF BD)
// before U+1F600 (F0 9F 98 80) although in UTF-16 the surrogate pair of
// U+1F600 (D83D DE00) sorts first.
func TestKeyOrder(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"z":1,"é":2,"Z":3,"a":4,"":5}`, `{"":5,"Z":3,"a":4,"z":1,"é":2}`},
		{`{"\ud83d\ude00":1,"\ufffd":2}`, "{\"\uFFFD\":2,\"😀\":1}"},
		{`{"\ud83d\ude00":1,"\ue000":2}`, "{\"\uE000\":2,\"😀\":1}"},
		{`{"ab":1,"a":2,"b":3,"aa":4}`, `{"a":2,"aa":4,"ab":1,"b":3}`},
		{`{"b":1,"a\u0000":2,"a":3}`, `{"a":3,"a\u0000":2,"b":1}`},
	} {
		if got := canon(t, c.in); got != c.want {
			t.Errorf("CanonicalizeJSON(%s) =\n %s, want\n %s", c.in, got, c.want)
		}
	}
}

// TestNested: objects are sorted at every depth, arrays keep their order,
// whitespace disappears.
func TestNested(t *testing.T) {
	in := `
	{
		"z": [ 3, 1, {"y": true, "x": null}, [ ] ],
		"a": { "c": { "e": "v", "d": -1 }, "b": {} },
		"m": "s"
	}`
	want := `{"a":{"b":{},"c":{"d":-1,"e":"v"}},"m":"s","z":[3,1,{"x":null,"y":true},[]]}`
	if got := canon(t, in); got != want {
		t.Errorf("nested:\n got %s\nwant %s", got, want)
	}
}

// TestDuplicateKeysLastWins: a key given twice keeps its last value, at any
// depth and whatever the first value was.
func TestDuplicateKeysLastWins(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"a":1,"b":2,"a":3}`, `{"a":3,"b":2}`},
		{`{"a":{"x":1},"a":[2]}`, `{"a":[2]}`},
		{`{"o":{"k":1,"k":2,"k":3}}`, `{"o":{"k":3}}`},
		{`{"\u0061":1,"a":2}`, `{"a":2}`},
	} {
		if got := canon(t, c.in); got != c.want {
			t.Errorf("CanonicalizeJSON(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

func TestIdempotent(t *testing.T) {
	for _, in := range []string{
		`{"b":[1,2.5,-0,"\u001f"],"a":{"y":1e21,"x":"<&>"}}`,
		`[null,true,false,"",{},[],0,-1,1e-7]`,
		`"plain"`, `12`, `null`,
	} {
		once := canon(t, in)
		if twice := canon(t, once); twice != once {
			t.Errorf("not idempotent: %s -> %s -> %s", in, once, twice)
		}
		if err := manifests.CheckCanonical([]byte(once)); err != nil {
			t.Errorf("CheckCanonical(%s): %v", once, err)
		}
	}
}

// TestUnstableFloats: the reference parser does not read every shortest
// float text back to the same float, so canonicalization is not idempotent
// for those numbers, and their canonical bytes fail the canonical check just
// as they fail the reference's own check.
func TestUnstableFloats(t *testing.T) {
	for _, c := range []struct{ in, once, twice string }{
		{"100070000101117100000000", "1.0007000010111709e23", "1.0007000010111707e23"},
		{"51.248178375505404", "51.24817837550541", "51.24817837550541"},
		{"[1.0007000010111709e23]", "[1.0007000010111707e23]", "[1.0007000010111707e23]"},
	} {
		once := canon(t, c.in)
		twice := canon(t, once)
		if once != c.once || twice != c.twice {
			t.Errorf("%s -> %s -> %s, want %s -> %s", c.in, once, twice, c.once, c.twice)
		}
		err := manifests.CheckCanonical([]byte(once))
		if once == twice && err != nil || once != twice && !errors.Is(err, manifests.ErrNotCanonical) {
			t.Errorf("CheckCanonical(%s) = %v", once, err)
		}
	}
}

func TestCheckCanonical(t *testing.T) {
	for _, c := range []struct {
		in   string
		want error
	}{
		{`{"a":1,"b":2}`, nil},
		{`{"b":2,"a":1}`, manifests.ErrNotCanonical},
		{`{"a": 1}`, manifests.ErrNotCanonical},
		{` {"a":1}`, manifests.ErrNotCanonical},
		{`{"a":1}` + "\n", manifests.ErrNotCanonical},
		{`{"a":1,"a":1}`, manifests.ErrNotCanonical},
		{`"a\/b"`, manifests.ErrNotCanonical},
		{`"\u0041"`, manifests.ErrNotCanonical},
		{`"\u001F"`, manifests.ErrNotCanonical},
		{`1E2`, manifests.ErrNotCanonical},
		{`1e21`, nil},
		{`1e+21`, manifests.ErrNotCanonical},
		{`-0`, manifests.ErrNotCanonical},
		{`-0.0`, nil},
		{`{"a":1`, manifests.ErrInvalid},
	} {
		err := manifests.CheckCanonical([]byte(c.in))
		if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("CheckCanonical(%q) = %v, want %v", c.in, err, c.want)
		}
	}
}

// TestRejected: everything the reference parser refuses is ErrInvalid.
func TestRejected(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, in := range []string{
		"", " ", "nul", "tru", "True", "nulls", "'a'", `"abc`, `"\`, `"\x"`, `"\u12G4"`, `"\u123"`,
		"\"\xff\"", "\"a\xc3\"", "\"\xc0\xaf\"", "\"\xed\xa0\x80\"", "{\"\xff\":1}",
		`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800x"`, `"\ud800\\"`, `"\udbff\udbff"`,
		"\"\x00\"", "\"a\nb\"", "\"\x1f\"",
		"{} {}", "1 2", "[1]x", "{}}", "[]]",
		"[1,]", "[,1]", "[1 2]", "{\"a\":1,}", "{,}", `{"a"}`, `{"a":}`, `{"a" 1}`, `{1:2}`, `{a:1}`,
		"[", "{", `{"a":1`, "[1", "\x00", "/* c */ 1", "1 // c",
		deep(manifests.MaxDepth + 1),
		`{"a":` + deep(manifests.MaxDepth) + `}`,
	} {
		if out, err := manifests.CanonicalizeJSON([]byte(in)); !errors.Is(err, manifests.ErrInvalid) {
			t.Errorf("CanonicalizeJSON(%.30q) = %q, %v; want ErrInvalid", in, out, err)
		}
	}
	// Exactly MaxDepth levels are accepted.
	if got, want := canon(t, deep(manifests.MaxDepth)), deep(manifests.MaxDepth); got != want {
		t.Errorf("depth %d not accepted", manifests.MaxDepth)
	}
	if got, want := canon(t, `{"a":`+deep(manifests.MaxDepth-1)+`}`), `{"a":`+deep(manifests.MaxDepth-1)+`}`; got != want {
		t.Errorf("depth %d under an object not accepted", manifests.MaxDepth)
	}
}

// TestCanonicalGoValues: Canonical sorts struct fields and map keys, undoes
// encoding/json's HTML escaping and keeps json.Number and json.RawMessage
// number text.
func TestCanonicalGoValues(t *testing.T) {
	type inner struct {
		Z string `json:"z"`
		A int    `json:"a"`
	}
	v := struct {
		Zeta  inner           `json:"zeta"`
		Alpha string          `json:"alpha"`
		Raw   json.RawMessage `json:"raw"`
		Num   json.Number     `json:"num"`
		Map   map[string]int  `json:"map"`
	}{
		Zeta:  inner{Z: "<a & b>\u2028", A: 1},
		Alpha: "x",
		Raw:   json.RawMessage(`{ "y" : 1.50, "x" : [ 1E2 ] }`),
		Num:   "2.0",
		Map:   map[string]int{"b": 2, "a": 1, "é": 3, "Z": 4},
	}
	got, err := manifests.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	want := "{\"alpha\":\"x\",\"map\":{\"Z\":4,\"a\":1,\"b\":2,\"é\":3},\"num\":2.0,\"raw\":{\"x\":[100.0],\"y\":1.5},\"zeta\":{\"a\":1,\"z\":\"<a & b>\u2028\"}}"
	if string(got) != want {
		t.Errorf("Canonical:\n got %s\nwant %s", got, want)
	}
	if _, err := manifests.Canonical(json.RawMessage(`{"a":1e400}`)); !errors.Is(err, manifests.ErrInvalid) {
		t.Errorf("Canonical(1e400) = %v, want ErrInvalid", err)
	}
	if _, err := manifests.Canonical(make(chan int)); !errors.Is(err, manifests.ErrInvalid) {
		t.Errorf("Canonical(chan) = %v, want ErrInvalid", err)
	}
}
