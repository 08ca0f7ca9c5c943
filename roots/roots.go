package roots

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// Format versions written into tables and roots.
const (
	TableFormat = 1
	RootFormat  = 1
)

const (
	tableMagic = "CRNT"
	rootMagic  = "CRNR"

	// MaxOwnerLen bounds a hold's owner name, in bytes.
	MaxOwnerLen = 256

	// Sizes beyond these are refused by encoders and decoders alike.
	maxShardSize = 1 << 40
	maxTableSize = 1 << 30
)

// ErrMalformed is returned for bytes that hash correctly but are not a
// canonical table or root.
var ErrMalformed = errors.New("malformed root object")

// Nonce is a committing attempt's random identity.
type Nonce [16]byte

// Entry is one non-empty shard of a table.
type Entry struct {
	Shard uint8
	Ref   shards.Ref
}

// Table names the current object of each non-empty shard of one family.
type Table struct {
	Nonce   Nonce
	Family  shards.Family
	Entries []Entry // Shard strictly ascending
}

// Lookup returns the reference of shard idx, if the shard is non-empty.
func (t *Table) Lookup(idx uint8) (shards.Ref, bool) {
	i, ok := slices.BinarySearchFunc(t.Entries, idx, func(e Entry, idx uint8) int { return int(e.Shard) - int(idx) })
	if !ok {
		return shards.Ref{}, false
	}
	return t.Entries[i].Ref, true
}

// Records is the number of records in all the table's shards.
func (t *Table) Records() uint64 {
	var n uint64
	for _, e := range t.Entries {
		n += uint64(e.Ref.Count)
	}
	return n
}

const tableEntryLen = 1 + 32 + 8 + 4

// Encode returns the table's canonical bytes and reference. A table has at
// least one entry: a family without records has no table. The family must
// be one of schema s.
func (t *Table) Encode(s *shards.Schema) ([]byte, shards.Ref, error) {
	if len(t.Entries) == 0 || len(t.Entries) > shards.Shards {
		return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: %d entries: %w", s.Name(t.Family), len(t.Entries), ErrMalformed)
	}
	if !s.Known(t.Family) {
		return nil, shards.Ref{}, fmt.Errorf("roots: encode table: %w", shards.ErrUnknownFamily)
	}
	b := make([]byte, 0, 4+1+16+1+2+len(t.Entries)*tableEntryLen)
	b = append(b, tableMagic...)
	b = append(b, TableFormat)
	b = append(b, t.Nonce[:]...)
	b = append(b, byte(t.Family))
	b = binary.BigEndian.AppendUint16(b, uint16(len(t.Entries)))
	for i, e := range t.Entries {
		if i > 0 && t.Entries[i-1].Shard >= e.Shard {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shards not ascending: %w", s.Name(t.Family), ErrMalformed)
		}
		if e.Ref.Count == 0 || e.Ref.Size <= 0 || e.Ref.Size > maxShardSize {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shard %02x is empty: %w", s.Name(t.Family), e.Shard, ErrMalformed)
		}
		b = append(b, e.Shard)
		b = append(b, e.Ref.Hash[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(e.Ref.Size))
		b = binary.BigEndian.AppendUint32(b, e.Ref.Count)
	}
	return b, shards.Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: uint32(len(t.Entries))}, nil
}

// DecodeTable verifies that b hashes to want and decodes it strictly; its
// family must be one of schema s.
func DecodeTable(s *shards.Schema, b []byte, want digest.Hash) (*Table, error) {
	if got := digest.Sum(b); got != want {
		return nil, fmt.Errorf("roots: decode table %s: bytes hash to %s: %w", want, got, shards.ErrIntegrity)
	}
	r := reader{b: b, what: "table " + want.String()}
	r.magic(tableMagic, TableFormat)
	t := &Table{}
	r.copy(t.Nonce[:])
	t.Family = shards.Family(r.u8())
	n := int(r.u16())
	if r.err == nil && !s.Known(t.Family) {
		r.fail("unknown family tag 0x%02x", uint8(t.Family))
	}
	if r.err == nil && (n == 0 || n > shards.Shards || len(r.b)-r.off != n*tableEntryLen) {
		r.fail("%d entries in %d bytes", n, len(r.b)-r.off)
	}
	for i := 0; i < n && r.err == nil; i++ {
		var e Entry
		e.Shard = r.u8()
		r.copy(e.Ref.Hash[:])
		e.Ref.Size = int64(r.u64())
		e.Ref.Count = r.u32()
		if i > 0 && t.Entries[i-1].Shard >= e.Shard {
			r.fail("shards not ascending at entry %d", i)
		}
		if e.Ref.Count == 0 || e.Ref.Size <= 0 || e.Ref.Size > maxShardSize {
			r.fail("entry %d: bad size %d or count %d", i, e.Ref.Size, e.Ref.Count)
		}
		t.Entries = append(t.Entries, e)
	}
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return t, nil
}

