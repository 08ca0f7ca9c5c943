package head

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// Marker is the schema gate: the product's System("schema") record. A
// shard opens only if its head and its system record carry exactly the
// marker of the schema it is opened with.
type Marker struct {
	SchemaID           string `json:"schema_id"`
	FormatVersion      uint64 `json:"format_version"`
	ValueFormatVersion uint64 `json:"value_format_version"`
}

// reads reports whether a Store of marker m opens a shard of marker h:
// the same schema and format, in m's value format or one of the
// valueFormatsBack before it (a product reads those and writes each
// shard in its own; docs/engine.md, section 2.8). The zero m reads any
// marker.
func (m Marker) reads(h Marker) bool {
	if m == (Marker{}) || h == m {
		return true
	}
	v, hv := m.ValueFormatVersion, h.ValueFormatVersion
	return h.SchemaID == m.SchemaID && h.FormatVersion == m.FormatVersion && hv >= 1 && hv < v && v-hv <= valueFormatsBack
}

// valueFormatsBack is how many value formats before its own a Store
// opens: a shard keeps the value format it was created in, so a
// deployment moves on by at most this many releases of the value format
// before its oldest shards no longer open.
const valueFormatsBack = 5

// Schema is what a product stores in a shard: its families (with the
// engine's own) and the marker that names their formats. Open takes it; a
// shard written under another marker does not open.
type Schema struct {
	Marker   Marker
	Families *shards.Schema
	// CompressFrom, if not 0, is the value format from which a shard
	// keeps its shard objects and delta segments compressed
	// (shards.Compress): a shard whose marker has a value format of at
	// least CompressFrom writes them so, others plain. A reader reads
	// both whatever the marker, but a release that reads only plain
	// objects must never meet a shard it serves written so: the product
	// gives compression a value format of its own.
	CompressFrom uint64
	// CarrierFrom, if not 0, is the value format from which a shard's
	// heads are of HeadFormat, saying whether their writer lists the
	// intents of other replicas, so that a lone writer need not list
	// them at every commit. Like compression, it needs a value format of
	// its own: a release that reads only HeadFormatV2 refuses the newer
	// head.
	CarrierFrom uint64
	// LastKeysFrom, if not 0, is the value format from which a shard's
	// tables are of roots.TableFormat, each entry with its shard's last
	// key, so that a lookup of a key past it (a new, time-ordered id)
	// reads no shard. A release that reads only roots.TableFormatV3
	// refuses those tables: it needs a value format of its own too.
	LastKeysFrom uint64
}

// tableFormat is the table format a shard of marker m writes.
func (sc Schema) tableFormat(m Marker) uint8 {
	if sc.LastKeysFrom > 0 && m.ValueFormatVersion >= sc.LastKeysFrom {
		return roots.TableFormat
	}
	return roots.TableFormatV3
}

// compresses reports whether a shard of marker m keeps its objects
// compressed.
func (sc Schema) compresses(m Marker) bool {
	return sc.CompressFrom > 0 && m.ValueFormatVersion >= sc.CompressFrom
}

func (sc Schema) check() error {
	if sc.Families == nil || sc.Marker.SchemaID == "" {
		return fmt.Errorf("head: schema %+v: needs families and a schema id", sc.Marker)
	}
	if len(sc.Marker.SchemaID) > MaxSchemaID {
		return fmt.Errorf("head: schema id %q: longer than %d bytes", sc.Marker.SchemaID, MaxSchemaID)
	}
	return nil
}

// SchemaKey is the system family's key of the schema marker record.
var SchemaKey = []byte("schema")

// MaxSchemaID bounds a marker's schema id, so that a head stays under
// MaxHeadBytes whatever its numbers.
const MaxSchemaID = 32

// MaxRecentNonces is how many landed attempts before the head's own the
// head remembers (their nonces, newest first). Reconciliation settles an
// ambiguous head write from them while the head has moved by at most this
// many commits; beyond, it walks the chain of roots.
const MaxRecentNonces = 16

// MaxHeadBytes bounds the encoded head: every request reads it.
const MaxHeadBytes = 1024

