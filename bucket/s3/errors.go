package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/cairnstore/cairn/bucket"
)

// opKind is what a failed call was doing, which decides what its errors
// mean.
type opKind uint8

const (
	opRead    opKind = iota // Get, Stat, List
	opWrite                 // unconditional Put (the SDK may retry it)
	opDelete                // unconditional Delete (the SDK may retry it)
	opCreate                // Put with If-None-Match: * (one attempt)
	opReplace               // Put or Delete with If-Match (one attempt)
)

func (k opKind) write() bool       { return k != opRead }
func (k opKind) conditional() bool { return k == opCreate || k == opReplace }

// S3 error codes the adapter acts on.
const (
	codePreconditionFailed  = "PreconditionFailed"
	codeConditionalConflict = "ConditionalRequestConflict"
	codeNoSuchKey           = "NoSuchKey"
	codeNotFound            = "NotFound" // HEAD has no body; the SDK names the status
	codeNoSuchBucket        = "NoSuchBucket"
	codeSlowDown            = "SlowDown"
	codeNotImplemented      = "NotImplemented"
	codeBadDigest           = "BadDigest"
)

// classify translates an error from the SDK (or from reading a body) into
// the port's sentinels, keeping err in the chain. It returns nil for an
// unconditional delete of a missing key.
func classify(ctx context.Context, op, key string, kind opKind, err error) error {
	code := ""
	if ae, ok := errors.AsType[smithy.APIError](err); ok {
		code = ae.ErrorCode()
	}
	status := 0
	if re, ok := errors.AsType[*smithyhttp.ResponseError](err); ok {
		status = re.HTTPStatusCode()
	}
	wrap := func(sentinel error, why string) error {
		if why != "" {
			return fmt.Errorf("s3: %s %q: %w: %s: %w", op, key, sentinel, why, err)
		}
		return fmt.Errorf("s3: %s %q: %w: %w", op, key, sentinel, err)
	}
	if status == 0 {
		return noResponse(ctx, op, key, kind, err)
	}
	missing := status == http.StatusNotFound && code != codeNoSuchBucket
	switch {
	case status == http.StatusPreconditionFailed || code == codePreconditionFailed || code == codeConditionalConflict:
		return wrap(bucket.ErrPrecondition, "")
	case missing && kind == opReplace:
		// If-Match on a missing key: AWS answers 404 NoSuchKey.
		return wrap(bucket.ErrPrecondition, "object does not exist")
	case missing && kind == opDelete:
		return nil
	case missing && kind == opRead:
		return wrap(bucket.ErrNotExist, "")
	case code == codeNoSuchBucket:
		return wrap(bucket.ErrNoBucket, "")
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return wrap(bucket.ErrDenied, "")
	case status == http.StatusTooManyRequests || code == codeSlowDown:
		return wrap(bucket.ErrThrottled, "")
	case kind.conditional() && (status == http.StatusNotImplemented || code == codeNotImplemented):
		return wrap(bucket.ErrUnsupported, "the store does not implement conditional writes (If-Match / If-None-Match), which cairn needs")
	case status == http.StatusNotImplemented || code == codeNotImplemented:
		// The store refused a feature of the request and did nothing.
		return wrap(bucket.ErrUnsupported, "")
	case code == codeBadDigest:
		return wrap(bucket.ErrIntegrity, "the store received a body that does not match its Content-MD5")
	case status >= 200 && status < 300 && kind.write():
		// The store accepted the write; its answer could not be read.
		return wrap(bucket.ErrAmbiguous, "")
	case status >= 500 && kind.write():
		return wrap(bucket.ErrAmbiguous, "")
	case status >= 500:
		return wrap(bucket.ErrUnavailable, "")
	}
	return fmt.Errorf("s3: %s %q: %w", op, key, err)
}

// noResponse classifies an error that came with no HTTP response: the
// caller's context ended, the connection failed, or the body could not be
// read.
func noResponse(ctx context.Context, op, key string, kind opKind, err error) error {
	// Keep the caller's cancellation recognisable even if the SDK wrapped
	// it in a type that hides it.
	if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
		err = fmt.Errorf("%w (%w)", err, cerr)
	}
	// A conditional write makes one attempt, so a failure to connect
	// means it never left. An unconditional one may have been retried
	// after an attempt that did.
	dial := false
	if oe, ok := errors.AsType[*net.OpError](err); ok && oe.Op == "dial" {
		dial = true
	}
	if _, ok := errors.AsType[*net.DNSError](err); ok {
		dial = true
	}
	sent := isSendError(err) || ctx.Err() != nil
	switch {
	case !sent:
		// Refused before anything went out: bad parameters, no credentials.
		return fmt.Errorf("s3: %s %q: %w", op, key, err)
	case kind.write() && dial && kind.conditional():
		return fmt.Errorf("s3: %s %q: %w: %w", op, key, bucket.ErrUnavailable, err)
	case kind.write():
		return fmt.Errorf("s3: %s %q: %w: %w", op, key, bucket.ErrAmbiguous, err)
	case ctx.Err() != nil:
		return fmt.Errorf("s3: %s %q: %w", op, key, err)
	}
	return fmt.Errorf("s3: %s %q: %w: %w", op, key, bucket.ErrUnavailable, err)
}

// isSendError reports whether err is a failure to send a request or to
// receive or read its response, as opposed to one the SDK raised before
// sending (bad parameters, missing credentials).
func isSendError(err error) bool {
	if _, ok := errors.AsType[*smithyhttp.RequestSendError](err); ok {
		return true
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return true
	}
	if _, ok := errors.AsType[net.Error](err); ok {
		return true
	}
	return errors.Is(err, io.ErrUnexpectedEOF)
}
