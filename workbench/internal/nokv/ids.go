package nokv

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"
)

// ---------------------------------------------------------------------------
// Ids

// RootID is a RootId: 16 bytes, globally unique.
type RootID [16]byte

// IncarnationID is a WorkspaceIncarnationId: 16 random bytes, never reused.
// NewIncarnationID draws 128 random bits, so two incarnations collide with
// negligible probability; WorkspaceIncarnationClaim makes the rule durable.
type IncarnationID [16]byte

// RevisionID is an ArtifactRevisionId: 16 bytes, unique within one root.
type RevisionID [16]byte

// OperationID is an OperationId: 16 bytes, unique within one root.
type OperationID [16]byte

// CommitID is a CommitId: the 32-byte root-global SHA-256 identity.
type CommitID [32]byte

// SnapshotID is a SnapshotId: the numeric Workbench snapshot id, stored as
// eight bytes, unsigned big-endian.
type SnapshotID uint64

// NewRootID returns a random root id.
func NewRootID() RootID { return RootID(random16()) }

// NewIncarnationID returns a random incarnation id.
func NewIncarnationID() IncarnationID { return IncarnationID(random16()) }

// NewRevisionID returns a new revision id drawn at time at (timed16).
func NewRevisionID(at time.Time) RevisionID { return RevisionID(timed16(at)) }

// NewOperationID returns a new operation id drawn at time at (timed16).
func NewOperationID(at time.Time) OperationID { return OperationID(timed16(at)) }

// timed16 returns at as Unix milliseconds in its first six bytes
// (big-endian) and ten random bytes. Uniqueness rests on the 80
// random bits alone, so a clock that stops, jumps or runs backwards
// changes nothing but the order. The order is what the families keyed by
// these ids want: a shard's records sort by id, so new rows land in its
// last page and a fold rewrites that page, not one page per row
// scattered through the shard.
func timed16(at time.Time) (b [16]byte) {
	rand.Read(b[6:]) // never fails
	ms := uint64(at.UnixMilli())
	for i := 5; i >= 0; i-- {
		b[i] = byte(ms)
		ms >>= 8
	}
	return b
}

func random16() (b [16]byte) {
	rand.Read(b[:]) // never fails
	return b
}

// String returns the id as 32 lowercase hexadecimal digits.
func (id RootID) String() string { return hex.EncodeToString(id[:]) }

// String returns the id as 32 lowercase hexadecimal digits.
func (id IncarnationID) String() string { return hex.EncodeToString(id[:]) }

// String returns the id as 32 lowercase hexadecimal digits.
func (id RevisionID) String() string { return hex.EncodeToString(id[:]) }

// String returns the id as 32 lowercase hexadecimal digits.
func (id OperationID) String() string { return hex.EncodeToString(id[:]) }

// String returns the id as 64 lowercase hexadecimal digits.
func (id CommitID) String() string { return hex.EncodeToString(id[:]) }

// String returns the id in decimal.
func (id SnapshotID) String() string { return strconv.FormatUint(uint64(id), 10) }

// IsZero reports whether every byte of the id is zero.
func (id RootID) IsZero() bool { return id == RootID{} }

// IsZero reports whether every byte of the id is zero.
func (id IncarnationID) IsZero() bool { return id == IncarnationID{} }

// IsZero reports whether every byte of the id is zero.
func (id RevisionID) IsZero() bool { return id == RevisionID{} }

// IsZero reports whether every byte of the id is zero.
func (id OperationID) IsZero() bool { return id == OperationID{} }

// IsZero reports whether every byte of the id is zero.
func (id CommitID) IsZero() bool { return id == CommitID{} }

// ParseRootID parses 32 lowercase hexadecimal digits.
func ParseRootID(s string) (RootID, error) {
	var id RootID
	return id, parseHexID(id[:], "root id", s)
}

// ParseIncarnationID parses 32 lowercase hexadecimal digits.
func ParseIncarnationID(s string) (IncarnationID, error) {
	var id IncarnationID
	return id, parseHexID(id[:], "incarnation id", s)
}

// ParseRevisionID parses 32 lowercase hexadecimal digits.
func ParseRevisionID(s string) (RevisionID, error) {
	var id RevisionID
	return id, parseHexID(id[:], "revision id", s)
}

// ParseOperationID parses 32 lowercase hexadecimal digits.
func ParseOperationID(s string) (OperationID, error) {
	var id OperationID
	return id, parseHexID(id[:], "operation id", s)
}

// ParseCommitID parses 64 lowercase hexadecimal digits.
func ParseCommitID(s string) (CommitID, error) {
	var id CommitID
	return id, parseHexID(id[:], "commit id", s)
}

// ParseSnapshotID parses a canonical decimal number: digits only, no sign,
// no leading zero.
func ParseSnapshotID(s string) (SnapshotID, error) {
	bad := s == "" || len(s) > 20 || (len(s) > 1 && s[0] == '0')
	for i := 0; i < len(s) && !bad; i++ {
		bad = s[i] < '0' || s[i] > '9'
	}
	if bad {
		return 0, fmt.Errorf("nokv: parse snapshot id %q: not a canonical decimal: %w", s, ErrBadID)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("nokv: parse snapshot id %q: out of range: %w", s, ErrBadID)
	}
	return SnapshotID(v), nil
}

// parseHexID fills dst from exactly 2*len(dst) lowercase hex digits and
// leaves it zero on an error.
func parseHexID(dst []byte, what, s string) error {
	ok := len(s) == 2*len(dst)
	for i := 0; i < len(s) && ok; i++ {
		c := s[i]
		ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
	}
	if !ok {
		return fmt.Errorf("nokv: parse %s %q: want %d lowercase hex digits: %w", what, s, 2*len(dst), ErrBadID)
	}
	hex.Decode(dst, []byte(s))
	return nil
}

// MarshalText returns String's text.
func (id RootID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the text ParseRootID accepts.
func (id *RootID) UnmarshalText(b []byte) (err error) { *id, err = ParseRootID(string(b)); return }

// MarshalText returns String's text.
func (id IncarnationID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the text ParseIncarnationID accepts.
func (id *IncarnationID) UnmarshalText(b []byte) (err error) {
	*id, err = ParseIncarnationID(string(b))
	return
}

// MarshalText returns String's text.
func (id RevisionID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the text ParseRevisionID accepts.
func (id *RevisionID) UnmarshalText(b []byte) (err error) {
	*id, err = ParseRevisionID(string(b))
	return
}

// MarshalText returns String's text.
func (id OperationID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the text ParseOperationID accepts.
func (id *OperationID) UnmarshalText(b []byte) (err error) {
	*id, err = ParseOperationID(string(b))
	return
}

// MarshalText returns String's text.
func (id CommitID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses the text ParseCommitID accepts.
func (id *CommitID) UnmarshalText(b []byte) (err error) { *id, err = ParseCommitID(string(b)); return }
