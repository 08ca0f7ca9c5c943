package shards

import (
	"bytes"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
)

// Shard object format, version 1.
const (
	objectMagic = "CRNS"
	// ObjectFormat is the version byte written into every shard object.
	ObjectFormat = 1
	countOff     = 4 + 1 + 1 + 1 + SaltLen // after magic, version, family, shard, salt
	headerLen    = countOff + 4
	recordFrame  = 4 + 4 // key and value lengths
)

var (
	// ErrIntegrity is returned when bytes do not hash to the identity they
	// were fetched under. It is the bucket package's sentinel, so callers
	// test one error whichever layer found the mismatch.
	ErrIntegrity = bucket.ErrIntegrity
	// ErrMalformedObject is returned for bytes that hash correctly but are
	// not a canonical shard object.
	ErrMalformedObject = errors.New("malformed shard object")
	// ErrEmptyObject is returned when encoding a shard without records: an
	// empty shard is never stored; the root omits it.
	ErrEmptyObject = errors.New("empty shard object")
	// ErrWrongShard is returned for a record whose key belongs to another
	// shard than the object's.
	ErrWrongShard = errors.New("key belongs to another shard")
	// ErrUnsorted is returned for records or mutations whose keys are not
	// strictly ascending.
	ErrUnsorted = errors.New("keys not strictly ascending")
)

// Record is one key and value of a shard.
type Record struct {
	Key   []byte
	Value []byte
}

// Mutation puts Value under Key, or deletes Key when Delete is set.
type Mutation struct {
	Key    []byte
	Value  []byte
	Delete bool
}

// Object is one decoded shard: the records of one family whose keys hash
// to one shard index, sorted by key. An Object is immutable once built, so
// a cache can share it between goroutines; byte slices it returns must not
// be modified.
type Object struct {
	schema *Schema
	family Family
	shard  uint8
	salt   Salt
	recs   []Record
	size   int64 // encoded length in bytes
	stored int64 // length of the bytes it was decoded from or encoded into, when compressed; 0 if plain
}

// SaltLen is the length of an object's salt.
const SaltLen = 16

// Salt is written into an object's bytes so that objects with equal
// records can still have distinct identities. The engine salts every object
// with the nonce of the commit attempt that writes it, so an attempt never
// finds one of its new objects already in the bucket as an orphan that a
// garbage-collection sweep may be deleting.
type Salt [SaltLen]byte

// Salted returns a copy of o with salt s. It shares o's records.
func (o *Object) Salted(s Salt) *Object {
	c := *o
	c.salt = s
	c.stored = 0
	return &c
}

// Salt returns the object's salt.
func (o *Object) Salt() Salt { return o.salt }

// Empty returns the shard of family f of schema s at idx with no records,
// the base to which a commit applies the first mutations of a shard the
// root omits.
func Empty(s *Schema, f Family, idx uint8) (*Object, error) {
	if !s.Known(f) {
		return nil, fmt.Errorf("shards: empty object: family tag 0x%02x: %w", uint8(f), ErrUnknownFamily)
	}
	return &Object{schema: s, family: f, shard: idx, size: headerLen}, nil
}

// NewObject builds a shard from records sorted strictly by key, each of
// which must belong to shard idx of family f of schema s. It copies the
// records.
func NewObject(s *Schema, f Family, idx uint8, recs []Record) (*Object, error) {
	o, err := Empty(s, f, idx)
	if err != nil {
		return nil, err
	}
	o.recs = make([]Record, 0, len(recs))
	for i, r := range recs {
		if i > 0 && bytes.Compare(recs[i-1].Key, r.Key) >= 0 {
			return nil, fmt.Errorf("shards: new object %s/%02x: record %d: %w", o.name(), idx, i, ErrUnsorted)
		}
		if err := o.checkKey(r.Key); err != nil {
			return nil, fmt.Errorf("shards: new object: record %d: %w", i, err)
		}
		o.recs = append(o.recs, Record{Key: bytes.Clone(r.Key), Value: cloneValue(r.Value)})
		o.size += recordFrame + int64(len(r.Key)+len(r.Value))
	}
	return o, nil
}

func cloneValue(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return bytes.Clone(v)
}

func (o *Object) checkKey(key []byte) error {
	idx, err := o.schema.ShardOf(o.family, key)
	if err != nil {
		return err
	}
	if idx != o.shard {
		return fmt.Errorf("shards: key %x of %s is in shard %02x, not %02x: %w", key, o.name(), idx, o.shard, ErrWrongShard)
	}
	return nil
}

// name returns the object's family name, for messages.
func (o *Object) name() string { return o.schema.Name(o.family) }

// Family returns the object's family.
func (o *Object) Family() Family { return o.family }

