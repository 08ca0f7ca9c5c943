package bucket

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Sleep waits d or until ctx ends, whichever comes first. It returns nil
// after d and ctx.Err() if ctx ended first; a d of zero or less returns
// ctx.Err() at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Transient reports whether err may go away if the same request is sent
// again: the store was unavailable (ErrUnavailable) or throttled
// (ErrThrottled), the outcome of a write is unknown (ErrAmbiguous), or the
// bytes did not match their checksum (ErrIntegrity: damaged in transit, or
// refused by the store on upload).
//
// Transient says nothing about whether sending it again is safe. It is for
// reads and for writes whose repeat cannot make things worse: a create-only
// or content-addressed write of fixed bytes. A conditional write of a
// mutable object that ended ErrAmbiguous may have landed, and must be
// settled by reading before it is sent again. An object that is damaged at
// rest stays damaged; a bounded retry gives up on it.
func Transient(err error) bool {
	return errors.Is(err, ErrUnavailable) || errors.Is(err, ErrThrottled) ||
		errors.Is(err, ErrAmbiguous) || errors.Is(err, ErrIntegrity)
}

// Permanent reports whether err says the store refused a request for a
// reason another try cannot change, and that the request took no effect:
// the caller was denied (ErrDenied), the store is full (ErrNoSpace), the
// bucket does not exist (ErrNoBucket), the key is refused
// (ErrInvalidKey) or the adapter cannot do what was asked
// (ErrUnsupported). Such an error ends a request at once, is never
// retried, and a write it ends did not happen, conditional or not.
func Permanent(err error) bool {
	return errors.Is(err, ErrDenied) || errors.Is(err, ErrNoSpace) || errors.Is(err, ErrNoBucket) ||
		errors.Is(err, ErrInvalidKey) || errors.Is(err, ErrUnsupported)
}

// RetryPolicy bounds the retries of one request and spaces them with
// jittered exponential backoff that honours throttling.
type RetryPolicy struct {
	// Attempts is the number of tries in all, the first included. Less
	// than one means one.
	Attempts int
	// Base bounds the wait after the first failed try; the bound doubles
	// after each further one. The wait is drawn uniformly below the bound
	// ("full jitter"), so that retrying writers spread out.
	Base time.Duration
	// Max caps the bound. Zero means no cap.
	Max time.Duration
	// ThrottleWait replaces the backoff after ErrThrottled: the wait is
	// ThrottleWait plus up to ThrottleWait of jitter, the store's pace for
	// one object (GCS: one write a second).
	ThrottleWait time.Duration
}

// Backoff returns how long to wait after failed try n (0 for the first)
// that ended in err.
func (p RetryPolicy) Backoff(n int, err error) time.Duration {
	if errors.Is(err, ErrThrottled) && p.ThrottleWait > 0 {
		return p.ThrottleWait + jitter(p.ThrottleWait)
	}
	bound := p.Base
	for i := 0; i < n && bound > 0 && bound <= math.MaxInt64/2 && (p.Max <= 0 || bound < p.Max); i++ {
		bound *= 2
	}
	if p.Max > 0 && bound > p.Max {
		bound = p.Max
	}
	return jitter(bound)
}

// Wait sleeps Backoff(n, err) or until ctx ends, as Sleep does. Loops that
// do more than repeat one request (re-reading, rebuilding) space their
// tries with it.
func (p RetryPolicy) Wait(ctx context.Context, n int, err error) error {
	return Sleep(ctx, p.Backoff(n, err))
}

// jitter returns a random duration in [0, d).
func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(d)))
}

// Retry calls op until it returns nil or an error that is not Transient,
// at most p.Attempts times, waiting p.Backoff between tries. It returns
// op's last error; if ctx ends while waiting, an error wrapping both ctx's
// error and op's last one.
//
// op must be safe to repeat after ErrAmbiguous: reads, and writes of
// immutable objects (create-only or content-addressed, fixed bytes). See
// Transient.
func Retry(ctx context.Context, p RetryPolicy, op func(context.Context) error) error {
	for n := 0; ; n++ {
		err := op(ctx)
		if err == nil || !Transient(err) || n+1 >= p.Attempts {
			return err
		}
		if werr := p.Wait(ctx, n, err); werr != nil {
			return fmt.Errorf("bucket: retry: %w (after %d tries, the last: %w)", werr, n+1, err)
		}
	}
}