// HeadFormat is the schema string of the newest head format: the head
// of a shard whose value format is at least its Schema's CarrierFrom.
// HeadFormatV2, the format before it, is what every other shard keeps
// writing, so that a release of those value formats still reads the
// heads of the shards it serves (docs/engine.md, section 2.8). Both are
// read; olderHeadFormats are those of earlier versions, refused with
// ErrOldFormat.
const (
	HeadFormat   = "cairn.head.v3"
	HeadFormatV2 = "cairn.head.v2"
)

var olderHeadFormats = []string{"cairn.head.v1"}

// Head is the one mutable object of a logical shard. It holds only what
// every request needs: request receipts live in the command_dedupe
// family.
type Head struct {
	Format    string `json:"schema"` // HeadFormat or HeadFormatV2
	Marker    Marker `json:"marker"`
	ShardID   string `json:"logical_shard_id"`
	Sequence  uint64 `json:"sequence"`
	Root      string `json:"root"`
	RootSize  int64  `json:"root_size"`
	Nonce     string `json:"nonce"` // the committing attempt's; unique per write
	Committed int64  `json:"committed_at_unix_ms"`
	// Recent are the nonces of the attempts that wrote the previous heads,
	// newest first: Recent[i] wrote sequence Sequence-1-i. At most
	// MaxRecentNonces, and never more than Sequence-1 (none at sequence 0
	// or 1: a genesis head is written by no commit).
	Recent []string `json:"recent_nonces"`
	// Carrier (HeadFormat only; a head of HeadFormatV2 is read as true)
	// says that the replica that wrote the head lists the other
	// replicas' intents at its commits: it knows the head is shared. A
	// replica that loses the head to a writer that does not (a lone
	// writer, which saves the listing) commits its own commands instead of
	// leaving them to it (docs/engine.md, section 5, Intents).
	Carrier bool `json:"carrier"`
}

// headV2 is the wire form of a head of HeadFormatV2, which has no
// carrier member; Head's own form is HeadFormat's.
type headV2 struct {
	Format    string   `json:"schema"`
	Marker    Marker   `json:"marker"`
	ShardID   string   `json:"logical_shard_id"`
	Sequence  uint64   `json:"sequence"`
	Root      string   `json:"root"`
	RootSize  int64    `json:"root_size"`
	Nonce     string   `json:"nonce"`
	Committed int64    `json:"committed_at_unix_ms"`
	Recent    []string `json:"recent_nonces"`
}

// Schema implements manifests.Document.
func (*headV2) Schema() string { return HeadFormatV2 }

// Schema implements manifests.Document: Head is HeadFormat's wire form.
func (*Head) Schema() string { return HeadFormat }

// headFormat is the format of the heads of a shard of marker m: a shard
// keeps the head format of its value format, as it keeps the rest.
func (sc Schema) headFormat(m Marker) string {
	if sc.CarrierFrom > 0 && m.ValueFormatVersion >= sc.CarrierFrom {
		return HeadFormat
	}
	return HeadFormatV2
}

// encodeHead encodes h in its Format (HeadFormatV2 when unset). A head
// of HeadFormatV2 has no carrier member: its writer is taken to carry.
func encodeHead(h *Head) ([]byte, error) {
	if h.Recent == nil {
		h.Recent = []string{}
	}
	switch h.Format {
	case HeadFormat:
		return manifests.Encode(h)
	case "", HeadFormatV2:
		h.Format = HeadFormatV2
		return manifests.Encode(&headV2{Format: h.Format, Marker: h.Marker, ShardID: h.ShardID, Sequence: h.Sequence,
			Root: h.Root, RootSize: h.RootSize, Nonce: h.Nonce, Committed: h.Committed, Recent: h.Recent})
	}
	return nil, fmt.Errorf("head: cannot write head format %q", h.Format)
}

