package workbench

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/nokv"
)

// Durable records.
//
// This file is the record layer of the seed schema's metadata families that
// the file tools use: the key and value of WorkspaceCurrent,
// WorkspaceIncarnationClaim, PathCurrent, ArtifactRevision,
// ArtifactManifest, RevisionRef, GcCandidate, ChangeEvent, Operation
// (Publish), StagedObject and SecondaryIndex, plus the order-preserving
// index scalar codec.
//
// # Keys
//
// Keys follow the seed's layouts and are built with shards.KeyBuilder, so
// every key satisfies nokv.Families().ShardOf for its family. Keys carry
// no version: the store's schema marker gates their codec. Parse<Family>Key is strict
// and fails with an error wrapping ErrBadRecord (and the shards package's
// ErrMalformedKey where its reader found the fault).
//
// # Values
//
// Every value begins with a one-byte value format version, the seed's
// Durable Format Registry: 2 for the publication-owned workspace, path and
// revision records (WorkspaceCurrent, PathCurrent, ArtifactRevision) and for
// ChangeEvent; 1 for the other ordinary records. The fields follow in a
// fixed order: integers unsigned big-endian, enums one byte, ids at their
// fixed width, variable bytes and strings a four-byte big-endian length and
// the exact bytes, an optional field a presence byte (0 absent, 1 present)
// and then the field. A path inside a value is u32(path_bytes) and the
// ordered, NUL-separated components, as in a Path RevisionRef owner.
//
// Each encoding is canonical: Decode<Record> accepts exactly the bytes
// Encode produces, so encode(decode(b)) == b for every b that decodes.
// Decoders fail closed with an error wrapping ErrBadRecord on truncation,
// trailing bytes, a bad presence byte, a field that breaks its rule (a
// digest URI that is not "sha256:" and 64 lowercase hex digits, a content
// type that is empty, longer than 255 bytes or holds NUL, an invalid
// workbench id or path); additionally ErrUnknownVersion on an unknown
// version byte and ErrUnknownEnum on an unknown discriminant. Encode
// refuses the same invalid values with the same errors.

// Value format versions of the records in this file.
const (
	WorkspaceCurrentVersion          = 2
	WorkspaceIncarnationClaimVersion = 1
	PathEntryVersion                 = 2
	ArtifactRevisionVersion          = 2
	ArtifactManifestVersion          = 1
	RevisionRefVersion               = 1
	GcCandidateVersion               = 1
	ChangeEventVersion               = 2
	PublishOperationVersion          = 1
	StagedObjectVersion              = 1
	SecondaryIndexVersion            = 1
)

// Limits the record layer enforces besides those of ids and paths
// (MaxWorkbenchIDBytes, MaxPathBytes, MaxPathComponents in path.go).
const (
	// MaxContentTypeBytes is the longest content type.
	MaxContentTypeBytes = 255
	// MaxIndexFieldIDBytes is the longest index field id.
	MaxIndexFieldIDBytes = 128
	// MaxIndexScalarBytes is the longest bytes or string index scalar.
	MaxIndexScalarBytes = 64 << 10
)

var (
	// ErrBadRecord is wrapped by every error that encoding or decoding a
	// record key or value returns.
	ErrBadRecord = errors.New("bad record")
	// ErrUnknownVersion is wrapped, beside ErrBadRecord, when a value's
	// format version is not the one this code reads.
	ErrUnknownVersion = errors.New("unknown record version")
	// ErrBadID is wrapped by every error that parsing an id returns.
	ErrBadID = errors.New("bad id")
)

// RecordError describes a record that cannot be encoded or decoded. It
// matches ErrBadRecord and, when set, Err (ErrUnknownVersion,
// ErrUnknownEnum, or the shards package's key error).
type RecordError struct {
	Op     string // "encode" or "decode"
	Record string // e.g. "path_current value"
	Offset int    // byte offset of the fault when decoding
	Reason string
	Err    error
}

func (e *RecordError) Error() string {
	if e.Op == "decode" {
		return fmt.Sprintf("workbench: decode %s at offset %d: %s", e.Record, e.Offset, e.Reason)
	}
	return fmt.Sprintf("workbench: encode %s: %s", e.Record, e.Reason)
}

// Unwrap makes a RecordError match ErrBadRecord and its cause.
func (e *RecordError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrBadRecord, e.Err}
	}
	return []error{ErrBadRecord}
}

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

// NewRevisionID returns a random revision id.
func NewRevisionID() RevisionID { return RevisionID(random16()) }

// NewOperationID returns a random operation id.
func NewOperationID() OperationID { return OperationID(random16()) }

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
		return 0, fmt.Errorf("workbench: parse snapshot id %q: not a canonical decimal: %w", s, ErrBadID)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("workbench: parse snapshot id %q: out of range: %w", s, ErrBadID)
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
		return fmt.Errorf("workbench: parse %s %q: want %d lowercase hex digits: %w", what, s, 2*len(dst), ErrBadID)
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

// ---------------------------------------------------------------------------
// Field rules shared by encoders and decoders

// workbenchIDReason returns why s is not a workbench id, or "". It asks
// ParseWorkbenchID, the one workbench id check.
func workbenchIDReason(s string) string {
	if _, err := ParseWorkbenchID(s); err != nil {
		return err.Message
	}
	return ""
}

// pathReason returns why p is not a normalized relative path, or "". It
// asks NormalizePath, the one path normalizer, about the joined path; a
// component holding "/" splits differently and is refused here.
func pathReason(p []string) string {
	if len(p) == 0 {
		return "path has no components"
	}
	c, err := NormalizePath(strings.Join(p, "/"))
	if err != nil {
		return err.Message
	}
	if !slices.Equal(c, p) {
		return "a path component contains '/'"
	}
	return ""
}

func digestURIReason(field, s string) string {
	if !digest.ValidURI(s) {
		return fmt.Sprintf("%s %q is not \"sha256:\" and 64 lowercase hex digits", field, s)
	}
	return ""
}

func contentTypeReason(s string) string {
	if s == "" || len(s) > MaxContentTypeBytes || strings.IndexByte(s, 0) >= 0 {
		return fmt.Sprintf("content type of %d bytes, want 1 to %d without NUL", len(s), MaxContentTypeBytes)
	}
	return ""
}

func objectKeyReason(s string) string {
	if err := bucket.ValidateKey(s); err != nil {
		return "object key: " + err.Error()
	}
	return ""
}

func indexFieldIDReason(s string) string {
	if s == "" || len(s) > MaxIndexFieldIDBytes || !utf8.ValidString(s) {
		return fmt.Sprintf("index field id of %d bytes, want 1 to %d of UTF-8", len(s), MaxIndexFieldIDBytes)
	}
	return ""
}

// firstReason returns the first non-empty reason.
func firstReason(reasons ...string) string {
	for _, r := range reasons {
		if r != "" {
			return r
		}
	}
	return ""
}

// ---------------------------------------------------------------------------
// Value writer and reader

type valueWriter struct {
	rec string
	b   []byte
	err error
}

func newValueWriter(rec string, version uint8) *valueWriter {
	return &valueWriter{rec: rec, b: []byte{version}}
}

func (w *valueWriter) fail(reason string, cause error) {
	if w.err == nil {
		w.err = &RecordError{Op: "encode", Record: w.rec, Reason: reason, Err: cause}
	}
}

// check fails with reason when it is not empty.
func (w *valueWriter) check(reason string) {
	if reason != "" {
		w.fail(reason, nil)
	}
}

func (w *valueWriter) u8(v uint8)      { w.b = append(w.b, v) }
func (w *valueWriter) u16(v uint16)    { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *valueWriter) u32(v uint32)    { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *valueWriter) u64(v uint64)    { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *valueWriter) id16(v [16]byte) { w.b = append(w.b, v[:]...) }
func (w *valueWriter) id32(v [32]byte) { w.b = append(w.b, v[:]...) }

func (w *valueWriter) present(ok bool) {
	if ok {
		w.u8(1)
	} else {
		w.u8(0)
	}
}

func (w *valueWriter) enum(field string, d *enumDef, v uint8) {
	if !d.valid(v) {
		w.fail(fmt.Sprintf("%s: %s %d", field, d.typ, v), ErrUnknownEnum)
	}
	w.u8(v)
}

func (w *valueWriter) str(field, s string) {
	switch {
	case uint64(len(s)) > math.MaxUint32:
		w.fail(fmt.Sprintf("%s of %d bytes", field, len(s)), nil)
		return
	case !utf8.ValidString(s):
		w.fail(field+" is not UTF-8", nil)
	}
	w.u32(uint32(len(s)))
	w.b = append(w.b, s...)
}

func (w *valueWriter) optStr(field string, s *string) {
	w.present(s != nil)
	if s != nil {
		w.str(field, *s)
	}
}

func (w *valueWriter) path(field string, p []string) {
	if reason := pathReason(p); reason != "" {
		w.fail(field+": "+reason, nil)
		return
	}
	b, err := shards.NewKey().LenPath(p).Build()
	if err != nil {
		w.fail(field+": "+err.Error(), err)
		return
	}
	w.b = append(w.b, b...)
}

func (w *valueWriter) finish() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	return w.b, nil
}

type valueReader struct {
	rec string
	b   []byte
	off int
	err error
}

// newValueReader checks the version byte and positions the reader after it.
func newValueReader(rec string, b []byte, version uint8) *valueReader {
	r := &valueReader{rec: rec, b: b}
	switch {
	case len(b) == 0:
		r.failAt(0, "empty value", nil)
	case b[0] != version:
		r.failAt(0, fmt.Sprintf("value format version %d, want %d", b[0], version), ErrUnknownVersion)
	default:
		r.off = 1
	}
	return r
}

