package nokv

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/cairnstore/cairn/shards"
)

// Snapshot records: the seed's SnapshotRef, SnapshotAlias and HistoryHold,
// and cairn's LeaseClock, the shard's persisted lease clock.
//
// A leased snapshot is a SnapshotRef, an optional SnapshotAlias naming it
// and a HistoryHold of kind Snapshot, written in one command together with
// the engine's hold on the root the snapshot froze (head.Tx.Hold): the
// HistoryHold is the typed record of that hold, the engine hold is what
// keeps the root's objects. The SnapshotRef carries the held root's hash,
// so that a frozen read opens that root (head.Store.At) directly.

// Value format versions of the snapshot records.
const (
	SnapshotRefVersion   = 1
	SnapshotAliasVersion = 1
	HistoryHoldVersion   = 1
	LeaseClockVersion    = 1
)

// Bounds of the snapshot records' variable fields.
const (
	// MaxAliasBytes is the longest snapshot alias (the seed's name rule:
	// case-sensitive UTF-8 without NUL, at most 128 bytes).
	MaxAliasBytes = 128
	// MaxAnnotationBytes is the longest canonical annotation a snapshot
	// stores, the reference's bound on {"reason":…, "metadata":…}.
	MaxAnnotationBytes = 4096
)

// CheckAlias checks a snapshot alias: 1 to 128 bytes of UTF-8 without
// NUL. The error is a *RuleError whose text is the reason.
func CheckAlias(alias string) error {
	if reason := aliasReason(alias); reason != "" {
		return &RuleError{Reason: reason}
	}
	return nil
}

func aliasReason(alias string) string {
	switch {
	case alias == "":
		return "snapshot name is empty"
	case len(alias) > MaxAliasBytes:
		return fmt.Sprintf("snapshot name is %d bytes, longer than %d", len(alias), MaxAliasBytes)
	case !utf8.ValidString(alias):
		return "snapshot name is not UTF-8"
	case strings.IndexByte(alias, 0) >= 0:
		return "snapshot name contains NUL"
	}
	return ""
}

// annotationReason checks a stored annotation: a JSON object of at most
// MaxAnnotationBytes. Its canonical form is the Workbench's business; the
// record keeps the bytes it was given.
func annotationReason(field string, b []byte) string {
	switch {
	case len(b) == 0:
		return field + " is empty"
	case len(b) > MaxAnnotationBytes:
		return fmt.Sprintf("%s is %d bytes, longer than %d", field, len(b), MaxAnnotationBytes)
	case b[0] != '{' || !json.Valid(b):
		return field + " is not a JSON object"
	}
	return ""
}

// SnapshotRefKey is root_id | workspace_incarnation_id | u64(snapshot_id).
type SnapshotRefKey struct {
	Root        RootID
	Incarnation IncarnationID
	Snapshot    SnapshotID
}

const recSnapshotRefKey = "snapshot_ref key"

// Family returns FamilySnapshotRef.
func (SnapshotRefKey) Family() shards.Family { return FamilySnapshotRef }

// Encode returns the key's bytes.
func (k SnapshotRefKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).U64(uint64(k.Snapshot)).Build()
}

// ParseSnapshotRefKey parses a SnapshotRef key.
func ParseSnapshotRefKey(b []byte) (SnapshotRefKey, error) {
	r := shards.NewKeyReader(b)
	k := SnapshotRefKey{Root: r.ID16(), Incarnation: r.ID16(), Snapshot: SnapshotID(r.U64())}
	if err := r.End(); err != nil {
		return SnapshotRefKey{}, keyError("decode", recSnapshotRefKey, r.Offset(), err)
	}
	return k, nil
}

// SnapshotRefPrefix returns the scan prefix of every snapshot of one
// workspace incarnation, in snapshot id order; they share one shard.
func SnapshotRefPrefix(root RootID, inc IncarnationID) []byte {
	return append(RootPrefix(root), inc[:]...)
}