// Shard returns the object's shard index.
func (o *Object) Shard() uint8 { return o.shard }

// Len returns the number of records.
func (o *Object) Len() int { return len(o.recs) }

// At returns the i-th record in key order.
func (o *Object) At(i int) Record { return o.recs[i] }

// EncodedSize returns the length of the object's encoding in bytes,
// uncompressed.
func (o *Object) EncodedSize() int64 { return o.size }

// StoredSize returns the length of the object as stored: compressed if it
// was decoded from or encoded into a compressed object, else EncodedSize.
// A reference's Size is this length.
func (o *Object) StoredSize() int64 {
	if o.stored > 0 {
		return o.stored
	}
	return o.size
}

// MemSize estimates the memory the decoded object holds, for the cache's
// byte budget: its encoded bytes plus the record index.
func (o *Object) MemSize() int64 {
	const recordHeader = 48 // two slice headers
	return o.size + int64(len(o.recs))*recordHeader + 64
}

func (o *Object) search(key []byte) (int, bool) {
	return slices.BinarySearchFunc(o.recs, key, func(r Record, k []byte) int {
		return bytes.Compare(r.Key, k)
	})
}

// Get returns the value stored under key.
func (o *Object) Get(key []byte) ([]byte, bool) {
	i, ok := o.search(key)
	if !ok {
		return nil, false
	}
	return o.recs[i].Value, true
}

// seek returns the index of the first record whose key has prefix and
// comes strictly after after (an empty after means from the start).
func (o *Object) seek(prefix, after []byte) int {
	i, _ := o.search(prefix)
	if len(after) > 0 && bytes.Compare(after, prefix) >= 0 {
		j, found := o.search(after)
		if found {
			j++
		}
		i = max(i, j)
	}
	return i
}

// Scan yields, in key order, the records whose keys begin with prefix and
// come strictly after after. An empty after starts at the prefix.
func (o *Object) Scan(prefix, after []byte) iter.Seq2[[]byte, []byte] {
	return func(yield func([]byte, []byte) bool) {
		for i := o.seek(prefix, after); i < len(o.recs); i++ {
			r := o.recs[i]
			if !bytes.HasPrefix(r.Key, prefix) || !yield(r.Key, r.Value) {
				return
			}
		}
	}
}

// Apply returns a new object holding o's records changed by muts, which
// must be sorted strictly by key and belong to o's shard. A put replaces or
// inserts; a delete of an absent key changes nothing. o is not modified and
// the result shares o's unchanged records. The result may be empty, in
// which case the root omits the shard.
func (o *Object) Apply(muts []Mutation) (*Object, error) {
	for i, m := range muts {
		if i > 0 && bytes.Compare(muts[i-1].Key, m.Key) >= 0 {
			return nil, fmt.Errorf("shards: apply %s/%02x: mutation %d: %w", o.name(), o.shard, i, ErrUnsorted)
		}
		if err := o.checkKey(m.Key); err != nil {
			return nil, fmt.Errorf("shards: apply: mutation %d: %w", i, err)
		}
	}
	out := &Object{schema: o.schema, family: o.family, shard: o.shard, size: headerLen,
		recs: make([]Record, 0, len(o.recs)+len(muts))}
	add := func(r Record) {
		out.recs = append(out.recs, r)
		out.size += recordFrame + int64(len(r.Key)+len(r.Value))
	}
	i := 0
	for _, m := range muts {
		for i < len(o.recs) && bytes.Compare(o.recs[i].Key, m.Key) < 0 {
			add(o.recs[i])
			i++
		}
		if i < len(o.recs) && bytes.Equal(o.recs[i].Key, m.Key) {
			i++ // replaced or deleted
		}
		if !m.Delete {
			add(Record{Key: bytes.Clone(m.Key), Value: cloneValue(m.Value)})
		}
	}
	for ; i < len(o.recs); i++ {
		add(o.recs[i])
	}
	return out, nil
}

// Encode returns the object's canonical bytes and its reference. An empty
// object cannot be encoded (ErrEmptyObject).
func (o *Object) Encode() ([]byte, Ref, error) {
	b, err := o.encode()
	if err != nil {
		return nil, Ref{}, err
	}
	return b, Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: uint32(len(o.recs))}, nil
}

// encode returns the object's canonical bytes.
func (o *Object) encode() ([]byte, error) {
	if len(o.recs) == 0 {
		return nil, fmt.Errorf("shards: encode %s/%02x: %w", o.name(), o.shard, ErrEmptyObject)
	}
	w := wire.NewWriter(make([]byte, 0, o.size)).
		Raw([]byte(objectMagic)).U8(ObjectFormat).U8(byte(o.family)).U8(o.shard).Raw(o.salt[:]).
		U32(uint32(len(o.recs)))
	for _, r := range o.recs {
		w.Bytes32(r.Key).Bytes32(r.Value)
	}
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("shards: encode %s/%02x: %w: %w", o.name(), o.shard, err, ErrMalformedObject)
	}
	return w.Bytes(), nil
}