// FamilyRef is a root's reference to one family's table.
type FamilyRef struct {
	Family  shards.Family
	Table   shards.Ref // Count is unused here; see Shards
	Shards  uint16     // non-empty shards in the table
	Records uint64     // records in the family
}

// Hold keeps a root reachable for an owner.
type Hold struct {
	Owner string
	Root  digest.Hash
}

// Root is one committed state of a logical shard.
type Root struct {
	Nonce    Nonce
	Parent   digest.Hash // zero for the first root
	Sequence uint64      // the head sequence of the commit that wrote it
	Families []FamilyRef // Family strictly ascending
	Holds    []Hold      // Owner strictly ascending
}

// Family returns the reference to family f's table, if f has records.
func (r *Root) Family(f shards.Family) (FamilyRef, bool) {
	i, ok := slices.BinarySearchFunc(r.Families, f, func(x FamilyRef, f shards.Family) int { return int(x.Family) - int(f) })
	if !ok {
		return FamilyRef{}, false
	}
	return r.Families[i], true
}

// Hold returns the root held for owner, if any.
func (r *Root) Hold(owner string) (digest.Hash, bool) {
	i, ok := slices.BinarySearchFunc(r.Holds, owner, func(h Hold, o string) int { return strings.Compare(h.Owner, o) })
	if !ok {
		return digest.Hash{}, false
	}
	return r.Holds[i].Root, true
}

const familyRefLen = 1 + 32 + 8 + 2 + 8

// CheckOwner reports whether owner is a valid hold owner name.
func CheckOwner(owner string) error {
	if owner == "" || len(owner) > MaxOwnerLen || !utf8.ValidString(owner) {
		return fmt.Errorf("roots: hold owner %q: must be 1..%d bytes of UTF-8: %w", owner, MaxOwnerLen, ErrMalformed)
	}
	return nil
}

// Encode returns the root's canonical bytes and reference. Its families
// must be of schema s.
func (r *Root) Encode(s *shards.Schema) ([]byte, shards.Ref, error) {
	b := make([]byte, 0, 4+1+16+32+8+1+len(r.Families)*familyRefLen+4+len(r.Holds)*64)
	b = append(b, rootMagic...)
	b = append(b, RootFormat)
	b = append(b, r.Nonce[:]...)
	b = append(b, r.Parent[:]...)
	b = binary.BigEndian.AppendUint64(b, r.Sequence)
	if len(r.Families) > 255 {
		return nil, shards.Ref{}, fmt.Errorf("roots: encode root: %d families: %w", len(r.Families), ErrMalformed)
	}
	b = append(b, byte(len(r.Families)))
	for i, f := range r.Families {
		if i > 0 && r.Families[i-1].Family >= f.Family {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: families not ascending: %w", ErrMalformed)
		}
		if !s.Known(f.Family) || f.Shards == 0 || f.Shards > shards.Shards || f.Table.Size <= 0 || f.Table.Size > maxTableSize {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: bad family reference %+v: %w", f, ErrMalformed)
		}
		b = append(b, byte(f.Family))
		b = append(b, f.Table.Hash[:]...)
		b = binary.BigEndian.AppendUint64(b, uint64(f.Table.Size))
		b = binary.BigEndian.AppendUint16(b, f.Shards)
		b = binary.BigEndian.AppendUint64(b, f.Records)
	}
	b = binary.BigEndian.AppendUint32(b, uint32(len(r.Holds)))
	for i, h := range r.Holds {
		if err := CheckOwner(h.Owner); err != nil {
			return nil, shards.Ref{}, err
		}
		if i > 0 && r.Holds[i-1].Owner >= h.Owner {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: hold owners not ascending: %w", ErrMalformed)
		}
		if h.Root.IsZero() {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: hold %q names no root: %w", h.Owner, ErrMalformed)
		}
		b = binary.BigEndian.AppendUint16(b, uint16(len(h.Owner)))
		b = append(b, h.Owner...)
		b = append(b, h.Root[:]...)
	}
	return b, shards.Ref{Hash: digest.Sum(b), Size: int64(len(b))}, nil
}

