package bucket

import (
	"context"
	"time"
)

// Bucket is what cairn needs from an object store. Implementations are safe
// for concurrent use. Every method checks its key (ValidateKey) before any
// I/O, honours ctx, and returns zero values beside a non-nil error.
type Bucket interface {
	// Get returns the object's bytes and attributes.
	Get(ctx context.Context, key string) ([]byte, Attrs, error)

	// Stat returns the object's attributes without its body.
	Stat(ctx context.Context, key string) (Attrs, error)

	// Put writes body under key if cond holds and returns the new object's
	// attributes. See Condition.
	Put(ctx context.Context, key string, body []byte, cond Condition) (Attrs, error)

	// Delete removes key. Deleting a missing key is not an error. IfVersion
	// requires Capabilities().ConditionalDelete and fails with
	// ErrPrecondition if the object changed; on a missing key it may
	// succeed or fail with ErrPrecondition (stores differ), and the key
	// stays missing either way. IfAbsent is not a delete condition and is
	// ErrUnsupported.
	Delete(ctx context.Context, key string, cond Condition) error

	// List returns one page of the keys under opts.Prefix in ascending
	// byte order. Pass the page's NextPageToken back to get the next one.
	List(ctx context.Context, opts ListOptions) (ListPage, error)

	// Capabilities says what this adapter can do beyond the port's minimum.
	Capabilities() Capabilities

	// Close releases the adapter's resources.
	Close() error
}

// Version is an opaque token naming one write of one object. Compare it
// only for equality; its text means nothing across adapters.
type Version string

// Attrs are an object's attributes.
type Attrs struct {
	Key     string    // relative to the adapter's prefix
	Size    int64     // bytes
	Version Version   // changes on every write
	ModTime time.Time // the store's own clock, not the writer's
	// Checksum is the store's checksum of the body as "algorithm:hex"
	// (for example "md5:…" or "crc32c:…"), or "" where the store gives
	// none. Only equality across one adapter is meaningful.
	Checksum string
}

// condKind is the kind of a Condition.
type condKind uint8

const (
	condNone condKind = iota
	condAbsent
	condVersion
)

// Condition guards a Put or a Delete. The zero value is Unconditional.
type Condition struct {
	kind    condKind
	version Version
}

// Unconditional writes or deletes whatever is there.
var Unconditional = Condition{}

// IfAbsent succeeds only if no object exists under the key (create-only).
func IfAbsent() Condition { return Condition{kind: condAbsent} }

// IfVersion succeeds only if the object exists with exactly version v
// (replace-if-version).
func IfVersion(v Version) Condition { return Condition{kind: condVersion, version: v} }

// IsUnconditional reports whether c places no condition.
func (c Condition) IsUnconditional() bool { return c.kind == condNone }

// IsAbsent reports whether c is IfAbsent.
func (c Condition) IsAbsent() bool { return c.kind == condAbsent }

// Version returns the version c requires and whether c is IfVersion.
func (c Condition) Version() (Version, bool) { return c.version, c.kind == condVersion }

// String describes c for errors and logs.
func (c Condition) String() string {
	switch c.kind {
	case condAbsent:
		return "if-absent"
	case condVersion:
		return "if-version " + string(c.version)
	}
	return "unconditional"
}

// ListOptions select one page of a listing.
type ListOptions struct {
	// Prefix restricts the listing to keys that start with it.
	Prefix string
	// Delimiter, if non-empty (normally "/"), folds keys that contain it
	// after Prefix into one entry of ListPage.Prefixes, as S3 and GCS do.
	Delimiter string
	// StartAfter lists only keys greater than it. With a Delimiter, a
	// folded prefix that StartAfter falls inside may or may not be listed
	// again (stores differ); callers must not depend on either.
	StartAfter string
	// PageSize bounds the entries (objects plus prefixes) in one page.
	// Zero means DefaultPageSize; more than MaxPageSize is MaxPageSize.
	PageSize int
	// PageToken continues a listing from a previous page's NextPageToken.
	// It is opaque and valid only with the same Prefix and Delimiter.
	PageToken string
}

// Page sizes for List.
const (
	DefaultPageSize = 1000
	MaxPageSize     = 1000
)

// ListPage is one page of a listing.
type ListPage struct {
	Objects  []Attrs  // in ascending key order
	Prefixes []string // folded common prefixes, ascending, each ending in the delimiter
	// NextPageToken is "" on the last page.
	NextPageToken string
}

// Capabilities describe what an adapter can do beyond the port's minimum.
type Capabilities struct {
	// ConditionalDelete: Delete honours IfVersion.
	ConditionalDelete bool
	// SyncsGroupFirst: a Put under WithSyncFirst syncs the group before
	// its object becomes visible (the local-file bucket).
	SyncsGroupFirst bool
	// KnownGaps names port behaviours this store is known not to honour,
	// each with why. The conformance suite prints the reason with the
	// check's outcome and never counts it as a pass; only a behaviour cairn
	// does not rely on can be a known gap. Production adapters against real stores have none.
	KnownGaps map[string]string
}

// PageSize returns the effective page size for a requested size n.
func PageSize(n int) int {
	switch {
	case n <= 0:
		return DefaultPageSize
	case n > MaxPageSize:
		return MaxPageSize
	}
	return n
}

// TempRemover is implemented by adapters that write through temporary
// files (the file adapter): RemoveTemps removes those last modified more
// than olderThan ago, left by writes whose process died, and returns how
// many it removed (with dryRun, how many it would remove). `cairn gc`
// calls it with its grace period. Wrappers do not forward it: callers
// type-assert the adapter they opened.
type TempRemover interface {
	RemoveTemps(ctx context.Context, olderThan time.Duration, dryRun bool) (int, error)
}
