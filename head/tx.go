package head

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/roots"
	"github.com/cairnstore/cairn/shards"
)

// batchState is the mutations of a group of commands, not yet committed.
// Each family's keys are also kept in order (see keyOrder), so that a
// scan of the pending writes costs the size of its range, not of the
// batch: a group commit of a thousand commands that each scan what the
// earlier ones wrote stays linear.
type batchState struct {
	fams  *shards.Schema
	muts  map[shards.Family]map[string]shards.Mutation
	order map[shards.Family]*keyOrder
	holds map[string]*digest.Hash // owner → held root; nil releases
	stage []write                 // the product's objects (Tx.Stage)
	// touched makes the batch commit even without a change (Touch).
	touched bool
}

// keyOrder is the keys of one family's pending mutations in order: a
// sorted run and the keys added since, sorted into the run when a reader
// needs the order.
type keyOrder struct {
	sorted []string
	tail   []string
}

// keys returns the keys in order. A few new keys are inserted in place; a
// long tail is sorted and merged.
func (o *keyOrder) keys() []string {
	if len(o.tail) > 0 && len(o.tail) <= 8 {
		for _, k := range o.tail {
			i, _ := slices.BinarySearch(o.sorted, k)
			o.sorted = slices.Insert(o.sorted, i, k)
		}
		o.tail = o.tail[:0]
	}
	if len(o.tail) > 0 {
		slices.Sort(o.tail)
		merged := make([]string, 0, len(o.sorted)+len(o.tail))
		i, j := 0, 0
		for i < len(o.sorted) && j < len(o.tail) {
			if o.sorted[i] < o.tail[j] {
				merged = append(merged, o.sorted[i])
				i++
			} else {
				merged = append(merged, o.tail[j])
				j++
			}
		}
		merged = append(append(merged, o.sorted[i:]...), o.tail[j:]...)
		o.sorted, o.tail = merged, nil
	}
	return o.sorted
}

func newBatchState(fams *shards.Schema) *batchState {
	return &batchState{fams: fams, muts: map[shards.Family]map[string]shards.Mutation{},
		order: map[shards.Family]*keyOrder{}, holds: map[string]*digest.Hash{}}
}

func (b *batchState) empty() bool { return len(b.muts) == 0 && len(b.holds) == 0 && !b.touched }

// family returns family f's pending mutations, made with room for n
// keys if there are none yet.
func (b *batchState) family(f shards.Family, n int) map[string]shards.Mutation {
	ms := b.muts[f]
	if ms == nil {
		ms = make(map[string]shards.Mutation, n)
		b.muts[f] = ms
		b.order[f] = &keyOrder{tail: make([]string, 0, n)}
	}
	return ms
}

// grow makes room for n more keys of family f.
func (b *batchState) grow(f shards.Family, n int) {
	if n <= 0 {
		return
	}
	ms := b.family(f, n)
	if len(ms) == 0 {
		return
	}
	// A map cannot be grown in place: copy it into a larger one.
	bigger := make(map[string]shards.Mutation, len(ms)+n)
	maps.Copy(bigger, ms)
	b.muts[f] = bigger
	o := b.order[f]
	o.tail = slices.Grow(o.tail, n)
}

// set records m as the pending mutation of its key in family f.
func (b *batchState) set(f shards.Family, m shards.Mutation) {
	ms := b.family(f, 0)
	k := string(m.Key)
	n := len(ms)
	ms[k] = m
	if len(ms) > n { // a key new to the batch
		b.order[f].tail = append(b.order[f].tail, k)
	}
}

func (b *batchState) put(f shards.Family, key, value []byte) error {
	if _, err := b.fams.ShardOf(f, key); err != nil {
		return err
	}
	b.set(f, shards.Mutation{Key: bytes.Clone(key), Value: bytes.Clone(value)})
	return nil
}

func (b *batchState) del(f shards.Family, key []byte) error {
	if _, err := b.fams.ShardOf(f, key); err != nil {
		return err
	}
	b.set(f, shards.Mutation{Key: bytes.Clone(key), Delete: true})
	return nil
}

// deltaSize is the encoded size of the batch's delta (shards.DeltaSize).
func (b *batchState) deltaSize() int64 {
	return shards.DeltaSize(func(yield func(shards.Mutation) bool) {
		for _, ms := range b.muts {
			for _, m := range ms {
				if !yield(m) {
					return
				}
			}
		}
	})
}

// lookup reports a pending mutation of key, if there is one.
func (b *batchState) lookup(f shards.Family, key []byte) (shards.Mutation, bool) {
	m, ok := b.muts[f][string(key)]
	return m, ok
}

// merge applies o's mutations on top of b's.
func (b *batchState) merge(o *batchState) {
	for f, m := range o.muts {
		for _, v := range m {
			b.set(f, v)
		}
	}
	for owner, h := range o.holds {
		b.holds[owner] = h
	}
	b.touched = b.touched || o.touched
	b.stage = append(b.stage, o.stage...)
}

