package core

import (
	"bytes"
	"testing"

	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// TestPathKeyHoldsTheTreeKey: a commit takes a member's tree key from its
// PathCurrent key, after PathKeyPrefixLen bytes; the tree key is the
// path's key encoding, which readers parse back.
func TestPathKeyHoldsTheTreeKey(t *testing.T) {
	for _, p := range [][]string{{"a"}, {"metadata", "run_manifest.json"}, {"outputs", "d1", "deep", "f.txt"}} {
		k, err := nokv.PathCurrentKey{Root: nokv.RootID{1}, Incarnation: nokv.IncarnationID{2}, Path: p}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		want, err := shards.NewKey().Path(p).Build()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(k[PathKeyPrefixLen:], want) {
			t.Fatalf("%v: path key suffix %x, tree key %x", p, k[PathKeyPrefixLen:], want)
		}
		if got, err := parseMemberTreeKey(want); err != nil || len(got) != len(p) {
			t.Fatalf("%v: parsed back as %v, %v", p, got, err)
		}
	}
}
