package nokv_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The snapshot records: golden bytes, round trips, strict decoding.

const fxAnnotation = `{"metadata":{"suite":"facade"},"reason":"test"}`

var (
	fxSnapshotRef = nokv.SnapshotRef{
		ReadVersion: 46, Alias: ptr("before-edit"), LeaseDeadline: 259200000,
		State: nokv.SnapshotStateRetired, ConsumerCount: 1, ConsumerEpoch: 2,
		Annotation:       []byte(fxAnnotation),
		RetireAnnotation: []byte(`{"metadata":null,"reason":"done"}`),
		HeldRoot:         fill32(0x77), CreatedVersion: 47, MintSequence: 3,
	}
	fxSnapshotAlias = nokv.SnapshotAlias{Snapshot: 0x0102030405060708, AliasGeneration: 3, State: nokv.SnapshotStateActive}
	fxHistoryHold   = nokv.HistoryHold{ReadVersion: 46, SourceSnapshot: ptr(nokv.SnapshotID(9)), State: nokv.HistoryHoldStateActive, CreatedVersion: 47}
	fxLeaseClock    = nokv.LeaseClock{HighWater: 1_700_000_000_000, ReapNotBefore: 1_700_000_060_000}
)

func snapshotRecords() []record {
	return []record{
		newRecord("SnapshotRef", fxSnapshotRef, nokv.DecodeSnapshotRef, func(t testing.TB) []byte {
			return hx(t, "01", "000000000000002e", "01", lp("before-edit"), "000000000f731400", "04",
				"0000000000000001", "0000000000000002", lp(fxAnnotation),
				"01", lp(`{"metadata":null,"reason":"done"}`), rep("77", 32), "000000000000002f", "00000003")
		}),
		newRecord("SnapshotRef without alias or retire annotation", nokv.SnapshotRef{
			ReadVersion: 1, LeaseDeadline: 2, State: nokv.SnapshotStateActive,
			Annotation: []byte(`{"metadata":null,"reason":null}`), CreatedVersion: 2,
		}, nokv.DecodeSnapshotRef, func(t testing.TB) []byte {
			return hx(t, "01", "0000000000000001", "00", "0000000000000002", "01",
				rep("00", 16), lp(`{"metadata":null,"reason":null}`), "00", rep("00", 32), "0000000000000002", "00000000")
		}),
		newRecord("SnapshotAlias", fxSnapshotAlias, nokv.DecodeSnapshotAlias, func(t testing.TB) []byte {
			return hx(t, "01", "0102030405060708", "0000000000000003", "01")
		}),
		newRecord("HistoryHold", fxHistoryHold, nokv.DecodeHistoryHold, func(t testing.TB) []byte {
			return hx(t, "01", "000000000000002e", "01", "0000000000000009", "01", "000000000000002f")
		}),
		newRecord("LeaseClock", fxLeaseClock, nokv.DecodeLeaseClock, func(t testing.TB) []byte {
			return hx(t, "01", "0000018bcfe56800", "0000018bcfe65260")
		}),
	}
}

func TestSnapshotRecordsGoldenAndRoundTrip(t *testing.T) {
	for _, r := range snapshotRecords() {
		b, err := r.encode(r.value)
		if err != nil {
			t.Fatalf("%s: %v", r.name, err)
		}
		if want := r.golden(t); !bytes.Equal(b, want) {
			t.Fatalf("%s\n got %x\nwant %x", r.name, b, want)
		}
		got, err := r.decode(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", r.name, err)
		}
		if !reflect.DeepEqual(got, r.value) {
			t.Fatalf("%s: decode = %#v, want %#v", r.name, got, r.value)
		}
		for n := 0; n < len(b); n++ {
			if _, err := r.decode(b[:n]); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("%s truncated to %d bytes: %v", r.name, n, err)
			}
		}
		if _, err := r.decode(append(bytes.Clone(b), 0)); !errors.Is(err, nokv.ErrBadRecord) {
			t.Fatalf("%s with a trailing byte: %v", r.name, err)
		}
		c := bytes.Clone(b)
		c[0] = 2
		if _, err := r.decode(c); !errors.Is(err, nokv.ErrUnknownVersion) {
			t.Fatalf("%s at version 2: %v", r.name, err)
		}
	}
}