func (r *valueReader) failAt(off int, reason string, cause error) {
	if r.err == nil {
		r.err = &RecordError{Op: "decode", Record: r.rec, Offset: off, Reason: reason, Err: cause}
	}
}

// check fails at the field that began at off when reason is not empty.
func (r *valueReader) check(off int, reason string) {
	if reason != "" {
		r.failAt(off, reason, nil)
	}
}

func (r *valueReader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b)-r.off {
		r.failAt(r.off, fmt.Sprintf("truncated: need %d bytes, have %d", n, len(r.b)-r.off), nil)
		return nil
	}
	out := r.b[r.off : r.off+n]
	r.off += n
	return out
}

func (r *valueReader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *valueReader) u16() uint16 {
	if b := r.take(2); b != nil {
		return binary.BigEndian.Uint16(b)
	}
	return 0
}

func (r *valueReader) u32() uint32 {
	if b := r.take(4); b != nil {
		return binary.BigEndian.Uint32(b)
	}
	return 0
}

func (r *valueReader) u64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

func (r *valueReader) id16() (v [16]byte) {
	copy(v[:], r.take(16))
	return v
}

func (r *valueReader) id32() (v [32]byte) {
	copy(v[:], r.take(32))
	return v
}

func (r *valueReader) present() bool {
	off := r.off
	switch b := r.u8(); {
	case r.err != nil:
		return false
	case b > 1:
		r.failAt(off, fmt.Sprintf("presence byte %d", b), nil)
		return false
	default:
		return b == 1
	}
}

func (r *valueReader) enum(field string, d *enumDef) uint8 {
	off := r.off
	v := r.u8()
	if r.err == nil && !d.valid(v) {
		r.failAt(off, fmt.Sprintf("%s: %s %d", field, d.typ, v), ErrUnknownEnum)
		return 0
	}
	return v
}

func (r *valueReader) str(field string) string {
	off := r.off
	n := r.u32()
	if r.err != nil {
		return ""
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.failAt(off, fmt.Sprintf("%s: length %d, only %d bytes follow", field, n, len(r.b)-r.off), nil)
		return ""
	}
	b := r.take(int(n))
	if !utf8.Valid(b) {
		r.failAt(off, field+" is not UTF-8", nil)
		return ""
	}
	return string(b)
}

func (r *valueReader) optStr(field string) *string {
	if !r.present() {
		return nil
	}
	s := r.str(field)
	if r.err != nil {
		return nil
	}
	return &s
}

func (r *valueReader) path(field string) []string {
	off := r.off
	n := r.u32()
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(len(r.b)-r.off) {
		r.failAt(off, fmt.Sprintf("%s: length %d, only %d bytes follow", field, n, len(r.b)-r.off), nil)
		return nil
	}
	kr := shards.NewKeyReader(r.b[off : off+4+int(n)])
	p := kr.LenPath()
	if err := kr.End(); err != nil {
		r.failAt(off, field+": "+err.Error(), err)
		return nil
	}
	r.off = off + 4 + int(n)
	if reason := pathReason(p); reason != "" {
		r.failAt(off, field+": "+reason, nil)
		return nil
	}
	return p
}

// end returns the first error, or an error if bytes remain.
func (r *valueReader) end() error {
	if r.err == nil && r.off != len(r.b) {
		r.failAt(r.off, fmt.Sprintf("%d trailing bytes", len(r.b)-r.off), nil)
	}
	return r.err
}

// ---------------------------------------------------------------------------
// Keys

// keyError turns a key builder or reader error into a RecordError.
func keyError(op, rec string, off int, err error) error {
	return &RecordError{Op: op, Record: rec, Offset: off, Reason: err.Error(), Err: err}
}

func keyFail(op, rec string, off int, reason string) error {
	return &RecordError{Op: op, Record: rec, Offset: off, Reason: reason}
}

// RootPrefix returns the key prefix every record of a root shares in every
// family: the root id itself.
func RootPrefix(root RootID) []byte { return bytes.Clone(root[:]) }

// WorkspaceCurrentKey is root_id | u32(len(workbench_id)) | workbench_id.
type WorkspaceCurrentKey struct {
	Root        RootID
	WorkbenchID string
}

const recWorkspaceCurrentKey = "workspace_current key"

// Family returns nokv.WorkspaceCurrent.
func (WorkspaceCurrentKey) Family() shards.Family { return nokv.WorkspaceCurrent }

