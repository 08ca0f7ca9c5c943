package head

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

var goldenShardID = shards.ShardID{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// goldenHeadValue is a head at sequence 7 that remembers the nonces of
// sequences 6 and 5.
func goldenHeadValue() *Head {
	return &Head{
		Marker:    testSchema.Marker,
		ShardID:   goldenShardID.String(),
		Sequence:  7,
		Root:      strings.Repeat("11", 32),
		RootSize:  181,
		Nonce:     "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",
		Committed: 1767225600000,
		Recent:    []string{"b0b1b2b3b4b5b6b7b8b9babbbcbdbebf", "c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"},
	}
}

// goldenHead is goldenHeadValue's exact bytes: canonical JSON, members
// sorted by name, no whitespace.
const goldenHead = `{"committed_at_unix_ms":1767225600000,` +
	`"logical_shard_id":"000102030405060708090a0b0c0d0e0f",` +
	`"marker":{"format_version":8,"schema_id":"test_workspace","value_format_version":1},` +
	`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",` +
	`"recent_nonces":["b0b1b2b3b4b5b6b7b8b9babbbcbdbebf","c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"],` +
	`"root":"1111111111111111111111111111111111111111111111111111111111111111",` +
	`"root_size":181,` +
	`"schema":"cairn.head.v2",` +
	`"sequence":7}`

func TestHeadGolden(t *testing.T) {
	b, err := encodeHead(goldenHeadValue())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != goldenHead {
		t.Fatalf("encoded %s\nwant    %s", b, goldenHead)
	}
	h, root, err := decodeHead([]byte(goldenHead), goldenShardID, testSchema.Marker)
	if err != nil {
		t.Fatal(err)
	}
	want := goldenHeadValue()
	want.Format = "cairn.head.v2"
	want.Carrier = true // a v2 head's writer is taken to carry
	if fmt.Sprintf("%+v", h) != fmt.Sprintf("%+v", want) {
		t.Fatalf("decoded %+v\nwant    %+v", h, want)
	}
	if root.String() != want.Root {
		t.Fatalf("root = %s", root)
	}
	if seq, ok := h.landedIn("b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"); !ok || seq != 6 {
		t.Fatalf("landedIn(recent 0) = %d, %v", seq, ok)
	}
	if seq, ok := h.landedIn("c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"); !ok || seq != 5 {
		t.Fatalf("landedIn(recent 1) = %d, %v", seq, ok)
	}
	if seq, ok := h.landedIn(h.Nonce); !ok || seq != 7 {
		t.Fatalf("landedIn(head nonce) = %d, %v", seq, ok)
	}
	if _, ok := h.landedIn("d0d1d2d3d4d5d6d7d8d9dadbdcdddedf"); ok {
		t.Fatal("landedIn found an unknown nonce")
	}
}

// goldenHeadV1 is a head as cairn.head.v1 wrote it, with receipts.
const goldenHeadV1 = `{"committed_at_unix_ms":1767225600000,` +
	`"logical_shard_id":"000102030405060708090a0b0c0d0e0f",` +
	`"marker":{"format_version":8,"schema_id":"test_workspace","value_format_version":1},` +
	`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf",` +
	`"receipts":[` +
	`{"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf","requests":[{"id":"req-1","result":"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}],"sequence":7},` +
	`{"nonce":"b0b1b2b3b4b5b6b7b8b9babbbcbdbebf","requests":[],"sequence":6}],` +
	`"root":"1111111111111111111111111111111111111111111111111111111111111111",` +
	`"root_size":181,` +
	`"schema":"cairn.head.v1",` +
	`"sequence":7}`

// TestHeadOldFormat: a head of the previous format is refused with
// ErrOldFormat (also ErrBadHead) and a message that names both formats;
// it is never read as an empty shard.
func TestHeadOldFormat(t *testing.T) {
	h, _, err := decodeHead([]byte(goldenHeadV1), goldenShardID, testSchema.Marker)
	if h != nil || !errors.Is(err, ErrOldFormat) || !errors.Is(err, ErrBadHead) || !errors.Is(err, shards.ErrFormatVersion) {
		t.Fatalf("decodeHead(v1) = %+v, %v; want ErrOldFormat", h, err)
	}
	const msg = "head format cairn.head.v1 is from an older cairn; this version reads cairn.head.v2 and cairn.head.v3"
	if !strings.Contains(err.Error(), msg) {
		t.Fatalf("error %q does not say %q", err, msg)
	}
	t.Log(err)
}

// TestHeadSize: the head every request reads stays under MaxHeadBytes:
// typical (the golden head; a head with a full list of recent nonces) and
// maximal (every number at its largest, the longest schema id, a full
// list).
func TestHeadSize(t *testing.T) {
	full := goldenHeadValue()
	full.Sequence = 1 << 40
	full.Recent = nil
	for i := range MaxRecentNonces {
		full.Recent = append(full.Recent, fmt.Sprintf("%032x", i))
	}
	max := *full
	max.Recent = full.Recent
	max.Sequence = 1<<53 - 1 // the largest integer canonical JSON holds exactly
	max.Committed = 1<<53 - 1
	max.RootSize = 1<<53 - 1
	max.Marker = Marker{SchemaID: strings.Repeat("x", MaxSchemaID), FormatVersion: 1<<53 - 1, ValueFormatVersion: 1<<53 - 1}
	maxV3 := max
	maxV3.Format, maxV3.Carrier = HeadFormat, true
	for _, c := range []struct {
		name string
		h    *Head
	}{{"golden", goldenHeadValue()}, {"full", full}, {"maximal", &max}, {"maximal v3", &maxV3}} {
		b, err := encodeHead(c.h)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s head: %d bytes", c.name, len(b))
		if len(b) >= MaxHeadBytes {
			t.Errorf("%s head is %d bytes, want under %d", c.name, len(b), MaxHeadBytes)
		}
	}
}

// TestHeadEncodeFormats: the head's Format picks its wire form (unset is
// HeadFormatV2, which has no carrier member whatever Carrier holds); a
// format this version does not write is refused.
func TestHeadEncodeFormats(t *testing.T) {
	h := goldenHeadValue()
	h.Carrier = true
	if b, err := encodeHead(h); err != nil || string(b) != goldenHead {
		t.Fatalf("encodeHead(unset) = %s, %v", b, err)
	}
	h = goldenHeadValue()
	h.Format = "cairn.head.v0"
	if b, err := encodeHead(h); err == nil {
		t.Fatalf("encodeHead(cairn.head.v0) = %s, want an error", b)
	}
}

// goldenHeadV3 is goldenHeadValue's bytes in HeadFormat, its writer
// saying it carries the intents of others: goldenHead with the carrier
// member first (members sort by name) and the newer schema.
var goldenHeadV3 = strings.Replace(`{"carrier":true,`+goldenHead[1:], `"cairn.head.v2"`, `"cairn.head.v3"`, 1)

// TestHeadGoldenV3: the newer head format round-trips with its carrier
// member, false as well as true, and holds its writer to it: a v3 head
// without the member, or a v2 head with it, is refused.
func TestHeadGoldenV3(t *testing.T) {
	for _, carrier := range []bool{true, false} {
		h := goldenHeadValue()
		h.Format, h.Carrier = HeadFormat, carrier
		b, err := encodeHead(h)
		if err != nil {
			t.Fatal(err)
		}
		want := strings.Replace(goldenHeadV3, `"carrier":true`, fmt.Sprintf(`"carrier":%v`, carrier), 1)
		if string(b) != want {
			t.Fatalf("encoded %s\nwant    %s", b, want)
		}
		got, _, err := decodeHead(b, goldenShardID, testSchema.Marker)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", h) {
			t.Fatalf("decoded %+v\nwant    %+v", got, h)
		}
	}
	for name, b := range map[string]string{
		"v3 without carrier": strings.Replace(goldenHeadV3, `"carrier":true,`, "", 1),
		"v2 with carrier":    strings.Replace(goldenHeadV3, `"cairn.head.v3"`, `"cairn.head.v2"`, 1),
	} {
		if h, _, err := decodeHead([]byte(b), goldenShardID, testSchema.Marker); !errors.Is(err, ErrBadHead) {
			t.Errorf("%s: decodeHead = %+v, %v; want ErrBadHead", name, h, err)
		}
	}
}

