package tree

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
)

// decodedSource serves decoded nodes, as a warm Objects cache does.
type decodedSource map[digest.Hash]*Cached

func (d decodedSource) Node(_ context.Context, h digest.Hash) (*Node, [32]byte, int, error) {
	c, ok := d[h]
	if !ok {
		return nil, [32]byte{}, 0, fmt.Errorf("node %s: %w", h, bucket.ErrNotExist)
	}
	return c.Node, c.Digest, c.Size, nil
}

func (d decodedSource) put(objs []Object) {
	for _, o := range objs {
		d[o.Hash] = &Cached{Node: o.Node, Digest: o.Digest, Size: len(o.Body)}
	}
}

// BenchmarkEditOne: one changed entry of a tree of n, read from decoded
// nodes, as a commit after one changed file edits its parent's tree, and
// the leaves the two versions do not share (Changed), which it reads for
// its references.
func BenchmarkEditOne(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{1_000, 10_000, 100_000} {
		var entries []Entry
		for i := range n {
			entries = append(entries, Entry{Key: key(i), Value: bytes.Repeat([]byte{'v'}, 600)})
		}
		slices.SortFunc(entries, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
		root, objs, err := Build(entries, salt(1))
		if err != nil {
			b.Fatal(err)
		}
		src := decodedSource{}
		src.put(objs)
		change := []Change{{Key: entries[n/2].Key, Value: []byte("changed")}}
		b.Run(fmt.Sprintf("edit/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Edit(ctx, src, root, change, salt(2)); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("edit-compressed/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := (Writer{Salt: salt(2), Compress: true}).Edit(ctx, src, root, change); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("rebuild-compressed/%d", n), func(b *testing.B) {
			changed := slices.Clone(entries)
			changed[n/2].Value = []byte("changed")
			for b.Loop() {
				if _, _, err := (Writer{Salt: salt(2), Compress: true}).Rebuild(ctx, src, root, changed); err != nil {
					b.Fatal(err)
				}
			}
		})
		next, objs, err := Edit(ctx, src, root, change, salt(2))
		if err != nil {
			b.Fatal(err)
		}
		src.put(objs)
		b.Run(fmt.Sprintf("changed/%d", n), func(b *testing.B) {
			for b.Loop() {
				if a, c, err := Changed(ctx, src, root, next); err != nil || len(a) == 0 || len(c) == 0 {
					b.Fatal(len(a), len(c), err)
				}
			}
		})
	}
}
