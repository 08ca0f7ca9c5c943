package head

import (
	"bytes"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/shards"
)

// FuzzDecodeHead: no input panics decodeHead; every refusal is
// ErrBadHead or ErrSchemaMismatch; a head that decodes passes the gate,
// names this shard and a root, and re-encodes to exactly its bytes.
func FuzzDecodeHead(f *testing.F) {
	f.Add([]byte(goldenHead))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schema":"cairn.head.v2"}`))
	f.Add([]byte(goldenHeadV1))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"committed_at_unix_ms":0,"logical_shard_id":"000102030405060708090a0b0c0d0e0f",` +
		`"marker":{"format_version":8,"schema_id":"test_workspace","value_format_version":1},` +
		`"nonce":"00000000000000000000000000000000","recent_nonces":[],` +
		`"root":"0101010101010101010101010101010101010101010101010101010101010101",` +
		`"root_size":1,"schema":"cairn.head.v2","sequence":1}`))
	f.Add([]byte(goldenGenesisHead))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, root, err := decodeHead(b, goldenShardID, testSchema.Marker)
		if err != nil {
			if h != nil || !root.IsZero() {
				t.Fatalf("decodeHead returned %+v, %s beside %v", h, root, err)
			}
			if !errors.Is(err, ErrBadHead) && !errors.Is(err, ErrSchemaMismatch) {
				t.Fatalf("untyped refusal: %v", err)
			}
			return
		}
		if h.Marker != testSchema.Marker || h.ShardID != goldenShardID.String() || len(h.Recent) > MaxRecentNonces || len(b) >= MaxHeadBytes {
			t.Fatalf("accepted %+v", h)
		}
		if h.Genesis() {
			if !root.IsZero() || h.Root != "" || h.RootSize != 0 || len(h.Recent) != 0 {
				t.Fatalf("accepted genesis head %+v", h)
			}
		} else if root.IsZero() || root.String() != h.Root || h.RootSize <= 0 || uint64(len(h.Recent)) >= h.Sequence {
			t.Fatalf("accepted %+v", h)
		}
		for _, n := range append([]string{h.Nonce}, h.Recent...) {
			if _, err := parseNonce(n); err != nil {
				t.Fatalf("accepted nonce %q", n)
			}
		}
		again, err := encodeHead(h)
		if err != nil {
			t.Fatalf("decoded head does not encode: %v", err)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("encode(decode(b)) = %s, want %s", again, b)
		}
		if _, _, err := decodeHead(b, shards.ShardID{0xff}, testSchema.Marker); !errors.Is(err, ErrBadHead) {
			t.Fatalf("accepted for another shard: %v", err)
		}
	})
}