// absorb applies o's mutations on top of b's, as merge does, and leaves
// o unusable: when o holds more mutations than b, b takes o's maps and
// only b's own changes that o does not override are copied, so a command
// of a million records costs one set of maps, not two.
func (b *batchState) absorb(o *batchState) {
	if b.size() >= o.size() {
		b.merge(o)
		return
	}
	for f, ms := range b.muts {
		for k, m := range ms {
			if _, ok := o.muts[f][k]; !ok {
				o.set(f, m)
			}
		}
	}
	b.muts, b.order = o.muts, o.order
	o.muts, o.order = nil, nil
	for owner, h := range o.holds {
		b.holds[owner] = h
	}
	b.touched = b.touched || o.touched
	b.stage = append(b.stage, o.stage...)
}

// size is the number of pending mutations.
func (b *batchState) size() int {
	n := 0
	for _, ms := range b.muts {
		n += len(ms)
	}
	return n
}

// sorted returns family f's mutations in key order.
func (b *batchState) sorted(f shards.Family) []shards.Mutation {
	return b.scan(f, nil, nil)
}

// bounds returns the positions [lo, hi) in keys (family f's keys in
// order) of the keys that begin with prefix.
func (b *batchState) bounds(f shards.Family, prefix []byte) (keys []string, lo, hi int) {
	o := b.order[f]
	if o == nil {
		return nil, 0, 0
	}
	keys = o.keys()
	lo, _ = slices.BinarySearch(keys, string(prefix))
	hi = len(keys)
	if end, ok := prefixEnd(prefix); ok {
		hi, _ = slices.BinarySearch(keys[lo:], end)
		hi += lo
	}
	return keys, lo, hi
}

// prefixEnd returns the least key greater than every key that begins
// with prefix, if there is one (none when prefix is all 0xff bytes).
func prefixEnd(prefix []byte) (string, bool) {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end = append(end[:i:i], end[i]+1)
			return string(end), true
		}
	}
	return "", false
}

// scan returns family f's mutations of keys that begin with prefix and
// come strictly after after (nil: from the prefix on), in key order.
func (b *batchState) scan(f shards.Family, prefix, after []byte) []shards.Mutation {
	o := b.order[f]
	if o == nil {
		return nil
	}
	keys := o.keys()
	start := string(prefix)
	if after != nil && bytes.Compare(after, prefix) >= 0 {
		start = string(after) + "\x00" // the least key past after
	}
	i, _ := slices.BinarySearch(keys, start)
	end := len(keys)
	if len(prefix) > 0 {
		end = i + sort.Search(len(keys)-i, func(j int) bool { return !strings.HasPrefix(keys[i+j], string(prefix)) })
	}
	if i >= end {
		return nil
	}
	muts := b.muts[f]
	out := make([]shards.Mutation, end-i)
	for j, k := range keys[i:end] {
		out[j] = muts[k]
	}
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
	// floor is the attempt's floor (see horizon.go): what the command
	// names that the parent root does not reach must be stamped at or
	// after it.
	floor time.Time
	salt  *roots.Nonce
}

// Stage has the attempt store body (kept: not to be changed) under key,
// with the engine's objects and durable with them, before the head write
// that lands the command; a command that fails stages nothing. It is for
// objects outside the engine that the command's records name (the
// product tells a sweep how to find them: walk.Refs). Key must be a name
// no other attempt writes, such as one derived from Salt.
func (tx *Tx) Stage(key string, body []byte) {
	tx.own.stage = append(tx.own.stage, write{key, body})
}

// Salt returns a random value of this run of the command: objects it
// stages under names derived from it are its own.
func (tx *Tx) Salt() [16]byte {
	if tx.salt == nil {
		n := newNonce()
		tx.salt = &n
	}
	return *tx.salt
}

// Context returns the context of the commit.
func (tx *Tx) Context() context.Context { return tx.ctx }

// Snapshot returns the pinned snapshot the command runs against (without
// the batch's pending mutations).
func (tx *Tx) Snapshot() *Snapshot { return tx.sn }

// Sequence is the sequence this command commits at if it commits: the
// pinned sequence plus one.
func (tx *Tx) Sequence() uint64 { return tx.seq }

// Floor is the attempt's floor on the store's clock (Snapshot.Floor of
// the snapshot it is built on): an object the command names that the
// pinned root does not reach, such as an artifact body uploaded before
// the command, must carry a store time (bucket.Attrs.ModTime) at or after
// it, or a sweep may delete it before the head write lands. A command
// that finds such an object older refuses (wrapping ErrStale) and its
// caller writes the object again under a fresh name. Zero when the store
// reports no times (nothing is then ever swept by age).
func (tx *Tx) Floor() time.Time { return tx.floor }

// Now is the attempt's clock reading, the same for every command of one
// attempt, taken when it began: a command the attempt absorbed while it
// waited for the head's turn arrived after it, by less than the commit
// interval.
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

