package workbench_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/fault"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/manifests/bodies"
	"github.com/cairnstore/cairn/workbench"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
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

// TestPublicationRestagesStaleBlocks: a publication whose blocks the
// store stamped more than half the grace before the head its command is
// built on (a process that paused between its upload and its command,
// while another wrote the head a grace period later) is refused by its
// attempt, since a sweep may take the blocks before the head write
// lands; the publication uploads the body again under a fresh revision
// and commits it. The stale blocks are gone, the file reads back whole,
// and the local clock of the writer (frozen here) plays no part.
func TestPublicationRestagesStaleBlocks(t *testing.T) {
	ctx := context.Background()
	clock := newStoreClock()
	fb := fault.New(mem.NewBucketAt(clock.Now))
	frozen := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	opts := workbench.Options{AgentID: "stale", BlockSize: 1 << 10, InlineMax: 256, Now: func() time.Time { return frozen }}
	s := newServiceOn(t, fb, opts)
	other := newServiceOn(t, fb, opts)
	mustCall(t, s, "workbench_create", `{"id":"wb"}`)
	layout := s.Store().Layout()
	var first []string
	fb.Inject(fault.Rule{Op: fault.OpPut, Prefix: bodies.ArtifactsPrefix(layout), Count: 1, Fault: fault.HookAfter(func(ctx context.Context, _ fault.Op, key string) error {
		// The first block has landed: another replica writes the head an
		// hour (the default grace) later by the store's clock.
		first = append(first, key)
		clock.Advance(time.Hour)
		if _, err := other.Store().Touch(ctx); err != nil {
			t.Errorf("touch: %v", err)
		}
		return nil
	})})
	big := strings.Repeat("x", 2500)
	got := mustCall(t, s, "workbench_put_file", putInput("wb", "outputs", "big.txt", `"text":"`+big+`"`))
	if fmt.Sprint(got["generation"]) != "1" {
		t.Fatalf("put: %v", got)
	}
	if got := readText(t, other, "wb", "outputs/big.txt"); got != big {
		t.Fatalf("read back %d bytes", len(got))
	}
	if len(first) != 1 {
		t.Fatalf("first block keys %v", first)
	}
	if _, err := fb.Stat(ctx, first[0]); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("the stale block %s is still there: %v", first[0], err)
	}
	blocks, _, err := bucket.ListAll(ctx, fb, bucket.ListOptions{Prefix: bodies.ArtifactsPrefix(layout)})
	if err != nil || len(blocks) != 3 {
		t.Fatalf("blocks in the bucket: %d, %v", len(blocks), err)
	}
	fsck, err := s.Fsck(ctx, workbench.FsckOptions{Bodies: true})
	if err != nil || len(fsck.Findings) != 0 {
		t.Fatalf("fsck: %v, %+v", err, fsck)
	}
}