// DecodeRoot verifies that b hashes to want and decodes it strictly; its
// families must be of schema s.
func DecodeRoot(s *shards.Schema, b []byte, want digest.Hash) (*Root, error) {
	if got := digest.Sum(b); got != want {
		return nil, fmt.Errorf("roots: decode root %s: bytes hash to %s: %w", want, got, shards.ErrIntegrity)
	}
	r := reader{b: b, what: "root " + want.String()}
	r.magic(rootMagic, RootFormat)
	root := &Root{}
	r.copy(root.Nonce[:])
	r.copy(root.Parent[:])
	root.Sequence = r.u64()
	nf := int(r.u8())
	for i := 0; i < nf && r.err == nil; i++ {
		var f FamilyRef
		f.Family = shards.Family(r.u8())
		r.copy(f.Table.Hash[:])
		f.Table.Size = int64(r.u64())
		f.Shards = r.u16()
		f.Records = r.u64()
		f.Table.Count = uint32(f.Shards)
		switch {
		case r.err != nil:
		case !s.Known(f.Family):
			r.fail("unknown family tag 0x%02x", uint8(f.Family))
		case i > 0 && root.Families[i-1].Family >= f.Family:
			r.fail("families not ascending at %d", i)
		case f.Shards == 0 || f.Shards > shards.Shards || f.Table.Size <= 0 || f.Table.Size > maxTableSize:
			r.fail("family %s: bad table reference", s.Name(f.Family))
		}
		root.Families = append(root.Families, f)
	}
	nh := int(r.u32())
	if r.err == nil && nh > (len(b)-r.off)/(2+1+32) {
		r.fail("%d holds in %d bytes", nh, len(b)-r.off)
	}
	for i := 0; i < nh && r.err == nil; i++ {
		var h Hold
		owner := make([]byte, r.u16())
		r.copy(owner)
		h.Owner = string(owner)
		r.copy(h.Root[:])
		switch {
		case r.err != nil:
		case CheckOwner(h.Owner) != nil:
			r.fail("hold %d: bad owner", i)
		case i > 0 && root.Holds[i-1].Owner >= h.Owner:
			r.fail("hold owners not ascending at %d", i)
		case h.Root.IsZero():
			r.fail("hold %q names no root", h.Owner)
		}
		root.Holds = append(root.Holds, h)
	}
	r.end()
	if r.err != nil {
		return nil, r.err
	}
	return root, nil
}

// reader decodes big-endian fields, remembering the first error.
type reader struct {
	b    []byte
	off  int
	err  error
	what string
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("roots: decode %s: at byte %d: %s: %w", r.what, r.off, fmt.Sprintf(format, args...), ErrMalformed)
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b)-r.off < n {
		r.fail("truncated (want %d bytes, have %d)", n, len(r.b)-r.off)
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) magic(m string, version byte) {
	if got := r.take(len(m)); r.err == nil && !bytes.Equal(got, []byte(m)) {
		r.fail("bad magic %q", got)
	}
	if v := r.u8(); r.err == nil && v != version {
		r.fail("unknown format version %d", v)
	}
}

func (r *reader) copy(dst []byte) { copy(dst, r.take(len(dst))) }

func (r *reader) u8() uint8 {
	if s := r.take(1); s != nil {
		return s[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if s := r.take(2); s != nil {
		return binary.BigEndian.Uint16(s)
	}
	return 0
}

func (r *reader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.BigEndian.Uint32(s)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.BigEndian.Uint64(s)
	}
	return 0
}

func (r *reader) end() {
	if r.err == nil && r.off != len(r.b) {
		r.fail("%d trailing bytes", len(r.b)-r.off)
	}
}
