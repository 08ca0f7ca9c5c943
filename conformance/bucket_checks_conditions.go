package conformance

// Bucket checks of conditional writes: create-only and replace-if-version,
// alone and raced by concurrent writers.

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cairnstore/cairn/bucket"
)

func checkCreateOnlyTwice(ctx context.Context, b bucket.Bucket) error {
	a, err := b.Put(ctx, "c", []byte("first"), bucket.IfAbsent())
	if err != nil {
		return fmt.Errorf("first create-only: %w", err)
	}
	_, err = b.Put(ctx, "c", []byte("second"), bucket.IfAbsent())
	if err := wantErr("second create-only", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	g, err := wantBody(ctx, b, "c", "first")
	if err != nil {
		return err
	}
	if g.Version != a.Version {
		return fmt.Errorf("version changed from %q to %q by a failed write", a.Version, g.Version)
	}
	return nil
}

func checkReplaceIfVersion(ctx context.Context, b bucket.Bucket) error {
	a1, err := put(ctx, b, "r", "v1")
	if err != nil {
		return err
	}
	a2, err := b.Put(ctx, "r", []byte("v2"), bucket.IfVersion(a1.Version))
	if err != nil {
		return fmt.Errorf("replace with current version: %w", err)
	}
	if a2.Version == a1.Version {
		return fmt.Errorf("replace kept version %q", a1.Version)
	}
	_, err = b.Put(ctx, "r", []byte("v3"), bucket.IfVersion(a1.Version))
	if err := wantErr("replace with stale version", err, bucket.ErrPrecondition); err != nil {
		return err
	}
	g, err := wantBody(ctx, b, "r", "v2")
	if err != nil {
		return err
	}
	if g.Version != a2.Version {
		return fmt.Errorf("version %q after a failed replace, want %q", g.Version, a2.Version)
	}
	return nil
}

const racers = 20

// race runs n writers released together and returns each one's error and
// the attributes of its write.
func race(n int, write func(i int) (bucket.Attrs, error)) ([]bucket.Attrs, []error) {
	attrs := make([]bucket.Attrs, n)
	errs := make([]error, n)
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			attrs[i], errs[i] = write(i)
		}()
	}
	start.Done()
	done.Wait()
	return attrs, errs
}

// oneWinner checks that exactly one writer won, every other failed with
// ErrPrecondition, and the stored object is the winner's.
func oneWinner(ctx context.Context, b bucket.Bucket, key string, attrs []bucket.Attrs, errs []error, body func(i int) string) error {
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil && winner >= 0:
			return fmt.Errorf("writers %d and %d both won", winner, i)
		case err == nil:
			winner = i
		case !errors.Is(err, bucket.ErrPrecondition):
			return fmt.Errorf("writer %d lost with %v, want ErrPrecondition", i, err)
		}
	}
	if winner < 0 {
		return errors.New("no writer won")
	}
	g, err := wantBody(ctx, b, key, body(winner))
	if err != nil {
		return fmt.Errorf("stored object is not the winner's: %w", err)
	}
	if g.Version != attrs[winner].Version {
		return fmt.Errorf("stored version %q, winner wrote %q", g.Version, attrs[winner].Version)
	}
	return nil
}

func checkConcurrentCreate(ctx context.Context, b bucket.Bucket) error {
	for round := range 3 {
		key := fmt.Sprintf("race/create/%d", round)
		body := func(i int) string { return fmt.Sprintf("writer %d round %d", i, round) }
		attrs, errs := race(racers, func(i int) (bucket.Attrs, error) {
			return b.Put(ctx, key, []byte(body(i)), bucket.IfAbsent())
		})
		if err := oneWinner(ctx, b, key, attrs, errs, body); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return nil
}

func checkConcurrentReplace(ctx context.Context, b bucket.Bucket) error {
	key := "race/replace"
	for round := range 3 {
		base, err := put(ctx, b, key, fmt.Sprintf("base %d", round))
		if err != nil {
			return err
		}
		body := func(i int) string { return fmt.Sprintf("writer %d round %d", i, round) }
		attrs, errs := race(racers, func(i int) (bucket.Attrs, error) {
			return b.Put(ctx, key, []byte(body(i)), bucket.IfVersion(base.Version))
		})
		if err := oneWinner(ctx, b, key, attrs, errs, body); err != nil {
			return fmt.Errorf("round %d: %w", round, err)
		}
	}
	return nil
}
