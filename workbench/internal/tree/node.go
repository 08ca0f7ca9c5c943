package tree

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/shards"
)

// A node object, format 1:
//
//	magic "CRNM" | version u8 (1) | salt [16] | level u8 | n uvarint (≥ 1) | n entries
//	level 0:  uvarint key length | key | uvarint value length | value
//	level ≥1: uvarint key length | key | child hash [32] | child digest [32] |
//	          uvarint child count | uvarint child size
//
// Keys are non-empty and strictly ascending. An entry of an inner node
// names one child one level down: its key is the child's first key, its
// hash the SHA-256 of the child's bytes (the child's object name), its
// digest the child's content digest, its count the entries in the
// child's subtree and its size the child's bytes. The salt is the nonce
// of the commit attempt that wrote the node: two attempts never write an
// object under the same name, so an attempt never depends on an object
// another attempt wrote (and a sweep may be deleting).

const (
	magic   = "CRNM"
	version = 1
	// headerBytes is the fixed part: magic, version, salt, level.
	headerBytes = 4 + 1 + 16 + 1

	// MaxKeyBytes and MaxValueBytes bound one entry.
	MaxKeyBytes   = 4 << 10
	MaxValueBytes = 256 << 10
	// MaxLevel bounds a tree's height: with the boundary rule's average
	// fan-out of 32, 2^64 entries need 13 levels.
	MaxLevel = 16
	// maxNodeBytes closes a node whatever its keys: a node grows past it
	// by at most one entry.
	maxNodeBytes = 64 << 10
	// MaxNodeBytes bounds a node object a reader accepts.
	MaxNodeBytes = maxNodeBytes + MaxKeyBytes + MaxValueBytes + 64
)

// Domain separators of the content digests.
const (
	leafTag  = "cairn.tree.leaf.v1\x00"
	innerTag = "cairn.tree.inner.v1\x00"
	emptyTag = "cairn.tree.empty.v1\x00"
)

// ErrMalformed: a node's bytes are not a node of this format.
var ErrMalformed = errors.New("tree: malformed node")

// Ref names one node: the root of a tree, or a child of an inner node.
// The zero Ref is the empty tree.
type Ref struct {
	// Hash is the SHA-256 of the node object's bytes, which names it.
	Hash digest.Hash
	// Digest is the node's content digest: a function of its entries
	// alone (salt and object names left out), so that two trees holding
	// the same entries have the same root digest.
	Digest [32]byte
	// Count is the number of entries in the node's subtree.
	Count uint64
	// Size is the node object's size in bytes.
	Size uint64
}

// IsEmpty reports whether r is the empty tree.
func (r Ref) IsEmpty() bool { return r == Ref{} }

// TreeDigest returns the content digest of the tree r is the root of:
// the root's digest, or, for the empty tree, SHA-256 of
// "cairn.tree.empty.v1\0".
func (r Ref) TreeDigest() [32]byte {
	if r.IsEmpty() {
		return sha256.Sum256([]byte(emptyTag))
	}
	return r.Digest
}

// Entry is one entry of a node: a key and value in a leaf, a key and a
// child in an inner node.
type Entry struct {
	Key   []byte
	Value []byte
	Child Ref
}

// Node is a decoded node.
type Node struct {
	Level   uint8
	Entries []Entry
}

// count returns the entries in n's subtree.
func (n *Node) count() uint64 {
	if n.Level == 0 {
		return uint64(len(n.Entries))
	}
	var c uint64
	for _, e := range n.Entries {
		c += e.Child.Count
	}
	return c
}

