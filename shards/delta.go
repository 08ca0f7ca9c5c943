package shards

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
)

// Delta segment format, version 1.
const (
	deltaMagic = "CRND"
	// DeltaFormat is the version byte written into every delta segment.
	DeltaFormat = 1
	// deltaHeaderLen: magic, version, salt, sequence, count.
	deltaHeaderLen = 4 + 1 + SaltLen + 8 + 4
	// deltaFrame: family, kind, key length, value length.
	deltaFrame = 1 + 1 + 4 + 4
)

// Kinds of a delta record.
const (
	deltaPut    = 1
	deltaDelete = 2
)

// Delta is one decoded delta segment: every record change of one commit,
// across families, sorted by (family tag, key), each key at most once per
// family. A delete is a tombstone: it hides the key in the base shards and
// in older deltas. A Delta is immutable once built, so a cache can share
// it between goroutines; byte slices it returns must not be modified.
type Delta struct {
	schema *Schema
	salt   Salt
	seq    uint64
	recs   []DeltaRecord
	size   int64 // encoded length in bytes
	stored int64 // length of the bytes it was decoded from or encoded into, when compressed; 0 if plain
}

// DeltaRecord is one change of a delta: a put of Value under Key in
// Family, or, with Delete set, a tombstone (Value empty).
type DeltaRecord struct {
	Family Family
	Mutation
}

// compareDelta orders delta records by family tag, then key.
func compareDelta(a, b DeltaRecord) int {
	if c := cmp.Compare(a.Family, b.Family); c != 0 {
		return c
	}
	return bytes.Compare(a.Key, b.Key)
}

// NewDelta builds the delta of commit sequence seq, salted with salt, from
// recs in any order. Every record's family must be one of schema s and its
// key must pass s.ShardOf; a family's keys must be unique; a tombstone's
// value is dropped. It copies the records. A delta without records cannot
// be built (ErrEmptyObject).
func NewDelta(s *Schema, salt Salt, seq uint64, recs []DeltaRecord) (*Delta, error) {
	if len(recs) == 0 {
		return nil, fmt.Errorf("shards: new delta %d: %w", seq, ErrEmptyObject)
	}
	d := &Delta{schema: s, salt: salt, seq: seq, size: deltaHeaderLen, recs: make([]DeltaRecord, 0, len(recs))}
	for i, r := range recs {
		if _, err := s.ShardOf(r.Family, r.Key); err != nil {
			return nil, fmt.Errorf("shards: new delta: record %d: %w", i, err)
		}
		c := DeltaRecord{Family: r.Family, Mutation: Mutation{Key: bytes.Clone(r.Key), Delete: r.Delete, Value: []byte{}}}
		if !r.Delete {
			c.Value = cloneValue(r.Value)
		}
		d.recs = append(d.recs, c)
		d.size += deltaFrame + int64(len(c.Key)+len(c.Value))
	}
	slices.SortFunc(d.recs, compareDelta)
	for i := 1; i < len(d.recs); i++ {
		if compareDelta(d.recs[i-1], d.recs[i]) == 0 {
			return nil, fmt.Errorf("shards: new delta: key %x of %s twice: %w", d.recs[i].Key, s.Name(d.recs[i].Family), ErrUnsorted)
		}
	}
	return d, nil
}

// DeltaSize returns the encoded size of a delta whose records are the
// mutations of muts (NewDelta's EncodedSize), without building it: a
// writer that will not keep a delta past a size learns it before paying
// for the copies, the sort and the encoding.
func DeltaSize(muts iter.Seq[Mutation]) int64 {
	n := int64(deltaHeaderLen)
	for m := range muts {
		n += deltaFrame + int64(len(m.Key))
		if !m.Delete {
			n += int64(len(m.Value))
		}
	}
	return n
}

// Sequence is the commit sequence that wrote the delta.
func (d *Delta) Sequence() uint64 { return d.seq }

// Salt returns the delta's salt.
func (d *Delta) Salt() Salt { return d.salt }

// Len returns the number of records, tombstones included.
func (d *Delta) Len() int { return len(d.recs) }

// At returns the i-th record in (family, key) order.
func (d *Delta) At(i int) DeltaRecord { return d.recs[i] }

