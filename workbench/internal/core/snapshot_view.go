package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/cairnstore/cairn/bucket"
	"github.com/cairnstore/cairn/bucket/digest"
	"github.com/cairnstore/cairn/shards"
	"github.com/cairnstore/cairn/workbench/internal/nokv"
)

// Frozen reads: list, stat and read with at_snapshot.
//
// The selector (a snapshot id or name) is resolved at the live head: the
// workbench's marker, then the alias (for a name) and the SnapshotRef.
// Only an alive snapshot is read: Active with its deadline after the
// lease clock's now. Any other (expired, claimed by a reap, reaped or
// retired) is SnapshotExpired; a snapshot or workbench that resolves to
// nothing is NotFound, as the reference's read paths map the storage
// side's miss generically (SnapshotNotFound belongs to the snapshot
// tools' own lookups). The view then opens the root the snapshot holds
// (head.Store.At) and reads the workbench there, so every read of the
// request runs the live code over the frozen state. A list cursor minted
// in such a view binds the selector and the snapshot's read version
// (cursor.go).

// snapshotView opens a view of workbench id at the snapshot at names,
// fetching what reads names in the held root as a live view does.
func (s *Service) snapshotView(ctx context.Context, id string, at any, reads ViewReads) (*View, *Error) {
	sel, werr := ParseAtSnapshot(at)
	if werr != nil {
		return nil, werr
	}
	live, werr := s.Pin(ctx)
	if werr != nil {
		return nil, werr
	}
	// The tables of what the lookup reads, in one round: small shards
	// travel inline in them.
	if err := live.Prefetch(ctx, []shards.Family{nokv.FamilyWorkspaceCurrent, nokv.FamilySnapshotRef, nokv.FamilySnapshotAlias, nokv.FamilyLeaseClock}, nil); err != nil {
		return nil, FromError(err)
	}
	read := SnapshotReader(ctx, live)
	ws, ok, werr := s.VisibleWorkspace(ctx, read, id)
	if werr != nil {
		return nil, werr
	}
	if !ok {
		return nil, Missing(fmt.Sprintf("workbench %s does not exist", id)).With("path", "")
	}
	snapID, ref, ok, err := s.ResolveSnapshot(read, ws.Incarnation, sel)
	if err != nil {
		return nil, FromError(err)
	}
	if !ok {
		return nil, Missing(fmt.Sprintf("snapshot %s of workbench %s not found", sel, id))
	}
	clock, err := s.LeaseClock(read)
	if err != nil {
		return nil, FromError(err)
	}
	if st := SnapshotState(ref, max(s.WallMillis(), clock.HighWater)); st != "alive" {
		return nil, SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is not alive: %s", snapID, id, st))
	}
	frozen, err := s.store.At(ctx, digest.Hash(ref.HeldRoot))
	if err != nil {
		if errors.Is(err, bucket.ErrNotExist) {
			// Released and swept between the lookup and the open.
			return nil, SnapshotExpired(fmt.Sprintf("snapshot %s of workbench %s is no longer held", snapID, id))
		}
		return nil, FromError(err)
	}
	fws, ok, werr := s.prefetch(ctx, frozen, id, reads)
	if werr != nil {
		return nil, werr
	}
	if !ok || fws.Incarnation != ws.Incarnation || fws.State != nokv.WorkspaceStateVisible {
		return nil, InvalidState(fmt.Sprintf("snapshot %s does not hold workbench %s's incarnation", snapID, id))
	}
	return &View{S: s, Sn: frozen, ID: id, Ws: fws, at: at}, nil
}

// SnapshotSelector is a snapshot named by id or by name, as renew, retire
// and the reads' at_snapshot give it.
type SnapshotSelector struct {
	ID   nokv.SnapshotID // when byName is false
	Name string
	// ByName says the selector is a name, resolved through its alias.
	ByName bool
}

// ParseAtSnapshot turns an at_snapshot value (json.Number or string,
// checked by the schema and checkAtSnapshot) into a selector. Id 0 names
// no snapshot: the storage side refuses it as InvalidState.
func ParseAtSnapshot(at any) (SnapshotSelector, *Error) {
	switch v := at.(type) {
	case string:
		if werr := CheckSnapshotName(v); werr != nil {
			return SnapshotSelector{}, werr
		}
		return SnapshotSelector{Name: v, ByName: true}, nil
	case json.Number:
		n, err := strconv.ParseUint(string(v), 10, 64)
		if err != nil {
			return SnapshotSelector{}, InvalidArgumentsf("snapshot id %s is not an unsigned 64-bit integer", v)
		}
		return IDSelector(n)
	}
	return SnapshotSelector{}, InvalidArguments("at_snapshot must be a snapshot id or name")
}

