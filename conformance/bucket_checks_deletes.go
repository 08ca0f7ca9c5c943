package conformance

// Bucket checks of deletes: recreating a deleted key, and conditional
// deletes.

import (
	"context"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/bucket"
)

func checkDeleteRecreate(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "d", "before")
	if err != nil {
		return err
	}
	if err := b.Delete(ctx, "d", bucket.Unconditional); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if _, _, err := b.Get(ctx, "d"); !errors.Is(err, bucket.ErrNotExist) {
		return fmt.Errorf("get after delete: %v, want ErrNotExist", err)
	}
	a2, err := b.Put(ctx, "d", []byte("after"), bucket.IfAbsent())
	if err != nil {
		return fmt.Errorf("recreate create-only: %w", err)
	}
	if a2.Version == a1.Version {
		return fmt.Errorf("recreated object reuses version %q", a1.Version)
	}
	_, err = b.Put(ctx, "d", []byte("stale"), bucket.IfVersion(a1.Version))
	if err := wantErr("replace with the deleted object's version", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	_, err = wantBody(ctx, b, "d", "after")
	return err
}

func checkConditionalDelete(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "cd", "one")
	if err != nil {
		return err
	}
	a2, err := put(ctx, b, "cd", "two")
	if err != nil {
		return err
	}
	if !b.Capabilities().ConditionalDelete {
		err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version))
		if err := wantErr("conditional delete without the capability", err, bucket.ErrUnsupported); err != nil {
			return err
		}
		if _, err := wantBody(ctx, b, "cd", "two"); err != nil {
			return fmt.Errorf("refused conditional delete changed the object: %w", err)
		}
		return errors.New("adapter reports no conditional delete (refused cleanly)")
	}
	err = b.Delete(ctx, "cd", bucket.IfVersion(a1.Version))
	if err := wantErr("delete with stale version", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	if _, err := wantBody(ctx, b, "cd", "two"); err != nil {
		return fmt.Errorf("after a refused conditional delete: %w", err)
	}
	if err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version)); err != nil {
		return fmt.Errorf("delete with current version: %w", err)
	}
	if err := wantMissing(ctx, b, "cd"); err != nil {
		return err
	}
	// A conditional delete of a missing key leaves it missing; stores answer
	// it with success or a precondition failure, and the port allows both.
	if err := b.Delete(ctx, "cd", bucket.IfVersion(a2.Version)); err != nil && !errors.Is(err, bucket.ErrPrecondition) {
		return fmt.Errorf("conditional delete of a missing key: %w", err)
	}
	return wantMissing(ctx, b, "cd")
}
