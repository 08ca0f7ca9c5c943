package roots

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// Format versions written into tables and roots. Root format 2 added the
// delta list; table format 2 the kind of each entry (a shard object or a
// page index); table format 3 entries that carry their object inline;
// table format 4 the last key of each entry's shard (Entry.Last). Tables
// of format 3 are still read and written (Table.Format), for the shards
// whose value format predates 4; roots of format 1 and tables of formats
// 1 and 2 are refused, not migrated.
const (
	TableFormat   = 4
	TableFormatV3 = 3
	RootFormat    = 2
)

// MaxLastKey bounds the bytes of a table entry's Last: a longer last key
// is kept as its first MaxLastKey bytes.
const MaxLastKey = 64

// Kinds of a table entry, as encoded. An inline entry is followed by the
// object's bytes, which hash to the entry's hash.
const (
	entryLeaf        = 1 // a shard object
	entryIndex       = 2 // a page index naming the shard's pages
	entryInlineLeaf  = 3 // a shard object, inline
	entryInlineIndex = 4 // a page index, inline
)

// MaxInline bounds the bytes of an object a table carries inline. The
// engine inlines far smaller ones (head.Options.InlineBytes); this is the
// format's own bound.
const MaxInline = 64 << 10

const (
	tableMagic = "CRNT"
	rootMagic  = "CRNR"

	// MaxOwnerLen bounds a hold's owner name, in bytes.
	MaxOwnerLen = 256

	// MaxDeltas bounds a root's delta list. The engine folds long before
	// (head.Options.MaxDeltas); this is the format's own bound.
	MaxDeltas = 64

	// Sizes beyond these are refused by encoders and decoders alike.
	maxShardSize = 1 << 40
	maxTableSize = 1 << 30
	maxDeltaSize = 1 << 40
)

// ErrMalformed is returned for bytes that hash correctly but are not a
// canonical table or root.
var ErrMalformed = errors.New("malformed root object")

// Nonce is a committing attempt's random identity.
type Nonce [16]byte

// Entry is one non-empty shard of a table: a shard object, or, with Index
// set, a page index whose pages are shard objects. Ref names the object
// or the index (its hash and size) and Count is the shard's record count
// either way. A small object or index may travel inside the table: Inline
// then holds its bytes (which hash to Ref.Hash), and it is not an object
// of the bucket. A reader of the table then needs no request for it, which
// saves a round on a cold read.
type Entry struct {
	Shard  uint8
	Index  bool
	Ref    shards.Ref
	Inline string
	// Last (table format 4) is the shard's greatest key, or its first
	// MaxLastKey bytes when longer; "" when not known (a table of format
	// 3). A reader knows a key above it absent without reading the shard
	// (Above): a new, time-ordered id, looked up to check that it is
	// free, costs no request.
	Last string
}

// LastKey returns what Entry.Last keeps of the last key k.
func LastKey(k []byte) string {
	return string(k[:min(len(k), MaxLastKey)])
}

// Ends reports whether last, a shard's greatest key, is what the entry's
// Last keeps of it (true when Last is not known). It allocates nothing: a
// read checks every shard it loads against its entry.
func (e Entry) Ends(last []byte) bool {
	return e.Last == "" || string(last[:min(len(last), MaxLastKey)]) == e.Last
}

// Above reports whether every key that begins with p is greater than
// every key of the entry's shard, so that none is there. A Last of
// MaxLastKey bytes may be the cut of a longer key: only the bytes it
// keeps are compared then.
func (e Entry) Above(p []byte) bool {
	switch n := len(e.Last); {
	case n == 0:
		return false
	case n < MaxLastKey:
		return bytes.Compare(p, []byte(e.Last)) > 0
	default:
		m := min(len(p), n)
		return bytes.Compare(p[:m], []byte(e.Last[:m])) > 0
	}
}

// Table names the current object of each non-empty shard of one family.
type Table struct {
	// Format is the table format to write, TableFormat or TableFormatV3
	// (0 is TableFormat); a decoded table has the format it was read in.
	// Format 3 keeps no Last: its entries must have none.
	Format  uint8
	Nonce   Nonce
	Family  shards.Family
	Entries []Entry // Shard strictly ascending
}

