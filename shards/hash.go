package shards

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
)

// Hash is the identity of an immutable object: the SHA-256 of its exact
// bytes. It is a comparable value and the key of the cache.
type Hash [sha256.Size]byte

// ErrInvalidHash is returned by ParseHash for text that is not 64
// lowercase hexadecimal characters.
var ErrInvalidHash = errors.New("invalid hash")

// Sum returns the hash of b.
func Sum(b []byte) Hash { return sha256.Sum256(b) }

// String returns the hash as 64 lowercase hexadecimal characters.
func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// IsZero reports whether h is the zero hash, which names nothing.
func (h Hash) IsZero() bool { return h == Hash{} }

// ParseHash parses 64 lowercase hexadecimal characters. Upper case is
// refused so that each hash has exactly one spelling in keys and documents.
func ParseHash(s string) (Hash, error) {
	var h Hash
	if err := parseLowerHex(h[:], s); err != nil {
		return Hash{}, fmt.Errorf("shards: parse hash %q: %w", s, ErrInvalidHash)
	}
	return h, nil
}

// MarshalText returns the hash's String form.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText parses the String form.
func (h *Hash) UnmarshalText(b []byte) error {
	v, err := ParseHash(string(b))
	if err != nil {
		return err
	}
	*h = v
	return nil
}

// parseLowerHex decodes exactly len(dst) bytes of lowercase hex.
func parseLowerHex(dst []byte, s string) error {
	if len(s) != 2*len(dst) {
		return errors.New("wrong length")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return errors.New("not lowercase hex")
		}
	}
	_, err := hex.Decode(dst, []byte(s))
	return err
}

// Ref names an immutable object and what a reader can check before
// fetching it: its hash, its size in bytes and, for a shard object, its
// record count.
type Ref struct {
	Hash  Hash
	Size  int64
	Count uint32
}
