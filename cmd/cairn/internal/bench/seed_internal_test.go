package bench

import (
	"bytes"
	"compress/flate"
	"strings"
	"testing"
)

// deflated is the length of s compressed with flate at its best.
func deflated(t *testing.T, s string) int {
	var b bytes.Buffer
	w, err := flate.NewWriter(&b, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte(s))
	w.Close()
	return b.Len()
}

// TestBodies: random bodies are as long as the text ones, differ from
// file to file and compress little; the text ones compress well.
func TestBodies(t *testing.T) {
	text, random := newShape(100, 10, false), newShape(100, 10, true)
	if a, b := random.text(1), random.text(2); a == b || len(a) < 150 || len(a) > 400 {
		t.Fatalf("random bodies %q and %q", a, b)
	}
	if len(text.putBody(0)) != 2048 || len(random.putBody(0)) != 2048 || random.putBody(0) == random.putBody(1) {
		t.Fatalf("put bodies of %d and %d bytes", len(text.putBody(0)), len(random.putBody(0)))
	}
	var all, allText strings.Builder
	for i := range 50 {
		all.WriteString(random.text(i))
		allText.WriteString(text.text(i))
	}
	if n := deflated(t, all.String()); n < all.Len()*2/3 {
		t.Errorf("random bodies deflate from %d to %d bytes", all.Len(), n)
	}
	if n := deflated(t, allText.String()); n > allText.Len()/3 {
		t.Errorf("text bodies deflate from %d to %d bytes only", allText.Len(), n)
	}
}
