package shards

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/cairnstore/cairn/bucket/digest"
)

// ShardID is a LogicalShardId: 16 random bytes, written as 32 lowercase
// hexadecimal characters.
type ShardID [16]byte

// ErrInvalidObjectKey is returned for a bucket key that is not one of the
// layout's keys.
var ErrInvalidObjectKey = errors.New("invalid object key")

// NewShardID returns a random shard id.
func NewShardID() ShardID {
	var id ShardID
	rand.Read(id[:]) // never fails
	return id
}

// String returns the id as 32 lowercase hexadecimal characters.
func (id ShardID) String() string { return hex.EncodeToString(id[:]) }

// ParseShardID parses 32 lowercase hexadecimal characters.
func ParseShardID(s string) (ShardID, error) {
	var id ShardID
	if err := parseLowerHex(id[:], s); err != nil {
		return ShardID{}, fmt.Errorf("shards: parse shard id %q: %w", s, ErrInvalidObjectKey)
	}
	return id, nil
}

// parseLowerHex decodes exactly len(dst) bytes of lowercase hex: the one
// spelling of a shard id and of a shard index in a key. Hashes are read by
// digest.Parse.
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

// Layout formats every key cairn's engine writes in a bucket for one
// logical shard, whose families schema names. No other code formats these
// keys.
type Layout struct {
	schema *Schema
	id     ShardID
	prefix string // "shards/{lsid}/"
}

// ShardsPrefix is the prefix under which every logical shard has its own,
// "shards/{lsid}/".
const ShardsPrefix = "shards/"

// NewLayout returns the layout of shard id under schema s.
func NewLayout(s *Schema, id ShardID) Layout {
	return Layout{schema: s, id: id, prefix: ShardsPrefix + id.String() + "/"}
}

// ParseShardPrefix returns the shard id of a shard's prefix as a listing
// of ShardsPrefix with the delimiter "/" returns it ("shards/{lsid}/").
func ParseShardPrefix(p string) (ShardID, error) {
	rest, ok := strings.CutPrefix(p, ShardsPrefix)
	if !ok || !strings.HasSuffix(rest, "/") {
		return ShardID{}, fmt.Errorf("shards: %q is not a shard's prefix: %w", p, ErrInvalidObjectKey)
	}
	return ParseShardID(strings.TrimSuffix(rest, "/"))
}

// ID returns the layout's shard id.
func (l Layout) ID() ShardID { return l.id }

// Schema returns the schema whose family names the layout uses.
func (l Layout) Schema() *Schema { return l.schema }

// Prefix returns "shards/{lsid}/", under which the head and every immutable
// engine object of the shard live.
func (l Layout) Prefix() string { return l.prefix }

// Head returns the key of the shard's one mutable object.
func (l Layout) Head() string { return l.prefix + "head" }

// Root returns the key of the root with hash h.
func (l Layout) Root(h digest.Hash) string { return l.prefix + "roots/" + h.String() }

// Table returns the key of the table with hash h.
func (l Layout) Table(h digest.Hash) string { return l.prefix + "tables/" + h.String() }

// Delta returns the key of the delta segment with hash h.
func (l Layout) Delta(h digest.Hash) string { return l.prefix + "deltas/" + h.String() }

// Shard returns the key of the shard object with hash h, shard idx of
// family f; the family appears under its schema name.
func (l Layout) Shard(f Family, idx uint8, h digest.Hash) string {
	return fmt.Sprintf("%sobjects/%s/%02x/%s", l.prefix, l.schema.Name(f), idx, h)
}

// Index returns the key of the page index with hash h of shard idx of
// family f. Its pages are shard objects (Shard).
func (l Layout) Index(f Family, idx uint8, h digest.Hash) string {
	return fmt.Sprintf("%sindexes/%s/%02x/%s", l.prefix, l.schema.Name(f), idx, h)
}

// PinsPrefix returns "pins/{lsid}/".
func (l Layout) PinsPrefix() string { return "pins/" + l.id.String() + "/" }

// IntentsPrefix is the prefix of the shard's intents: create-only
// objects that publish a replica's data commands for whichever replica
// commits next (package head).
func (l Layout) IntentsPrefix() string { return l.prefix + "intents/" }

// Intent returns the key of an intent published at unixMS (the
// publisher's clock) with a random salt: "intents/{ms:13}-{salt:16 hex}",
// so that a listing returns intents oldest first.
func (l Layout) Intent(unixMS int64, salt [8]byte) string {
	return fmt.Sprintf("%s%013d-%s", l.IntentsPrefix(), unixMS, hex.EncodeToString(salt[:]))
}

// ParseIntent returns the publication time an intent key names, in Unix
// milliseconds; ok is false for a key that is not one of this shard's
// intents as Intent spells it.
func (l Layout) ParseIntent(key string) (unixMS int64, ok bool) {
	name, found := strings.CutPrefix(key, l.IntentsPrefix())
	if !found || len(name) != 13+1+16 || name[13] != '-' {
		return 0, false
	}
	var salt [8]byte
	if parseLowerHex(salt[:], name[14:]) != nil {
		return 0, false
	}
	for _, c := range name[:13] {
		if c < '0' || c > '9' {
			return 0, false
		}
		unixMS = unixMS*10 + int64(c-'0')
	}
	return unixMS, true
}