// Encode returns the key's bytes.
func (k WorkspaceCurrentKey) Encode() ([]byte, error) {
	if reason := workbenchIDReason(k.WorkbenchID); reason != "" {
		return nil, keyFail("encode", recWorkspaceCurrentKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).String(k.WorkbenchID).Build()
}

// ParseWorkspaceCurrentKey parses a WorkspaceCurrent key.
func ParseWorkspaceCurrentKey(b []byte) (WorkspaceCurrentKey, error) {
	r := shards.NewKeyReader(b)
	k := WorkspaceCurrentKey{Root: r.ID16()}
	id := r.Bytes()
	if err := r.End(); err != nil {
		return WorkspaceCurrentKey{}, keyError("decode", recWorkspaceCurrentKey, r.Offset(), err)
	}
	if reason := workbenchIDReason(string(id)); reason != "" {
		return WorkspaceCurrentKey{}, keyFail("decode", recWorkspaceCurrentKey, 16, reason)
	}
	k.WorkbenchID = string(id)
	return k, nil
}

// WorkspaceIncarnationClaimKey is root_id | workspace_incarnation_id.
type WorkspaceIncarnationClaimKey struct {
	Root        RootID
	Incarnation IncarnationID
}

const recClaimKey = "workspace_incarnation_claim key"

// Family returns nokv.WorkspaceIncarnationClaim.
func (WorkspaceIncarnationClaimKey) Family() shards.Family { return nokv.WorkspaceIncarnationClaim }

// Encode returns the key's bytes.
func (k WorkspaceIncarnationClaimKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Build()
}

// ParseWorkspaceIncarnationClaimKey parses a WorkspaceIncarnationClaim key.
func ParseWorkspaceIncarnationClaimKey(b []byte) (WorkspaceIncarnationClaimKey, error) {
	r := shards.NewKeyReader(b)
	k := WorkspaceIncarnationClaimKey{Root: r.ID16(), Incarnation: r.ID16()}
	if err := r.End(); err != nil {
		return WorkspaceIncarnationClaimKey{}, keyError("decode", recClaimKey, r.Offset(), err)
	}
	return k, nil
}

// PathCurrentKey is root_id | workspace_incarnation_id | the exact-row
// encoding of the path (ordered components joined by NUL, then 0x01).
type PathCurrentKey struct {
	Root        RootID
	Incarnation IncarnationID
	Path        []string
}

const recPathCurrentKey = "path_current key"

// Family returns nokv.PathCurrent.
func (PathCurrentKey) Family() shards.Family { return nokv.PathCurrent }

// Encode returns the key's bytes.
func (k PathCurrentKey) Encode() ([]byte, error) {
	if reason := pathReason(k.Path); reason != "" {
		return nil, keyFail("encode", recPathCurrentKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Path(k.Path).Build()
}

// ParsePathCurrentKey parses a PathCurrent key.
func ParsePathCurrentKey(b []byte) (PathCurrentKey, error) {
	r := shards.NewKeyReader(b)
	k := PathCurrentKey{Root: r.ID16(), Incarnation: r.ID16()}
	k.Path = r.Path()
	if err := r.End(); err != nil {
		return PathCurrentKey{}, keyError("decode", recPathCurrentKey, r.Offset(), err)
	}
	if reason := pathReason(k.Path); reason != "" {
		return PathCurrentKey{}, keyFail("decode", recPathCurrentKey, 32, reason)
	}
	return k, nil
}

// PathCurrentPrefix returns the scan prefix of the paths strictly below
// directory dir of one incarnation; an empty dir covers the whole
// workspace.
func PathCurrentPrefix(root RootID, inc IncarnationID, dir []string) ([]byte, error) {
	if len(dir) > 0 {
		if reason := pathReason(dir); reason != "" {
			return nil, keyFail("encode", "path_current prefix", 0, reason)
		}
	}
	return shards.NewKey().ID16(root).ID16(inc).PathPrefix(dir).Build()
}

// ArtifactRevisionKey is root_id | artifact_revision_id.
type ArtifactRevisionKey struct {
	Root     RootID
	Revision RevisionID
}

const recArtifactRevisionKey = "artifact_revision key"

// Family returns nokv.ArtifactRevision.
func (ArtifactRevisionKey) Family() shards.Family { return nokv.ArtifactRevision }

// Encode returns the key's bytes.
func (k ArtifactRevisionKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Revision).Build()
}

// ParseArtifactRevisionKey parses an ArtifactRevision key.
func ParseArtifactRevisionKey(b []byte) (ArtifactRevisionKey, error) {
	r := shards.NewKeyReader(b)
	k := ArtifactRevisionKey{Root: r.ID16(), Revision: r.ID16()}
	if err := r.End(); err != nil {
		return ArtifactRevisionKey{}, keyError("decode", recArtifactRevisionKey, r.Offset(), err)
	}
	return k, nil
}

// ArtifactManifestKey is root_id | artifact_revision_id | u64(object_index),
// the ordered row position in the revision's manifest.
type ArtifactManifestKey struct {
	Root        RootID
	Revision    RevisionID
	ObjectIndex uint64
}

const recArtifactManifestKey = "artifact_manifest key"

// Family returns nokv.ArtifactManifest.
func (ArtifactManifestKey) Family() shards.Family { return nokv.ArtifactManifest }

// Encode returns the key's bytes.
func (k ArtifactManifestKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Revision).U64(k.ObjectIndex).Build()
}

// ParseArtifactManifestKey parses an ArtifactManifest key.
func ParseArtifactManifestKey(b []byte) (ArtifactManifestKey, error) {
	r := shards.NewKeyReader(b)
	k := ArtifactManifestKey{Root: r.ID16(), Revision: r.ID16(), ObjectIndex: r.U64()}
	if err := r.End(); err != nil {
		return ArtifactManifestKey{}, keyError("decode", recArtifactManifestKey, r.Offset(), err)
	}
	return k, nil
}

// ArtifactManifestPrefix returns the scan prefix of one revision's whole
// manifest, in object_index order.
func ArtifactManifestPrefix(root RootID, rev RevisionID) []byte {
	return append(bytes.Clone(root[:]), rev[:]...)
}

// RevisionRefKey is root_id | u8(reference_kind) | reference_owner_id |
// artifact_revision_id, where the owner is discriminated by the kind:
//
//	Path:               workspace_incarnation_id | u32(path_bytes) | ordered, NUL-separated path
//	Commit:             commit_id
//	RevisionDependency: child_artifact_revision_id
//
// Only the owner fields of Kind may be set; the others must be zero.
type RevisionRefKey struct {
	Root RootID
	Kind ReferenceKind
	// Path owner.
	Incarnation IncarnationID
	Path        []string
	// Commit owner.
	Commit CommitID
	// RevisionDependency owner.
	Child RevisionID
	// The referenced revision.
	Revision RevisionID
}

const recRevisionRefKey = "revision_ref key"

// PathRefKey returns the key of a Path reference.
func PathRefKey(root RootID, inc IncarnationID, path []string, rev RevisionID) RevisionRefKey {
	return RevisionRefKey{Root: root, Kind: ReferenceKindPath, Incarnation: inc, Path: path, Revision: rev}
}

// CommitRefKey returns the key of a Commit reference.
func CommitRefKey(root RootID, commit CommitID, rev RevisionID) RevisionRefKey {
	return RevisionRefKey{Root: root, Kind: ReferenceKindCommit, Commit: commit, Revision: rev}
}

// DependencyRefKey returns the key of a RevisionDependency reference that
// child holds on rev.
func DependencyRefKey(root RootID, child, rev RevisionID) RevisionRefKey {
	return RevisionRefKey{Root: root, Kind: ReferenceKindRevisionDependency, Child: child, Revision: rev}
}

// Family returns nokv.RevisionRef.
func (RevisionRefKey) Family() shards.Family { return nokv.RevisionRef }

func (k RevisionRefKey) owner(op string) (*shards.KeyBuilder, error) {
	b := shards.NewKey().ID16(k.Root).U8(uint8(k.Kind))
	var stray bool
	switch k.Kind {
	case ReferenceKindPath:
		if reason := pathReason(k.Path); reason != "" {
			return nil, keyFail(op, recRevisionRefKey, 0, reason)
		}
		b.ID16(k.Incarnation).LenPath(k.Path)
		stray = !k.Commit.IsZero() || !k.Child.IsZero()
	case ReferenceKindCommit:
		b.ID32(k.Commit)
		stray = !k.Incarnation.IsZero() || k.Path != nil || !k.Child.IsZero()
	case ReferenceKindRevisionDependency:
		b.ID16(k.Child)
		stray = !k.Incarnation.IsZero() || k.Path != nil || !k.Commit.IsZero()
	default:
		return nil, &RecordError{Op: op, Record: recRevisionRefKey, Reason: fmt.Sprintf("reference kind %d", k.Kind), Err: ErrUnknownEnum}
	}
	if stray {
		return nil, keyFail(op, recRevisionRefKey, 0, fmt.Sprintf("owner fields set that kind %v does not use", k.Kind))
	}
	return b, nil
}

// Encode returns the key's bytes.
func (k RevisionRefKey) Encode() ([]byte, error) {
	b, err := k.owner("encode")
	if err != nil {
		return nil, err
	}
	return b.ID16(k.Revision).Build()
}

// OwnerPrefix returns the scan prefix of every reference k's owner holds
// (root_id | kind | owner); k.Revision is ignored.
func (k RevisionRefKey) OwnerPrefix() ([]byte, error) {
	b, err := k.owner("encode")
	if err != nil {
		return nil, err
	}
	return b.Build()
}

// ParseRevisionRefKey parses a RevisionRef key.
func ParseRevisionRefKey(b []byte) (RevisionRefKey, error) {
	r := shards.NewKeyReader(b)
	k := RevisionRefKey{Root: r.ID16()}
	kindOff := r.Offset()
	kind := r.U8()
	if r.Err() == nil && !referenceKindDef.valid(kind) {
		return RevisionRefKey{}, &RecordError{Op: "decode", Record: recRevisionRefKey, Offset: kindOff,
			Reason: fmt.Sprintf("reference kind %d", kind), Err: ErrUnknownEnum}
	}
	k.Kind = ReferenceKind(kind)
	switch k.Kind {
	case ReferenceKindPath:
		k.Incarnation = r.ID16()
		k.Path = r.LenPath()
	case ReferenceKindCommit:
		k.Commit = r.ID32()
	case ReferenceKindRevisionDependency:
		k.Child = r.ID16()
	}
	k.Revision = r.ID16()
	if err := r.End(); err != nil {
		return RevisionRefKey{}, keyError("decode", recRevisionRefKey, r.Offset(), err)
	}
	if k.Kind == ReferenceKindPath {
		if reason := pathReason(k.Path); reason != "" {
			return RevisionRefKey{}, keyFail("decode", recRevisionRefKey, 33, reason)
		}
	}
	return k, nil
}

// GcCandidateKey is root_id | artifact_revision_id | u64(reference_epoch).
type GcCandidateKey struct {
	Root           RootID
	Revision       RevisionID
	ReferenceEpoch uint64
}

const recGcCandidateKey = "gc_candidate key"

// Family returns nokv.GcCandidate.
func (GcCandidateKey) Family() shards.Family { return nokv.GcCandidate }

// Encode returns the key's bytes.
func (k GcCandidateKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Revision).U64(k.ReferenceEpoch).Build()
}

// ParseGcCandidateKey parses a GcCandidate key.
func ParseGcCandidateKey(b []byte) (GcCandidateKey, error) {
	r := shards.NewKeyReader(b)
	k := GcCandidateKey{Root: r.ID16(), Revision: r.ID16(), ReferenceEpoch: r.U64()}
	if err := r.End(); err != nil {
		return GcCandidateKey{}, keyError("decode", recGcCandidateKey, r.Offset(), err)
	}
	return k, nil
}

// ChangeEventKey is root_id | u64(commit_version) | u32(event_sequence), so
// the family sorts in log order. The shards package places 256 consecutive
// commit versions of one root in one shard.
type ChangeEventKey struct {
	Root          RootID
	CommitVersion uint64
	Sequence      uint32
}

const recChangeEventKey = "change_event key"

// Family returns nokv.ChangeEvent.
func (ChangeEventKey) Family() shards.Family { return nokv.ChangeEvent }

// Encode returns the key's bytes.
func (k ChangeEventKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).U64(k.CommitVersion).U32(k.Sequence).Build()
}

// ParseChangeEventKey parses a ChangeEvent key.
func ParseChangeEventKey(b []byte) (ChangeEventKey, error) {
	r := shards.NewKeyReader(b)
	k := ChangeEventKey{Root: r.ID16(), CommitVersion: r.U64(), Sequence: r.U32()}
	if err := r.End(); err != nil {
		return ChangeEventKey{}, keyError("decode", recChangeEventKey, r.Offset(), err)
	}
	return k, nil
}

// OperationKey is root_id | u8(operation_kind) | operation_id.
type OperationKey struct {
	Root RootID
	Kind OperationKind
	ID   OperationID
}

const recOperationKey = "operation key"

// Family returns nokv.Operation.
func (OperationKey) Family() shards.Family { return nokv.Operation }

// Encode returns the key's bytes.
func (k OperationKey) Encode() ([]byte, error) {
	if !k.Kind.Valid() {
		return nil, &RecordError{Op: "encode", Record: recOperationKey, Reason: fmt.Sprintf("operation kind %d", k.Kind), Err: ErrUnknownEnum}
	}
	return shards.NewKey().ID16(k.Root).U8(uint8(k.Kind)).ID16(k.ID).Build()
}

// ParseOperationKey parses an Operation key.
func ParseOperationKey(b []byte) (OperationKey, error) {
	r := shards.NewKeyReader(b)
	k := OperationKey{Root: r.ID16()}
	kind := r.U8()
	k.ID = r.ID16()
	if err := r.End(); err != nil {
		return OperationKey{}, keyError("decode", recOperationKey, r.Offset(), err)
	}
	if !operationKindDef.valid(kind) {
		return OperationKey{}, &RecordError{Op: "decode", Record: recOperationKey, Offset: 16,
			Reason: fmt.Sprintf("operation kind %d", kind), Err: ErrUnknownEnum}
	}
	k.Kind = OperationKind(kind)
	return k, nil
}

// StagedObjectKey is root_id | publish_operation_id | u64(object_sequence).
type StagedObjectKey struct {
	Root      RootID
	Operation OperationID
	Sequence  uint64
}

const recStagedObjectKey = "staged_object key"

// Family returns nokv.StagedObject.
func (StagedObjectKey) Family() shards.Family { return nokv.StagedObject }

// Encode returns the key's bytes.
func (k StagedObjectKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Operation).U64(k.Sequence).Build()
}

// ParseStagedObjectKey parses a StagedObject key.
func ParseStagedObjectKey(b []byte) (StagedObjectKey, error) {
	r := shards.NewKeyReader(b)
	k := StagedObjectKey{Root: r.ID16(), Operation: r.ID16(), Sequence: r.U64()}
	if err := r.End(); err != nil {
		return StagedObjectKey{}, keyError("decode", recStagedObjectKey, r.Offset(), err)
	}
	return k, nil
}