// EncodedSize returns the length of the delta's encoding in bytes,
// uncompressed.
func (d *Delta) EncodedSize() int64 { return d.size }

// StoredSize returns the length of the delta as stored: compressed if it
// was decoded from or encoded into a compressed object, else EncodedSize.
func (d *Delta) StoredSize() int64 {
	if d.stored > 0 {
		return d.stored
	}
	return d.size
}

// MemSize estimates the memory the decoded delta holds, for a cache's byte
// budget.
func (d *Delta) MemSize() int64 {
	const recordHeader = 64 // family, two slice headers, flag
	return d.size + int64(len(d.recs))*recordHeader + 64
}

// Family returns family f's records in key order.
func (d *Delta) Family(f Family) []DeltaRecord {
	lo, _ := slices.BinarySearchFunc(d.recs, f, func(r DeltaRecord, f Family) int { return cmp.Compare(r.Family, f) })
	hi, _ := slices.BinarySearchFunc(d.recs, f+1, func(r DeltaRecord, f Family) int { return cmp.Compare(r.Family, f) })
	if f == 0xff {
		hi = len(d.recs)
	}
	return d.recs[lo:hi]
}

// Get returns the change the delta makes to key of family f: ok reports
// whether it has one, and then del whether it is a tombstone.
func (d *Delta) Get(f Family, key []byte) (value []byte, del, ok bool) {
	i, ok := slices.BinarySearchFunc(d.recs, DeltaRecord{Family: f, Mutation: Mutation{Key: key}}, compareDelta)
	if !ok {
		return nil, false, false
	}
	r := d.recs[i]
	return r.Value, r.Delete, true
}

// Scan yields, in key order, the changes to family f whose keys begin with
// prefix and come strictly after after (an empty after starts at the
// prefix), tombstones included.
func (d *Delta) Scan(f Family, prefix, after []byte) iter.Seq[DeltaRecord] {
	return func(yield func(DeltaRecord) bool) {
		recs := d.Family(f)
		start := prefix
		if len(after) > 0 && bytes.Compare(after, prefix) >= 0 {
			start = after
		}
		i, found := slices.BinarySearchFunc(recs, start, func(r DeltaRecord, k []byte) int { return bytes.Compare(r.Key, k) })
		if found && len(after) > 0 && bytes.Equal(start, after) {
			i++
		}
		for ; i < len(recs); i++ {
			if !bytes.HasPrefix(recs[i].Key, prefix) || !yield(recs[i]) {
				return
			}
		}
	}
}

// Encode returns the delta's canonical bytes and its reference (Count is
// the record count).
func (d *Delta) Encode() ([]byte, Ref, error) {
	b, err := d.encode()
	if err != nil {
		return nil, Ref{}, err
	}
	return b, Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: uint32(len(d.recs))}, nil
}

// encode returns the delta's canonical bytes.
func (d *Delta) encode() ([]byte, error) {
	if len(d.recs) == 0 {
		return nil, fmt.Errorf("shards: encode delta %d: %w", d.seq, ErrEmptyObject)
	}
	w := wire.NewWriter(make([]byte, 0, d.size)).
		Raw([]byte(deltaMagic)).U8(DeltaFormat).Raw(d.salt[:]).U64(d.seq).U32(uint32(len(d.recs)))
	for _, r := range d.recs {
		kind := uint8(deltaPut)
		if r.Delete {
			kind = deltaDelete
		}
		w.U8(byte(r.Family)).U8(kind).Bytes32(r.Key).Bytes32(r.Value)
	}
	if err := w.Err(); err != nil {
		return nil, fmt.Errorf("shards: encode delta %d: %w: %w", d.seq, err, ErrMalformedObject)
	}
	return w.Bytes(), nil
}

// EncodeCompressed is Encode, the bytes kept as a compressed object when
// that makes them smaller (Compress). It records their length in d
// (StoredSize), so d must not be shared yet: a new delta from NewDelta.
func (d *Delta) EncodeCompressed() ([]byte, Ref, error) {
	b, err := d.encode()
	if err != nil {
		return nil, Ref{}, err
	}
	b, d.stored = compressed(b)
	return b, Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: uint32(len(d.recs))}, nil
}

