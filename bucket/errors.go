package bucket

import "errors"

// These errors are returned, wrapped, by every Bucket. Test them with
// errors.Is; adapters keep the provider's original error in the chain.
var (
	// ErrNotExist: the object does not exist.
	ErrNotExist = errors.New("object does not exist")

	// ErrPrecondition: a write's or delete's condition did not hold (the
	// object exists on IfAbsent; its version differs, or it is missing, on
	// IfVersion).
	ErrPrecondition = errors.New("precondition failed")

	// ErrThrottled: the store refused the request for its rate (GCS 429, S3
	// 503 SlowDown). The request had no effect; retry after a backoff.
	ErrThrottled = errors.New("throttled")

	// ErrUnavailable: the store could not be reached or failed before the
	// request could take effect. Retrying is safe.
	ErrUnavailable = errors.New("store unavailable")

	// ErrAmbiguous: a write was sent and its outcome is unknown. It may have
	// landed. Callers must find out (by reading) before assuming either.
	ErrAmbiguous = errors.New("write outcome unknown")

	// ErrIntegrity: the bytes read do not match the checksum the store or
	// the caller recorded.
	ErrIntegrity = errors.New("integrity check failed")

	// ErrInvalidKey: the key breaks the key rules; nothing was sent.
	ErrInvalidKey = errors.New("invalid key")

	// ErrUnsupported: the adapter cannot honour what was asked (for example
	// a conditional delete) and did nothing.
	ErrUnsupported = errors.New("not supported by this store")

	// ErrNoBucket: the bucket itself does not exist (a file bucket's
	// directory, an S3 or GCS bucket). Buckets are not created on demand:
	// a mistyped URL must not become a new, empty store.
	ErrNoBucket = errors.New("bucket does not exist")

	// ErrDenied: the store refused the caller: no credentials, credentials
	// it rejects, or no permission for the request. Retrying will not help.
	ErrDenied = errors.New("access denied")

	// ErrNoSpace: the store has no room for the write (a full disk, a
	// quota reached). Nothing was written; retrying will not help until an
	// operator frees space.
	ErrNoSpace = errors.New("no space left in the store")
)