// ResolveSnapshot finds the snapshot sel names in incarnation inc: by id
// its SnapshotRef, by name the snapshot the alias names now (the newest
// mint under it; never an older one, even when the newest has ended).
// ok is false when nothing answers.
func (s *Service) ResolveSnapshot(read Reader, inc nokv.IncarnationID, sel SnapshotSelector) (nokv.SnapshotID, nokv.SnapshotRef, bool, error) {
	id := sel.ID
	if sel.ByName {
		a, ok, err := s.SnapshotAlias(read, inc, sel.Name)
		if err != nil || !ok {
			return 0, nokv.SnapshotRef{}, false, err
		}
		id = a.Snapshot
	}
	ref, ok, err := s.SnapshotRef(read, inc, id)
	return id, ref, ok, err
}

// VisibleWorkspace reads workbench id's marker through read; ok is false
// when it does not exist or is not Visible.
func (s *Service) VisibleWorkspace(ctx context.Context, read Reader, id string) (nokv.WorkspaceCurrent, bool, *Error) {
	ws, ok, werr := s.Workspace(ctx, read, id)
	if werr != nil || !ok || ws.State != nokv.WorkspaceStateVisible {
		return nokv.WorkspaceCurrent{}, false, werr
	}
	return ws, true, nil
}

// SnapshotState is the state a snapshot reports: "alive" while Active and
// its deadline is after the lease clock's now, "expired" once it is not
// or while a reap has claimed it, "retired", "reaped".
func SnapshotState(ref nokv.SnapshotRef, leaseNow uint64) string {
	switch ref.State {
	case nokv.SnapshotStateActive:
		if ref.LeaseDeadline > leaseNow {
			return "alive"
		}
		return "expired"
	case nokv.SnapshotStateReapClaimed:
		return "expired"
	case nokv.SnapshotStateRetired:
		return "retired"
	default:
		return "reaped"
	}
}

// Defaults of the lease options.
const (
	// DefaultLeaseGrace is the clock-skew grace the reaper waits past a
	// lease's deadline, and past a clock regression, before it reaps.
	DefaultLeaseGrace = time.Minute
	// DefaultReapBatch is the most snapshots one reap command ends.
	DefaultReapBatch = 64
)

// WallMillis is the wall clock, in Unix milliseconds.
func (s *Service) WallMillis() uint64 {
	ms := s.Opts.Now().UnixMilli()
	if ms < 0 {
		return 0
	}
	return uint64(ms)
}

// LeaseClock reads the root's lease clock; a root that never observed
// one reads as zero.
func (s *Service) LeaseClock(read Reader) (nokv.LeaseClock, error) {
	key, err := nokv.LeaseClockKey{Root: s.root}.Encode()
	if err != nil {
		return nokv.LeaseClock{}, err
	}
	b, ok, err := read(nokv.FamilyLeaseClock, key)
	if err != nil || !ok {
		return nokv.LeaseClock{}, err
	}
	return nokv.DecodeLeaseClock(b)
}

// CheckSnapshotName applies the tool layer's and the record's rules to a
// snapshot name: not empty, at most 128 bytes, no NUL.
func CheckSnapshotName(name string) *Error {
	if name == "" {
		return InvalidArguments("snapshot name must not be empty")
	}
	if err := nokv.CheckAlias(name); err != nil {
		return InvalidArguments(err.Error())
	}
	return nil
}

func IDSelector(n uint64) (SnapshotSelector, *Error) {
	if n == 0 {
		return SnapshotSelector{}, InvalidState("snapshot id 0 names no snapshot")
	}
	return SnapshotSelector{ID: nokv.SnapshotID(n)}, nil
}

// Reader reads one record: a transaction's Get or a snapshot's.
type Reader func(f shards.Family, key []byte) ([]byte, bool, error)

// SnapshotRef reads the SnapshotRef of id in incarnation inc.
func (s *Service) SnapshotRef(read Reader, inc nokv.IncarnationID, id nokv.SnapshotID) (nokv.SnapshotRef, bool, error) {
	key, err := nokv.SnapshotRefKey{Root: s.root, Incarnation: inc, Snapshot: id}.Encode()
	if err != nil {
		return nokv.SnapshotRef{}, false, err
	}
	b, ok, err := read(nokv.FamilySnapshotRef, key)
	if err != nil || !ok {
		return nokv.SnapshotRef{}, false, err
	}
	ref, err := nokv.DecodeSnapshotRef(b)
	return ref, err == nil, err
}

// SnapshotAlias reads the alias row of name in incarnation inc.
func (s *Service) SnapshotAlias(read Reader, inc nokv.IncarnationID, name string) (nokv.SnapshotAlias, bool, error) {
	key, err := nokv.SnapshotAliasKey{Root: s.root, Incarnation: inc, Alias: name}.Encode()
	if err != nil {
		return nokv.SnapshotAlias{}, false, err
	}
	b, ok, err := read(nokv.FamilySnapshotAlias, key)
	if err != nil || !ok {
		return nokv.SnapshotAlias{}, false, err
	}
	a, err := nokv.DecodeSnapshotAlias(b)
	return a, err == nil, err
}

// String is the selector as a message names it: the quoted name, or the
// id.
func (sel SnapshotSelector) String() string {
	if sel.ByName {
		return strconv.Quote(sel.Name)
	}
	return sel.ID.String()
}
