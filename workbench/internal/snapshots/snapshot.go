package snapshots

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/cairnstore/cairn/workbench/internal/core"

	"github.com/cairnstore/cairn/bucket/wire"
	"github.com/cairnstore/cairn/head"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// The snapshot tools: workbench_snapshot (mint), workbench_snapshot_renew,
// workbench_snapshot_retire and workbench_snapshot_list.
//
// A snapshot is a hold on a root. Minting one is one command that, at the
// state its transaction pinned, checks the workbench exists and has a
// commit head, holds that pinned root in the engine (head.Tx.Hold, owner
// "snapshot/<id>") and writes the SnapshotRef (the held root's hash, its
// sequence as read_version, the lease deadline, the annotation), the
// HistoryHold of kind Snapshot that records the hold, the SnapshotAlias
// when the mint is named, the lease clock's new observation and a
// SnapshotMinted event. The state the snapshot freezes is exactly the
// state the command read, so it is the pinned root and not the root the
// command itself commits (which also holds the other commands of its
// group). Retirement and reaping release the engine hold and delete the
// HistoryHold in the command that ends the lease; a frozen read opens the
// held root (snapshot_view.go).
//
// Leases are judged against the shard's persisted lease clock
// (snapshot_lease.go): the lease clock's "now" is the later of the wall
// clock (Options.Now) and the persisted high-water mark, so a lease never
// comes back to life when a clock goes back.

func init() {
	core.RegisterTool("workbench_snapshot", snapshotTool)
	core.RegisterTool("workbench_snapshot_renew", snapshotRenewTool)
	core.RegisterTool("workbench_snapshot_retire", snapshotRetireTool)
	core.RegisterTool("workbench_snapshot_list", snapshotListTool)
}

// Lease bounds, in days, and the length of a day in lease milliseconds.
const (
	defaultTTLDays = 7
	maxTTLDays     = 90
	dayMillis      = 86_400_000
	// maxAnnotationDepth bounds the nesting of a snapshot's metadata
	// object (the object itself is level 1).
	maxAnnotationDepth = 8
)

// expiryWarning is the mint result's note when the caller left ttl_days
// to its default.
const expiryWarning = "snapshot lease defaults to 7 days; renew it with workbench_snapshot_renew or restore a commit for anything that must outlive the lease"

// HoldOwner is the engine hold owner of snapshot id.
func HoldOwner(id nokv.SnapshotID) string { return "snapshot/" + id.String() }

// newSnapshotID derives a snapshot id from a fresh request id: the first
// eight bytes of its SHA-256, big-endian, with 0 (no snapshot) mapped to 1.
// Ids are therefore spread over all of u64 and usually exceed 2^53; the
// tools read and print them as exact integers.
func newSnapshotID(requestID string) nokv.SnapshotID {
	h := sha256.Sum256([]byte("cairn.workbench.snapshot-id.v1\x00" + requestID))
	id := binary.BigEndian.Uint64(h[:8])
	if id == 0 {
		id = 1
	}
	return nokv.SnapshotID(id)
}

// snapshotInput is workbench_snapshot's input.
type snapshotInput struct {
	ID       string         `json:"id"`
	Name     *string        `json:"name"`
	Reason   *string        `json:"reason"`
	Metadata core.JSONValue `json:"metadata"`
	TTLDays  *uint64        `json:"ttl_days"`

	id         string
	ttl        uint64
	annotation []byte // canonical {"metadata":…,"reason":…}
}

func (in *snapshotInput) Resolve(*core.Service) *core.Error {
	var werr *core.Error
	if in.id, werr = core.ParseWorkbenchID(in.ID); werr != nil {
		return werr
	}
	if in.Name != nil {
		if werr := core.CheckSnapshotName(*in.Name); werr != nil {
			return werr
		}
	}
	if in.ttl, werr = ttlDays(in.TTLDays); werr != nil {
		return werr
	}
	in.annotation, werr = snapshotAnnotation(in.Reason, in.Metadata.V)
	return werr
}

