package head_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// restoreStore opens a checked Store (strict Check after every commit)
// of a new shard in a new bucket.
func restoreStore(t *testing.T) (*head.Store, *mem.Bucket) {
	t.Helper()
	b := mem.NewBucket()
	s, err := head.Open(context.Background(), b, shards.NewShardID(), head.SchemaForTest, head.Options{Check: true, NoGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, b
}

func mustDo(t *testing.T, s *head.Store, cmd head.Command) head.Result {
	t.Helper()
	r, err := s.Do(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRestoreRootCommitsTheKeptState(t *testing.T) {
	ctx := context.Background()
	s, _ := restoreStore(t)
	f := rqFamilies[0]
	mustDo(t, s, rqPut(f, 1, 1))
	mustDo(t, s, rqPut(f, 2, 1))
	kept := rqPin(t, s)

	mustDo(t, s, rqPut(f, 1, 2))
	mustDo(t, s, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Delete(f, rqKey(f, 2))
	}})
	mustDo(t, s, rqPut(f, 3, 2))
	// A snapshot taken after the kept state: its hold must survive.
	mustDo(t, s, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("later", tx.Snapshot().RootHash())
	}})
	before := rqPin(t, s)
	laterRoot, ok := before.Root().Hold("later")
	if !ok {
		t.Fatal("hold not committed")
	}

	sn, committed, err := s.RestoreRoot(ctx, kept.RootHash(), head.RestoreOptions{})
	if err != nil || !committed {
		t.Fatalf("restore: committed %v, %v", committed, err)
	}
	if got, want := sn.Sequence(), before.Sequence()+1; got != want {
		t.Fatalf("restored at sequence %d, want %d", got, want)
	}
	if got, want := sn.Root().Parent, before.RootHash(); got != want {
		t.Fatalf("parent %s, want the previous root %s", got, want)
	}
	cur := rqPin(t, s)
	if cur.RootHash() != sn.RootHash() {
		t.Fatalf("head names %s, want the restored root %s", cur.RootHash(), sn.RootHash())
	}
	rqMustGet(t, cur, f, 1, rqValue(f, 1, 1))
	rqMustGet(t, cur, f, 2, rqValue(f, 2, 1))
	if _, ok, err := cur.Get(ctx, f, rqKey(f, 3)); err != nil || ok {
		t.Fatalf("record 3 after restore: %v %v, want absent", ok, err)
	}
	if got, ok := cur.Root().Hold("later"); !ok || got != laterRoot {
		t.Fatalf("hold later = %s %v, want %s", got, ok, laterRoot)
	}
	// Restoring it again finds the state current: nothing is committed.
	if again, committed, err := s.RestoreRoot(ctx, kept.RootHash(), head.RestoreOptions{}); err != nil || committed || again.RootHash() != sn.RootHash() {
		t.Fatalf("second restore: committed %v, %v", committed, err)
	}
	// History is intact: the previous state is still the parent's.
	prev, err := s.At(ctx, cur.Root().Parent)
	if err != nil {
		t.Fatal(err)
	}
	rqMustGet(t, prev, f, 1, rqValue(f, 1, 2))
	// And the shard goes on committing over the restored state.
	r := mustDo(t, s, rqPut(f, 4, 3))
	if got, want := r.Sequence, sn.Sequence()+1; got != want {
		t.Fatalf("next commit at %d, want %d", got, want)
	}
	rqMustGet(t, rqPin(t, s), f, 1, rqValue(f, 1, 1))
}

func TestRestoreRootOfTheCurrentRootWritesNothing(t *testing.T) {
	s, _ := restoreStore(t)
	mustDo(t, s, rqPut(rqFamilies[0], 1, 1))
	cur := rqPin(t, s)
	sn, committed, err := s.RestoreRoot(context.Background(), cur.RootHash(), head.RestoreOptions{})
	if err != nil || committed {
		t.Fatalf("committed %v, %v", committed, err)
	}
	if sn.Sequence() != cur.Sequence() || rqPin(t, s).Sequence() != cur.Sequence() {
		t.Fatalf("restore of the current root moved the head to %d", rqPin(t, s).Sequence())
	}
}

func TestRestoreRootGuardRefusalCommitsNothing(t *testing.T) {
	s, _ := restoreStore(t)
	f := rqFamilies[0]
	mustDo(t, s, rqPut(f, 1, 1))
	kept := rqPin(t, s)
	mustDo(t, s, rqPut(f, 1, 2))
	before := rqPin(t, s)
	gone := errors.New("pin deleted")
	_, _, err := s.RestoreRoot(context.Background(), kept.RootHash(), head.RestoreOptions{Guard: func(context.Context, time.Time) error { return gone }})
	if !errors.Is(err, gone) {
		t.Fatalf("err %v, want the guard's", err)
	}
	if got := rqPin(t, s); got.RootHash() != before.RootHash() {
		t.Fatalf("head moved to %d", got.Sequence())
	}
}

