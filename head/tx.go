package head

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// batchState is the mutations of a group of commands, not yet committed.
type batchState struct {
	fams  *shards.Schema
	muts  map[shards.Family]map[string]shards.Mutation
	holds map[string]*digest.Hash // owner → held root; nil releases
}

func newBatchState(fams *shards.Schema) *batchState {
	return &batchState{fams: fams, muts: map[shards.Family]map[string]shards.Mutation{}, holds: map[string]*digest.Hash{}}
}

func (b *batchState) empty() bool { return len(b.muts) == 0 && len(b.holds) == 0 }

func (b *batchState) put(f shards.Family, key, value []byte) error {
	if _, err := b.fams.ShardOf(f, key); err != nil {
		return err
	}
	m := b.muts[f]
	if m == nil {
		m = map[string]shards.Mutation{}
		b.muts[f] = m
	}
	m[string(key)] = shards.Mutation{Key: bytes.Clone(key), Value: bytes.Clone(value)}
	return nil
}

func (b *batchState) del(f shards.Family, key []byte) error {
	if _, err := b.fams.ShardOf(f, key); err != nil {
		return err
	}
	m := b.muts[f]
	if m == nil {
		m = map[string]shards.Mutation{}
		b.muts[f] = m
	}
	m[string(key)] = shards.Mutation{Key: bytes.Clone(key), Delete: true}
	return nil
}

// lookup reports a pending mutation of key, if there is one.
func (b *batchState) lookup(f shards.Family, key []byte) (shards.Mutation, bool) {
	m, ok := b.muts[f][string(key)]
	return m, ok
}

// merge applies o's mutations on top of b's.
func (b *batchState) merge(o *batchState) {
	for f, m := range o.muts {
		dst := b.muts[f]
		if dst == nil {
			dst = map[string]shards.Mutation{}
			b.muts[f] = dst
		}
		for k, v := range m {
			dst[k] = v
		}
	}
	for owner, h := range o.holds {
		b.holds[owner] = h
	}
}

// sorted returns family f's mutations in key order.
func (b *batchState) sorted(f shards.Family) []shards.Mutation {
	out := make([]shards.Mutation, 0, len(b.muts[f]))
	for _, m := range b.muts[f] {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Key, out[j].Key) < 0 })
	return out
}

// Tx is one command's view of the shard: the pinned snapshot, the
// mutations of the commands applied before it in the same group commit,
// and its own. A command must be a pure function of what it reads through
// its Tx: it may run several times.
type Tx struct {
	ctx  context.Context
	sn   *Snapshot
	base *batchState // earlier commands of the batch
	own  *batchState
	seq  uint64
	now  time.Time
}

// Context returns the context of the commit.
func (tx *Tx) Context() context.Context { return tx.ctx }

// Snapshot returns the pinned snapshot the command runs against (without
// the batch's pending mutations).
func (tx *Tx) Snapshot() *Snapshot { return tx.sn }

// Sequence is the sequence this command commits at if it commits: the
// pinned sequence plus one.
func (tx *Tx) Sequence() uint64 { return tx.seq }

// Now is the attempt's clock reading, the same for every command of one
// attempt.
func (tx *Tx) Now() time.Time { return tx.now }

// Get reads key of family f, seeing the batch's pending writes.
func (tx *Tx) Get(f shards.Family, key []byte) ([]byte, bool, error) {
	for _, st := range []*batchState{tx.own, tx.base} {
		if m, ok := st.lookup(f, key); ok {
			if m.Delete {
				return nil, false, nil
			}
			return m.Value, true, nil
		}
	}
	return tx.sn.Get(tx.ctx, f, key)
}

// Scan is Snapshot.Scan seeing the batch's pending writes.
func (tx *Tx) Scan(f shards.Family, prefix, after []byte, limit int) ([]shards.Record, error) {
	var pending []shards.Mutation
	seen := map[string]bool{}
	for _, st := range []*batchState{tx.own, tx.base} {
		for k, m := range st.muts[f] {
			if seen[k] || !bytes.HasPrefix(m.Key, prefix) || (after != nil && bytes.Compare(m.Key, after) <= 0) {
				continue
			}
			seen[k] = true
			pending = append(pending, m)
		}
	}
	snapLimit := limit
	if len(pending) > 0 {
		snapLimit = 0 // pending deletes may remove records the limit counted
	}
	recs, err := tx.sn.Scan(tx.ctx, f, prefix, after, snapLimit)
	if err != nil || len(pending) == 0 {
		return recs, err
	}
	out := make([]shards.Record, 0, len(recs)+len(pending))
	for _, r := range recs {
		if !seen[string(r.Key)] {
			out = append(out, r)
		}
	}
	for _, m := range pending {
		if !m.Delete {
			out = append(out, shards.Record{Key: m.Key, Value: m.Value})
		}
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i].Key, out[j].Key) < 0 })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Put writes value under key in family f. The key must fit the family's
// shape (shards.Schema.ShardOf).
func (tx *Tx) Put(f shards.Family, key, value []byte) error {
	if f == shards.CommandDedupe || f == shards.System {
		return fmt.Errorf("head: put: family %s belongs to the engine", f)
	}
	return tx.own.put(f, key, value)
}

// Delete removes key from family f; deleting a missing key is no error.
func (tx *Tx) Delete(f shards.Family, key []byte) error {
	if f == shards.CommandDedupe || f == shards.System {
		return fmt.Errorf("head: delete: family %s belongs to the engine", f)
	}
	return tx.own.del(f, key)
}

// Hold keeps root reachable under owner until Release. The root must be
// the pinned one or already held: a hold never resurrects a root GC may
// have swept.
func (tx *Tx) Hold(owner string, root digest.Hash) error {
	if err := roots.CheckOwner(owner); err != nil {
		return err
	}
	if root != tx.sn.rootHash && !tx.heldRoot(root) {
		return fmt.Errorf("head: hold %q: root %s is neither pinned nor held: %w", owner, root, ErrWriterRule)
	}
	h := root
	tx.own.holds[owner] = &h
	return nil
}

func (tx *Tx) heldRoot(root digest.Hash) bool {
	for _, st := range []*batchState{tx.own, tx.base} {
		for _, h := range st.holds {
			if h != nil && *h == root {
				return true
			}
		}
	}
	for _, h := range tx.sn.root.Holds {
		if h.Root == root {
			return true
		}
	}
	return false
}

// Release drops owner's hold, if any.
func (tx *Tx) Release(owner string) { tx.own.holds[owner] = nil }