func TestDecodeHeadRejects(t *testing.T) {
	edit := func(old, new string) []byte {
		if !strings.Contains(goldenHead, old) {
			t.Fatalf("no %q in the golden head", old)
		}
		return []byte(strings.Replace(goldenHead, old, new, 1))
	}
	manyRecent := func(n int, seq uint64) []byte {
		h := goldenHeadValue()
		h.Sequence = seq
		h.Recent = nil
		for i := range n {
			h.Recent = append(h.Recent, fmt.Sprintf("%032x", i))
		}
		b, err := encodeHead(h)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	root := strings.Repeat("11", 32)
	cases := []struct {
		name string
		b    []byte
		want error
	}{
		{"unknown schema version", edit(`"cairn.head.v2"`, `"cairn.head.v4"`), manifests.ErrSchema},
		{"no schema member", edit(`"schema":"cairn.head.v2",`, ``), manifests.ErrSchema},
		{"schema not a string", edit(`"cairn.head.v2"`, `1`), manifests.ErrSchema},
		{"format_version 7", edit(`"format_version":8`, `"format_version":7`), ErrSchemaMismatch},
		{"format_version 9", edit(`"format_version":8`, `"format_version":9`), ErrSchemaMismatch},
		{"value_format_version 2", edit(`"value_format_version":1`, `"value_format_version":2`), ErrSchemaMismatch},
		{"schema_id", edit(`"test_workspace"`, `"test_Workspace"`), ErrSchemaMismatch},
		{"marker member missing", edit(`,"value_format_version":1`, ``), manifests.ErrInvalid},
		{"marker extra member", edit(`"value_format_version":1}`, `"value_format_version":1,"zz":1}`), manifests.ErrUnknownField},
		{"another logical shard", edit(`"000102030405060708090a0b0c0d0e0f"`, `"000102030405060708090a0b0c0d0e10"`), ErrBadHead},
		{"upper-case logical shard", edit(`"000102030405060708090a0b0c0d0e0f"`, `"000102030405060708090A0B0C0D0E0F"`), ErrBadHead},
		{"zero root", edit(root, strings.Repeat("0", 64)), ErrBadHead},
		{"upper-case root", edit(root[:2], "AA"), ErrBadHead},
		{"short root", edit(root, root[:62]), ErrBadHead},
		{"root_size 0", edit(`"root_size":181`, `"root_size":0`), ErrBadHead},
		{"negative root_size", edit(`"root_size":181`, `"root_size":-1`), ErrBadHead},
		{"sequence 0", edit(`"schema":"cairn.head.v2","sequence":7`, `"schema":"cairn.head.v2","sequence":0`), ErrBadHead},
		{"negative sequence", edit(`"schema":"cairn.head.v2","sequence":7`, `"schema":"cairn.head.v2","sequence":-7`), manifests.ErrInvalid},
		{"upper-case nonce", edit(`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf","recent_nonces"`, `"nonce":"A0A1A2A3A4A5A6A7A8A9AAABACADAEAF","recent_nonces"`), ErrBadHead},
		{"short nonce", edit(`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf","recent_nonces"`, `"nonce":"a0a1","recent_nonces"`), ErrBadHead},
		{"empty nonce", edit(`"nonce":"a0a1a2a3a4a5a6a7a8a9aaabacadaeaf","recent_nonces"`, `"nonce":"","recent_nonces"`), ErrBadHead},
		{"too many recent nonces", manyRecent(MaxRecentNonces+1, 100), ErrBadHead},
		{"more recent nonces than earlier sequences", manyRecent(3, 3), ErrBadHead},
		{"bad recent nonce", edit(`"c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"`, `"C0C1C2C3C4C5C6C7C8C9CACBCCCDCECF"`), ErrBadHead},
		{"recent nonces null", edit(`"recent_nonces":["b0b1b2b3b4b5b6b7b8b9babbbcbdbebf","c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"]`, `"recent_nonces":null`), ErrBadHead},
		{"unknown member", edit(`{"committed`, `{"aaa":1,"committed`), manifests.ErrUnknownField},
		{"whitespace", edit(`,"root_size"`, `, "root_size"`), manifests.ErrNotCanonical},
		{"members unsorted", edit(`"root_size":181,"schema":"cairn.head.v2"`, `"schema":"cairn.head.v2","root_size":181`), manifests.ErrNotCanonical},
		{"float sequence", edit(`"schema":"cairn.head.v2","sequence":7`, `"schema":"cairn.head.v2","sequence":7.0`), manifests.ErrInvalid},
		{"trailing data", []byte(goldenHead + "{}"), manifests.ErrInvalid},
		{"not JSON", []byte("{"), manifests.ErrInvalid},
		{"empty", nil, manifests.ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, _, err := decodeHead(c.b, goldenShardID, testSchema.Marker)
			if err == nil || h != nil {
				t.Fatalf("decodeHead = %+v, %v; want an error", h, err)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if c.want != ErrSchemaMismatch && !errors.Is(err, ErrBadHead) {
				t.Fatalf("error %v, want also ErrBadHead", err)
			}
		})
	}
	// The limits themselves decode.
	if _, _, err := decodeHead(manyRecent(MaxRecentNonces, 100), goldenShardID, testSchema.Marker); err != nil {
		t.Fatalf("%d recent nonces: %v", MaxRecentNonces, err)
	}
	if _, _, err := decodeHead(manyRecent(2, 3), goldenShardID, testSchema.Marker); err != nil {
		t.Fatalf("2 recent nonces at sequence 3: %v", err)
	}
	// The golden head is refused for any other shard id.
	if _, _, err := decodeHead([]byte(goldenHead), shards.ShardID{1}, testSchema.Marker); !errors.Is(err, ErrBadHead) {
		t.Fatalf("another shard: %v", err)
	}
}

// crafted builds the objects of one shard state with the engine's own
// codecs and writes them to a bucket, so tests can open states the engine
// itself would never write.
type crafted struct {
	t      *testing.T
	b      bucket.Bucket
	layout shards.Layout
}

func newCrafted(t *testing.T, id shards.ShardID) *crafted {
	return &crafted{t: t, b: mem.NewBucket(), layout: shards.NewLayout(testSchema.Families, id)}
}

func (c *crafted) put(key string, body []byte) {
	c.t.Helper()
	if _, err := c.b.Put(context.Background(), key, body, bucket.Unconditional); err != nil {
		c.t.Fatal(err)
	}
}

// root writes the records as shard objects, one table per family and a
// root of sequence seq, and returns the root's reference.
func (c *crafted) root(seq uint64, recs map[shards.Family][]shards.Record) shards.Ref {
	c.t.Helper()
	root := &roots.Root{Nonce: roots.Nonce{byte(seq)}, Sequence: seq}
	fams := make([]shards.Family, 0, len(recs))
	for f := range recs {
		fams = append(fams, f)
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i] < fams[j] })
	for _, f := range fams {
		byShard := map[uint8][]shards.Record{}
		for _, r := range recs[f] {
			idx, err := testSchema.Families.ShardOf(f, r.Key)
			if err != nil {
				c.t.Fatal(err)
			}
			byShard[idx] = append(byShard[idx], r)
		}
		tbl := &roots.Table{Nonce: root.Nonce, Family: f}
		for idx := 0; idx < shards.Shards; idx++ {
			rs, ok := byShard[uint8(idx)]
			if !ok {
				continue
			}
			sort.Slice(rs, func(i, j int) bool { return bytes.Compare(rs[i].Key, rs[j].Key) < 0 })
			o, err := shards.NewObject(testSchema.Families, f, uint8(idx), rs)
			if err != nil {
				c.t.Fatal(err)
			}
			body, ref, err := o.Salted(shards.Salt(root.Nonce)).Encode()
			if err != nil {
				c.t.Fatal(err)
			}
			c.put(c.layout.Shard(f, uint8(idx), ref.Hash), body)
			tbl.Entries = append(tbl.Entries, roots.Entry{Shard: uint8(idx), Ref: ref})
		}
		body, ref, err := tbl.Encode(testSchema.Families)
		if err != nil {
			c.t.Fatal(err)
		}
		c.put(c.layout.Table(ref.Hash), body)
		root.Families = append(root.Families, roots.FamilyRef{Family: f, Table: ref, Shards: uint16(len(tbl.Entries)), Records: tbl.Records()})
	}
	body, ref, err := root.Encode(testSchema.Families)
	if err != nil {
		c.t.Fatal(err)
	}
	c.put(c.layout.Root(ref.Hash), body)
	return ref
}