// SnapshotInput is workbench_snapshot's input.
type SnapshotInput struct {
	ID string `json:"id"`
	// Name names the snapshot; a later mint of the same name takes the
	// name over, and this snapshot stays reachable by id.
	Name   *string `json:"name,omitempty"`
	Reason *string `json:"reason,omitempty"`
	// Metadata is the caller's annotation: a JSON object (a map, a
	// struct or a json.RawMessage) nested at most 8 deep, or nil.
	Metadata any `json:"metadata,omitempty"`
	// TTLDays is the lease, 1 to 90 days; nil leaves it to 7 days, with
	// an expiry warning.
	TTLDays *uint64 `json:"ttl_days,omitempty"`
}

// SnapshotLease is a snapshot and its lease, as a mint and a renewal
// report it.
type SnapshotLease struct {
	WorkbenchID string  `json:"workbench_id"`
	Path        string  `json:"path"` // the workbench's presentation path
	SnapshotID  uint64  `json:"snapshot_id"`
	Name        *string `json:"name"`         // nil: minted without a name
	ReadVersion uint64  `json:"read_version"` // the commit version it froze
	// The lease's deadline in Unix milliseconds of the lease clock, under
	// both names the contract gives it.
	LeaseExpiresAt     uint64 `json:"lease_expires_at"`
	LeaseExpiresUnixMS uint64 `json:"lease_expires_unix_ms"`
	// Annotation is the canonical {"metadata":…,"reason":…} the mint
	// recorded.
	Annotation json.RawMessage `json:"annotation"`
	State      string          `json:"state"` // alive, expired, retired or reaped
	TTLDays    uint64          `json:"ttl_days"`
}

// SnapshotResult is workbench_snapshot's result.
type SnapshotResult struct {
	core.Success
	SnapshotLease
	// ExpiryWarning is set when the caller left ttl_days to its default.
	ExpiryWarning string `json:"expiry_warning,omitempty"`
}

// ttlDays returns the lease length asked for, default 7 days. The schema
// bounds it to 1..90; the check here keeps the rule beside its use.
func ttlDays(n *uint64) (uint64, *core.Error) {
	if n == nil {
		return defaultTTLDays, nil
	}
	if *n < 1 || *n > maxTTLDays {
		return 0, core.InvalidArgumentsf("ttl_days must be between 1 and %d", maxTTLDays)
	}
	return *n, nil
}

// snapshotAnnotation returns the canonical annotation {"metadata":…,
// "reason":…}: metadata an object nested at most 8 deep (or null), the
// whole at most nokv.MaxAnnotationBytes.
func snapshotAnnotation(reason *string, metadata any) ([]byte, *core.Error) {
	if metadata != nil {
		obj, ok := metadata.(map[string]any)
		if !ok {
			return nil, core.InvalidArguments("metadata must be an object or null")
		}
		if d := jsonDepth(obj); d > maxAnnotationDepth {
			return nil, core.InvalidArgumentsf("metadata is nested %d levels deep; at most %d are allowed", d, maxAnnotationDepth)
		}
	}
	var r any
	if reason != nil {
		r = *reason
	}
	b, err := core.MarshalResult(map[string]any{"reason": r, "metadata": metadata})
	if err != nil {
		return nil, core.CanonicalEncodingFailed("snapshot annotation could not be canonically encoded: " + err.Error())
	}
	if len(b) > nokv.MaxAnnotationBytes {
		return nil, core.InvalidArgumentsf("snapshot annotation is %d bytes when canonically encoded; at most %d are allowed", len(b), nokv.MaxAnnotationBytes)
	}
	return b, nil
}

// retireAnnotation is the annotation a retirement with a reason records,
// {"metadata":null,"reason":…}; nil without a reason.
func retireAnnotation(reason *string) []byte {
	if reason == nil {
		return nil
	}
	b, err := core.MarshalResult(map[string]any{"reason": *reason, "metadata": nil})
	if err != nil {
		panic("workbench: marshal a string: " + err.Error()) // a string always encodes
	}
	return b
}

// jsonDepth is the nesting depth of a decoded JSON value: 0 for a scalar,
// one more than its deepest member for an object or array.
func jsonDepth(v any) int {
	d := 0
	switch x := v.(type) {
	case map[string]any:
		for _, m := range x {
			d = max(d, jsonDepth(m))
		}
		return d + 1
	case []any:
		for _, m := range x {
			d = max(d, jsonDepth(m))
		}
		return d + 1
	}
	return 0
}

