package shards_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

const lsid = "00112233445566778899aabbccddeeff"

func testLayout(t *testing.T) shards.Layout {
	id, err := shards.ParseShardID(lsid)
	if err != nil {
		t.Fatal(err)
	}
	return shards.NewLayout(schema, id)
}

func TestLayoutKeys(t *testing.T) {
	l := testLayout(t)
	hash := digest.Sum([]byte("x"))
	hx := hash.String()
	pin, err := l.Pin("backup-2024.01_a")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ got, want string }{
		{l.Head(), "shards/" + lsid + "/head"},
		{l.Root(hash), "shards/" + lsid + "/roots/" + hx},
		{l.Table(hash), "shards/" + lsid + "/tables/" + hx},
		{l.Shard(shardstest.Fixed32, 0x0a, hash), "shards/" + lsid + "/objects/fixed32/0a/" + hx},
		{l.Shard(shards.System, 0xff, hash), "shards/" + lsid + "/objects/system/ff/" + hx},
		{l.Index(shardstest.Fixed32, 0x0a, hash), "shards/" + lsid + "/indexes/fixed32/0a/" + hx},
		{pin, "pins/" + lsid + "/backup-2024.01_a"},
		{l.Prefix(), "shards/" + lsid + "/"},
		{l.PinsPrefix(), "pins/" + lsid + "/"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
		if err := bucket.ValidateKey(c.got); err != nil {
			t.Errorf("key %q is not a valid bucket key: %v", c.got, err)
		}
	}
	if got := hx; len(got) != 64 || strings.ToLower(got) != got {
		t.Errorf("hash text %q", got)
	}
}

func TestPinNameRules(t *testing.T) {
	l := testLayout(t)
	for _, name := range []string{"", ".", "..", "a/b", "a b", "é", strings.Repeat("x", 129), "a\n"} {
		if _, err := l.Pin(name); !errors.Is(err, shards.ErrInvalidObjectKey) {
			t.Errorf("Pin(%q) error = %v", name, err)
		}
	}
	if _, err := l.Pin(strings.Repeat("x", 128)); err != nil {
		t.Errorf("Pin of 128 bytes: %v", err)
	}
}

func TestParseObjectKeyRoundTrip(t *testing.T) {
	l := testLayout(t)
	hash := digest.Sum([]byte("y"))
	for _, c := range []struct {
		key  string
		want shards.ObjectKey
	}{
		{l.Root(hash), shards.ObjectKey{Shard: l.ID(), Kind: shards.KindRoot, Hash: hash}},
		{l.Table(hash), shards.ObjectKey{Shard: l.ID(), Kind: shards.KindTable, Hash: hash}},
		{l.Delta(hash), shards.ObjectKey{Shard: l.ID(), Kind: shards.KindDelta, Hash: hash}},
		{l.Index(shardstest.Fixed32, 0x0a, hash), shards.ObjectKey{Shard: l.ID(), Kind: shards.KindIndex, Hash: hash, Family: shardstest.Fixed32, Index: 0x0a}},
		{l.Shard(shardstest.Fixed32C, 0x7b, hash), shards.ObjectKey{Shard: l.ID(), Kind: shards.KindShard, Hash: hash, Family: shardstest.Fixed32C, Index: 0x7b}},
	} {
		got, err := shards.ParseObjectKey(schema, c.key)
		if err != nil {
			t.Fatalf("ParseObjectKey(%q): %v", c.key, err)
		}
		if got != c.want {
			t.Fatalf("ParseObjectKey(%q) = %+v, want %+v", c.key, got, c.want)
		}
		if got.Key(schema) != c.key {
			t.Fatalf("Key() = %q, want %q", got.Key(schema), c.key)
		}
	}
}

func TestParseObjectKeyRejects(t *testing.T) {
	l := testLayout(t)
	hash := digest.Sum([]byte("y"))
	hx := hash.String()
	pin, _ := l.Pin("p")
	for _, key := range []string{
		"",
		l.Head(),
		pin,
		"artifacts/" + lsid + "/00000000000000000000000000000000/00000000000000000000000000000000/blocks/0000000000000000", // a block
		"shards/" + lsid + "/roots/" + strings.ToUpper(hx),
		"shards/" + lsid + "/roots/" + hx[:63],
		"shards/" + lsid + "/roots/" + hx + "/",
		"shards/" + lsid + "/roots/" + hx + "x",
		"shards/" + strings.ToUpper(lsid) + "/roots/" + hx,
		"shards/" + lsid[:30] + "/roots/" + hx,
		"shards//roots/" + hx,
		"/shards/" + lsid + "/roots/" + hx,
		"shards/" + lsid + "/blobs/" + hx,
		"shards/" + lsid + "/objects/fixed32/" + hx,
		"shards/" + lsid + "/indexes/fixed32/" + hx,
		"shards/" + lsid + "/indexes/fixed32/0A/" + hx,
		"shards/" + lsid + "/objects/fixed32/a/" + hx,
		"shards/" + lsid + "/objects/fixed32/0A/" + hx,
		"shards/" + lsid + "/objects/fixed32/100/" + hx,
		"shards/" + lsid + "/objects/history/00/" + hx,
		"shards/" + lsid + "/objects/fixed32/00/x/" + hx,
		"shards/" + lsid + "/tables/" + hx + "/roots/" + hx,
		"shards/" + lsid + "/deltas/" + hx[:63],
		"shards/" + lsid + "/deltas/00/" + hx,
		"prefix/shards/" + lsid + "/roots/" + hx,
	} {
		if k, err := shards.ParseObjectKey(schema, key); !errors.Is(err, shards.ErrInvalidObjectKey) {
			t.Errorf("ParseObjectKey(%q) = %+v, %v; want ErrInvalidObjectKey", key, k, err)
		}
	}
}

