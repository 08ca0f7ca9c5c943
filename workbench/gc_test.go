package workbench_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/nokv"
)

func TestBlockRefs(t *testing.T) {
	block := nokv.ArtifactManifestEntry{ObjectKey: "artifacts/x/blocks/0000000000000000", ObjectOffset: 3, Length: 10, DigestURI: "sha256:" + strings.Repeat("ab", 32)}
	inline := nokv.ArtifactManifestEntry{Length: 2, Inline: []byte("hi"), DigestURI: "sha256:" + strings.Repeat("cd", 32)}
	bv, err := block.Encode()
	if err != nil {
		t.Fatal(err)
	}
	iv, err := inline.Encode()
	if err != nil {
		t.Fatal(err)
	}
	refs, err := workbench.BlockRefs(nokv.FamilyArtifactManifest, nil, bv)
	if err != nil || len(refs) != 1 || refs[0].Key != block.ObjectKey || refs[0].Digest != block.DigestURI || refs[0].Offset != 3 || refs[0].Size != 10 {
		t.Errorf("a block row: %+v, %v", refs, err)
	}
	if refs, err := workbench.BlockRefs(nokv.FamilyArtifactManifest, nil, iv); err != nil || len(refs) != 0 {
		t.Errorf("an inline row: %+v, %v", refs, err)
	}
	if refs, err := workbench.BlockRefs(nokv.FamilyPathCurrent, nil, bv); err != nil || len(refs) != 0 {
		t.Errorf("another family: %+v, %v", refs, err)
	}
	if _, err := workbench.BlockRefs(nokv.FamilyArtifactManifest, nil, []byte{9, 9}); err == nil {
		t.Error("a row that does not decode: no error")
	}
}

func TestLayoutIsTheServicesLayout(t *testing.T) {
	s := newServiceOn(t, mem.NewBucket(), workbench.Options{AgentID: "layout"})
	l, err := workbench.Layout("layout")
	if err != nil {
		t.Fatal(err)
	}
	if l.Prefix() != s.Store().Layout().Prefix() || l.ID() != workbench.ShardLayout(l.ID()).ID() {
		t.Fatalf("Layout %s, the Service's %s", l.Prefix(), s.Store().Layout().Prefix())
	}
	if _, err := workbench.Layout("a/b"); err == nil {
		t.Fatal("an agent id with a slash forms a layout")
	}
}

// TestPublicationPastStagingAge: a publication whose uploads began more
// than MaxStagingAge ago never sends its command, since a sweep may own
// its blocks by then; it fails Timeout, retryable, and leaves what it
// staged to the ledger and the sweep. A body inline in its row has no
// such bound.
func TestPublicationPastStagingAge(t *testing.T) {
	var calls atomic.Int64
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Every reading of the clock is half an hour after the previous one.
	now := func() time.Time { return t0.Add(time.Duration(calls.Add(1)) * 30 * time.Minute) }
	b := mem.NewBucket()
	s := newServiceOn(t, b, workbench.Options{AgentID: "stale", Now: now, BlockSize: 1 << 10, InlineMax: 256})
	big := strings.Repeat("x", 2500)
	got, ok := call(t, s, "workbench_put_file", putInput("wb", "outputs", "big.txt", `"text":"`+big+`"`))
	if ok || got["code"] != workbench.CodeTimeout || got["retryable"] != true {
		t.Fatalf("a stale publication: %v", got)
	}
	if got, ok := call(t, s, "workbench_stat", `{"id":"wb","section":"outputs","path":"big.txt"}`); ok {
		t.Fatalf("the stale publication committed: %v", got)
	}
	layout := s.Store().Layout()
	blocks, _, err := bucket.ListAll(context.Background(), b, bucket.ListOptions{Prefix: layout.ArtifactsPrefix()})
	if err != nil || len(blocks) != 3 {
		t.Fatalf("staged blocks left: %d, %v", len(blocks), err)
	}
	mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "small.txt", `"text":"small"`))
}
