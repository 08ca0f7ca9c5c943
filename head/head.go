package head

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

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

// Schema is what a product stores in a shard: its families (with the
// engine's own) and the marker that names their formats. Open takes it; a
// shard written under another marker does not open.
type Schema struct {
	Marker   Marker
	Families *shards.Schema
}

func (sc Schema) check() error {
	if sc.Families == nil || sc.Marker.SchemaID == "" {
		return fmt.Errorf("head: schema %+v: needs families and a schema id", sc.Marker)
	}
	return nil
}

// SchemaKey is the system family's key of the schema marker record.
var SchemaKey = []byte("schema")

// Limits of the head's receipts.
const (
	// MaxReceipts is how many recent commits the head remembers.
	MaxReceipts = 32
	// MaxReceiptRequests is how many request ids one receipt lists; a
	// larger group commit is still found by its commit nonce.
	MaxReceiptRequests = 16
)

// Head is the one mutable object of a logical shard.
type Head struct {
	Format    string    `json:"schema"` // "cairn.head.v1"
	Marker    Marker    `json:"marker"`
	ShardID   string    `json:"logical_shard_id"`
	Sequence  uint64    `json:"sequence"`
	Root      string    `json:"root"`
	RootSize  int64     `json:"root_size"`
	Nonce     string    `json:"nonce"` // the committing attempt's; unique per write
	Committed int64     `json:"committed_at_unix_ms"`
	Receipts  []Receipt `json:"receipts"`
}

// Receipt records one recent commit: its attempt nonce, its sequence, and
// the requests it applied (up to MaxReceiptRequests of them).
type Receipt struct {
	Nonce    string           `json:"nonce"`
	Sequence uint64           `json:"sequence"`
	Requests []RequestReceipt `json:"requests"`
}

// RequestReceipt is one applied request and the digest of its result.
type RequestReceipt struct {
	ID     string `json:"id"`
	Result string `json:"result"` // "sha256:…" of the stored result bytes
}

// Schema implements manifests.Document.
func (*Head) Schema() string { return "cairn.head.v1" }

func encodeHead(h *Head) ([]byte, error) {
	h.Format = h.Schema()
	return manifests.Encode(h)
}

// decodeHead strictly decodes a head and checks the schema gate and the
// shard id. Anything unexpected fails closed.
func decodeHead(b []byte, id shards.ShardID, want Marker) (*Head, digest.Hash, error) {
	h := &Head{}
	if err := manifests.Decode(b, h); err != nil {
		return nil, digest.Hash{}, fmt.Errorf("%w: %w", ErrBadHead, err)
	}
	if h.Marker != want {
		return nil, digest.Hash{}, fmt.Errorf("%w: marker %+v, want %+v", ErrSchemaMismatch, h.Marker, want)
	}
	if h.ShardID != id.String() {
		return nil, digest.Hash{}, fmt.Errorf("%w: head names logical shard %q, want %s", ErrBadHead, h.ShardID, id)
	}
	root, err := digest.Parse(h.Root)
	if err != nil || root.IsZero() || h.RootSize <= 0 || h.Sequence == 0 {
		return nil, digest.Hash{}, fmt.Errorf("%w: bad root %q, size %d or sequence %d", ErrBadHead, h.Root, h.RootSize, h.Sequence)
	}
	if _, err := parseNonce(h.Nonce); err != nil {
		return nil, digest.Hash{}, fmt.Errorf("%w: %w", ErrBadHead, err)
	}
	if len(h.Receipts) > MaxReceipts {
		return nil, digest.Hash{}, fmt.Errorf("%w: %d receipts", ErrBadHead, len(h.Receipts))
	}
	return h, root, nil
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

// landedIn reports whether the head's receipts show the commit of nonce.
func (h *Head) landedIn(nonce string) (uint64, bool) {
	if h.Nonce == nonce {
		return h.Sequence, true
	}
	for _, r := range h.Receipts {
		if r.Nonce == nonce {
			return r.Sequence, true
		}
	}
	return 0, false
}
