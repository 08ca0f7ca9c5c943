package nokv

import (
	"slices"
	"strings"
	"testing"
)

// TestPathValidAgreesWithSplitPath: pathReason's quick check accepts a
// path exactly when SplitPath accepts its joined form and splits it back
// into the same components.
func TestPathValidAgreesWithSplitPath(t *testing.T) {
	long := strings.Repeat("a", MaxPathBytes)
	cases := [][]string{
		{"a"}, {"a", "b.txt"}, {"outputs", "d1", "f1.txt"}, {"é", "日本"},
		{""}, {"a", ""}, {"."}, {"a", ".."}, {"a/b"}, {"/a"}, {"a\\b"}, {"a\x00"},
		{"\xff"}, {"a", "\xc3"}, {long}, {long[:MaxPathBytes-2], "b"}, {long[:MaxPathBytes-1], "b"},
		{"..."}, {".a"}, {"a."},
	}
	many := make([]string, MaxPathComponents)
	for i := range many {
		many[i] = "x"
	}
	cases = append(cases, many, append(slices.Clone(many), "y"))
	for _, p := range cases {
		c, err := SplitPath(strings.Join(p, "/"))
		want := err == nil && slices.Equal(c, p)
		if got := pathValid(p); got != want {
			t.Errorf("pathValid(%q) = %v, SplitPath says %v (%v)", p, got, want, err)
		}
	}
}

// FuzzPathValid checks the same on any two components.
func FuzzPathValid(f *testing.F) {
	f.Add("a", "b")
	f.Add("..", "x")
	f.Add("a/b", "")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, p := range [][]string{{a}, {a, b}} {
			c, err := SplitPath(strings.Join(p, "/"))
			if want := err == nil && slices.Equal(c, p); pathValid(p) != want {
				t.Fatalf("pathValid(%q) = %v, SplitPath says %v", p, !want, want)
			}
		}
	})
}