// An unknown lifecycle or hold state fails closed, in both directions.
func TestSnapshotRecordsRejectUnknownState(t *testing.T) {
	ref := fxSnapshotRef
	ref.State = 5
	if _, err := ref.Encode(); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("encode SnapshotRef state 5: %v", err)
	}
	alias := fxSnapshotAlias
	alias.State = 0
	if _, err := alias.Encode(); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("encode SnapshotAlias state 0: %v", err)
	}
	hold := fxHistoryHold
	hold.State = 3
	if _, err := hold.Encode(); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("encode HistoryHold state 3: %v", err)
	}

	b, _ := fxSnapshotRef.Encode()
	// The state byte follows version, read_version, the alias and the
	// deadline.
	at := 1 + 8 + 1 + 4 + len("before-edit") + 8
	for _, v := range []byte{0, 5, 0xff} {
		c := bytes.Clone(b)
		c[at] = v
		if _, err := nokv.DecodeSnapshotRef(c); !errors.Is(err, nokv.ErrUnknownEnum) {
			t.Fatalf("decode SnapshotRef state %d: %v", v, err)
		}
	}
	b, _ = fxSnapshotAlias.Encode()
	b[len(b)-1] = 9
	if _, err := nokv.DecodeSnapshotAlias(b); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("decode SnapshotAlias state 9: %v", err)
	}
	b, _ = fxHistoryHold.Encode()
	b[1+8+1+8] = 3
	if _, err := nokv.DecodeHistoryHold(b); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("decode HistoryHold state 3: %v", err)
	}
}

func TestSnapshotRecordRules(t *testing.T) {
	bad := []struct {
		name string
		v    interface{ Encode() ([]byte, error) }
	}{
		{"empty alias", func() nokv.SnapshotRef { r := fxSnapshotRef; r.Alias = ptr(""); return r }()},
		{"alias with NUL", func() nokv.SnapshotRef { r := fxSnapshotRef; r.Alias = ptr("a\x00b"); return r }()},
		{"alias of 129 bytes", func() nokv.SnapshotRef { r := fxSnapshotRef; r.Alias = ptr(strings.Repeat("a", 129)); return r }()},
		{"empty annotation", func() nokv.SnapshotRef { r := fxSnapshotRef; r.Annotation = nil; return r }()},
		{"annotation not an object", func() nokv.SnapshotRef { r := fxSnapshotRef; r.Annotation = []byte(`[1]`); return r }()},
		{"annotation not JSON", func() nokv.SnapshotRef { r := fxSnapshotRef; r.Annotation = []byte(`{"a":`); return r }()},
		{"annotation too long", func() nokv.SnapshotRef {
			r := fxSnapshotRef
			r.Annotation = []byte(`{"reason":"` + strings.Repeat("x", 4096) + `"}`)
			return r
		}()},
		{"retire annotation not JSON", func() nokv.SnapshotRef { r := fxSnapshotRef; r.RetireAnnotation = []byte(`{`); return r }()},
		{"alias of snapshot 0", nokv.SnapshotAlias{Snapshot: 0, AliasGeneration: 1, State: nokv.SnapshotStateActive}},
	}
	for _, c := range bad {
		if _, err := c.v.Encode(); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: encode %v, want ErrBadRecord", c.name, err)
		}
	}
	// The same faults written past the encoder are refused on decode.
	good, _ := nokv.SnapshotRef{ReadVersion: 1, Alias: ptr("ab"), State: nokv.SnapshotStateActive, Annotation: []byte(`{"reason":null}`)}.Encode()
	nul := bytes.Replace(good, []byte("ab"), []byte("a\x00"), 1)
	if _, err := nokv.DecodeSnapshotRef(nul); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("decode alias with NUL: %v", err)
	}
	notJSON := bytes.Replace(good, []byte(`{"reason":null}`), []byte(`{"reason":nul}`), 1)
	if _, err := nokv.DecodeSnapshotRef(notJSON); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("decode annotation that is not JSON: %v", err)
	}
	zero, _ := fxSnapshotAlias.Encode()
	copy(zero[1:9], make([]byte, 8))
	if _, err := nokv.DecodeSnapshotAlias(zero); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("decode alias of snapshot 0: %v", err)
	}
	if err := nokv.CheckAlias(strings.Repeat("é", 64)); err != nil {
		t.Fatalf("alias of 128 bytes: %v", err)
	}
	if err := nokv.CheckAlias(strings.Repeat("é", 64) + "x"); err == nil {
		t.Fatal("alias of 129 bytes passed")
	}
}