// encode returns n's bytes under salt and its content digest.
func (n *Node) encode(salt [16]byte) ([]byte, [32]byte) {
	w := wire.NewWriter(make([]byte, 0, 256))
	w.Raw([]byte(magic)).U8(version).Raw(salt[:]).U8(n.Level).UVarint(uint64(len(n.Entries)))
	h := sha256.New()
	if n.Level == 0 {
		h.Write([]byte(leafTag))
	} else {
		h.Write([]byte(innerTag))
		h.Write([]byte{n.Level})
	}
	start := w.Len()
	for _, e := range n.Entries {
		w.UVarint(uint64(len(e.Key))).Raw(e.Key)
		if n.Level == 0 {
			w.UVarint(uint64(len(e.Value))).Raw(e.Value)
			continue
		}
		w.Raw(e.Child.Hash[:]).Raw(e.Child.Digest[:]).UVarint(e.Child.Count).UVarint(e.Child.Size)
	}
	b := w.Bytes()
	if n.Level == 0 {
		// A leaf's digest covers exactly its entries' bytes.
		h.Write(b[start:])
	} else {
		var tmp []byte
		for _, e := range n.Entries {
			tmp = wire.NewWriter(tmp[:0]).UVarint(uint64(len(e.Key))).Raw(e.Key).Raw(e.Child.Digest[:]).UVarint(e.Child.Count).Bytes()
			h.Write(tmp)
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	return b, d
}

// Decode decodes a node object fetched under hash, plain or compressed
// (shards.Compress). It checks the hash first (bucket.ErrIntegrity), then
// the format (ErrMalformed). The node's slices alias b, or the bytes
// within it.
func Decode(b []byte, hash digest.Hash) (*Node, [32]byte, error) {
	if err := digest.Verify(b, hash); err != nil {
		return nil, [32]byte{}, fmt.Errorf("tree: node %s: %w", hash, err)
	}
	raw, err := shards.Expand(b, MaxNodeBytes)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("tree: node %s: %w: %w", hash, ErrMalformed, err)
	}
	n, err := decode(raw)
	if err != nil {
		return nil, [32]byte{}, fmt.Errorf("tree: node %s: %w: %w", hash, ErrMalformed, err)
	}
	var salt [16]byte
	copy(salt[:], raw[5:21])
	_, d := n.encode(salt)
	return n, d, nil
}

func decode(b []byte) (*Node, error) {
	if len(b) > MaxNodeBytes {
		return nil, fmt.Errorf("%d bytes, at most %d", len(b), MaxNodeBytes)
	}
	r := wire.NewReader(b)
	if string(r.Take(4)) != magic {
		return nil, errors.New("bad magic")
	}
	if v := r.U8(); r.Err() == nil && v != version {
		return nil, fmt.Errorf("format version %d, this cairn reads %d", v, version)
	}
	r.Take(16)
	n := &Node{Level: r.U8()}
	if r.Err() == nil && n.Level > MaxLevel {
		return nil, fmt.Errorf("level %d, at most %d", n.Level, MaxLevel)
	}
	count := r.UVarint()
	if r.Err() == nil && (count == 0 || count > uint64(r.Len())) {
		return nil, fmt.Errorf("%d entries in %d bytes", count, r.Len())
	}
	n.Entries = make([]Entry, 0, min(count, 1<<16))
	var prev []byte
	for i := uint64(0); i < count && r.Err() == nil; i++ {
		var e Entry
		kl := r.UVarint()
		if r.Err() == nil && (kl == 0 || kl > MaxKeyBytes) {
			return nil, fmt.Errorf("entry %d: key of %d bytes", i, kl)
		}
		e.Key = r.Take(int(min(kl, MaxKeyBytes)))
		if n.Level == 0 {
			vl := r.UVarint()
			if r.Err() == nil && vl > MaxValueBytes {
				return nil, fmt.Errorf("entry %d: value of %d bytes", i, vl)
			}
			e.Value = r.Take(int(min(vl, MaxValueBytes)))
		} else {
			r.Copy(e.Child.Hash[:])
			r.Copy(e.Child.Digest[:])
			e.Child.Count = r.UVarint()
			e.Child.Size = r.UVarint()
			if r.Err() == nil && (e.Child.Count == 0 || e.Child.Size < headerBytes+2 || e.Child.Size > MaxNodeBytes) {
				return nil, fmt.Errorf("entry %d: child of %d entries, %d bytes", i, e.Child.Count, e.Child.Size)
			}
		}
		if r.Err() == nil && prev != nil && bytes.Compare(prev, e.Key) >= 0 {
			return nil, fmt.Errorf("entry %d: keys out of order", i)
		}
		prev = e.Key
		n.Entries = append(n.Entries, e)
	}
	if err := r.End(); err != nil {
		return nil, err
	}
	return n, nil
}

// check checks node n, loaded through ref at level want (-1: any),
// against ref: its count, content digest and size.
func check(n *Node, d [32]byte, size int, ref Ref, want int) error {
	switch {
	case want >= 0 && int(n.Level) != want:
		return fmt.Errorf("tree: node %s is at level %d, its parent names a child at %d: %w", ref.Hash, n.Level, want, bucket.ErrIntegrity)
	case n.count() != ref.Count:
		return fmt.Errorf("tree: node %s holds %d entries, its reference says %d: %w", ref.Hash, n.count(), ref.Count, bucket.ErrIntegrity)
	case d != ref.Digest:
		return fmt.Errorf("tree: node %s has another content digest than its reference says: %w", ref.Hash, bucket.ErrIntegrity)
	case uint64(size) != ref.Size:
		return fmt.Errorf("tree: node %s is %d bytes, its reference says %d: %w", ref.Hash, size, ref.Size, bucket.ErrIntegrity)
	}
	return nil
}