func TestRestoreRootRefusesAMissingRoot(t *testing.T) {
	s, _ := restoreStore(t)
	mustDo(t, s, rqPut(rqFamilies[0], 1, 1))
	before := rqPin(t, s)
	var h [32]byte
	h[0] = 1
	if _, _, err := s.RestoreRoot(context.Background(), h, head.RestoreOptions{}); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("err %v, want ErrNotExist", err)
	}
	if rqPin(t, s).RootHash() != before.RootHash() {
		t.Fatal("head moved")
	}
}

func TestWriteHeadAt(t *testing.T) {
	ctx := context.Background()
	s, b := restoreStore(t)
	f := rqFamilies[0]
	mustDo(t, s, rqPut(f, 1, 1))
	old := rqPin(t, s)
	mustDo(t, s, rqPut(f, 1, 2))
	cur := rqPin(t, s)

	// Another head is there: refused, and left alone.
	_, err := head.WriteHeadAt(ctx, b, s.ID(), head.SchemaForTest, old.RootHash(), time.Now())
	if !errors.Is(err, head.ErrHeadExists) {
		t.Fatalf("err %v, want ErrHeadExists", err)
	}
	// The same root: answered with the head that is there.
	h, err := head.WriteHeadAt(ctx, b, s.ID(), head.SchemaForTest, cur.RootHash(), time.Now())
	if err != nil || h.Sequence != cur.Sequence() || h.Nonce != cur.Head().Nonce {
		t.Fatalf("same root: %+v %v", h, err)
	}
	// No head: written, naming the old root at its own sequence, and a new
	// Store serves it and commits on it.
	if err := b.Delete(ctx, s.Layout().Head(), bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	when := time.UnixMilli(1767225600000)
	h, err = head.WriteHeadAt(ctx, b, s.ID(), head.SchemaForTest, old.RootHash(), when)
	if err != nil {
		t.Fatal(err)
	}
	if h.Sequence != old.Sequence() || h.Root != old.RootHash().String() || h.Committed != when.UnixMilli() || len(h.Recent) != 0 {
		t.Fatalf("head %+v", h)
	}
	s2, err := head.Open(ctx, b, s.ID(), head.SchemaForTest, head.Options{Check: true, NoGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	rqMustGet(t, rqPin(t, s2), f, 1, rqValue(f, 1, 1))
	r := mustDo(t, s2, rqPut(f, 2, 3))
	if got, want := r.Sequence, old.Sequence()+1; got != want {
		t.Fatalf("commit on the written head at %d, want %d", got, want)
	}
	// A root that is not there: refused, head unchanged.
	var missing [32]byte
	missing[0] = 7
	if _, err := head.WriteHeadAt(ctx, b, s.ID(), head.SchemaForTest, missing, when); !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("missing root: %v", err)
	}
}

// A commit that lands between the restore's staging and its head write
// makes it lose the race: it builds again over the new head, which
// becomes its parent, and the commit stays in the history.
func TestRestoreRootRebuildsAfterALostRace(t *testing.T) {
	ctx := context.Background()
	s, b := restoreStore(t)
	f := rqFamilies[0]
	mustDo(t, s, rqPut(f, 1, 1))
	kept := rqPin(t, s)
	mustDo(t, s, rqPut(f, 1, 2))
	other, err := head.Open(ctx, b, s.ID(), head.SchemaForTest, head.Options{NoGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	guards := 0
	var racing head.Result
	guard := func(context.Context, time.Time) error {
		guards++
		if guards == 1 {
			racing = mustDo(t, other, rqPut(f, 2, 3))
		}
		return nil
	}
	sn, committed, err := s.RestoreRoot(ctx, kept.RootHash(), head.RestoreOptions{Guard: guard})
	if err != nil || !committed {
		t.Fatalf("restore: committed %v, %v", committed, err)
	}
	if guards != 2 {
		t.Fatalf("guard ran %d times, want 2 (one per attempt)", guards)
	}
	if got, want := sn.Sequence(), racing.Sequence+1; got != want {
		t.Fatalf("restored at %d, want %d, after the racing commit", got, want)
	}
	parent, err := s.At(ctx, sn.Root().Parent)
	if err != nil {
		t.Fatal(err)
	}
	if parent.Sequence() != racing.Sequence {
		t.Fatalf("parent at %d, want the racing commit's %d", parent.Sequence(), racing.Sequence)
	}
	rqMustGet(t, parent, f, 2, rqValue(f, 2, 3))
	cur := rqPin(t, s)
	rqMustGet(t, cur, f, 1, rqValue(f, 1, 1))
	if _, ok, err := cur.Get(ctx, f, rqKey(f, 2)); err != nil || ok {
		t.Fatalf("record 2 after restore: %v %v, want absent", ok, err)
	}
}

// A kept root whose objects are gone is refused before anything is
// written, unless the caller says it verified them.
func TestRestoreRootRefusesADamagedState(t *testing.T) {
	ctx := context.Background()
	s, b := restoreStore(t)
	f := rqFamilies[0]
	mustDo(t, s, rqPut(f, 1, 1))
	kept := rqPin(t, s)
	mustDo(t, s, rqPut(f, 1, 2))
	before := rqPin(t, s)
	var gone string
	switch r := kept.Root(); {
	case len(r.Deltas) > 0:
		gone = s.Layout().Delta(r.Deltas[0].Ref.Hash)
	case len(r.Families) > 0:
		gone = s.Layout().Table(r.Families[0].Table.Hash)
	default:
		t.Fatal("the kept root references nothing")
	}
	if err := b.Delete(ctx, gone, bucket.Unconditional); err != nil {
		t.Fatal(err)
	}
	fresh, err := head.Open(ctx, b, s.ID(), head.SchemaForTest, head.Options{NoGroupCommit: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, _, err := fresh.RestoreRoot(ctx, kept.RootHash(), head.RestoreOptions{}); !errors.Is(err, head.ErrKeptDamaged) || !errors.Is(err, bucket.ErrNotExist) {
		t.Fatalf("restore of a damaged root: %v, want ErrKeptDamaged", err)
	}
	if got := rqPin(t, fresh); got.RootHash() != before.RootHash() {
		t.Fatalf("head moved to %d", got.Sequence())
	}
}

// KeepCurrent: the named families keep their current records, and the
// holds stay the current root's; everything else comes back.
func TestRestoreRootKeepsCurrentFamilies(t *testing.T) {
	ctx := context.Background()
	s, _ := restoreStore(t)
	f, g := rqFamilies[0], rqFamilies[1]
	mustDo(t, s, rqPut(f, 1, 1))
	mustDo(t, s, rqPut(g, 1, 1))
	mustDo(t, s, rqPut(g, 3, 1))
	mustDo(t, s, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		return nil, tx.Hold("ended", tx.Snapshot().RootHash())
	}})
	kept := rqPin(t, s)

	mustDo(t, s, rqPut(f, 1, 2))
	mustDo(t, s, rqPut(g, 1, 2))
	mustDo(t, s, rqPut(g, 2, 2))
	mustDo(t, s, head.Command{Apply: func(tx *head.Tx) ([]byte, error) {
		tx.Release("ended")
		if err := tx.Delete(g, rqKey(g, 3)); err != nil {
			return nil, err
		}
		return nil, tx.Hold("later", tx.Snapshot().RootHash())
	}})
	before := rqPin(t, s)
	keep := head.RestoreOptions{KeepCurrent: []shards.Family{g}}
	sn, committed, err := s.RestoreRoot(ctx, kept.RootHash(), keep)
	if err != nil || !committed {
		t.Fatalf("restore: %v %v", committed, err)
	}
	cur := rqPin(t, s)
	rqMustGet(t, cur, f, 1, rqValue(f, 1, 1)) // restored
	rqMustGet(t, cur, g, 1, rqValue(g, 1, 2)) // kept current
	rqMustGet(t, cur, g, 2, rqValue(g, 2, 2))
	if _, ok, err := cur.Get(ctx, g, rqKey(g, 3)); err != nil || ok {
		t.Fatalf("g/3, deleted since the kept root: %v %v, want absent", ok, err)
	}
	if got, want := cur.Root().Holds, before.Root().Holds; len(got) != 1 || got[0] != want[len(want)-1] || got[0].Owner != "later" {
		t.Fatalf("holds %v, want the current root's %v", got, want)
	}
	if sn.Sequence() != before.Sequence()+1 {
		t.Fatalf("sequence %d", sn.Sequence())
	}
	// Again: nothing to do. And after a commit that changes only a kept
	// family, still nothing.
	if _, committed, err := s.RestoreRoot(ctx, kept.RootHash(), keep); err != nil || committed {
		t.Fatalf("second restore: %v %v", committed, err)
	}
	mustDo(t, s, rqPut(g, 4, 4))
	if _, committed, err := s.RestoreRoot(ctx, kept.RootHash(), keep); err != nil || committed {
		t.Fatalf("restore after a kept family changed: %v %v", committed, err)
	}
	// A change to a restored family makes the restore commit again.
	mustDo(t, s, rqPut(f, 1, 5))
	if _, committed, err := s.RestoreRoot(ctx, kept.RootHash(), keep); err != nil || !committed {
		t.Fatalf("restore after a restored family changed: %v %v", committed, err)
	}
	cur = rqPin(t, s)
	rqMustGet(t, cur, f, 1, rqValue(f, 1, 1))
	rqMustGet(t, cur, g, 4, rqValue(g, 4, 4))
	// The engine's own families cannot be kept.
	if _, _, err := s.RestoreRoot(ctx, kept.RootHash(), head.RestoreOptions{KeepCurrent: []shards.Family{shards.CommandDedupe}}); err == nil {
		t.Fatal("keeping command_dedupe current was accepted")
	}
}
