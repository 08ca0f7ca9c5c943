package gcsweep

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
)

// Creating and deleting pins. Reading them is pins.go's.

// PinName returns the default name of a pin of sequence seq made at now:
// the time in Unix milliseconds (13 digits until the year 2286, so names
// sort by time) and the sequence, "1767225600000-42".
func PinName(now time.Time, seq uint64) string {
	return fmt.Sprintf("%013d-%d", now.UnixMilli(), seq)
}

// ErrNothingToPin: the shard has no committed state to pin: it was never
// written, or its head is a genesis head (its first write stopped before
// its first commit). Nothing was written.
var ErrNothingToPin = errors.New("gcsweep: nothing to pin: the shard holds no commit")

// PinHead pins the current head of store: it reads the head and creates
// the pin called name (PinName when name is empty) naming its root. A
// shard without a commit is ErrNothingToPin; one whose head is lost while
// objects remain is head.ErrNoHead.
//
// The root is kept from the moment the pin is stored. A sweep that
// listed the pins before that read a head no newer than the one read
// just after the store (H_q, of store time T_q), and keeps every root
// that may have been the head at or after its horizon, at the latest
// T_q − G: the pinned root was the head until after its own head's store
// time T_p. So the pin is safe when T_p ≥ T_q − G/2 (the margin of the
// floor, head/horizon.go). A process paused longer than that between
// its read of the head and the store of the pin deletes the pin it
// stored and pins anew (a named pin is then refused as taken only if
// another process made it).
func PinHead(ctx context.Context, store *head.Store, name, note string, now time.Time) (Pin, error) {
	for try := 0; ; try++ {
		p, ok, err := pinOnce(ctx, store, name, note, now)
		if err != nil || ok {
			return p, err
		}
		if try == 3 {
			return Pin{}, fmt.Errorf("gcsweep: pin: %w: each try took longer than half the grace period between its read of the head and its store of the pin", head.ErrRetryable)
		}
	}
}

// pinOnce makes one try of PinHead; ok is false, with the pin deleted,
// when it took too long to be safe.
func pinOnce(ctx context.Context, store *head.Store, name, note string, now time.Time) (Pin, bool, error) {
	sn, err := store.PinOrEmpty(ctx)
	if err != nil {
		return Pin{}, false, fmt.Errorf("gcsweep: pin: read head: %w", err)
	}
	if sn.Empty() {
		return Pin{}, false, fmt.Errorf("%w: shard %s", ErrNothingToPin, store.ID())
	}
	if name == "" {
		name = PinName(now, sn.Sequence())
	}
	p, err := NewPin(store.Layout(), name, sn.Sequence(), sn.RootHash(), now, note)
	if err != nil {
		return Pin{}, false, err
	}
	if err := CreatePin(ctx, store.Bucket(), store.Layout(), p); err != nil {
		return Pin{}, false, err
	}
	after, err := store.Pin(ctx)
	if err != nil {
		return Pin{}, false, fmt.Errorf("gcsweep: pin %s: read the head after storing it: %w", p.Name, err)
	}
	g, err := sn.Grace(ctx)
	if err != nil {
		return Pin{}, false, err
	}
	ga, err := after.Grace(ctx)
	if err != nil {
		return Pin{}, false, err
	}
	g = min(g, ga)
	tp, tq := sn.StoreTime(), after.StoreTime()
	if tp.IsZero() || tq.IsZero() || !tp.Before(tq.Add(-g/2)) {
		return p, true, nil
	}
	if err := DeletePin(ctx, store.Bucket(), store.Layout(), p.Name); err != nil {
		return Pin{}, false, err
	}
	return Pin{}, false, nil
}

// CreatePin stores p under its name, create-only: an existing pin of that
// name is ErrPinExists and stays as it was. A write whose answer was lost
// is settled by reading the pin back: the same bytes mean it landed.
func CreatePin(ctx context.Context, b bucket.Bucket, layout shards.Layout, p Pin) error {
	if p.Shard != layout.ID().String() {
		return fmt.Errorf("%w: %s names shard %s, want %s", ErrBadPin, p.Name, p.Shard, layout.ID())
	}
	key, err := layout.Pin(p.Name)
	if err != nil {
		return err
	}
	body, err := EncodePin(p)
	if err != nil {
		return err
	}
	_, err = b.Put(ctx, key, body, bucket.IfAbsent())
	if err == nil {
		return nil
	}
	if !errors.Is(err, bucket.ErrPrecondition) && !errors.Is(err, bucket.ErrAmbiguous) {
		return fmt.Errorf("gcsweep: create pin %s: %w", p.Name, err)
	}
	got, _, gerr := b.Get(ctx, key)
	switch {
	case gerr == nil && bytes.Equal(got, body):
		return nil // ours, or an identical one
	case gerr == nil:
		return fmt.Errorf("%w: %s", ErrPinExists, p.Name)
	default:
		return fmt.Errorf("gcsweep: create pin %s: %w (read back: %w)", p.Name, err, gerr)
	}
}

// DeletePin removes the pin called name; a missing one is ErrPinNotFound.
// What only it kept becomes garbage for the next sweep.
func DeletePin(ctx context.Context, b bucket.Bucket, layout shards.Layout, name string) error {
	key, err := layout.Pin(name)
	if err != nil {
		return err
	}
	if _, err := b.Stat(ctx, key); err != nil {
		if errors.Is(err, bucket.ErrNotExist) {
			return fmt.Errorf("%w: %s", ErrPinNotFound, name)
		}
		return fmt.Errorf("gcsweep: delete pin %s: %w", name, err)
	}
	if err := b.Delete(ctx, key, bucket.Unconditional); err != nil {
		return fmt.Errorf("gcsweep: delete pin %s: %w", name, err)
	}
	return nil
}
