package shards

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
)

// Page index format, version 2: version 1 wrote every first key whole and
// fixed-width sizes; version 2 writes each first key as the length it
// shares with the previous one and the rest, and sizes and counts as
// varints, which makes a typical index a third as long, so that a table
// can carry it inline.
const (
	indexMagic = "CRNX"
	// IndexFormat is the version byte written into every page index.
	IndexFormat = 2
	// indexHeaderLen: magic, version, salt, family, shard, page count.
	indexHeaderLen = 4 + 1 + SaltLen + 1 + 1 + 4
	// indexPageMin: the shortest page entry: shared length, suffix
	// length, hash, size and records, each varint one byte.
	indexPageMin = 1 + 1 + 32 + 1 + 1
	// maxPageSize bounds a page's size, as a table bounds a shard's.
	maxPageSize = 1 << 40
)

// PageRef is an index's reference to one page: the smallest key of the
// page (empty for the first page, which holds every key below the second
// page's), and the page object's hash, size and record count.
type PageRef struct {
	First []byte
	Ref   Ref
}

// Index is one decoded page index: the pages of one shard of one family,
// in key order. Page i holds the shard's keys k with First(i) <= k <
// First(i+1). An Index is immutable once built and may be shared between
// goroutines.
type Index struct {
	schema *Schema
	family Family
	shard  uint8
	salt   Salt
	pages  []PageRef
	size   int64
}

// NewIndex builds the index of shard idx of family f of schema s, salted
// with salt, naming pages in key order: at least two, the first with an
// empty First, the others with non-empty First strictly ascending, each of
// the shard, and each page with a size of 1..2^40 and at least one
// record. It copies the references.
func NewIndex(s *Schema, f Family, idx uint8, salt Salt, pages []PageRef) (*Index, error) {
	if !s.Known(f) {
		return nil, fmt.Errorf("shards: new index: family tag 0x%02x: %w", uint8(f), ErrUnknownFamily)
	}
	x := &Index{schema: s, family: f, shard: idx, salt: salt, pages: make([]PageRef, len(pages))}
	for i, p := range pages {
		x.pages[i] = PageRef{First: bytes.Clone(p.First), Ref: p.Ref}
	}
	if err := x.check(); err != nil {
		return nil, fmt.Errorf("shards: new index %s/%02x: %w", s.Name(f), idx, err)
	}
	x.size = int64(len(x.encode()))
	return x, nil
}

// check enforces the rules of NewIndex on x.
func (x *Index) check() error {
	if len(x.pages) < 2 {
		return fmt.Errorf("%d pages, want at least 2 (a shard of one page is a plain shard object): %w", len(x.pages), ErrMalformedObject)
	}
	var records uint64
	for i, p := range x.pages {
		switch {
		case i == 0 && len(p.First) != 0:
			return fmt.Errorf("page 0 has a first key: %w", ErrMalformedObject)
		case i > 0 && len(p.First) == 0:
			return fmt.Errorf("page %d has no first key: %w", i, ErrMalformedObject)
		case i > 1 && bytes.Compare(x.pages[i-1].First, p.First) >= 0:
			return fmt.Errorf("page %d: %w", i, ErrUnsorted)
		case p.Ref.Size <= headerLen || p.Ref.Size > maxPageSize || p.Ref.Count == 0:
			return fmt.Errorf("page %d: bad size %d or count %d: %w", i, p.Ref.Size, p.Ref.Count, ErrMalformedObject)
		case p.Ref.Hash.IsZero():
			return fmt.Errorf("page %d names no object: %w", i, ErrMalformedObject)
		}
		if i > 0 {
			o := &Object{schema: x.schema, family: x.family, shard: x.shard}
			if err := o.checkKey(p.First); err != nil {
				return fmt.Errorf("page %d: first key: %w", i, err)
			}
		}
		records += uint64(p.Ref.Count)
	}
	if records > math.MaxUint32 {
		return fmt.Errorf("%d records: %w", records, ErrMalformedObject)
	}
	return nil
}

// Family returns the index's family.
func (x *Index) Family() Family { return x.family }

// Shard returns the index's shard index.
func (x *Index) Shard() uint8 { return x.shard }

// Salt returns the index's salt.
func (x *Index) Salt() Salt { return x.salt }

// Len returns the number of pages.
func (x *Index) Len() int { return len(x.pages) }

// Page returns the reference of page i. Its First must not be modified.
func (x *Index) Page(i int) PageRef { return x.pages[i] }

// Records returns the number of records in all the pages.
func (x *Index) Records() uint32 {
	var n uint32
	for _, p := range x.pages {
		n += p.Ref.Count
	}
	return n
}

// EncodedSize returns the length of the index's encoding in bytes.
func (x *Index) EncodedSize() int64 { return x.size }