// StagedObjectPrefix returns the scan prefix of one publication's staging
// ledger, in object_sequence order.
func StagedObjectPrefix(root RootID, op OperationID) []byte {
	return append(bytes.Clone(root[:]), op[:]...)
}

// SecondaryIndexKey is root_id | u32(len(index_id)) | index_id |
// encoded_value | workspace_incarnation_id | exact-row path, with the value
// in the index scalar codec. Because that codec is self-delimiting and
// order-preserving, one index's rows sort by value, then incarnation, then
// path.
type SecondaryIndexKey struct {
	Root        RootID
	IndexID     string
	Value       IndexScalar
	Incarnation IncarnationID
	Path        []string
}

const recSecondaryIndexKey = "secondary_index key"

// Family returns nokv.SecondaryIndex.
func (SecondaryIndexKey) Family() shards.Family { return nokv.SecondaryIndex }

// Encode returns the key's bytes.
func (k SecondaryIndexKey) Encode() ([]byte, error) {
	v, err := k.valuePrefix()
	if err != nil {
		return nil, err
	}
	if reason := pathReason(k.Path); reason != "" {
		return nil, keyFail("encode", recSecondaryIndexKey, 0, reason)
	}
	return shards.NewKey().Raw(v).ID16(k.Incarnation).Path(k.Path).Build()
}

func (k SecondaryIndexKey) valuePrefix() ([]byte, error) {
	if reason := indexFieldIDReason(k.IndexID); reason != "" {
		return nil, keyFail("encode", recSecondaryIndexKey, 0, reason)
	}
	v, err := EncodeIndexScalar(k.Value)
	if err != nil {
		return nil, err
	}
	return shards.NewKey().ID16(k.Root).String(k.IndexID).Raw(v).Build()
}

// SecondaryIndexPrefix returns the scan prefix of one whole index.
func SecondaryIndexPrefix(root RootID, indexID string) ([]byte, error) {
	if reason := indexFieldIDReason(indexID); reason != "" {
		return nil, keyFail("encode", "secondary_index prefix", 0, reason)
	}
	return shards.NewKey().ID16(root).String(indexID).Build()
}

// SecondaryIndexValuePrefix returns the scan prefix of the rows of one index
// whose value is exactly v.
func SecondaryIndexValuePrefix(root RootID, indexID string, v IndexScalar) ([]byte, error) {
	return SecondaryIndexKey{Root: root, IndexID: indexID, Value: v}.valuePrefix()
}

// ParseSecondaryIndexKey parses a SecondaryIndex key.
func ParseSecondaryIndexKey(b []byte) (SecondaryIndexKey, error) {
	r := shards.NewKeyReader(b)
	k := SecondaryIndexKey{Root: r.ID16()}
	id := r.Bytes()
	if r.Err() != nil {
		return SecondaryIndexKey{}, keyError("decode", recSecondaryIndexKey, r.Offset(), r.Err())
	}
	if reason := indexFieldIDReason(string(id)); reason != "" {
		return SecondaryIndexKey{}, keyFail("decode", recSecondaryIndexKey, 16, reason)
	}
	k.IndexID = string(id)
	off := r.Offset()
	v, n, err := DecodeIndexScalar(b[off:])
	if err != nil {
		return SecondaryIndexKey{}, &RecordError{Op: "decode", Record: recSecondaryIndexKey, Offset: off, Reason: err.Error(), Err: err}
	}
	k.Value = v
	r = shards.NewKeyReader(b[off+n:])
	k.Incarnation = r.ID16()
	k.Path = r.Path()
	if err := r.End(); err != nil {
		return SecondaryIndexKey{}, keyError("decode", recSecondaryIndexKey, off+n+r.Offset(), err)
	}
	if reason := pathReason(k.Path); reason != "" {
		return SecondaryIndexKey{}, keyFail("decode", recSecondaryIndexKey, off+n+16, reason)
	}
	return k, nil
}

// ---------------------------------------------------------------------------
// Values

// OperationRef names an Operation row: its kind and id.
type OperationRef struct {
	Kind OperationKind
	ID   OperationID
}

// WorkspaceCurrent is the value of a WorkspaceCurrent row, the workbench's
// marker (version 2):
//
//	incarnation [16] | workspace_revision u64 | state u8 |
//	owner? (kind u8 | operation_id [16]) | created_version u64 | modified_version u64
type WorkspaceCurrent struct {
	Incarnation       IncarnationID
	WorkspaceRevision uint64
	State             WorkspaceState
	// Owner is the operation that owns a Staging marker (a restore), if any.
	Owner           *OperationRef
	CreatedVersion  uint64
	ModifiedVersion uint64
}

const recWorkspaceCurrent = "workspace_current value"

// Encode returns the value's bytes.
func (v WorkspaceCurrent) Encode() ([]byte, error) {
	w := newValueWriter(recWorkspaceCurrent, WorkspaceCurrentVersion)
	w.id16(v.Incarnation)
	w.u64(v.WorkspaceRevision)
	w.enum("state", &workspaceStateDef, uint8(v.State))
	w.present(v.Owner != nil)
	if v.Owner != nil {
		w.enum("owner kind", &operationKindDef, uint8(v.Owner.Kind))
		w.id16(v.Owner.ID)
	}
	w.u64(v.CreatedVersion)
	w.u64(v.ModifiedVersion)
	return w.finish()
}

// DecodeWorkspaceCurrent decodes a WorkspaceCurrent value.
func DecodeWorkspaceCurrent(b []byte) (WorkspaceCurrent, error) {
	r := newValueReader(recWorkspaceCurrent, b, WorkspaceCurrentVersion)
	var v WorkspaceCurrent
	v.Incarnation = r.id16()
	v.WorkspaceRevision = r.u64()
	v.State = WorkspaceState(r.enum("state", &workspaceStateDef))
	if r.present() {
		v.Owner = &OperationRef{Kind: OperationKind(r.enum("owner kind", &operationKindDef)), ID: r.id16()}
	}
	v.CreatedVersion = r.u64()
	v.ModifiedVersion = r.u64()
	if err := r.end(); err != nil {
		return WorkspaceCurrent{}, err
	}
	return v, nil
}

// WorkspaceIncarnationClaim is the value of a WorkspaceIncarnationClaim row
// (version 1): the stable workbench id, u32-length-prefixed.
type WorkspaceIncarnationClaim struct {
	WorkbenchID string
}

const recClaim = "workspace_incarnation_claim value"

// Encode returns the value's bytes.
func (v WorkspaceIncarnationClaim) Encode() ([]byte, error) {
	w := newValueWriter(recClaim, WorkspaceIncarnationClaimVersion)
	w.check(workbenchIDReason(v.WorkbenchID))
	w.str("workbench id", v.WorkbenchID)
	return w.finish()
}

// DecodeWorkspaceIncarnationClaim decodes a WorkspaceIncarnationClaim value.
func DecodeWorkspaceIncarnationClaim(b []byte) (WorkspaceIncarnationClaim, error) {
	r := newValueReader(recClaim, b, WorkspaceIncarnationClaimVersion)
	off := r.off
	v := WorkspaceIncarnationClaim{WorkbenchID: r.str("workbench id")}
	if r.err == nil {
		r.check(off, workbenchIDReason(v.WorkbenchID))
	}
	if err := r.end(); err != nil {
		return WorkspaceIncarnationClaim{}, err
	}
	return v, nil
}

// PathEntry is the value of a PathCurrent row (version 2). It keeps every
// immutable revision field an exact stat or listing needs:
//
//	generation u64 | artifact_revision_id [16] | logical_size u64 |
//	body_digest_uri str | manifest_digest_uri str | dependency_count u32 |
//	dependency_depth u32 | content_type str | producer? str | manifest_id? str |
//	created_version u64 | modified_version u64 | index projection
type PathEntry struct {
	Generation        uint64
	Revision          RevisionID
	LogicalSize       uint64
	BodyDigestURI     string
	ManifestDigestURI string
	DependencyCount   uint32
	DependencyDepth   uint32
	ContentType       string
	Producer          *string
	ManifestID        *string
	CreatedVersion    uint64
	ModifiedVersion   uint64
	Index             IndexProjection
}

const recPathEntry = "path_current value"

