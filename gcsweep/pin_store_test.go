package gcsweep_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/gcsweep"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

func testPin(t *testing.T, layout shards.Layout, name string) gcsweep.Pin {
	t.Helper()
	p, err := gcsweep.NewPin(layout, name, 42, digest.Sum([]byte(name)), time.UnixMilli(1767225600000), "before the migration")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPinGolden(t *testing.T) {
	var id shards.ShardID
	for i := range id {
		id[i] = byte(i)
	}
	layout := shards.NewLayout(shardstest.Schema(), id)
	p, err := gcsweep.NewPin(layout, "p", 42, digest.Hash{0x11}, time.UnixMilli(1767225600000), "before the migration")
	if err != nil {
		t.Fatal(err)
	}
	b, err := gcsweep.EncodePin(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"created_unix_ms":1767225600000,"format":"cairn.pin.v1","note":"before the migration","root":"1100000000000000000000000000000000000000000000000000000000000000","sequence":42,"shard":"000102030405060708090a0b0c0d0e0f"}`
	if string(b) != want {
		t.Fatalf("pin bytes\n got %s\nwant %s", b, want)
	}
	got, err := gcsweep.DecodePin(layout, p.Key, b)
	if err != nil {
		t.Fatal(err)
	}
	if got != p || got.Name != "p" || got.RootHash != (digest.Hash{0x11}) {
		t.Fatalf("decoded %+v, want %+v", got, p)
	}
}

func TestDecodePinRefuses(t *testing.T) {
	id := shards.NewShardID()
	layout := shards.NewLayout(shardstest.Schema(), id)
	good := `{"created_unix_ms":1,"format":"cairn.pin.v1","note":"","root":"` + digest.Sum(nil).String() + `","sequence":3,"shard":"` + id.String() + `"}`
	if _, err := gcsweep.DecodePin(layout, "pins/x", []byte(good)); err != nil {
		t.Fatalf("good pin refused: %v", err)
	}
	for name, body := range map[string]string{
		"other shard":   strings.Replace(good, id.String(), shards.NewShardID().String(), 1),
		"other format":  strings.Replace(good, "cairn.pin.v1", "cairn.pin.v2", 1),
		"sequence 0":    strings.Replace(good, `"sequence":3`, `"sequence":0`, 1),
		"bad root":      strings.Replace(good, `"root":"`, `"root":"x`, 1),
		"zero root":     strings.Replace(good, digest.Sum(nil).String(), strings.Repeat("0", 64), 1),
		"long note":     strings.Replace(good, `"note":""`, `"note":"`+strings.Repeat("n", gcsweep.MaxPinNote+1)+`"`, 1),
		"unknown field": strings.Replace(good, `"note":""`, `"note":"","owner":""`, 1),
		"not canonical": strings.Replace(good, `{"created`, `{ "created`, 1),
		"missing note":  strings.Replace(good, `"note":"",`, ``, 1),
		"not json":      "pin",
	} {
		if _, err := gcsweep.DecodePin(layout, "pins/x", []byte(body)); !errors.Is(err, gcsweep.ErrBadPin) {
			t.Errorf("%s: err %v, want ErrBadPin", name, err)
		}
	}
}

func TestPinCreateListReadDelete(t *testing.T) {
	ctx := context.Background()
	b := mem.NewBucket()
	layout := shards.NewLayout(shardstest.Schema(), shards.NewShardID())
	if pins, err := gcsweep.ListPins(ctx, b, layout); err != nil || len(pins) != 0 {
		t.Fatalf("no pins: %v %v", pins, err)
	}
	for _, n := range []string{"b", "a"} {
		if err := gcsweep.CreatePin(ctx, b, layout, testPin(t, layout, n)); err != nil {
			t.Fatal(err)
		}
	}
	// Create-only: another pin of the same name is refused, the first kept.
	other := testPin(t, layout, "a")
	other.Note = "another"
	if err := gcsweep.CreatePin(ctx, b, layout, other); !errors.Is(err, gcsweep.ErrPinExists) {
		t.Fatalf("second create: %v, want ErrPinExists", err)
	}
	// The same pin again (a retried create) is no error.
	if err := gcsweep.CreatePin(ctx, b, layout, testPin(t, layout, "a")); err != nil {
		t.Fatalf("identical create: %v", err)
	}
	pins, err := gcsweep.ListPins(ctx, b, layout)
	if err != nil {
		t.Fatal(err)
	}
	if len(pins) != 2 || pins[0].Name != "a" || pins[1].Name != "b" || pins[0].Note != "before the migration" {
		t.Fatalf("pins %+v", pins)
	}
	if p, err := gcsweep.ReadPin(ctx, b, layout, "b"); err != nil || p.RootHash != testPin(t, layout, "b").RootHash {
		t.Fatalf("read b: %+v %v", p, err)
	}
	if err := gcsweep.DeletePin(ctx, b, layout, "a"); err != nil {
		t.Fatal(err)
	}
	if err := gcsweep.DeletePin(ctx, b, layout, "a"); !errors.Is(err, gcsweep.ErrPinNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := gcsweep.ReadPin(ctx, b, layout, "a"); !errors.Is(err, gcsweep.ErrPinNotFound) || !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("read deleted: %v", err)
	}
	if _, err := gcsweep.ReadPin(ctx, b, layout, "../x"); !errors.Is(err, shards.ErrInvalidObjectKey) {
		t.Fatalf("bad name: %v", err)
	}
	// A damaged pin fails the listing: the sweep must not run past it.
	key, _ := layout.Pin("c")
	if _, err := b.Put(ctx, key, []byte("{}"), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	if _, err := gcsweep.ListPins(ctx, b, layout); !errors.Is(err, gcsweep.ErrBadPin) {
		t.Fatalf("list with a damaged pin: %v", err)
	}
}

// FuzzDecodePin: no input panics, a refusal is ErrBadPin, and a pin that
// decodes encodes to exactly the bytes read (one encoding per pin).
func FuzzDecodePin(f *testing.F) {
	var id shards.ShardID
	layout := shards.NewLayout(shardstest.Schema(), id)
	good, err := gcsweep.NewPin(layout, "p", 7, digest.Sum([]byte("r")), time.UnixMilli(1767225600000), "note ü")
	if err != nil {
		f.Fatal(err)
	}
	b, err := gcsweep.EncodePin(good)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"created_unix_ms":-1,"format":"cairn.pin.v1","note":"","root":"00","sequence":1,"shard":"00000000000000000000000000000000"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := gcsweep.DecodePin(layout, good.Key, body)
		if err != nil {
			if !errors.Is(err, gcsweep.ErrBadPin) {
				t.Fatalf("refusal %v is not ErrBadPin", err)
			}
			return
		}
		again, err := gcsweep.EncodePin(p)
		if err != nil {
			t.Fatalf("a decoded pin does not encode: %v", err)
		}
		if string(again) != string(body) {
			t.Fatalf("re-encoded\n %q\nfrom\n %q", again, body)
		}
	})
}
