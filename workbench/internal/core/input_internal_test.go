package core

import (
	"strings"
	"testing"
	"unsafe"
)

// TestPayloadSharesCanonicalText: a payload without escapes is decoded as
// a slice of the canonical arguments, not a copy, and an append to it
// copies instead of writing over the arguments; a payload with escapes is
// decoded to its text.
func TestPayloadSharesCanonicalText(t *testing.T) {
	canon, _, err := canonicalArguments([]byte(`{"text":"` + strings.Repeat("z", 1<<20) + `","content_type":"text/plain"}`))
	if err != nil {
		t.Fatal(err)
	}
	var p PayloadInput
	if err := DecodeInput(canon, &p); err != nil {
		t.Fatal(err)
	}
	text := []byte(*p.Text)
	start := uintptr(unsafe.Pointer(unsafe.SliceData(canon)))
	at := uintptr(unsafe.Pointer(unsafe.SliceData(text)))
	if len(text) != 1<<20 || at < start || at+uintptr(len(text)) > start+uintptr(len(canon)) {
		t.Fatalf("the payload (%d bytes) is a copy, not a slice of the canonical arguments", len(text))
	}
	if cap(text) != len(text) {
		t.Fatalf("payload capacity %d, want its length %d", cap(text), len(text))
	}
	before := string(canon)
	_ = append(text, "more"...)
	if string(canon) != before {
		t.Fatal("an append to the payload changed the arguments")
	}

	var q PayloadInput
	if err := DecodeInput([]byte(`{"text":"a\"b\u00e9"}`), &q); err != nil {
		t.Fatal(err)
	}
	if got := string(*q.Text); got != `a"bé` {
		t.Fatalf("escaped payload %q", got)
	}
}