// SnapshotRef is the value of a SnapshotRef row (version 1):
//
//	read_version u64 | alias? str | lease_deadline_ms u64 | state u8 |
//	consumer_count u64 | consumer_epoch u64 | annotation str |
//	retire_annotation? str | held_root [32] | created_version u64 |
//	mint_sequence u32
//
// ReadVersion is the commit sequence of the state the snapshot froze, and
// HeldRoot that state's root hash, kept by an engine hold until the
// snapshot is retired or reaped. LeaseDeadline is Unix milliseconds,
// judged against the shard's LeaseClock. Annotation is the canonical JSON
// {"metadata":…,"reason":…}; RetireAnnotation the one a retirement with a
// reason recorded. Alias is the name the snapshot was minted with (an
// alias may have moved to a newer mint since). CreatedVersion is the
// commit version of the mint and MintSequence the sequence of its
// SnapshotMinted event in that commit: together the mint's position in
// the change feed, so snapshots list in mint order by them even when one
// group commit carries several mints.
type SnapshotRef struct {
	ReadVersion      uint64
	Alias            *string
	LeaseDeadline    uint64
	State            SnapshotState
	ConsumerCount    uint64
	ConsumerEpoch    uint64
	Annotation       []byte
	RetireAnnotation []byte // nil when none
	HeldRoot         [32]byte
	CreatedVersion   uint64
	MintSequence     uint32
}

const recSnapshotRef = "snapshot_ref value"

// Encode returns the value's bytes.
func (v SnapshotRef) Encode() ([]byte, error) {
	w := newValueWriter(recSnapshotRef, SnapshotRefVersion)
	w.u64(v.ReadVersion)
	if v.Alias != nil {
		w.check(aliasReason(*v.Alias))
	}
	w.optStr("alias", v.Alias)
	w.u64(v.LeaseDeadline)
	w.enum("state", &snapshotStateDef, uint8(v.State))
	w.u64(v.ConsumerCount)
	w.u64(v.ConsumerEpoch)
	w.check(annotationReason("annotation", v.Annotation))
	w.str("annotation", string(v.Annotation))
	w.present(v.RetireAnnotation != nil)
	if v.RetireAnnotation != nil {
		w.check(annotationReason("retire annotation", v.RetireAnnotation))
		w.str("retire annotation", string(v.RetireAnnotation))
	}
	w.id32(v.HeldRoot)
	w.u64(v.CreatedVersion)
	w.u32(v.MintSequence)
	return w.finish()
}

// DecodeSnapshotRef decodes a SnapshotRef value.
func DecodeSnapshotRef(b []byte) (SnapshotRef, error) {
	r := newValueReader(recSnapshotRef, b, SnapshotRefVersion)
	var v SnapshotRef
	v.ReadVersion = r.u64()
	off := r.offset()
	if v.Alias = r.optStr("alias"); v.Alias != nil {
		r.check(off, aliasReason(*v.Alias))
	}
	v.LeaseDeadline = r.u64()
	v.State = SnapshotState(r.enum("state", &snapshotStateDef))
	v.ConsumerCount = r.u64()
	v.ConsumerEpoch = r.u64()
	off = r.offset()
	v.Annotation = []byte(r.str("annotation"))
	if r.err == nil {
		r.check(off, annotationReason("annotation", v.Annotation))
	}
	if r.present() {
		off = r.offset()
		v.RetireAnnotation = []byte(r.str("retire annotation"))
		if r.err == nil {
			r.check(off, annotationReason("retire annotation", v.RetireAnnotation))
		}
	}
	v.HeldRoot = r.id32()
	v.CreatedVersion = r.u64()
	v.MintSequence = r.u32()
	if err := r.end(); err != nil {
		return SnapshotRef{}, err
	}
	return v, nil
}

// SnapshotAliasKey is root_id | workspace_incarnation_id | u16(len(alias))
// | alias.
type SnapshotAliasKey struct {
	Root        RootID
	Incarnation IncarnationID
	Alias       string
}

const recSnapshotAliasKey = "snapshot_alias key"

// Family returns FamilySnapshotAlias.
func (SnapshotAliasKey) Family() shards.Family { return FamilySnapshotAlias }

// Encode returns the key's bytes.
func (k SnapshotAliasKey) Encode() ([]byte, error) {
	if reason := aliasReason(k.Alias); reason != "" {
		return nil, keyFail("encode", recSnapshotAliasKey, 0, reason)
	}
	return shards.NewKey().ID16(k.Root).ID16(k.Incarnation).Name(k.Alias).Build()
}