// Genesis reports whether h is a genesis head: sequence 0, naming no
// root. The first write of a shard creates one (create-only) before it
// stages anything, so that a crash at any point of that write leaves
// nothing, a genesis head or a committed head, never objects without a
// head. A genesis shard holds no record; its first commit writes the
// schema record (sequence 1).
func (h *Head) Genesis() bool { return h.Sequence == 0 }

// RootHash is the hash of the root h names; zero for a genesis head.
func (h *Head) RootHash() digest.Hash {
	if h.Genesis() {
		return digest.Hash{}
	}
	r, _ := digest.Parse(h.Root) // DecodeHead checked it
	return r
}

// DecodeHead strictly decodes the bytes of shard id's head and checks
// the schema gate and the shard id. Anything unexpected fails closed: a
// head of an older format is ErrOldFormat, a marker other than want
// ErrSchemaMismatch, anything else malformed ErrBadHead. A genesis head
// (sequence 0) must name no root ("" and size 0) and remember no nonce;
// every other head names a root of size > 0 and at most
// min(MaxRecentNonces, sequence-1) recent nonces. The zero Marker for
// want accepts any marker (a sweep of a shard whose product it does not
// know); a product passes its own.
func DecodeHead(b []byte, id shards.ShardID, want Marker) (*Head, error) {
	h, err := decodeWire(b)
	if err != nil {
		if old := headSchema(b); slices.Contains(olderHeadFormats, old) {
			return nil, fmt.Errorf("%w: head format %s is from an older cairn; this version reads %s and %s", ErrOldFormat, old, HeadFormatV2, HeadFormat)
		}
		return nil, fmt.Errorf("%w: %w", ErrBadHead, err)
	}
	if !want.reads(h.Marker) {
		return nil, fmt.Errorf("%w: marker %+v, want %+v", ErrSchemaMismatch, h.Marker, want)
	}
	if h.ShardID != id.String() {
		return nil, fmt.Errorf("%w: head names logical shard %q, want %s", ErrBadHead, h.ShardID, id)
	}
	if h.Genesis() {
		if h.Root != "" || h.RootSize != 0 {
			return nil, fmt.Errorf("%w: genesis head (sequence 0) names root %q of size %d", ErrBadHead, h.Root, h.RootSize)
		}
	} else if root, err := digest.Parse(h.Root); err != nil || root.IsZero() || h.RootSize <= 0 {
		return nil, fmt.Errorf("%w: bad root %q or size %d at sequence %d", ErrBadHead, h.Root, h.RootSize, h.Sequence)
	}
	if _, err := parseNonce(h.Nonce); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadHead, err)
	}
	if h.Recent == nil || len(h.Recent) > MaxRecentNonces || uint64(len(h.Recent)) > max(h.Sequence, 1)-1 {
		return nil, fmt.Errorf("%w: %d recent nonces at sequence %d", ErrBadHead, len(h.Recent), h.Sequence)
	}
	for _, n := range h.Recent {
		if _, err := parseNonce(n); err != nil {
			return nil, fmt.Errorf("%w: recent nonces: %w", ErrBadHead, err)
		}
	}
	return h, nil
}

// ReadHead reads the head of layout's shard (a strong read) and decodes
// it with DecodeHead: the one reader of heads that the engine, the sweep,
// pins, fsck and recovery share. It returns the head and the head
// object's attributes: its Version, and its ModTime, when the store last
// wrote it by the store's own clock. A missing head is an error wrapping
// both ErrNoHead and bucket.ErrNotExist (ReadHead cannot tell a shard
// never written from one whose head was lost: HasObjects can); a failed
// read is the bucket's error; a head that does not decode is ErrBadHead,
// ErrOldFormat or ErrSchemaMismatch, as DecodeHead says.
func ReadHead(ctx context.Context, b bucket.Bucket, layout shards.Layout, want Marker) (*Head, bucket.Attrs, error) {
	body, attrs, err := getHead(ctx, b, layout)
	if err != nil {
		return nil, bucket.Attrs{}, err
	}
	h, err := decodeRead(body, layout, want)
	if err != nil {
		return nil, bucket.Attrs{}, err
	}
	return h, attrs, nil
}

