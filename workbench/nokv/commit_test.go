package nokv_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/cairnstore/cairn/workbench/nokv"
)

// TestWorkbenchCommitHeadCodec pins the head's key and value bytes and
// checks that they round-trip and that broken values are refused.
func TestWorkbenchCommitHeadCodec(t *testing.T) {
	key := nokv.WorkbenchCommitHeadKey{Root: tRoot, Incarnation: tInc}
	kb, err := key.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if want := hx(t, rep("11", 16), rep("22", 16)); !bytes.Equal(kb, want) {
		t.Fatalf("key = %x, want %x", kb, want)
	}
	if _, err := nokv.Families().ShardKey(nokv.FamilyWorkbenchCommitHead, kb); err != nil {
		t.Fatalf("schema refuses the key: %v", err)
	}
	back, err := nokv.ParseWorkbenchCommitHeadKey(kb)
	if err != nil || back != key {
		t.Fatalf("parse key = %+v, %v", back, err)
	}
	if _, err := nokv.ParseWorkbenchCommitHeadKey(kb[:31]); !errors.Is(err, nokv.ErrBadRecord) {
		t.Fatalf("short key: %v", err)
	}

	v := nokv.WorkbenchCommitHead{Commit: tCommit, HeadGeneration: 3}
	vb, err := v.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := hx(t, "01", rep("55", 32), "0000000000000003")
	if !bytes.Equal(vb, want) {
		t.Fatalf("value = %x, want %x", vb, want)
	}
	got, err := nokv.DecodeWorkbenchCommitHead(vb)
	if err != nil || !reflect.DeepEqual(got, v) {
		t.Fatalf("decode = %+v, %v", got, err)
	}
	for name, b := range map[string][]byte{
		"truncated":       vb[:len(vb)-1],
		"trailing":        append(bytes.Clone(vb), 0),
		"version":         append([]byte{2}, vb[1:]...),
		"zero commit":     hx(t, "01", rep("00", 32), "0000000000000003"),
		"zero generation": hx(t, "01", rep("55", 32), "0000000000000000"),
	} {
		if _, err := nokv.DecodeWorkbenchCommitHead(b); !errors.Is(err, nokv.ErrBadRecord) {
			t.Errorf("%s: decode err = %v", name, err)
		}
	}
	if _, err := (nokv.WorkbenchCommitHead{Commit: tCommit}).Encode(); !errors.Is(err, nokv.ErrBadRecord) {
		t.Errorf("zero generation encoded: %v", err)
	}
}