// selectorOf returns the snapshot selector of renew and retire: exactly one
// of snapshot_id and name (null counts as absent).
func selectorOf(id *uint64, name *string) (core.SnapshotSelector, *core.Error) {
	switch {
	case id != nil && name != nil:
		return core.SnapshotSelector{}, core.InvalidArguments("snapshot_id and name are mutually exclusive")
	case id == nil && name == nil:
		return core.SnapshotSelector{}, core.InvalidArguments("exactly one of snapshot_id or name is required")
	case name != nil:
		if werr := core.CheckSnapshotName(*name); werr != nil {
			return core.SnapshotSelector{}, werr
		}
		return core.SnapshotSelector{Name: *name, ByName: true}, nil
	}
	return core.IDSelector(*id)
}

// The records a snapshot command reads and writes.

func PutSnapshotRef(s *core.Service, tx *head.Tx, inc nokv.IncarnationID, id nokv.SnapshotID, ref nokv.SnapshotRef) error {
	key, err := nokv.SnapshotRefKey{Root: s.Root(), Incarnation: inc, Snapshot: id}.Encode()
	if err != nil {
		return err
	}
	return core.PutRecord(tx, nokv.FamilySnapshotRef, key, ref.Encode)
}

// endSnapshot ends snapshot id's hold, as retirement and a reap claim do:
// the engine hold is released and the HistoryHold row deleted in the
// same command, and the alias's terminal projection is set to state when
// the alias still names this snapshot.
func endSnapshot(s *core.Service, tx *head.Tx, inc nokv.IncarnationID, id nokv.SnapshotID, ref nokv.SnapshotRef, state nokv.SnapshotState) error {
	tx.Release(HoldOwner(id))
	holdKey, err := nokv.SnapshotHoldKey(s.Root(), id).Encode()
	if err != nil {
		return err
	}
	if err := tx.Delete(nokv.FamilyHistoryHold, holdKey); err != nil {
		return err
	}
	return projectAlias(s, tx, inc, id, ref, state)
}

// projectAlias sets the terminal projection of ref's alias to state when
// the alias still names snapshot id.
func projectAlias(s *core.Service, tx *head.Tx, inc nokv.IncarnationID, id nokv.SnapshotID, ref nokv.SnapshotRef, state nokv.SnapshotState) error {
	if ref.Alias == nil {
		return nil
	}
	a, ok, err := s.SnapshotAlias(tx.Get, inc, *ref.Alias)
	if err != nil || !ok || a.Snapshot != id {
		return err
	}
	a.State = state
	key, err := nokv.SnapshotAliasKey{Root: s.Root(), Incarnation: inc, Alias: *ref.Alias}.Encode()
	if err != nil {
		return err
	}
	return core.PutRecord(tx, nokv.FamilySnapshotAlias, key, a.Encode)
}

// snapshotEvent appends a snapshot event of kind to the change feed.
func snapshotEvent(s *core.Service, tx *head.Tx, wb string, inc nokv.IncarnationID, kind nokv.ChangeEventKind, id nokv.SnapshotID) error {
	return core.WriteChangeEvent(tx, s.Root(), nokv.ChangeEvent{WorkbenchID: wb, Incarnation: inc, Kind: kind, Snapshot: &id})
}

// lastEventSequence returns the sequence of the last change event the
// command's commit version holds so far: the one the command just wrote.
func lastEventSequence(tx *head.Tx, root nokv.RootID) (uint32, error) {
	last, ok, err := tx.Last(nokv.FamilyChangeEvent, nokv.ChangeEventVersionPrefix(root, tx.Sequence()))
	if err != nil || !ok {
		return 0, errors.Join(err, errors.New("workbench: no change event in this commit"))
	}
	k, err := nokv.ParseChangeEventKey(last.Key)
	return k.Sequence, err
}

// committed reports whether incarnation inc of the workbench has a
// commit head in sn: only a committed workbench can be snapshotted.
func committed(ctx context.Context, s *core.Service, sn *head.Snapshot, inc nokv.IncarnationID) (bool, error) {
	_, ok, err := core.CommitHead(ctx, sn, s.Root(), inc)
	return ok, err
}

// snapshotOutcome is what a snapshot command returns through the engine:
// the snapshot's record after the command and the lease clock's now.
type snapshotOutcome struct {
	id       nokv.SnapshotID
	ref      nokv.SnapshotRef
	leaseNow uint64
	changed  bool // retire: this command retired it
}