// EncodeCompressed is Encode, the bytes kept as a compressed object when
// that makes them smaller (Compress). It records their length in o
// (StoredSize), so o must not be shared yet: a new object from Salted,
// NewObject or Apply.
func (o *Object) EncodeCompressed() ([]byte, Ref, error) {
	b, err := o.encode()
	if err != nil {
		return nil, Ref{}, err
	}
	b, o.stored = compressed(b)
	return b, Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: uint32(len(o.recs))}, nil
}

// Decode verifies that b hashes to want (ErrIntegrity otherwise) and then
// decodes it strictly: the magic, the format version, a family of schema
// s, a record count that matches, keys strictly ascending and all in the
// object's shard, and no trailing bytes. The object keeps b, which the
// caller must not modify afterwards.
func Decode(s *Schema, b []byte, want digest.Hash) (*Object, error) {
	if got := digest.Sum(b); got != want {
		return nil, fmt.Errorf("shards: decode object %s: bytes hash to %s: %w", want, got, ErrIntegrity)
	}
	return parseStored(s, b)
}

// parseStored decodes b, whose hash the caller has verified, plain or
// compressed.
func parseStored(s *Schema, b []byte) (*Object, error) {
	raw, stored, err := expandStored(b, "object")
	if err != nil {
		return nil, err
	}
	o, err := parseObject(s, raw)
	if err != nil {
		return nil, err
	}
	o.stored = stored
	return o, nil
}

// DecodeShard is Decode that also requires the object to be shard idx of
// family f, as a root's table names it.
func DecodeShard(s *Schema, b []byte, want digest.Hash, f Family, idx uint8) (*Object, error) {
	o, err := Decode(s, b, want)
	if err != nil {
		return nil, err
	}
	if err := o.is(f, idx); err != nil {
		return nil, fmt.Errorf("shards: decode object %s: %w", want, err)
	}
	return o, nil
}

func (o *Object) is(f Family, idx uint8) error {
	if o.family != f || o.shard != idx {
		return fmt.Errorf("object is %s/%02x, want %s/%02x: %w", o.name(), o.shard, o.schema.Name(f), idx, ErrMalformedObject)
	}
	return nil
}

func malformed(off int, format string, args ...any) error {
	return fmt.Errorf("shards: decode object at byte %d: %s: %w", off, fmt.Sprintf(format, args...), ErrMalformedObject)
}

// parseObject decodes b, whose hash the caller has verified.
func parseObject(s *Schema, b []byte) (*Object, error) {
	r := wire.NewReader(b)
	magic, version, tag, shard := r.Take(len(objectMagic)), r.U8(), r.U8(), r.U8()
	o := &Object{schema: s, shard: shard, size: int64(len(b))}
	r.Copy(o.salt[:])
	count := r.U32()
	switch {
	case r.Err() != nil:
		return nil, fmt.Errorf("shards: decode object: header: %w: %w", r.Err(), ErrMalformedObject)
	case string(magic) != objectMagic:
		return nil, malformed(0, "bad magic %q", magic)
	case version != ObjectFormat:
		return nil, fmt.Errorf("shards: decode object: %w: %w", VersionError("shard object", uint64(version), ObjectFormat), ErrMalformedObject)
	case count == 0:
		return nil, malformed(countOff, "no records")
	case uint64(count) > uint64(r.Len())/(recordFrame+1):
		return nil, malformed(countOff, "count %d does not fit in %d bytes", count, len(b))
	}
	f, err := s.ParseFamily(tag)
	if err != nil {
		return nil, fmt.Errorf("shards: decode object at byte 5: %w: %w", ErrMalformedObject, err)
	}
	o.family = f
	o.recs = make([]Record, count)
	for i := range o.recs {
		at := r.Offset()
		k, v := r.Bytes32(), r.Bytes32()
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("shards: decode object: record %d: %w: %w", i, err, ErrMalformedObject)
		}
		if i > 0 && bytes.Compare(o.recs[i-1].Key, k) >= 0 {
			return nil, fmt.Errorf("shards: decode object at byte %d: record %d: %w: %w", at, i, ErrMalformedObject, ErrUnsorted)
		}
		if err := o.checkKey(k); err != nil {
			return nil, fmt.Errorf("shards: decode object at byte %d: record %d: %w: %w", at, i, ErrMalformedObject, err)
		}
		o.recs[i] = Record{Key: k, Value: v}
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("shards: decode object: %w: %w", err, ErrMalformedObject)
	}
	return o, nil
}