func TestSnapshotKeys(t *testing.T) {
	ref := nokv.SnapshotRefKey{Root: tRoot, Incarnation: tInc, Snapshot: 0xfedcba9876543210}
	alias := nokv.SnapshotAliasKey{Root: tRoot, Incarnation: tInc, Alias: "nightly"}
	snapHold := nokv.SnapshotHoldKey(tRoot, 0xfedcba9876543210)
	opHold := nokv.HistoryHoldKey{Root: tRoot, Kind: nokv.HistoryHoldKindRestore, Op: tOp}
	clock := nokv.LeaseClockKey{Root: tRoot}
	all := []struct {
		name string
		key  interface {
			Encode() ([]byte, error)
			Family() shards.Family
		}
		golden string
		shard  string
		parse  func([]byte) (any, error)
	}{
		{"snapshot_ref", ref, rep("11", 16) + rep("22", 16) + "fedcba9876543210", rep("11", 16) + rep("22", 16),
			func(b []byte) (any, error) { return nokv.ParseSnapshotRefKey(b) }},
		{"snapshot_alias", alias, rep("11", 16) + rep("22", 16) + "0007" + ascii("nightly"), rep("11", 16) + rep("22", 16),
			func(b []byte) (any, error) { return nokv.ParseSnapshotAliasKey(b) }},
		{"history_hold snapshot", snapHold, rep("11", 16) + "01" + "fedcba9876543210", "",
			func(b []byte) (any, error) { return nokv.ParseHistoryHoldKey(b) }},
		{"history_hold restore", opHold, rep("11", 16) + "03" + rep("44", 16), "",
			func(b []byte) (any, error) { return nokv.ParseHistoryHoldKey(b) }},
		{"lease_clock", clock, rep("11", 16), "",
			func(b []byte) (any, error) { return nokv.ParseLeaseClockKey(b) }},
	}
	for _, c := range all {
		got, err := c.key.Encode()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if want := hx(t, c.golden); !bytes.Equal(got, want) {
			t.Fatalf("%s\n got %x\nwant %x", c.name, got, want)
		}
		f := c.key.Family()
		sk, err := fams.ShardKey(f, got)
		if err != nil {
			t.Fatalf("%s: shard key: %v", c.name, err)
		}
		wantSK := got
		if c.shard != "" {
			wantSK = hx(t, c.shard)
		}
		if !bytes.Equal(sk, wantSK) {
			t.Fatalf("%s: shard key %x, want %x", c.name, sk, wantSK)
		}
		parsed, err := c.parse(got)
		if err != nil {
			t.Fatalf("%s: parse: %v", c.name, err)
		}
		if !reflect.DeepEqual(parsed, c.key) {
			t.Fatalf("%s: parse = %#v, want %#v", c.name, parsed, c.key)
		}
		for n := 0; n < len(got); n++ {
			if _, err := c.parse(got[:n]); !errors.Is(err, nokv.ErrBadRecord) {
				t.Fatalf("%s: parse of a %d-byte prefix: %v", c.name, n, err)
			}
		}
		if _, err := c.parse(append(bytes.Clone(got), 1)); !errors.Is(err, nokv.ErrBadRecord) {
			t.Fatalf("%s: parse with a trailing byte: %v", c.name, err)
		}
	}
	// A workspace's snapshots share the prefix and the shard of its refs.
	if p := nokv.SnapshotRefPrefix(tRoot, tInc); !bytes.Equal(p, hx(t, rep("11", 16)+rep("22", 16))) {
		t.Fatalf("SnapshotRefPrefix = %x", p)
	}
	// An unknown hold kind fails closed.
	if _, err := (nokv.HistoryHoldKey{Root: tRoot, Kind: 4}).Encode(); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("encode hold kind 4: %v", err)
	}
	if _, err := nokv.ParseHistoryHoldKey(hx(t, rep("11", 16)+"04"+rep("44", 16))); !errors.Is(err, nokv.ErrUnknownEnum) {
		t.Fatalf("parse hold kind 4: %v", err)
	}
	if _, err := (nokv.SnapshotAliasKey{Root: tRoot, Incarnation: tInc, Alias: "a\x00"}).Encode(); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("encode alias key with NUL: %v", err)
	}
	if _, err := nokv.ParseSnapshotAliasKey(hx(t, rep("11", 16)+rep("22", 16)+"0000")); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("parse empty alias key: %v", err)
	}
}