// MemSize estimates the memory the decoded index holds, for a cache's
// byte budget.
func (x *Index) MemSize() int64 { return x.size + int64(len(x.pages))*64 + 64 }

// Find returns the page that holds key, if the shard has it: the last
// page whose first key is at most key.
func (x *Index) Find(key []byte) int {
	i, found := slices.BinarySearchFunc(x.pages[1:], key, func(p PageRef, k []byte) int { return bytes.Compare(p.First, k) })
	if found {
		return i + 1
	}
	return i // pages[1:i] are below key, so page i (of x.pages) holds it
}

// Range returns the pages [lo, hi) that may hold keys beginning with
// prefix and coming strictly after after (an empty after means from the
// prefix), as a scan of the shard needs them.
func (x *Index) Range(prefix, after []byte) (lo, hi int) {
	start := prefix
	if len(after) > 0 && bytes.Compare(after, prefix) >= 0 {
		start = after
	}
	lo = x.Find(start)
	hi = lo + 1
	for hi < len(x.pages) {
		f := x.pages[hi].First
		if bytes.Compare(f, prefix) > 0 && !bytes.HasPrefix(f, prefix) {
			break // this page and the later ones begin past the prefix
		}
		hi++
	}
	return lo, hi
}

// CheckPage reports, wrapping ErrIntegrity, a page object that does not
// match page i of the index: its family, shard, record count, size, and
// its keys within the page's range.
func (x *Index) CheckPage(i int, o *Object) error {
	return x.CheckPageSummary(i, o.Summary())
}

// CheckPageSummary is CheckPage of the page s summarizes: a walk that
// meets one page under several indexes checks it against each without
// keeping its records.
func (x *Index) CheckPageSummary(i int, s PageSummary) error {
	p := x.pages[i]
	switch {
	case s.Family != x.family || s.Shard != x.shard:
		return fmt.Errorf("shards: page %d of %s/%02x is %s/%02x: %w", i, x.schema.Name(x.family), x.shard, x.schema.Name(s.Family), s.Shard, ErrIntegrity)
	case s.Count != int(p.Ref.Count) || s.Size != p.Ref.Size:
		return fmt.Errorf("shards: page %d of %s/%02x: %d records of %d bytes, index says %d of %d: %w",
			i, x.schema.Name(s.Family), x.shard, s.Count, s.Size, p.Ref.Count, p.Ref.Size, ErrIntegrity)
	case i > 0 && !bytes.Equal(s.First, p.First):
		return fmt.Errorf("shards: page %d of %s/%02x begins at %x, index says %x: %w", i, x.schema.Name(s.Family), x.shard, s.First, p.First, ErrIntegrity)
	case i+1 < len(x.pages) && bytes.Compare(s.Last, x.pages[i+1].First) >= 0:
		return fmt.Errorf("shards: page %d of %s/%02x ends at %x, past the next page's %x: %w", i, x.schema.Name(s.Family), x.shard, s.Last, x.pages[i+1].First, ErrIntegrity)
	}
	return nil
}

// PageSummary is what CheckPage reads of a page object: its family and
// shard index, record count, stored size (StoredSize), and first and
// last keys.
type PageSummary struct {
	Family      Family
	Shard       uint8
	Count       int
	Size        int64
	First, Last []byte
}

// Summary returns the object's PageSummary. Its keys are copies: it does
// not keep the object's bytes.
func (o *Object) Summary() PageSummary {
	return PageSummary{Family: o.family, Shard: o.shard, Count: len(o.recs), Size: o.StoredSize(),
		First: bytes.Clone(o.First()), Last: bytes.Clone(o.Last())}
}

// Encode returns the index's canonical bytes and its reference; Count is
// the number of records in its pages, as a table entry names it.
func (x *Index) Encode() ([]byte, Ref, error) {
	if err := x.check(); err != nil {
		return nil, Ref{}, fmt.Errorf("shards: encode index %s/%02x: %w", x.schema.Name(x.family), x.shard, err)
	}
	b := x.encode()
	return b, Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: x.Records()}, nil
}

// encode returns the bytes of x, which check has accepted: each page's
// first key as the length it shares with the previous page's and the
// rest, then its hash, size and record count.
func (x *Index) encode() []byte {
	w := wire.NewWriter(make([]byte, 0, x.size)).
		Raw([]byte(indexMagic)).U8(IndexFormat).Raw(x.salt[:]).U8(byte(x.family)).U8(x.shard).U32(uint32(len(x.pages)))
	var prev []byte
	for _, p := range x.pages {
		n := sharedLen(prev, p.First)
		w.UVarint(uint64(n)).UVarint(uint64(len(p.First) - n)).Raw(p.First[n:]).
			Raw(p.Ref.Hash[:]).UVarint(uint64(p.Ref.Size)).UVarint(uint64(p.Ref.Count))
		prev = p.First
	}
	return w.Bytes()
}