func (o snapshotOutcome) encode() ([]byte, error) {
	ref, err := o.ref.Encode()
	if err != nil {
		return nil, err
	}
	changed := uint8(0)
	if o.changed {
		changed = 1
	}
	return wire.NewWriter(nil).U64(uint64(o.id)).U64(o.leaseNow).U8(changed).Bytes32(ref).Bytes(), nil
}

func decodeSnapshotOutcome(b []byte) (snapshotOutcome, error) {
	r := wire.NewReader(b)
	o := snapshotOutcome{id: nokv.SnapshotID(r.U64()), leaseNow: r.U64(), changed: r.U8() == 1}
	refBytes := r.Bytes32()
	if err := r.End(); err != nil {
		return snapshotOutcome{}, err
	}
	ref, err := nokv.DecodeSnapshotRef(refBytes)
	o.ref = ref
	return o, err
}

// leaseResult is the result of a mint or renewal.
func leaseResult(s *core.Service, wb string, o snapshotOutcome, ttl uint64) SnapshotLease {
	return SnapshotLease{
		WorkbenchID:        wb,
		Path:               core.WorkbenchPath(s.LogicalRoot(), wb),
		SnapshotID:         uint64(o.id),
		Name:               o.ref.Alias,
		ReadVersion:        o.ref.ReadVersion,
		LeaseExpiresAt:     o.ref.LeaseDeadline,
		LeaseExpiresUnixMS: o.ref.LeaseDeadline,
		Annotation:         json.RawMessage(o.ref.Annotation),
		State:              core.SnapshotState(o.ref, o.leaseNow),
		TTLDays:            ttl,
	}
}

// runSnapshotCommand runs one snapshot command and decodes its outcome.
// at, when not nil, is a snapshot the caller pinned (head.Command.At).
func runSnapshotCommand(ctx context.Context, s *core.Service, at *head.Snapshot, tag string, digestParts [][]byte, apply func(tx *head.Tx) (snapshotOutcome, error)) (snapshotOutcome, *core.Error) {
	parts := append([][]byte{[]byte(tag)}, digestParts...)
	res, err := s.Store().Do(ctx, head.Command{
		Namespace: s.Root(),
		RequestID: s.RequestID(),
		Digest:    head.Digest(parts...),
		At:        at,
		Apply: func(tx *head.Tx) ([]byte, error) {
			o, err := apply(tx)
			if err != nil {
				return nil, err
			}
			return o.encode()
		},
	})
	if err != nil {
		return snapshotOutcome{}, core.FromError(err)
	}
	o, err := decodeSnapshotOutcome(res.Value)
	if err != nil {
		return snapshotOutcome{}, core.Internal("decode snapshot command result: " + err.Error())
	}
	return o, nil
}

// workbench_snapshot: mint. Not idempotent: every call mints a new
// snapshot under a fresh id.
func snapshotTool(ctx context.Context, s *core.Service, in *snapshotInput) (*SnapshotResult, *core.Error) {
	sn, werr := s.PinForWrite(ctx)
	if werr != nil {
		return nil, werr
	}
	// The tables of everything the reaper and the command read, in one
	// round; their small shards travel inline.
	if err := sn.Prefetch(ctx, mintFamilies, nil); err != nil {
		return nil, core.FromError(err)
	}
	sn = reapQuietly(ctx, s, sn)
	reqID := s.RequestID()
	id := newSnapshotID(reqID)
	wall := s.WallMillis()
	var name []byte
	if in.Name != nil {
		name = []byte(*in.Name)
	}
	o, werr := runSnapshotCommand(ctx, s, sn, "cairn.workbench.snapshot.v1", [][]byte{
		[]byte(in.id), wire.NewWriter(nil).U64(uint64(id)).U64(in.ttl).U64(wall).Bytes(), name, in.annotation,
	}, func(tx *head.Tx) (snapshotOutcome, error) {
		return mint(s, tx, in, id, wall)
	})
	if werr != nil {
		return nil, werr
	}
	res := &SnapshotResult{SnapshotLease: leaseResult(s, in.id, o, in.ttl)}
	if in.TTLDays == nil {
		res.ExpiryWarning = expiryWarning
	}
	return res, nil
}