// getHead and decodeRead are ReadHead's two halves, apart so that a Store
// can skip decoding a head whose version it has decoded before.
func getHead(ctx context.Context, b bucket.Bucket, layout shards.Layout) ([]byte, bucket.Attrs, error) {
	body, attrs, err := b.Get(ctx, layout.Head())
	if errors.Is(err, bucket.ErrNotExist) {
		return nil, bucket.Attrs{}, fmt.Errorf("head: read head of shard %s: %w: %w", layout.ID(), ErrNoHead, err)
	}
	if err != nil {
		return nil, bucket.Attrs{}, fmt.Errorf("head: read head of shard %s: %w", layout.ID(), err)
	}
	return body, attrs, nil
}

func decodeRead(body []byte, layout shards.Layout, want Marker) (*Head, error) {
	h, err := DecodeHead(body, layout.ID(), want)
	if err != nil {
		return nil, fmt.Errorf("head: shard %s: %w", layout.ID(), err)
	}
	return h, nil
}

// HasObjects reports whether anything is stored under the shard's prefix
// (shards.Layout.Prefix), the head aside or not: one listing of one key.
// A shard without a head and without objects was never written (or was
// wholly removed); one with objects but no head has lost its head.
func HasObjects(ctx context.Context, b bucket.Bucket, layout shards.Layout) (bool, error) {
	page, err := b.List(ctx, bucket.ListOptions{Prefix: layout.Prefix(), PageSize: 1})
	if err != nil {
		return false, fmt.Errorf("head: list %s: %w", layout.Prefix(), err)
	}
	return len(page.Objects) > 0 || len(page.Prefixes) > 0, nil
}

// headSchema returns the schema member of b, or "".
func headSchema(b []byte) string {
	var probe struct {
		Schema string `json:"schema"`
	}
	if json.Unmarshal(b, &probe) != nil {
		return ""
	}
	return probe.Schema
}

// decodeWire strictly decodes b in the format its schema member names:
// HeadFormat into a Head, HeadFormatV2 into its own form, read as a
// carrier (a writer of that format lists intents whenever the head is
// shared).
func decodeWire(b []byte) (*Head, error) {
	if headSchema(b) == HeadFormatV2 {
		w := &headV2{}
		if err := manifests.Decode(b, w); err != nil {
			return nil, err
		}
		return &Head{Format: w.Format, Marker: w.Marker, ShardID: w.ShardID, Sequence: w.Sequence, Root: w.Root,
			RootSize: w.RootSize, Nonce: w.Nonce, Committed: w.Committed, Recent: w.Recent, Carrier: true}, nil
	}
	h := &Head{}
	if err := manifests.Decode(b, h); err != nil {
		return nil, err
	}
	return h, nil
}

// recentNonces returns the Recent list of the head that follows parent.
// A genesis head is no commit: the head of sequence 1 remembers none.
func recentNonces(parent *Head) []string {
	out := make([]string, 0, MaxRecentNonces)
	if parent.Genesis() {
		return out
	}
	out = append(out, parent.Nonce)
	for _, n := range parent.Recent {
		if len(out) == MaxRecentNonces {
			break
		}
		out = append(out, n)
	}
	return out
}

func newNonce() roots.Nonce {
	var n roots.Nonce
	if _, err := rand.Read(n[:]); err != nil {
		panic("head: no randomness: " + err.Error())
	}
	return n
}

func nonceString(n roots.Nonce) string { return hex.EncodeToString(n[:]) }

func parseNonce(s string) (roots.Nonce, error) {
	var n roots.Nonce
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(n) || hex.EncodeToString(b) != s {
		return n, fmt.Errorf("bad nonce %q", s)
	}
	copy(n[:], b)
	return n, nil
}

// landedIn reports whether the head or its recent nonces show the commit
// of nonce, and at which sequence.
func (h *Head) landedIn(nonce string) (uint64, bool) {
	if h.Nonce == nonce {
		return h.Sequence, true
	}
	for i, n := range h.Recent {
		if n == nonce {
			return h.Sequence - 1 - uint64(i), true
		}
	}
	return 0, false
}