// ClockProbe returns the key of an empty object a sweep writes and
// deletes to read the store's clock (its ModTime): "gc/{lsid}/clock/{hex}"
// with a random token per sweep. It lies outside the shard's prefix, so
// that a probe never makes a shard without a head look written.
func (l Layout) ClockProbe(token [16]byte) string {
	return "gc/" + l.id.String() + "/clock/" + hex.EncodeToString(token[:])
}

// KeepsPrefix returns "keeps/{lsid}/", under which an operation in flight
// keeps a root it will name from every sweep (package gcsweep): a restore
// of a pinned state, whose tables its parent does not reach. It lies
// outside the shard's prefix, as pins do.
func (l Layout) KeepsPrefix() string { return "keeps/" + l.id.String() + "/" }

// Keep returns the key of a keep: "keeps/{lsid}/{hex}", one random token
// per operation.
func (l Layout) Keep(token [16]byte) string { return l.KeepsPrefix() + hex.EncodeToString(token[:]) }

// Pin returns the key of the pin with the given name. A name is 1 to 128
// bytes of ASCII letters, digits, '.', '_' and '-', and not "." or "..".
func (l Layout) Pin(name string) (string, error) {
	if err := checkPinName(name); err != nil {
		return "", err
	}
	return l.PinsPrefix() + name, nil
}

func checkPinName(name string) error {
	if name == "" || len(name) > 128 || name == "." || name == ".." {
		return fmt.Errorf("shards: pin name %q: %w", name, ErrInvalidObjectKey)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("shards: pin name %q: %w", name, ErrInvalidObjectKey)
		}
	}
	return nil
}

// ObjectKind is the kind of an immutable, hash-named engine object.
type ObjectKind uint8

// Kinds of immutable engine objects.
const (
	KindRoot ObjectKind = iota + 1
	KindTable
	KindShard
	KindDelta
	KindIndex
)

func (k ObjectKind) String() string {
	switch k {
	case KindRoot:
		return "root"
	case KindTable:
		return "table"
	case KindShard:
		return "shard"
	case KindDelta:
		return "delta"
	case KindIndex:
		return "index"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ObjectKey is a parsed key of an immutable engine object.
type ObjectKey struct {
	Shard  ShardID
	Kind   ObjectKind
	Hash   digest.Hash
	Family Family // for KindShard and KindIndex
	Index  uint8  // for KindShard and KindIndex
}

// Key formats the key under schema s; it is the inverse of
// ParseObjectKey.
func (k ObjectKey) Key(s *Schema) string {
	l := NewLayout(s, k.Shard)
	switch k.Kind {
	case KindRoot:
		return l.Root(k.Hash)
	case KindTable:
		return l.Table(k.Hash)
	case KindShard:
		return l.Shard(k.Family, k.Index, k.Hash)
	case KindDelta:
		return l.Delta(k.Hash)
	case KindIndex:
		return l.Index(k.Family, k.Index, k.Hash)
	}
	return ""
}

// ParseObjectKey parses the key of an immutable, hash-named engine object
// (root, table, delta segment, shard object or page index) in its one canonical spelling, and rejects
// every other key, the head, pins, artifact blocks and shard objects of a
// family schema s does not name included, with ErrInvalidObjectKey.
func ParseObjectKey(s *Schema, key string) (ObjectKey, error) {
	bad := func() (ObjectKey, error) {
		return ObjectKey{}, fmt.Errorf("shards: parse object key %q: %w", key, ErrInvalidObjectKey)
	}
	parts := strings.Split(key, "/")
	if len(parts) < 4 || parts[0] != "shards" {
		return bad()
	}
	var k ObjectKey
	var err error
	if k.Shard, err = ParseShardID(parts[1]); err != nil {
		return bad()
	}
	last := parts[len(parts)-1]
	if k.Hash, err = digest.Parse(last); err != nil {
		return bad()
	}
	switch {
	case len(parts) == 4 && parts[2] == "roots":
		k.Kind = KindRoot
	case len(parts) == 4 && parts[2] == "tables":
		k.Kind = KindTable
	case len(parts) == 4 && parts[2] == "deltas":
		k.Kind = KindDelta
	case len(parts) == 6 && (parts[2] == "objects" || parts[2] == "indexes"):
		k.Kind = KindShard
		if parts[2] == "indexes" {
			k.Kind = KindIndex
		}
		if k.Family, err = s.ByName(parts[3]); err != nil {
			return bad()
		}
		var idx [1]byte
		if parseLowerHex(idx[:], parts[4]) != nil {
			return bad()
		}
		k.Index = idx[0]
	default:
		return bad()
	}
	return k, nil
}