// Encode returns the value's bytes.
func (v PathEntry) Encode() ([]byte, error) {
	w := newValueWriter(recPathEntry, PathEntryVersion)
	w.check(firstReason(
		digestURIReason("body digest uri", v.BodyDigestURI),
		digestURIReason("manifest digest uri", v.ManifestDigestURI),
		contentTypeReason(v.ContentType)))
	w.u64(v.Generation)
	w.id16(v.Revision)
	w.u64(v.LogicalSize)
	w.str("body digest uri", v.BodyDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.u32(v.DependencyCount)
	w.u32(v.DependencyDepth)
	w.str("content type", v.ContentType)
	w.optStr("producer", v.Producer)
	w.optStr("manifest id", v.ManifestID)
	w.u64(v.CreatedVersion)
	w.u64(v.ModifiedVersion)
	if w.err == nil {
		var err error
		if w.b, err = v.Index.appendTo(w.b); err != nil {
			w.fail(err.Error(), err)
		}
	}
	return w.finish()
}

// DecodePathEntry decodes a PathCurrent value.
func DecodePathEntry(b []byte) (PathEntry, error) {
	r := newValueReader(recPathEntry, b, PathEntryVersion)
	var v PathEntry
	v.Generation = r.u64()
	v.Revision = r.id16()
	v.LogicalSize = r.u64()
	off := r.off
	v.BodyDigestURI = r.str("body digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.DependencyCount = r.u32()
	v.DependencyDepth = r.u32()
	v.ContentType = r.str("content type")
	if r.err == nil {
		r.check(off, firstReason(
			digestURIReason("body digest uri", v.BodyDigestURI),
			digestURIReason("manifest digest uri", v.ManifestDigestURI),
			contentTypeReason(v.ContentType)))
	}
	v.Producer = r.optStr("producer")
	v.ManifestID = r.optStr("manifest id")
	v.CreatedVersion = r.u64()
	v.ModifiedVersion = r.u64()
	if r.err == nil {
		p, n, err := decodeIndexProjection(r.b[r.off:])
		if err != nil {
			r.failAt(r.off, err.Error(), err)
		} else {
			v.Index = p
			r.off += n
		}
	}
	if err := r.end(); err != nil {
		return PathEntry{}, err
	}
	return v, nil
}

// ArtifactRevision is the value of an ArtifactRevision row (version 2):
//
//	logical_size u64 | body_digest_uri str | manifest_digest_uri str |
//	block_count u64 | dependency_count u32 | dependency_depth u32 |
//	dependency_digest [32] | content_type str | state u8 | reference_epoch u64 |
//	strong_reference_count u64 | last_zero_ref_version u64 | created_version u64
//
// LastZeroRefVersion is 0 while the count has never dropped to zero.
type ArtifactRevision struct {
	LogicalSize          uint64
	BodyDigestURI        string
	ManifestDigestURI    string
	BlockCount           uint64
	DependencyCount      uint32
	DependencyDepth      uint32
	DependencyDigest     [32]byte
	ContentType          string
	State                RevisionState
	ReferenceEpoch       uint64
	StrongReferenceCount uint64
	LastZeroRefVersion   uint64
	CreatedVersion       uint64
}

const recArtifactRevision = "artifact_revision value"

// Encode returns the value's bytes.
func (v ArtifactRevision) Encode() ([]byte, error) {
	w := newValueWriter(recArtifactRevision, ArtifactRevisionVersion)
	w.check(firstReason(
		digestURIReason("body digest uri", v.BodyDigestURI),
		digestURIReason("manifest digest uri", v.ManifestDigestURI),
		contentTypeReason(v.ContentType)))
	w.u64(v.LogicalSize)
	w.str("body digest uri", v.BodyDigestURI)
	w.str("manifest digest uri", v.ManifestDigestURI)
	w.u64(v.BlockCount)
	w.u32(v.DependencyCount)
	w.u32(v.DependencyDepth)
	w.id32(v.DependencyDigest)
	w.str("content type", v.ContentType)
	w.enum("state", &revisionStateDef, uint8(v.State))
	w.u64(v.ReferenceEpoch)
	w.u64(v.StrongReferenceCount)
	w.u64(v.LastZeroRefVersion)
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeArtifactRevision decodes an ArtifactRevision value.
func DecodeArtifactRevision(b []byte) (ArtifactRevision, error) {
	r := newValueReader(recArtifactRevision, b, ArtifactRevisionVersion)
	var v ArtifactRevision
	v.LogicalSize = r.u64()
	off := r.off
	v.BodyDigestURI = r.str("body digest uri")
	v.ManifestDigestURI = r.str("manifest digest uri")
	v.BlockCount = r.u64()
	v.DependencyCount = r.u32()
	v.DependencyDepth = r.u32()
	v.DependencyDigest = r.id32()
	v.ContentType = r.str("content type")
	if r.err == nil {
		r.check(off, firstReason(
			digestURIReason("body digest uri", v.BodyDigestURI),
			digestURIReason("manifest digest uri", v.ManifestDigestURI),
			contentTypeReason(v.ContentType)))
	}
	v.State = RevisionState(r.enum("state", &revisionStateDef))
	v.ReferenceEpoch = r.u64()
	v.StrongReferenceCount = r.u64()
	v.LastZeroRefVersion = r.u64()
	v.CreatedVersion = r.u64()
	if err := r.end(); err != nil {
		return ArtifactRevision{}, err
	}
	return v, nil
}

// AppendSegment says which append produced a manifest row: the path
// generation the append extended, the delta's logical range in the
// resulting body and the delta's own digest (the Workbench append digest).
type AppendSegment struct {
	BaseGeneration uint64
	DeltaOffset    uint64
	DeltaLength    uint64
	DeltaDigestURI string
}

// ArtifactManifestEntry is the value of an ArtifactManifest row (version 1):
//
//	physical_owner_revision_id [16] | physical_object_index u64 | object_key str |
//	logical_offset u64 | object_offset u64 | length u64 | digest_uri str |
//	append? (base_generation u64 | delta_offset u64 | delta_length u64 | delta_digest_uri str)
//
// PhysicalOwner and PhysicalObjectIndex name the block that holds the
// bytes; the key's object_index is only the row's position.
type ArtifactManifestEntry struct {
	PhysicalOwner       RevisionID
	PhysicalObjectIndex uint64
	ObjectKey           string
	LogicalOffset       uint64
	ObjectOffset        uint64
	Length              uint64
	DigestURI           string
	Append              *AppendSegment
}

const recArtifactManifest = "artifact_manifest value"

// Encode returns the value's bytes.
func (v ArtifactManifestEntry) Encode() ([]byte, error) {
	w := newValueWriter(recArtifactManifest, ArtifactManifestVersion)
	w.check(firstReason(objectKeyReason(v.ObjectKey), digestURIReason("digest uri", v.DigestURI)))
	w.id16(v.PhysicalOwner)
	w.u64(v.PhysicalObjectIndex)
	w.str("object key", v.ObjectKey)
	w.u64(v.LogicalOffset)
	w.u64(v.ObjectOffset)
	w.u64(v.Length)
	w.str("digest uri", v.DigestURI)
	w.present(v.Append != nil)
	if a := v.Append; a != nil {
		w.check(digestURIReason("delta digest uri", a.DeltaDigestURI))
		w.u64(a.BaseGeneration)
		w.u64(a.DeltaOffset)
		w.u64(a.DeltaLength)
		w.str("delta digest uri", a.DeltaDigestURI)
	}
	return w.finish()
}

// DecodeArtifactManifestEntry decodes an ArtifactManifest value.
func DecodeArtifactManifestEntry(b []byte) (ArtifactManifestEntry, error) {
	r := newValueReader(recArtifactManifest, b, ArtifactManifestVersion)
	var v ArtifactManifestEntry
	v.PhysicalOwner = r.id16()
	v.PhysicalObjectIndex = r.u64()
	off := r.off
	v.ObjectKey = r.str("object key")
	if r.err == nil {
		r.check(off, objectKeyReason(v.ObjectKey))
	}
	v.LogicalOffset = r.u64()
	v.ObjectOffset = r.u64()
	v.Length = r.u64()
	off = r.off
	v.DigestURI = r.str("digest uri")
	if r.err == nil {
		r.check(off, digestURIReason("digest uri", v.DigestURI))
	}
	if r.present() {
		a := &AppendSegment{BaseGeneration: r.u64(), DeltaOffset: r.u64(), DeltaLength: r.u64()}
		off = r.off
		a.DeltaDigestURI = r.str("delta digest uri")
		if r.err == nil {
			r.check(off, digestURIReason("delta digest uri", a.DeltaDigestURI))
		}
		v.Append = a
	}
	if err := r.end(); err != nil {
		return ArtifactManifestEntry{}, err
	}
	return v, nil
}

// RevisionRef is the value of a RevisionRef row (version 1):
// reference_epoch_at_add u64 | created_version u64.
type RevisionRef struct {
	ReferenceEpochAtAdd uint64
	CreatedVersion      uint64
}

const recRevisionRef = "revision_ref value"

// Encode returns the value's bytes.
func (v RevisionRef) Encode() ([]byte, error) {
	w := newValueWriter(recRevisionRef, RevisionRefVersion)
	w.u64(v.ReferenceEpochAtAdd)
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeRevisionRef decodes a RevisionRef value.
func DecodeRevisionRef(b []byte) (RevisionRef, error) {
	r := newValueReader(recRevisionRef, b, RevisionRefVersion)
	v := RevisionRef{ReferenceEpochAtAdd: r.u64(), CreatedVersion: r.u64()}
	if err := r.end(); err != nil {
		return RevisionRef{}, err
	}
	return v, nil
}

// GcCandidate is the value of a GcCandidate row (version 1):
//
//	last_zero_ref_version u64 | claim u8 | attempts u32 | evidence? str
//
// Attempts counts deletion attempts; Evidence records why the candidate
// was retried or quarantined.
type GcCandidate struct {
	LastZeroRefVersion uint64
	Claim              GcClaimState
	Attempts           uint32
	Evidence           *string
}

const recGcCandidate = "gc_candidate value"

// Encode returns the value's bytes.
func (v GcCandidate) Encode() ([]byte, error) {
	w := newValueWriter(recGcCandidate, GcCandidateVersion)
	w.u64(v.LastZeroRefVersion)
	w.enum("claim", &gcClaimStateDef, uint8(v.Claim))
	w.u32(v.Attempts)
	w.optStr("evidence", v.Evidence)
	return w.finish()
}

// DecodeGcCandidate decodes a GcCandidate value.
func DecodeGcCandidate(b []byte) (GcCandidate, error) {
	r := newValueReader(recGcCandidate, b, GcCandidateVersion)
	var v GcCandidate
	v.LastZeroRefVersion = r.u64()
	v.Claim = GcClaimState(r.enum("claim", &gcClaimStateDef))
	v.Attempts = r.u32()
	v.Evidence = r.optStr("evidence")
	if err := r.end(); err != nil {
		return GcCandidate{}, err
	}
	return v, nil
}

// EventProjection is the compact state a ChangeEvent records before and
// after a change: for a path, its generation, revision, size and body
// digest; for a whole-workbench event, the workspace revision (or head
// generation) as Generation and, where there is one, a digest such as the
// tree digest. DigestURI is empty or a sha256 digest URI.
type EventProjection struct {
	Generation  uint64
	Revision    RevisionID
	LogicalSize uint64
	DigestURI   string
}

// ChangeEvent is the value of a ChangeEvent row (version 2):
//
//	workbench_id str | incarnation [16] | kind u8 | path? | before? projection |
//	after? projection | commit? [32] | snapshot? u64
//
// where a projection is generation u64 | revision [16] | logical_size u64 |
// digest_uri str. The kind fixes which optional fields exist: a path kind
// has a path and no commit or snapshot; PathCreated has only After,
// PathRemoved only Before, PathReplaced and PathAppended both.
// WorkbenchCommitted has a commit; the snapshot kinds have a snapshot;
// WorkspaceRestored has a commit or a snapshot (its source), not both;
// WorkspaceCreated has neither.
type ChangeEvent struct {
	WorkbenchID string
	Incarnation IncarnationID
	Kind        ChangeEventKind
	Path        []string
	Before      *EventProjection
	After       *EventProjection
	Commit      *CommitID
	Snapshot    *SnapshotID
}

const recChangeEvent = "change_event value"

// shapeReason returns why the optional fields do not fit the kind, or "".
func (v *ChangeEvent) shapeReason() string {
	if !v.Kind.Valid() {
		return ""
	}
	hasPath := v.Path != nil
	wantBefore, wantAfter := -1, -1 // -1: either, 0: absent, 1: present
	commit, snapshot := 0, 0        // 0: absent, 1: present, 2: one of them
	switch v.Kind {
	case ChangeEventKindPathCreated:
		wantBefore, wantAfter = 0, 1
	case ChangeEventKindPathReplaced, ChangeEventKindPathAppended:
		wantBefore, wantAfter = 1, 1
	case ChangeEventKindPathRemoved:
		wantBefore, wantAfter = 1, 0
	case ChangeEventKindWorkbenchCommitted:
		commit = 1
	case ChangeEventKindWorkspaceRestored:
		commit, snapshot = 2, 2
	case ChangeEventKindSnapshotMinted, ChangeEventKindSnapshotRenewed,
		ChangeEventKindSnapshotRetired, ChangeEventKindSnapshotReaped:
		snapshot = 1
	}
	has := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	switch {
	case hasPath != v.Kind.IsPath():
		return fmt.Sprintf("%v event with path present %t", v.Kind, hasPath)
	case wantBefore >= 0 && has(v.Before != nil) != wantBefore,
		wantAfter >= 0 && has(v.After != nil) != wantAfter:
		return fmt.Sprintf("%v event with before present %t and after present %t", v.Kind, v.Before != nil, v.After != nil)
	case commit == 2 && (v.Commit != nil) == (v.Snapshot != nil):
		return fmt.Sprintf("%v event needs exactly one of commit and snapshot", v.Kind)
	case commit != 2 && (has(v.Commit != nil) != commit || has(v.Snapshot != nil) != snapshot):
		return fmt.Sprintf("%v event with commit present %t and snapshot present %t", v.Kind, v.Commit != nil, v.Snapshot != nil)
	}
	return ""
}

func projectionReason(p *EventProjection) string {
	if p == nil || p.DigestURI == "" {
		return ""
	}
	return digestURIReason("event digest uri", p.DigestURI)
}

func (w *valueWriter) projection(p *EventProjection) {
	w.present(p != nil)
	if p != nil {
		w.check(projectionReason(p))
		w.u64(p.Generation)
		w.id16(p.Revision)
		w.u64(p.LogicalSize)
		w.str("event digest uri", p.DigestURI)
	}
}

func (r *valueReader) projection() *EventProjection {
	if !r.present() {
		return nil
	}
	p := &EventProjection{Generation: r.u64(), Revision: r.id16(), LogicalSize: r.u64()}
	off := r.off
	p.DigestURI = r.str("event digest uri")
	if r.err == nil {
		r.check(off, projectionReason(p))
	}
	return p
}

// Encode returns the value's bytes.
func (v ChangeEvent) Encode() ([]byte, error) {
	w := newValueWriter(recChangeEvent, ChangeEventVersion)
	w.check(workbenchIDReason(v.WorkbenchID))
	w.check(v.shapeReason())
	w.str("workbench id", v.WorkbenchID)
	w.id16(v.Incarnation)
	w.enum("kind", &changeEventKindDef, uint8(v.Kind))
	w.present(v.Path != nil)
	if v.Path != nil {
		w.path("path", v.Path)
	}
	w.projection(v.Before)
	w.projection(v.After)
	w.present(v.Commit != nil)
	if v.Commit != nil {
		w.id32(*v.Commit)
	}
	w.present(v.Snapshot != nil)
	if v.Snapshot != nil {
		w.u64(uint64(*v.Snapshot))
	}
	return w.finish()
}

// DecodeChangeEvent decodes a ChangeEvent value.
func DecodeChangeEvent(b []byte) (ChangeEvent, error) {
	r := newValueReader(recChangeEvent, b, ChangeEventVersion)
	var v ChangeEvent
	off := r.off
	v.WorkbenchID = r.str("workbench id")
	if r.err == nil {
		r.check(off, workbenchIDReason(v.WorkbenchID))
	}
	v.Incarnation = r.id16()
	v.Kind = ChangeEventKind(r.enum("kind", &changeEventKindDef))
	if r.present() {
		v.Path = r.path("path")
	}
	v.Before = r.projection()
	v.After = r.projection()
	if r.present() {
		c := CommitID(r.id32())
		v.Commit = &c
	}
	if r.present() {
		s := SnapshotID(r.u64())
		v.Snapshot = &s
	}
	if r.err == nil {
		r.check(1, v.shapeReason())
	}
	if err := r.end(); err != nil {
		return ChangeEvent{}, err
	}
	return v, nil
}

// PublishResult is a Publish operation's deterministic result: the path
// generation and workspace revision it produced and the commit version that
// published it.
type PublishResult struct {
	Generation        uint64
	WorkspaceRevision uint64
	CommitVersion     uint64
}

// OperationFailure is an operation's terminal error: a stable Workbench
// error code and its message.
type OperationFailure struct {
	Code    string
	Message string
}

// PublishOperation is the value of an Operation row of kind Publish
// (version 1):
//
//	phase u8 | input_digest [32] | workbench_id str | incarnation [16] | path |
//	revision [16] | expected_generation? u64 | object_count u64 |
//	cleanup_cursor u64 | result? (generation u64 | workspace_revision u64 |
//	commit_version u64) | failure? (code str | message str)
//
// ExpectedGeneration is absent for a create-only publication and holds the
// generation a replace or append must find. ObjectCount is the size of the
// StagedObject ledger; CleanupCursor is the next ledger sequence cleanup
// handles. At most one of Result and Failure is present.
type PublishOperation struct {
	Phase              PublishPhase
	InputDigest        [32]byte
	WorkbenchID        string
	Incarnation        IncarnationID
	Path               []string
	Revision           RevisionID
	ExpectedGeneration *uint64
	ObjectCount        uint64
	CleanupCursor      uint64
	Result             *PublishResult
	Failure            *OperationFailure
}

const recPublishOperation = "operation value (publish)"

// Encode returns the value's bytes.
func (v PublishOperation) Encode() ([]byte, error) {
	w := newValueWriter(recPublishOperation, PublishOperationVersion)
	w.check(workbenchIDReason(v.WorkbenchID))
	if v.Result != nil && v.Failure != nil {
		w.fail("both a result and a failure", nil)
	}
	w.enum("phase", &publishPhaseDef, uint8(v.Phase))
	w.id32(v.InputDigest)
	w.str("workbench id", v.WorkbenchID)
	w.id16(v.Incarnation)
	w.path("path", v.Path)
	w.id16(v.Revision)
	w.present(v.ExpectedGeneration != nil)
	if v.ExpectedGeneration != nil {
		w.u64(*v.ExpectedGeneration)
	}
	w.u64(v.ObjectCount)
	w.u64(v.CleanupCursor)
	w.present(v.Result != nil)
	if res := v.Result; res != nil {
		w.u64(res.Generation)
		w.u64(res.WorkspaceRevision)
		w.u64(res.CommitVersion)
	}
	w.present(v.Failure != nil)
	if f := v.Failure; f != nil {
		w.str("failure code", f.Code)
		w.str("failure message", f.Message)
	}
	return w.finish()
}

// DecodePublishOperation decodes the value of an Operation row of kind
// Publish.
func DecodePublishOperation(b []byte) (PublishOperation, error) {
	r := newValueReader(recPublishOperation, b, PublishOperationVersion)
	var v PublishOperation
	v.Phase = PublishPhase(r.enum("phase", &publishPhaseDef))
	v.InputDigest = r.id32()
	off := r.off
	v.WorkbenchID = r.str("workbench id")
	if r.err == nil {
		r.check(off, workbenchIDReason(v.WorkbenchID))
	}
	v.Incarnation = r.id16()
	v.Path = r.path("path")
	v.Revision = r.id16()
	if r.present() {
		g := r.u64()
		v.ExpectedGeneration = &g
	}
	v.ObjectCount = r.u64()
	v.CleanupCursor = r.u64()
	if r.present() {
		v.Result = &PublishResult{Generation: r.u64(), WorkspaceRevision: r.u64(), CommitVersion: r.u64()}
	}
	off = r.off
	if r.present() {
		v.Failure = &OperationFailure{Code: r.str("failure code"), Message: r.str("failure message")}
		if r.err == nil && v.Result != nil {
			r.failAt(off, "both a result and a failure", nil)
		}
	}
	if err := r.end(); err != nil {
		return PublishOperation{}, err
	}
	return v, nil
}

// StagedObject is the value of a StagedObject row, one entry of a
// publication's staging ledger (version 1):
//
//	revision [16] | object_key str | upload_id? str | expected_length u64 |
//	expected_digest_uri str | provider_state u8 | cleanup_state u8
//
// UploadID is the multipart upload id, when the object is uploaded in parts.
type StagedObject struct {
	Revision          RevisionID
	ObjectKey         string
	UploadID          *string
	ExpectedLength    uint64
	ExpectedDigestURI string
	Provider          StagedProviderState
	Cleanup           StagedCleanupState
}

const recStagedObject = "staged_object value"

// Encode returns the value's bytes.
func (v StagedObject) Encode() ([]byte, error) {
	w := newValueWriter(recStagedObject, StagedObjectVersion)
	w.check(firstReason(objectKeyReason(v.ObjectKey), digestURIReason("expected digest uri", v.ExpectedDigestURI)))
	w.id16(v.Revision)
	w.str("object key", v.ObjectKey)
	w.optStr("upload id", v.UploadID)
	w.u64(v.ExpectedLength)
	w.str("expected digest uri", v.ExpectedDigestURI)
	w.enum("provider state", &stagedProviderStateDef, uint8(v.Provider))
	w.enum("cleanup state", &stagedCleanupStateDef, uint8(v.Cleanup))
	return w.finish()
}

// DecodeStagedObject decodes a StagedObject value.
func DecodeStagedObject(b []byte) (StagedObject, error) {
	r := newValueReader(recStagedObject, b, StagedObjectVersion)
	var v StagedObject
	v.Revision = r.id16()
	off := r.off
	v.ObjectKey = r.str("object key")
	if r.err == nil {
		r.check(off, objectKeyReason(v.ObjectKey))
	}
	v.UploadID = r.optStr("upload id")
	v.ExpectedLength = r.u64()
	off = r.off
	v.ExpectedDigestURI = r.str("expected digest uri")
	if r.err == nil {
		r.check(off, digestURIReason("expected digest uri", v.ExpectedDigestURI))
	}
	v.Provider = StagedProviderState(r.enum("provider state", &stagedProviderStateDef))
	v.Cleanup = StagedCleanupState(r.enum("cleanup state", &stagedCleanupStateDef))
	if err := r.end(); err != nil {
		return StagedObject{}, err
	}
	return v, nil
}

// SecondaryIndexEntry is the value of a SecondaryIndex row (version 1):
// path_generation u64 | artifact_revision_id [16]. A reader rechecks the
// workspace marker and the path at its read version before using a row.
type SecondaryIndexEntry struct {
	PathGeneration uint64
	Revision       RevisionID
}

const recSecondaryIndex = "secondary_index value"

// Encode returns the value's bytes.
func (v SecondaryIndexEntry) Encode() ([]byte, error) {
	w := newValueWriter(recSecondaryIndex, SecondaryIndexVersion)
	w.u64(v.PathGeneration)
	w.id16(v.Revision)
	return w.finish()
}

// DecodeSecondaryIndexEntry decodes a SecondaryIndex value.
func DecodeSecondaryIndexEntry(b []byte) (SecondaryIndexEntry, error) {
	r := newValueReader(recSecondaryIndex, b, SecondaryIndexVersion)
	v := SecondaryIndexEntry{PathGeneration: r.u64(), Revision: r.id16()}
	if err := r.end(); err != nil {
		return SecondaryIndexEntry{}, err
	}
	return v, nil
}

// ---------------------------------------------------------------------------
// Index scalars

// IndexScalarCodecVersion is the version of the index scalar codec below.
// Like keys, encoded scalars carry no version of their own: the store's
// schema marker gates the codec, and a new codec would take new kind tags.
const IndexScalarCodecVersion = 1

// IndexScalarKind is the type of an index scalar and, in the codec, its
// leading tag byte. Scalars of different kinds order by this tag:
//
//	Null < Bool < Signed < Unsigned < Float < Timestamp < Bytes < String
//
// Numbers of different kinds are never compared numerically: the seed's
// queries compare only scalars of one type.
type IndexScalarKind uint8

// Index scalar kinds, in cross-kind order.
const (
	IndexScalarNull      IndexScalarKind = 0x01
	IndexScalarBool      IndexScalarKind = 0x02
	IndexScalarSigned    IndexScalarKind = 0x03
	IndexScalarUnsigned  IndexScalarKind = 0x04
	IndexScalarFloat     IndexScalarKind = 0x05
	IndexScalarTimestamp IndexScalarKind = 0x06
	IndexScalarBytes     IndexScalarKind = 0x07
	IndexScalarString    IndexScalarKind = 0x08
)

var indexScalarKindDef = enumDef{"IndexScalarKind", []string{
	"Null", "Bool", "Signed", "Unsigned", "Float", "Timestamp", "Bytes", "String",
}}

func (k IndexScalarKind) String() string { return indexScalarKindDef.name(uint8(k)) }

// Valid reports whether k is a known kind.
func (k IndexScalarKind) Valid() bool { return indexScalarKindDef.valid(uint8(k)) }

// IndexScalar is one typed value of a secondary index or of a path's index
// projection. Kind selects the one field that holds the value; the others
// are ignored. Use the constructors, which normalize: a timestamp is kept
// in UTC without a monotonic reading, bytes are copied.
type IndexScalar struct {
	Kind     IndexScalarKind
	Bool     bool
	Signed   int64
	Unsigned uint64
	Float    float64 // finite; -0 is encoded, and decodes, as +0
	Time     time.Time
	Bytes    []byte
	Text     string // valid UTF-8
}

// NullScalar returns the null scalar.
func NullScalar() IndexScalar { return IndexScalar{Kind: IndexScalarNull} }

// BoolScalar returns a boolean scalar.
func BoolScalar(b bool) IndexScalar { return IndexScalar{Kind: IndexScalarBool, Bool: b} }

// SignedScalar returns a signed integer scalar.
func SignedScalar(v int64) IndexScalar { return IndexScalar{Kind: IndexScalarSigned, Signed: v} }

// UnsignedScalar returns an unsigned integer scalar.
func UnsignedScalar(v uint64) IndexScalar { return IndexScalar{Kind: IndexScalarUnsigned, Unsigned: v} }

// FloatScalar returns a float scalar; -0 becomes +0. Encoding a NaN or an
// infinity fails.
func FloatScalar(f float64) IndexScalar {
	if f == 0 {
		f = 0
	}
	return IndexScalar{Kind: IndexScalarFloat, Float: f}
}

// TimestampScalar returns a timestamp scalar at nanosecond precision, in
// UTC.
func TimestampScalar(t time.Time) IndexScalar {
	return IndexScalar{Kind: IndexScalarTimestamp, Time: time.Unix(t.Unix(), int64(t.Nanosecond())).UTC()}
}

// BytesScalar returns a bytes scalar holding a copy of b.
func BytesScalar(b []byte) IndexScalar {
	return IndexScalar{Kind: IndexScalarBytes, Bytes: append([]byte{}, b...)}
}

// StringScalar returns a string scalar. Encoding fails unless s is UTF-8.
func StringScalar(s string) IndexScalar { return IndexScalar{Kind: IndexScalarString, Text: s} }

// CompareIndexScalars orders two valid scalars as their encodings order:
// by kind (see IndexScalarKind), then by value: false < true, numbers
// numerically, timestamps by time, bytes and strings bytewise.
func CompareIndexScalars(a, b IndexScalar) int {
	if a.Kind != b.Kind {
		return cmp.Compare(a.Kind, b.Kind)
	}
	switch a.Kind {
	case IndexScalarBool:
		switch {
		case a.Bool == b.Bool:
			return 0
		case b.Bool:
			return -1
		default:
			return 1
		}
	case IndexScalarSigned:
		return cmp.Compare(a.Signed, b.Signed)
	case IndexScalarUnsigned:
		return cmp.Compare(a.Unsigned, b.Unsigned)
	case IndexScalarFloat:
		return cmp.Compare(a.Float, b.Float)
	case IndexScalarTimestamp:
		if c := cmp.Compare(a.Time.Unix(), b.Time.Unix()); c != 0 {
			return c
		}
		return cmp.Compare(a.Time.Nanosecond(), b.Time.Nanosecond())
	case IndexScalarBytes:
		return bytes.Compare(a.Bytes, b.Bytes)
	case IndexScalarString:
		return strings.Compare(a.Text, b.Text)
	}
	return 0
}

const recIndexScalar = "index scalar"

const signBit = 1 << 63

// AppendIndexScalar appends the order-preserving encoding of v to dst:
//
//	Null       0x01
//	Bool       0x02 | 0x00 or 0x01
//	Signed     0x03 | u64(v XOR 1<<63)
//	Unsigned   0x04 | u64(v)
//	Float      0x05 | u64(bits): the IEEE 754 bits with the sign bit set for
//	           a positive value, every bit inverted for a negative one
//	Timestamp  0x06 | u64(unix seconds XOR 1<<63) | u32(nanoseconds)
//	Bytes      0x07 | escaped bytes | 0x00 0x00
//	String     0x08 | escaped bytes | 0x00 0x00
//
// Escaping writes 0x00 as 0x00 0xff and every other byte as itself, so the
// terminator 0x00 0x00 cannot occur inside. Integers are big-endian. For
// two valid scalars a and b, bytes.Compare(enc(a), enc(b)) ==
// CompareIndexScalars(a, b), and no encoding is a prefix of another, so a
// key may continue after the value. Bytes and strings hold at most
// MaxIndexScalarBytes; floats are finite, -0 is written as +0.
func AppendIndexScalar(dst []byte, v IndexScalar) ([]byte, error) {
	fail := func(reason string) ([]byte, error) {
		return dst, &RecordError{Op: "encode", Record: recIndexScalar, Reason: reason}
	}
	switch v.Kind {
	case IndexScalarNull:
		return append(dst, byte(v.Kind)), nil
	case IndexScalarBool:
		b := byte(0)
		if v.Bool {
			b = 1
		}
		return append(dst, byte(v.Kind), b), nil
	case IndexScalarSigned:
		return binary.BigEndian.AppendUint64(append(dst, byte(v.Kind)), uint64(v.Signed)^signBit), nil
	case IndexScalarUnsigned:
		return binary.BigEndian.AppendUint64(append(dst, byte(v.Kind)), v.Unsigned), nil
	case IndexScalarFloat:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return fail(fmt.Sprintf("float %v is not finite", v.Float))
		}
		bits := math.Float64bits(v.Float)
		switch {
		case v.Float == 0:
			bits = signBit
		case bits&signBit != 0:
			bits = ^bits
		default:
			bits |= signBit
		}
		return binary.BigEndian.AppendUint64(append(dst, byte(v.Kind)), bits), nil
	case IndexScalarTimestamp:
		dst = binary.BigEndian.AppendUint64(append(dst, byte(v.Kind)), uint64(v.Time.Unix())^signBit)
		return binary.BigEndian.AppendUint32(dst, uint32(v.Time.Nanosecond())), nil
	case IndexScalarBytes:
		if len(v.Bytes) > MaxIndexScalarBytes {
			return fail(fmt.Sprintf("%d bytes, more than %d", len(v.Bytes), MaxIndexScalarBytes))
		}
		return appendEscaped(append(dst, byte(v.Kind)), v.Bytes), nil
	case IndexScalarString:
		switch {
		case len(v.Text) > MaxIndexScalarBytes:
			return fail(fmt.Sprintf("string of %d bytes, more than %d", len(v.Text), MaxIndexScalarBytes))
		case !utf8.ValidString(v.Text):
			return fail("string is not UTF-8")
		}
		return appendEscaped(append(dst, byte(v.Kind)), []byte(v.Text)), nil
	}
	return dst, &RecordError{Op: "encode", Record: recIndexScalar, Reason: fmt.Sprintf("kind %d", v.Kind), Err: ErrUnknownEnum}
}

func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 0)
}

// EncodeIndexScalar returns the encoding of v (see AppendIndexScalar).
func EncodeIndexScalar(v IndexScalar) ([]byte, error) { return AppendIndexScalar(nil, v) }

// DecodeIndexScalar decodes the one scalar at the start of b and returns
// it with the number of bytes it took. It accepts exactly the encodings
// AppendIndexScalar writes; anything else wraps ErrBadRecord (an unknown
// kind tag also ErrUnknownEnum).
func DecodeIndexScalar(b []byte) (IndexScalar, int, error) {
	fail := func(off int, reason string, cause error) (IndexScalar, int, error) {
		return IndexScalar{}, 0, &RecordError{Op: "decode", Record: recIndexScalar, Offset: off, Reason: reason, Err: cause}
	}
	need := func(n int) bool { return len(b) >= n }
	if !need(1) {
		return fail(0, "empty", nil)
	}
	kind := IndexScalarKind(b[0])
	switch kind {
	case IndexScalarNull:
		return NullScalar(), 1, nil
	case IndexScalarBool:
		if !need(2) {
			return fail(1, "truncated bool", nil)
		}
		if b[1] > 1 {
			return fail(1, fmt.Sprintf("bool byte %d", b[1]), nil)
		}
		return BoolScalar(b[1] == 1), 2, nil
	case IndexScalarSigned, IndexScalarUnsigned, IndexScalarFloat:
		if !need(9) {
			return fail(1, "truncated "+kind.String(), nil)
		}
		u := binary.BigEndian.Uint64(b[1:])
		switch kind {
		case IndexScalarSigned:
			return SignedScalar(int64(u ^ signBit)), 9, nil
		case IndexScalarUnsigned:
			return UnsignedScalar(u), 9, nil
		}
		if u&signBit != 0 {
			u &^= signBit
		} else {
			u = ^u
		}
		f := math.Float64frombits(u)
		if math.IsNaN(f) || math.IsInf(f, 0) || u == signBit {
			return fail(1, fmt.Sprintf("float bits %#016x are not a finite canonical float", u), nil)
		}
		return FloatScalar(f), 9, nil
	case IndexScalarTimestamp:
		if !need(13) {
			return fail(1, "truncated timestamp", nil)
		}
		sec := int64(binary.BigEndian.Uint64(b[1:]) ^ signBit)
		nsec := binary.BigEndian.Uint32(b[9:])
		if nsec >= 1e9 {
			return fail(9, fmt.Sprintf("timestamp nanoseconds %d", nsec), nil)
		}
		return IndexScalar{Kind: IndexScalarTimestamp, Time: time.Unix(sec, int64(nsec)).UTC()}, 13, nil
	case IndexScalarBytes, IndexScalarString:
		out := []byte{}
		for i := 1; ; {
			if i >= len(b) {
				return fail(i, "unterminated "+kind.String(), nil)
			}
			c := b[i]
			if c != 0 {
				out = append(out, c)
				i++
			} else {
				if i+1 >= len(b) {
					return fail(i, "unterminated "+kind.String(), nil)
				}
				switch b[i+1] {
				case 0:
					if len(out) > MaxIndexScalarBytes {
						return fail(1, fmt.Sprintf("%d bytes, more than %d", len(out), MaxIndexScalarBytes), nil)
					}
					if kind == IndexScalarBytes {
						return IndexScalar{Kind: kind, Bytes: out}, i + 2, nil
					}
					if !utf8.Valid(out) {
						return fail(1, "string is not UTF-8", nil)
					}
					return StringScalar(string(out)), i + 2, nil
				case 0xff:
					out = append(out, 0)
					i += 2
				default:
					return fail(i, fmt.Sprintf("escape 0x00 0x%02x", b[i+1]), nil)
				}
			}
			if len(out) > MaxIndexScalarBytes {
				return fail(1, fmt.Sprintf("more than %d bytes", MaxIndexScalarBytes), nil)
			}
		}
	}
	return fail(0, fmt.Sprintf("kind tag 0x%02x", b[0]), ErrUnknownEnum)
}

// IndexField is one field of a path's index projection: the index field id
// and the field's value.
type IndexField struct {
	ID    string
	Value IndexScalar
}

// IndexProjection is a path's typed index projection: its fields in
// strictly ascending order of id (bytewise), each id 1 to
// MaxIndexFieldIDBytes bytes of UTF-8. Its compact encoding is
//
//	u16(count) | count × (u8(len(id)) | id | scalar)
//
// with each scalar in the index scalar codec, so a SecondaryIndex key can
// carry the encoded value unchanged.
type IndexProjection []IndexField

// SortedIndexProjection returns a copy of fields sorted by id, the order a
// projection must have; it does not remove duplicates, which encoding
// rejects.
func SortedIndexProjection(fields []IndexField) IndexProjection {
	p := append(IndexProjection(nil), fields...)
	slices.SortStableFunc(p, func(a, b IndexField) int { return strings.Compare(a.ID, b.ID) })
	return p
}

// Lookup returns the value of field id.
func (p IndexProjection) Lookup(id string) (IndexScalar, bool) {
	i, ok := slices.BinarySearchFunc(p, id, func(f IndexField, id string) int { return strings.Compare(f.ID, id) })
	if !ok {
		return IndexScalar{}, false
	}
	return p[i].Value, true
}

const recIndexProjection = "index projection"

func (p IndexProjection) appendTo(dst []byte) ([]byte, error) {
	fail := func(reason string, cause error) ([]byte, error) {
		return dst, &RecordError{Op: "encode", Record: recIndexProjection, Reason: reason, Err: cause}
	}
	if len(p) > math.MaxUint16 {
		return fail(fmt.Sprintf("%d fields, more than %d", len(p), math.MaxUint16), nil)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(p)))
	for i, f := range p {
		if reason := indexFieldIDReason(f.ID); reason != "" {
			return fail(reason, nil)
		}
		if i > 0 && p[i-1].ID >= f.ID {
			return fail(fmt.Sprintf("field %q does not follow %q in ascending order", f.ID, p[i-1].ID), nil)
		}
		dst = append(dst, byte(len(f.ID)))
		dst = append(dst, f.ID...)
		var err error
		if dst, err = AppendIndexScalar(dst, f.Value); err != nil {
			return fail(fmt.Sprintf("field %q: %v", f.ID, err), err)
		}
	}
	return dst, nil
}

