package shards

import (
	"encoding/hex"
	"errors"

	"github.com/cairnstore/cairn/bucket/digest"
)

// Hash is the identity of an immutable object: the SHA-256 of its exact
// bytes, named by its String (plain hex). It is digest.Hash, the one
// content-address type; the alias keeps this package's spelling for its
// callers until they name digest.Hash themselves.
type Hash = digest.Hash

// ErrInvalidHash is wrapped by ParseHash for text that is not 64 lowercase
// hexadecimal characters. It is digest.ErrInvalid.
var ErrInvalidHash = digest.ErrInvalid

// Sum returns the hash of b.
func Sum(b []byte) Hash { return digest.Sum(b) }

// ParseHash parses 64 lowercase hexadecimal characters (digest.Parse).
func ParseHash(s string) (Hash, error) { return digest.Parse(s) }

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
