package manifests_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/manifests"
)

const (
	emptySHA = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	abcSHA   = "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
)

func TestDigest(t *testing.T) {
	if got := manifests.Digest(nil); got != emptySHA {
		t.Errorf("Digest(empty) = %s, want %s", got, emptySHA)
	}
	if got := manifests.Digest([]byte("abc")); got != abcSHA {
		t.Errorf("Digest(abc) = %s, want %s", got, abcSHA)
	}
	h := manifests.Sum([]byte("abc"))
	if got, want := h.String(), abcSHA; got != want {
		t.Errorf("String = %s, want %s", got, want)
	}
	if got, want := h.Hex(), strings.TrimPrefix(abcSHA, "sha256:"); got != want {
		t.Errorf("Hex = %s, want %s", got, want)
	}
	if h.IsZero() || !(manifests.Hash{}).IsZero() {
		t.Error("IsZero wrong")
	}
	// Hash is a comparable value usable as a map key.
	seen := map[manifests.Hash]bool{h: true}
	if !seen[manifests.Sum([]byte("abc"))] || seen[manifests.Sum([]byte("abd"))] {
		t.Error("Hash as map key")
	}
}

func TestParseHash(t *testing.T) {
	h, err := manifests.ParseHash(abcSHA)
	if err != nil {
		t.Fatal(err)
	}
	if h != manifests.Sum([]byte("abc")) {
		t.Errorf("ParseHash(%s) = %s", abcSHA, h)
	}
	hex := strings.TrimPrefix(abcSHA, "sha256:")
	if h2, err := manifests.ParseHex(hex); err != nil || h2 != h {
		t.Errorf("ParseHex = %s, %v", h2, err)
	}
	for _, bad := range []string{
		"", "sha256:", hex, "SHA256:" + hex, "sha256:" + strings.ToUpper(hex),
		"sha256:" + hex[:63], "sha256:" + hex + "0", "sha256:" + hex[:63] + "g",
		" sha256:" + hex, "sha256:" + hex + " ", "sha512:" + hex, "sha256-" + hex,
	} {
		if _, err := manifests.ParseHash(bad); !errors.Is(err, manifests.ErrInvalid) {
			t.Errorf("ParseHash(%q) = %v, want ErrInvalid", bad, err)
		}
		if manifests.ValidDigestURI(bad) {
			t.Errorf("ValidDigestURI(%q) = true", bad)
		}
	}
	for _, bad := range []string{"", abcSHA, strings.ToUpper(hex), hex[:63], hex + "0"} {
		if _, err := manifests.ParseHex(bad); !errors.Is(err, manifests.ErrInvalid) {
			t.Errorf("ParseHex(%q) = %v, want ErrInvalid", bad, err)
		}
	}
	if !manifests.ValidDigestURI(abcSHA) || !manifests.ValidDigestURI(emptySHA) {
		t.Error("ValidDigestURI rejects a valid URI")
	}
}

// TestHashText: a Hash field encodes as its digest URI and decodes strictly.
func TestHashText(t *testing.T) {
	type doc struct {
		Root manifests.Hash `json:"root"`
	}
	b, err := json.Marshal(doc{Root: manifests.Sum([]byte("abc"))})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"root":"`+abcSHA+`"}`; got != want {
		t.Errorf("Marshal = %s, want %s", got, want)
	}
	var d doc
	if err := json.Unmarshal(b, &d); err != nil || d.Root != manifests.Sum([]byte("abc")) {
		t.Errorf("Unmarshal = %v, %v", d.Root, err)
	}
	if err := json.Unmarshal([]byte(`{"root":"`+strings.ToUpper(abcSHA)+`"}`), &d); !errors.Is(err, manifests.ErrInvalid) {
		t.Errorf("Unmarshal upper case = %v, want ErrInvalid", err)
	}
}

func TestVerify(t *testing.T) {
	b := []byte(`{"a":1}`)
	if err := manifests.Verify(b, manifests.Sum(b)); err != nil {
		t.Errorf("Verify(own hash) = %v", err)
	}
	err := manifests.Verify(append(b, ' '), manifests.Sum(b))
	if !errors.Is(err, manifests.ErrIntegrity) || !errors.Is(err, bucket.ErrIntegrity) {
		t.Errorf("Verify(tampered) = %v, want ErrIntegrity", err)
	}
}