// ParseSnapshotAliasKey parses a SnapshotAlias key.
func ParseSnapshotAliasKey(b []byte) (SnapshotAliasKey, error) {
	r := shards.NewKeyReader(b)
	k := SnapshotAliasKey{Root: r.ID16(), Incarnation: r.ID16()}
	alias := r.Name()
	if err := r.End(); err != nil {
		return SnapshotAliasKey{}, keyError("decode", recSnapshotAliasKey, r.Offset(), err)
	}
	if reason := aliasReason(string(alias)); reason != "" {
		return SnapshotAliasKey{}, keyFail("decode", recSnapshotAliasKey, 2*idLen, reason)
	}
	k.Alias = string(alias)
	return k, nil
}

// SnapshotAlias is the value of a SnapshotAlias row (version 1):
//
//	snapshot_id u64 | alias_generation u64 | state u8
//
// Snapshot is the newest mint under the name; AliasGeneration counts the
// mints that took it (1 for the first). State is the terminal lifecycle
// projection of that snapshot: Active while it lives, Retired or Reaped
// once it ended. A terminal projection never falls back to an older mint.
type SnapshotAlias struct {
	Snapshot        SnapshotID
	AliasGeneration uint64
	State           SnapshotState
}

const recSnapshotAlias = "snapshot_alias value"

// Encode returns the value's bytes.
func (v SnapshotAlias) Encode() ([]byte, error) {
	w := newValueWriter(recSnapshotAlias, SnapshotAliasVersion)
	if v.Snapshot == 0 {
		w.check("snapshot id 0")
	}
	w.u64(uint64(v.Snapshot))
	w.u64(v.AliasGeneration)
	w.enum("state", &snapshotStateDef, uint8(v.State))
	return w.finish()
}

// DecodeSnapshotAlias decodes a SnapshotAlias value.
func DecodeSnapshotAlias(b []byte) (SnapshotAlias, error) {
	r := newValueReader(recSnapshotAlias, b, SnapshotAliasVersion)
	var v SnapshotAlias
	off := r.offset()
	if v.Snapshot = SnapshotID(r.u64()); r.err == nil && v.Snapshot == 0 {
		r.check(off, "snapshot id 0")
	}
	v.AliasGeneration = r.u64()
	v.State = SnapshotState(r.enum("state", &snapshotStateDef))
	if err := r.end(); err != nil {
		return SnapshotAlias{}, err
	}
	return v, nil
}

// HistoryHoldKey is root_id | u8(hold_kind) | hold_id, where the hold id
// is discriminated by the kind: a Snapshot hold's is the u64 snapshot id,
// a BuildCommit or Restore hold's the 16-byte operation id. Snapshot ids
// are unique within a root, so a Snapshot hold key is too.
type HistoryHoldKey struct {
	Root     RootID
	Kind     HistoryHoldKind
	Snapshot SnapshotID  // Kind Snapshot
	Op       OperationID // Kind BuildCommit, Restore
}

const recHistoryHoldKey = "history_hold key"

// SnapshotHoldKey returns the key of the hold of snapshot id.
func SnapshotHoldKey(root RootID, id SnapshotID) HistoryHoldKey {
	return HistoryHoldKey{Root: root, Kind: HistoryHoldKindSnapshot, Snapshot: id}
}

// Family returns FamilyHistoryHold.
func (HistoryHoldKey) Family() shards.Family { return FamilyHistoryHold }

// Encode returns the key's bytes.
func (k HistoryHoldKey) Encode() ([]byte, error) {
	kb := shards.NewKey().ID16(k.Root).U8(uint8(k.Kind))
	switch k.Kind {
	case HistoryHoldKindSnapshot:
		kb.U64(uint64(k.Snapshot))
	case HistoryHoldKindBuildCommit, HistoryHoldKindRestore:
		kb.ID16(k.Op)
	default:
		return nil, &RecordError{Op: "encode", Record: recHistoryHoldKey, Reason: fmt.Sprintf("hold kind %d", k.Kind), Err: ErrUnknownEnum}
	}
	return kb.Build()
}