// Lookup returns the reference of shard idx, if the shard is non-empty.
func (t *Table) Lookup(idx uint8) (shards.Ref, bool) {
	e, ok := t.Entry(idx)
	return e.Ref, ok
}

// Entry returns the entry of shard idx, if the shard is non-empty.
func (t *Table) Entry(idx uint8) (Entry, bool) {
	i, ok := slices.BinarySearchFunc(t.Entries, idx, func(e Entry, idx uint8) int { return int(e.Shard) - int(idx) })
	if !ok {
		return Entry{}, false
	}
	return t.Entries[i], true
}

// Records is the number of records in all the table's shards.
func (t *Table) Records() uint64 {
	var n uint64
	for _, e := range t.Entries {
		n += uint64(e.Ref.Count)
	}
	return n
}

// tableEntryLen is the length of an entry without inline bytes.
const tableEntryLen = 1 + 1 + 32 + 8 + 4

// kind returns the entry's kind byte.
func (e Entry) kind() uint8 {
	switch {
	case e.Index && e.Inline != "":
		return entryInlineIndex
	case e.Index:
		return entryIndex
	case e.Inline != "":
		return entryInlineLeaf
	}
	return entryLeaf
}

// encodedLen is the length of the table's encoding.
func (t *Table) encodedLen() int {
	n := 4 + 1 + 16 + 1 + 2
	for _, e := range t.Entries {
		n += tableEntryLen + len(e.Inline) + 1 + len(e.Last)
	}
	return n
}

// format is the format t writes.
func (t *Table) format() uint8 {
	if t.Format == 0 {
		return TableFormat
	}
	return t.Format
}

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
	format := t.format()
	if format != TableFormat && format != TableFormatV3 {
		return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: format %d: %w", s.Name(t.Family), format, ErrMalformed)
	}
	w := wire.NewWriter(make([]byte, 0, t.encodedLen())).
		Raw([]byte(tableMagic)).U8(format).Raw(t.Nonce[:]).U8(byte(t.Family)).U16(uint16(len(t.Entries)))
	for i, e := range t.Entries {
		if i > 0 && t.Entries[i-1].Shard >= e.Shard {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shards not ascending: %w", s.Name(t.Family), ErrMalformed)
		}
		if e.Ref.Count == 0 || e.Ref.Size <= 0 || e.Ref.Size > maxShardSize {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shard %02x is empty: %w", s.Name(t.Family), e.Shard, ErrMalformed)
		}
		if e.Inline != "" && (int64(len(e.Inline)) != e.Ref.Size || len(e.Inline) > MaxInline || digest.Sum([]byte(e.Inline)) != e.Ref.Hash) {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shard %02x: inline bytes do not match the reference or pass %d bytes: %w", s.Name(t.Family), e.Shard, MaxInline, ErrMalformed)
		}
		w.U8(e.Shard).U8(e.kind()).Raw(e.Ref.Hash[:]).U64(uint64(e.Ref.Size)).U32(e.Ref.Count)
		if format == TableFormatV3 && e.Last != "" {
			// Dropping it would make the table in memory differ from the
			// one its bytes decode to.
			return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shard %02x: a table of format %d keeps no last key: %w", s.Name(t.Family), e.Shard, TableFormatV3, ErrMalformed)
		}
		if format == TableFormat {
			if len(e.Last) > MaxLastKey {
				return nil, shards.Ref{}, fmt.Errorf("roots: encode table %s: shard %02x: last key of %d bytes: %w", s.Name(t.Family), e.Shard, len(e.Last), ErrMalformed)
			}
			w.UVarint(uint64(len(e.Last))).Raw([]byte(e.Last))
		}
		w.Raw([]byte(e.Inline))
	}
	b := w.Bytes()
	return b, shards.Ref{Hash: digest.Sum(b), Size: int64(len(b)), Count: uint32(len(t.Entries))}, nil
}