// Scan is Snapshot.Scan seeing the batch's pending writes. It costs the
// records in its range, pending ones included, not the size of the batch.
func (tx *Tx) Scan(f shards.Family, prefix, after []byte, limit int) ([]shards.Record, error) {
	pending := mergeMutations(tx.own.scan(f, prefix, after), tx.base.scan(f, prefix, after))
	snapLimit := limit
	if len(pending) > 0 {
		snapLimit = 0 // pending deletes may remove records the limit counted
	}
	recs, err := tx.sn.Scan(tx.ctx, f, prefix, after, snapLimit)
	if err != nil || len(pending) == 0 {
		return recs, err
	}
	out := make([]shards.Record, 0, len(recs)+len(pending))
	i := 0
	for _, m := range pending {
		for ; i < len(recs) && bytes.Compare(recs[i].Key, m.Key) < 0; i++ {
			out = append(out, recs[i])
		}
		if i < len(recs) && bytes.Equal(recs[i].Key, m.Key) {
			i++ // the pending change wins
		}
		if !m.Delete {
			out = append(out, shards.Record{Key: m.Key, Value: m.Value})
		}
	}
	out = append(out, recs[i:]...)
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Last returns the record of family f with the greatest key that begins
// with prefix, seeing the batch's pending writes, and whether there is
// one. A command that numbers what it appends under a prefix (the next
// sequence after the last) reads one record, not the whole range.
func (tx *Tx) Last(f shards.Family, prefix []byte) (shards.Record, bool, error) {
	recs, err := tx.sn.Scan(tx.ctx, f, prefix, nil, 0)
	if err != nil {
		return shards.Record{}, false, err
	}
	ownKeys, ownLo, ownHi := tx.own.bounds(f, prefix)
	baseKeys, baseLo, baseHi := tx.base.bounds(f, prefix)
	i, j, k := len(recs)-1, ownHi-1, baseHi-1
	for i >= 0 || j >= ownLo || k >= baseLo {
		// The greatest key still to look at, and the newest change of it.
		key := ""
		if i >= 0 {
			key = string(recs[i].Key)
		}
		if j >= ownLo && ownKeys[j] > key {
			key = ownKeys[j]
		}
		if k >= baseLo && baseKeys[k] > key {
			key = baseKeys[k]
		}
		var m shards.Mutation
		pending := false
		if j >= ownLo && ownKeys[j] == key {
			m, pending = tx.own.muts[f][key], true
			j--
		}
		if k >= baseLo && baseKeys[k] == key {
			if !pending {
				m, pending = tx.base.muts[f][key], true
			}
			k--
		}
		var r shards.Record
		if i >= 0 && string(recs[i].Key) == key {
			r = recs[i]
			i--
		}
		switch {
		case pending && !m.Delete:
			return shards.Record{Key: m.Key, Value: m.Value}, true, nil
		case !pending:
			return r, true, nil
		}
	}
	return shards.Record{}, false, nil
}

// mergeMutations merges two key-ordered lists of mutations; on a key in
// both, newer's wins.
func mergeMutations(newer, older []shards.Mutation) []shards.Mutation {
	if len(newer) == 0 {
		return older
	}
	if len(older) == 0 {
		return newer
	}
	out := make([]shards.Mutation, 0, len(newer)+len(older))
	i, j := 0, 0
	for i < len(newer) && j < len(older) {
		switch c := bytes.Compare(newer[i].Key, older[j].Key); {
		case c < 0:
			out = append(out, newer[i])
			i++
		case c > 0:
			out = append(out, older[j])
			j++
		default:
			out = append(out, newer[i])
			i++
			j++
		}
	}
	return append(append(out, newer[i:]...), older[j:]...)
}

// Put writes value under key in family f. The key must fit the family's
// shape (shards.Schema.ShardOf).
func (tx *Tx) Put(f shards.Family, key, value []byte) error {
	if f == shards.CommandDedupe || f == shards.System {
		return fmt.Errorf("head: put: family %s belongs to the engine", f)
	}
	return tx.own.put(f, key, value)
}

// Grow makes room for n more keys of family f in the transaction, so
// that a command about to put many (a restore's copy) does not grow its
// record map step by step. It changes nothing else.
func (tx *Tx) Grow(f shards.Family, n int) { tx.own.grow(f, n) }

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

// HoldsAtMost returns an upper bound of the holds the state being built
// keeps: those of the pinned root and those this batch added (a release
// in the batch is not subtracted). It reads nothing.
func (tx *Tx) HoldsAtMost() int {
	n := len(tx.sn.root.Holds)
	for _, st := range []*batchState{tx.own, tx.base} {
		for _, h := range st.holds {
			if h != nil {
				n++
			}
		}
	}
	return n
}

// Release drops owner's hold, if any.
func (tx *Tx) Release(owner string) { tx.own.holds[owner] = nil }