// decodeIndexProjection decodes a projection at the start of b and returns
// the number of bytes it took. A projection without fields decodes as nil.
func decodeIndexProjection(b []byte) (IndexProjection, int, error) {
	fail := func(off int, reason string, cause error) (IndexProjection, int, error) {
		return nil, 0, &RecordError{Op: "decode", Record: recIndexProjection, Offset: off, Reason: reason, Err: cause}
	}
	if len(b) < 2 {
		return fail(0, "truncated field count", nil)
	}
	n := int(binary.BigEndian.Uint16(b))
	off := 2
	var p IndexProjection
	for i := 0; i < n; i++ {
		if off >= len(b) {
			return fail(off, "truncated field id length", nil)
		}
		l := int(b[off])
		if l > len(b)-off-1 {
			return fail(off, fmt.Sprintf("field id length %d, only %d bytes follow", l, len(b)-off-1), nil)
		}
		id := string(b[off+1 : off+1+l])
		if reason := indexFieldIDReason(id); reason != "" {
			return fail(off, reason, nil)
		}
		if i > 0 && p[i-1].ID >= id {
			return fail(off, fmt.Sprintf("field %q does not follow %q in ascending order", id, p[i-1].ID), nil)
		}
		off += 1 + l
		v, m, err := DecodeIndexScalar(b[off:])
		if err != nil {
			return fail(off, fmt.Sprintf("field %q: %v", id, err), err)
		}
		off += m
		p = append(p, IndexField{ID: id, Value: v})
	}
	return p, off, nil
}