// DecodeTable verifies that b hashes to want and decodes it strictly; its
// family must be one of schema s.
func DecodeTable(s *shards.Schema, b []byte, want digest.Hash) (*Table, error) {
	if err := digest.Verify(b, want); err != nil {
		return nil, fmt.Errorf("roots: decode table: %w", err)
	}
	return parseTable(s, b, want)
}

// parseTable decodes the table b, whose hash h the caller has verified.
func parseTable(s *shards.Schema, b []byte, h digest.Hash) (*Table, error) {
	v, ok := formatVersion(b, tableMagic)
	if ok && v != TableFormat && v != TableFormatV3 {
		return nil, fmt.Errorf("roots: decode table %s: %w: %w", h, shards.VersionError("table", uint64(v), TableFormat), ErrMalformed)
	}
	r := wire.NewReader(b)
	readMagic(r, tableMagic, v)
	t := &Table{Format: v}
	r.Copy(t.Nonce[:])
	t.Family = shards.Family(r.U8())
	n := int(r.U16())
	if r.Err() == nil && !s.Known(t.Family) {
		r.Fail("family", fmt.Sprintf("unknown family tag 0x%02x", uint8(t.Family)))
	}
	if r.Err() == nil && (n == 0 || n > shards.Shards || r.Len() < n*tableEntryLen) {
		r.Fail("entries", fmt.Sprintf("%d entries in %d bytes", n, r.Len()))
	}
	for i := 0; i < n && r.Err() == nil; i++ {
		var e Entry
		e.Shard = r.U8()
		kind := r.U8()
		e.Index = kind == entryIndex || kind == entryInlineIndex
		inline := kind == entryInlineLeaf || kind == entryInlineIndex
		if r.Err() == nil && (kind < entryLeaf || kind > entryInlineIndex) {
			r.Fail("entry", fmt.Sprintf("entry %d: kind %d", i, kind))
		}
		r.Copy(e.Ref.Hash[:])
		e.Ref.Size = int64(r.U64())
		e.Ref.Count = r.U32()
		if v == TableFormat {
			n := r.UVarint()
			if r.Err() == nil && n > MaxLastKey {
				r.Fail("entry", fmt.Sprintf("entry %d: last key of %d bytes", i, n))
			}
			if r.Err() == nil {
				e.Last = string(r.Take(int(n)))
			}
		}
		if i > 0 && t.Entries[i-1].Shard >= e.Shard {
			r.Fail("entry", fmt.Sprintf("shards not ascending at entry %d", i))
		}
		if e.Ref.Count == 0 || e.Ref.Size <= 0 || e.Ref.Size > maxShardSize || (inline && e.Ref.Size > MaxInline) {
			r.Fail("entry", fmt.Sprintf("entry %d: bad size %d or count %d", i, e.Ref.Size, e.Ref.Count))
		}
		if inline && r.Err() == nil {
			b := r.Take(int(e.Ref.Size))
			if r.Err() == nil && digest.Sum(b) != e.Ref.Hash {
				r.Fail("entry", fmt.Sprintf("entry %d: inline bytes do not hash to %s", i, e.Ref.Hash))
			}
			e.Inline = string(b)
		}
		t.Entries = append(t.Entries, e)
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("roots: decode table %s: %w: %w", h, err, ErrMalformed)
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

// DeltaRef is a root's reference to one delta segment: the hash, size and
// record count of the segment (Ref.Count) and the sequence of the commit
// that wrote it.
type DeltaRef struct {
	Ref      shards.Ref
	Sequence uint64
}

// Root is one committed state of a logical shard: the base (a table per
// non-empty family) overlaid by the delta segments of the commits not yet
// folded into it, newest first.
type Root struct {
	Nonce    Nonce
	Parent   digest.Hash // zero for the first root
	Sequence uint64      // the head sequence of the commit that wrote it
	Families []FamilyRef // Family strictly ascending
	Holds    []Hold      // Owner strictly ascending
	Deltas   []DeltaRef  // Sequence strictly descending, each at most Sequence
}

// DeltaBytes is the total size of the root's delta segments.
func (r *Root) DeltaBytes() int64 {
	var n int64
	for _, d := range r.Deltas {
		n += d.Ref.Size
	}
	return n
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

const (
	familyRefLen = 1 + 32 + 8 + 2 + 8
	deltaRefLen  = 32 + 8 + 4 + 8
)

// checkDelta reports what is wrong with delta reference i of a root of
// sequence seq, whose previous reference is prev (nil for the first).
func checkDelta(seq uint64, prev *DeltaRef, d DeltaRef) string {
	switch {
	case d.Ref.Hash.IsZero():
		return "names no delta"
	case d.Ref.Size <= 0 || d.Ref.Size > maxDeltaSize || d.Ref.Count == 0:
		return fmt.Sprintf("bad size %d or count %d", d.Ref.Size, d.Ref.Count)
	case d.Sequence == 0 || d.Sequence > seq:
		return fmt.Sprintf("sequence %d outside 1..%d", d.Sequence, seq)
	case prev != nil && prev.Sequence <= d.Sequence:
		return "sequences not descending"
	}
	return ""
}

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
	if len(r.Families) > 255 {
		return nil, shards.Ref{}, fmt.Errorf("roots: encode root: %d families: %w", len(r.Families), ErrMalformed)
	}
	w := wire.NewWriter(make([]byte, 0, 4+1+16+32+8+1+len(r.Families)*familyRefLen+4+len(r.Holds)*64+1+len(r.Deltas)*deltaRefLen)).
		Raw([]byte(rootMagic)).U8(RootFormat).Raw(r.Nonce[:]).Raw(r.Parent[:]).U64(r.Sequence).
		U8(uint8(len(r.Families)))
	for i, f := range r.Families {
		if i > 0 && r.Families[i-1].Family >= f.Family {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: families not ascending: %w", ErrMalformed)
		}
		if !s.Known(f.Family) || f.Shards == 0 || f.Shards > shards.Shards || f.Table.Size <= 0 || f.Table.Size > maxTableSize {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: bad family reference %+v: %w", f, ErrMalformed)
		}
		w.U8(byte(f.Family)).Raw(f.Table.Hash[:]).U64(uint64(f.Table.Size)).U16(f.Shards).U64(f.Records)
	}
	w.U32(uint32(len(r.Holds)))
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
		w.Bytes16([]byte(h.Owner)).Raw(h.Root[:])
	}
	if len(r.Deltas) > MaxDeltas {
		return nil, shards.Ref{}, fmt.Errorf("roots: encode root: %d deltas: %w", len(r.Deltas), ErrMalformed)
	}
	w.U8(uint8(len(r.Deltas)))
	for i, d := range r.Deltas {
		var prev *DeltaRef
		if i > 0 {
			prev = &r.Deltas[i-1]
		}
		if why := checkDelta(r.Sequence, prev, d); why != "" {
			return nil, shards.Ref{}, fmt.Errorf("roots: encode root: delta %d: %s: %w", i, why, ErrMalformed)
		}
		w.Raw(d.Ref.Hash[:]).U64(uint64(d.Ref.Size)).U32(d.Ref.Count).U64(d.Sequence)
	}
	b := w.Bytes()
	return b, shards.Ref{Hash: digest.Sum(b), Size: int64(len(b))}, nil
}

// DecodeRoot verifies that b hashes to want and decodes it strictly; its
// families must be of schema s.
func DecodeRoot(s *shards.Schema, b []byte, want digest.Hash) (*Root, error) {
	if err := digest.Verify(b, want); err != nil {
		return nil, fmt.Errorf("roots: decode root: %w", err)
	}
	return parseRoot(s, b, want)
}

// parseRoot decodes the root b, whose hash h the caller has verified.
func parseRoot(s *shards.Schema, b []byte, h digest.Hash) (*Root, error) {
	r := wire.NewReader(b)
	if v, ok := formatVersion(b, rootMagic); ok && v != RootFormat {
		return nil, fmt.Errorf("roots: decode root %s: %w: %w", h, shards.VersionError("root", uint64(v), RootFormat), ErrMalformed)
	}
	readMagic(r, rootMagic, RootFormat)
	root := &Root{}
	r.Copy(root.Nonce[:])
	r.Copy(root.Parent[:])
	root.Sequence = r.U64()
	nf := int(r.U8())
	for i := 0; i < nf && r.Err() == nil; i++ {
		var f FamilyRef
		f.Family = shards.Family(r.U8())
		r.Copy(f.Table.Hash[:])
		f.Table.Size = int64(r.U64())
		f.Shards = r.U16()
		f.Records = r.U64()
		f.Table.Count = uint32(f.Shards)
		switch {
		case r.Err() != nil:
		case !s.Known(f.Family):
			r.Fail("family", fmt.Sprintf("unknown family tag 0x%02x", uint8(f.Family)))
		case i > 0 && root.Families[i-1].Family >= f.Family:
			r.Fail("family", fmt.Sprintf("families not ascending at %d", i))
		case f.Shards == 0 || f.Shards > shards.Shards || f.Table.Size <= 0 || f.Table.Size > maxTableSize:
			r.Fail("family", fmt.Sprintf("family %s: bad table reference", s.Name(f.Family)))
		}
		root.Families = append(root.Families, f)
	}
	nh := int(r.U32())
	if r.Err() == nil && nh > r.Len()/(2+1+32) {
		r.Fail("holds", fmt.Sprintf("%d holds in %d bytes", nh, r.Len()))
	}
	for i := 0; i < nh && r.Err() == nil; i++ {
		var hd Hold
		hd.Owner = string(r.Bytes16())
		r.Copy(hd.Root[:])
		switch {
		case r.Err() != nil:
		case CheckOwner(hd.Owner) != nil:
			r.Fail("hold", fmt.Sprintf("hold %d: bad owner", i))
		case i > 0 && root.Holds[i-1].Owner >= hd.Owner:
			r.Fail("hold", fmt.Sprintf("hold owners not ascending at %d", i))
		case hd.Root.IsZero():
			r.Fail("hold", fmt.Sprintf("hold %q names no root", hd.Owner))
		}
		root.Holds = append(root.Holds, hd)
	}
	nd := int(r.U8())
	if r.Err() == nil && (nd > MaxDeltas || r.Len() != nd*deltaRefLen) {
		r.Fail("deltas", fmt.Sprintf("%d deltas in %d bytes", nd, r.Len()))
	}
	for i := 0; i < nd && r.Err() == nil; i++ {
		var d DeltaRef
		r.Copy(d.Ref.Hash[:])
		d.Ref.Size = int64(r.U64())
		d.Ref.Count = r.U32()
		d.Sequence = r.U64()
		var prev *DeltaRef
		if i > 0 {
			prev = &root.Deltas[i-1]
		}
		if why := checkDelta(root.Sequence, prev, d); r.Err() == nil && why != "" {
			r.Fail("delta", fmt.Sprintf("delta %d: %s", i, why))
		}
		root.Deltas = append(root.Deltas, d)
	}
	if err := r.End(); err != nil {
		return nil, fmt.Errorf("roots: decode root %s: %w: %w", h, err, ErrMalformed)
	}
	return root, nil
}

// formatVersion returns the version byte after magic at the start of b,
// if b starts with magic.
func formatVersion(b []byte, magic string) (byte, bool) {
	if len(b) <= len(magic) || string(b[:len(magic)]) != magic {
		return 0, false
	}
	return b[len(magic)], true
}

// readMagic reads a format's magic and version byte, failing r on any
// other.
func readMagic(r *wire.Reader, magic string, version byte) {
	if got := r.Take(len(magic)); r.Err() == nil && string(got) != magic {
		r.Fail("magic", fmt.Sprintf("bad magic %q", got))
	}
	if v := r.U8(); r.Err() == nil && v != version {
		r.Fail("version", fmt.Sprintf("unknown format version %d", v))
	}
}
