package tree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
)

// memSource holds nodes in memory and counts reads.
type memSource struct {
	mu    sync.Mutex
	nodes map[digest.Hash][]byte
	reads int
}

func newMem() *memSource { return &memSource{nodes: map[digest.Hash][]byte{}} }

func (m *memSource) Node(_ context.Context, h digest.Hash) (*Node, [32]byte, int, error) {
	m.mu.Lock()
	b, ok := m.nodes[h]
	m.reads++
	m.mu.Unlock()
	if !ok {
		return nil, [32]byte{}, 0, fmt.Errorf("node %s: %w", h, bucket.ErrNotExist)
	}
	n, d, err := Decode(b, h)
	return n, d, len(b), err
}

func (m *memSource) put(objs []Object) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range objs {
		m.nodes[o.Hash] = o.Body
	}
}

func key(i int) []byte { return fmt.Appendf(nil, "dir%03d/file%07d", i%97, i) }

func salt(i int) (s [16]byte) {
	s[0], s[1] = byte(i), byte(i>>8)
	return s
}

// model is the map a tree should hold.
type model map[string]string

func (m model) entries() []Entry {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = Entry{Key: []byte(k), Value: []byte(m[k])}
	}
	return out
}

func contents(t *testing.T, src Source, root Ref) []Entry {
	t.Helper()
	var out []Entry
	err := Walk(context.Background(), src, root, func(k, v []byte) error {
		out = append(out, Entry{Key: bytes.Clone(k), Value: bytes.Clone(v)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func equalEntries(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool { return bytes.Equal(x.Key, y.Key) && bytes.Equal(x.Value, y.Value) })
}

// TestEditIsCanonical: after any sequence of edits a tree has the nodes
// (by content digest) and root digest a fresh build of the same entries
// has, and holds exactly the model's entries.
func TestEditIsCanonical(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	src := newMem()
	m := model{}
	var root Ref
	for round := range 60 {
		var changes []Change
		n := 1 + rng.IntN(40)
		if round%10 == 0 {
			n = 1500
		}
		picked := map[string]bool{}
		for range n {
			k := string(key(rng.IntN(6000)))
			if picked[k] {
				continue
			}
			picked[k] = true
			if _, has := m[k]; has && rng.IntN(3) == 0 {
				changes = append(changes, Change{Key: []byte(k), Delete: true})
				delete(m, k)
				continue
			}
			v := fmt.Sprintf("value %d of %s %s", round, k, bytes.Repeat([]byte{'x'}, rng.IntN(300)))
			changes = append(changes, Change{Key: []byte(k), Value: []byte(v)})
			m[k] = v
		}
		slices.SortFunc(changes, func(a, b Change) int { return bytes.Compare(a.Key, b.Key) })
		next, objs, err := Edit(ctx, src, root, changes, salt(round))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		src.put(objs)
		root = next
		fresh, freshObjs, err := Build(m.entries(), salt(1000+round))
		if err != nil {
			t.Fatal(err)
		}
		if root.Digest != fresh.Digest || root.Count != fresh.Count || root.TreeDigest() != fresh.TreeDigest() {
			t.Fatalf("round %d: edited root %x (%d entries), a fresh build %x (%d)", round, root.Digest, root.Count, fresh.Digest, fresh.Count)
		}
		got := contents(t, src, root)
		if !equalEntries(got, m.entries()) {
			t.Fatalf("round %d: the tree holds %d entries, the model %d, or they differ", round, len(got), len(m))
		}
		fsrc := newMem()
		fsrc.put(freshObjs)
		leavesA, err := Leaves(ctx, src, root)
		if err != nil {
			t.Fatal(err)
		}
		leavesB, err := Leaves(ctx, fsrc, fresh)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(leavesA, leavesB, func(a, b Entry) bool { return a.Child.Digest == b.Child.Digest }) {
			t.Fatalf("round %d: the edited tree's leaves differ from a fresh build's", round)
		}
	}
	if root.Count < 1000 {
		t.Fatalf("the test's tree ended with %d entries; it should exercise several levels", root.Count)
	}
}

// TestEditWritesWhatChanged: one changed entry of 100,000 rewrites its
// leaf and the leaf's ancestors (a boundary may move by one more node),
// not the tree.
func TestEditWritesWhatChanged(t *testing.T) {
	ctx := context.Background()
	var entries []Entry
	for i := range 100_000 {
		entries = append(entries, Entry{Key: key(i), Value: bytes.Repeat([]byte{'v'}, 200)})
	}
	slices.SortFunc(entries, func(a, b Entry) int { return bytes.Compare(a.Key, b.Key) })
	root, objs, err := Build(entries, salt(1))
	if err != nil {
		t.Fatal(err)
	}
	src := newMem()
	src.put(objs)
	height := 0
	for n, _, _, _ := src.Node(ctx, root.Hash); ; height++ {
		if n.Level == 0 {
			break
		}
		n, _, _, _ = src.Node(ctx, n.Entries[0].Child.Hash)
	}
	var total int
	for _, o := range objs {
		total += len(o.Body)
	}
	t.Logf("100,000 entries: %d nodes, %d bytes, height %d", len(objs), total, height+1)
	for i, k := range [][]byte{entries[0].Key, entries[50_000].Key, entries[99_999].Key, append(bytes.Clone(entries[777].Key), '!')} {
		next, objs, err := Edit(ctx, src, root, []Change{{Key: k, Value: []byte("changed")}}, salt(2+i))
		if err != nil {
			t.Fatal(err)
		}
		var bytes int
		for _, o := range objs {
			bytes += len(o.Body)
		}
		t.Logf("one change: %d nodes, %d bytes", len(objs), bytes)
		if len(objs) > height+3 || bytes > 64<<10 {
			t.Fatalf("one change of 100,000 wrote %d nodes of %d bytes (height %d)", len(objs), bytes, height+1)
		}
		if next.Count != root.Count+uint64(i/3) {
			t.Fatalf("count %d after the change, want %d", next.Count, root.Count+uint64(i/3))
		}
	}
}

func TestEmptyAndDeleteAll(t *testing.T) {
	ctx := context.Background()
	src := newMem()
	root, objs, err := Edit(ctx, src, Ref{}, []Change{{Key: []byte("a"), Delete: true}}, salt(1))
	if err != nil || !root.IsEmpty() || len(objs) != 0 {
		t.Fatalf("a delete on the empty tree: %v, %+v, %d objects", err, root, len(objs))
	}
	var changes []Change
	for i := range 500 {
		changes = append(changes, Change{Key: fmt.Appendf(nil, "k%04d", i), Value: []byte("v")})
	}
	root, objs, err = Edit(ctx, src, Ref{}, changes, salt(2))
	if err != nil {
		t.Fatal(err)
	}
	src.put(objs)
	for i := range changes {
		changes[i] = Change{Key: changes[i].Key, Delete: true}
	}
	empty, _, err := Edit(ctx, src, root, changes, salt(3))
	if err != nil || !empty.IsEmpty() {
		t.Fatalf("deleting every entry: %v, %+v", err, empty)
	}
	if empty.TreeDigest() == root.TreeDigest() || empty.TreeDigest() == ([32]byte{}) {
		t.Fatal("the empty tree's digest is zero or another tree's")
	}
	v, ok, err := Get(ctx, src, root, []byte("k0321"))
	if err != nil || !ok || string(v) != "v" {
		t.Fatalf("Get k0321: %q %v %v", v, ok, err)
	}
	if _, ok, err := Get(ctx, src, root, []byte("k03210")); err != nil || ok {
		t.Fatalf("Get of a missing key: %v %v", ok, err)
	}
}

func TestChangesChecked(t *testing.T) {
	for _, changes := range [][]Change{
		{{Key: []byte("b"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")}},
		{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("a"), Value: []byte("2")}},
		{{Key: nil, Value: []byte("1")}},
		{{Key: []byte("a"), Value: []byte("1"), Delete: true}},
		{{Key: bytes.Repeat([]byte{'k'}, MaxKeyBytes+1)}},
	} {
		if _, _, err := Edit(context.Background(), newMem(), Ref{}, changes, salt(1)); !errors.Is(err, ErrChanges) {
			t.Errorf("%d changes: %v, want ErrChanges", len(changes), err)
		}
	}
}

// TestDamageIsRefused: a node whose bytes, level, count, digest or key
// range disagree with what names it is refused as bucket.ErrIntegrity.
func TestDamageIsRefused(t *testing.T) {
	ctx := context.Background()
	var entries []Entry
	for i := range 3000 {
		entries = append(entries, Entry{Key: fmt.Appendf(nil, "k%06d", i), Value: []byte("value")})
	}
	root, objs, err := Build(entries, salt(1))
	if err != nil {
		t.Fatal(err)
	}
	src := newMem()
	src.put(objs)
	if got := contents(t, src, root); len(got) != 3000 {
		t.Fatalf("%d entries", len(got))
	}
	// Flip a byte of the root: its name no longer matches.
	b := bytes.Clone(src.nodes[root.Hash])
	b[len(b)-1] ^= 1
	bad := newMem()
	bad.put(objs)
	bad.nodes[root.Hash] = b
	if err := Walk(ctx, bad, root, func(k, v []byte) error { return nil }); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("a damaged root: %v", err)
	}
	// A reference with another count, digest or size than the node.
	for _, r := range []Ref{
		{Hash: root.Hash, Digest: root.Digest, Count: root.Count + 1, Size: root.Size},
		{Hash: root.Hash, Digest: [32]byte{1}, Count: root.Count, Size: root.Size},
		{Hash: root.Hash, Digest: root.Digest, Count: root.Count, Size: root.Size + 1},
	} {
		if err := Walk(ctx, src, r, func(k, v []byte) error { return nil }); !errors.Is(err, bucket.ErrIntegrity) {
			t.Fatalf("a reference that disagrees with its node: %v", err)
		}
	}
	// An inner node naming a child under another key than its first.
	n, _, _, err := src.Node(ctx, root.Hash)
	if err != nil || n.Level == 0 {
		t.Fatalf("root level %d: %v", n.Level, err)
	}
	moved := &Node{Level: n.Level, Entries: slices.Clone(n.Entries)}
	moved.Entries[1].Key = append(bytes.Clone(moved.Entries[1].Key), 0)
	body, d := moved.encode(salt(9))
	h := digest.Sum(body)
	src.nodes[h] = body
	r := Ref{Hash: h, Digest: d, Count: root.Count, Size: uint64(len(body))}
	if err := Walk(ctx, src, r, func(k, v []byte) error { return nil }); !errors.Is(err, bucket.ErrIntegrity) {
		t.Fatalf("a child outside its range: %v", err)
	}
}

func FuzzDecode(f *testing.F) {
	_, objs, _ := Build([]Entry{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b")}}, salt(1))
	for _, o := range objs {
		f.Add(o.Body)
	}
	var entries []Entry
	for i := range 2000 {
		entries = append(entries, Entry{Key: fmt.Appendf(nil, "k%06d", i), Value: []byte("v")})
	}
	_, objs, _ = Build(entries, salt(2))
	f.Add(objs[len(objs)-1].Body)
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := decode(b)
		if err != nil {
			return
		}
		var s [16]byte
		copy(s[:], b[5:21])
		if again, _ := n.encode(s); !bytes.Equal(again, b) {
			t.Fatalf("decode then encode changed the bytes")
		}
	})
}

// TestRebuildReusesBase: rebuilding a tree of entries that differ from
// base's in a few keys gives the fresh build's root digest and writes
// only the nodes those keys touch.
func TestRebuildReusesBase(t *testing.T) {
	ctx := context.Background()
	m := model{}
	for i := range 20_000 {
		m[string(key(i))] = fmt.Sprintf("value %d", i)
	}
	src := newMem()
	base, objs, err := Rebuild(ctx, src, Ref{}, m.entries(), salt(1))
	if err != nil {
		t.Fatal(err)
	}
	src.put(objs)
	m[string(key(5))] = "changed"
	delete(m, string(key(6000)))
	m[string(key(30_000))] = "new"
	next, objs, err := Rebuild(ctx, src, base, m.entries(), salt(2))
	if err != nil {
		t.Fatal(err)
	}
	fresh, all, _ := Build(m.entries(), salt(3))
	if next.Digest != fresh.Digest || next.Count != uint64(len(m)) {
		t.Fatalf("rebuilt root %x (%d), fresh %x (%d)", next.Digest, next.Count, fresh.Digest, fresh.Count)
	}
	if len(objs) > 3*4+2 || len(objs)*10 > len(all) {
		t.Fatalf("three changes rewrote %d nodes of %d", len(objs), len(all))
	}
	src.put(objs)
	if got := contents(t, src, next); !equalEntries(got, m.entries()) {
		t.Fatal("the rebuilt tree does not hold the entries")
	}
}

// TestChanged: the leaves two versions do not share are exactly the
// ones holding what changed.
func TestChanged(t *testing.T) {
	ctx := context.Background()
	m := model{}
	for i := range 5000 {
		m[string(key(i))] = "v"
	}
	src := newMem()
	a, objs, err := Build(m.entries(), salt(1))
	if err != nil {
		t.Fatal(err)
	}
	src.put(objs)
	changed := string(key(1234))
	b, objs, err := Edit(ctx, src, a, []Change{{Key: []byte(changed), Value: []byte("w")}}, salt(2))
	if err != nil {
		t.Fatal(err)
	}
	over := Overlay(src, objs)
	onlyA, onlyB, err := Changed(ctx, over, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if len(onlyA) != 1 || len(onlyB) != 1 {
		t.Fatalf("one change: %d leaves only in the old tree, %d only in the new", len(onlyA), len(onlyB))
	}
	for _, side := range []struct {
		src   Source
		leaf  []Entry
		value string
	}{{src, onlyA, "v"}, {over, onlyB, "w"}} {
		nodes, err := LoadLeaves(ctx, side.src, side.leaf)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range nodes[0].Entries {
			found = found || string(e.Key) == changed && string(e.Value) == side.value
		}
		if !found {
			t.Fatalf("the changed key is not in the changed leaf with value %q", side.value)
		}
	}
	if _, _, err := Changed(ctx, src, a, b); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("the new tree without its nodes: %v", err)
	}
}

// TestChangedIsTheLeafDifference: for random pairs of trees (one an edit
// of the other, of a few keys or of most, so heights differ too, and the
// empty tree), Changed gives exactly the leaves of each that the other's
// leaves lack by content digest, in key order.
func TestChangedIsTheLeafDifference(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	src := newMem()
	naive := func(a, b Ref) []Entry {
		la, err := Leaves(ctx, src, a)
		if err != nil {
			t.Fatal(err)
		}
		lb, err := Leaves(ctx, src, b)
		if err != nil {
			t.Fatal(err)
		}
		in := map[[32]byte]bool{}
		for _, e := range lb {
			in[e.Child.Digest] = true
		}
		var out []Entry
		for _, e := range la {
			if !in[e.Child.Digest] {
				out = append(out, e)
			}
		}
		return out
	}
	same := func(x, y []Entry) bool {
		return slices.EqualFunc(x, y, func(p, q Entry) bool { return p.Child == q.Child && bytes.Equal(p.Key, q.Key) })
	}
	for round := range 40 {
		m := model{}
		for i := range rng.IntN(20000) {
			m[string(key(i))] = "v"
		}
		a, objs, err := Build(m.entries(), salt(round))
		if err != nil {
			t.Fatal(err)
		}
		src.put(objs)
		var changes []Change
		frac := []float64{0.0005, 0.01, 0.9}[round%3]
		for i := range 22000 {
			if rng.Float64() >= frac {
				continue
			}
			// Most keys go in the rounds that change most, so the trees'
			// heights differ, down to the empty tree.
			if _, ok := m[string(key(i))]; ok && (rng.IntN(2) == 0 || frac > 0.5 && rng.IntN(50) != 0) {
				changes = append(changes, Change{Key: key(i), Delete: true})
			} else {
				changes = append(changes, Change{Key: key(i), Value: fmt.Appendf(nil, "w%d", rng.IntN(3))})
			}
		}
		slices.SortFunc(changes, func(x, y Change) int { return bytes.Compare(x.Key, y.Key) })
		b, objs, err := Edit(ctx, src, a, changes, salt(100+round))
		if err != nil {
			t.Fatal(err)
		}
		src.put(objs)
		// Both ways: the tree with fewer levels on either side.
		for _, p := range [][2]Ref{{a, b}, {b, a}} {
			onlyA, onlyB, err := Changed(ctx, src, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			if !same(onlyA, naive(p[0], p[1])) || !same(onlyB, naive(p[1], p[0])) {
				t.Fatalf("round %d (%d entries, %d changes): Changed gave %d and %d leaves, the difference is %d and %d",
					round, len(m), len(changes), len(onlyA), len(onlyB), len(naive(p[0], p[1])), len(naive(p[1], p[0])))
			}
		}
	}
}

// TestEditShrinksAndGrows: edits that take a tree down to a few keys (so
// it loses levels, down to a leaf or nothing) and back up to thousands
// leave the tree a fresh build of the same entries makes, and write only
// nodes the new tree holds.
func TestEditShrinksAndGrows(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	src := newMem()
	m := model{}
	var root Ref
	for round := range 30 {
		var changes []Change
		switch round % 3 {
		case 0: // grow: thousands of keys
			for i := range 3000 + rng.IntN(9000) {
				k := key(rng.IntN(20000) + i%3)
				m[string(k)] = fmt.Sprintf("v%d", round)
			}
		case 1: // shrink: all but a few
			keep := rng.IntN(4)
			for k := range m {
				if keep > 0 && rng.IntN(len(m)) < 3 {
					keep--
					continue
				}
				delete(m, k)
			}
		default: // a few changes
			for range 1 + rng.IntN(5) {
				m[string(key(rng.IntN(20000)))] = "w"
			}
		}
		// The changes that take the tree from its entries to the model's.
		old := map[string]bool{}
		for _, e := range contents(t, src, root) {
			old[string(e.Key)] = true
		}
		for k := range old {
			if _, ok := m[k]; !ok {
				changes = append(changes, Change{Key: []byte(k), Delete: true})
			}
		}
		for k, v := range m {
			changes = append(changes, Change{Key: []byte(k), Value: []byte(v)})
		}
		slices.SortFunc(changes, func(a, b Change) int { return bytes.Compare(a.Key, b.Key) })
		next, objs, err := Edit(ctx, src, root, changes, salt(round))
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		fresh, _, err := Build(m.entries(), salt(500+round))
		if err != nil {
			t.Fatal(err)
		}
		if next.TreeDigest() != fresh.TreeDigest() || next.Count != fresh.Count {
			t.Fatalf("round %d (%d entries): edited root %x, a fresh build %x", round, len(m), next.Digest, fresh.Digest)
		}
		// Every node written is one the new tree holds.
		held := map[digest.Hash]bool{}
		src.put(objs)
		var walk func(r Ref)
		walk = func(r Ref) {
			held[r.Hash] = true
			n, _, _, err := src.Node(ctx, r.Hash)
			if err != nil {
				t.Fatal(err)
			}
			if n.Level > 0 {
				for _, e := range n.Entries {
					walk(e.Child)
				}
			}
		}
		if !next.IsEmpty() {
			walk(next)
		}
		for _, o := range objs {
			if !held[o.Hash] {
				t.Fatalf("round %d: the edit wrote node %s, which its tree does not hold", round, o.Hash)
			}
		}
		root = next
	}
}

// TestCompressedNodes: a Writer that compresses writes smaller nodes
// under other names but the same content digests, so the root digest is
// the plain tree's; the tree reads back whole, and an edit of it (and of
// a plain base, lending its nodes) gives the plain edit's digest.
func TestCompressedNodes(t *testing.T) {
	ctx := context.Background()
	m := model{}
	for i := range 5_000 {
		m[string(key(i))] = fmt.Sprintf("sha256:%064x", i*7919)
	}
	plainSrc, zSrc := newMem(), newMem()
	plain, pobjs, err := Rebuild(ctx, plainSrc, Ref{}, m.entries(), salt(1))
	if err != nil {
		t.Fatal(err)
	}
	plainSrc.put(pobjs)
	z, zobjs, err := Writer{Salt: salt(1), Compress: true}.Rebuild(ctx, zSrc, Ref{}, m.entries())
	if err != nil {
		t.Fatal(err)
	}
	zSrc.put(zobjs)
	var pbytes, zbytes, compressed int
	for _, o := range pobjs {
		pbytes += len(o.Body)
	}
	for _, o := range zobjs {
		zbytes += len(o.Body)
		if shards.IsCompressed(o.Body) {
			compressed++
		}
	}
	if z.Digest != plain.Digest || z.Count != plain.Count || z.Hash == plain.Hash || compressed == 0 || zbytes >= pbytes {
		t.Fatalf("compressed tree: digest equal %v, %d of %d nodes compressed, %d bytes against %d",
			z.Digest == plain.Digest, compressed, len(zobjs), zbytes, pbytes)
	}
	got := model{}
	if err := Walk(ctx, zSrc, z, func(k, v []byte) error { got[string(k)] = string(v); return nil }); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, m) {
		t.Fatalf("walked %d entries, want %d", len(got), len(m))
	}
	changes := []Change{{Key: key(17), Value: []byte("changed")}, {Key: key(4000), Delete: true}}
	slices.SortFunc(changes, func(a, b Change) int { return bytes.Compare(a.Key, b.Key) })
	pe, _, err := Edit(ctx, plainSrc, plain, changes, salt(2))
	if err != nil {
		t.Fatal(err)
	}
	ze, zeobjs, err := Writer{Salt: salt(2), Compress: true}.Edit(ctx, zSrc, z, changes)
	if err != nil {
		t.Fatal(err)
	}
	zSrc.put(zeobjs)
	if ze.Digest != pe.Digest {
		t.Fatal("an edit of the compressed tree has another digest than the plain edit")
	}
	if v, ok, err := Get(ctx, zSrc, ze, key(17)); err != nil || !ok || string(v) != "changed" {
		t.Fatalf("get after the edit: %q %v %v", v, ok, err)
	}
	// A compressing edit of a plain base.
	mixed, mobjs, err := Writer{Salt: salt(3), Compress: true}.Edit(ctx, plainSrc, plain, changes)
	if err != nil {
		t.Fatal(err)
	}
	plainSrc.put(mobjs)
	if mixed.Digest != pe.Digest {
		t.Fatal("a compressing edit of a plain tree has another digest than the plain edit")
	}
	if err := Walk(ctx, plainSrc, mixed, func(k, v []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
}
