package head_test

import (
	"context"
	"errors"
	"testing"

	"github.com/cairnstore/cairn/bucket/mem"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// Command.At: a command that brings the snapshot its caller observed
// skips the head read on its first attempt; the conditional head write
// validates that snapshot, and a stale one rebuilds from a fresh pin.

func TestCommandAtSkipsThePin(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []head.Options{{}, {NoGroupCommit: true}} {
		store := mem.NewStore()
		w := newRQReplica(t, store, shards.NewShardID(), opts)
		rqFill(t, w.s, rqFamilies[:1], 100)
		if _, err := w.s.Do(ctx, rqPut(rqFamilies[0], 1, 1)); err != nil { // warm
			t.Fatal(err)
		}
		sn := rqPin(t, w.s)
		w.reset()
		cmd := rqPut(rqFamilies[0], 2, 1)
		cmd.At = sn
		res, err := w.s.Do(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := res.Sequence, sn.Sequence()+1; got != want {
			t.Fatalf("sequence %d, want %d", got, want)
		}
		st := w.cb.Snapshot()
		// No head GET: the delta segment and the root, then the head.
		if st.Get.Requests != 0 || st.Put.Requests != 3 || st.Total().Requests != 3 {
			t.Fatalf("group commit %v: %+v, want 3 PUTs and no GET", !opts.NoGroupCommit, st)
		}
	}
}

func TestCommandAtStaleSnapshotRebuilds(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	id := shards.NewShardID()
	a := newRQReplica(t, store, id, head.Options{})
	b := newRQReplica(t, store, id, head.Options{})
	f := rqFamilies[0]
	rqFill(t, a.s, []shards.Family{f}, 10)
	stale := rqPin(t, a.s)
	// Another replica moves the head past the observed snapshot.
	if _, err := b.s.Do(ctx, rqPut(f, 3, 7)); err != nil {
		t.Fatal(err)
	}
	// The command reads key 3 and writes what it read to key 4: built on
	// the stale snapshot it would copy the old value, so only a rebuild
	// at a fresh pin can land.
	cmd := head.Command{At: stale, Apply: func(tx *head.Tx) ([]byte, error) {
		v, ok, err := tx.Get(f, rqKey(f, 3))
		if err != nil || !ok {
			return nil, errors.Join(err, errors.New("key 3 missing"))
		}
		return v, tx.Put(f, rqKey(f, 4), v)
	}}
	res, err := a.s.Do(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Value), string(rqValue(f, 3, 7)); got != want {
		t.Fatalf("the command read %q, want the newer %q", got, want)
	}
	if got, want := res.Sequence, stale.Sequence()+2; got != want {
		t.Fatalf("sequence %d, want %d", got, want)
	}
	v, ok, err := rqPin(t, a.s).Get(ctx, f, rqKey(f, 4))
	if err != nil || !ok || string(v) != string(rqValue(f, 3, 7)) {
		t.Fatalf("key 4 = %q %v %v", v, ok, err)
	}
}

// A command that writes nothing has no head write to validate the
// snapshot it brought, so its outcome is decided at a fresh pin.
func TestCommandAtReadOnlyPinsAgain(t *testing.T) {
	ctx := context.Background()
	store := mem.NewStore()
	id := shards.NewShardID()
	a := newRQReplica(t, store, id, head.Options{})
	b := newRQReplica(t, store, id, head.Options{})
	f := rqFamilies[0]
	rqFill(t, a.s, []shards.Family{f}, 10)
	stale := rqPin(t, a.s)
	if _, err := b.s.Do(ctx, rqPut(f, 3, 7)); err != nil {
		t.Fatal(err)
	}
	res, err := a.s.Do(ctx, head.Command{At: stale, Apply: func(tx *head.Tx) ([]byte, error) {
		v, _, err := tx.Get(f, rqKey(f, 3))
		return v, err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(res.Value), string(rqValue(f, 3, 7)); got != want {
		t.Fatalf("read-only command saw %q, want the current %q", got, want)
	}
}
