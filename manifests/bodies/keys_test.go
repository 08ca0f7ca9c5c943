package bodies_test

import (
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/shards/shardstest"
)

func TestKeys(t *testing.T) {
	l := shards.NewLayout(shardstest.Schema(), shards.ShardID{0xab, 1})
	lsid := l.ID().String()
	root := [16]byte{0xab, 15: 0x01}
	rev := [16]byte{0: 0x0f, 15: 0xf0}
	block := bodies.BlockKey(l, root, rev, 0x1f)
	for _, c := range []struct{ got, want string }{
		{block, "artifacts/" + lsid + "/ab000000000000000000000000000001/0f0000000000000000000000000000f0/blocks/000000000000001f"},
		{bodies.ArtifactsPrefix(l), "artifacts/" + lsid + "/"},
		{bodies.StagingKey(l, [16]byte{4}), "shards/" + lsid + "/staging/04000000000000000000000000000000"},
		{bodies.StagingPrefix(l), "shards/" + lsid + "/staging/"},
	} {
		if c.got != c.want {
			t.Errorf("key %q, want %q", c.got, c.want)
		}
		if err := bucket.ValidateKey(c.got); err != nil {
			t.Errorf("key %q is not a valid bucket key: %v", c.got, err)
		}
	}
	if !bodies.IsBlockKey(l, block) {
		t.Errorf("IsBlockKey(%q) = false", block)
	}
	other := shards.NewLayout(shardstest.Schema(), shards.ShardID{0xcd})
	for _, key := range []string{
		"", bodies.ArtifactsPrefix(l), block + "/", block[:len(block)-1], bodies.BlockKey(other, root, rev, 1),
		"artifacts/" + lsid + "/AB000000000000000000000000000001/0f0000000000000000000000000000f0/blocks/000000000000001f",
		"artifacts/" + lsid + "/ab000000000000000000000000000001/0f0000000000000000000000000000f0/block/000000000000001f",
		bodies.StagingKey(l, [16]byte{4}),
	} {
		if bodies.IsBlockKey(l, key) {
			t.Errorf("IsBlockKey(%q) = true", key)
		}
	}
}

func TestTreeKeys(t *testing.T) {
	l := shards.NewLayout(shardstest.Schema(), shards.ShardID{0xab, 1})
	root := [16]byte{0xab, 15: 0x01}
	hash := "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
	key := bodies.TreePrefix(l, root) + hash
	if want := "artifacts/" + l.ID().String() + "/ab000000000000000000000000000001/trees/" + hash; key != want {
		t.Fatalf("tree key %q, want %q", key, want)
	}
	if !bodies.IsTreeKey(l, key) || bodies.IsBlockKey(l, key) {
		t.Errorf("IsTreeKey(%q) false, or IsBlockKey true", key)
	}
	other := shards.NewLayout(shardstest.Schema(), shards.ShardID{0xcd})
	for _, k := range []string{
		key[:len(key)-1], key + "/", bodies.TreePrefix(other, root) + hash,
		bodies.TreePrefix(l, root) + "00112233445566778899AABBCCDDEEFF00112233445566778899aabbccddeeff",
		bodies.BlockKey(l, root, root, 1),
	} {
		if bodies.IsTreeKey(l, k) {
			t.Errorf("IsTreeKey(%q) = true", k)
		}
	}
}