// sharedLen is the length of the longest common prefix of a and b.
func sharedLen(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// DecodeIndex verifies that b hashes to want (ErrIntegrity otherwise) and
// decodes it strictly: the magic, the format version, a family of schema
// s, the rules of NewIndex, and no trailing bytes. It also requires the
// index to be of shard idx of family f, as a table names it.
func DecodeIndex(s *Schema, b []byte, want digest.Hash, f Family, idx uint8) (*Index, error) {
	if err := digest.Verify(b, want); err != nil {
		return nil, fmt.Errorf("shards: decode index: %w", err)
	}
	x, err := parseIndex(s, b)
	if err != nil {
		return nil, err
	}
	if x.family != f || x.shard != idx {
		return nil, fmt.Errorf("shards: decode index %s: index of %s/%02x, want %s/%02x: %w", want, x.schema.Name(x.family), x.shard, s.Name(f), idx, ErrMalformedObject)
	}
	return x, nil
}

// LoadIndex loads the page index h through c, decoding it with schema s,
// and checks that it indexes shard idx of family f. Every index in c must
// have been loaded with s.
func LoadIndex(ctx context.Context, c *Cache[*Index], s *Schema, h digest.Hash, f Family, idx uint8, fetch func(context.Context) ([]byte, error)) (*Index, error) {
	x, err := c.Load(ctx, h, fetch, func(b []byte) (*Index, error) { return parseIndex(s, b) })
	if err != nil {
		return nil, err
	}
	if x.schema != s {
		return nil, fmt.Errorf("shards: load index %s: cached under another schema", h)
	}
	if x.family != f || x.shard != idx {
		return nil, fmt.Errorf("shards: load index %s: index of %s/%02x, want %s/%02x: %w", h, x.schema.Name(x.family), x.shard, s.Name(f), idx, ErrMalformedObject)
	}
	return x, nil
}

// parseIndex decodes b, whose hash the caller has verified.
func parseIndex(s *Schema, b []byte) (*Index, error) {
	bad := func(format string, args ...any) (*Index, error) {
		return nil, fmt.Errorf("shards: decode index: %s: %w", fmt.Sprintf(format, args...), ErrMalformedObject)
	}
	r := wire.NewReader(b)
	magic, version := r.Take(len(indexMagic)), r.U8()
	x := &Index{schema: s, size: int64(len(b))}
	r.Copy(x.salt[:])
	tag, shard, count := r.U8(), r.U8(), r.U32()
	switch {
	case r.Err() != nil:
		return bad("header: %v", r.Err())
	case string(magic) != indexMagic:
		return bad("bad magic %q", magic)
	case version != IndexFormat:
		return nil, fmt.Errorf("shards: decode index: %w: %w", VersionError("page index", uint64(version), IndexFormat), ErrMalformedObject)
	case uint64(count) > uint64(r.Len())/indexPageMin:
		return bad("count %d does not fit in %d bytes", count, len(b))
	}
	f, err := s.ParseFamily(tag)
	if err != nil {
		return nil, fmt.Errorf("shards: decode index at byte %d: %w: %w", indexHeaderLen-6, ErrMalformedObject, err)
	}
	x.family, x.shard = f, shard
	x.pages = make([]PageRef, count)
	var prev []byte
	for i := range x.pages {
		p := &x.pages[i]
		shared, rest := r.UVarint(), r.UVarint()
		if err := r.Err(); err != nil {
			// shared may be a good varint before a bad one: stop before
			// slicing with it.
			return bad("page %d: %v", i, err)
		}
		if shared > uint64(len(prev)) || rest > uint64(r.Len()) {
			return bad("page %d: first key shares %d bytes of %d and has %d more", i, shared, len(prev), rest)
		}
		suffix := r.Take(int(rest))
		// The shared length is the longest one, so that an index has
		// one encoding.
		if r.Err() == nil && shared < uint64(len(prev)) && len(suffix) > 0 && suffix[0] == prev[shared] {
			return bad("page %d: first key shares more than the %d bytes it says", i, shared)
		}
		p.First = append(bytes.Clone(prev[:shared:shared]), suffix...)
		r.Copy(p.Ref.Hash[:])
		size, count := r.UVarint(), r.UVarint()
		if r.Err() == nil && (size > maxPageSize || count > math.MaxUint32) {
			return bad("page %d: size %d or count %d out of range", i, size, count)
		}
		p.Ref.Size, p.Ref.Count = int64(size), uint32(count)
		prev = p.First
	}
	if err := r.End(); err != nil {
		return bad("%v", err)
	}
	if err := x.check(); err != nil {
		return nil, fmt.Errorf("shards: decode index: %w: %w", ErrMalformedObject, err)
	}
	return x, nil
}
