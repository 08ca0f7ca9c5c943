package shards

import (
	"errors"
	"fmt"
)

// ErrFormatVersion is wrapped by every decoder of cairn's formats (shard
// objects, page indexes, delta segments, tables, roots, heads, record
// values) when the bytes carry a format version the code does not read:
// an older one it no longer reads, or a newer one a later cairn wrote.
// Such bytes are refused, never guessed at (docs/engine.md, 2.8).
var ErrFormatVersion = errors.New("format version not read by this cairn")

// VersionError is the error for a what (a format's name) of version got,
// where the code reads version reads: it says whether the bytes are older
// or newer, and wraps ErrFormatVersion.
func VersionError(what string, got, reads uint64) error {
	side := "an older format this cairn no longer reads"
	if got > reads {
		side = "written by a newer cairn"
	}
	return fmt.Errorf("%s format %d (%s; this one reads format %d): %w", what, got, side, reads, ErrFormatVersion)
}
