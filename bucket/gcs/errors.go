package gcs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"cloud.google.com/go/storage"
	"github.com/cairnstore/cairn/bucket"
	"github.com/googleapis/gax-go/v2/apierror"
	"google.golang.org/api/googleapi"
)

// httpStatus returns the HTTP status a client error carries, or 0.
func httpStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Code != 0 {
		return ge.Code
	}
	var ae *apierror.APIError
	if errors.As(err, &ae) && ae.HTTPCode() > 0 {
		return ae.HTTPCode()
	}
	return 0
}

// notFound reports whether err says the object (or bucket) is missing.
func notFound(err error) bool {
	return errors.Is(err, storage.ErrObjectNotExist) || httpStatus(err) == http.StatusNotFound
}

// neverSent reports whether err is a failure to open a connection: the
// request cannot have reached the server.
func neverSent(err error) bool {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return true
	}
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.Is(err, syscall.ECONNREFUSED)
}

// transport reports whether err is a failure of the connection or of the
// HTTP exchange rather than an answer from the server.
func transport(err error) bool {
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// classify returns the sentinel a failed call maps to, or nil when none
// fits. write is true for Put and Delete, whose outcome is unknown when
// their answer is lost. A 404 maps to ErrNotExist; callers for whom a
// missing object means something else handle notFound first.
func classify(ctx context.Context, err error, write bool) error {
	lost := bucket.ErrUnavailable
	if write {
		lost = bucket.ErrAmbiguous
	}
	switch code := httpStatus(err); {
	case code == http.StatusPreconditionFailed:
		return bucket.ErrPrecondition
	case code == http.StatusNotFound:
		return bucket.ErrNotExist
	case code == http.StatusTooManyRequests:
		return bucket.ErrThrottled
	case code == http.StatusRequestTimeout || code >= 500:
		return lost
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return bucket.ErrDenied
	case code != 0:
		return nil // a definite refusal: 400, 401, 403, …
	}
	switch {
	case errors.Is(err, storage.ErrObjectNotExist):
		return bucket.ErrNotExist
	case ctx.Err() != nil:
		// The caller gave up; a write may already be on its way.
		if write {
			return bucket.ErrAmbiguous
		}
		return nil
	case neverSent(err):
		return bucket.ErrUnavailable
	case transport(err):
		return lost
	case write:
		// No answer from the server that says what happened.
		return bucket.ErrAmbiguous
	}
	return nil
}

// wrap builds the adapter's error for op on key: the sentinel (if any),
// the caller's context error (if it ended and err does not already say
// so) and the client's original error.
func wrap(ctx context.Context, op, key string, sentinel, err error) error {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w: %w", cerr, err)
	}
	if sentinel == nil {
		return fmt.Errorf("gcs: %s %q: %w", op, key, err)
	}
	return fmt.Errorf("gcs: %s %q: %w: %w", op, key, sentinel, err)
}

// fail classifies and wraps a failed call.
func fail(ctx context.Context, op, key string, write bool, err error) error {
	return wrap(ctx, op, key, classify(ctx, err, write), err)
}
