package digest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
)

// Size is the length of a Hash in bytes.
const Size = sha256.Size

// URIPrefix starts every digest URI.
const URIPrefix = "sha256:"

// ErrInvalid is wrapped by the errors of Parse, ParseURI and UnmarshalText
// for text that is not a Hash in the form they read.
var ErrInvalid = errors.New("invalid digest")

// Hash is the SHA-256 of an immutable object's exact bytes: its identity.
// It is a comparable value, usable as a map key. The zero Hash names
// nothing.
type Hash [Size]byte

// Sum returns the Hash of b.
func Sum(b []byte) Hash { return sha256.Sum256(b) }

// String returns 64 lowercase hex digits, the form of object names.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// URI returns "sha256:" and 64 lowercase hex digits, the form of the
// contract's digest strings.
func (h Hash) URI() string {
	var buf [len(URIPrefix) + 2*Size]byte
	copy(buf[:], URIPrefix)
	hex.Encode(buf[len(URIPrefix):], h[:])
	return string(buf[:])
}

// IsZero reports whether h is the zero Hash.
func (h Hash) IsZero() bool { return h == Hash{} }

// Parse reads exactly 64 lowercase hex digits (String's form).
func Parse(s string) (Hash, error) {
	var h Hash
	if !lowerHex(s) {
		return Hash{}, fmt.Errorf("digest: parse %q: want 64 lowercase hex digits: %w", s, ErrInvalid)
	}
	// lowerHex admits only digits that decode.
	_, _ = hex.Decode(h[:], []byte(s))
	return h, nil
}

// ParseURI reads exactly ^sha256:[0-9a-f]{64}$ (URI's form).
func ParseURI(s string) (Hash, error) {
	if !ValidURI(s) {
		return Hash{}, fmt.Errorf("digest: parse %q: want %q and 64 lowercase hex digits: %w", s, URIPrefix, ErrInvalid)
	}
	var h Hash
	_, _ = hex.Decode(h[:], []byte(s[len(URIPrefix):]))
	return h, nil
}

// ValidURI reports whether ParseURI accepts s.
func ValidURI(s string) bool {
	return len(s) > len(URIPrefix) && s[:len(URIPrefix)] == URIPrefix && lowerHex(s[len(URIPrefix):])
}

// isLowerHex marks the bytes lowerHex accepts.
var isLowerHex = func() (t [256]bool) {
	for _, c := range "0123456789abcdef" {
		t[c] = true
	}
	return t
}()

// lowerHex reports whether s is exactly 2*Size lowercase hex digits. It
// runs for every digest of every record decoded, so it looks each byte
// up in a table and branches once per eight.
func lowerHex(s string) bool {
	if len(s) != 2*Size {
		return false
	}
	for i := 0; i < len(s); i += 8 {
		ok := isLowerHex[s[i]] && isLowerHex[s[i+1]] && isLowerHex[s[i+2]] && isLowerHex[s[i+3]] &&
			isLowerHex[s[i+4]] && isLowerHex[s[i+5]] && isLowerHex[s[i+6]] && isLowerHex[s[i+7]]
		if !ok {
			return false
		}
	}
	return true
}

// MarshalText returns the URI form (see the package comment).
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.URI()), nil }

// UnmarshalText reads the URI form exactly, as ParseURI does.
func (h *Hash) UnmarshalText(text []byte) error {
	v, err := ParseURI(string(text))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// Verify checks that b hashes to want. A mismatch wraps
// bucket.ErrIntegrity.
func Verify(b []byte, want Hash) error {
	if got := Sum(b); got != want {
		return fmt.Errorf("digest: verify: want %s, got %s: %w", want, got, bucket.ErrIntegrity)
	}
	return nil
}
