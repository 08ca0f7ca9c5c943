package digest_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
)

const (
	emptyHex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	abcHex   = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
)

func TestSumSpellings(t *testing.T) {
	for _, c := range []struct{ in, hex string }{{"", emptyHex}, {"abc", abcHex}} {
		h := digest.Sum([]byte(c.in))
		if got, want := h.String(), c.hex; got != want {
			t.Errorf("Sum(%q).String() = %s, want %s", c.in, got, want)
		}
		if got, want := h.URI(), "sha256:"+c.hex; got != want {
			t.Errorf("Sum(%q).URI() = %s, want %s", c.in, got, want)
		}
	}
}

func TestIsZeroAndMapKey(t *testing.T) {
	h := digest.Sum([]byte("abc"))
	if got, want := h.IsZero(), false; got != want {
		t.Errorf("IsZero(Sum) = %v, want %v", got, want)
	}
	if got, want := (digest.Hash{}).IsZero(), true; got != want {
		t.Errorf("IsZero(zero) = %v, want %v", got, want)
	}
	seen := map[digest.Hash]bool{h: true}
	if got, want := seen[digest.Sum([]byte("abc"))], true; got != want {
		t.Errorf("map lookup of an equal hash = %v, want %v", got, want)
	}
	if got, want := seen[digest.Sum([]byte("abd"))], false; got != want {
		t.Errorf("map lookup of another hash = %v, want %v", got, want)
	}
}

func TestParseRoundTrips(t *testing.T) {
	want := digest.Sum([]byte("abc"))
	if got, err := digest.Parse(abcHex); err != nil || got != want {
		t.Errorf("Parse(%s) = %s, %v; want %s, nil", abcHex, got, err, want)
	}
	if got, err := digest.ParseURI("sha256:" + abcHex); err != nil || got != want {
		t.Errorf("ParseURI = %s, %v; want %s, nil", got, err, want)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, bad := range []string{
		"", abcHex[:63], abcHex + "0", strings.ToUpper(abcHex), " " + abcHex[1:],
		"sha256:" + abcHex, "g" + abcHex[1:],
	} {
		if _, err := digest.Parse(bad); !errors.Is(err, digest.ErrInvalid) {
			t.Errorf("Parse(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	for _, bad := range []string{
		"", "sha256:", abcHex, "sha256:" + abcHex[:63], "sha256:" + abcHex + "0",
		"sha256:" + strings.ToUpper(abcHex), "SHA256:" + abcHex, "sha512:" + abcHex,
		" sha256:" + abcHex, "sha256:" + abcHex + "\n",
	} {
		if _, err := digest.ParseURI(bad); !errors.Is(err, digest.ErrInvalid) {
			t.Errorf("ParseURI(%q) = %v, want ErrInvalid", bad, err)
		}
		if got, want := digest.ValidURI(bad), false; got != want {
			t.Errorf("ValidURI(%q) = %v, want %v", bad, got, want)
		}
	}
	// A wrong byte at any position, of the neighbours of the ranges.
	for i := range len(abcHex) {
		for _, c := range "/:`g" {
			bad := abcHex[:i] + string(c) + abcHex[i+1:]
			if digest.ValidURI("sha256:" + bad) {
				t.Errorf("ValidURI accepts %q", bad)
			}
		}
	}
	if got, want := digest.ValidURI("sha256:"+emptyHex), true; got != want {
		t.Errorf("ValidURI(empty's URI) = %v, want %v", got, want)
	}
}

// TestText: a Hash in a JSON document is its URI, and only the URI decodes.
func TestText(t *testing.T) {
	type doc struct {
		Root digest.Hash `json:"root"`
	}
	b, err := json.Marshal(doc{Root: digest.Sum([]byte("abc"))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"root":"sha256:`+abcHex+`"}`; got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil || d.Root != digest.Sum([]byte("abc")) {
		t.Fatalf("Unmarshal = %s, %v", d.Root, err)
	}
	if err := json.Unmarshal([]byte(`{"root":"`+abcHex+`"}`), &d); !errors.Is(err, digest.ErrInvalid) {
		t.Fatalf("Unmarshal of plain hex = %v, want ErrInvalid", err)
	}
}

func TestVerify(t *testing.T) {
	b := []byte("body")
	if err := digest.Verify(b, digest.Sum(b)); err != nil {
		t.Errorf("Verify(own hash) = %v, want nil", err)
	}
	if err := digest.Verify(append(b, ' '), digest.Sum(b)); !errors.Is(err, bucket.ErrIntegrity) {
		t.Errorf("Verify(tampered) = %v, want ErrIntegrity", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(abcHex)
	f.Add("sha256:" + emptyHex)
	f.Fuzz(func(t *testing.T, s string) {
		if h, err := digest.Parse(s); err == nil && h.String() != s {
			t.Fatalf("Parse(%q).String() = %q", s, h.String())
		}
		if h, err := digest.ParseURI(s); err == nil && h.URI() != s {
			t.Fatalf("ParseURI(%q).URI() = %q", s, h.URI())
		}
	})
}
