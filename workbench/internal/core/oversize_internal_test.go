package core

import (
	"strings"
	"testing"
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
		reduced, size, ok := emptyOversizedText(raw, maxBytes)
		if !ok {
			return
		}
		if size <= maxBytes {
			t.Fatalf("settled %q with size %d, within the limit", raw, size)
		}
		_, v, err := canonicalArguments(raw)
		if err == nil {
			obj, isObj := v.(map[string]any)
			text, isText := obj["text"].(string)
			if !isObj || !isText || int64(len(text)) != size {
				t.Fatalf("settled %q with size %d; the parser reads %#v", raw, size, v)
			}
			_, rv, rerr := canonicalArguments(reduced)
			if rerr != nil {
				t.Fatalf("the input parses but its reduced form %q does not: %v", reduced, rerr)
			}
			obj["text"] = ""
			if rv.(map[string]any)["text"] != "" || len(rv.(map[string]any)) != len(obj) {
				t.Fatalf("reduced %q reads %#v, want %#v", reduced, rv, obj)
			}
		} else if _, _, rerr := canonicalArguments(reduced); rerr == nil {
			t.Fatalf("the input %q is refused (%v) but its reduced form %q parses", raw, err, reduced)
		}
	})
}
