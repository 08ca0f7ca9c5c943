package bucket_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cairnstore/cairn/bucket"
)

func TestSleep(t *testing.T) {
	ctx := context.Background()
	start := time.Now()
	if err := bucket.Sleep(ctx, 2*time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v, want nil", err)
	}
	if got, want := time.Since(start), 2*time.Millisecond; got < want {
		t.Fatalf("Sleep returned after %v, want at least %v", got, want)
	}
	if err := bucket.Sleep(ctx, 0); err != nil {
		t.Fatalf("Sleep(0) = %v, want nil", err)
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := bucket.Sleep(done, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(ended ctx, 1h) = %v, want context.Canceled", err)
	}
	if err := bucket.Sleep(done, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep(ended ctx, 0) = %v, want context.Canceled", err)
	}
	soon, cancel := context.WithTimeout(ctx, time.Millisecond)
	defer cancel()
	if err := bucket.Sleep(soon, time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Sleep(ctx ending during the wait) = %v, want DeadlineExceeded", err)
	}
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{bucket.ErrUnavailable, true},
		{bucket.ErrThrottled, true},
		{bucket.ErrAmbiguous, true},
		{bucket.ErrIntegrity, true},
		{fmt.Errorf("s3: put %q: %w: %w", "k", bucket.ErrThrottled, errors.New("SlowDown")), true},
		{bucket.ErrNotExist, false},
		{bucket.ErrPrecondition, false},
		{bucket.ErrInvalidKey, false},
		{bucket.ErrUnsupported, false},
		{context.Canceled, false},
		{errors.New("other"), false},
	} {
		if got := bucket.Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestPermanent(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{bucket.ErrDenied, true},
		{bucket.ErrNoSpace, true},
		{bucket.ErrNoBucket, true},
		{bucket.ErrInvalidKey, true},
		{bucket.ErrUnsupported, true},
		{fmt.Errorf("file: put %q: %w: %w", "k", bucket.ErrNoSpace, errors.New("no space left on device")), true},
		{bucket.ErrUnavailable, false},
		{bucket.ErrThrottled, false},
		{bucket.ErrAmbiguous, false},
		{bucket.ErrIntegrity, false},
		{bucket.ErrNotExist, false},
		{bucket.ErrPrecondition, false},
		{context.Canceled, false},
		{errors.New("other"), false},
	} {
		if got := bucket.Permanent(c.err); got != c.want {
			t.Errorf("Permanent(%v) = %v, want %v", c.err, got, c.want)
		}
		if bucket.Permanent(c.err) && bucket.Transient(c.err) {
			t.Errorf("%v is both permanent and transient", c.err)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	p := bucket.RetryPolicy{Base: time.Millisecond, Max: 5 * time.Millisecond, ThrottleWait: time.Second}
	for _, c := range []struct {
		n        int
		err      error
		min, max time.Duration // min <= d < max
	}{
		{0, bucket.ErrUnavailable, 0, time.Millisecond},
		{1, bucket.ErrUnavailable, 0, 2 * time.Millisecond},
		{2, bucket.ErrAmbiguous, 0, 4 * time.Millisecond},
		{3, bucket.ErrAmbiguous, 0, 5 * time.Millisecond},
		{1000, bucket.ErrAmbiguous, 0, 5 * time.Millisecond},
		{0, bucket.ErrThrottled, time.Second, 2 * time.Second},
		{9, fmt.Errorf("wrapped: %w", bucket.ErrThrottled), time.Second, 2 * time.Second},
	} {
		for range 200 {
			if d := p.Backoff(c.n, c.err); d < c.min || d >= c.max {
				t.Fatalf("Backoff(%d, %v) = %v, want in [%v, %v)", c.n, c.err, d, c.min, c.max)
			}
		}
	}
	huge := bucket.RetryPolicy{Base: time.Hour}
	for _, n := range []int{0, 40, 70, 1000} {
		if d := huge.Backoff(n, bucket.ErrUnavailable); d < 0 {
			t.Fatalf("uncapped Backoff(%d) = %v, want no overflow", n, d)
		}
	}
	if got, want := (bucket.RetryPolicy{}).Backoff(3, bucket.ErrThrottled), time.Duration(0); got != want {
		t.Fatalf("zero policy Backoff = %v, want %v", got, want)
	}
}

// script returns an op that fails with errs in turn and then succeeds, and
// a count of its calls.
func script(errs ...error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func TestRetry(t *testing.T) {
	fast := bucket.RetryPolicy{Attempts: 4, Base: time.Microsecond, Max: 10 * time.Microsecond, ThrottleWait: time.Microsecond}
	for _, c := range []struct {
		name      string
		p         bucket.RetryPolicy
		errs      []error
		want      error // nil: success
		wantCalls int
	}{
		{"first try lands", fast, nil, nil, 1},
		{"transient then success", fast, []error{bucket.ErrUnavailable, bucket.ErrAmbiguous, bucket.ErrThrottled}, nil, 4},
		{"integrity is retried", fast, []error{bucket.ErrIntegrity}, nil, 2},
		{"gives up after Attempts", fast, []error{bucket.ErrUnavailable, bucket.ErrUnavailable, bucket.ErrUnavailable, bucket.ErrAmbiguous}, bucket.ErrAmbiguous, 4},
		{"permanent error stops at once", fast, []error{bucket.ErrUnavailable, bucket.ErrPrecondition}, bucket.ErrPrecondition, 2},
		{"no Attempts means one try", bucket.RetryPolicy{}, []error{bucket.ErrUnavailable}, bucket.ErrUnavailable, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			op, calls := script(c.errs...)
			err := bucket.Retry(context.Background(), c.p, op)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Retry = %v, want %v", err, c.want)
			}
			if got, want := *calls, c.wantCalls; got != want {
				t.Fatalf("calls = %d, want %d", got, want)
			}
		})
	}
}

func TestRetryHonoursThrottling(t *testing.T) {
	p := bucket.RetryPolicy{Attempts: 2, Base: time.Microsecond, ThrottleWait: 20 * time.Millisecond}
	op, calls := script(bucket.ErrThrottled)
	start := time.Now()
	if err := bucket.Retry(context.Background(), p, op); err != nil {
		t.Fatalf("Retry = %v, want nil", err)
	}
	if got, want := time.Since(start), p.ThrottleWait; got < want {
		t.Fatalf("retried a throttled request after %v, want at least %v", got, want)
	}
	if got, want := *calls, 2; got != want {
		t.Fatalf("calls = %d, want %d", got, want)
	}
}

func TestRetryStopsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	p := bucket.RetryPolicy{Attempts: 5, Base: time.Hour, ThrottleWait: time.Hour}
	calls := 0
	err := bucket.Retry(ctx, p, func(context.Context) error {
		calls++
		cancel()
		return bucket.ErrUnavailable
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, bucket.ErrUnavailable) {
		t.Fatalf("Retry = %v, want context.Canceled wrapping the last ErrUnavailable", err)
	}
	if got, want := calls, 1; got != want {
		t.Fatalf("calls = %d, want %d", got, want)
	}
}