// DecodeDelta verifies that b hashes to want (ErrIntegrity otherwise) and
// then decodes it strictly: the magic, the format version, a record count
// that matches, records strictly ascending by (family, key), every family
// of schema s, every key passing s.ShardOf, a kind of put or delete, no
// value on a tombstone, and no trailing bytes. The delta keeps b, which
// the caller must not modify afterwards.
func DecodeDelta(s *Schema, b []byte, want digest.Hash) (*Delta, error) {
	if err := digest.Verify(b, want); err != nil {
		return nil, fmt.Errorf("shards: decode delta: %w", err)
	}
	return parseStoredDelta(s, b)
}

// LoadDelta loads delta h through c, decoding it with schema s. Every
// delta in c must have been loaded with s.
func LoadDelta(ctx context.Context, c *Cache[*Delta], s *Schema, h digest.Hash, fetch func(context.Context) ([]byte, error)) (*Delta, error) {
	d, err := c.Load(ctx, h, fetch, func(b []byte) (*Delta, error) { return parseStoredDelta(s, b) })
	if err != nil {
		return nil, err
	}
	if d.schema != s {
		return nil, fmt.Errorf("shards: load delta %s: cached under another schema", h)
	}
	return d, nil
}

// parseStoredDelta decodes b, whose hash the caller has verified, plain
// or compressed.
func parseStoredDelta(s *Schema, b []byte) (*Delta, error) {
	raw, stored, err := expandStored(b, "delta")
	if err != nil {
		return nil, err
	}
	d, err := parseDelta(s, raw)
	if err != nil {
		return nil, err
	}
	d.stored = stored
	return d, nil
}

// parseDelta decodes b, plain, whose hash the caller has verified.
func parseDelta(s *Schema, b []byte) (*Delta, error) {
	bad := func(format string, args ...any) (*Delta, error) {
		return nil, fmt.Errorf("shards: decode delta: %s: %w", fmt.Sprintf(format, args...), ErrMalformedObject)
	}
	r := wire.NewReader(b)
	magic, version := r.Take(len(deltaMagic)), r.U8()
	d := &Delta{schema: s, size: int64(len(b))}
	r.Copy(d.salt[:])
	d.seq = r.U64()
	count := r.U32()
	switch {
	case r.Err() != nil:
		return bad("header: %v", r.Err())
	case string(magic) != deltaMagic:
		return bad("bad magic %q", magic)
	case version != DeltaFormat:
		return nil, fmt.Errorf("shards: decode delta: %w: %w", VersionError("delta segment", uint64(version), DeltaFormat), ErrMalformedObject)
	case count == 0:
		return bad("no records")
	case uint64(count) > uint64(r.Len())/(deltaFrame+1):
		return bad("count %d does not fit in %d bytes", count, len(b))
	}
	d.recs = make([]DeltaRecord, count)
	for i := range d.recs {
		at := r.Offset()
		tag, kind := r.U8(), r.U8()
		k, v := r.Bytes32(), r.Bytes32()
		if err := r.Err(); err != nil {
			return bad("record %d: %v", i, err)
		}
		f, err := s.ParseFamily(tag)
		if err != nil {
			return nil, fmt.Errorf("shards: decode delta at byte %d: %w: %w", at, ErrMalformedObject, err)
		}
		rec := DeltaRecord{Family: f, Mutation: Mutation{Key: k, Value: v, Delete: kind == deltaDelete}}
		switch {
		case kind != deltaPut && kind != deltaDelete:
			return bad("record %d at byte %d: kind %d", i, at, kind)
		case rec.Delete && len(v) > 0:
			return bad("record %d at byte %d: tombstone with a value", i, at)
		case i > 0 && compareDelta(d.recs[i-1], rec) >= 0:
			return nil, fmt.Errorf("shards: decode delta at byte %d: record %d: %w: %w", at, i, ErrMalformedObject, ErrUnsorted)
		}
		if _, err := s.ShardOf(f, k); err != nil {
			return nil, fmt.Errorf("shards: decode delta at byte %d: record %d: %w: %w", at, i, ErrMalformedObject, err)
		}
		d.recs[i] = rec
	}
	if err := r.End(); err != nil {
		return bad("%v", err)
	}
	return d, nil
}