// head writes a head naming root at sequence seq, after edit.
func (c *crafted) head(seq uint64, root shards.Ref, edit func(*Head)) {
	c.t.Helper()
	h := &Head{
		Format:   HeadFormat,
		Marker:   testSchema.Marker,
		ShardID:  c.layout.ID().String(),
		Sequence: seq,
		Root:     root.Hash.String(),
		RootSize: root.Size,
		Nonce:    nonceString(roots.Nonce{byte(seq)}),
		Recent:   []string{},
	}
	if edit != nil {
		edit(h)
	}
	b, err := manifests.Canonical(h) // not encodeHead: the edit may change the schema
	if err != nil {
		c.t.Fatal(err)
	}
	c.put(c.layout.Head(), b)
}

func schemaRecord(t *testing.T, m any) shards.Record {
	b, err := manifests.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return shards.Record{Key: SchemaKey, Value: b}
}

// TestOpenSchemaGate opens crafted shards: the engine's own state opens,
// and a wrong shard id, an unknown head schema, or a system schema record
// that is missing or differs fails closed.
func TestOpenSchemaGate(t *testing.T) {
	ctx := context.Background()
	id := shards.NewShardID()
	revision := shards.Record{Key: bytes.Repeat([]byte{7}, 32), Value: []byte("r")}
	good := func(t *testing.T) shards.Record { return schemaRecord(t, testSchema.Marker) }
	cases := []struct {
		name string
		recs func(t *testing.T) map[shards.Family][]shards.Record
		seq  uint64 // of the head; the root's is 3
		edit func(*Head)
		want error // nil: opens
	}{
		{name: "supported", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			return map[shards.Family][]shards.Record{shards.System: {good(t)}, shardstest.Fixed32: {revision}}
		}},
		{name: "another logical shard id", edit: func(h *Head) { h.ShardID = shards.NewShardID().String() }, want: ErrBadHead},
		{name: "unknown head schema", edit: func(h *Head) { h.Format = "cairn.head.v4" }, want: ErrBadHead},
		{name: "head of an older format", edit: func(h *Head) { h.Format = "cairn.head.v1" }, want: ErrOldFormat},
		{name: "head marker format_version 7", edit: func(h *Head) { h.Marker.FormatVersion = 7 }, want: ErrSchemaMismatch},
		{name: "head sequence differs from the root's", seq: 4, want: ErrBadHead},
		{name: "no system family", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			return map[shards.Family][]shards.Record{shardstest.Fixed32: {revision}}
		}, want: ErrSchemaMismatch},
		{name: "system family without the schema record", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			return map[shards.Family][]shards.Record{shards.System: {{Key: []byte("schemas"), Value: good(t).Value}}}
		}, want: ErrSchemaMismatch},
		{name: "system record format_version 7", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			m := testSchema.Marker
			m.FormatVersion = 7
			return map[shards.Family][]shards.Record{shards.System: {schemaRecord(t, m)}}
		}, want: ErrSchemaMismatch},
		{name: "system record value_format_version 2", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			m := testSchema.Marker
			m.ValueFormatVersion = 2
			return map[shards.Family][]shards.Record{shards.System: {schemaRecord(t, m)}}
		}, want: ErrSchemaMismatch},
		{name: "system record of another schema", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			m := testSchema.Marker
			m.SchemaID = "test_other"
			return map[shards.Family][]shards.Record{shards.System: {schemaRecord(t, m)}}
		}, want: ErrSchemaMismatch},
		{name: "system record with an extra member", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			return map[shards.Family][]shards.Record{shards.System: {schemaRecord(t, map[string]any{
				"schema_id": "test_workspace", "format_version": 8, "value_format_version": 1, "tree_registry": 1})}}
		}, want: ErrSchemaMismatch},
		{name: "system record not canonical", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			return map[shards.Family][]shards.Record{shards.System: {{Key: SchemaKey,
				Value: []byte(`{"schema_id":"test_workspace", "format_version":8,"value_format_version":1}`)}}}
		}, want: ErrSchemaMismatch},
		{name: "system record empty", recs: func(t *testing.T) map[shards.Family][]shards.Record {
			return map[shards.Family][]shards.Record{shards.System: {{Key: SchemaKey}}}
		}, want: ErrSchemaMismatch},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cr := newCrafted(t, id)
			recs := map[shards.Family][]shards.Record{shards.System: {good(t)}}
			if c.recs != nil {
				recs = c.recs(t)
			}
			root := cr.root(3, recs)
			seq := c.seq
			if seq == 0 {
				seq = 3
			}
			cr.head(seq, root, c.edit)
			before := countKeys(t, cr.b)
			// Open does no I/O: the gate is met by the first read (the
			// head's checks by the Pin, the system record's by the read)
			// and by the first commit.
			s, err := Open(ctx, cr.b, id, testSchema, Options{Check: true})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			defer s.Close()
			if after := countKeys(t, cr.b); after != before {
				t.Fatalf("Open wrote %d objects", after-before)
			}
			read := func() error {
				sn, err := s.Pin(ctx)
				if err != nil {
					return err
				}
				if sn.Sequence() != 3 || sn.RootHash() != root.Hash {
					t.Fatalf("Pin = %v", sn)
				}
				v, ok, err := sn.Get(ctx, shardstest.Fixed32, revision.Key)
				if err == nil && (!ok || string(v) != "r") && c.want == nil {
					t.Fatalf("Get = %q, %v", v, ok)
				}
				return err
			}
			err = read()
			if c.want == nil {
				if err != nil {
					t.Fatalf("read: %v", err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("read: %v, want %v", err, c.want)
			}
			// The refusal holds for later reads and for commits, and
			// nothing is written.
			if err := read(); !errors.Is(err, c.want) {
				t.Fatalf("second read: %v, want %v", err, c.want)
			}
			_, err = s.Do(ctx, Command{Apply: func(tx *Tx) ([]byte, error) {
				return nil, tx.Put(shardstest.Fixed32, revision.Key, []byte("w"))
			}})
			if !errors.Is(err, c.want) {
				t.Fatalf("commit: %v, want %v", err, c.want)
			}
			if after := countKeys(t, cr.b); after != before {
				t.Fatalf("a refused shard got %d objects written", after-before)
			}
		})
	}
}

