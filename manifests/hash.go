package manifests

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// DigestPrefix starts every digest URI.
const DigestPrefix = "sha256:"

// digestURILen is len("sha256:") + 64 hex digits.
const digestURILen = len(DigestPrefix) + 2*sha256.Size

// Hash is the SHA-256 of an immutable object's exact bytes: its identity.
// It is a comparable value (usable as a map key). Its text form is the digest
// URI "sha256:" followed by 64 lower-case hex digits; MarshalText and
// UnmarshalText use that form, so a Hash field in a document encodes as a
// digest URI string.
type Hash [sha256.Size]byte

// Sum returns the Hash of b.
func Sum(b []byte) Hash { return Hash(sha256.Sum256(b)) }

// Digest returns the digest URI of b: "sha256:" + lower-case hex SHA-256.
func Digest(b []byte) string { return Sum(b).String() }

// String returns the digest URI form, "sha256:<64 lower-case hex>".
func (h Hash) String() string {
	var buf [digestURILen]byte
	copy(buf[:], DigestPrefix)
	hex.Encode(buf[len(DigestPrefix):], h[:])
	return string(buf[:])
}

// Hex returns the 64 lower-case hex digits without the prefix.
func (h Hash) Hex() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero Hash (which names nothing).
func (h Hash) IsZero() bool { return h == Hash{} }

// MarshalText returns the digest URI form.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText parses the digest URI form exactly, as ParseHash does.
func (h *Hash) UnmarshalText(text []byte) error {
	parsed, err := ParseHash(string(text))
	if err != nil {
		return err
	}
	*h = parsed
	return nil
}

// ParseHash parses a digest URI. It accepts exactly ^sha256:[0-9a-f]{64}$:
// upper-case hex, other algorithms, whitespace and other lengths are errors
// wrapping ErrInvalid.
func ParseHash(s string) (Hash, error) {
	if !ValidDigestURI(s) {
		return Hash{}, fmt.Errorf("manifests: parse hash %q: want sha256: and 64 lower-case hex digits: %w", s, ErrInvalid)
	}
	var h Hash
	// ValidDigestURI admits only lower-case hex digits, which always decode.
	_, _ = hex.Decode(h[:], []byte(s[len(DigestPrefix):]))
	return h, nil
}

// ParseHex parses 64 lower-case hex digits without a prefix (the form the
// Workbench uses for commit identities). Anything else wraps ErrInvalid.
func ParseHex(s string) (Hash, error) {
	if len(s) != 2*sha256.Size || !lowerHex(s) {
		return Hash{}, fmt.Errorf("manifests: parse hex %q: want 64 lower-case hex digits: %w", s, ErrInvalid)
	}
	var h Hash
	_, _ = hex.Decode(h[:], []byte(s))
	return h, nil
}

// ValidDigestURI reports whether s matches ^sha256:[0-9a-f]{64}$.
func ValidDigestURI(s string) bool {
	return len(s) == digestURILen && s[:len(DigestPrefix)] == DigestPrefix && lowerHex(s[len(DigestPrefix):])
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Verify checks that b hashes to want. A mismatch wraps ErrIntegrity (which
// is bucket.ErrIntegrity). Every object fetched by its hash is verified
// before it is decoded, used or cached.
func Verify(b []byte, want Hash) error {
	if got := Sum(b); got != want {
		return fmt.Errorf("manifests: verify: want %s, got %s: %w", want, got, ErrIntegrity)
	}
	return nil
}