// ParseHistoryHoldKey parses a HistoryHold key.
func ParseHistoryHoldKey(b []byte) (HistoryHoldKey, error) {
	r := shards.NewKeyReader(b)
	k := HistoryHoldKey{Root: r.ID16()}
	kind := r.U8()
	if r.Err() == nil {
		var err error
		if k.Kind, err = ParseHistoryHoldKind(kind); err != nil {
			return HistoryHoldKey{}, &RecordError{Op: "decode", Record: recHistoryHoldKey, Offset: idLen, Reason: err.Error(), Err: ErrUnknownEnum}
		}
	}
	switch k.Kind {
	case HistoryHoldKindSnapshot:
		k.Snapshot = SnapshotID(r.U64())
	default:
		k.Op = r.ID16()
	}
	if err := r.End(); err != nil {
		return HistoryHoldKey{}, keyError("decode", recHistoryHoldKey, r.Offset(), err)
	}
	return k, nil
}

// HistoryHold is the value of a HistoryHold row (version 1):
//
//	read_version u64 | source_snapshot? u64 | state u8 | created_version u64
//
// ReadVersion is the commit sequence of the held state; SourceSnapshot
// names the snapshot a Restore hold reads from.
type HistoryHold struct {
	ReadVersion    uint64
	SourceSnapshot *SnapshotID
	State          HistoryHoldState
	CreatedVersion uint64
}

const recHistoryHold = "history_hold value"

// Encode returns the value's bytes.
func (v HistoryHold) Encode() ([]byte, error) {
	w := newValueWriter(recHistoryHold, HistoryHoldVersion)
	w.u64(v.ReadVersion)
	w.present(v.SourceSnapshot != nil)
	if v.SourceSnapshot != nil {
		w.u64(uint64(*v.SourceSnapshot))
	}
	w.enum("state", &historyHoldStateDef, uint8(v.State))
	w.u64(v.CreatedVersion)
	return w.finish()
}

// DecodeHistoryHold decodes a HistoryHold value.
func DecodeHistoryHold(b []byte) (HistoryHold, error) {
	r := newValueReader(recHistoryHold, b, HistoryHoldVersion)
	var v HistoryHold
	v.ReadVersion = r.u64()
	if r.present() {
		id := SnapshotID(r.u64())
		v.SourceSnapshot = &id
	}
	v.State = HistoryHoldState(r.enum("state", &historyHoldStateDef))
	v.CreatedVersion = r.u64()
	if err := r.end(); err != nil {
		return HistoryHold{}, err
	}
	return v, nil
}

// LeaseClockKey is root_id: one lease clock per root.
type LeaseClockKey struct {
	Root RootID
}

const recLeaseClockKey = "lease_clock key"

// Family returns FamilyLeaseClock.
func (LeaseClockKey) Family() shards.Family { return FamilyLeaseClock }

// Encode returns the key's bytes.
func (k LeaseClockKey) Encode() ([]byte, error) {
	return shards.NewKey().ID16(k.Root).Build()
}

// ParseLeaseClockKey parses a LeaseClock key.
func ParseLeaseClockKey(b []byte) (LeaseClockKey, error) {
	r := shards.NewKeyReader(b)
	k := LeaseClockKey{Root: r.ID16()}
	if err := r.End(); err != nil {
		return LeaseClockKey{}, keyError("decode", recLeaseClockKey, r.Offset(), err)
	}
	return k, nil
}

// LeaseClock is the value of the LeaseClock row (version 1):
//
//	high_water_ms u64 | reap_not_before_ms u64
//
// HighWater is the latest wall time, in Unix milliseconds, that a snapshot
// command observed; it never goes back, so a lease judged against it
// never comes back to life when a clock does. ReapNotBefore is set when a
// command observed wall time behind HighWater (a clock regression): no
// snapshot is reaped before wall time reaches it, the high-water mark at
// the regression plus the clock-skew grace. Zero when none was observed.
type LeaseClock struct {
	HighWater     uint64
	ReapNotBefore uint64
}

const recLeaseClock = "lease_clock value"

// Encode returns the value's bytes.
func (v LeaseClock) Encode() ([]byte, error) {
	w := newValueWriter(recLeaseClock, LeaseClockVersion)
	w.u64(v.HighWater)
	w.u64(v.ReapNotBefore)
	return w.finish()
}

// DecodeLeaseClock decodes a LeaseClock value.
func DecodeLeaseClock(b []byte) (LeaseClock, error) {
	r := newValueReader(recLeaseClock, b, LeaseClockVersion)
	var v LeaseClock
	v.HighWater = r.u64()
	v.ReapNotBefore = r.u64()
	if err := r.end(); err != nil {
		return LeaseClock{}, err
	}
	return v, nil
}
