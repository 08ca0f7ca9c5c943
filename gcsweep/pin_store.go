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
// the pin called name (PinName when name is empty) naming its root. The
// root is kept from the moment the pin is stored; a sweep that marked
// before that already kept it as the current root, or as one committed
// within its grace window. A shard without a commit is ErrNothingToPin;
// one whose head is lost while objects remain is head.ErrNoHead.
func PinHead(ctx context.Context, store *head.Store, name, note string, now time.Time) (Pin, error) {
	sn, err := store.PinOrEmpty(ctx)
	if err != nil {
		return Pin{}, fmt.Errorf("gcsweep: pin: read head: %w", err)
	}
	if sn.Empty() {
		return Pin{}, fmt.Errorf("%w: shard %s", ErrNothingToPin, store.ID())
	}
	if name == "" {
		name = PinName(now, sn.Sequence())
	}
	p, err := NewPin(store.Layout(), name, sn.Sequence(), sn.RootHash(), now, note)
	if err != nil {
		return Pin{}, err
	}
	if err := CreatePin(ctx, store.Bucket(), store.Layout(), p); err != nil {
		return Pin{}, err
	}
	return p, nil
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