func TestShardIDText(t *testing.T) {
	a, b := shards.NewShardID(), shards.NewShardID()
	if a == b || a == (shards.ShardID{}) {
		t.Fatalf("NewShardID gave %v and %v", a, b)
	}
	back, err := shards.ParseShardID(a.String())
	if err != nil || back != a {
		t.Fatalf("ParseShardID(String()) = %v, %v", back, err)
	}
	for _, s := range []string{"", lsid[:31], lsid + "0", strings.ToUpper(lsid), "g" + lsid[1:]} {
		if _, err := shards.ParseShardID(s); !errors.Is(err, shards.ErrInvalidObjectKey) {
			t.Errorf("ParseShardID(%q) error = %v", s, err)
		}
	}
}

// FuzzParseObjectKey: a key listed from a bucket is either refused with
// ErrInvalidObjectKey or is the one canonical spelling of what it names,
// so formatting the parsed key gives it back.
func FuzzParseObjectKey(f *testing.F) {
	l := shards.NewLayout(schema, shards.ShardID{0xab, 1})
	h := fillHash(0x3c)
	for _, key := range []string{
		l.Root(h), l.Table(h), l.Delta(h), l.Head(),
		l.Shard(shardstest.Grouped, 0x0f, h), l.Index(shards.System, 0xff, h),
		"artifacts/ab010000000000000000000000000000/01000000000000000000000000000000/02000000000000000000000000000000/blocks/0000000000000003",
		"shards/ab010000000000000000000000000000/staging/04000000000000000000000000000000",
		"shards/AB/roots/" + h.String(),
	} {
		f.Add(key)
	}
	f.Fuzz(func(t *testing.T, key string) {
		k, err := shards.ParseObjectKey(schema, key)
		if err != nil {
			if !errors.Is(err, shards.ErrInvalidObjectKey) {
				t.Fatalf("ParseObjectKey(%q): %v is not ErrInvalidObjectKey", key, err)
			}
			return
		}
		if got := k.Key(schema); got != key {
			t.Fatalf("ParseObjectKey(%q) formats back as %q", key, got)
		}
	})
}

func TestIntentKeys(t *testing.T) {
	l := testLayout(t)
	key := l.Intent(1767225600123, [8]byte{0xab, 1, 2, 3, 4, 5, 6, 0xff})
	if want := l.Prefix() + "intents/1767225600123-ab010203040506ff"; key != want {
		t.Fatalf("key %q, want %q", key, want)
	}
	if ms, ok := l.ParseIntent(key); !ok || ms != 1767225600123 {
		t.Fatalf("parse: %d %v", ms, ok)
	}
	for _, bad := range []string{
		l.Prefix() + "intents/1767225600123-AB010203040506FF",
		l.Prefix() + "intents/176722560012-ab010203040506ff0",
		l.Prefix() + "intents/1767225600123_ab010203040506ff",
		l.Prefix() + "intents/1767225600123-ab01020304050",
		shards.NewLayout(schema, shards.ShardID{2}).Intent(1, [8]byte{}),
		l.Prefix() + "roots/1767225600123-ab010203040506ff",
	} {
		if _, ok := l.ParseIntent(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestParseShardPrefix(t *testing.T) {
	l := testLayout(t)
	if id, err := shards.ParseShardPrefix(l.Prefix()); err != nil || id != l.ID() {
		t.Fatalf("%q: %v %v", l.Prefix(), id, err)
	}
	for _, bad := range []string{"shards/" + lsid, "pins/" + lsid + "/", "shards/" + strings.ToUpper(lsid) + "/", "shards/x/"} {
		if _, err := shards.ParseShardPrefix(bad); !errors.Is(err, shards.ErrInvalidObjectKey) {
			t.Errorf("%q: %v", bad, err)
		}
	}
}