func countKeys(t *testing.T, b bucket.Bucket) int {
	t.Helper()
	objs, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(objs)
}

// TestOpenGenesis: Open does no I/O; an empty shard is initialized by its
// first commit with the marker in its system family and a head at
// sequence 1, and opening it again reads it.
func TestOpenGenesis(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	id := shards.NewShardID()
	s, err := Open(ctx, b, id, testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	// A read of a shard without a head fails and writes nothing; the
	// first commit (here one that changes nothing) initializes it.
	if _, err := s.Pin(ctx); !errors.Is(err, ErrNoHead) {
		t.Fatalf("Pin of an empty shard: %v, want ErrNoHead", err)
	}
	if n := countKeys(t, b); n != 0 {
		t.Fatalf("Open and a read of an empty shard wrote %d objects", n)
	}
	if res, err := s.Do(ctx, Command{Apply: func(*Tx) ([]byte, error) { return nil, nil }}); err != nil || res.Sequence != 1 {
		t.Fatalf("first commit = %+v, %v", res, err)
	}
	sn, err := s.Pin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if sn.Sequence() != 1 || sn.Head().Sequence != 1 || len(sn.Head().Recent) != 0 || !sn.Root().Parent.IsZero() {
		t.Fatalf("genesis head %+v, root %+v", sn.Head(), sn.Root())
	}
	// The genesis commit is a commit like any other: one delta segment
	// holding the schema record, no base tables yet.
	if len(sn.Root().Families) != 0 || len(sn.Root().Deltas) != 1 || sn.Root().Deltas[0].Ref.Count != 1 || sn.Root().Deltas[0].Sequence != 1 {
		t.Fatalf("genesis families %+v, deltas %+v", sn.Root().Families, sn.Root().Deltas)
	}
	v, ok, err := sn.Get(ctx, shards.System, SchemaKey)
	if err != nil || !ok || string(v) != `{"format_version":8,"schema_id":"test_workspace","value_format_version":1}` {
		t.Fatalf("schema record %q, %v, %v", v, ok, err)
	}
	if err := Check(ctx, b, s.Layout(), sn.RootHash(), CheckOptions{Strict: true}); err != nil {
		t.Fatal(err)
	}
	body, _, err := b.Get(ctx, s.Layout().Head())
	if err != nil {
		t.Fatal(err)
	}
	if err := manifests.CheckCanonical(body); err != nil {
		t.Fatalf("head not canonical: %v", err)
	}
	// Genesis: the head and 2 objects (root, delta).
	if n := countKeys(t, b); n != 3 {
		t.Fatalf("genesis wrote %d objects, want 3", n)
	}
	s.Close()
	again, err := Open(ctx, b, id, testSchema, Options{Check: true})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if n := countKeys(t, b); n != 3 {
		t.Fatalf("reopening wrote objects: %d", n)
	}
}

// TestOpenHeadWithMissingRoot: a head whose root is gone is damage: a Pin
// fails closed and does not take the shard for an empty one (it writes
// nothing).
func TestOpenHeadWithMissingRoot(t *testing.T) {
	ctx := context.Background()
	id := shards.NewShardID()
	cr := newCrafted(t, id)
	root := cr.root(3, map[shards.Family][]shards.Record{shards.System: {schemaRecord(t, testSchema.Marker)}})
	cr.head(3, root, nil)
	if err := cr.b.Delete(ctx, cr.layout.Root(root.Hash), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	before := countKeys(t, cr.b)
	s, err := Open(ctx, cr.b, id, testSchema, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Pin(ctx); !errors.Is(err, bucket.ErrIntegrity) || !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("Pin: %v, want ErrIntegrity for the missing root", err)
	}
	if after := countKeys(t, cr.b); after != before {
		t.Errorf("Open of a shard whose head exists wrote %d objects (a genesis root for an empty shard)", after-before)
	}
}
