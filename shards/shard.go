package shards

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// Shards is the number of shards of every family.
const Shards = 256

// ShardKey returns the part of a record key of family f that selects its
// shard, after checking what the family's sharding needs of the key's
// shape (and that it is not empty). The result may alias key.
func (s *Schema) ShardKey(f Family, key []byte) ([]byte, error) {
	spec := s.specs[f]
	if spec == nil {
		return nil, fmt.Errorf("shards: shard key: family tag 0x%02x: %w", uint8(f), ErrUnknownFamily)
	}
	if len(key) == 0 {
		return nil, &KeyError{Op: spec.Name + " key", Reason: "empty key"}
	}
	if spec.ShardKey == nil {
		return key, nil
	}
	sk, err := spec.ShardKey(key)
	if err != nil && !errors.Is(err, ErrMalformedKey) {
		err = fmt.Errorf("shards: %s key: %w: %w", spec.Name, ErrMalformedKey, err)
	}
	return sk, err
}

// ShardOf returns the shard index of a record key of family f: the first
// byte of SHA-256(tag || shard key).
func (s *Schema) ShardOf(f Family, key []byte) (uint8, error) {
	sk, err := s.ShardKey(f, key)
	if err != nil {
		return 0, err
	}
	return HashShardKey(f, sk), nil
}

// HashShardKey returns the shard index of a shard key of family f. Callers
// that build a shard key themselves (such as the parent-directory prefix of
// a direct-child listing) use it to find the one shard to read.
func HashShardKey(f Family, shardKey []byte) uint8 {
	var buf [96]byte
	b := append(buf[:0], byte(f))
	b = append(b, shardKey...)
	sum := sha256.Sum256(b)
	return sum[0]
}

// PrefixShard reports whether every key of family f that begins with
// prefix falls in one shard, and which. When it does not (ok false), a scan
// of the prefix must merge the family's shards.
func (s *Schema) PrefixShard(f Family, prefix []byte) (idx uint8, ok bool) {
	spec := s.specs[f]
	if spec == nil || spec.PrefixKey == nil {
		return 0, false
	}
	sk, ok := spec.PrefixKey(prefix)
	if !ok {
		return 0, false
	}
	return HashShardKey(f, sk), true
}