// mintFamilies are the families a mint reads.
var mintFamilies = []shards.Family{
	nokv.FamilyWorkspaceCurrent, nokv.FamilyWorkbenchCommitHead, nokv.FamilySnapshotRef,
	nokv.FamilySnapshotAlias, nokv.FamilyHistoryHold, nokv.FamilyLeaseClock, nokv.FamilyChangeEvent,
}

// mint is the mint command: see the top of this file.
func mint(s *core.Service, tx *head.Tx, in *snapshotInput, id nokv.SnapshotID, wall uint64) (snapshotOutcome, error) {
	ctx, sn := tx.Context(), tx.Snapshot()
	// The frozen state is the pinned one: the workbench must exist and be
	// committed there.
	ws, ok, werr := s.VisibleWorkspace(ctx, core.SnapshotReader(ctx, sn), in.id)
	if werr != nil {
		return snapshotOutcome{}, werr
	}
	if !ok {
		return snapshotOutcome{}, core.Reject(core.Missing(fmt.Sprintf("workbench %s does not exist", in.id)))
	}
	if ok, err := committed(ctx, s, sn, ws.Incarnation); err != nil {
		return snapshotOutcome{}, err
	} else if !ok {
		return snapshotOutcome{}, core.Reject(core.Uncommitted(in.id))
	}
	clock, err := observeLeaseClock(s, tx, wall)
	if err != nil {
		return snapshotOutcome{}, err
	}
	leaseNow := clock.HighWater
	holdKey, err := nokv.SnapshotHoldKey(s.Root(), id).Encode()
	if err != nil {
		return snapshotOutcome{}, err
	}
	if err := core.TxAbsent(tx, nokv.FamilyHistoryHold, holdKey, "snapshot id "+id.String()+" is already taken"); err != nil {
		return snapshotOutcome{}, err
	}
	ref := nokv.SnapshotRef{
		ReadVersion:    sn.Sequence(),
		Alias:          in.Name,
		LeaseDeadline:  leaseNow + in.ttl*dayMillis,
		State:          nokv.SnapshotStateActive,
		Annotation:     in.annotation,
		HeldRoot:       sn.RootHash(),
		CreatedVersion: tx.Sequence(),
	}
	// The SnapshotMinted event's feed position is the mint's: it orders
	// the mints of one commit.
	if err := snapshotEvent(s, tx, in.id, ws.Incarnation, nokv.ChangeEventKindSnapshotMinted, id); err != nil {
		return snapshotOutcome{}, err
	}
	if ref.MintSequence, err = lastEventSequence(tx, s.Root()); err != nil {
		return snapshotOutcome{}, err
	}
	if err := PutSnapshotRef(s, tx, ws.Incarnation, id, ref); err != nil {
		return snapshotOutcome{}, err
	}
	hold := nokv.HistoryHold{ReadVersion: ref.ReadVersion, State: nokv.HistoryHoldStateActive, CreatedVersion: tx.Sequence()}
	if err := core.PutRecord(tx, nokv.FamilyHistoryHold, holdKey, hold.Encode); err != nil {
		return snapshotOutcome{}, err
	}
	if err := tx.Hold(HoldOwner(id), sn.RootHash()); err != nil {
		return snapshotOutcome{}, err
	}
	if in.Name != nil {
		// Latest mint wins: the alias moves to this snapshot and counts one
		// more generation; the older snapshot stays reachable by id.
		a, _, err := s.SnapshotAlias(tx.Get, ws.Incarnation, *in.Name)
		if err != nil {
			return snapshotOutcome{}, err
		}
		a = nokv.SnapshotAlias{Snapshot: id, AliasGeneration: a.AliasGeneration + 1, State: nokv.SnapshotStateActive}
		key, err := nokv.SnapshotAliasKey{Root: s.Root(), Incarnation: ws.Incarnation, Alias: *in.Name}.Encode()
		if err != nil {
			return snapshotOutcome{}, err
		}
		if err := core.PutRecord(tx, nokv.FamilySnapshotAlias, key, a.Encode); err != nil {
			return snapshotOutcome{}, err
		}
	}
	return snapshotOutcome{id: id, ref: ref, leaseNow: leaseNow}, nil
}
